/* The dispatch of the backend seam (backend.h): creation by solver.backend,
 * then every call through the backend's table of operations. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_impl.h"
#include "cpu_internal.h"
#include "halo_plan.h"
#include "mg.h"

#ifdef HEAT_HAVE_CUDA
#include "cuda_backend.h"
#endif

/* Says once, on `notices`, that solver.temporal_block > 1 is not used as fused
 * steps by `who` (the CPU backend, or a CUDA kernel that does not fuse). */
static void notice_unfused(const heat_case *c, const char *who, FILE *notices)
{
    if (notices && c->solver.temporal_block > 1 && !c->solver.temporal_auto)
        fprintf(notices,
                "notice: solver.temporal_block = %d: %s runs the steps one at a time (only the "
                "%s GPU kernel fuses steps); results are the same\n",
                c->solver.temporal_block, who, heat_kernel_name(HEAT_KERNEL_FUSING));
}

static int create_cpu(const heat_case *c, FILE *notices, heat_backend **out, heat_error *err)
{
    /* A deck error where the deck puts the run on the CPU (backend "cpu", or
     * "auto" in a build without CUDA), whatever the process count, as heat
     * check says; a run that "auto" moves to the CPU for want of a GPU goes
     * on (it has no halos to move). */
    int rc = c->solver.backend == HEAT_BACKEND_CPU || !heat_backend_has_gpu_build()
                 ? heat_backend_check_transport(c, 1, err)
                 : HEAT_OK;
    if (rc) return rc;
    rc = heat_cpu_backend_create(c, out, err);
    if (rc == HEAT_OK) notice_unfused(c, "the cpu backend", notices);
    return rc;
}

#ifdef HEAT_HAVE_CUDA
static int create_cuda(const heat_case *c, FILE *notices, heat_backend **out, heat_error *err)
{
    int rc = heat_cuda_backend_create(c, out, err);
    if (rc == HEAT_OK && c->solver.kernel != HEAT_KERNEL_FUSING) {
        char who[64];
        snprintf(who, sizeof who, "the cuda kernel %s", heat_kernel_name(c->solver.kernel));
        notice_unfused(c, who, notices);
    }
    return rc;
}
#endif

/* A general case (materials, sources, convective or flux faces) on a
 * build whose GPU backend does not offer the variable-coefficient update
 * (heat_backend_gpu_general): "auto" runs on the CPU, saying why. The GPU
 * backend offers it on the whole grid and on a rank's part alike. */
static heat_backend_kind general_backend(const heat_case *c, FILE *notices)
{
    if (!c->d.general || c->solver.backend != HEAT_BACKEND_AUTO || heat_backend_gpu_general())
        return c->solver.backend;
    char why[256];
    if (notices && heat_backend_gpu_usable(why, sizeof why))
        fprintf(notices, "notice: materials, sources, convective and flux faces run on the CPU "
                         "backend in this build\n");
    return HEAT_BACKEND_CPU;
}

int heat_backend_create(const heat_case *c, FILE *notices, heat_backend **out, heat_error *err)
{
    *out = NULL;
    switch (general_backend(c, notices)) {
    case HEAT_BACKEND_CPU:
        return create_cpu(c, notices, out, err);
    case HEAT_BACKEND_CUDA:
#ifdef HEAT_HAVE_CUDA
        return create_cuda(c, notices, out, err);
#else
        return heat_backend_check_build(c, err);
#endif
    case HEAT_BACKEND_AUTO:
    default: {
#ifdef HEAT_HAVE_CUDA
        char why[256];
        if (heat_cuda_usable(why, sizeof why)) return create_cuda(c, notices, out, err);
        if (notices) fprintf(notices, "notice: no usable GPU (%s): running on the CPU\n", why);
#endif
        return create_cpu(c, notices, out, err);
    }
    }
}

/* The same on a rank's part, where the depth still counts: halos of k layers,
 * exchanged once per k steps. */
static void notice_part_unfused(const heat_case *c, const char *who, FILE *notices)
{
    if (notices && c->solver.temporal_block > 1 && !c->solver.temporal_auto)
        fprintf(notices,
                "notice: solver.temporal_block = %d: %s runs the steps one at a time; the ranks "
                "exchange halos %d layers deep once per %d steps; results are the same\n",
                c->solver.temporal_block, who, c->solver.temporal_block, c->solver.temporal_block);
}

/* Under "auto" on a part: the GPU only when every rank has a usable one. */
static int part_wants_gpu(const heat_case *c, const heat_halo_comm *comm, FILE *notices)
{
    if (general_backend(c, notices) == HEAT_BACKEND_CPU) return 0;
#ifdef HEAT_HAVE_CUDA
    /* One GPU per rank of a node, chosen before CUDA makes a context. */
    heat_cuda_select_device(comm->node_rank);
#endif
    if (c->solver.backend == HEAT_BACKEND_CUDA) return 1;
    char why[256];
    int usable = heat_backend_gpu_usable(why, sizeof why);
    int all = comm->all_ok(comm->ctx, usable);
    if (!all && heat_backend_has_gpu_build() && notices) {
        if (usable)
            fprintf(notices, "notice: not every rank has a usable GPU: running on the CPU\n");
        else
            fprintf(notices, "notice: no usable GPU (%s): running on the CPU\n", why);
    }
    return all;
}

int heat_backend_check_build(const heat_case *c, heat_error *err)
{
    if (c->solver.backend == HEAT_BACKEND_CUDA && !heat_backend_has_gpu_build())
        return heat_error_set(err, HEAT_EINPUT,
                              "solver.backend = \"cuda\": this heat was built without CUDA "
                              "(see heat --version); use \"cpu\" or \"auto\"");
    return HEAT_OK;
}

int heat_backend_check_transport(const heat_case *c, int on_cpu, heat_error *err)
{
    if (on_cpu && c->parallel.transport == HEAT_TRANSPORT_NCCL)
        return heat_error_set(err, HEAT_EINPUT,
                              "parallel.transport = \"nccl\" moves halos between GPUs, but this "
                              "run is on the CPU: use \"auto\" or \"mpi\"");
    return HEAT_OK;
}

int heat_backend_create_part(const heat_case *c, const heat_part *part, const heat_halo_comm *comm,
                             FILE *notices, heat_backend **out, heat_error *err)
{
    *out = NULL;
    int rc;
    if (part_wants_gpu(c, comm, notices)) {
#ifdef HEAT_HAVE_CUDA
        rc = heat_cuda_part_create(c, part, comm, notices, out, err);
        if (rc == HEAT_OK && c->solver.kernel != HEAT_KERNEL_FUSING) {
            char who[64];
            snprintf(who, sizeof who, "the cuda kernel %s", heat_kernel_name(c->solver.kernel));
            notice_part_unfused(c, who, notices);
        }
        return rc;
#else
        rc = heat_backend_check_build(c, err);
        comm->all_ok(comm->ctx, 0);
        return rc;
#endif
    }
    rc = heat_backend_check_transport(c, 1, err);
    if (!rc) rc = heat_cpu_part_create(c, part, comm, out, err);
    if (!comm->all_ok(comm->ctx, rc == HEAT_OK) && rc == HEAT_OK) {
        heat_backend_destroy(*out);
        *out = NULL;
        rc = heat_error_set(err, HEAT_ERUNTIME, "another rank could not create its backend");
    }
    if (rc == HEAT_OK) notice_part_unfused(c, "the cpu backend", notices);
    return rc;
}

int heat_backend_upload(heat_backend *b, const void *host_field, heat_error *err)
{
    return b->ops->upload(b, host_field, err);
}

int heat_backend_advance(heat_backend *b, int64_t steps, double *residual, heat_error *err)
{
    return b->ops->advance(b, steps, residual, err);
}

int heat_backend_queues(const heat_backend *b)
{
    return b->ops->queue && b->ops->wait && !heat_case_multigrid(b->c);
}

int heat_backend_queue(heat_backend *b, int64_t steps, int residual, heat_error *err)
{
    if (!heat_backend_queues(b))
        return heat_error_set(err, HEAT_ERUNTIME, "%s: steps cannot be queued", b->description);
    return b->ops->queue(b, steps, residual, err);
}

int heat_backend_wait(heat_backend *b, double *residual, heat_error *err)
{
    return b->ops->wait(b, residual, err);
}

int heat_backend_warm(heat_backend *b, heat_error *err)
{
    return b->ops->warm ? b->ops->warm(b, err) : HEAT_OK;
}

int heat_backend_download(heat_backend *b, void *host_field, heat_error *err)
{
    return b->ops->download(b, host_field, err);
}

void *heat_backend_host_alloc(heat_backend *b, size_t bytes)
{
    return b->ops->host_alloc ? b->ops->host_alloc(b, bytes) : malloc(bytes);
}

void heat_backend_host_free(heat_backend *b, void *p)
{
    if (b->ops->host_free)
        b->ops->host_free(b, p);
    else
        free(p);
}

const char *heat_backend_describe(const heat_backend *b)
{
    return b->description;
}

void heat_backend_destroy(heat_backend *b)
{
    if (b) b->ops->destroy(b);
}

int64_t heat_backend_held_values(const heat_case *c, const heat_part *part)
{
    const size_t vs = heat_case_value_size(c);
    const int gpu = c->solver.backend == HEAT_BACKEND_CUDA;
    if (part) {
        if (!gpu) return heat_split_local_values(part);
        heat_halo_plan p;
        heat_halo_plan_init(&p, c, part, (int)(16 / vs));
        return p.values;
    }
    if (!gpu) return c->d.points;
    const int64_t *n = c->grid.n;
    if (heat_case_multigrid(c)) return heat_mg_gpu_row_pitch(n) * heat_mg_gpu_rows(n, vs) * n[2];
    return heat_gpu_row_pitch(n[0], vs) * n[1] * n[2];
}

const char *heat_backend_builtin(void)
{
#ifdef HEAT_HAVE_CUDA
    return "cpu (OpenMP), cuda";
#else
    return "cpu (OpenMP)";
#endif
}

int heat_backend_gpu_general(void)
{
#ifdef HEAT_HAVE_CUDA
    return heat_cuda_general();
#else
    return 0;
#endif
}

int heat_backend_has_gpu_build(void)
{
#ifdef HEAT_HAVE_CUDA
    return 1;
#else
    return 0;
#endif
}

int heat_backend_gpu_absent(void)
{
#ifdef HEAT_HAVE_CUDA
    return heat_cuda_no_device();
#else
    return 1;
#endif
}

int heat_backend_gpu_usable(char *why, size_t n)
{
#ifdef HEAT_HAVE_CUDA
    return heat_cuda_usable(why, n);
#else
    snprintf(why, n, "this heat was built without CUDA");
    return 0;
#endif
}

void heat_backend_select_gpu(int node_rank)
{
#ifdef HEAT_HAVE_CUDA
    heat_cuda_select_device(node_rank);
#else
    (void)node_rank;
#endif
}

void heat_backend_gpu_name(char *buf, size_t n)
{
    if (n) buf[0] = '\0';
#ifdef HEAT_HAVE_CUDA
    heat_cuda_current_device(buf, n);
#endif
}

/* An optional operation the backend does not offer. */
static int not_offered(const heat_backend *b, const char *what, heat_error *err)
{
    return heat_error_set(err, HEAT_EINPUT, "%s: the backend %s does not offer %s", what,
                          b->description, what);
}

int heat_backend_bench_time(heat_backend *b, int steps, int runs, double *copy_ms, double *steps_ms,
                            heat_error *err)
{
    if (!b->ops->bench_time) return not_offered(b, "bench timing", err);
    return b->ops->bench_time(b, steps, runs, copy_ms, steps_ms, err);
}

void heat_backend_halo_stats(const heat_backend *b, heat_halo_stats *stats)
{
    memset(stats, 0, sizeof *stats);
    if (b && b->ops->halo_stats) b->ops->halo_stats(b, stats);
}

int heat_backend_bench_halo(heat_backend *b, int runs, double *pack_ms, double *transfer_ms,
                            double *unpack_ms, heat_error *err)
{
    if (!b->ops->bench_halo) return not_offered(b, "halo exchange timing", err);
    return b->ops->bench_halo(b, runs, pack_ms, transfer_ms, unpack_ms, err);
}

int heat_backend_poison_next(heat_backend *b, heat_error *err)
{
    if (!b->ops->poison_next) return not_offered(b, "poisoning the next time level", err);
    return b->ops->poison_next(b, err);
}

int heat_backend_gpu_xsum(const double *v, int64_t n, int per, struct heat_xsum *sum,
                          heat_error *err)
{
#ifdef HEAT_HAVE_CUDA
    char why[256];
    if (!heat_cuda_usable(why, sizeof why))
        return heat_error_set(err, HEAT_ERUNTIME, "no usable GPU: %s", why);
    return heat_cuda_xsum(v, n, per, sum, err);
#else
    (void)v, (void)n, (void)per, (void)sum;
    return heat_error_set(err, HEAT_ERUNTIME, "this build of heat has no CUDA backend");
#endif
}

void heat_backend_class_box(const heat_backend *b, int64_t lo[3], int64_t n[3])
{
    if (b->ops->class_box) {
        b->ops->class_box(b, lo, n);
        return;
    }
    for (int a = 0; a < 3; a++) lo[a] = 0, n[a] = b->c->grid.n[a];
}

int heat_backend_set_classes(heat_backend *b, const uint8_t *cls, const heat_coeffs *k,
                             heat_error *err)
{
    if (!b->ops->set_classes) return not_offered(b, "materials, sources and convective faces", err);
    return b->ops->set_classes(b, cls, k, err);
}

int heat_backend_mg_setup(heat_backend *b, heat_error *err)
{
    if (!b->ops->mg_setup)
        return heat_error_set(err, HEAT_ERUNTIME,
                              "the backend %s does not offer multigrid (steady.method = "
                              "\"multigrid\", implicit time schemes): use solver.backend = "
                              "\"cpu\"",
                              b->description);
    return b->ops->mg_setup(b, err);
}

int heat_backend_mg_check(const heat_case *c, const uint8_t *cls, const heat_coeffs *k,
                          heat_error *err)
{
    return heat_mg_check_balance(c, cls, k, err);
}

void heat_backend_mg_info(const heat_backend *b, heat_mg_info *info)
{
    memset(info, 0, sizeof *info);
    if (b->ops->mg_info) b->ops->mg_info(b, info);
}

int heat_backend_mg_bench(heat_backend *b, int runs, heat_mg_timing *t, heat_error *err)
{
    memset(t, 0, sizeof *t);
    if (!b->ops->mg_bench) return not_offered(b, "multigrid timing", err);
    return b->ops->mg_bench(b, runs, t, err);
}

/* The stats and samples of a backend that does not offer them: from a
 * download of the field (the owned box is then the whole grid). */
static void *download_all(heat_backend *b, heat_error *err)
{
    void *f = malloc((size_t)b->c->d.points * heat_case_value_size(b->c));
    if (!f) {
        heat_error_set(err, HEAT_ERUNTIME, "out of memory for the field's statistics");
        return NULL;
    }
    if (heat_backend_download(b, f, err)) {
        free(f);
        return NULL;
    }
    return f;
}

static double value_at(const heat_case *c, const void *f, int64_t i)
{
    return c->solver.precision == HEAT_FLOAT ? (double)((const float *)f)[i]
                                             : ((const double *)f)[i];
}

void heat_stats_row(const heat_case *c, const void *row, int64_t n, double *min, double *max,
                    double *sum)
{
    double part[HEAT_STATS_LANES] = {0}, lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        const double v = value_at(c, row, i);
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
        part[i % HEAT_STATS_LANES] += v;
    }
    double s = 0;
    for (int l = 0; l < HEAT_STATS_LANES; l++) s += part[l];
    *min = lo, *max = hi, *sum = s;
}

void heat_stats_fold(int64_t rows, const double *rmin, const double *rmax, const double *rsum,
                     double *min, double *max, double *sum)
{
    double lo = *min, hi = *max, s = *sum;
    for (int64_t g = 0; g < rows; g += HEAT_STATS_GROUP) {
        double gs = 0;
        for (int64_t r = g; r < rows && r < g + HEAT_STATS_GROUP; r++) {
            lo = rmin[r] < lo ? rmin[r] : lo;
            hi = rmax[r] > hi ? rmax[r] : hi;
            gs += rsum[r];
        }
        s += gs;
    }
    /* (-0 and +0 compare equal: which one a fold keeps depends on its order) */
    *min = lo == 0 ? 0.0 : lo, *max = hi == 0 ? 0.0 : hi, *sum = s;
}

void heat_stats_field(const heat_case *c, const void *f, double *min, double *max, double *sum)
{
    const int64_t nx = c->grid.n[0], ny = c->grid.n[1];
    heat_stats_box(c, f, nx, ny, c->grid.n[2], nx, nx * ny, min, max, sum);
}

void heat_stats_box(const heat_case *c, const void *f, int64_t nx, int64_t ny, int64_t nz,
                    int64_t sy, int64_t sz, double *min, double *max, double *sum)
{
    const size_t vs = heat_case_value_size(c);
    const int64_t rows = ny * nz;
#define ROW(r) ((const char *)f + (size_t)(((r) % ny) * sy + ((r) / ny) * sz) * vs)
    double *r = malloc((size_t)rows * 3 * sizeof *r);
    *min = INFINITY, *max = -INFINITY, *sum = 0;
    if (!r) { /* the same order, one group of rows at a time */
        double g[3][HEAT_STATS_GROUP];
        for (int64_t j0 = 0; j0 < rows; j0 += HEAT_STATS_GROUP) {
            const int64_t n = rows - j0 < HEAT_STATS_GROUP ? rows - j0 : HEAT_STATS_GROUP;
            for (int64_t j = 0; j < n; j++)
                heat_stats_row(c, ROW(j0 + j), nx, &g[0][j], &g[1][j], &g[2][j]);
            heat_stats_fold(n, g[0], g[1], g[2], min, max, sum);
        }
        return;
    }
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < rows; j++)
        heat_stats_row(c, ROW(j), nx, &r[j], &r[rows + j], &r[2 * rows + j]);
#undef ROW
    heat_stats_fold(rows, r, r + rows, r + 2 * rows, min, max, sum);
    free(r);
}

int heat_backend_field_stats(heat_backend *b, double *min, double *max, double *sum,
                             heat_error *err)
{
    if (b->ops->field_stats) return b->ops->field_stats(b, min, max, sum, err);
    void *f = download_all(b, err);
    if (!f) return err->code;
    heat_stats_field(b->c, f, min, max, sum);
    free(f);
    return HEAT_OK;
}

int heat_backend_sample(heat_backend *b, int n, const int64_t *index, double *values,
                        heat_error *err)
{
    if (n <= 0) return HEAT_OK;
    if (b->ops->sample) return b->ops->sample(b, n, index, values, err);
    void *f = download_all(b, err);
    if (!f) return err->code;
    for (int i = 0; i < n; i++) values[i] = value_at(b->c, f, index[i]);
    free(f);
    return HEAT_OK;
}
