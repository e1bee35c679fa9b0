/* A multigrid hierarchy split over ranks (mg.h), what every backend shares:
 * a level box's axis tables and the exchange of a level's ghost layers
 * through the transport seam, the box copies the backend's (host memory,
 * or the GPU's through host buffers). */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "mg.h"

/* Level node of box index i along axis a of L. */
static int64_t at_node(const heat_mg_level *L, int a, int64_t i)
{
    const int64_t v = L->lo[a] + i;
    return v < 0 ? v + L->n[a] : (v >= L->n[a] ? v - L->n[a] : v);
}

/* Box index along axis a of L of level node v (0 when outside the box: a
 * slot that only ghosts, which are never updated, would use). */
static int64_t at_box(const heat_mg_level *L, int a, int64_t v)
{
    int64_t r = v - L->lo[a];
    if (r < 0)
        r += L->n[a];
    else if (r >= L->n[a])
        r -= L->n[a];
    return r >= 0 && r < L->bn[a] ? r : 0;
}

void heat_mg_box_axis(const heat_mg *m, int l, int a, double *v, double *ih, double *wp, double *wr,
                      int64_t *pp, int64_t *pr)
{
    const heat_mg_level *L = &m->lv[l];
    const heat_mg_axis *ax = &L->ax[a];
    const heat_mg_level *C = l + 1 < m->levels ? &m->lv[l + 1] : NULL;
    const heat_mg_level *F = l > 0 ? &m->lv[l - 1] : NULL;
    const int64_t n = L->bn[a];
    for (int64_t i = 0; i < n; i++) {
        const int64_t g = at_node(L, a, i);
        v[i] = ax->v[g];
        ih[i] = i == n - 1 && L->gh[a] ? 0.0 : ax->ih[g];
        for (int t = 0; t < 2; t++) {
            wp[2 * i + t] = ax->wp[2 * g + t];
            pp[2 * i + t] = C ? at_box(C, a, ax->pp[2 * g + t]) : 0;
        }
        for (int t = 0; t < 3; t++) {
            wr[3 * i + t] = ax->wr[3 * g + t];
            pr[3 * i + t] = F ? at_box(F, a, ax->pr[3 * g + t]) : 0;
        }
    }
}

/* ---- the exchange ------------------------------------------------------------------------ */

/* The plan of split level l: its owned box, one ghost layer on each face
 * with a neighbour, edges and corners included (phases x, y, z). */
static const heat_halo_plan *level_plan(heat_mg_xchg *x, const heat_mg *m, int l)
{
    if (x->plan[l]) return x->plan[l];
    const heat_mg_level *L = &m->lv[l];
    heat_part lp = x->part;
    lp.depth = 1;
    for (int a = 0; a < 3; a++)
        lp.lo[a] = L->lo[a] + L->gl[a], lp.n[a] = L->bn[a] - L->gl[a] - L->gh[a];
    heat_halo_plan *p = malloc(sizeof *p);
    if (!p) return NULL;
    heat_halo_plan_init(p, x->c, &lp, 1);
    heat_halo_plan_corners(p);
    return x->plan[l] = p;
}

/* The host buffers: the backend's memory (page-locked for a GPU) or malloc. */
static void *buf_alloc(heat_mg_xchg *x, size_t bytes)
{
    return x->alloc ? x->alloc(x->actx, bytes) : malloc(bytes);
}

static void buf_free(heat_mg_xchg *x, void *p)
{
    if (!p) return;
    if (x->release)
        x->release(x->actx, p);
    else
        free(p);
}

int heat_mg_xchg_run(heat_mg_xchg *x, const heat_mg *m, int l, void *a, size_t vs,
                     heat_mg_copy_fn copy, void *cctx, heat_error *err)
{
    const heat_halo_plan *p = level_plan(x, m, l);
    if (!p) return heat_error_set(err, HEAT_ERUNTIME, "multigrid: out of memory for a halo plan");
    if (!heat_halo_any(p)) return HEAT_OK;
    const size_t need = (p->buf_values + 1) * vs;
    if (need > x->bytes) {
        buf_free(x, x->sendbuf), buf_free(x, x->recvbuf);
        x->sendbuf = buf_alloc(x, need), x->recvbuf = buf_alloc(x, need);
        x->bytes = x->sendbuf && x->recvbuf ? need : 0;
        if (!x->bytes)
            return heat_error_set(err, HEAT_ERUNTIME, "multigrid: out of memory for halos");
    }
    const double t0 = heat_halo_seconds();
    for (int ph = 0; ph < p->nphase; ph++) {
        heat_halo_msg recv[HEAT_NFACES], send[HEAT_NFACES];
        int rc = HEAT_OK;
        const double a0 = heat_halo_seconds();
        for (int i = 0; i < p->nmsg[ph] && !rc; i++) {
            const hmsg *q = &p->msg[ph][i];
            char *sb = (char *)x->sendbuf + q->off * vs, *rb = (char *)x->recvbuf + q->off * vs;
            rc = copy(cctx, p, &q->send, vs, a, sb, 1, err);
            send[i] = (heat_halo_msg){q->peer, q->send_tag, sb, q->count};
            recv[i] = (heat_halo_msg){q->peer, q->recv_tag, rb, q->count};
        }
        /* the copies to the host done (a GPU queues them) */
        if (!rc && x->flush) rc = x->flush(cctx, err);
        const double a1 = heat_halo_seconds();
        if (!rc) rc = x->comm.start(x->comm.ctx, recv, p->nmsg[ph], send, p->nmsg[ph], vs, err);
        if (!rc) rc = x->comm.wait(x->comm.ctx, err);
        const double a2 = heat_halo_seconds();
        for (int i = 0; i < p->nmsg[ph] && !rc; i++) {
            const hmsg *q = &p->msg[ph][i];
            rc = copy(cctx, p, &q->recv, vs, a, (char *)x->recvbuf + q->off * vs, 0, err);
        }
        x->st.pack += a1 - a0, x->st.transfer += a2 - a1, x->st.unpack += heat_halo_seconds() - a2;
        if (rc) return rc;
    }
    /* nothing runs beside it: the whole exchange is exposed */
    x->st.exchanges++;
    x->st.exposed += heat_halo_seconds() - t0;
    return HEAT_OK;
}

int heat_mg_copy_host(void *ctx, const heat_halo_plan *p, const hbox *b, size_t vs, void *level,
                      void *buf, int to_buf, heat_error *err)
{
    (void)ctx, (void)err;
    const size_t row = (size_t)(b->hi[0] - b->lo[0]) * vs;
    char *q = buf;
    for (int64_t k = b->lo[2]; k < b->hi[2]; k++)
        for (int64_t j = b->lo[1]; j < b->hi[1]; j++, q += row) {
            char *f = (char *)level + (size_t)heat_halo_at(p, b->lo[0], j, k) * vs;
            if (to_buf)
                memcpy(q, f, row);
            else
                memcpy(f, q, row);
        }
    return HEAT_OK;
}

/* heat_mg_dist's callbacks over an exchange state (host arrays). */
static int dist_exchange(void *ctx, const heat_mg *m, int l, void *a, size_t vs, heat_error *err)
{
    return heat_mg_xchg_run(ctx, m, l, a, vs, heat_mg_copy_host, NULL, err);
}

static void dist_reduce(void *ctx, double *v, int n, int sum)
{
    heat_mg_xchg *x = ctx;
    x->comm.reduce(x->comm.ctx, v, n, sum);
}

static int dist_allgatherv(void *ctx, const void *mine, void *all, const size_t *bytes,
                           heat_error *err)
{
    heat_mg_xchg *x = ctx;
    return x->comm.allgatherv(x->comm.ctx, mine, all, bytes, err);
}

void heat_mg_xchg_init(heat_mg_xchg *x, const heat_case *c, const heat_part *part,
                       const heat_halo_comm *comm, heat_mg_dist *d)
{
    memset(x, 0, sizeof *x);
    snprintf(x->st.transport, sizeof x->st.transport, "mpi, host memory");
    x->c = c;
    x->part = *part;
    x->comm = *comm;
    *d = (heat_mg_dist){.c = c,
                        .part = *part,
                        .ctx = x,
                        .exchange = dist_exchange,
                        .reduce = dist_reduce,
                        .allgatherv = dist_allgatherv};
}

void heat_mg_xchg_clear(heat_mg_xchg *x)
{
    x->st.exchanges = 0;
    x->st.exposed = x->st.pack = x->st.transfer = x->st.unpack = 0;
}

void heat_mg_xchg_free(heat_mg_xchg *x)
{
    for (int l = 0; l < HEAT_MG_LEVELS_MAX; l++) free(x->plan[l]), x->plan[l] = NULL;
    buf_free(x, x->sendbuf), buf_free(x, x->recvbuf);
    x->sendbuf = x->recvbuf = NULL;
    x->bytes = 0;
}
