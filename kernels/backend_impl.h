/* What a backend implements behind backend.h: each backend fills a
 * heat_backend whose ops point at its functions; backend.c dispatches.
 * Private to kernels/. */
#ifndef HEAT_BACKEND_IMPL_H
#define HEAT_BACKEND_IMPL_H

#include <stdio.h>

#include "backend.h"

typedef struct heat_backend_ops {
    int (*upload)(heat_backend *b, const void *host_field, heat_error *err);
    int (*advance)(heat_backend *b, int64_t steps, double *residual, heat_error *err);
    int (*download)(heat_backend *b, void *host_field, heat_error *err);
    void (*destroy)(heat_backend *b);
    /* Optional (NULL: malloc/free). */
    void *(*host_alloc)(heat_backend *b, size_t bytes);
    void (*host_free)(heat_backend *b, void *p);
    /* Optional measurement and test hooks (NULL: not offered). */
    int (*bench_time)(heat_backend *b, int steps, int runs, double *copy_ms, double *steps_ms,
                      heat_error *err);
    int (*poison_next)(heat_backend *b, heat_error *err);
    /* Parts of a distributed grid (NULL for a whole grid). */
    void (*halo_stats)(const heat_backend *b, heat_halo_stats *stats);
    int (*bench_halo)(heat_backend *b, int runs, double *pack_ms, double *transfer_ms,
                      double *unpack_ms, heat_error *err);
    /* The variable-coefficient update (NULL: not offered, and then a
     * general case is refused at creation). */
    void (*class_box)(const heat_backend *b, int64_t lo[3], int64_t n[3]);
    int (*set_classes)(heat_backend *b, const uint8_t *cls, const heat_coeffs *k, heat_error *err);
    /* Optional (NULL: the dispatch downloads the field and computes them). */
    int (*field_stats)(heat_backend *b, double *min, double *max, double *sum, heat_error *err);
    int (*sample)(heat_backend *b, int n, const int64_t *index, double *values, heat_error *err);
    /* Multigrid (NULL: not offered; a multigrid case is then refused at
     * mg_setup). */
    int (*mg_setup)(heat_backend *b, heat_error *err);
    void (*mg_info)(const heat_backend *b, heat_mg_info *info);
    int (*mg_bench)(heat_backend *b, int runs, heat_mg_timing *t, heat_error *err);
    /* Optional: each kind of pass the loop runs, once, its result not kept,
     * so that first-use costs (a GPU kernel's loading) fall before the
     * loop's clock starts. */
    int (*warm)(heat_backend *b, heat_error *err);
    /* Optional (NULL: not offered): advance in two halves, queue returning
     * as soon as the steps are queued, wait waiting for them (backend.h). */
    int (*queue)(heat_backend *b, int64_t steps, int residual, heat_error *err);
    int (*wait)(heat_backend *b, double *residual, heat_error *err);
} heat_backend_ops;

/* The field's minimum, maximum and sum in one order for every backend, so
 * that history.csv's min, max and mean come out the same bits on each: a
 * row of n values (x fastest) is summed in double by HEAT_STATS_LANES
 * interleaved partial sums (value i into partial i mod HEAT_STATS_LANES, in
 * order of i, each from 0) that are then added in order from 0; the rows,
 * in the field's order (y, then z), in groups of HEAT_STATS_GROUP: each
 * group's sums added in order from 0, then the groups' in order (so that a
 * GPU folds the groups in parallel). Minimum and maximum skip NaN; a zero
 * extreme is +0. */
#define HEAT_STATS_LANES 32
#define HEAT_STATS_GROUP 256
/* One row: its minimum, maximum and sum (the sum from 0, as above). */
void heat_stats_row(const heat_case *c, const void *row, int64_t n, double *min, double *max,
                    double *sum);
/* Folds `rows` rows' minima, maxima and sums into the field's, the rows'
 * sums by groups from the first row (above). */
void heat_stats_fold(int64_t rows, const double *rmin, const double *rmax, const double *rsum,
                     double *min, double *max, double *sum);
/* A box of nx x ny x nz values in a larger array: row (y, z) at f + y sy +
 * z sz (values), the rows y fastest (in parallel, folded as above);
 * heat_stats_field: the whole grid. */
void heat_stats_box(const heat_case *c, const void *f, int64_t nx, int64_t ny, int64_t nz,
                    int64_t sy, int64_t sz, double *min, double *max, double *sum);
void heat_stats_field(const heat_case *c, const void *f, double *min, double *max, double *sum);

struct heat_backend {
    const heat_backend_ops *ops;
    const heat_case *c;
    char description[256];
    void *impl; /* the backend's own state */
};

/* The CPU backend (kernels/cpu); always built. */
int heat_cpu_backend_create(const heat_case *c, heat_backend **out, heat_error *err);

#endif
