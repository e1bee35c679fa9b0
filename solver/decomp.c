/* The decomposition of a run over its ranks: which split, whose box, who
 * the neighbours are. The arithmetic is input/heat_split.c's; this file
 * brings it together with the processes MPI started. */
#include <stdio.h>
#include <string.h>

#include "parallel.h"

int heat_decomp_split(const heat_case *c, int nranks, int ranks[3], heat_error *err)
{
    const int depth = heat_split_depth(c);
    char why[256];
    if (c->parallel.ranks[0] > 0) {
        memcpy(ranks, c->parallel.ranks, 3 * sizeof *ranks);
        const long product = (long)ranks[0] * ranks[1] * ranks[2];
        if (product != nranks)
            return heat_error_set(err, HEAT_EINPUT,
                                  "parallel.ranks = [%d, %d, %d]: %ld ranks, but this run has %d "
                                  "process%s: start it with %ld (mpirun -np %ld), or change "
                                  "parallel.ranks (or leave it out to have the split chosen)",
                                  ranks[0], ranks[1], ranks[2], product, nranks,
                                  nranks == 1 ? "" : "es", product, product);
        if (!heat_split_fits(c, ranks, depth, why, sizeof why))
            return heat_error_set(err, HEAT_EINPUT, "parallel.ranks = [%d, %d, %d]: %s", ranks[0],
                                  ranks[1], ranks[2], why);
        return HEAT_OK;
    }
    if (heat_split_choose(c, nranks, depth, ranks))
        return heat_error_set(err, HEAT_EINPUT,
                              "%d processes do not fit grid.points = [%lld, %lld, %lld]: no split "
                              "of them gives every rank at least %d point%s per cut axis (halos "
                              "of solver.temporal_block = %d layer%s%s): use fewer processes",
                              nranks, (long long)c->grid.n[0], (long long)c->grid.n[1],
                              (long long)c->grid.n[2], depth, depth == 1 ? "" : "s",
                              c->solver.temporal_block, depth == 1 ? "" : "s",
                              c->grid.dims == 2 ? "; pz = 1 in 2D" : "");
    return HEAT_OK;
}

int heat_par_decompose(heat_par *p, const heat_case *c, heat_part *part, heat_error *err)
{
    int ranks[3];
    int rc = heat_decomp_split(c, heat_par_size(p), ranks, err);
    if (rc) return rc;
    heat_split_part(c, ranks, heat_par_rank(p), heat_split_depth(c), part);
    if (heat_par_size(p) > 1 && heat_par_cart(p, c, ranks, err)) return HEAT_ERUNTIME;
    return HEAT_OK;
}

void heat_par_print_split(FILE *out, const heat_case *c, const int ranks[3])
{
    const int size = ranks[0] * ranks[1] * ranks[2], depth = heat_split_depth(c);
    const size_t vs = heat_case_value_size(c);
    fprintf(out, "split           %d x %d x %d = %d rank%s, halos %d layer%s deep (%s)\n", ranks[0],
            ranks[1], ranks[2], size, size == 1 ? "" : "s", depth, depth == 1 ? "" : "s",
            c->parallel.ranks[0] > 0 ? "parallel.ranks" : "the fewest halo points");
    if (size == 1) return;
    fprintf(out, "  %-6s %-9s %-26s %-24s %12s %14s\n", "rank", "coords", "box (first node)",
            "points", "memory", "halo per step");
    const int shown = size <= 64 ? size : 64;
    for (int r = 0; r < shown; r++) {
        heat_part p;
        heat_split_part(c, ranks, r, depth, &p);
        char coords[32], first[48], points[48];
        snprintf(coords, sizeof coords, "(%d,%d,%d)", p.coord[0], p.coord[1], p.coord[2]);
        snprintf(first, sizeof first, "(%lld, %lld, %lld)", (long long)p.lo[0], (long long)p.lo[1],
                 (long long)p.lo[2]);
        snprintf(points, sizeof points, "%lld x %lld x %lld", (long long)p.n[0], (long long)p.n[1],
                 (long long)p.n[2]);
        /* Two time levels with their ghost layers; halo bytes received per
         * step (an exchange every temporal_block steps). */
        const double mem = 2.0 * (double)heat_split_local_values(&p) * (double)vs;
        const double halo = (double)heat_split_halo_values(&p) * (double)vs / depth;
        fprintf(out, "  %-6d %-9s %-26s %-24s %9.3f MB %11.3f MB\n", r, coords, first, points,
                mem / 1e6, halo / 1e6);
    }
    if (shown < size) fprintf(out, "  ... (%d more ranks)\n", size - shown);
}
