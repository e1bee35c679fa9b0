/* The geometry of a rank's part: see halo_plan.h. */
#include "halo_plan.h"

#include <stdlib.h>
#include <string.h>

static int64_t round_up(int64_t v, int64_t m)
{
    return (v + m - 1) / m * m;
}

int64_t heat_gpu_row_pitch(int64_t nx, size_t vs)
{
    const char *e = getenv("HEAT_CUDA_ROWS");
    if (e && !strcmp(e, "packed")) return nx;
    return round_up(nx, 16 / (int64_t)vs);
}

int64_t heat_halo_box_count(const hbox *b)
{
    int64_t n = 1;
    for (int a = 0; a < 3; a++) n *= b->hi[a] > b->lo[a] ? b->hi[a] - b->lo[a] : 0;
    return n;
}

int heat_halo_any(const heat_halo_plan *p)
{
    for (int f = 0; f < HEAT_NFACES; f++)
        if (p->gv[f]) return 1;
    return 0;
}

/* The messages of one face in phase `ph`; `spans[b]` says whether axis b's
 * ghost layers travel with it (axes exchanged in an earlier phase). */
static hmsg face_msg(const heat_halo_plan *p, int face, int ph, const int spans[3])
{
    const int a = face / 2, hi = face % 2, k = p->depth;
    hmsg m;
    memset(&m, 0, sizeof m);
    m.face = face;
    m.peer = p->part.peer[face];
    /* A message lands in the neighbour's opposite face. */
    m.send_tag = 8 * ph + (face ^ 1);
    m.recv_tag = 8 * ph + face;
    for (int b = 0; b < 3; b++) {
        int64_t lo = p->owned.lo[b], up = p->owned.hi[b];
        if (b != a && spans[b]) {
            lo -= p->gv[2 * b];
            up += p->gv[2 * b + 1];
        }
        m.send.lo[b] = m.recv.lo[b] = lo;
        m.send.hi[b] = m.recv.hi[b] = up;
    }
    if (hi) {
        m.send.lo[a] = p->owned.hi[a] - k;
        m.send.hi[a] = p->owned.hi[a];
        m.recv.lo[a] = p->owned.hi[a];
        m.recv.hi[a] = p->owned.hi[a] + k;
    } else {
        m.send.lo[a] = p->owned.lo[a];
        m.send.hi[a] = p->owned.lo[a] + k;
        m.recv.lo[a] = p->owned.lo[a] - k;
        m.recv.hi[a] = p->owned.lo[a];
    }
    m.count = (size_t)heat_halo_box_count(&m.send);
    return m;
}

static void plan_messages(heat_halo_plan *p, int corners)
{
    int cut_axes = 0;
    for (int a = 0; a < 3; a++) cut_axes += p->gv[2 * a] || p->gv[2 * a + 1];
    const int phased = (p->depth > 1 || corners) && cut_axes > 1;
    int spans[3] = {0, 0, 0};
    size_t off = 0;
    p->nphase = 0;
    for (int a = 0; a < 3; a++) {
        if (!p->gv[2 * a] && !p->gv[2 * a + 1]) continue;
        const int ph = phased ? p->nphase : 0;
        for (int side = 0; side < 2; side++) {
            const int f = 2 * a + side;
            if (!p->gv[f]) continue;
            hmsg m = face_msg(p, f, ph, spans);
            m.off = off;
            off += m.count;
            p->msg[ph][p->nmsg[ph]++] = m;
        }
        if (phased) {
            spans[a] = 1;
            p->nphase++;
        } else {
            p->nphase = 1;
        }
    }
    p->buf_values = off;
}

/* The regions of the overlapped last step: the shell (the depth layers at
 * each face with a neighbour, z slabs first, then y, then x, disjoint) and
 * the interior left over. */
static void plan_regions(heat_halo_plan *p)
{
    hbox in = p->owned;
    p->nshell = 0;
    for (int a = 2; a >= 0; a--)
        for (int side = 0; side < 2; side++) {
            if (!p->gv[2 * a + side]) continue;
            int64_t w = in.hi[a] - in.lo[a];
            if (w > p->depth) w = p->depth;
            if (w <= 0) continue;
            hbox s = in;
            if (side) {
                s.lo[a] = in.hi[a] - w;
                in.hi[a] -= w;
            } else {
                s.hi[a] = in.lo[a] + w;
                in.lo[a] += w;
            }
            p->shell[p->nshell++] = s;
        }
    p->interior = in;
}

void heat_halo_plan_init(heat_halo_plan *p, const heat_case *c, const heat_part *part, int xalign)
{
    memset(p, 0, sizeof *p);
    p->part = *part;
    p->dims = c->grid.dims;
    p->depth = part->depth > 1 ? part->depth : 1;
    for (int f = 0; f < HEAT_NFACES; f++) {
        p->bc[f] = (int)c->bc[f].type;
        p->gv[f] = part->peer[f] >= 0 ? p->depth : 0;
    }
    for (int a = 0; a < 3; a++) {
        int64_t lo = p->gv[2 * a], hi = p->gv[2 * a + 1];
        if (a == 0 && xalign > 1 && (lo || hi)) lo = lo ? round_up(lo, xalign) : 0;
        p->off[a] = lo;
        p->ext[a] = lo + part->n[a] + hi;
        /* rows padded whether or not x has ghosts: a row of an odd count
         * of values still loads as whole groups */
        if (a == 0 && xalign > 1) p->ext[a] = round_up(p->ext[a], xalign);
        p->owned.lo[a] = lo;
        p->owned.hi[a] = lo + part->n[a];
    }
    p->sy = p->ext[0];
    p->sz = p->ext[0] * p->ext[1];
    p->values = p->sz * p->ext[2];
    plan_messages(p, 0);
    plan_regions(p);
}

void heat_halo_plan_corners(heat_halo_plan *p)
{
    memset(p->nmsg, 0, sizeof p->nmsg);
    memset(p->msg, 0, sizeof p->msg);
    plan_messages(p, 1);
}

hbox heat_halo_grow(const heat_halo_plan *p, int e)
{
    hbox b = p->owned;
    for (int a = 0; a < 3; a++) {
        if (p->gv[2 * a]) b.lo[a] -= e;
        if (p->gv[2 * a + 1]) b.hi[a] += e;
    }
    return b;
}

hview heat_halo_view(const heat_halo_plan *p, const hbox *r)
{
    hview v;
    v.b = *r;
    for (int a = 0; a < 3; a++) {
        const int flo = 2 * a, fhi = flo + 1;
        if (a >= p->dims) {
            v.face[flo] = p->bc[flo];
            v.face[fhi] = p->bc[fhi];
            continue;
        }
        /* On the grid's own boundary the view keeps the deck's condition. */
        if (r->lo[a] == p->owned.lo[a] && !p->gv[flo]) {
            v.face[flo] = p->bc[flo];
        } else {
            v.b.lo[a] = r->lo[a] - 1;
            v.face[flo] = HEAT_BC_DIRICHLET;
        }
        if (r->hi[a] == p->owned.hi[a] && !p->gv[fhi]) {
            v.face[fhi] = p->bc[fhi];
        } else {
            v.b.hi[a] = r->hi[a] + 1;
            v.face[fhi] = HEAT_BC_DIRICHLET;
        }
    }
    return v;
}

int heat_halo_pieces(const heat_halo_plan *p, const hbox *r, int pieces, hbox *out)
{
    if (heat_halo_box_count(r) == 0) return 0;
    if (pieces > HEAT_HALO_MAX_PIECES) pieces = HEAT_HALO_MAX_PIECES;
    /* Not along an uncut periodic axis: its wrap needs the whole axis in one view. */
    int a = p->dims - 1;
    while (a >= 0 &&
           (r->hi[a] - r->lo[a] < 2 || (p->bc[2 * a] == HEAT_BC_PERIODIC && !p->gv[2 * a])))
        a--;
    if (a < 0) {
        out[0] = *r;
        return 1;
    }
    const int64_t len = r->hi[a] - r->lo[a];
    if (pieces > len) pieces = (int)len;
    if (pieces < 1) pieces = 1;
    for (int i = 0; i < pieces; i++) {
        out[i] = *r;
        out[i].lo[a] = r->lo[a] + len * i / pieces;
        out[i].hi[a] = r->lo[a] + len * (i + 1) / pieces;
    }
    return pieces;
}

int heat_halo_pass(const heat_halo_plan *p, int d, int fused, int resid, halo_op *ops)
{
    int n = 0;
    if (fused && d > 1) {
        const hbox r = heat_halo_grow(p, d - 1);
        ops[n++] = (halo_op){HALO_SWEEP, heat_halo_view(p, &r), resid ? d - 1 : d};
        if (!resid) {
            ops[n++] = (halo_op){HALO_EXCHANGE, {{{0}, {0}}, {0}}, 0};
            return n;
        }
    } else {
        for (int st = 1; st < d; st++) {
            const hbox r = heat_halo_grow(p, d - st);
            ops[n++] = (halo_op){HALO_SWEEP, heat_halo_view(p, &r), 1};
        }
    }
    ops[n++] = (halo_op){HALO_LAST, {{{0}, {0}}, {0}}, 1};
    return n;
}

hview heat_halo_align(const heat_halo_plan *p, hview v, int xalign)
{
    if (xalign > 1 && (p->gv[0] || p->gv[1]) && v.b.lo[0] % xalign) {
        v.b.lo[0] = v.b.lo[0] / xalign * xalign;
        v.face[HEAT_X_LO] = HEAT_BC_DIRICHLET;
    }
    return v;
}
