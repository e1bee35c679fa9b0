/* The split of a grid over ranks. See heat_split.h. */
#include "heat_split.h"

#include <stdio.h>
#include <string.h>

int heat_split_depth(const heat_case *c)
{
    if (heat_case_multigrid(c)) return 1; /* no fused steps; multigrid's levels take one layer */
    return c->solver.temporal_block > 1 ? c->solver.temporal_block : 1;
}

static const char axis_name[3] = {'x', 'y', 'z'};

int heat_split_fits(const heat_case *c, const int ranks[3], int depth, char *why, size_t n)
{
    const int need = depth > 1 ? depth : 1;
    for (int a = 0; a < 3; a++) {
        if (ranks[a] < 1) {
            snprintf(why, n, "%d ranks along %c: each must be >= 1", ranks[a], axis_name[a]);
            return 0;
        }
        if (a == 2 && c->grid.dims == 2 && ranks[a] != 1) {
            snprintf(why, n, "%d ranks along z, but nz = 1 makes a 2D run: pz must be 1", ranks[a]);
            return 0;
        }
        if (ranks[a] > c->grid.n[a]) {
            snprintf(why, n, "%d ranks along %c, which has only %lld points", ranks[a],
                     axis_name[a], (long long)c->grid.n[a]);
            return 0;
        }
        if (ranks[a] > 1 && c->grid.n[a] / ranks[a] < need) {
            snprintf(why, n,
                     "%d ranks along %c give boxes of %lld points, fewer than the %d halo "
                     "layers each side needs (solver.temporal_block = %d)",
                     ranks[a], axis_name[a], (long long)(c->grid.n[a] / ranks[a]), need, depth);
            return 0;
        }
    }
    return 1;
}

/* Cuts of an axis into p parts: p - 1 inside, one more across a periodic wrap. */
static int cuts(const heat_case *c, int axis, int p)
{
    if (p <= 1) return 0;
    return p - 1 + (c->bc[2 * axis].type == HEAT_BC_PERIODIC);
}

int heat_split_choose(const heat_case *c, int nranks, int depth, int ranks[3])
{
    double best = -1;
    int found = 0;
    const double points = (double)c->d.points;
    for (int px = 1; px <= nranks; px++) {
        if (nranks % px) continue;
        for (int py = 1; py <= nranks / px; py++) {
            if ((nranks / px) % py) continue;
            const int r[3] = {px, py, nranks / px / py};
            char why[256];
            if (!heat_split_fits(c, r, depth, why, sizeof why)) continue;
            /* Halo points per exchange, all ranks together: two faces per cut. */
            double cost = 0;
            for (int a = 0; a < 3; a++)
                cost += 2.0 * cuts(c, a, r[a]) * points / (double)c->grid.n[a];
            /* Ties: the split found first, with the fewest cuts of x, then y. */
            if (!found || cost < best * (1 - 1e-12)) {
                best = cost;
                memcpy(ranks, r, sizeof r);
                found = 1;
            }
        }
    }
    return found ? 0 : -1;
}

void heat_split_coord(const int ranks[3], int rank, int coord[3])
{
    coord[2] = rank % ranks[2];
    coord[1] = rank / ranks[2] % ranks[1];
    coord[0] = rank / ranks[2] / ranks[1];
}

static int rank_of(const int ranks[3], const int coord[3])
{
    return (coord[0] * ranks[1] + coord[1]) * ranks[2] + coord[2];
}

void heat_split_box(const heat_case *c, const int ranks[3], const int coord[3], int64_t lo[3],
                    int64_t n[3])
{
    for (int a = 0; a < 3; a++) {
        const int64_t total = c->grid.n[a], p = ranks[a], i = coord[a];
        const int64_t base = total / p, extra = total % p;
        n[a] = base + (i < extra);
        lo[a] = i * base + (i < extra ? i : extra);
    }
}

void heat_split_part(const heat_case *c, const int ranks[3], int rank, int depth, heat_part *p)
{
    memset(p, 0, sizeof *p);
    memcpy(p->ranks, ranks, sizeof p->ranks);
    p->rank = rank;
    p->size = ranks[0] * ranks[1] * ranks[2];
    p->depth = depth > 1 ? depth : 1;
    heat_split_coord(ranks, rank, p->coord);
    heat_split_box(c, ranks, p->coord, p->lo, p->n);
    for (int a = 0; a < 3; a++) {
        const int periodic = c->bc[2 * a].type == HEAT_BC_PERIODIC;
        for (int side = 0; side < 2; side++) {
            int q[3] = {p->coord[0], p->coord[1], p->coord[2]};
            q[a] += side ? 1 : -1;
            int peer = -1;
            if (ranks[a] > 1) {
                if (q[a] >= 0 && q[a] < ranks[a])
                    peer = rank_of(ranks, q);
                else if (periodic) {
                    q[a] = (q[a] + ranks[a]) % ranks[a];
                    peer = rank_of(ranks, q);
                }
            }
            p->peer[2 * a + side] = peer;
        }
    }
}

/* The halo exchange's geometry, as kernels/halo.c builds it: with depth > 1
 * and several cut axes, axes in turn (x, y, z), each message spanning the
 * ghost layers of the axes before it (edges and corners); else faces only. */
int64_t heat_split_halo_values(const heat_part *p)
{
    int cut_axes = 0;
    for (int a = 0; a < 3; a++) cut_axes += p->peer[2 * a] >= 0 || p->peer[2 * a + 1] >= 0;
    const int phased = p->depth > 1 && cut_axes > 1;
    int64_t total = 0;
    for (int a = 0; a < 3; a++)
        for (int side = 0; side < 2; side++) {
            if (p->peer[2 * a + side] < 0) continue;
            int64_t area = p->depth;
            for (int b = 0; b < 3; b++) {
                if (b == a) continue;
                int64_t e = p->n[b];
                if (phased && b < a)
                    e += p->depth * ((p->peer[2 * b] >= 0) + (p->peer[2 * b + 1] >= 0));
                area *= e;
            }
            total += area;
        }
    return total;
}

int64_t heat_split_local_values(const heat_part *p)
{
    int64_t v = 1;
    for (int a = 0; a < 3; a++)
        v *= p->n[a] + p->depth * ((p->peer[2 * a] >= 0) + (p->peer[2 * a + 1] >= 0));
    return v;
}
