/* heat bench: the sweep of each backend and kernel against a copy.
 *
 * Method: for each size and precision, a copy of one field into another of
 * the same size (one read and one write per point: what a single stencil
 * sweep must at least move), then the sweep on random data (never zeros) with
 * all-Dirichlet faces. Warm-up first, then the median of `runs` timed runs of
 * `steps` steps each. Copy and sweep runs alternate, so that a busy neighbour
 * on a shared machine slows both alike. On the CPU both are timed on the wall
 * clock around complete calls (the CPU backend is synchronous) and the copy is
 * a parallel memcpy; on the GPU both are timed with CUDA events and the copy
 * is cudaMemcpyAsync device to device. Before a GPU kernel is timed, one pass
 * of it (k steps, k = solver.temporal_block) is compared with k steps of the
 * CPU backend on the same random field, so that a fast wrong kernel cannot win
 * a row. Rows with k > 1 (register_tiled only) fuse k steps per pass over
 * memory; they still count per time step, so they compare directly with k = 1
 * and with the copy, a single sweep's ceiling.
 * GLUP/s counts point updates per time step; effective GB/s counts one read
 * and one write per point per time step, 2 * sizeof(value) bytes per update.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend.h"
#include "cli.h"
#include "deck.h"
#include "parallel.h"
#include "progress.h"

#define MAX_SIZES 16

static const char usage_bench[] =
    "usage: heat bench [--backend cpu|cuda|all] [--kernel NAME|all] [--size NXxNYxNZ]...\n"
    "                  [--precision float|double|both] [--temporal K[,K...]] [--runs N]\n"
    "                  [--steps N] [--materials] [--material-blocks N] [--json FILE]\n"
    "       heat bench --multigrid [...]   (one V-cycle per level; see --multigrid --help)\n"
    "\n"
    "Times the stencil sweep on random data against a copy of the same size (the\n"
    "memory-bandwidth ceiling of a sweep that reads and writes each point once).\n"
    "For each size and precision it prints: backend, kernel, k (solver.temporal_block:\n"
    "time steps fused per pass over memory), size, precision, ms per time step, GLUP/s\n"
    "(1e9 point updates per time step per second), effective GB/s (one read and one\n"
    "write per point per time step), the copy's GB/s measured in the same run, the\n"
    "percentage of it the sweep reaches, and the check of the kernel against the CPU\n"
    "backend: one pass of the kernel (k steps) against k steps of the CPU backend from\n"
    "the same random field (\"exact\" when bit-identical; a row fails if it is off by\n"
    "more than 1e-5 relative in float or 1e-12 in double).\n"
    "\n"
    "Temporal rows: only the cuda backend's register_tiled kernel fuses steps, so only\n"
    "it gets rows with k > 1 (by default k = 1, 2, 3, 4, 6, 8); every other kernel and\n"
    "the CPU get one row, k = 1. GLUP/s and GB/s still count per time step, so a k > 1\n"
    "row compares directly with k = 1 and with the copy, the ceiling of a single sweep\n"
    "(a fused row can pass 100%: it reads and writes the field once per k steps).\n"
    "\n"
    "options:\n"
    "  --backend B       cpu, cuda or all (default: cuda where a GPU is usable, else cpu;\n"
    "                    all: the cuda rows too where a GPU is usable)\n"
    "  --kernel K        the GPU kernel: naive, tiled, sliced, register_tiled, or all\n"
    "                    (default all; the CPU backend has one kernel, openmp, and\n"
    "                    --kernel with the cpu backend alone is refused)\n"
    "  --size NXxNYxNZ   grid size, repeatable (NZ = 1 for 2D); default on the CPU\n"
    "                    256x256x256 and 4096x4096x1, on the GPU 512x512x512 and\n"
    "                    8192x8192x1 (all larger than the caches)\n"
    "  --precision P     float, double or both (default both)\n"
    "  --temporal K,...  the k of the register_tiled rows, each from 1 to 8 (default\n"
    "                    1,2,3,4,6,8); the other kernels and the CPU still get k = 1\n"
    "  --runs N          timed runs per row, the median is reported (default 20, >= 3)\n"
    "  --steps N         time steps per timed run (default: about 0.05 s of work on the\n"
    "                    CPU, 0.02 s on the GPU; 1 to 1e9), rounded up to a multiple of k;\n"
    "                    short runs show the clock a card starts at: where a long run\n"
    "                    meets its power limit (double on a 700 W H100 or H200: 5%\n"
    "                    slower), time runs as long as the run's with --steps\n"
    "  --materials       the variable-coefficient update (the deck's materials,\n"
    "                    sources, convective and flux faces): 4 materials and 8 classes\n"
    "                    (4 with a heat source), one drawn at random for every node;\n"
    "                    GB/s and % copy then count the class byte each update reads\n"
    "                    (2 * sizeof(value) + 1 bytes); one process only\n"
    "  --material-blocks N  --materials with the classes drawn per cube of N x N x N\n"
    "                    nodes (region maps) instead of per node (1 to 4096)\n"
    "  --json FILE       also write the table as JSON (with the machine and the ceiling),\n"
    "                    as FILE.partial, renamed to FILE when every row is in: a run\n"
    "                    that fails or is stopped leaves an earlier FILE as it was\n"
    "  --help            this text\n"
    "Options take their value as --option value or --option=value.\n"
    "\n"
    "Under MPI (mpirun -np N heat bench ...) the grid of each row is split over the N\n"
    "ranks as a run would split it, every rank sweeps its part and exchanges halos, and\n"
    "the rows give the slowest rank's time per step (GLUP/s for the whole grid) and\n"
    "three more columns: the halo exchange's pack, transfer and unpack times per time\n"
    "step (one exchange of k-deep halos every k steps, timed apart, nothing hidden).\n"
    "The copy is then each rank's copy of its part, and the check is not run.\n"
    "\n"
    "Backends built in: see heat --version. The CPU backend uses OpenMP (set\n"
    "OMP_NUM_THREADS to choose the thread count). Exit status: 0 done, 1 a kernel\n"
    "failed its check or the run failed (memory, a GPU that cannot be used, the JSON\n"
    "file), 2 bad options (cuda in a build without it included).\n";

typedef struct bench_row {
    char backend[64], kernel[32], precision[8];
    int64_t n[3];
    int k;         /* solver.temporal_block: time steps fused per pass */
    int materials; /* the variable-coefficient update (--materials): the classes' cube side */
    int steps, runs;
    double ms_per_step, glups, gbps, copy_gbps, percent;
    char check[32]; /* "exact", a relative difference, or "-" (the reference itself) */
    /* Under MPI: the ranks, and one halo exchange's parts (the slowest
     * rank's medians, ms) per time step (an exchange every k steps). */
    int ranks, split[3];
    double halo_pack, halo_transfer, halo_unpack;
} bench_row;

/* The grid limits of grid.points (input/deck_schema.c). */
#define SIZE_AXIS_MAX (INT64_C(1) << 40)
#define SIZE_ALL_MAX  0x1p50

const char *heat_cli_parse_size(const char *s, int64_t n[3])
{
    const char *bad = "expected NXxNYxNZ with each >= 3 (NZ = 1 for 2D)";
    long long m[3];
    const char *p = s;
    /* strtoll, not sscanf: a number beyond 64 bits comes back as LLONG_MAX
     * (a size too large) instead of undefined. */
    for (int a = 0; a < 3; a++) {
        char *end;
        m[a] = strtoll(p, &end, 10);
        if (end == p || *end != (a < 2 ? 'x' : '\0')) return bad;
        p = end + (a < 2);
    }
    if (m[0] < 3 || m[1] < 3 || (m[2] < 3 && m[2] != 1)) return bad;
    if (m[0] > SIZE_AXIS_MAX || m[1] > SIZE_AXIS_MAX || m[2] > SIZE_AXIS_MAX)
        return "at most 2^40 points along each axis";
    if ((double)m[0] * (double)m[1] * (double)m[2] > SIZE_ALL_MAX)
        return "at most 2^50 points in all (NX * NY * NZ)";
    for (int a = 0; a < 3; a++) n[a] = m[a];
    return NULL;
}

/* Random data, never zeros: values in [0, 1). */
static void fill_random(void *a, int64_t n, size_t vs, uint64_t seed)
{
    uint64_t state = seed;
    for (int64_t i = 0; i < n; i++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        double x = (double)(state >> 11) * 0x1.0p-53;
        if (vs == sizeof(float))
            ((float *)a)[i] = (float)x;
        else
            ((double *)a)[i] = x;
    }
}

/* One pass of `be` (k = solver.temporal_block steps, fused where the kernel
 * fuses them) against k steps of the CPU backend from the same field: "exact"
 * when bit-identical, else the largest relative difference. Returns
 * HEAT_ERUNTIME when the difference is beyond the precision's tolerance. */
static int check_against_cpu(const heat_case *c, heat_backend *be, const void *field,
                             const uint8_t *cls, const heat_coeffs *coeffs, bench_row *row,
                             heat_error *err)
{
    const size_t vs = heat_case_value_size(c), bytes = (size_t)c->d.points * vs;
    const int k = c->solver.temporal_block;
    heat_case rc_case = *c;
    rc_case.solver.backend = HEAT_BACKEND_CPU;
    rc_case.solver.temporal_block = 1;
    heat_backend *ref = NULL;
    void *want = malloc(bytes), *got = malloc(bytes);
    double r1 = 0, r2 = 0;
    int rc =
        !want || !got ? heat_error_set(err, HEAT_ERUNTIME, "cannot allocate the check") : HEAT_OK;
    if (!rc) rc = heat_backend_create(&rc_case, NULL, &ref, err);
    if (!rc && cls) rc = heat_backend_set_classes(ref, cls, coeffs, err);
    if (!rc) rc = heat_backend_upload(ref, field, err);
    if (!rc) rc = heat_backend_advance(ref, k, &r1, err);
    if (!rc) rc = heat_backend_download(ref, want, err);
    if (!rc) rc = heat_backend_upload(be, field, err);
    if (!rc) rc = heat_backend_advance(be, k, &r2, err);
    if (!rc) rc = heat_backend_download(be, got, err);
    if (!rc) {
        double worst = 0;
        int64_t where = -1;
        if (memcmp(want, got, bytes) != 0 || memcmp(&r1, &r2, sizeof r1) != 0) {
            for (int64_t i = 0; i < c->d.points; i++) {
                double x = vs == 4 ? ((float *)want)[i] : ((double *)want)[i];
                double y = vs == 4 ? ((float *)got)[i] : ((double *)got)[i];
                double d = fabs(x - y) / fmax(fabs(x), 1e-30);
                if (!(d <= worst)) worst = d, where = i;
            }
            double dr = fabs(r1 - r2) / fmax(fabs(r1), 1e-30);
            if (!(dr <= worst)) worst = dr;
        }
        const double tol = vs == 4 ? 1e-5 : 1e-12;
        if (where < 0 && worst == 0)
            snprintf(row->check, sizeof row->check, "exact");
        else
            snprintf(row->check, sizeof row->check, "%.1e", worst);
        if (!(worst <= tol))
            rc = heat_error_set(err, HEAT_ERUNTIME,
                                "kernel %s (%s, temporal_block %d) differs from the CPU backend "
                                "after %d step%s: relative difference %.3g at point %lld, more "
                                "than %.0e",
                                heat_kernel_name(c->solver.kernel),
                                heat_precision_name(c->solver.precision), k, k, k == 1 ? "" : "s",
                                worst, (long long)where, tol);
    }
    heat_backend_destroy(ref);
    free(want);
    free(got);
    return rc;
}

/* The deck of a bench row: all-Dirichlet faces, k = solver.temporal_block;
 * with `materials`, four materials (the conductivities of steel, copper,
 * aluminium and brick) instead of a diffusivity. */
static int bench_case(const int64_t n[3], const char *precision, const char *backend,
                      const char *kernel, int k, int materials, heat_case *c, heat_error *err)
{
    char deck[2048];
    snprintf(deck, sizeof deck,
             "grid = { points = [%lld, %lld, %lld]; length = [1.0, 1.0, 1.0]; };\n"
             "%s\n"
             "time = { max_steps = 1; };\n"
             "initial = { type = \"constant\"; value = 0.0; };\n"
             "boundary = {\n"
             "  x_lo = { type = \"dirichlet\"; value = 1.0; }; x_hi = { type = \"dirichlet\"; "
             "value = 0.0; };\n"
             "  y_lo = { type = \"dirichlet\"; value = 0.0; }; y_hi = { type = \"dirichlet\"; "
             "value = 0.0; };\n"
             "  z_lo = { type = \"dirichlet\"; value = 0.0; }; z_hi = { type = \"dirichlet\"; "
             "value = 0.0; };\n"
             "};\n"
             "solver = { backend = \"%s\"; precision = \"%s\"; kernel = \"%s\"; "
             "temporal_block = %d; };\n",
             (long long)n[0], (long long)n[1], (long long)n[2],
             materials ? "materials = (\n"
                         "  { name = \"steel\"; conductivity = 45.0; density = 7850.0; "
                         "specific_heat = 470.0; },\n"
                         "  { name = \"copper\"; conductivity = 390.0; density = 8940.0; "
                         "specific_heat = 385.0; },\n"
                         "  { name = \"aluminium\"; conductivity = 205.0; density = 2700.0; "
                         "specific_heat = 900.0; },\n"
                         "  { name = \"brick\"; conductivity = 0.7; density = 1900.0; "
                         "specific_heat = 840.0; } );"
                       : "material = { diffusivity = 1.0; };",
             backend, precision, kernel, k);
    int rc = heat_deck_load_string(deck, "bench", NULL, 0, c, NULL, NULL, err);
    return rc ? rc : heat_case_derive(c, err);
}

/* The classes of a --materials row: 8 (material i % 4, a source of
 * 1e6 W/m^3 for i >= 4), one at random per node or, with block > 1, per
 * cube of block^3 nodes, and their tables. */
static int bench_classes(const heat_case *c, int block, uint8_t **cls, heat_coeffs *k,
                         heat_error *err)
{
    heat_classes t = {0};
    t.count = 8;
    for (int i = 0; i < t.count; i++)
        t.material[i] = (uint8_t)(i % 4), t.power[i] = i < 4 ? 0 : 1e6;
    if (!(*cls = malloc((size_t)c->d.points)))
        return heat_error_set(err, HEAT_ERUNTIME, "cannot allocate the classes");
    uint64_t state = 0xc1a55;
    const int64_t B = block;
    const int64_t nb[3] = {(c->grid.n[0] + B - 1) / B, (c->grid.n[1] + B - 1) / B,
                           (c->grid.n[2] + B - 1) / B};
    uint8_t *blk = malloc((size_t)(nb[0] * nb[1] * nb[2]));
    if (!blk) {
        free(*cls);
        *cls = NULL;
        return heat_error_set(err, HEAT_ERUNTIME, "cannot allocate the classes");
    }
    for (int64_t i = 0; i < nb[0] * nb[1] * nb[2]; i++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        blk[i] = (uint8_t)(state >> 61);
    }
    for (int64_t i = 0; i < c->d.points; i++) {
        const int64_t x = i % c->grid.n[0], y = i / c->grid.n[0] % c->grid.n[1],
                      z = i / (c->grid.n[0] * c->grid.n[1]);
        (*cls)[i] = blk[(z / B * nb[1] + y / B) * nb[0] + x / B];
    }
    free(blk);
    return heat_case_coeffs(c, &t, k, err);
}

/* The row's figures from the medians: `copy_bytes` is what the copy moved
 * (each rank's share of the field under MPI). */
static int finish_row(bench_row *row, const heat_case *c, const int64_t n[3], const char *precision,
                      const char *backend, const char *kernel, int k, int steps, int runs,
                      double ms_copy, double ms_steps, size_t copy_bytes)
{
    const size_t vs = heat_case_value_size(c);
    const double step_s = ms_steps / 1e3 / steps, copy_s = ms_copy / 1e3;
    snprintf(row->backend, sizeof row->backend, "%s", backend);
    snprintf(row->kernel, sizeof row->kernel, "%s", kernel);
    snprintf(row->precision, sizeof row->precision, "%s", precision);
    memcpy(row->n, n, sizeof row->n);
    row->k = k;
    row->steps = steps;
    row->runs = runs;
    row->ms_per_step = 1e3 * step_s;
    row->glups = (double)c->d.points / step_s / 1e9;
    /* A general case also reads each node's class byte. */
    row->gbps = row->glups * (2.0 * (double)vs + (c->d.general ? 1.0 : 0.0));
    /* Under MPI the copy is per rank; the ranks copy at once. */
    row->copy_gbps = 2.0 * (double)copy_bytes * row->ranks / copy_s / 1e9;
    row->percent = 100.0 * row->gbps / row->copy_gbps;
    return HEAT_OK;
}

/* One row under MPI: the grid split over the ranks as a run would split it,
 * each rank's part swept and its halos exchanged; the slowest rank's times.
 * Collective: every rank runs every row. */
static int bench_part(heat_par *par, const heat_case *c, bench_row *row, int *steps, int runs,
                      double *ms_copy, double *ms_steps, size_t *copy_bytes, heat_error *err)
{
    heat_part part;
    heat_halo_comm hc;
    heat_backend *be = NULL;
    void *a = NULL;
    const size_t vs = heat_case_value_size(c);
    const int k = c->solver.temporal_block;
    int rc = heat_par_agree(par, heat_par_decompose(par, c, &part, err), err);
    if (rc) return rc;
    heat_par_halo_comm(par, &hc);
    rc = heat_par_agree(par, heat_backend_create_part(c, &part, &hc, NULL, &be, err), err);
    const int64_t points = part.n[0] * part.n[1] * part.n[2];
    if (!rc && !(a = malloc((size_t)points * vs)))
        rc = heat_error_set(err, HEAT_ERUNTIME, "cannot allocate %.3g GB",
                            (double)points * (double)vs / 1e9);
    if ((rc = heat_par_agree(par, rc, err))) goto out;
    fill_random(a, points, vs, 0x5eed + (uint64_t)part.rank);
    /* From here every call is collective (halos): a failure ends every rank. */
    if ((rc = heat_backend_upload(be, a, err))) heat_par_abort(par, 1, err->msg);
    double t0 = heat_wall_seconds();
    if ((rc = heat_backend_advance(be, 2 * k, NULL, err))) heat_par_abort(par, 1, err->msg);
    double per_step = (heat_wall_seconds() - t0) / (2 * k);
    heat_par_max(par, &per_step, 1); /* every rank the same step count */
    if (*steps <= 0) *steps = (int)fmax(1.0, fmin(1000.0, 0.05 / per_step));
    *steps = (*steps + k - 1) / k * k;
    if ((rc = heat_backend_bench_time(be, *steps, runs, ms_copy, ms_steps, err)))
        heat_par_abort(par, 1, err->msg);
    double pk = 0, tr = 0, un = 0;
    if ((rc = heat_backend_bench_halo(be, runs, &pk, &tr, &un, err)))
        heat_par_abort(par, 1, err->msg);
    double v[5] = {*ms_copy, *ms_steps, pk / k, tr / k, un / k};
    heat_par_max(par, v, 5);
    *ms_copy = v[0];
    *ms_steps = v[1];
    row->halo_pack = v[2];
    row->halo_transfer = v[3];
    row->halo_unpack = v[4];
    row->ranks = part.size;
    memcpy(row->split, part.ranks, sizeof row->split);
    *copy_bytes = (size_t)heat_split_local_values(&part) * vs;
out:
    heat_backend_destroy(be);
    free(a);
    return rc;
}

/* One row: a backend's kernel at this size and precision, fusing k steps per
 * pass (solver.temporal_block = k). */
static int bench_one(const int64_t n[3], const char *precision, const char *backend,
                     const char *kernel, int k, int materials, int runs, int steps_opt,
                     bench_row *row, heat_error *err)
{
    const int gpu = strcmp(backend, "cuda") == 0;
    heat_case c;
    int rc = bench_case(n, precision, backend, gpu ? kernel : heat_kernel_name(HEAT_KERNEL_FUSING),
                        k, materials, &c, err);
    if (rc) return rc;

    memset(row, 0, sizeof *row);
    snprintf(row->check, sizeof row->check, "-");
    row->materials = materials;
    const size_t vs = heat_case_value_size(&c), bytes = (size_t)c.d.points * vs;
    heat_par *par = heat_par_world();
    if (heat_par_size(par) > 1) {
        if (materials)
            return heat_error_set(err, HEAT_EINPUT,
                                  "--materials: one process only (a rank's "
                                  "part paints its own classes in a run)");
        int steps = steps_opt;
        double ms_copy = 0, ms_steps = 0;
        size_t copy_bytes = 0;
        if ((rc = bench_part(par, &c, row, &steps, runs, &ms_copy, &ms_steps, &copy_bytes, err)))
            return rc;
        return finish_row(row, &c, n, precision, backend, gpu ? kernel : "openmp", k, steps, runs,
                          ms_copy, ms_steps, copy_bytes);
    }
    void *a = malloc(bytes);
    heat_backend *be = NULL;
    uint8_t *cls = NULL;
    heat_coeffs coeffs = {0};
    if (!a) {
        rc = heat_error_set(err, HEAT_ERUNTIME, "cannot allocate %.3g GB", (double)bytes / 1e9);
        goto out;
    }
    fill_random(a, c.d.points, vs, 0x5eed);
    if ((rc = heat_backend_create(&c, NULL, &be, err))) goto out;
    if (materials && ((rc = bench_classes(&c, materials, &cls, &coeffs, err)) ||
                      (rc = heat_backend_set_classes(be, cls, &coeffs, err))))
        goto out;
    if (gpu && (rc = check_against_cpu(&c, be, a, cls, &coeffs, row, err))) goto out;
    if ((rc = heat_backend_upload(be, a, err))) goto out;
    /* Warm-up (two passes), and the step count per run: whole passes of k steps. */
    double t0 = heat_wall_seconds();
    if ((rc = heat_backend_advance(be, 2 * k, NULL, err))) goto out;
    double per_step = (heat_wall_seconds() - t0) / (2 * k);
    row->ranks = 1;
    row->split[0] = row->split[1] = row->split[2] = 1;
    int steps =
        steps_opt > 0 ? steps_opt : (int)fmax(1.0, fmin(1000.0, (gpu ? 0.02 : 0.05) / per_step));
    steps = (steps + k - 1) / k * k;
    double ms_copy = 0, ms_steps = 0;
    if ((rc = heat_backend_bench_time(be, steps, runs, &ms_copy, &ms_steps, err))) goto out;
    rc = finish_row(row, &c, n, precision, backend, gpu ? kernel : "openmp", k, steps, runs,
                    ms_copy, ms_steps, bytes);
out:
    heat_backend_destroy(be);
    heat_coeffs_free(&coeffs);
    free(cls);
    free(a);
    return rc;
}

static void cpu_name(char *buf, size_t n)
{
    snprintf(buf, n, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "model name", 10) == 0) {
            char *v = strchr(line, ':');
            if (v) {
                v += 2;
                v[strcspn(v, "\n")] = '\0';
                snprintf(buf, n, "%s", v);
            }
            break;
        }
    fclose(f);
}

_Static_assert(HEAT_TEMPORAL_BLOCK_MAX >= 8, "the default --temporal list goes up to 8");

/* Parses --temporal's "K[,K...]" into ks[] (each from 1 to HEAT_TEMPORAL_BLOCK_MAX,
 * increasing, repeats dropped); *nk is their count. Returns -1 with the first
 * bad element in bad[] when the list is not such a list. */
static int parse_temporal(const char *s, int ks[HEAT_TEMPORAL_BLOCK_MAX], int *nk, char *bad,
                          size_t nbad)
{
    int seen[HEAT_TEMPORAL_BLOCK_MAX + 1] = {0};
    const char *p = s;
    for (;;) {
        size_t len = strcspn(p, ",");
        char *end;
        errno = 0;
        long k = strtol(p, &end, 10);
        if (len == 0 || end != p + len || errno || k < 1 || k > HEAT_TEMPORAL_BLOCK_MAX) {
            snprintf(bad, nbad, "%.*s", (int)(len > 32 ? 32 : len), p);
            return -1;
        }
        seen[k] = 1;
        if (!p[len]) break;
        p += len + 1;
    }
    *nk = 0;
    for (int k = 1; k <= HEAT_TEMPORAL_BLOCK_MAX; k++)
        if (seen[k]) ks[(*nk)++] = k;
    return 0;
}

/* One row of the table, and of the JSON file when `jf` is not NULL. */
static void print_row(const bench_row *row, FILE *jf, int *first)
{
    char size[48];
    snprintf(size, sizeof size, "%lldx%lldx%lld", (long long)row->n[0], (long long)row->n[1],
             (long long)row->n[2]);
    printf("%-8s %-15s %2d %-16s %-9s %10.4f %9.3f %9.2f %9.2f %7.1f%% %8s", row->backend,
           row->kernel, row->k, size, row->precision, row->ms_per_step, row->glups, row->gbps,
           row->copy_gbps, row->percent, row->check);
    if (row->ranks > 1)
        printf(" %9.4f %9.4f %9.4f", row->halo_pack, row->halo_transfer, row->halo_unpack);
    printf("\n");
    fflush(stdout);
    if (jf) {
        fprintf(jf,
                "%s\n    {\"backend\": \"%s\", \"kernel\": \"%s\", \"temporal_block\": %d, "
                "\"materials\": %s, \"size\": [%lld, %lld, %lld], \"precision\": \"%s\", "
                "\"steps_per_run\": %d, "
                "\"ms_per_step\": %.6g, \"glups\": %.6g, \"achieved_gbps\": %.6g, "
                "\"peak_gbps\": %.6g, \"efficiency\": %.4f, \"check\": \"%s\", \"ranks\": %d, "
                "\"split\": [%d, %d, %d], \"halo_ms_per_step\": {\"pack\": %.6g, \"transfer\": "
                "%.6g, \"unpack\": %.6g}}",
                *first ? "" : ",", row->backend, row->kernel, row->k,
                row->materials ? "true" : "false", (long long)row->n[0], (long long)row->n[1],
                (long long)row->n[2], row->precision, row->steps, row->ms_per_step, row->glups,
                row->gbps, row->copy_gbps, row->percent / 100, row->check, row->ranks,
                row->split[0], row->split[1], row->split[2], row->halo_pack, row->halo_transfer,
                row->halo_unpack);
        *first = 0;
    }
}

/* What `heat bench` was asked for. */
typedef struct bench_opts {
    int64_t sizes[MAX_SIZES][3];
    int nsizes, runs, steps, want_f, want_d, materials;
    int want_cpu, want_cuda;             /* -1: decided by whether a GPU is usable */
    int backend_all;                     /* --backend all: the cuda rows where there is a GPU */
    unsigned kernel_mask;                /* bit k: heat_kernel k */
    const char *kernel;                  /* --kernel as given, or NULL */
    int ks[HEAT_TEMPORAL_BLOCK_MAX], nk; /* the k of the fusing kernel's rows */
    const char *json;
} bench_opts;

/* An integer option from lo to hi, or -1 after saying what is allowed. */
static long bench_int(const char *opt, const char *v, long lo, long hi)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (end == v || *end || errno || n < lo || n > hi) {
        fprintf(stderr, "heat bench: %s %s: expected an integer from %ld to %ld\n", opt, v, lo, hi);
        return -1;
    }
    return n;
}

/* The options that take a value: each sets it in `o` from `v` (the option
 * is `s`), returning 0, or -1 after saying what is wrong. */
static int set_material_blocks(bench_opts *o, const char *s, const char *v)
{
    const long n = bench_int(s, v, 1, 4096);
    if (n < 0) return -1;
    o->materials = (int)n;
    return 0;
}

static int set_size(bench_opts *o, const char *s, const char *v)
{
    (void)s;
    if (o->nsizes == MAX_SIZES) {
        fprintf(stderr, "heat bench: --size %s: at most %d sizes\n", v, MAX_SIZES);
        return -1;
    }
    const char *why = heat_cli_parse_size(v, o->sizes[o->nsizes]);
    if (why) {
        fprintf(stderr, "heat bench: --size %s: %s\n", v, why);
        return -1;
    }
    o->nsizes++;
    return 0;
}

static int set_precision(bench_opts *o, const char *s, const char *v)
{
    (void)s;
    o->want_f = !strcmp(v, "float") || !strcmp(v, "both");
    o->want_d = !strcmp(v, "double") || !strcmp(v, "both");
    if (!o->want_f && !o->want_d) {
        fprintf(stderr, "heat bench: --precision %s: expected float, double or both\n", v);
        return -1;
    }
    return 0;
}

static int set_backend(bench_opts *o, const char *s, const char *v)
{
    (void)s;
    o->want_cpu = !strcmp(v, "cpu") || !strcmp(v, "all");
    o->want_cuda = !strcmp(v, "cuda") || !strcmp(v, "all");
    o->backend_all = !strcmp(v, "all");
    if (!o->want_cpu && !o->want_cuda) {
        fprintf(stderr, "heat bench: --backend %s: expected cpu, cuda or all\n", v);
        return -1;
    }
    return 0;
}

static int set_kernel(bench_opts *o, const char *s, const char *v)
{
    (void)s;
    int k = heat_name_index(heat_kernel_names, v);
    o->kernel = v;
    o->kernel_mask = !strcmp(v, "all") ? (1u << HEAT_KERNEL_COUNT) - 1 : k >= 0 ? 1u << k : 0;
    if (!o->kernel_mask) {
        char list[128] = "";
        for (int i = 0; i < HEAT_KERNEL_COUNT; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                     heat_kernel_names[i]);
        fprintf(stderr, "heat bench: --kernel %s: expected %s or all\n", v, list);
        return -1;
    }
    return 0;
}

static int set_temporal(bench_opts *o, const char *s, const char *v)
{
    (void)s;
    char bad[40];
    if (parse_temporal(v, o->ks, &o->nk, bad, sizeof bad)) {
        const int part = bad[0] && strcmp(bad, v) != 0; /* name the bad one in a list */
        fprintf(stderr,
                "heat bench: --temporal %s: %s%sexpected integers from 1 to %d separated "
                "by commas (time steps fused per pass by the %s kernel)\n",
                v, part ? bad : "", part ? ": " : "", HEAT_TEMPORAL_BLOCK_MAX,
                heat_kernel_name(HEAT_KERNEL_FUSING));
        return -1;
    }
    return 0;
}

static int set_runs(bench_opts *o, const char *s, const char *v)
{
    return (o->runs = (int)bench_int(s, v, 3, 100000)) < 0 ? -1 : 0;
}

static int set_steps(bench_opts *o, const char *s, const char *v)
{
    return (o->steps = (int)bench_int(s, v, 1, 1000000000)) < 0 ? -1 : 0;
}

static int set_json(bench_opts *o, const char *s, const char *v)
{
    (void)s;
    if (!*v) {
        fprintf(stderr, "heat bench: --json: the file name is empty\n");
        return -1;
    }
    o->json = v;
    return 0;
}

static const struct {
    const char *name;
    int (*set)(bench_opts *, const char *, const char *);
} bench_valued[] = {
    {"--material-blocks", set_material_blocks},
    {"--size", set_size},
    {"--precision", set_precision},
    {"--backend", set_backend},
    {"--kernel", set_kernel},
    {"--temporal", set_temporal},
    {"--runs", set_runs},
    {"--steps", set_steps},
    {"--json", set_json},
};

/* Parses one option with its value `v` (may be NULL); returns the number of
 * arguments used (1 or 2), 0 after --help, or -1 after saying what is wrong. */
static int bench_option(bench_opts *o, const char *s, const char *v)
{
    if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
        fputs(usage_bench, stdout);
        return 0;
    }
    if (!strcmp(s, "--materials")) {
        if (!o->materials) o->materials = 1;
        return 1;
    }
    for (size_t i = 0; i < sizeof bench_valued / sizeof *bench_valued; i++) {
        if (strcmp(s, bench_valued[i].name)) continue;
        if (!v) {
            fprintf(stderr, "heat bench: %s needs a value (see heat bench --help)\n", s);
            return -1;
        }
        return bench_valued[i].set(o, s, v) ? -1 : 2;
    }
    fprintf(stderr, "heat bench: unknown or incomplete option %s (see heat bench --help)\n", s);
    return -1;
}

const char *heat_cli_split_option(const char *arg, char *name, size_t size)
{
    const char *eq = !strncmp(arg, "--", 2) ? strchr(arg, '=') : NULL;
    if (!eq || (size_t)(eq - arg) >= size) return NULL;
    memcpy(name, arg, (size_t)(eq - arg));
    name[eq - arg] = '\0';
    return eq + 1;
}

/* --json FILE is written as FILE.partial and renamed to FILE once every row
 * is in: a run that fails or is stopped (SIGINT, SIGTERM) leaves an earlier
 * FILE as it was, and the handler removes the partial one. */
static char json_partial[4096];

static void json_on_signal(int sig)
{
    unlink(json_partial);
    signal(sig, SIG_DFL);
    raise(sig);
}

FILE *heat_bench_json_open(const char *path)
{
    if ((size_t)snprintf(json_partial, sizeof json_partial, "%s.partial", path) >=
        sizeof json_partial) {
        fprintf(stderr, "heat bench: --json %s: the path is too long\n", path);
        return NULL;
    }
    FILE *f = fopen(json_partial, "w");
    if (!f) {
        fprintf(stderr, "heat bench: cannot write %s: %s\n", json_partial, strerror(errno));
        return NULL;
    }
    signal(SIGINT, json_on_signal);
    signal(SIGTERM, json_on_signal);
    return f;
}

/* Closes the partial file and puts it in place when the rows are all there
 * (rc 0); else removes it. Returns the exit status. */
int heat_bench_json_close(FILE *f, const char *path, int rc)
{
    const int closed = fclose(f) == 0;
    if (!rc && !closed) {
        fprintf(stderr, "heat bench: cannot write %s: %s\n", json_partial, strerror(errno));
        rc = 1;
    }
    if (!rc && rename(json_partial, path) != 0) {
        fprintf(stderr, "heat bench: cannot rename %s to %s: %s\n", json_partial, path,
                strerror(errno));
        rc = 1;
    }
    if (rc) {
        unlink(json_partial);
        fprintf(stderr, "heat bench: %s not written (an earlier one is left as it was)\n", path);
    }
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    return rc;
}

/* Every row asked for, printed as it is measured. Returns the exit status. */
static int bench_rows(const bench_opts *o, FILE *jf)
{
    int first = 1;
    for (int s = 0; s < o->nsizes; s++) {
        for (int p = 0; p < 2; p++) {
            if ((p == 0 && !o->want_f) || (p == 1 && !o->want_d)) continue;
            for (int kn = -1; kn < HEAT_KERNEL_COUNT; kn++) {
                /* kn = -1: the CPU backend; 0...: the GPU kernels. */
                if (kn < 0 ? !o->want_cpu : !o->want_cuda || !(o->kernel_mask & (1u << kn)))
                    continue;
                const int fuses = kn == HEAT_KERNEL_FUSING;
                for (int t = 0; t < (fuses ? o->nk : 1); t++) {
                    bench_row row;
                    heat_error err;
                    int rc =
                        bench_one(o->sizes[s], p == 0 ? "float" : "double", kn < 0 ? "cpu" : "cuda",
                                  kn < 0 ? "openmp" : heat_kernel_names[kn], fuses ? o->ks[t] : 1,
                                  o->materials, o->runs, o->steps, &row, &err);
                    if (rc) {
                        const int64_t *n = o->sizes[s];
                        fprintf(stderr,
                                "heat bench: the row of --size %lldx%lldx%lld, %s, backend %s: "
                                "%s\n",
                                (long long)n[0], (long long)n[1], (long long)n[2],
                                p == 0 ? "float" : "double", kn < 0 ? "cpu" : "cuda", err.msg);
                        return rc;
                    }
                    print_row(&row, jf, &first);
                }
            }
        }
    }
    return 0;
}

/* Which backends: a GPU where one is usable, unless told (1 when told
 * cuda without one, after saying why). Under MPI each rank on its own GPU,
 * and the GPU only when every rank has one. Then the default sizes. */
static int choose_backends(bench_opts *o)
{
    heat_par *par = heat_par_world();
    if (heat_par_size(par) > 1) {
        heat_halo_comm hc;
        heat_par_halo_comm(par, &hc);
        heat_backend_select_gpu(hc.node_rank);
    }
    char why[512];
    int gpu_ok = heat_backend_gpu_usable(why, sizeof why);
    double missing = !gpu_ok;
    heat_par_max(par, &missing, 1);
    if (missing > 0 && gpu_ok) {
        snprintf(why, sizeof why, "not every rank has a usable GPU");
        gpu_ok = 0;
    }
    if (o->want_cpu < 0) o->want_cpu = !gpu_ok, o->want_cuda = gpu_ok;
    if (o->want_cuda && !gpu_ok && o->backend_all) {
        fprintf(stderr, "notice: heat bench --backend all: no cuda rows (%s)\n", why);
        o->want_cuda = 0;
    }
    if (o->want_cuda && !gpu_ok) {
        /* a build without CUDA is told cpu, as a deck is (exit 2); a GPU
         * that cannot be used here is this machine's failing (exit 1) */
        const int built = heat_backend_has_gpu_build();
        fprintf(stderr, "heat bench: --backend cuda: %s%s\n", why, built ? "" : " (expected cpu)");
        return built ? 1 : 2;
    }
    if (o->kernel && !o->want_cuda) {
        fprintf(stderr,
                "heat bench: --kernel %s: the cpu backend has one kernel (openmp); --kernel "
                "chooses among the cuda backend's\n",
                o->kernel);
        return 2;
    }
    if (o->nsizes == 0) {
        int64_t cpu_def[2][3] = {{256, 256, 256}, {4096, 4096, 1}};
        int64_t gpu_def[2][3] = {{512, 512, 512}, {8192, 8192, 1}};
        memcpy(o->sizes, o->want_cuda ? gpu_def : cpu_def, sizeof cpu_def);
        o->nsizes = 2;
    }
    return 0;
}

int heat_cmd_bench(int argc, char **argv)
{
    bench_opts o = {.runs = 20,
                    .want_f = 1,
                    .want_d = 1,
                    .want_cpu = -1,
                    .want_cuda = -1,
                    .kernel_mask = (1u << HEAT_KERNEL_COUNT) - 1,
                    .ks = {1, 2, 3, 4, 6, 8},
                    .nk = 6};
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--multigrid")) return heat_bench_multigrid(argc, argv);
    for (int i = 0; i < argc;) {
        char name[64];
        const char *v = heat_cli_split_option(argv[i], name, sizeof name);
        if (v) {
            const int used = bench_option(&o, name, v);
            if (used == 1) {
                fprintf(stderr, "heat bench: %s takes no value\n", name);
                return 2;
            }
            if (used <= 0) return used < 0 ? 2 : 0;
            i++;
            continue;
        }
        int used = bench_option(&o, argv[i], i + 1 < argc ? argv[i + 1] : NULL);
        if (used <= 0) return used < 0 ? 2 : 0;
        i += used;
    }

    const int chosen = choose_backends(&o);
    if (chosen) return chosen;
    FILE *jf = NULL;
    /* rank 0 alone writes the JSON, as it alone prints */
    if (o.json && heat_par_rank(heat_par_world()) == 0 && !(jf = heat_bench_json_open(o.json)))
        return 1;
    char machine[256], gpu_name[256] = "";
    cpu_name(machine, sizeof machine);
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    if (o.want_cuda) heat_backend_gpu_name(gpu_name, sizeof gpu_name);
    printf("heat bench: %s, %d OpenMP thread%s%s%s; median of %d runs\n", machine, threads,
           threads == 1 ? "" : "s", gpu_name[0] ? "; GPU " : "", gpu_name, o.runs);
    if (o.materials == 1)
        printf("materials: 4 materials and 8 classes (4 with a heat source) at random per node; "
               "GB/s counts 2 * sizeof(value) + 1 bytes per update (the class byte)\n");
    else if (o.materials > 1)
        printf("materials: 4 materials and 8 classes (4 with a heat source), one at random per "
               "cube of %d^3 nodes; GB/s counts 2 * sizeof(value) + 1 bytes per update (the "
               "class byte)\n",
               o.materials);
    const int ranks = heat_par_size(heat_par_world());
    if (ranks > 1)
        printf("under MPI: %d ranks, each row's grid split as a run would split it; halo columns: "
               "ms per time step of the slowest rank\n",
               ranks);
    printf("%-8s %-15s %2s %-16s %-9s %10s %9s %9s %9s %8s %8s", "backend", "kernel", "k", "size",
           "precision", "ms/step", "GLUP/s", "GB/s", "copy GB/s", "% copy", "check");
    if (ranks > 1) printf(" %9s %9s %9s", "halo pack", "transfer", "unpack");
    printf("\n");
    if (jf)
        fprintf(jf,
                "{\n  \"cpu\": \"%s\",\n  \"threads\": %d,\n  \"device\": \"%s\",\n  \"runs\": "
                "%d,\n  \"rows\": [",
                machine, threads, gpu_name[0] ? gpu_name : machine, o.runs);
    int rc = bench_rows(&o, jf);
    if (jf) {
        fprintf(jf, "\n  ]\n}\n");
        rc = heat_bench_json_close(jf, o.json, rc);
    }
    return rc;
}
