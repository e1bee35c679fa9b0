/* Helpers of the GPU tests (test_gpu.c, test_gpu_temporal.c,
 * test_gpu_driver.c): cases of any size and face types, random fields, the
 * backend run for a number of steps with the next time level poisoned, and
 * comparison against the CPU backend value for value. */
#ifndef HEAT_TEST_GPU_HELPERS_H
#define HEAT_TEST_GPU_HELPERS_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "heat_case.h"
#include "test_util.h"

/* The five ways an axis can be bounded: DD, DN, ND, NN, PP (0 Dirichlet,
 * 1 Neumann, 2 periodic). */
extern const int axis_kinds[5][2];

/* One way of running the GPU side: a kernel and the steps it fuses per pass
 * (solver.temporal_block). */
typedef struct gpu_variant {
    const char *kernel;
    int depth;
} gpu_variant;

/* The temporal blocking depths under test: register_tiled fusing 2 to 8
 * steps per pass. */
extern const gpu_variant temporal[];
extern const int n_temporal;

/* Every kernel (bit k: heat_kernel_names[k]). */
#define ALL_KERNELS ((1u << HEAT_KERNEL_COUNT) - 1)

double rnd(void);

/* A case of the given size, face types (0 D, 1 N, 2 P), precision, backend,
 * kernel and solver.temporal_block; anisotropic lengths and random Neumann
 * gradients. */
void make_case(heat_case *c, const int64_t n[3], const int types[6], const char *prec,
               const char *backend, const char *kernel, int temporal_block, const double grads[6]);

void fill(void *f, int64_t n, size_t vs);

/* Fills the next time level of a CUDA backend with NaN (the backend's
 * poison_next test hook). */
void poison_next(heat_backend *b);

/* Runs `steps` steps of `c` (residual on the last) from `field`; the final
 * field goes to `out`, the residual to *res. */
void run_backend(const heat_case *c, const void *field, int64_t steps, void *out, double *res,
                 int poison);

/* Equal value for value (NaN never equal); on a mismatch, reports the first
 * one with its coordinates and the largest relative difference. */
int compare(const heat_case *c, const void *want, const void *got, const char *what);

/* Every variant and precision for one size and set of face types, `steps`
 * steps with the residual; the CPU reference is computed once per precision.
 * Returns the failures. */
int check_variants(const int64_t n[3], const int types[6], int64_t steps, const gpu_variant *v,
                   int nv);

/* Every kernel in `kmask` (bit k: heat_kernel_names[k]; ALL_KERNELS), one step per pass. */
int check_all(const int64_t n[3], const int types[6], int64_t steps, unsigned kmask);

#endif
