/* The CUDA backend's C interface, for the dispatch in kernels/backend.c
 * only: everything else reaches the backend through kernels/backend.h. */
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
/* Whether this machine has no CUDA device at all (as against one that
 * heat_cuda_usable finds unusable: a driver too old, no code for it). */
int heat_cuda_no_device(void);

/* Creates the CUDA backend for `c` with its solver.kernel. HEAT_ERUNTIME when
 * no GPU is usable (with the reason) or when the two time levels do not fit
 * in the GPU's free memory (naming the bytes needed and available). Its
 * table offers the bench_time and poison_next operations. */
int heat_cuda_backend_create(const heat_case *c, heat_backend **out, heat_error *err);

/* The CUDA backend on one rank's part of a distributed grid (cuda_part.cu),
 * as heat_backend_create_part describes; collective. */
int heat_cuda_part_create(const heat_case *c, const heat_part *part, const heat_halo_comm *comm,
                          FILE *notices, heat_backend **out, heat_error *err);

/* Makes the GPU of this rank current: the node_rank-th of the node's GPUs
 * (modulo their number). Before anything else of CUDA runs in the process. */
void heat_cuda_select_device(int node_rank);

/* Waits for the GPU blocking, not spinning, when this process may run on
 * at most two CPUs (cuda_part.cu). Call before the backend's allocations. */
void heat_cuda_schedule_for_affinity(void);

/* A face's code in the kernels (stencil.cuh's HK_*) from its kind
 * (heat_bc_type): Neumann, flux and convective faces are all mirrored. */
int heat_cuda_face_code(int bc_type);

/* Whether the CUDA backend runs the variable-coefficient update. */
int heat_cuda_general(void);

/* For tests (heat_backend_gpu_xsum): the exact sum of v[0 .. n) on the
 * GPU, `per` terms a thread, into *sum (normalised). */
struct heat_xsum;
int heat_cuda_xsum(const double *v, int64_t n, int per, struct heat_xsum *sum, heat_error *err);

/* The name of the current CUDA device into buf[n] ("" when there is none). */
void heat_cuda_current_device(char *buf, size_t n);

#ifdef __cplusplus
}
#endif

#endif
