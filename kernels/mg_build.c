/* The multigrid hierarchy (mg.h): the finest level's tables and terms from
 * the case, coarse grids by pairing intervals, the rediscretised coarse
 * operators, the smoother's coefficients and the coarsest level's inverse.
 * Everything in double, on the host, once per run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg.h"
#include "xsum.h"

/* ---- axes ------------------------------------------------------------------ */

static int axis_alloc(heat_mg_axis *a, int64_t n)
{
    a->n = n;
    a->pos = calloc((size_t)n + 1, sizeof *a->pos);
    a->v = calloc((size_t)n, sizeof *a->v);
    a->ih = calloc((size_t)n, sizeof *a->ih);
    a->pp = calloc(2 * (size_t)n, sizeof *a->pp);
    a->wp = calloc(2 * (size_t)n, sizeof *a->wp);
    a->pr = calloc(3 * (size_t)n, sizeof *a->pr);
    a->wr = calloc(3 * (size_t)n, sizeof *a->wr);
    return a->pos && a->v && a->ih && a->pp && a->wp && a->pr && a->wr ? 0 : -1;
}

static void axis_free(heat_mg_axis *a)
{
    free(a->pos), free(a->v), free(a->ih), free(a->pp), free(a->wp), free(a->pr), free(a->wr);
    memset(a, 0, sizeof *a);
}

/* Dual widths and inverse face lengths from the positions (h: the finest
 * spacing). An unused axis (n = 1, not periodic) gets v = 1, ih = 0. */
static void axis_metrics(heat_mg_axis *a, double h)
{
    const int64_t n = a->n;
    for (int64_t i = 0; i < n; i++) {
        const int last = i == n - 1;
        const double lo = i > 0 ? (double)(a->pos[i] - a->pos[i - 1])
                                : (a->periodic ? (double)(a->pos[n] - a->pos[n - 1]) : 0.0);
        const double hi = !last || a->periodic ? (double)(a->pos[i + 1] - a->pos[i]) : 0.0;
        a->v[i] = n == 1 && !a->periodic ? 1.0 : 0.5 * (lo + hi) * h;
        a->ih[i] = hi > 0 ? 1.0 / (hi * h) : 0.0;
    }
}

/* The finest level's axis d. */
static int fine_axis(const heat_case *c, int d, heat_mg_axis *a)
{
    const int used = d < c->grid.dims;
    const int64_t n = used ? c->grid.n[d] : 1;
    if (axis_alloc(a, n)) return -1;
    a->periodic = used && c->bc[2 * d].type == HEAT_BC_PERIODIC;
    a->held[0] = used && c->bc[2 * d].type == HEAT_BC_DIRICHLET;
    a->held[1] = used && c->bc[2 * d + 1].type == HEAT_BC_DIRICHLET;
    for (int64_t i = 0; i <= n; i++) a->pos[i] = i < n || a->periodic ? i : n - 1;
    axis_metrics(a, used ? c->d.h[d] : 1.0);
    return 0;
}

/* Intervals of an axis (n - 1, or n when periodic) and its longest, in
 * finest spacings times h. */
static int64_t intervals(const heat_mg_axis *a)
{
    return a->periodic ? a->n : a->n - 1;
}

static double longest(const heat_mg_axis *a, double h)
{
    int64_t l = 0;
    for (int64_t i = 0; i < intervals(a); i++)
        if (a->pos[i + 1] - a->pos[i] > l) l = a->pos[i + 1] - a->pos[i];
    return (double)l * h;
}

/* The coarse axis of f: every node (coarsen = 0), or the nodes between
 * pairs of intervals. Fills f's prolongation and c's restriction tables. */
static int coarsen_axis(heat_mg_axis *f, heat_mg_axis *c, int coarsen, double h)
{
    const int64_t m = intervals(f), nf = f->n;
    int64_t *cf = malloc(sizeof *cf * (size_t)(nf + 1));
    if (!cf) return -1;
    int64_t nc = 0;
    if (!coarsen) {
        for (int64_t i = 0; i < nf; i++) cf[nc++] = i;
    } else {
        /* With m odd one interval stays single: at the end whose interval
         * is the longer; between equal ones at a held (Dirichlet) end, where
         * the correction is zero, and else at the low end. (At the high
         * end, the rule before, the 256^3 measure deck kept 0.104 of the
         * residual per cycle on the CPU, now 0.082; docs/PERFORMANCE.md.) */
        const int64_t dl = f->pos[1] - f->pos[0], dh = f->pos[m] - f->pos[m - 1];
        const int high_only_held = f->held[1] && !f->held[0];
        const int single_low = m % 2 == 1 && (dl > dh || (dl == dh && !high_only_held));
        int64_t i = 0;
        cf[nc++] = 0;
        if (single_low) cf[nc++] = i = 1;
        while (i < m) {
            i += (m - i >= 2) ? 2 : 1;
            if (i < nf) cf[nc++] = i;
        }
    }
    if (axis_alloc(c, nc)) {
        free(cf);
        return -1;
    }
    c->periodic = f->periodic;
    c->held[0] = f->held[0], c->held[1] = f->held[1];
    for (int64_t j = 0; j < nc; j++) c->pos[j] = f->pos[cf[j]];
    c->pos[nc] = f->periodic ? f->pos[nf] : c->pos[nc - 1];
    axis_metrics(c, h);
    cf[nc] = f->periodic ? nf : nf - 1; /* the node after the last coarse one */
    for (int64_t j = 0; j < nc; j++) {
        /* Fine nodes from cf[j] to just before the next coarse node. */
        const int64_t a = cf[j], b = cf[j + 1], pa = f->pos[a],
                      pb = f->pos[b < nf ? b : 0] + (b < nf ? 0 : f->pos[nf]);
        const int64_t jn = j + 1 < nc ? j + 1 : 0;
        c->pr[3 * j + 1] = a, c->wr[3 * j + 1] = 1.0;
        f->pp[2 * a] = f->pp[2 * a + 1] = j, f->wp[2 * a] = 1.0, f->wp[2 * a + 1] = 0.0;
        for (int64_t i = a + 1; i < b && i < nf; i++) {
            const double wl = (double)(pb - f->pos[i]) / (double)(pb - pa);
            const double wr = (double)(f->pos[i] - pa) / (double)(pb - pa);
            f->pp[2 * i] = j, f->wp[2 * i] = wl;
            f->pp[2 * i + 1] = jn, f->wp[2 * i + 1] = wr;
            c->pr[3 * j + 2] = i, c->wr[3 * j + 2] = wl;
            c->pr[3 * jn] = i, c->wr[3 * jn] = wr;
        }
    }
    /* Restriction slots without a child point at the centre, weight 0. */
    for (int64_t j = 0; j < nc; j++)
        for (int t = 0; t < 3; t += 2)
            if (c->wr[3 * j + t] == 0) c->pr[3 * j + t] = c->pr[3 * j + 1];
    free(cf);
    return 0;
}

/* ---- the operator on any level ---------------------------------------------- */

static int64_t wrap(int64_t i, int64_t n)
{
    return i < 0 ? n - 1 : (i >= n ? 0 : i);
}

/* The index along one axis, in a box starting at lo of an axis of n nodes,
 * of node g of the axis (a box spans at most one period). */
static int64_t box_at(int64_t g, int64_t lo, int64_t n)
{
    int64_t r = g - lo;
    if (r < 0)
        r += n;
    else if (r >= n)
        r -= n;
    return r;
}

/* The level node of box index i along axis d. */
static int64_t box_node(const heat_mg_level *L, int d, int64_t i)
{
    int64_t g = L->lo[d] + i;
    if (g < 0)
        g += L->n[d];
    else if (g >= L->n[d])
        g -= L->n[d];
    return g;
}

/* The whole level as its box. */
static void whole_box(heat_mg_level *L)
{
    L->points = 1;
    for (int d = 0; d < 3; d++) {
        L->lo[d] = 0, L->bn[d] = L->n[d], L->gl[d] = L->gh[d] = 0;
        L->points *= L->n[d];
    }
}

int64_t heat_mg_box_node(const heat_mg_level *L, int64_t i, int64_t j, int64_t k)
{
    return (box_at(k, L->lo[2], L->n[2]) * L->bn[1] + box_at(j, L->lo[1], L->n[1])) * L->bn[0] +
           box_at(i, L->lo[0], L->n[0]);
}

/* Whether box index (i, j, k) is a node the rank owns (not a ghost). */
static int owned(const heat_mg_level *L, int64_t i, int64_t j, int64_t k)
{
    const int64_t b[3] = {i, j, k};
    for (int d = 0; d < 3; d++)
        if (b[d] < L->gl[d] || b[d] >= L->bn[d] - L->gh[d]) return 0;
    return 1;
}

static int held(const heat_mg_level *L, const int64_t ix[3])
{
    for (int d = 0; d < 3; d++)
        if ((ix[d] == 0 && L->ax[d].held[0]) || (ix[d] == L->n[d] - 1 && L->ax[d].held[1]))
            return 1;
    return 0;
}

static int64_t node(const heat_mg_level *L, const int64_t ix[3])
{
    return heat_mg_box_node(L, ix[0], ix[1], ix[2]);
}

/* The class of grid node ix (cls covers the box clo, cn). */
static int cls_at(const heat_mg *m, const int64_t ix[3])
{
    const int64_t *n = m->lv[0].n;
    return m->cls[(box_at(ix[2], m->clo[2], n[2]) * m->cn[1] + box_at(ix[1], m->clo[1], n[1])) *
                      m->cn[0] +
                  box_at(ix[0], m->clo[0], n[0])];
}

static int material(const heat_mg *m, const int64_t ix[3])
{
    return m->cls ? m->mat[cls_at(m, ix)] : 0;
}

/* T of face ix[d] of axis d at the transverse position of ix, on level l.
 * The finest level's formula is the kernels': kf (ih (v_e v_f)). */
static double face_t(const heat_mg *m, int l, int d, const int64_t ix[3])
{
    const heat_mg_level *L = &m->lv[l];
    /* The last face of an axis that is not periodic joins no node (and
     * the node it would wrap to may lie outside a rank's box). */
    if (!L->ax[d].periodic && ix[d] == L->n[d] - 1) return 0.0;
    if (l > 0) return L->t[d][node(L, ix)];
    int64_t q[3] = {ix[0], ix[1], ix[2]};
    q[d] = wrap(q[d] + 1, L->n[d]);
    const int e = d == 0 ? 1 : 0, f = d == 2 ? 1 : 2;
    const double area = L->ax[e].v[ix[e]] * L->ax[f].v[ix[f]];
    const double k = m->kf[material(m, ix) * m->nmat + material(m, q)];
    return k * (L->ax[d].ih[ix[d]] * area);
}

static double diag_term(const heat_mg *m, int l, int64_t p)
{
    const double *dg = l > 0 ? m->lv[l].dg : m->dg0;
    return dg ? dg[p] : 0.0;
}

/* The sum of the node's six face conductivities. */
static double sum_t(const heat_mg *m, int l, const int64_t ix[3])
{
    const heat_mg_level *L = &m->lv[l];
    double s = 0;
    for (int d = 0; d < 3; d++) {
        int64_t q[3] = {ix[0], ix[1], ix[2]};
        q[d] = wrap(q[d] - 1, L->n[d]);
        s += face_t(m, l, d, ix) + face_t(m, l, d, q);
    }
    return s;
}

/* ---- the finest level: tables, D and b ---------------------------------------- */

/* The material tables: theta K per pair, rho c per material. A case that is
 * not general has one material of conductivity alpha and rho c = 1, which is
 * its update (alpha laplacian u) written in the same form. */
static int fine_tables(heat_mg *m, const heat_case *c, const heat_coeffs *k)
{
    const int general = c->d.general && k;
    m->nmat = general ? k->nmat : 1;
    m->kf = malloc(sizeof *m->kf * (size_t)m->nmat * (size_t)m->nmat);
    if (!m->kf) return -1;
    for (int a = 0; a < m->nmat; a++) {
        m->rhoc[a] = general ? c->materials.m[a].rho * c->materials.m[a].cp : 1.0;
        for (int b = 0; b < m->nmat; b++)
            m->kf[a * m->nmat + b] = m->theta * (general ? heat_case_face_k(c, a, b) : c->alpha);
    }
    for (int i = 0; i < HEAT_CLASSES_MAX; i++) m->mat[i] = general ? k->mat[i] : 0;
    return 0;
}

/* What the faces of the grid that node ix lies on add to its D and b:
 * Neumann K a gradient, flux K a value / k, convective K / k h_c a (ambient
 * - u) (K the face conductivity to the inner node, a the face area). */
static void face_terms(const heat_mg *m, const heat_case *c, const int64_t ix[3], double *dd,
                       double *bb)
{
    const heat_mg_level *L = &m->lv[0];
    const int a = material(m, ix);
    const double ka = c->d.general ? c->materials.m[a].k : c->alpha;
    for (int d = 0; d < c->grid.dims; d++)
        for (int side = 0; side < 2; side++) {
            const heat_bc *bc = &c->bc[2 * d + side];
            if (ix[d] != (side ? L->n[d] - 1 : 0) || bc->type == HEAT_BC_PERIODIC ||
                bc->type == HEAT_BC_DIRICHLET)
                continue;
            int64_t q[3] = {ix[0], ix[1], ix[2]};
            q[d] = side ? L->n[d] - 2 : 1;
            const int e = d == 0 ? 1 : 0, f = d == 2 ? 1 : 2;
            const double area = L->ax[e].v[ix[e]] * L->ax[f].v[ix[f]];
            const double kf = m->kf[a * m->nmat + material(m, q)] / m->theta;
            if (bc->type == HEAT_BC_NEUMANN) *bb += kf * area * bc->gradient;
            if (bc->type == HEAT_BC_FLUX) *bb += kf * area * bc->value / ka;
            if (bc->type == HEAT_BC_CONVECTIVE) {
                const double robin = kf / ka * bc->h * area;
                *dd += m->theta * robin;
                *bb += robin * bc->ambient;
            }
        }
}

/* Whether any face or source puts heat in (b0 needed), and whether D0 is
 * (implicit steps, convective faces). */
static void fine_needs(const heat_case *c, const heat_coeffs *k, int *need_b, int *need_d)
{
    *need_b = 0;
    *need_d = heat_case_implicit(c);
    for (int f = 0; f < 2 * c->grid.dims; f++) {
        const heat_bc *bc = &c->bc[f];
        if ((bc->type == HEAT_BC_NEUMANN && bc->gradient != 0) ||
            (bc->type == HEAT_BC_FLUX && bc->value != 0) ||
            (bc->type == HEAT_BC_CONVECTIVE && bc->h != 0 && bc->ambient != 0))
            *need_b = 1;
        if (bc->type == HEAT_BC_CONVECTIVE && bc->h != 0) *need_d = 1;
    }
    for (int i = 0; k && c->d.general && i < k->ncls; i++)
        if (k->power[i] != 0) *need_b = 1;
}

/* D0 and b0 of every node; the net heat put in and its magnitude (for the
 * singular problem's solvability); m->weight, and its exact sum in *wx
 * when not NULL (over the nodes owned: a split's ranks add theirs). */
static int fine_terms(heat_mg *m, const heat_case *c, const heat_coeffs *k, int store, double *net,
                      double *mag, heat_xsum *wx)
{
    int need_b, need_d;
    fine_needs(c, k, &need_b, &need_d);
    need_b &= store, need_d &= store;
    const heat_mg_level *L = &m->lv[0];
    const int64_t np = L->points;
    if (need_d && !(m->dg0 = calloc((size_t)np, sizeof *m->dg0))) return -1;
    if (need_b && !(m->b0 = calloc((size_t)np, sizeof *m->b0))) return -1;
    double s = 0, sa = 0;
    heat_xsum w;
    heat_xsum_zero(&w);
    /* Every node of the box (ghosts too: the coarse levels' D restricts
     * them); the sums over the nodes owned, the weight exact (the kept mean
     * of a singular problem is the same bits for any thread count and any
     * split). */
#pragma omp parallel
    {
        heat_xsum wt;
        heat_xsum_zero(&wt);
#pragma omp for collapse(2) schedule(static) reduction(+ : s, sa)
        for (int64_t bz = 0; bz < L->bn[2]; bz++)
            for (int64_t by = 0; by < L->bn[1]; by++)
                for (int64_t bx = 0; bx < L->bn[0]; bx++) {
                    const int64_t x = box_node(L, 0, bx), y = box_node(L, 1, by),
                                  z = box_node(L, 2, bz);
                    const int64_t ix[3] = {x, y, z}, p = node(L, ix);
                    if (held(L, ix)) continue;
                    const double vol = L->ax[0].v[x] * L->ax[1].v[y] * L->ax[2].v[z];
                    const int a = material(m, ix);
                    double dd = m->implicit ? m->rhoc[a] / m->dt * vol : 0.0;
                    double bb = m->cls && k ? k->power[cls_at(m, ix)] * vol : 0.0;
                    face_terms(m, c, ix, &dd, &bb);
                    if (m->dg0) m->dg0[p] = dd;
                    if (m->b0) m->b0[p] = bb;
                    if (!owned(L, bx, by, bz)) continue;
                    heat_xsum_add(&wt, m->rhoc[a] * vol);
                    s += bb, sa += fabs(bb);
                }
#pragma omp critical(heat_mg_weight)
        heat_xsum_merge(&w, &wt);
    }
    *net = s, *mag = sa;
    m->weight = heat_xsum_value(&w);
    if (wx) *wx = w;
    return 0;
}

/* ---- coarse levels ------------------------------------------------------------- */

/* Which axes of level l coarsen: at least 2 intervals, and the longest
 * interval within twice the smallest such longest among those axes. */
static int choose_axes(const heat_mg *m, int l, const double h[3], int coarsen[3])
{
    const heat_mg_level *L = &m->lv[l];
    double hmin = INFINITY, hl[3];
    for (int d = 0; d < 3; d++) {
        hl[d] = longest(&L->ax[d], h[d]);
        if (intervals(&L->ax[d]) >= 2 && hl[d] < hmin) hmin = hl[d];
    }
    int any = 0;
    for (int d = 0; d < 3; d++) {
        coarsen[d] = intervals(&L->ax[d]) >= 2 && hl[d] <= 2.0 * hmin * (1 + 1e-12);
        any |= coarsen[d];
    }
    return any;
}

/* The series conductivity of face ix[d] of level l and the next one along d
 * (count 1 or 2 faces). */
static double series(const heat_mg *m, int l, int d, const int64_t ix[3], int count)
{
    const double t1 = face_t(m, l, d, ix);
    if (count == 1) return t1;
    int64_t q[3] = {ix[0], ix[1], ix[2]};
    q[d] = wrap(q[d] + 1, m->lv[l].n[d]);
    const double t2 = face_t(m, l, d, q);
    return t1 > 0 && t2 > 0 ? t1 * t2 / (t1 + t2) : 0.0;
}

/* ---- operator-dependent interpolation (mg.h, wq) ----------------------------------- */

/* Node ix of level l along axis d: its weight toward its low coarse
 * neighbour, from its two faces along d, times 2^15 (HEAT_MG_WQ_ONE where
 * it lies on a coarse node). */
static uint16_t node_wq(const heat_mg *m, int l, int d, const int64_t ix[3])
{
    const heat_mg_axis *a = &m->lv[l].ax[d];
    if (a->wp[2 * ix[d] + 1] == 0) return HEAT_MG_WQ_ONE;
    int64_t lo[3] = {ix[0], ix[1], ix[2]};
    lo[d] = wrap(ix[d] - 1, m->lv[l].n[d]);
    const double tl = face_t(m, l, d, lo), th = face_t(m, l, d, ix);
    const double w = tl + th > 0 ? tl / (tl + th) : a->wp[2 * ix[d]];
    return (uint16_t)lround(w * HEAT_MG_WQ_ONE);
}

/* Level l's wq at the nodes of its box that the rank owns (a whole level:
 * every node); nothing on the coarsest level or without opdep. -1 when out
 * of memory. */
static int level_weights(heat_mg *m, int l)
{
    heat_mg_level *L = &m->lv[l];
    if (!m->opdep || l + 1 >= m->levels) return 0;
    for (int d = 0; d < 3; d++)
        if (!(L->wq[d] = calloc((size_t)L->points, sizeof *L->wq[d]))) return -1;
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t bz = L->gl[2]; bz < L->bn[2] - L->gh[2]; bz++)
        for (int64_t by = L->gl[1]; by < L->bn[1] - L->gh[1]; by++)
            for (int64_t bx = L->gl[0]; bx < L->bn[0] - L->gh[0]; bx++) {
                const int64_t ix[3] = {box_node(L, 0, bx), box_node(L, 1, by), box_node(L, 2, bz)};
                const int64_t p = node(L, ix);
                for (int d = 0; d < 3; d++) L->wq[d][p] = node_wq(m, l, d, ix);
            }
    return 0;
}

/* The weight of P between node q of level l and its coarse neighbour along
 * axis d at restriction slot t (0: the coarse node lies above q, 1: on it,
 * 2: below), where the axis tables give it w (not 0). */
static double transfer_w(const heat_mg *m, int l, int d, const int64_t q[3], int t, double w)
{
    const uint16_t *wq = m->lv[l].wq[d];
    if (!wq) return w;
    const unsigned v = wq[node(&m->lv[l], q)];
    return t == 0 ? (double)(HEAT_MG_WQ_ONE - v) / HEAT_MG_WQ_ONE : (double)v / HEAT_MG_WQ_ONE;
}

/* T and D of coarse node ix of level l + 1 from level l. */
static void coarse_node(heat_mg *m, int l, const int64_t ix[3])
{
    heat_mg_level *F = &m->lv[l], *C = &m->lv[l + 1];
    const int64_t p = node(C, ix);
    for (int d = 0; d < 3; d++) {
        const heat_mg_axis *ca = &C->ax[d];
        double sum = 0;
        if (ca->ih[ix[d]] > 0) {
            const int64_t f0 = ca->pr[3 * ix[d] + 1], nf = F->n[d];
            const int64_t f1 = ca->pr[3 * wrap(ix[d] + 1, ca->n) + 1];
            const int count = (int)((f1 - f0 + nf) % nf == 0 ? nf : (f1 - f0 + nf) % nf);
            const int e = d == 0 ? 1 : 0, f = d == 2 ? 1 : 2;
            for (int te = 0; te < 3; te++)
                for (int tf = 0; tf < 3; tf++) {
                    const double we = C->ax[e].wr[3 * ix[e] + te], wf = C->ax[f].wr[3 * ix[f] + tf];
                    if (we * wf == 0) continue;
                    int64_t q[3];
                    q[d] = f0;
                    q[e] = C->ax[e].pr[3 * ix[e] + te];
                    q[f] = C->ax[f].pr[3 * ix[f] + tf];
                    const double w =
                        transfer_w(m, l, e, q, te, we) * transfer_w(m, l, f, q, tf, wf);
                    sum += w * series(m, l, d, q, count);
                }
        }
        C->t[d][p] = sum;
    }
    if (!C->dg) return;
    double s = 0;
    for (int tz = 0; tz < 3; tz++)
        for (int ty = 0; ty < 3; ty++)
            for (int tx = 0; tx < 3; tx++) {
                const double wx = C->ax[0].wr[3 * ix[0] + tx], wy = C->ax[1].wr[3 * ix[1] + ty],
                             wz = C->ax[2].wr[3 * ix[2] + tz];
                const int64_t q[3] = {C->ax[0].pr[3 * ix[0] + tx], C->ax[1].pr[3 * ix[1] + ty],
                                      C->ax[2].pr[3 * ix[2] + tz]};
                if (wx * wy * wz == 0) continue;
                const double w = transfer_w(m, l, 0, q, tx, wx) * transfer_w(m, l, 1, q, ty, wy) *
                                 transfer_w(m, l, 2, q, tz, wz);
                s += w * diag_term(m, l, node(F, q));
            }
    C->dg[p] = s;
}

/* The axes and sizes of level l + 1 below level l, which becomes the last;
 * 0, 1 when level l cannot coarsen, -1 when out of memory. */
static int add_level_axes(heat_mg *m, int l, const double h[3])
{
    int coarsen[3];
    if (!choose_axes(m, l, h, coarsen)) return 1;
    heat_mg_level *F = &m->lv[l], *C = &m->lv[l + 1];
    for (int d = 0; d < 3; d++) {
        if (coarsen_axis(&F->ax[d], &C->ax[d], coarsen[d], h[d])) return -1;
        C->n[d] = C->ax[d].n;
    }
    whole_box(C);
    m->levels = l + 2;
    return 0;
}

/* The coefficients of level l + 1 (its axes and box set) from level l, at
 * the nodes of its box that the rank owns; -1 when out of memory. */
static int level_arrays(heat_mg *m, int l)
{
    heat_mg_level *F = &m->lv[l], *C = &m->lv[l + 1];
    for (int d = 0; d < 3; d++)
        if (!(C->t[d] = calloc((size_t)C->points, sizeof *C->t[d]))) return -1;
    if ((l == 0 ? m->dg0 != NULL : F->dg != NULL) &&
        !(C->dg = calloc((size_t)C->points, sizeof *C->dg)))
        return -1;
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t bz = C->gl[2]; bz < C->bn[2] - C->gh[2]; bz++)
        for (int64_t by = C->gl[1]; by < C->bn[1] - C->gh[1]; by++)
            for (int64_t bx = C->gl[0]; bx < C->bn[0] - C->gh[0]; bx++) {
                const int64_t ix[3] = {box_node(C, 0, bx), box_node(C, 1, by), box_node(C, 2, bz)};
                coarse_node(m, l, ix);
            }
    return 0;
}

/* Level l + 1 below level l, its axes and coefficients; as add_level_axes. */
static int add_level(heat_mg *m, int l, const double h[3])
{
    const int rc = add_level_axes(m, l, h);
    if (rc) return rc;
    return level_weights(m, l) || level_arrays(m, l) ? -1 : 0;
}

/* The finest level's axes and sizes (the only level), and the grid's
 * spacings (1 on an unused axis); -1 when out of memory. */
static int fine_level(heat_mg *m, const heat_case *c, double h[3])
{
    heat_mg_level *L = &m->lv[0];
    m->levels = 1;
    for (int d = 0; d < 3; d++) {
        if (fine_axis(c, d, &L->ax[d])) return -1;
        L->n[d] = L->ax[d].n;
        h[d] = d < c->grid.dims ? c->d.h[d] : 1.0;
    }
    whole_box(L);
    return 0;
}

static int64_t unknowns(const heat_mg_level *L)
{
    int64_t u = 1;
    for (int d = 0; d < 3; d++) u *= L->n[d] - L->ax[d].held[0] - L->ax[d].held[1];
    return u;
}

/* ---- the smoother and the coarsest level ----------------------------------------- */

/* lmax: 2 on the finest level (Gershgorin: 1 + sum T / (sum T + D) <= 2),
 * the rows' own bound on coarse ones; then the Chebyshev coefficients. */
static double level_lmax(const heat_mg *m, int l)
{
    const heat_mg_level *L = &m->lv[l];
    double lmax = l == 0 ? 2.0 : 0.0;
    for (int64_t bz = L->gl[2]; l > 0 && bz < L->bn[2] - L->gh[2]; bz++)
        for (int64_t by = L->gl[1]; by < L->bn[1] - L->gh[1]; by++)
            for (int64_t bx = L->gl[0]; bx < L->bn[0] - L->gh[0]; bx++) {
                const int64_t ix[3] = {box_node(L, 0, bx), box_node(L, 1, by), box_node(L, 2, bz)};
                if (held(L, ix)) continue;
                const double st = sum_t(m, l, ix), diag = st + diag_term(m, l, node(L, ix));
                if (diag > 0 && 1.0 + st / diag > lmax) lmax = 1.0 + st / diag;
            }
    return lmax;
}

/* The smoother's coefficients from lmax (level_lmax: over the nodes this
 * rank owns, so a split level takes the largest of every rank's). */
static void smoother_from(heat_mg *m, int l, double lmax)
{
    heat_mg_level *L = &m->lv[l];
    L->lmax = lmax > 0 ? lmax : 1.0;
    /* Chebyshev smoothing split across the cycle (Richardson steps at the
     * roots of the Chebyshev polynomial of degree 2 HEAT_MG_SWEEPS on [a, b],
     * x' = x + q / root): the largest and the smallest root before the coarse
     * correction, the two middle ones after it. Each half alone damps every
     * mode of [0, b] (no factor above 1), and the whole smoothing is the
     * degree-4 polynomial, which damps [a, b] as much as a polynomial of that
     * degree can; the same polynomial as two degree-2 halves damps it less
     * (0.19 of the residual left per cycle on the 256^3 measure deck against
     * 0.10; the scans of order and ratio are in docs/PERFORMANCE.md). Saad,
     * "Iterative Methods for Sparse Linear Systems", 2003, sec. 12.3;
     * splitting and ordering the roots so that no partial product grows:
     * Lebedev and Finogenov, USSR Comput. Math. Math. Phys. 11, 1971. No
     * sweep reads the previous iterate (cheb[s][0] = 0). */
    const double ratio = m->lv[0].n[2] > 1 ? HEAT_MG_CHEB_RATIO_3D : HEAT_MG_CHEB_RATIO_2D;
    const double a = L->lmax / ratio, b = L->lmax;
    const double theta = 0.5 * (b + a), delta = 0.5 * (b - a);
    const int deg = 2 * HEAT_MG_SWEEPS;
    _Static_assert(HEAT_MG_SWEEPS == 2, "the roots' order below is for V(2,2)");
    static const int order[4] = {0, 3, 1, 2}; /* root 0 the largest */
    for (int s = 0; s < deg; s++) {
        const double root = theta + delta * cos(M_PI * (2 * order[s] + 1) / (2.0 * deg));
        L->cheb[s][0] = 0.0;
        L->cheb[s][1] = 1.0 / root;
    }
}

static void smoother(heat_mg *m, int l)
{
    smoother_from(m, l, level_lmax(m, l));
}

/* Inverts the n x n matrix a in place (Gauss-Jordan with partial pivoting:
 * the inverse of the row-swapped matrix, whose columns are then swapped
 * back, last swap first); -1 when singular. */
static int invert(double *a, int64_t n)
{
    int64_t *swap = malloc(sizeof *swap * (size_t)(n > 0 ? n : 1));
    if (!swap) return -1;
    for (int64_t col = 0; col < n; col++) {
        int64_t best = col;
        for (int64_t r = col + 1; r < n; r++)
            if (fabs(a[r * n + col]) > fabs(a[best * n + col])) best = r;
        if (!(fabs(a[best * n + col]) > 0)) return free(swap), -1;
        swap[col] = best;
        for (int64_t k = 0; best != col && k < n; k++) {
            const double t = a[col * n + k];
            a[col * n + k] = a[best * n + k], a[best * n + k] = t;
        }
        const double inv = 1.0 / a[col * n + col];
        a[col * n + col] = 1.0;
        for (int64_t k = 0; k < n; k++) a[col * n + k] *= inv;
        for (int64_t r = 0; r < n; r++) {
            if (r == col || a[r * n + col] == 0) continue;
            const double f = a[r * n + col];
            a[r * n + col] = 0.0;
            for (int64_t k = 0; k < n; k++) a[r * n + k] -= f * a[col * n + k];
        }
    }
    for (int64_t col = n - 1; col >= 0; col--)
        for (int64_t r = 0; swap[col] != col && r < n; r++) {
            const double t = a[r * n + col];
            a[r * n + col] = a[r * n + swap[col]], a[r * n + swap[col]] = t;
        }
    free(swap);
    return 0;
}

/* The coarsest level's matrix over its unknowns, regularised by a multiple
 * of the constant vector's projector where the problem is singular. */
static int coarsest(heat_mg *m)
{
    const int l = m->levels - 1;
    const heat_mg_level *L = &m->lv[l];
    const int64_t nc = unknowns(L);
    int64_t *slot = malloc(sizeof *slot * (size_t)L->points);
    m->cidx = malloc(sizeof *m->cidx * (size_t)(nc > 0 ? nc : 1));
    m->cinv = calloc((size_t)(nc > 0 ? nc * nc : 1), sizeof *m->cinv);
    if (!slot || !m->cidx || !m->cinv) return free(slot), -1;
    m->nc = 0;
    for (int64_t p = 0; p < L->points; p++) {
        const int64_t ix[3] = {p % L->n[0], p / L->n[0] % L->n[1], p / (L->n[0] * L->n[1])};
        slot[p] = held(L, ix) ? -1 : m->nc;
        if (slot[p] >= 0) m->cidx[m->nc++] = p;
    }
    double dmax = 0;
    for (int64_t r = 0; r < nc; r++) {
        const int64_t p = m->cidx[r];
        const int64_t ix[3] = {p % L->n[0], p / L->n[0] % L->n[1], p / (L->n[0] * L->n[1])};
        double *row = m->cinv + r * nc;
        row[r] += diag_term(m, l, p);
        for (int d = 0; d < 3; d++)
            for (int side = 0; side < 2; side++) {
                int64_t q[3] = {ix[0], ix[1], ix[2]}, f[3] = {ix[0], ix[1], ix[2]};
                q[d] = wrap(q[d] + (side ? 1 : -1), L->n[d]);
                if (!side) f[d] = q[d];
                const double t = face_t(m, l, d, f);
                row[r] += t;
                if (slot[node(L, q)] >= 0) row[slot[node(L, q)]] -= t;
            }
        dmax = fmax(dmax, row[r]);
    }
    if (m->singular)
        for (int64_t i = 0; i < nc * nc; i++) m->cinv[i] += dmax / (double)nc;
    free(slot);
    return invert(m->cinv, nc);
}

/* ---- the whole ------------------------------------------------------------------- */

static int oom(heat_mg *m, heat_error *err)
{
    heat_mg_free(m);
    return heat_error_set(err, HEAT_ERUNTIME, "multigrid: out of memory for the level hierarchy");
}

/* A singular steady problem whose heat input does not balance has no steady
 * state: refused as a deck error. */
static int check_balance(double net, double mag, heat_error *err)
{
    if (!(fabs(net) > 1e-9 * mag)) return HEAT_OK;
    return heat_error_set(
        err, HEAT_EINPUT,
        "steady.method = \"multigrid\": no boundary face is Dirichlet or convective with h > 0, "
        "so the steady state is fixed only up to a constant (the initial mean is kept) and "
        "exists only when the heat put in sums to zero; here the sources and the Neumann and "
        "flux faces put in %.6g net (%.6g in and out in all; W, per metre of depth in 2D, or with "
        "material.diffusivity alone the diffusivity times temperature times length): balance "
        "them, or make a face Dirichlet or convective",
        net, mag);
}

int heat_mg_opdep(const heat_case *c)
{
    const char *e = getenv("HEAT_MG_INTERP");
    if (!c->d.general || (e && strcmp(e, "linear") == 0)) return 0;
    double kmin, kmax;
    heat_case_k_range(c, &kmin, &kmax);
    return kmin != kmax;
}

/* A hierarchy's settings, its tables and its finest level (NULL when out of
 * memory); h: the grid's spacings. */
static heat_mg *new_hierarchy(const heat_case *c, const uint8_t *cls, const heat_coeffs *k,
                              double h[3])
{
    heat_mg *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->implicit = heat_case_implicit(c);
    m->theta = m->implicit ? c->d.theta : 1.0;
    m->dt = c->d.dt;
    m->singular = !m->implicit && heat_case_singular(c);
    m->eps = c->solver.precision == HEAT_FLOAT ? 0x1p-23 : 0x1p-52;
    m->tolerance = c->solver.implicit_tolerance;
    m->diag_scale = (m->implicit ? 1.0 / m->dt : 0.0) + m->theta / c->d.dt_max;
    m->cls = c->d.general ? cls : NULL;
    if (fine_tables(m, c, k) || fine_level(m, c, h)) {
        heat_mg_free(m);
        return NULL;
    }
    m->opdep = heat_mg_opdep(c);
    for (int d = 0; d < 3; d++) m->clo[d] = 0, m->cn[d] = m->lv[0].n[d];
    return m;
}

/* The axes of every level below the finest, as heat_mg_build adds them;
 * -1 when out of memory. */
static int all_axes(heat_mg *m, const double h[3])
{
    for (int l = 0; unknowns(&m->lv[l]) > HEAT_MG_DIRECT_MAX && l + 1 < HEAT_MG_LEVELS_MAX; l++) {
        const int rc = add_level_axes(m, l, h);
        if (rc < 0) return -1;
        if (rc > 0) break;
    }
    return 0;
}

int heat_mg_build(const heat_case *c, const uint8_t *cls, const heat_coeffs *k, heat_mg **out,
                  heat_error *err)
{
    *out = NULL;
    if (c->d.general && (!cls || !k))
        return heat_error_set(err, HEAT_ERUNTIME, "multigrid: the material classes are missing");
    double h[3];
    heat_mg *m = new_hierarchy(c, cls, k, h);
    if (!m) return oom(m, err);
    double net, mag;
    if (fine_terms(m, c, k, 1, &net, &mag, NULL)) return oom(m, err);
    if (m->singular && check_balance(net, mag, err)) {
        heat_mg_free(m);
        return HEAT_EINPUT;
    }
    for (int l = 0; unknowns(&m->lv[l]) > HEAT_MG_DIRECT_MAX && l + 1 < HEAT_MG_LEVELS_MAX; l++) {
        const int rc = add_level(m, l, h);
        if (rc < 0) return oom(m, err);
        if (rc > 0) break;
    }
    for (int l = 0; l < m->levels; l++) smoother(m, l);
    if (coarsest(m)) {
        heat_mg_free(m);
        return heat_error_set(err, HEAT_ERUNTIME,
                              "multigrid: the coarsest level's matrix cannot be inverted");
    }
    *out = m;
    return HEAT_OK;
}

int heat_mg_check_balance(const heat_case *c, const uint8_t *cls, const heat_coeffs *k,
                          heat_error *err)
{
    if (!heat_case_steady_multigrid(c) || !heat_case_singular(c)) return HEAT_OK;
    heat_mg *m = calloc(1, sizeof *m);
    if (!m) return oom(m, err);
    m->theta = 1.0;
    m->cls = c->d.general ? cls : NULL;
    double h[3];
    if (fine_tables(m, c, k) || fine_level(m, c, h)) return oom(m, err);
    for (int d = 0; d < 3; d++) m->clo[d] = 0, m->cn[d] = m->lv[0].n[d];
    double net, mag;
    fine_terms(m, c, k, 0, &net, &mag, NULL);
    heat_mg_free(m);
    return check_balance(net, mag, err);
}

void heat_mg_drop_arrays(heat_mg *m)
{
    if (!m) return;
    free(m->dg0), free(m->b0);
    m->dg0 = m->b0 = NULL;
    for (int l = 0; l < m->levels; l++)
        for (int d = 0; d < 3; d++) free(m->lv[l].wq[d]), m->lv[l].wq[d] = NULL;
    for (int l = 1; l < m->levels; l++) {
        for (int d = 0; d < 3; d++) free(m->lv[l].t[d]), m->lv[l].t[d] = NULL;
        free(m->lv[l].dg), m->lv[l].dg = NULL;
    }
}

void heat_mg_free(heat_mg *m)
{
    if (!m) return;
    heat_mg_drop_arrays(m);
    for (int l = 0; l < HEAT_MG_LEVELS_MAX; l++)
        for (int d = 0; d < 3; d++) axis_free(&m->lv[l].ax[d]);
    free(m->kf), free(m->cidx), free(m->cinv);
    free(m);
}

/* The bytes of m's levels with or without a right-hand side on the finest
 * level and a mass term (D) on every level, and nc unknowns solved
 * directly (the finest level's two fields excluded). */
static double hierarchy_bytes(const heat_mg *m, int implicit, int has_b0, int has_dg, int opdep,
                              int64_t nc, int vs, double fine_points)
{
    /* The finest level: b (implicit: the step's right-hand side, the kept
     * field and the sources apart; steady: the sources), D. */
    double values = (implicit ? 2.0 : 0.0) + (has_b0 ? 1.0 : 0.0) + (has_dg ? 1.0 : 0.0);
    values *= fine_points;
    /* wq: 3 weights of 2 bytes per node of every level but the coarsest */
    double wq = m->levels > 1 ? fine_points : 0.0;
    for (int l = 1; l < m->levels; l++) {
        values += (double)m->lv[l].points * (6.0 + (has_dg ? 1.0 : 0.0));
        if (l + 1 < m->levels) wq += (double)m->lv[l].points;
    }
    return values * vs + (double)nc * (double)nc * vs + (opdep ? 6.0 * wq : 0.0);
}

double heat_mg_bytes(const heat_mg *m, int vs)
{
    return heat_mg_bytes_rows(m, vs, m->lv[0].bn[0], m->lv[0].bn[1]);
}

double heat_mg_bytes_rows(const heat_mg *m, int vs, int64_t rp0, int64_t rows0)
{
    const heat_mg_level *L0 = &m->lv[0];
    return hierarchy_bytes(m, m->implicit, m->b0 != NULL, m->dg0 != NULL, m->opdep, m->nc, vs,
                           (double)rp0 * (double)rows0 * (double)L0->bn[2]);
}

int64_t heat_mg_gpu_row_pitch(const int64_t n[3])
{
    const char *e = getenv("HEAT_CUDA_MG_ROWS");
    if (e && strcmp(e, "packed") == 0) return n[0];
    return (n[0] + 3) / 4 * 4;
}

int64_t heat_mg_gpu_rows(const int64_t n[3], size_t vs)
{
    if (n[2] <= 1) return n[1];
    const char *e = getenv("HEAT_CUDA_MG_PAD");
    if (e && *e && atoll(e) >= 0) return n[1] + atoll(e);
    /* the plane as laid out: its rows padded (511 x 512 doubles is 2 MiB too) */
    return heat_mg_gpu_row_pitch(n) * n[1] * (int64_t)vs == 2 << 20 ? n[1] + (n[1] + 63) / 64
                                                                    : n[1];
}

/* The levels as heat_mg_build adds them, axes only, into *out, and whether
 * the finest level has a right-hand side and a mass term (sources counted
 * as present: their power is not known here). */
static int plan_axes(const heat_case *c, heat_mg **out, int *need_b, int *need_d, heat_error *err)
{
    heat_mg *m = calloc(1, sizeof *m);
    if (!m) return oom(m, err);
    double h[3];
    if (fine_level(m, c, h)) return oom(m, err);
    for (int l = 0; unknowns(&m->lv[l]) > HEAT_MG_DIRECT_MAX && l + 1 < HEAT_MG_LEVELS_MAX; l++) {
        const int rc = add_level_axes(m, l, h);
        if (rc < 0) return oom(m, err);
        if (rc > 0) break;
    }
    fine_needs(c, NULL, need_b, need_d);
    if (c->d.general && c->sources.count > 0) *need_b = 1;
    *out = m;
    return HEAT_OK;
}

int heat_mg_plan(const heat_case *c, int *levels, double *bytes, heat_error *err)
{
    heat_mg *m;
    int need_b, need_d;
    int rc = plan_axes(c, &m, &need_b, &need_d, err);
    if (rc) return rc;
    *levels = m->levels;
    const size_t vs = heat_case_value_size(c);
    const double fine = c->solver.backend == HEAT_BACKEND_CUDA
                            ? (double)heat_mg_gpu_row_pitch(c->grid.n) *
                                  (double)heat_mg_gpu_rows(c->grid.n, vs) * (double)c->grid.n[2]
                            : (double)m->lv[0].points;
    *bytes = hierarchy_bytes(m, heat_case_implicit(c), need_b, need_d, heat_mg_opdep(c),
                             unknowns(&m->lv[m->levels - 1]), (int)vs, fine);
    heat_mg_free(m);
    return HEAT_OK;
}

/* ---- a hierarchy split over ranks ------------------------------------------------ */

int heat_mg_split_check(const heat_case *c, heat_error *err)
{
    int levels;
    double bytes;
    int rc = heat_mg_plan(c, &levels, &bytes, err);
    if (!rc && levels == 1)
        rc = heat_error_set(err, HEAT_EINPUT,
                            "multigrid: the grid has at most %d unknowns, so its one level is "
                            "solved directly, in one process: run it without mpirun (or with "
                            "-np 1)",
                            HEAT_MG_DIRECT_MAX);
    return rc;
}

/* The nodes of axis `ax` whose finest position lies in [a, a + na): from
 * *j0, *jn of them. */
static void level_range(const heat_mg_axis *ax, int64_t a, int64_t na, int64_t *j0, int64_t *jn)
{
    int64_t j = 0;
    while (j < ax->n && ax->pos[j] < a) j++;
    *j0 = j;
    while (j < ax->n && ax->pos[j] < a + na) j++;
    *jn = j - *j0;
}

/* Rank r's owned nodes of level l: first and count per axis. */
static void rank_range(const heat_mg *m, const heat_case *c, const heat_part *part, int r, int l,
                       int64_t j0[3], int64_t jn[3])
{
    int coord[3];
    int64_t lo[3], n[3];
    heat_split_coord(part->ranks, r, coord);
    heat_split_box(c, part->ranks, coord, lo, n);
    for (int d = 0; d < 3; d++) level_range(&m->lv[l].ax[d], lo[d], n[d], &j0[d], &jn[d]);
}

/* The first level that every rank holds whole: the first below the finest
 * of at most HEAT_MG_GATHER_POINTS nodes, or on which a rank would own
 * fewer than 2 nodes along a cut axis; at the latest the coarsest. */
static int gather_level(const heat_mg *m, const heat_case *c, const heat_part *part)
{
    /* For tests: HEAT_TEST_MG_GATHER=N gathers at N nodes instead (0: only
     * where a rank would own too few nodes), so that small grids split
     * several levels. */
    const char *e = getenv("HEAT_TEST_MG_GATHER");
    const int64_t most = e && *e ? strtoll(e, NULL, 10) : HEAT_MG_GATHER_POINTS;
    for (int l = 1; l < m->levels - 1; l++) {
        if (m->lv[l].points <= most) return l;
        for (int r = 0; r < part->size; r++) {
            int64_t j0[3], jn[3];
            rank_range(m, c, part, r, l, j0, jn);
            for (int d = 0; d < 3; d++)
                if (part->ranks[d] > 1 && jn[d] < 2) return l;
        }
    }
    return m->levels - 1;
}

/* Level l's box on this rank: its owned nodes and a ghost layer on each
 * face with a neighbour. */
static void part_box(heat_mg *m, const heat_case *c, const heat_part *part, int l)
{
    heat_mg_level *L = &m->lv[l];
    int64_t j0[3], jn[3];
    rank_range(m, c, part, part->rank, l, j0, jn);
    L->points = 1;
    for (int d = 0; d < 3; d++) {
        L->gl[d] = part->peer[2 * d] >= 0;
        L->gh[d] = part->peer[2 * d + 1] >= 0;
        L->lo[d] = j0[d] - L->gl[d];
        L->bn[d] = jn[d] + L->gl[d] + L->gh[d];
        L->points *= L->bn[d];
    }
}

int heat_mg_plan_part(const heat_case *c, const int ranks[3], int rank, double *bytes, int *split,
                      heat_error *err)
{
    heat_mg *m;
    int need_b, need_d;
    int rc = plan_axes(c, &m, &need_b, &need_d, err);
    if (rc) return rc;
    heat_part part;
    heat_split_part(c, ranks, rank, heat_split_depth(c), &part);
    const int g = m->levels > 1 ? gather_level(m, c, &part) : 0;
    /* the rank's boxes of levels 0 .. g (heat_mg_build_part's part_box),
     * then the levels g .. coarsest whole, as hierarchy_bytes counts them */
    double values = 0, wq = 0;
    for (int l = 0; l <= g; l++) {
        int64_t j0[3], jn[3];
        rank_range(m, c, &part, rank, l, j0, jn);
        double box = 1;
        for (int d = 0; d < 3; d++)
            box *= (double)(jn[d] + (part.peer[2 * d] >= 0) + (part.peer[2 * d + 1] >= 0));
        values +=
            box * (l == 0 ? (heat_case_implicit(c) ? 2.0 : 0.0) + need_b + need_d : 6.0 + need_d);
        if (l < g) wq += box;
    }
    for (int l = g > 0 ? g : 1; l < m->levels; l++) {
        values += (double)m->lv[l].points * (6.0 + need_d);
        if (l + 1 < m->levels) wq += (double)m->lv[l].points;
    }
    const double nc = (double)unknowns(&m->lv[m->levels - 1]);
    *bytes = (values + nc * nc) * (c->solver.precision == HEAT_FLOAT ? 4 : 8) +
             (heat_mg_opdep(c) ? 6.0 * wq : 0.0);
    *split = g;
    heat_mg_free(m);
    return HEAT_OK;
}

int heat_mg_build_part(const heat_case *c, const heat_mg_dist *dist, const uint8_t *cls,
                       const int64_t clo[3], const int64_t cn[3], const heat_coeffs *k,
                       heat_mg **out, heat_mg **tail, heat_error *err)
{
    *out = *tail = NULL;
    if (c->d.general && (!cls || !k))
        return heat_error_set(err, HEAT_ERUNTIME, "multigrid: the material classes are missing");
    int rc = heat_mg_split_check(c, err);
    if (rc) return rc;
    const heat_part *part = &dist->part;
    double h[3];
    heat_mg *m = new_hierarchy(c, cls, k, h), *t = NULL;
    if (!m || all_axes(m, h)) return oom(m, err);
    for (int d = 0; d < 3; d++) m->clo[d] = clo[d], m->cn[d] = cn[d];
    const int g = gather_level(m, c, part);
    m->gather = g;
    for (int l = 0; l <= g; l++) part_box(m, c, part, l);
    double sums[2];
    heat_xsum wx;
    if (fine_terms(m, c, k, 1, &sums[0], &sums[1], &wx)) return oom(m, err);
    dist->reduce(dist->ctx, sums, 2, 1);
    double limbs[HEAT_XSUM_LIMBS + 1];
    heat_xsum_limbs_out(&wx, limbs);
    dist->reduce(dist->ctx, limbs, HEAT_XSUM_LIMBS + 1, 1);
    heat_xsum_limbs_in(&wx, limbs);
    m->weight = heat_xsum_value(&wx);
    if (m->singular && (rc = check_balance(sums[0], sums[1], err))) {
        heat_mg_free(m);
        return rc;
    }
    for (int l = 0; l < g && !rc; l++) {
        /* level l's weights (its ghosts' from their owners), then level
         * l + 1's coefficients, which read them */
        if (level_weights(m, l)) return oom(m, err);
        for (int d = 0; d < 3 && !rc && m->lv[l].wq[d]; d++)
            rc = dist->exchange(dist->ctx, m, l, m->lv[l].wq[d], sizeof *m->lv[l].wq[d], err);
        if (rc) break;
        if (level_arrays(m, l)) return oom(m, err);
        heat_mg_level *C = &m->lv[l + 1];
        for (int d = 0; d < 3 && !rc; d++)
            rc = dist->exchange(dist->ctx, m, l + 1, C->t[d], 8, err);
        if (!rc && C->dg) rc = dist->exchange(dist->ctx, m, l + 1, C->dg, 8, err);
    }
    for (int l = 0; l < g && !rc; l++) {
        double lmax = level_lmax(m, l);
        dist->reduce(dist->ctx, &lmax, 1, 0);
        smoother_from(m, l, lmax);
    }
    /* The levels from g on, whole on every rank. */
    if (!rc && (!(t = new_hierarchy(c, cls, k, h)) || all_axes(t, h))) {
        heat_mg_free(t);
        return oom(m, err);
    }
    if (!rc) {
        t->gather = g;
        t->weight = m->weight;
        heat_mg_level *T = &t->lv[g], *G = &m->lv[g];
        for (int d = 0; d < 3; d++)
            if (!(T->t[d] = malloc(sizeof(double) * (size_t)T->points))) rc = -1;
        if (G->dg && !(T->dg = malloc(sizeof(double) * (size_t)T->points))) rc = -1;
        if (rc) {
            heat_mg_free(t);
            return oom(m, err);
        }
        for (int d = 0; d < 3 && !rc; d++)
            rc = heat_mg_gather(m, dist, g, 8, G->t[d], T->t[d], err);
        if (!rc && G->dg) rc = heat_mg_gather(m, dist, g, 8, G->dg, T->dg, err);
    }
    for (int l = g; !rc && l + 1 < t->levels; l++)
        if (level_weights(t, l) || level_arrays(t, l)) {
            heat_mg_free(t);
            return oom(m, err);
        }
    if (rc) {
        heat_mg_free(t);
        heat_mg_free(m);
        return rc;
    }
    for (int l = g; l < t->levels; l++) smoother(t, l);
    if (coarsest(t)) {
        heat_mg_free(t);
        heat_mg_free(m);
        return heat_error_set(err, HEAT_ERUNTIME,
                              "multigrid: the coarsest level's matrix cannot be inverted");
    }
    m->nc = t->nc; /* for the description; the inverse is the tail's */
    /* The ghosts' T were read by the coarser levels' build; now the face
     * beyond a box's high ghost layer is 0, as a grid's last face is, since
     * a node at index 0 of the box wraps to it. */
    for (int l = 1; l <= g; l++) {
        heat_mg_level *L = &m->lv[l];
        for (int d = 0; d < 3; d++)
            if (L->gh[d])
                for (int64_t p = 0; p < L->points; p++) {
                    const int64_t b[3] = {p % L->bn[0], p / L->bn[0] % L->bn[1],
                                          p / (L->bn[0] * L->bn[1])};
                    if (b[d] == L->bn[d] - 1) L->t[d][p] = 0.0;
                }
    }
    *out = m;
    *tail = t;
    return HEAT_OK;
}

int heat_mg_gather(const heat_mg *m, const heat_mg_dist *dist, int l, size_t vs, const void *a,
                   void *full, heat_error *err)
{
    const heat_part *part = &dist->part;
    const heat_mg_level *L = &m->lv[l];
    size_t *bytes = malloc(sizeof *bytes * (size_t)part->size), total = 0;
    int64_t(*j0)[3] = malloc(sizeof *j0 * (size_t)part->size);
    int64_t(*jn)[3] = malloc(sizeof *jn * (size_t)part->size);
    int ok = bytes && j0 && jn;
    for (int r = 0; ok && r < part->size; r++) {
        rank_range(m, dist->c, part, r, l, j0[r], jn[r]);
        bytes[r] = (size_t)(jn[r][0] * jn[r][1] * jn[r][2]) * vs;
        total += bytes[r];
    }
    char *mine = ok ? malloc(bytes[part->rank] + 1) : NULL, *all = ok ? malloc(total + 1) : NULL;
    if (!mine || !all) {
        free(bytes), free(j0), free(jn), free(mine), free(all);
        return heat_error_set(err, HEAT_ERUNTIME, "multigrid: out of memory gathering level %d", l);
    }
    const int64_t *n = L->n;
    size_t at = 0;
    for (int64_t bz = L->gl[2]; bz < L->bn[2] - L->gh[2]; bz++)
        for (int64_t by = L->gl[1]; by < L->bn[1] - L->gh[1]; by++) {
            const size_t row = (size_t)(L->bn[0] - L->gl[0] - L->gh[0]) * vs;
            memcpy(mine + at,
                   (const char *)a + (size_t)((bz * L->bn[1] + by) * L->bn[0] + L->gl[0]) * vs,
                   row);
            at += row;
        }
    int rc = dist->allgatherv(dist->ctx, mine, all, bytes, err);
    at = 0;
    for (int r = 0; !rc && r < part->size; r++)
        for (int64_t z = 0; z < jn[r][2]; z++)
            for (int64_t y = 0; y < jn[r][1]; y++) {
                const size_t row = (size_t)jn[r][0] * vs;
                memcpy((char *)full +
                           (size_t)(((j0[r][2] + z) * n[1] + j0[r][1] + y) * n[0] + j0[r][0]) * vs,
                       all + at, row);
                at += row;
            }
    free(bytes), free(j0), free(jn), free(mine), free(all);
    return rc;
}

void heat_mg_scatter(const heat_mg *m, int l, size_t vs, const void *full, void *a)
{
    const heat_mg_level *L = &m->lv[l];
    const int64_t *n = L->n;
    for (int64_t bz = 0; bz < L->bn[2]; bz++)
        for (int64_t by = 0; by < L->bn[1]; by++)
            for (int64_t bx = 0; bx < L->bn[0]; bx++) {
                const int64_t x = box_node(L, 0, bx), y = box_node(L, 1, by),
                              z = box_node(L, 2, bz);
                memcpy((char *)a + (size_t)((bz * L->bn[1] + by) * L->bn[0] + bx) * vs,
                       (const char *)full + (size_t)((z * n[1] + y) * n[0] + x) * vs, vs);
            }
}
