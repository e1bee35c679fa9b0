/* The CPU backend: OpenMP over x rows, two time levels, the residual fused
 * into the sweep on check steps. It is the reference every GPU kernel is
 * tested against, so it favours plain, obviously right arithmetic in a fixed
 * order; speed comes from streaming whole rows through a vectorized loop. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend_impl.h"

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

typedef struct cpu_state {
    void *u, *v; /* current and next time level */
    size_t bytes;
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

#define ADVANCE_BODY(T, SFX)                                                                       \
    do {                                                                                           \
        row_ops_##SFX o = {(T)c->d.r[0],                                                           \
                           (T)c->d.r[1],                                                           \
                           (T)c->d.r[2],                                                           \
                           (T)(2.0 * c->d.h[0] * c->bc[HEAT_X_LO].gradient),                       \
                           (T)(2.0 * c->d.h[0] * c->bc[HEAT_X_HI].gradient),                       \
                           (int)c->bc[HEAT_X_LO].type,                                             \
                           (int)c->bc[HEAT_X_HI].type};                                            \
        const T gy[2] = {(T)(2.0 * c->d.h[1] * c->bc[HEAT_Y_LO].gradient),                         \
                         (T)(2.0 * c->d.h[1] * c->bc[HEAT_Y_HI].gradient)};                        \
        const T gz[2] = {(T)(2.0 * c->d.h[2] * c->bc[HEAT_Z_LO].gradient),                         \
                         (T)(2.0 * c->d.h[2] * c->bc[HEAT_Z_HI].gradient)};                        \
        for (int64_t n = 0; n < steps; n++) {                                                      \
            int last = n == steps - 1;                                                             \
            double m = sweep_##SFX(c, &o, gy, gz, s->u, s->v, residual && last);                   \
            void *t = s->u;                                                                        \
            s->u = s->v;                                                                           \
            s->v = t;                                                                              \
            if (residual && last) *residual = m / c->d.dt;                                         \
        }                                                                                          \
    } while (0)

static int cpu_advance(heat_backend *b, int64_t steps, double *residual, heat_error *err)
{
    (void)err;
    cpu_state *s = b->impl;
    const heat_case *c = b->c;
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
        free(s);
    }
    free(b);
}

static const heat_backend_ops cpu_ops = {cpu_upload, cpu_advance, cpu_download, cpu_destroy,
                                         NULL,       NULL,        NULL,         NULL};

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
