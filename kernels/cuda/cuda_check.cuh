/* How the CUDA host code reports a failed CUDA call. */
#ifndef HEAT_CUDA_CHECK_CUH
#define HEAT_CUDA_CHECK_CUH

#include <cuda_runtime.h>

extern "C" {
#include "heat_error.h"
}

/* Every CUDA call of a function that returns a heat status and has
 * `heat_error *err` goes through this: on failure it fills `err` with `who`
 * ("cuda backend", ...), the call, the place and CUDA's name and text for
 * the error, and returns HEAT_ERUNTIME. */
#define HEAT_CUDA_CHECK_AS(who, call)                                                              \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess)                                                                     \
            return heat_error_set(err, HEAT_ERUNTIME, "%s: %s failed (%s:%d): %s: %s", who, #call, \
                                  __FILE__, __LINE__, cudaGetErrorName(e_),                        \
                                  cudaGetErrorString(e_));                                         \
    } while (0)

#define HEAT_CUDA_CHECK(call) HEAT_CUDA_CHECK_AS("cuda backend", call)

#endif
