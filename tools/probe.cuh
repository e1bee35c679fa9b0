/* What the standalone probes of tools/ share (stream_probe.cu,
 * warp_probe.cu): a checked CUDA call that names the probe, the call and
 * its line and exits, and the median time of a launch over 21 timed runs
 * after one untimed, with CUDA events. Header only: each probe builds with
 * one nvcc command (see its header). */
#ifndef HEAT_TOOLS_PROBE_CUH
#define HEAT_TOOLS_PROBE_CUH

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

#ifndef PROBE_NAME
#error "define PROBE_NAME (the program's name, for its messages) before including probe.cuh"
#endif

#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, PROBE_NAME ": %s: %s (line %d)\n", #x, cudaGetErrorString(e_),         \
                    __LINE__);                                                                     \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* Median milliseconds of launch() on the default stream. */
template <typename F> static float median_ms(F launch)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    launch();
    CK(cudaDeviceSynchronize());
    std::vector<float> t;
    for (int r = 0; r < 21; r++) {
        CK(cudaEventRecord(a));
        launch();
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms);
    }
    CK(cudaGetLastError());
    std::sort(t.begin(), t.end());
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    return t[t.size() / 2];
}

#endif
