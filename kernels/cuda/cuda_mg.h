/* Multigrid on the CUDA backend (k_mg.cu): the hierarchy of kernels/mg.h on
 * the GPU, its level kernels behind heat_mg_ops, and the V-cycle replayed
 * as one CUDA graph. For cuda_backend.cu only. */
#ifndef HEAT_CUDA_MG_H
#define HEAT_CUDA_MG_H

#include <cuda_runtime.h>
#include <stdint.h>

extern "C" {
#include "backend_impl.h"
}

typedef struct cuda_mg cuda_mg;

/* The hierarchy of the case over the field's two device buffers u (the
 * field) and v, their rows rp values apart (heat_mg_gpu_row_pitch) and
 * their planes `rows` rows apart (heat_mg_gpu_rows),
 * its kernels on `stream`; cls and k: the classes of the grid on the host
 * and their tables (NULL for a case that is not general). HEAT_EINPUT for
 * a singular problem that does not balance (mg.h), HEAT_ERUNTIME when
 * memory is short or a CUDA call fails. */
int heat_cuda_mg_create(const heat_case *c, void *u, void *v, int64_t rp, int64_t rows,
                        cudaStream_t stream, const uint8_t *cls, const heat_coeffs *k,
                        cuda_mg **out, heat_error *err);

/* As heat_cuda_mg_create for one rank's part of a split grid (kernels/mg.h:
 * a hierarchy split over ranks); the level 0 buffers are its own
 * (heat_cuda_mg_level0). A general case gives the classes of level 0's box
 * (cls0: the part and a ghost layer on each face with a neighbour, x
 * fastest) and of the box clo, cn one layer wider that the build reads
 * (clsw), and its tables k; else all NULL. Collective. */
int heat_cuda_mg_create_part(const heat_case *c, const heat_part *part, const heat_halo_comm *comm,
                             cudaStream_t stream, const uint8_t *cls0, const uint8_t *clsw,
                             const int64_t clo[3], const int64_t cn[3], const heat_coeffs *k,
                             cuda_mg **out, heat_error *err);

/* A split run's exchanges added to *st. */
void heat_cuda_mg_halo_stats(const cuda_mg *g, heat_halo_stats *st);

/* A split run's level 0: its two buffers over its box (bn nodes per axis,
 * gl ghost layers below the part's first node), x fastest. */
void heat_cuda_mg_level0(cuda_mg *g, void **x0, void **x1, int64_t bn[3], int gl[3]);

/* Cycles of the steady solve or implicit steps on the field (backend.h). */
int heat_cuda_mg_advance(cuda_mg *g, int64_t steps, double *residual, heat_error *err);

void heat_cuda_mg_info(const cuda_mg *g, heat_mg_info *info);

/* heat bench --multigrid: the parts per level with CUDA events, the cycle as
 * a graph replay, and a device copy of the field. */
int heat_cuda_mg_bench(cuda_mg *g, int runs, heat_mg_timing *t, heat_error *err);

void heat_cuda_mg_destroy(cuda_mg *g);

#endif
