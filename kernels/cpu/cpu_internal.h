/* The CPU backend's inside, shared by its whole-grid part (cpu_backend.c)
 * and its distributed part (cpu_part.c). Private to kernels/cpu. */
#ifndef HEAT_CPU_INTERNAL_H
#define HEAT_CPU_INTERNAL_H

#include <stdint.h>

#include "backend_impl.h"
#include "halo_plan.h"

/* What one sweep covers: the whole grid, or a view of a rank's part. */
typedef struct cpu_box {
    int64_t n[3];        /* nodes per axis, faces included */
    int64_t sy, sz;      /* strides of y and z in values */
    int bc[HEAT_NFACES]; /* heat_bc_type of each face; Dirichlet: held */
    int three_d;
    /* The variable-coefficient update (c->d.general): the class of the
     * box's node (0, 0, 0), laid out as the field, and the tables. */
    const uint8_t *cls;
    const struct cpu_gen *gen;
} cpu_box;

/* One forward Euler step u -> out over `g` (u and out point at the box's
 * node (0, 0, 0)) with the case's coefficients and Neumann constants, or
 * with the box's classes and tables where the case is general. Returns
 * max |u' - u| over the nodes written when `residual`, else 0. */
double heat_cpu_sweep(const heat_case *c, const cpu_box *g, const void *u, void *out, int residual);

/* The tables of the variable-coefficient update in the run's precision. */
typedef struct cpu_gen cpu_gen;

/* Makes them from the case's coefficients (NULL when out of memory), and
 * frees them (NULL: nothing). */
cpu_gen *heat_cpu_gen_create(const heat_case *c, const heat_coeffs *k);
void heat_cpu_gen_destroy(cpu_gen *t);

/* The wall clock in seconds, and the median of v[0..n) (sorted in place). */
double heat_cpu_seconds(void);
double heat_cpu_median(double *v, int n);

/* bench_time (backend.h) of a synchronous backend: `runs` pairs of a
 * parallel copy of `bytes` from u to *scratch (allocated on first use) and
 * `steps` steps of `advance`, each timed on the wall clock; the medians in
 * milliseconds. */
typedef int (*heat_cpu_advance_fn)(heat_backend *b, int64_t steps, double *residual,
                                   heat_error *err);
int heat_cpu_bench_loop(heat_backend *b, heat_cpu_advance_fn advance, void **scratch, const void *u,
                        size_t bytes, int steps, int runs, double *copy_ms, double *steps_ms,
                        heat_error *err);

/* queue and wait (backend.h) of a synchronous backend: queue notes the
 * steps and wait runs them with `advance`, so that until then the field, and
 * its statistics, are those before them. Nothing is gained on the CPU; the
 * driver's rows written between the two halves run in every test of the CPU
 * backends, as on the GPU. */
typedef struct heat_cpu_queued {
    int64_t steps; /* queued, not yet run */
    int residual;  /* the residual of the last is wanted */
} heat_cpu_queued;
int heat_cpu_queue(heat_cpu_queued *q, int64_t steps, int residual, heat_error *err);
int heat_cpu_wait(heat_backend *b, heat_cpu_queued *q, heat_cpu_advance_fn advance,
                  double *residual, heat_error *err);

/* Multigrid on the CPU (cpu_mg.c, kernels/mg.h): the hierarchy of the case
 * over the field's two buffers u (the field) and v, with the grid's classes
 * and tables (NULL for a case that is not general; cls is borrowed). */
typedef struct cpu_mg cpu_mg;
int heat_cpu_mg_create(const heat_case *c, void *u, void *v, const uint8_t *cls,
                       const heat_coeffs *k, cpu_mg **out, heat_error *err);
/* As heat_cpu_mg_create for one rank's part of a split grid (kernels/mg.h:
 * a hierarchy split over ranks): u and v the part's buffers (one ghost
 * layer), cls its classes laid out as them, cls_box the classes of the grid
 * box clo, cn (2 layers beyond the part where it has neighbours).
 * Collective. */
int heat_cpu_mg_create_part(const heat_case *c, const heat_part *part, const heat_halo_comm *comm,
                            void *u, void *v, const uint8_t *cls, const uint8_t *cls_box,
                            const int64_t clo[3], const int64_t cn[3], const heat_coeffs *k,
                            cpu_mg **out, heat_error *err);
/* A split hierarchy's exchanges added to *st. */
void heat_cpu_mg_halo_stats(const cpu_mg *g, heat_halo_stats *st);
/* Cycles of the steady solve or implicit steps on the field in u (backend.h). */
int heat_cpu_mg_advance(cpu_mg *g, int64_t steps, double *residual, heat_error *err);
void heat_cpu_mg_info(const cpu_mg *g, heat_mg_info *info);
int heat_cpu_mg_bench(cpu_mg *g, int runs, heat_mg_timing *t, heat_error *err);
void heat_cpu_mg_destroy(cpu_mg *g);

/* The distributed CPU backend (cpu_part.c): the part of `part` with its
 * ghost layers, halos through `comm`. */
int heat_cpu_part_create(const heat_case *c, const heat_part *part, const heat_halo_comm *comm,
                         heat_backend **out, heat_error *err);

#endif
