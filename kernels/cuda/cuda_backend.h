/* The CUDA backend's C interface: what backend.c, `heat bench` and the GPU
 * tests call. The kernels themselves are reached only through the backend's
 * ops (kernels/backend_impl.h).
 */
#ifndef HEAT_CUDA_BACKEND_H
#define HEAT_CUDA_BACKEND_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "backend_impl.h"

/* Whether a CUDA device this program can run its kernels on is present. When
 * not, writes the reason ("no CUDA device found", the driver's message, ...)
 * into why[n] and returns 0. */
int heat_cuda_usable(char *why, size_t n);

/* Creates the CUDA backend for `c` with its solver.kernel. HEAT_ERUNTIME when
 * no GPU is usable (with the reason) or when the two time levels do not fit
 * in the GPU's free memory (naming the bytes needed and available). */
int heat_cuda_backend_create(const heat_case *c, heat_backend **out, heat_error *err);

/* The name of the GPU the backend runs on. */
const char *heat_cuda_device_name(const heat_backend *b);

/* The name of the current CUDA device into buf[n] ("" when there is none). */
void heat_cuda_current_device(char *buf, size_t n);

/* For solver.temporal_block = "auto": the steps register_tiled should fuse
 * per pass (1 to HEAT_TEMPORAL_BLOCK_MAX) for a grid of `dims` (2 or 3)
 * dimensions, n[0] x n[1] x n[2] points (n[2] = 1 in 2D), in float
 * (is_float != 0) or double. The choice comes from a table of `heat bench`
 * measurements (docs/PERFORMANCE.md, "Temporal blocking"): the fastest k
 * measured for that dimension and precision, less where the grid is too thin
 * along the streaming axis (z in 3D, y in 2D) for a pass of k steps to pay
 * its 2 k planes of warm-up. Needs no GPU and never fails; a caller should
 * say which k it took. */
int heat_cuda_auto_depth(int dims, int is_float, const long long n[3]);

/* For `heat bench`: `runs` pairs of (a device-to-device copy of one field, then
 * `steps` steps, in passes of solver.temporal_block fused steps), each
 * timed with CUDA events; returns the medians in
 * milliseconds. The copy goes to a scratch buffer, so the field is untouched
 * apart from the sweeps. */
int heat_cuda_bench_time(heat_backend *b, int steps, int runs, double *copy_ms, double *steps_ms,
                         heat_error *err);

/* For tests: fills every node of the next time level that a sweep must write
 * (all but the Dirichlet faces) with NaN, so that a point the kernel skips
 * shows up in the result. */
int heat_cuda_poison_next(heat_backend *b, heat_error *err);

#ifdef __cplusplus
}
#endif

#endif
