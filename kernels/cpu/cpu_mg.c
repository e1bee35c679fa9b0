/* Multigrid on the CPU backend: the hierarchy of kernels/mg.h in the run's
 * precision, the level kernels (cpu_mg.inc) behind heat_mg_ops, and the
 * steady solve or implicit steps in place of forward Euler. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_internal.h"
#include "mg.h"
#include "xsum.h"

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
    size_t vs;
    mgv_f f;
    mgv_d d;
    heat_mg_state st;
    heat_xsum ws; /* the last norms' sum of (rho c) V x, this rank's */
    double marks[HEAT_MG_MARKS];
    void **owned;
    int nowned, cap;
    /* A split run: m holds this rank's boxes of levels 0 .. m->gather (the
     * views f, d), tail the levels from m->gather on, whole (tf, td). */
    heat_mg *tail;
    mgv_f tf;
    mgv_d td;
    heat_mg_dist dist;
    heat_mg_xchg xchg;
    const heat_case *c;
    int rc; /* the first failure of an exchange inside a cycle */
    heat_error err;
};

/* ---- the hierarchy in the run's precision ------------------------------------------ */

static void *keep(cpu_mg *g, void *p, int *fail)
{
    if (!p) return *fail = 1, NULL;
    if (g->nowned == g->cap) {
        void **o = realloc(g->owned, sizeof *o * (size_t)(2 * g->cap + 64));
        if (!o) return free(p), *fail = 1, NULL;
        g->owned = o, g->cap = 2 * g->cap + 64;
    }
    return g->owned[g->nowned++] = p;
}

/* A copy of n doubles (NULL stays NULL) in the precision, owned by g. */
static void *copy_values(cpu_mg *g, const double *src, int64_t n, int *fail)
{
    if (!src || *fail) return NULL;
    const size_t vs = g->is_float ? sizeof(float) : sizeof(double);
    void *p = keep(g, aligned_alloc(64, ((size_t)n * vs + 63) / 64 * 64), fail);
    if (!p) return NULL;
    if (g->is_float)
        for (int64_t i = 0; i < n; i++) ((float *)p)[i] = (float)src[i];
    else
        memcpy(p, src, (size_t)n * sizeof(double));
    return p;
}

static void *zeros(cpu_mg *g, int64_t n, int *fail)
{
    if (*fail) return NULL;
    return keep(g, calloc((size_t)(n > 0 ? n : 1), g->is_float ? sizeof(float) : sizeof(double)),
                fail);
}

/* A copy of n 16-bit weights (NULL stays NULL), owned by g. */
static uint16_t *copy_wq(cpu_mg *g, const uint16_t *src, int64_t n, int *fail)
{
    if (!src || *fail) return NULL;
    uint16_t *p = keep(g, malloc(sizeof *p * (size_t)(n > 0 ? n : 1)), fail);
    if (p) memcpy(p, src, sizeof *p * (size_t)n);
    return p;
}

/* Axis a's tables of level l over its box (heat_mg_box_axis): doubles in
 * tmp[0..3] (v, ih, wp, wr; the caller frees them), indices owned by g. */
static int axis_tables(cpu_mg *g, const heat_mg *m, int l, int a, double *tmp[4], int64_t **pp,
                       int64_t **pr)
{
    const size_t n = (size_t)m->lv[l].bn[a];
    int fail = 0;
    tmp[0] = malloc(sizeof(double) * n), tmp[1] = malloc(sizeof(double) * n);
    tmp[2] = malloc(sizeof(double) * 2 * n), tmp[3] = malloc(sizeof(double) * 3 * n);
    *pp = keep(g, malloc(sizeof(int64_t) * 2 * n), &fail);
    *pr = keep(g, malloc(sizeof(int64_t) * 3 * n), &fail);
    if (fail || !tmp[0] || !tmp[1] || !tmp[2] || !tmp[3]) return -1;
    heat_mg_box_axis(m, l, a, tmp[0], tmp[1], tmp[2], tmp[3], *pp, *pr);
    return 0;
}

/* Fills levels lf .. ll of the view of one precision from hierarchy m (its
 * boxes); lf = 0: also the finest level's terms over the field's buffers u
 * and v, with cls (the classes laid out as the field) for the kernels. A
 * macro, so that one text serves both precisions. */
#define FILL_VIEW(V, TT, MH, LF, LL, UU, VV, CC)                                                   \
    do {                                                                                           \
        const int64_t np = MH->lv[0].points;                                                       \
        V.levels = MH->levels;                                                                     \
        V.nmat = MH->nmat;                                                                         \
        V.kf = copy_values(g, MH->kf, (int64_t)MH->nmat * MH->nmat, &fail);                        \
        for (int a = 0; a < MH->nmat; a++)                                                         \
            V.rhoc[a] = (TT)MH->rhoc[a], V.mdt[a] = (TT)(MH->rhoc[a] / MH->dt);                    \
        memcpy(V.mat, MH->mat, sizeof V.mat);                                                      \
        V.cls = CC;                                                                                \
        V.ct = (TT)((1.0 - MH->theta) / MH->theta);                                                \
        V.dt = MH->dt;                                                                             \
        V.nc = MH->nc;                                                                             \
        V.cidx = MH->cidx;                                                                         \
        V.cinv = copy_values(g, MH->cinv, MH->nc * MH->nc, &fail);                                 \
        if (LF == 0) {                                                                             \
            V.dg0 = copy_values(g, MH->dg0, np, &fail);                                            \
            V.b0 = copy_values(g, MH->b0, np, &fail);                                              \
            V.keep = MH->implicit ? zeros(g, np, &fail) : NULL;                                    \
        }                                                                                          \
        for (int l = LF; l <= LL && !fail; l++) {                                                  \
            const heat_mg_level *L = &MH->lv[l];                                                   \
            for (int a = 0; a < 3 && !fail; a++) {                                                 \
                const heat_mg_axis *ax = &L->ax[a];                                                \
                double *tmp[4] = {NULL, NULL, NULL, NULL};                                         \
                if (axis_tables(g, MH, l, a, tmp, &V.lv[l].pp[a], &V.lv[l].pr[a])) fail = 1;       \
                const int64_t bn = L->bn[a];                                                       \
                V.lv[l].n[a] = bn;                                                                 \
                V.lv[l].v[a] = copy_values(g, tmp[0], bn, &fail);                                  \
                V.lv[l].ih[a] = copy_values(g, tmp[1], bn, &fail);                                 \
                V.lv[l].wp[a] = copy_values(g, tmp[2], 2 * bn, &fail);                             \
                V.lv[l].wr[a] = copy_values(g, tmp[3], 3 * bn, &fail);                             \
                for (int q = 0; q < 4; q++) free(tmp[q]);                                          \
                V.lv[l].held[a][0] = L->gl[a] || ax->held[0];                                      \
                V.lv[l].held[a][1] = L->gh[a] || ax->held[1];                                      \
                V.lv[l].t[a] = l > 0 ? copy_values(g, L->t[a], L->points, &fail) : NULL;           \
                V.lv[l].wq[a] = copy_wq(g, L->wq[a], L->points, &fail);                            \
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
        if (LF == 0) {                                                                             \
            V.lv[0].x[0] = UU, V.lv[0].x[1] = VV;                                                  \
            V.lv[0].b = MH->implicit ? zeros(g, np, &fail) : V.b0;                                 \
        }                                                                                          \
    } while (0)

/* The views of a new cpu_mg g over g->m (and g->tail); then the
 * hierarchy's per-node arrays are dropped. */
static int fill_views(cpu_mg *g, void *u, void *v, const uint8_t *cls, heat_error *err)
{
    const heat_mg *m = g->m, *tl = g->tail;
    const int last = tl ? m->gather : m->levels - 1;
    int fail = 0;
    if (g->is_float) {
        FILL_VIEW(g->f, float, m, 0, last, u, v, cls);
        if (tl) FILL_VIEW(g->tf, float, tl, m->gather, tl->levels - 1, NULL, NULL, NULL);
    } else {
        FILL_VIEW(g->d, double, m, 0, last, u, v, cls);
        if (tl) FILL_VIEW(g->td, double, tl, m->gather, tl->levels - 1, NULL, NULL, NULL);
    }
    const double gb =
        (heat_mg_bytes(m, (int)g->vs) + (tl ? heat_mg_bytes(tl, (int)g->vs) : 0)) / 1e9;
    heat_mg_drop_arrays(g->m);
    heat_mg_drop_arrays(g->tail);
    if (fail)
        return heat_error_set(err, HEAT_ERUNTIME,
                              "cpu backend: out of memory for the multigrid levels (%.3g GB)", gb);
    return HEAT_OK;
}

static cpu_mg *new_mg(const heat_case *c)
{
    cpu_mg *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->c = c;
    g->is_float = c->solver.precision == HEAT_FLOAT;
    g->vs = g->is_float ? sizeof(float) : sizeof(double);
    return g;
}

int heat_cpu_mg_create(const heat_case *c, void *u, void *v, const uint8_t *cls,
                       const heat_coeffs *k, cpu_mg **out, heat_error *err)
{
    *out = NULL;
    cpu_mg *g = new_mg(c);
    if (!g) return heat_error_set(err, HEAT_ERUNTIME, "cpu backend: out of memory for multigrid");
    int rc = heat_mg_build(c, cls, k, &g->m, err);
    if (!rc) rc = fill_views(g, u, v, g->m->cls, err);
    if (rc) {
        heat_cpu_mg_destroy(g);
        return rc;
    }
    *out = g;
    return HEAT_OK;
}

void heat_cpu_mg_destroy(cpu_mg *g)
{
    if (!g) return;
    for (int i = 0; i < g->nowned; i++) free(g->owned[i]);
    free(g->owned);
    heat_mg_xchg_free(&g->xchg);
    heat_mg_free(g->m);
    heat_mg_free(g->tail);
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
        mg_norms_f(&g->f, rmax, umax, &g->ws);
    else
        mg_norms_d(&g->d, rmax, umax, &g->ws);
    *wsum = heat_xsum_value(&g->ws);
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

static const heat_mg_ops split_ops;

int heat_cpu_mg_advance(cpu_mg *g, int64_t steps, double *residual, heat_error *err)
{
    if (g->tail) {
        if (g->m->implicit)
            return heat_mg_implicit(g->m, &split_ops, g, &g->st, steps, residual, err);
        return heat_mg_steady(g->m, &split_ops, g, &g->st, steps, residual, err);
    }
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

/* ---- a hierarchy split over ranks (mg.h) --------------------------------------------- */

static int mg_exchange(cpu_mg *g, int l, void *a, heat_error *err)
{
    return heat_mg_xchg_run(&g->xchg, g->m, l, a, g->vs, heat_mg_copy_host, NULL, err);
}

static void mg_reduce(cpu_mg *g, double *v, int n)
{
    g->xchg.comm.reduce(g->xchg.comm.ctx, v, n, 0);
}

/* An exchange inside a cycle, whose kernels return nothing: the first
 * failure is kept (g->rc) and ends the cycle's exchanges. */
static void xg(cpu_mg *g, int l, void *a)
{
    if (!g->rc) g->rc = mg_exchange(g, l, a, &g->err);
}

#define XBUF(l, i) (g->is_float ? (void *)g->f.lv[l].x[i] : (void *)g->d.lv[l].x[i])

static void sop_smooth(void *ctx, int l, int s, int zero)
{
    cpu_mg *g = ctx;
    if (l >= g->m->gather) {
        if (g->is_float)
            mg_smooth_f(&g->tf, l, s, zero);
        else
            mg_smooth_d(&g->td, l, s, zero);
        return;
    }
    if (!(zero && s == 0)) xg(g, l, XBUF(l, s % 2));
    op_smooth(ctx, l, s, zero);
}

static void sop_restrict(void *ctx, int l)
{
    cpu_mg *g = ctx;
    const int gl = g->m->gather;
    if (l >= gl) {
        if (g->is_float)
            mg_restrict_f(&g->tf, l);
        else
            mg_restrict_d(&g->td, l);
        return;
    }
    xg(g, l, XBUF(l, 0));
    if (g->is_float)
        mg_residual_f(&g->f, l);
    else
        mg_residual_d(&g->d, l);
    xg(g, l, XBUF(l, 1));
    if (g->is_float)
        mg_restrict_r_f(&g->f, l);
    else
        mg_restrict_r_d(&g->d, l);
    if (l + 1 == gl && !g->rc) {
        void *b = g->is_float ? (void *)g->f.lv[gl].b : (void *)g->d.lv[gl].b;
        void *full = g->is_float ? (void *)g->tf.lv[gl].b : (void *)g->td.lv[gl].b;
        g->rc = heat_mg_gather(g->m, &g->dist, gl, g->vs, b, full, &g->err);
    }
}

static void sop_coarse(void *ctx)
{
    cpu_mg *g = ctx;
    if (g->is_float)
        mg_coarse_f(&g->tf);
    else
        mg_coarse_d(&g->td);
}

static void sop_prolong(void *ctx, int l)
{
    cpu_mg *g = ctx;
    const int gl = g->m->gather;
    if (l >= gl) {
        if (g->is_float)
            mg_prolong_f(&g->tf, l);
        else
            mg_prolong_d(&g->td, l);
        return;
    }
    if (l + 1 == gl) {
        const void *full = g->is_float ? (void *)g->tf.lv[gl].x[0] : (void *)g->td.lv[gl].x[0];
        heat_mg_scatter(g->m, gl, g->vs, full, XBUF(gl, 0));
    } else {
        xg(g, l + 1, XBUF(l + 1, 0));
    }
    op_prolong(ctx, l);
}

static int sop_cycle(void *ctx, heat_error *err);

/* The passes over level 0 below read its ghosts, made current first: its
 * maxima then include copies of the neighbours' own values, so the largest
 * over the ranks is the one-process value. */
static int sop_norms(void *ctx, double *rmax, double *umax, double *wsum, heat_error *err)
{
    cpu_mg *g = ctx;
    int rc = mg_exchange(g, 0, XBUF(0, 0), err);
    if (rc) return rc;
    op_norms(ctx, rmax, umax, wsum, err);
    double v[2] = {*rmax, *umax};
    mg_reduce(g, v, 2);
    *rmax = v[0], *umax = v[1];
    /* the exact sum over every rank: its digits added as doubles, exactly */
    double limbs[HEAT_XSUM_LIMBS + 1];
    heat_xsum_limbs_out(&g->ws, limbs);
    g->xchg.comm.reduce(g->xchg.comm.ctx, limbs, HEAT_XSUM_LIMBS + 1, 1);
    heat_xsum_limbs_in(&g->ws, limbs);
    *wsum = heat_xsum_value(&g->ws);
    return HEAT_OK;
}

static int sop_rhs(void *ctx, int keep_x, double *bmax, heat_error *err)
{
    cpu_mg *g = ctx;
    int rc = mg_exchange(g, 0, XBUF(0, 0), err);
    if (rc) return rc;
    op_rhs(ctx, keep_x, bmax, err);
    mg_reduce(g, bmax, 1);
    return HEAT_OK;
}

static int sop_dudt(void *ctx, double *m, heat_error *err)
{
    cpu_mg *g = ctx;
    int rc = mg_exchange(g, 0, XBUF(0, 0), err);
    if (rc) return rc;
    op_dudt(ctx, m, err);
    mg_reduce(g, m, 1);
    return HEAT_OK;
}

static const heat_mg_ops split_ops = {.smooth = sop_smooth,
                                      .restrict_residual = sop_restrict,
                                      .coarse_solve = sop_coarse,
                                      .prolong = sop_prolong,
                                      .norms = sop_norms,
                                      .shift = op_shift,
                                      .rhs = sop_rhs,
                                      .dudt = sop_dudt,
                                      .cycle = sop_cycle};

/* One V-cycle kernel by kernel, then the first failure of its exchanges. */
static int sop_cycle(void *ctx, heat_error *err)
{
    cpu_mg *g = ctx;
    heat_mg_vcycle(g->m, &split_ops, g);
    if (g->rc) *err = g->err;
    return g->rc;
}

int heat_cpu_mg_create_part(const heat_case *c, const heat_part *part, const heat_halo_comm *comm,
                            void *u, void *v, const uint8_t *cls, const uint8_t *cls_box,
                            const int64_t clo[3], const int64_t cn[3], const heat_coeffs *k,
                            cpu_mg **out, heat_error *err)
{
    *out = NULL;
    cpu_mg *g = new_mg(c);
    if (!g) return heat_error_set(err, HEAT_ERUNTIME, "cpu backend: out of memory for multigrid");
    heat_mg_xchg_init(&g->xchg, c, part, comm, &g->dist);
    int rc = heat_mg_build_part(c, &g->dist, cls_box, clo, cn, k, &g->m, &g->tail, err);
    heat_mg_xchg_clear(&g->xchg);
    if (!rc) rc = fill_views(g, u, v, c->d.general ? cls : NULL, err);
    if (rc) {
        heat_cpu_mg_destroy(g);
        return rc;
    }
    *out = g;
    return HEAT_OK;
}

void heat_cpu_mg_halo_stats(const cpu_mg *g, heat_halo_stats *st)
{
    heat_halo_stats_add(st, &g->xchg.st);
}
