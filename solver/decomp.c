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

/* "1.5 GiB": bytes in binary units, three significant digits. */
static void bytes_text(char *buf, size_t n, double b)
{
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    while (b >= 1024 && u < 5) b /= 1024, u++;
    snprintf(buf, n, u ? "%.3g %s" : "%.0f %s", b, unit[u]);
}

void heat_par_print_split(FILE *out, const heat_case *c, const int ranks[3])
{
    const int size = ranks[0] * ranks[1] * ranks[2], depth = heat_split_depth(c);
    const size_t vs = heat_case_value_size(c);
    fprintf(out, "split           %d x %d x %d = %d rank%s, halos %d layer%s deep (%s)\n", ranks[0],
            ranks[1], ranks[2], size, size == 1 ? "" : "s", depth, depth == 1 ? "" : "s",
            c->parallel.ranks[0] > 0 ? "parallel.ranks" : "the split with the fewest halo points");
    if (size == 1) return;
    fprintf(out, "  %-6s %-10s %-22s %-20s %11s %13s\n", "rank", "coords", "first node", "points",
            "memory", "halo / step");
    double mem_lo = 0, mem_hi = 0, halo_lo = 0, halo_hi = 0;
    for (int r = 0; r < size; r++) {
        heat_part p;
        heat_split_part(c, ranks, r, depth, &p);
        /* Two time levels with their ghost layers, as the backend holds
         * them (and the classes of the variable-coefficient update, a byte
         * a value); halo bytes received per step (an exchange of `depth`
         * layers every `depth` steps). */
        const double local = (double)heat_backend_held_values(c, &p);
        const double mem = 2.0 * local * (double)vs + (c->d.general ? local : 0.0);
        const double halo = (double)heat_split_halo_values(&p) * (double)vs / depth;
        if (r == 0 || mem < mem_lo) mem_lo = mem;
        if (r == 0 || mem > mem_hi) mem_hi = mem;
        if (r == 0 || halo < halo_lo) halo_lo = halo;
        if (r == 0 || halo > halo_hi) halo_hi = halo;
        if (r >= 64) continue;
        char coords[40], first[72], points[72], m[32], h[32];
        snprintf(coords, sizeof coords, "(%d,%d,%d)", p.coord[0], p.coord[1], p.coord[2]);
        snprintf(first, sizeof first, "(%lld,%lld,%lld)", (long long)p.lo[0], (long long)p.lo[1],
                 (long long)p.lo[2]);
        snprintf(points, sizeof points, "%lld x %lld x %lld", (long long)p.n[0], (long long)p.n[1],
                 (long long)p.n[2]);
        bytes_text(m, sizeof m, mem);
        bytes_text(h, sizeof h, halo);
        fprintf(out, "  %-6d %-10s %-22s %-20s %11s %13s\n", r, coords, first, points, m, h);
    }
    if (size > 64) fprintf(out, "  ... and %d more ranks\n", size - 64);
    char a[32], b[32], x[32], y[32];
    bytes_text(a, sizeof a, mem_lo);
    bytes_text(b, sizeof b, mem_hi);
    bytes_text(x, sizeof x, halo_lo);
    bytes_text(y, sizeof y, halo_hi);
    fprintf(out,
            "  per rank: memory %s to %s (two time levels with ghost layers%s), halos %s to %s "
            "received per step\n",
            a, b, c->d.general ? ", and the material classes" : "", x, y);
}
