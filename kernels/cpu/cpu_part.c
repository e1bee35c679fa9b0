/* The CPU backend on one rank's part of a distributed grid: the part's box
 * with its ghost layers (halo_plan.h), swept view by view with the same
 * sweep as the whole grid, halos exchanged through the transport seam.
 *
 * A pass of d <= k steps (k = the halo depth) sweeps steps 1 .. d - 1 over
 * the owned box grown into the ghosts (no exchange), then its last step as
 * the shell first, the exchange of the shell's layers started, the interior
 * in pieces (each piece followed by a test that moves the exchange on, and
 * with depth > 1 and several cut axes starts its next phase), and finally
 * the wait for what is still in flight. The time the rank spends outside
 * the sweeps in that last step is the part of the exchange not hidden by
 * compute.
 *
 * For tests, HEAT_TEST_GPU_VIEWS=fused (or =steps) makes this backend walk
 * the CUDA backend's geometry: views aligned as its vector loads need
 * (heat_halo_align), passes of fused steps (one sweep over a fixed view, d
 * times) or of single ones, and the residual taken over the owned box apart
 * from the sweeps; the results must stay the same bits. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "cpu_internal.h"

/* Interior pieces of the overlapped step: between two, the exchange moves on. */
#define INTERIOR_PIECES 4

typedef struct part_state {
    heat_halo_plan p;
    heat_halo_comm comm;
    size_t vs;
    void *u, *v;             /* current and next level, with ghost layers */
    void *sendbuf, *recvbuf; /* every message's values */
    void *scratch;           /* bench only */
    int phase;               /* the phase in flight, or -1 */
    void *xlevel;            /* the level it fills */
    double xstart;           /* when it was posted */
    heat_halo_stats st;
    int xalign, fuse; /* HEAT_TEST_GPU_VIEWS: the CUDA backend's geometry */
    uint8_t *cls;     /* the classes of the local array (general cases) */
    cpu_gen *gen;
    /* Multigrid (heat_case_multigrid): the hierarchy, and for its build the
     * classes of a box 2 layers beyond the part where it has neighbours
     * (class_box) and the tables. */
    cpu_mg *mg;
    uint8_t *mgcls;
    int64_t clo[3], cn[3];
    heat_coeffs k;
    heat_cpu_queued queued; /* steps queued (heat_backend_queue), run by part_wait */
} part_state;

static double now(void)
{
    return heat_cpu_seconds();
}

/* Copies box `b` of a local level to a contiguous buffer (to_buf) or back. */
static void copy_box(const part_state *s, const hbox *b, void *level, void *buf, int to_buf)
{
    const heat_halo_plan *p = &s->p;
    const size_t row = (size_t)(b->hi[0] - b->lo[0]) * s->vs;
    const int64_t ny = b->hi[1] - b->lo[1];
#pragma omp parallel for collapse(2) schedule(static) if (heat_halo_box_count(b) > 65536)
    for (int64_t k = b->lo[2]; k < b->hi[2]; k++)
        for (int64_t j = b->lo[1]; j < b->hi[1]; j++) {
            char *f = (char *)level + (size_t)heat_halo_at(p, b->lo[0], j, k) * s->vs;
            char *q =
                (char *)buf + ((size_t)(k - b->lo[2]) * (size_t)ny + (size_t)(j - b->lo[1])) * row;
            if (to_buf)
                memcpy(q, f, row);
            else
                memcpy(f, q, row);
        }
}

/* Packs phase `ph` of the exchange from `level` and posts it. */
static int xchg_start(part_state *s, void *level, int ph, heat_error *err)
{
    const heat_halo_plan *p = &s->p;
    heat_halo_msg recv[HEAT_NFACES], send[HEAT_NFACES];
    const double t0 = now();
    for (int i = 0; i < p->nmsg[ph]; i++) {
        const hmsg *m = &p->msg[ph][i];
        char *sb = (char *)s->sendbuf + m->off * s->vs, *rb = (char *)s->recvbuf + m->off * s->vs;
        copy_box(s, &m->send, level, sb, 1);
        send[i] = (heat_halo_msg){m->peer, m->send_tag, sb, m->count};
        recv[i] = (heat_halo_msg){m->peer, m->recv_tag, rb, m->count};
    }
    const double t1 = now();
    s->st.pack += t1 - t0;
    s->phase = ph;
    s->xlevel = level;
    s->xstart = t1;
    return s->comm.start(s->comm.ctx, recv, p->nmsg[ph], send, p->nmsg[ph], s->vs, err);
}

/* Moves the exchange on: each phase that has arrived is unpacked and the
 * next one posted; with `block`, until every phase is done. */
static int xchg_progress(part_state *s, int block, heat_error *err)
{
    const heat_halo_plan *p = &s->p;
    while (s->phase >= 0) {
        int done = 0, rc;
        if (block)
            rc = s->comm.wait(s->comm.ctx, err), done = 1;
        else
            rc = s->comm.test(s->comm.ctx, &done, err);
        if (rc) return rc;
        if (!done) return HEAT_OK;
        const double t0 = now();
        s->st.transfer += t0 - s->xstart;
        const int ph = s->phase;
        for (int i = 0; i < p->nmsg[ph]; i++) {
            const hmsg *m = &p->msg[ph][i];
            copy_box(s, &m->recv, s->xlevel, (char *)s->recvbuf + m->off * s->vs, 0);
        }
        s->st.unpack += now() - t0;
        s->phase = -1;
        if (ph + 1 < p->nphase && (rc = xchg_start(s, s->xlevel, ph + 1, err))) return rc;
    }
    return HEAT_OK;
}

/* A whole exchange of `level`, nothing else going on. */
static int xchg_blocking(part_state *s, void *level, heat_error *err)
{
    if (!heat_halo_any(&s->p)) return HEAT_OK;
    int rc = xchg_start(s, level, 0, err);
    if (!rc) rc = xchg_progress(s, 1, err);
    s->st.exchanges++;
    return rc;
}

/* One step u -> v over a view; max |du| over it when `resid`. */
static double sweep_view(part_state *s, const heat_case *c, const hview *v0, int resid)
{
    const hview aligned = heat_halo_align(&s->p, *v0, s->xalign), *v = &aligned;
    cpu_box g;
    for (int a = 0; a < 3; a++) g.n[a] = v->b.hi[a] - v->b.lo[a];
    if (g.n[0] <= 0 || g.n[1] <= 0 || g.n[2] <= 0) return 0;
    g.sy = s->p.sy;
    g.sz = s->p.sz;
    memcpy(g.bc, v->face, sizeof g.bc);
    g.three_d = c->grid.dims == 3;
    const int64_t at = heat_halo_at(&s->p, v->b.lo[0], v->b.lo[1], v->b.lo[2]);
    const size_t off = (size_t)at * s->vs;
    g.cls = s->cls ? s->cls + at : NULL;
    g.gen = s->gen;
    return heat_cpu_sweep(c, &g, (char *)s->u + off, (char *)s->v + off, resid);
}

static void swap_levels(part_state *s)
{
    void *t = s->u;
    s->u = s->v;
    s->v = t;
}

static double fmax_nan(double a, double b)
{
    return (b > a || b != b) ? b : a;
}

/* max |v - u| over the owned box (NaN kept as NaN). */
#define OWNED_RESIDUAL(T)                                                                          \
    do {                                                                                           \
        const T *a = s->u, *b = s->v;                                                              \
        _Pragma("omp parallel for collapse(2) reduction(max : m)") for (                           \
            int64_t k = o->lo[2]; k < o->hi[2]; k++) for (int64_t j = o->lo[1]; j < o->hi[1];      \
                                                          j++) for (int64_t i = o->lo[0];          \
                                                                    i < o->hi[0]; i++)             \
        {                                                                                          \
            const int64_t at = heat_halo_at(&s->p, i, j, k);                                       \
            double d = fabs((double)b[at] - (double)a[at]);                                        \
            if (d != d) d = INFINITY;                                                              \
            if (d > m) m = d;                                                                      \
        }                                                                                          \
    } while (0)

static double owned_residual(part_state *s)
{
    const hbox *o = &s->p.owned;
    double m = 0;
    if (s->vs == sizeof(float))
        OWNED_RESIDUAL(float);
    else
        OWNED_RESIDUAL(double);
    return m;
}

/* The last step of a pass: shell, exchange posted, interior in pieces with
 * the exchange moved on between them, the rest of the exchange. */
static int overlapped_step(part_state *s, const heat_case *c, int resid, double *m, heat_error *err)
{
    const heat_halo_plan *p = &s->p;
    const double t0 = now();
    double swept = 0;
    for (int i = 0; i < p->nshell; i++) {
        const hview v = heat_halo_view(p, &p->shell[i]);
        const double a = now();
        *m = fmax_nan(*m, sweep_view(s, c, &v, resid));
        swept += now() - a;
    }
    int rc = HEAT_OK;
    const int any = heat_halo_any(p);
    if (any) rc = xchg_start(s, s->v, 0, err);
    hbox piece[HEAT_HALO_MAX_PIECES];
    const int np = heat_halo_pieces(p, &p->interior, INTERIOR_PIECES, piece);
    for (int i = 0; i < np && !rc; i++) {
        const hview v = heat_halo_view(p, &piece[i]);
        const double a = now();
        *m = fmax_nan(*m, sweep_view(s, c, &v, resid));
        swept += now() - a;
        if (any) rc = xchg_progress(s, 0, err);
    }
    if (!rc && any) rc = xchg_progress(s, 1, err);
    if (any) {
        s->st.exchanges++;
        s->st.exposed += now() - t0 - swept;
    }
    /* Aligned views write ghosts from stale neighbours: the owned box alone. */
    if (resid && s->xalign > 1) *m = fmax_nan(0, owned_residual(s));
    swap_levels(s);
    return rc;
}

static int part_advance(heat_backend *b, int64_t steps, double *residual, heat_error *err)
{
    part_state *s = b->impl;
    const heat_case *c = b->c;
    if (heat_case_multigrid(c)) {
        if (!s->mg) return heat_error_set(err, HEAT_ERUNTIME, "cpu backend: multigrid not set up");
        return heat_cpu_mg_advance(s->mg, steps, residual, err);
    }
    const int k = s->p.depth;
    double m = 0;
    for (int64_t left = steps; left > 0;) {
        const int d = left < k ? (int)left : k;
        left -= d;
        const int resid = residual && left == 0;
        halo_op ops[HEAT_HALO_MAX_OPS];
        const int n = heat_halo_pass(&s->p, d, s->fuse, resid, ops);
        for (int i = 0; i < n; i++) {
            int rc = HEAT_OK;
            if (ops[i].kind == HALO_SWEEP) {
                /* A fused pass: its steps over one fixed view. */
                for (int t = 0; t < ops[i].steps; t++) {
                    sweep_view(s, c, &ops[i].view, 0);
                    swap_levels(s);
                }
            } else if (ops[i].kind == HALO_EXCHANGE) {
                const double t0 = now();
                rc = xchg_blocking(s, s->u, err);
                s->st.exposed += now() - t0;
            } else {
                rc = overlapped_step(s, c, resid, &m, err);
            }
            if (rc) return rc;
        }
    }
    if (residual) *residual = (m != m ? INFINITY : m) / c->d.dt;
    return HEAT_OK;
}

/* The owned box and a contiguous field of it, one way or the other. */
static void copy_owned(part_state *s, void *level, void *field, int to_field)
{
    copy_box(s, &s->p.owned, level, field, to_field);
}

static int part_upload(heat_backend *b, const void *host, heat_error *err)
{
    part_state *s = b->impl;
    copy_owned(s, s->u, (void *)host, 0);
    int rc = xchg_blocking(s, s->u, err);
    /* Both levels, ghosts included: a Dirichlet node (in the ghosts too) is
     * never written by a sweep. */
    if (!rc) memcpy(s->v, s->u, (size_t)s->p.values * s->vs);
    return rc;
}

static int part_download(heat_backend *b, void *host, heat_error *err)
{
    (void)err;
    part_state *s = b->impl;
    copy_owned(s, s->u, host, 1);
    return HEAT_OK;
}

static void part_class_box(const heat_backend *b, int64_t lo[3], int64_t n[3])
{
    const part_state *s = b->impl;
    for (int a = 0; a < 3; a++) lo[a] = s->p.part.lo[a] - s->p.off[a], n[a] = s->p.ext[a];
    if (!heat_case_multigrid(b->c)) return;
    /* Multigrid's coarse operator reads a second layer (mg.h). */
    for (int a = 0; a < 3; a++) {
        const int gl = s->p.gv[2 * a] ? 1 : 0, gh = s->p.gv[2 * a + 1] ? 1 : 0;
        lo[a] -= gl, n[a] += gl + gh;
    }
}

static int part_set_classes(heat_backend *b, const uint8_t *cls, const heat_coeffs *k,
                            heat_error *err)
{
    part_state *s = b->impl;
    const int mg = heat_case_multigrid(b->c);
    int64_t lo[3], n[3];
    part_class_box(b, lo, n);
    cpu_gen *t = heat_cpu_gen_create(b->c, k);
    uint8_t *copy = t ? malloc((size_t)s->p.values) : NULL;
    uint8_t *box = copy && mg ? malloc((size_t)(n[0] * n[1] * n[2])) : NULL;
    if (!copy || (mg && !box)) {
        heat_cpu_gen_destroy(t);
        free(copy);
        return heat_error_set(err, HEAT_ERUNTIME, "cpu backend: out of memory for the classes");
    }
    if (mg) {
        /* The local array's classes: the box without its outer layer. */
        memcpy(box, cls, (size_t)(n[0] * n[1] * n[2]));
        const int64_t dx = s->p.gv[0] ? 1 : 0, dy = s->p.gv[2] ? 1 : 0, dz = s->p.gv[4] ? 1 : 0;
        for (int64_t kk = 0; kk < s->p.ext[2]; kk++)
            for (int64_t j = 0; j < s->p.ext[1]; j++)
                memcpy(copy + heat_halo_at(&s->p, 0, j, kk),
                       box + ((kk + dz) * n[1] + j + dy) * n[0] + dx, (size_t)s->p.ext[0]);
        for (int a = 0; a < 3; a++) s->clo[a] = lo[a], s->cn[a] = n[a];
        s->k = *k;
        s->k.w = NULL;
    } else {
        memcpy(copy, cls, (size_t)s->p.values);
    }
    free(s->cls);
    free(s->mgcls);
    heat_cpu_gen_destroy(s->gen);
    s->cls = copy;
    s->mgcls = box;
    s->gen = t;
    return HEAT_OK;
}

static int part_mg_setup(heat_backend *b, heat_error *err)
{
    part_state *s = b->impl;
    heat_cpu_mg_destroy(s->mg);
    s->mg = NULL;
    const int gen = b->c->d.general && s->cls;
    int rc = heat_cpu_mg_create_part(b->c, &s->p.part, &s->comm, s->u, s->v, s->cls,
                                     gen ? s->mgcls : NULL, s->clo, s->cn, gen ? &s->k : NULL,
                                     &s->mg, err);
    /* The build is done with the wider classes. */
    free(s->mgcls);
    s->mgcls = NULL;
    return rc;
}

static void part_mg_info(const heat_backend *b, heat_mg_info *info)
{
    const part_state *s = b->impl;
    if (s->mg) heat_cpu_mg_info(s->mg, info);
}

/* Over the owned box (backend_impl.h's order, as the CUDA part takes it). */
static int part_field_stats(heat_backend *b, double *min, double *max, double *sum, heat_error *err)
{
    (void)err;
    const part_state *s = b->impl;
    const hbox *o = &s->p.owned;
    heat_stats_box(b->c,
                   (const char *)s->u + heat_halo_at(&s->p, o->lo[0], o->lo[1], o->lo[2]) * s->vs,
                   o->hi[0] - o->lo[0], o->hi[1] - o->lo[1], o->hi[2] - o->lo[2], s->p.sy, s->p.sz,
                   min, max, sum);
    return HEAT_OK;
}

static int part_sample(heat_backend *b, int n, const int64_t *index, double *values,
                       heat_error *err)
{
    (void)err;
    const part_state *s = b->impl;
    const hbox *o = &s->p.owned;
    const int64_t nx = o->hi[0] - o->lo[0], ny = o->hi[1] - o->lo[1];
    for (int i = 0; i < n; i++) {
        const int64_t at =
            heat_halo_at(&s->p, o->lo[0] + index[i] % nx, o->lo[1] + index[i] / nx % ny,
                         o->lo[2] + index[i] / (nx * ny));
        values[i] =
            s->vs == sizeof(float) ? (double)((const float *)s->u)[at] : ((const double *)s->u)[at];
    }
    return HEAT_OK;
}

static void part_destroy(heat_backend *b)
{
    part_state *s = b->impl;
    if (s) {
        free(s->cls);
        free(s->mgcls);
        heat_cpu_mg_destroy(s->mg);
        heat_cpu_gen_destroy(s->gen);
        free(s->u);
        free(s->v);
        free(s->sendbuf);
        free(s->recvbuf);
        free(s->scratch);
        free(s);
    }
    free(b);
}

/* bench_time (backend.h): a copy of the local level and the steps, on the
 * wall clock (this backend is synchronous). */
static int part_bench_time(heat_backend *b, int steps, int runs, double *copy_ms, double *steps_ms,
                           heat_error *err)
{
    part_state *s = b->impl;
    return heat_cpu_bench_loop(b, part_advance, &s->scratch, s->u, (size_t)s->p.values * s->vs,
                               steps, runs, copy_ms, steps_ms, err);
}

static int part_bench_halo(heat_backend *b, int runs, double *pack_ms, double *transfer_ms,
                           double *unpack_ms, heat_error *err)
{
    part_state *s = b->impl;
    double *t = malloc(sizeof *t * 3 * (size_t)runs);
    if (!t) return heat_error_set(err, HEAT_ERUNTIME, "out of memory");
    int rc = HEAT_OK;
    for (int r = 0; r < runs && !rc; r++) {
        const heat_halo_stats before = s->st;
        rc = xchg_blocking(s, s->u, err);
        t[r] = s->st.pack - before.pack;
        t[runs + r] = s->st.transfer - before.transfer;
        t[2 * runs + r] = s->st.unpack - before.unpack;
    }
    if (!rc) {
        *pack_ms = 1e3 * heat_cpu_median(t, runs);
        *transfer_ms = 1e3 * heat_cpu_median(t + runs, runs);
        *unpack_ms = 1e3 * heat_cpu_median(t + 2 * runs, runs);
    }
    free(t);
    return rc;
}

/* queue and wait as on the whole grid (heat_cpu_queue): the driver's rows
 * between the two halves, with the ranks' agreements in them, run in every
 * test of several CPU ranks, as on GPU ranks. */
static int part_queue(heat_backend *b, int64_t steps, int residual, heat_error *err)
{
    return heat_cpu_queue(&((part_state *)b->impl)->queued, steps, residual, err);
}

static int part_wait(heat_backend *b, double *residual, heat_error *err)
{
    return heat_cpu_wait(b, &((part_state *)b->impl)->queued, part_advance, residual, err);
}

static void part_halo_stats(const heat_backend *b, heat_halo_stats *st)
{
    const part_state *s = b->impl;
    *st = s->st;
    if (s->mg) heat_cpu_mg_halo_stats(s->mg, st);
}

static const heat_backend_ops part_ops = {.upload = part_upload,
                                          .advance = part_advance,
                                          .download = part_download,
                                          .destroy = part_destroy,
                                          .bench_time = part_bench_time,
                                          .halo_stats = part_halo_stats,
                                          .bench_halo = part_bench_halo,
                                          .class_box = part_class_box,
                                          .set_classes = part_set_classes,
                                          .field_stats = part_field_stats,
                                          .sample = part_sample,
                                          .mg_setup = part_mg_setup,
                                          .mg_info = part_mg_info,
                                          .queue = part_queue,
                                          .wait = part_wait};

int heat_cpu_part_create(const heat_case *c, const heat_part *part, const heat_halo_comm *comm,
                         heat_backend **out, heat_error *err)
{
    *out = NULL;
    heat_backend *b = calloc(1, sizeof *b);
    part_state *s = calloc(1, sizeof *s);
    if (!b || !s) {
        free(b);
        free(s);
        return heat_error_set(err, HEAT_ERUNTIME, "cpu backend: out of memory");
    }
    b->ops = &part_ops;
    b->c = c;
    b->impl = s;
    s->comm = *comm;
    s->vs = heat_case_value_size(c);
    const char *gpu_views = getenv("HEAT_TEST_GPU_VIEWS");
    if (gpu_views && *gpu_views && strcmp(gpu_views, "0") != 0 && !heat_case_multigrid(c)) {
        s->xalign = (int)(16 / s->vs);
        s->fuse = strcmp(gpu_views, "fused") == 0 && part->depth > 1;
    } else {
        s->xalign = 1;
    }
    heat_halo_plan_init(&s->p, c, part, s->xalign);
    s->phase = -1;
    /* the summary says so where the test's geometry runs */
    snprintf(s->st.transport, sizeof s->st.transport, "%s",
             s->xalign > 1 ? (s->fuse ? "mpi (HEAT_TEST_GPU_VIEWS: fused)"
                                      : "mpi (HEAT_TEST_GPU_VIEWS: steps)")
                           : "mpi");
    const size_t bytes = (size_t)s->p.values * s->vs, msgs = (s->p.buf_values + 1) * s->vs;
    s->u = calloc(1, bytes);
    s->v = calloc(1, bytes);
    s->sendbuf = malloc(msgs);
    s->recvbuf = malloc(msgs);
    if (!s->u || !s->v || !s->sendbuf || !s->recvbuf) {
        part_destroy(b);
        return heat_error_set(err, HEAT_ERUNTIME,
                              "cpu backend: cannot allocate rank %d's part: %.3g GB needed (two "
                              "time levels of %lld values with ghost layers in %s)",
                              part->rank, 2.0 * (double)bytes / 1e9, (long long)s->p.values,
                              heat_precision_name(c->solver.precision));
    }
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    snprintf(b->description, sizeof b->description, "cpu (OpenMP, %d thread%s, %s)", threads,
             threads == 1 ? "" : "s", heat_precision_name(c->solver.precision));
    *out = b;
    return HEAT_OK;
}
