/* Multigrid on the CPU backend: the hierarchy of kernels/mg.h in the run's
 * precision, the level kernels (cpu_mg.inc) behind heat_mg_ops, and the
 * steady solve or implicit steps in place of forward Euler. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_internal.h"
#include "mg.h"

#define T   float
#define SFX f
#include "cpu_mg.inc"
#undef T
#undef SFX

#define T   double
#define SFX d
#include "cpu_mg.inc"
#undef T
#undef SFX

struct cpu_mg {
    heat_mg *m; /* geometry, coarsest inverse; its per-node arrays dropped */
    int is_float;
    mgv_f f;
    mgv_d d;
    heat_mg_state st;
    double *rows; /* one partial sum per row of level 0 (the weighted mean) */
    double marks[HEAT_MG_MARKS];
    void *owned[HEAT_MG_LEVELS_MAX * 20 + 16];
    int nowned;
};

/* ---- the hierarchy in the run's precision ------------------------------------------ */

/* A copy of n doubles (NULL stays NULL) in the precision, owned by g. */
static void *copy_values(cpu_mg *g, const double *src, int64_t n, int *fail)
{
    if (!src || *fail) return NULL;
    const size_t vs = g->is_float ? sizeof(float) : sizeof(double);
    void *p = aligned_alloc(64, ((size_t)n * vs + 63) / 64 * 64);
    if (!p) return *fail = 1, NULL;
    g->owned[g->nowned++] = p;
    if (g->is_float)
        for (int64_t i = 0; i < n; i++) ((float *)p)[i] = (float)src[i];
    else
        memcpy(p, src, (size_t)n * sizeof(double));
    return p;
}

static void *zeros(cpu_mg *g, int64_t n, int *fail)
{
    if (*fail) return NULL;
    void *p = calloc((size_t)n, g->is_float ? sizeof(float) : sizeof(double));
    if (!p) return *fail = 1, NULL;
    g->owned[g->nowned++] = p;
    return p;
}

/* Fills the view of one precision: a macro, so that one text serves both. */
#define FILL_VIEW(V, TT)                                                                           \
    do {                                                                                           \
        V.levels = m->levels;                                                                      \
        V.nmat = m->nmat;                                                                          \
        V.kf = copy_values(g, m->kf, (int64_t)m->nmat * m->nmat, &fail);                           \
        for (int a = 0; a < m->nmat; a++)                                                          \
            V.rhoc[a] = (TT)m->rhoc[a], V.mdt[a] = (TT)(m->rhoc[a] / m->dt);                       \
        memcpy(V.mat, m->mat, sizeof V.mat);                                                       \
        V.cls = m->cls;                                                                            \
        V.dg0 = copy_values(g, m->dg0, np, &fail);                                                 \
        V.b0 = copy_values(g, m->b0, np, &fail);                                                   \
        V.keep = m->implicit ? zeros(g, np, &fail) : NULL;                                         \
        V.ct = (TT)((1.0 - m->theta) / m->theta);                                                  \
        V.dt = m->dt;                                                                              \
        V.nc = m->nc;                                                                              \
        V.cidx = m->cidx;                                                                          \
        V.cinv = copy_values(g, m->cinv, m->nc * m->nc, &fail);                                    \
        for (int l = 0; l < m->levels; l++) {                                                      \
            const heat_mg_level *L = &m->lv[l];                                                    \
            for (int a = 0; a < 3; a++) {                                                          \
                const heat_mg_axis *ax = &L->ax[a];                                                \
                V.lv[l].n[a] = L->n[a];                                                            \
                V.lv[l].v[a] = copy_values(g, ax->v, ax->n, &fail);                                \
                V.lv[l].ih[a] = copy_values(g, ax->ih, ax->n, &fail);                              \
                V.lv[l].wp[a] = copy_values(g, ax->wp, 2 * ax->n, &fail);                          \
                V.lv[l].wr[a] = copy_values(g, ax->wr, 3 * ax->n, &fail);                          \
                V.lv[l].pp[a] = ax->pp, V.lv[l].pr[a] = ax->pr;                                    \
                V.lv[l].held[a][0] = ax->held[0], V.lv[l].held[a][1] = ax->held[1];                \
                V.lv[l].t[a] = l > 0 ? copy_values(g, L->t[a], L->points, &fail) : NULL;           \
            }                                                                                      \
            V.lv[l].dg = l > 0 ? copy_values(g, L->dg, L->points, &fail) : NULL;                   \
            for (int s = 0; s < 2 * HEAT_MG_SWEEPS; s++)                                           \
                V.lv[l].cheb[s][0] = (TT)L->cheb[s][0], V.lv[l].cheb[s][1] = (TT)L->cheb[s][1];    \
            if (l > 0) {                                                                           \
                V.lv[l].x[0] = zeros(g, L->points, &fail);                                         \
                V.lv[l].x[1] = zeros(g, L->points, &fail);                                         \
                V.lv[l].b = zeros(g, L->points, &fail);                                            \
            }                                                                                      \
        }                                                                                          \
        V.lv[0].x[0] = u, V.lv[0].x[1] = v;                                                        \
        V.lv[0].b = m->implicit ? zeros(g, np, &fail) : V.b0;                                      \
    } while (0)

int heat_cpu_mg_create(const heat_case *c, void *u, void *v, const uint8_t *cls,
                       const heat_coeffs *k, cpu_mg **out, heat_error *err)
{
    *out = NULL;
    cpu_mg *g = calloc(1, sizeof *g);
    if (!g) return heat_error_set(err, HEAT_ERUNTIME, "cpu backend: out of memory for multigrid");
    int rc = heat_mg_build(c, cls, k, &g->m, err);
    if (rc) {
        free(g);
        return rc;
    }
    const heat_mg *m = g->m;
    const int64_t np = m->lv[0].points;
    int fail = 0;
    g->is_float = c->solver.precision == HEAT_FLOAT;
    if (g->is_float)
        FILL_VIEW(g->f, float);
    else
        FILL_VIEW(g->d, double);
    g->rows = malloc(sizeof *g->rows * (size_t)(m->lv[0].n[1] * m->lv[0].n[2]));
    heat_mg_drop_arrays(g->m);
    if (fail || !g->rows) {
        const double gb = heat_mg_bytes(m, g->is_float ? 4 : 8) / 1e9;
        heat_cpu_mg_destroy(g);
        return heat_error_set(err, HEAT_ERUNTIME,
                              "cpu backend: out of memory for the multigrid levels (%.3g GB)", gb);
    }
    *out = g;
    return HEAT_OK;
}

void heat_cpu_mg_destroy(cpu_mg *g)
{
    if (!g) return;
    for (int i = 0; i < g->nowned; i++) free(g->owned[i]);
    free(g->rows);
    heat_mg_free(g->m);
    free(g);
}

/* ---- the level kernels behind heat_mg_ops -------------------------------------------- */

static void op_smooth(void *ctx, int l, int s, int zero)
{
    cpu_mg *g = ctx;
    if (g->is_float)
        mg_smooth_f(&g->f, l, s, zero);
    else
        mg_smooth_d(&g->d, l, s, zero);
}

static void op_restrict(void *ctx, int l)
{
    cpu_mg *g = ctx;
    if (g->is_float)
        mg_restrict_f(&g->f, l);
    else
        mg_restrict_d(&g->d, l);
}

static void op_coarse(void *ctx)
{
    cpu_mg *g = ctx;
    if (g->is_float)
        mg_coarse_f(&g->f);
    else
        mg_coarse_d(&g->d);
}

static void op_prolong(void *ctx, int l)
{
    cpu_mg *g = ctx;
    if (g->is_float)
        mg_prolong_f(&g->f, l);
    else
        mg_prolong_d(&g->d, l);
}

static int op_norms(void *ctx, double *rmax, double *umax, double *wsum, heat_error *err)
{
    (void)err;
    cpu_mg *g = ctx;
    if (g->is_float)
        mg_norms_f(&g->f, rmax, umax, wsum, g->rows);
    else
        mg_norms_d(&g->d, rmax, umax, wsum, g->rows);
    return HEAT_OK;
}

static int op_shift(void *ctx, double delta, heat_error *err)
{
    (void)err;
    cpu_mg *g = ctx;
    if (g->is_float)
        mg_shift_f(&g->f, delta);
    else
        mg_shift_d(&g->d, delta);
    return HEAT_OK;
}

static int op_rhs(void *ctx, int keep, double *bmax, heat_error *err)
{
    (void)err;
    cpu_mg *g = ctx;
    *bmax = g->is_float ? mg_rhs_f(&g->f, keep) : mg_rhs_d(&g->d, keep);
    return HEAT_OK;
}

static int op_dudt(void *ctx, double *m, heat_error *err)
{
    (void)err;
    cpu_mg *g = ctx;
    *m = g->is_float ? mg_dudt_f(&g->f) : mg_dudt_d(&g->d);
    return HEAT_OK;
}

static const heat_mg_ops cpu_mg_ops = {.smooth = op_smooth,
                                       .restrict_residual = op_restrict,
                                       .coarse_solve = op_coarse,
                                       .prolong = op_prolong,
                                       .norms = op_norms,
                                       .shift = op_shift,
                                       .rhs = op_rhs,
                                       .dudt = op_dudt};

int heat_cpu_mg_advance(cpu_mg *g, int64_t steps, double *residual, heat_error *err)
{
    if (g->m->implicit) return heat_mg_implicit(g->m, &cpu_mg_ops, g, &g->st, steps, residual, err);
    return heat_mg_steady(g->m, &cpu_mg_ops, g, &g->st, steps, residual, err);
}

void heat_cpu_mg_info(const cpu_mg *g, heat_mg_info *info)
{
    heat_mg_fill_info(g->m, &g->st, info);
}

/* ---- timing for heat bench --multigrid ---------------------------------------------------- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The clock of heat_mg_time_parts: the wall clock at each mark (the
 * kernels are synchronous). */
static void cpu_mark(void *ctx, int i)
{
    cpu_mg *g = ctx;
    g->marks[i] = now();
}

static int cpu_read(void *ctx, int n, double *ms, heat_error *err)
{
    (void)err;
    cpu_mg *g = ctx;
    for (int i = 1; i < n; i++) ms[i - 1] = 1e3 * (g->marks[i] - g->marks[i - 1]);
    return HEAT_OK;
}

int heat_cpu_mg_bench(cpu_mg *g, int runs, heat_mg_timing *t, heat_error *err)
{
    const heat_mg_clock clock = {cpu_mark, cpu_read};
    return heat_mg_time_parts(g->m, &cpu_mg_ops, g, &clock, runs, t, err);
}
