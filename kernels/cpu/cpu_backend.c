/* The CPU backend: OpenMP over x rows, two time levels, the residual fused
 * into the sweep on check steps. It is the reference every GPU kernel is
 * tested against, so it favours plain, obviously right arithmetic in a fixed
 * order; speed comes from streaming whole rows through a vectorized loop. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "cpu_internal.h"

/* Tiles of the sweep: about this many bytes of input rows per tile (a share
 * of a core's L2 cache), and at most this many planes deep. */
#define CPU_TILE_BYTES  (256 * 1024)
#define CPU_TILE_PLANES 64

/* The sweep's fused multiply-adds need the FMA instructions to be fast. Where
 * the compiler may not assume them (x86-64 built for any CPU, HEAT_NATIVE=OFF
 * or a CPU without them), the row update is built twice and the loader picks
 * the copy for the CPU it runs on (GCC/Clang function multiversioning); the
 * results are the same bits either way. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__FMA__)
#define CPU_FMA_TARGETS __attribute__((target_clones("fma", "default")))
#else
#define CPU_FMA_TARGETS
#endif

#define T   float
#define FMA fmaf
#define SFX f
#include "cpu_sweep.inc"
#undef T
#undef FMA
#undef SFX

#define T   double
#define FMA fma
#define SFX d
#include "cpu_sweep.inc"
#undef T
#undef FMA
#undef SFX

#define T   float
#define SFX f
#include "cpu_general.inc"
#undef T
#undef SFX

#define T   double
#define SFX d
#include "cpu_general.inc"
#undef T
#undef SFX

struct cpu_gen {
    int is_float;
    gen_f f;
    gen_d d;
};

cpu_gen *heat_cpu_gen_create(const heat_case *c, const heat_coeffs *k)
{
    cpu_gen *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->is_float = c->solver.precision == HEAT_FLOAT;
    if (t->is_float ? gen_make_f(k, &t->f) : gen_make_d(k, &t->d)) {
        free(t);
        return NULL;
    }
    return t;
}

void heat_cpu_gen_destroy(cpu_gen *t)
{
    if (!t) return;
    free(t->f.w);
    free(t->d.w);
    free(t);
}

typedef struct cpu_state {
    void *u, *v;   /* current and next time level */
    void *scratch; /* bench only: the copy's target */
    size_t bytes;
    uint8_t *cls; /* the classes of the grid (general cases) */
    cpu_gen *gen;
    heat_coeffs k;          /* the classes' tables (general cases; k.w not kept) */
    cpu_mg *mg;             /* multigrid (heat_case_multigrid) */
    heat_cpu_queued queued; /* steps queued (heat_backend_queue), run by cpu_wait */
} cpu_state;

static int cpu_upload(heat_backend *b, const void *host, heat_error *err)
{
    (void)err;
    cpu_state *s = b->impl;
    /* Both levels: Dirichlet nodes are never written by a sweep, so the
     * second buffer must hold them too. */
    memcpy(s->u, host, s->bytes);
    memcpy(s->v, host, s->bytes);
    return HEAT_OK;
}

static int cpu_download(heat_backend *b, void *host, heat_error *err)
{
    (void)err;
    cpu_state *s = b->impl;
    memcpy(host, s->u, s->bytes);
    return HEAT_OK;
}

/* The row operations of a box: coefficients, the x faces and their
 * Neumann constants. */
#define ROW_OPS_OF(T, c, g)                                                                        \
    {                                                                                              \
        (T)(c)->d.r[0], (T)(c)->d.r[1], (T)(c)->d.r[2],                                            \
            (T)(2.0 * (c)->d.h[0] * (c)->bc[HEAT_X_LO].gradient),                                  \
            (T)(2.0 * (c)->d.h[0] * (c)->bc[HEAT_X_HI].gradient), (g)->bc[HEAT_X_LO],              \
            (g)->bc[HEAT_X_HI]                                                                     \
    }

#define GHOSTS_OF(T, c, axis)                                                                      \
    {                                                                                              \
        (T)(2.0 * (c)->d.h[axis] * (c)->bc[2 * (axis)].gradient),                                  \
            (T)(2.0 * (c)->d.h[axis] * (c)->bc[2 * (axis) + 1].gradient)                           \
    }

#define ADVANCE_BODY(T, SFX)                                                                       \
    do {                                                                                           \
        row_ops_##SFX o = ROW_OPS_OF(T, c, &g);                                                    \
        const T gy[2] = GHOSTS_OF(T, c, 1);                                                        \
        const T gz[2] = GHOSTS_OF(T, c, 2);                                                        \
        for (int64_t n = 0; n < steps; n++) {                                                      \
            int last = n == steps - 1;                                                             \
            double m = sweep_##SFX(&g, &o, gy, gz, s->u, s->v, residual && last);                  \
            void *t = s->u;                                                                        \
            s->u = s->v;                                                                           \
            s->v = t;                                                                              \
            if (residual && last) *residual = m / c->d.dt;                                         \
        }                                                                                          \
    } while (0)

/* The whole grid as one box. */
static cpu_box grid_box(const heat_case *c)
{
    cpu_box g;
    for (int a = 0; a < 3; a++) g.n[a] = c->grid.n[a];
    g.sy = c->grid.n[0];
    g.sz = c->grid.n[0] * c->grid.n[1];
    for (int f = 0; f < HEAT_NFACES; f++) g.bc[f] = (int)c->bc[f].type;
    g.three_d = c->grid.dims == 3;
    return g;
}

double heat_cpu_sweep(const heat_case *c, const cpu_box *g, const void *u, void *out, int residual)
{
    if (c->d.general)
        return c->solver.precision == HEAT_FLOAT
                   ? gen_sweep_f(&g->gen->f, g, g->cls, u, out, residual)
                   : gen_sweep_d(&g->gen->d, g, g->cls, u, out, residual);
    if (c->solver.precision == HEAT_FLOAT) {
        row_ops_f o = ROW_OPS_OF(float, c, g);
        const float gy[2] = GHOSTS_OF(float, c, 1), gz[2] = GHOSTS_OF(float, c, 2);
        return sweep_f(g, &o, gy, gz, u, out, residual);
    }
    row_ops_d o = ROW_OPS_OF(double, c, g);
    const double gy[2] = GHOSTS_OF(double, c, 1), gz[2] = GHOSTS_OF(double, c, 2);
    return sweep_d(g, &o, gy, gz, u, out, residual);
}

static int cpu_advance(heat_backend *b, int64_t steps, double *residual, heat_error *err)
{
    cpu_state *s = b->impl;
    const heat_case *c = b->c;
    if (heat_case_multigrid(c)) {
        if (!s->mg) return heat_error_set(err, HEAT_ERUNTIME, "cpu backend: multigrid not set up");
        return heat_cpu_mg_advance(s->mg, steps, residual, err);
    }
    cpu_box g = grid_box(c);
    if (c->d.general) {
        if (!s->gen) return heat_error_set(err, HEAT_ERUNTIME, "cpu backend: no material classes");
        g.cls = s->cls;
        g.gen = s->gen;
        for (int64_t n = 0; n < steps; n++) {
            const int last = n == steps - 1;
            const double m = heat_cpu_sweep(c, &g, s->u, s->v, residual && last);
            void *t = s->u;
            s->u = s->v;
            s->v = t;
            if (residual && last) *residual = m / c->d.dt;
        }
        return HEAT_OK;
    }
    if (c->solver.precision == HEAT_FLOAT)
        ADVANCE_BODY(float, f);
    else
        ADVANCE_BODY(double, d);
    return HEAT_OK;
}

static void cpu_destroy(heat_backend *b)
{
    cpu_state *s = b->impl;
    if (s) {
        free(s->u);
        free(s->v);
        free(s->scratch);
        heat_cpu_mg_destroy(s->mg);
        free(s->cls);
        heat_cpu_gen_destroy(s->gen);
        free(s);
    }
    free(b);
}

double heat_cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Seconds for one parallel copy of `bytes` bytes, in static chunks per thread
 * as the sweep divides its rows. */
static double time_copy(void *dst, const void *src, size_t bytes)
{
    double t0 = heat_cpu_seconds();
#pragma omp parallel
    {
        int nt = 1, id = 0;
#ifdef _OPENMP
        nt = omp_get_num_threads();
        id = omp_get_thread_num();
#endif
        size_t chunk = (bytes / (size_t)nt + 63) / 64 * 64;
        size_t lo = (size_t)id * chunk;
        if (lo < bytes) {
            size_t len = lo + chunk > bytes ? bytes - lo : chunk;
            memcpy((char *)dst + lo, (const char *)src + lo, len);
        }
    }
    return heat_cpu_seconds() - t0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double heat_cpu_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int heat_cpu_bench_loop(heat_backend *b, heat_cpu_advance_fn advance, void **scratch, const void *u,
                        size_t bytes, int steps, int runs, double *copy_ms, double *steps_ms,
                        heat_error *err)
{
    if (!*scratch && !(*scratch = malloc(bytes)))
        return heat_error_set(err, HEAT_ERUNTIME, "heat bench: cannot allocate the copy's %.3g GB",
                              (double)bytes / 1e9);
    double *tc = malloc(sizeof *tc * (size_t)runs), *ts = malloc(sizeof *ts * (size_t)runs);
    int rc = !tc || !ts ? heat_error_set(err, HEAT_ERUNTIME, "out of memory") : HEAT_OK;
    if (!rc) time_copy(*scratch, u, bytes); /* warm-up */
    for (int r = 0; r < runs && !rc; r++) {
        tc[r] = time_copy(*scratch, u, bytes);
        double t0 = heat_cpu_seconds();
        rc = advance(b, steps, NULL, err);
        ts[r] = heat_cpu_seconds() - t0;
    }
    if (!rc) {
        *copy_ms = 1e3 * heat_cpu_median(tc, runs);
        *steps_ms = 1e3 * heat_cpu_median(ts, runs);
    }
    free(tc);
    free(ts);
    return rc;
}

/* The bench_time operation (backend.h): a parallel memcpy and the steps,
 * alternating, each timed on the wall clock around complete calls (this
 * backend is synchronous). */
static int cpu_bench_time(heat_backend *b, int steps, int runs, double *copy_ms, double *steps_ms,
                          heat_error *err)
{
    cpu_state *s = b->impl;
    return heat_cpu_bench_loop(b, cpu_advance, &s->scratch, s->u, s->bytes, steps, runs, copy_ms,
                               steps_ms, err);
}

static void cpu_class_box(const heat_backend *b, int64_t lo[3], int64_t n[3])
{
    for (int a = 0; a < 3; a++) lo[a] = 0, n[a] = b->c->grid.n[a];
}

static int cpu_set_classes(heat_backend *b, const uint8_t *cls, const heat_coeffs *k,
                           heat_error *err)
{
    cpu_state *s = b->impl;
    const size_t n = (size_t)b->c->d.points;
    cpu_gen *t = heat_cpu_gen_create(b->c, k);
    uint8_t *copy = t ? malloc(n) : NULL;
    if (!copy) {
        heat_cpu_gen_destroy(t);
        return heat_error_set(err, HEAT_ERUNTIME, "cpu backend: out of memory for the classes");
    }
    memcpy(copy, cls, n);
    free(s->cls);
    heat_cpu_gen_destroy(s->gen);
    s->cls = copy;
    s->gen = t;
    s->k = *k;
    s->k.w = NULL;
    return HEAT_OK;
}

static int cpu_mg_setup(heat_backend *b, heat_error *err)
{
    cpu_state *s = b->impl;
    heat_cpu_mg_destroy(s->mg);
    s->mg = NULL;
    return heat_cpu_mg_create(b->c, s->u, s->v, s->cls, s->cls ? &s->k : NULL, &s->mg, err);
}

static void cpu_mg_info(const heat_backend *b, heat_mg_info *info)
{
    const cpu_state *s = b->impl;
    if (s->mg) heat_cpu_mg_info(s->mg, info);
}

static int cpu_mg_bench(heat_backend *b, int runs, heat_mg_timing *t, heat_error *err)
{
    cpu_state *s = b->impl;
    if (!s->mg) return heat_error_set(err, HEAT_ERUNTIME, "cpu backend: multigrid not set up");
    if (!s->scratch && !(s->scratch = malloc(s->bytes)))
        return heat_error_set(err, HEAT_ERUNTIME, "heat bench: cannot allocate the copy's %.3g GB",
                              (double)s->bytes / 1e9);
    double tc[5];
    for (int r = 0; r < 5; r++) tc[r] = time_copy(s->scratch, s->u, s->bytes);
    t->copy_ms = 1e3 * heat_cpu_median(tc, 5);
    t->copy_bytes = 2.0 * (double)s->bytes;
    int rc = heat_cpu_mg_bench(s->mg, runs, t, err);
    if (rc) return rc;
    const double t0 = heat_cpu_seconds();
    rc = heat_cpu_mg_advance(s->mg, 1, NULL, err);
    t->cycle_ms = 1e3 * (heat_cpu_seconds() - t0);
    return rc;
}

/* The field's statistics (backend_impl.h) and the values at some indices. */
static int cpu_field_stats(heat_backend *b, double *min, double *max, double *sum, heat_error *err)
{
    (void)err;
    cpu_state *s = b->impl;
    heat_stats_field(b->c, s->u, min, max, sum);
    return HEAT_OK;
}

static int cpu_sample(heat_backend *b, int n, const int64_t *index, double *values, heat_error *err)
{
    (void)err;
    cpu_state *s = b->impl;
    for (int i = 0; i < n; i++)
        values[i] = b->c->solver.precision == HEAT_FLOAT ? (double)((const float *)s->u)[index[i]]
                                                         : ((const double *)s->u)[index[i]];
    return HEAT_OK;
}

int heat_cpu_queue(heat_cpu_queued *q, int64_t steps, int residual, heat_error *err)
{
    if (q->steps) return heat_error_set(err, HEAT_ERUNTIME, "cpu backend: steps already queued");
    q->steps = steps;
    q->residual = residual != 0;
    return HEAT_OK;
}

int heat_cpu_wait(heat_backend *b, heat_cpu_queued *q, heat_cpu_advance_fn advance,
                  double *residual, heat_error *err)
{
    const int64_t steps = q->steps;
    if (steps <= 0) return heat_error_set(err, HEAT_ERUNTIME, "cpu backend: no steps queued");
    if (residual && !q->residual)
        return heat_error_set(err, HEAT_ERUNTIME, "cpu backend: no residual queued");
    q->steps = 0;
    return advance(b, steps, residual, err);
}

static int cpu_queue(heat_backend *b, int64_t steps, int residual, heat_error *err)
{
    return heat_cpu_queue(&((cpu_state *)b->impl)->queued, steps, residual, err);
}

static int cpu_wait(heat_backend *b, double *residual, heat_error *err)
{
    return heat_cpu_wait(b, &((cpu_state *)b->impl)->queued, cpu_advance, residual, err);
}

static const heat_backend_ops cpu_ops = {.upload = cpu_upload,
                                         .advance = cpu_advance,
                                         .download = cpu_download,
                                         .destroy = cpu_destroy,
                                         .bench_time = cpu_bench_time,
                                         .class_box = cpu_class_box,
                                         .set_classes = cpu_set_classes,
                                         .field_stats = cpu_field_stats,
                                         .sample = cpu_sample,
                                         .mg_setup = cpu_mg_setup,
                                         .mg_info = cpu_mg_info,
                                         .mg_bench = cpu_mg_bench,
                                         .queue = cpu_queue,
                                         .wait = cpu_wait};

int heat_cpu_backend_create(const heat_case *c, heat_backend **out, heat_error *err)
{
    size_t bytes = (size_t)c->d.points * heat_case_value_size(c);
    size_t padded = (bytes + 63) / 64 * 64;
    heat_backend *b = calloc(1, sizeof *b);
    cpu_state *s = calloc(1, sizeof *s);
    if (b && s) {
        s->u = aligned_alloc(64, padded);
        s->v = aligned_alloc(64, padded);
    }
    if (!b || !s || !s->u || !s->v) {
        if (s) free(s->u), free(s->v);
        free(s);
        free(b);
        return heat_error_set(err, HEAT_ERUNTIME,
                              "cpu backend: cannot allocate the field: %.3g GB needed "
                              "(two time levels of %lld points in %s)",
                              2.0 * (double)bytes / 1e9, (long long)c->d.points,
                              heat_precision_name(c->solver.precision));
    }
    s->bytes = bytes;
    b->ops = &cpu_ops;
    b->c = c;
    b->impl = s;
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    snprintf(b->description, sizeof b->description, "cpu (OpenMP, %d thread%s, %s)", threads,
             threads == 1 ? "" : "s", heat_precision_name(c->solver.precision));
    *out = b;
    return HEAT_OK;
}
