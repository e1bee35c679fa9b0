/* The CUDA backend against the CPU backend (the oracle).
 *
 * Every kernel, in float and double, 2D and 3D, with every per-face boundary
 * combination, on random data of awkward sizes (and sizes whose rows take the
 * 16-byte path), 50 steps: the GPU field must equal the CPU field value for
 * value. The kernels are built to reproduce the CPU's arithmetic exactly
 * (same order, no contracted multiply-adds), so the test asks for equality;
 * the tolerances (1e-5 relative in float, 1e-12 in double) are the
 * floor below which a difference would be a bug in any case. The next time
 * level is poisoned with NaN before each run, so a point a kernel never
 * writes shows up.
 *
 * Temporal blocking (register_tiled with solver.temporal_block = k > 1: k
 * steps fused per pass over GPU memory, a shorter pass for the remainder) is
 * held to the same standard: every k from 2 to 8 against the CPU, every
 * face combination, step counts that are no multiple of k, several calls on
 * one backend, and a whole run through the driver whose snapshots,
 * checkpoints, history and restart must match a CPU run bit for bit.
 *
 * Without a usable CUDA device (or without CUDA in the build) the program
 * says why and exits with 77, which ctest reports as skipped.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend.h"
#include "deck.h"
#include "driver.h"
#include "h5file.h"
#include "output.h"
#include "heat_case.h"
#include "test_util.h"

/* The GPU kernels, from the one table of their names. */
#define kernels heat_kernel_names

/* The five ways an axis can be bounded: DD, DN, ND, NN, PP. */
static const int axis_kinds[5][2] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}, {2, 2}};

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * 0x1.0p-53;
}

/* A case of the given size, face types (0 D, 1 N, 2 P), precision, backend,
 * kernel and solver.temporal_block; anisotropic lengths and random Neumann
 * gradients. */
static void make_case(heat_case *c, const int64_t n[3], const int types[6], const char *prec,
                      const char *backend, const char *kernel, int temporal_block,
                      const double grads[6])
{
    static const char *const faces[] = {"x_lo", "x_hi", "y_lo", "y_hi", "z_lo", "z_hi"};
    char deck[4096], *p = deck;
    const char *end = deck + sizeof deck;
    p += snprintf(p, (size_t)(end - p),
                  "grid = { points = [%lld, %lld, %lld]; length = [1.0, 0.37, 2.3]; };\n"
                  "material = { diffusivity = 0.01; };\ntime = { max_steps = 50; };\n"
                  "initial = { type = \"constant\"; value = 1.0; };\n"
                  "solver = { backend = \"%s\"; precision = \"%s\"; kernel = \"%s\";\n"
                  "           temporal_block = %d; };\n"
                  "boundary = {\n",
                  (long long)n[0], (long long)n[1], (long long)n[2], backend, prec, kernel,
                  temporal_block);
    const int nf = n[2] == 1 ? 4 : 6;
    for (int f = 0; f < nf; f++) {
        if (types[f] == 0)
            p += snprintf(p, (size_t)(end - p), "  %s = { type = \"dirichlet\"; value = 0.5; };\n",
                          faces[f]);
        else if (types[f] == 1)
            p +=
                snprintf(p, (size_t)(end - p),
                         "  %s = { type = \"neumann\"; gradient = %.17g; };\n", faces[f], grads[f]);
        else
            p += snprintf(p, (size_t)(end - p), "  %s = { type = \"periodic\"; };\n", faces[f]);
    }
    snprintf(p, (size_t)(end - p), "};\n");
    test_load_case(deck, "test_gpu", NULL, c);
}

static void fill(void *f, int64_t n, size_t vs)
{
    for (int64_t i = 0; i < n; i++) {
        double x = 0.25 + rnd(); /* never zero */
        if (vs == 4)
            ((float *)f)[i] = (float)x;
        else
            ((double *)f)[i] = x;
    }
}

/* Fills the next time level of a CUDA backend with NaN (the backend's
 * poison_next test hook). */
static void poison_next(heat_backend *b)
{
    heat_error err;
    if (heat_backend_poison_next(b, &err)) fail_msg("poison: %s", err.msg);
}

/* Runs `steps` steps of `c` (residual on the last) from `field`; the final
 * field goes to `out`, the residual to *res. */
static void run_backend(const heat_case *c, const void *field, int64_t steps, void *out,
                        double *res, int poison)
{
    heat_backend *b = NULL;
    heat_error err;
    if (heat_backend_create(c, NULL, &b, &err)) fail_msg("backend: %s", err.msg);
    if (heat_backend_upload(b, field, &err)) fail_msg("upload: %s", err.msg);
    if (poison) poison_next(b);
    if (heat_backend_advance(b, steps, res, &err)) fail_msg("advance: %s", err.msg);
    if (heat_backend_download(b, out, &err)) fail_msg("download: %s", err.msg);
    heat_backend_destroy(b);
}

/* Equal value for value (NaN never equal); on a mismatch, reports the first
 * one with its coordinates and the largest relative difference. */
static int compare(const heat_case *c, const void *want, const void *got, const char *what)
{
    const size_t vs = heat_case_value_size(c);
    const int64_t nx = c->grid.n[0], ny = c->grid.n[1];
    int64_t bad = 0, first = -1;
    double worst = 0;
    for (int64_t i = 0; i < c->d.points; i++) {
        double x = vs == 4 ? ((const float *)want)[i] : ((const double *)want)[i];
        double y = vs == 4 ? ((const float *)got)[i] : ((const double *)got)[i];
        if (x == y) continue;
        double d = fabs(x - y) / fmax(fabs(x), 1e-300);
        if (!(d <= worst)) worst = d;
        if (first < 0) first = i;
        bad++;
    }
    if (bad) {
        double x = vs == 4 ? ((const float *)want)[first] : ((const double *)want)[first];
        double y = vs == 4 ? ((const float *)got)[first] : ((const double *)got)[first];
        print_error("%s: %lld of %lld points differ, largest relative difference %.3g (tolerance "
                    "%.0e); first at (%lld, %lld, %lld): cpu %.17g, gpu %.17g\n",
                    what, (long long)bad, (long long)c->d.points, worst, vs == 4 ? 1e-5 : 1e-12,
                    (long long)(first % nx), (long long)(first / nx % ny),
                    (long long)(first / (nx * ny)), x, y);
    }
    return bad == 0;
}

/* One way of running the GPU side: a kernel and the steps it fuses per pass
 * (solver.temporal_block). */
typedef struct gpu_variant {
    const char *kernel;
    int depth;
} gpu_variant;

/* The temporal blocking depths under test: register_tiled fusing 2 to 8
 * steps per pass (each depth is a kernel of its own). */
static const gpu_variant temporal[] = {
    {"register_tiled", 2}, {"register_tiled", 3}, {"register_tiled", 4}, {"register_tiled", 5},
    {"register_tiled", 6}, {"register_tiled", 7}, {"register_tiled", 8}};
#define N_TEMPORAL ((int)(sizeof temporal / sizeof temporal[0]))

/* Every variant and precision for one size and set of face types, `steps`
 * steps with the residual; the CPU reference is computed once per precision.
 * Returns the failures. */
static int check_variants(const int64_t n[3], const int types[6], int64_t steps,
                          const gpu_variant *v, int nv)
{
    int failures = 0;
    double grads[6];
    for (int f = 0; f < 6; f++) grads[f] = 2.0 * rnd() - 1.0;
    for (int p = 0; p < 2; p++) {
        const char *prec = p ? "double" : "float";
        heat_case ref;
        make_case(&ref, n, types, prec, "cpu", "register_tiled", 1, grads);
        const size_t vs = heat_case_value_size(&ref), bytes = (size_t)ref.d.points * vs;
        void *field = malloc(bytes), *want = malloc(bytes), *got = malloc(bytes);
        assert_non_null(field);
        assert_non_null(want);
        assert_non_null(got);
        fill(field, ref.d.points, vs);
        double rw = 0;
        run_backend(&ref, field, steps, want, &rw, 0);
        for (int k = 0; k < nv; k++) {
            heat_case c;
            make_case(&c, n, types, prec, "cuda", v[k].kernel, v[k].depth, grads);
            double rg = -1;
            memset(got, 0, bytes);
            run_backend(&c, field, steps, got, &rg, 1);
            char what[256], depth[64] = "";
            if (v[k].depth > 1)
                snprintf(depth, sizeof depth, " temporal_block %d, %lld steps", v[k].depth,
                         (long long)steps);
            snprintf(what, sizeof what, "%s%s %s %lldx%lldx%lld faces %d%d %d%d %d%d", v[k].kernel,
                     depth, prec, (long long)n[0], (long long)n[1], (long long)n[2], types[0],
                     types[1], types[2], types[3], types[4], types[5]);
            int ok = compare(&ref, want, got, what);
            if (rw != rg) {
                print_error("%s: residual cpu %.17g, gpu %.17g\n", what, rw, rg);
                ok = 0;
            }
            failures += !ok;
        }
        free(field);
        free(want);
        free(got);
    }
    return failures;
}

/* Every kernel in `kmask` (bit k: kernels[k]; ALL_KERNELS), one step per pass. */
#define ALL_KERNELS ((1u << HEAT_KERNEL_COUNT) - 1)
static int check_all(const int64_t n[3], const int types[6], int64_t steps, unsigned kmask)
{
    gpu_variant v[HEAT_KERNEL_COUNT];
    int nv = 0;
    for (int k = 0; k < HEAT_KERNEL_COUNT; k++)
        if (kmask & (1u << k)) v[nv++] = (gpu_variant){kernels[k], 1};
    return check_variants(n, types, steps, v, nv);
}

/* Every per-face combination (125 in 3D, 25 in 2D) on small grids: odd sizes
 * (one value per thread) and sizes whose rows take the 16-byte path, with a
 * partial tile at the end of x. */
static void test_every_face_combination(void **state)
{
    (void)state;
    const int64_t sizes3[][3] = {{33, 17, 9}, {36, 11, 7}, {136, 19, 10}};
    const int64_t sizes2[][3] = {{37, 23, 1}, {40, 21, 1}, {516, 9, 1}};
    int failures = 0, runs = 0;
    for (int s = 0; s < 3; s++)
        for (int a = 0; a < 5; a++)
            for (int b = 0; b < 5; b++) {
                for (int z = 0; z < 5; z++) {
                    const int t[6] = {axis_kinds[a][0], axis_kinds[a][1], axis_kinds[b][0],
                                      axis_kinds[b][1], axis_kinds[z][0], axis_kinds[z][1]};
                    failures += check_all(sizes3[s], t, 50, ALL_KERNELS);
                    runs++;
                }
                const int t2[6] = {
                    axis_kinds[a][0], axis_kinds[a][1], axis_kinds[b][0], axis_kinds[b][1], 0, 0};
                failures += check_all(sizes2[s], t2, 50, ALL_KERNELS);
                runs++;
            }
    print_message("%d face combinations x 4 kernels x 2 precisions, %d failures\n", runs, failures);
    assert_int_equal(failures, 0);
}

/* Larger awkward grids, several tiles and runs of planes, a few face mixes. */
static void test_awkward_sizes(void **state)
{
    (void)state;
    const int64_t sizes[][3] = {{257, 255, 130}, {256, 130, 67}, {1000, 3, 1}, {8, 1000, 1},
                                {1027, 515, 1},  {3, 3, 3},      {5, 300, 4}};
    const int mixes[][6] = {
        {0, 0, 0, 0, 0, 0}, {2, 2, 2, 2, 2, 2}, {1, 1, 1, 1, 1, 1}, {0, 1, 2, 2, 1, 0}};
    int failures = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int m = 0; m < 4; m++) failures += check_all(sizes[s], mixes[m], 50, ALL_KERNELS);
    assert_int_equal(failures, 0);
}

/* A grid of more than 2^31 points: 64-bit offsets in every kernel. */
static void test_more_than_2_31_points(void **state)
{
    (void)state;
    const int64_t n[3] = {2048, 1024, 1040};
    const int t[6] = {1, 0, 2, 2, 0, 1};
    heat_case c;
    double grads[6] = {0.5, 0, 0, 0, 0, -0.25};
    make_case(&c, n, t, "float", "cuda", "register_tiled", 1, grads);
    assert_true(c.d.points > (INT64_C(1) << 31));
    heat_backend *b = NULL;
    heat_error err;
    if (heat_backend_create(&c, NULL, &b, &err)) {
        print_message("skipped: %s\n", err.msg);
        skip();
    }
    heat_backend_destroy(b);
    /* register_tiled (the 16-byte path) and naive; 2 steps each. */
    assert_int_equal(check_all(n, t, 2, 1u << HEAT_KERNEL_REGISTER_TILED | 1u << HEAT_KERNEL_NAIVE),
                     0);
}

/* A non-finite field is reported through the residual, as on the CPU. */
static void test_nan_reaches_the_residual(void **state)
{
    (void)state;
    const int64_t n[3] = {40, 20, 10};
    const int t[6] = {1, 1, 2, 2, 0, 0};
    const double g[6] = {0};
    for (int k = 0; k < HEAT_KERNEL_COUNT; k++) {
        heat_case c;
        make_case(&c, n, t, "double", "cuda", kernels[k], 1, g);
        double *f = malloc((size_t)c.d.points * sizeof *f), *out = malloc((size_t)c.d.points * 8);
        assert_non_null(f);
        assert_non_null(out);
        fill(f, c.d.points, 8);
        f[5 + 40 * (7 + 20 * 4)] = NAN;
        double r = 0;
        run_backend(&c, f, 3, out, &r, 0);
        assert_true(isinf(r));
        free(f);
        free(out);
    }
}

/* A field that cannot fit: the message names the bytes needed and free. */
static void test_out_of_memory_message(void **state)
{
    (void)state;
    const int64_t n[3] = {20000, 20000, 20000};
    const int t[6] = {0};
    const double g[6] = {0};
    heat_case c;
    make_case(&c, n, t, "double", "cuda", "register_tiled", 1, g);
    heat_backend *b = NULL;
    heat_error err;
    assert_int_equal(heat_backend_create(&c, NULL, &b, &err), HEAT_ERUNTIME);
    assert_null(b);
    print_message("%s\n", err.msg);
    assert_non_null(strstr(err.msg, "128000.000 GB needed"));
    assert_non_null(strstr(err.msg, "GB free of"));
}

/* ---- temporal blocking ---------------------------------------------------- */

/* Every per-face combination (125 in 3D, 25 in 2D) with k = 2 to 8 steps
 * per pass and 19 steps, no multiple of most of them (for k = 8: two passes
 * of 8 and one of 3), the residual of the last step asked for; odd sizes and
 * sizes whose nx is a multiple of 4 (the 16-byte rows). */
static void test_temporal_every_face_combination(void **state)
{
    (void)state;
    const int64_t sizes3[][3] = {{37, 19, 11}, {40, 13, 9}};
    const int64_t sizes2[][3] = {{45, 29, 1}, {132, 17, 1}};
    int failures = 0, combos = 0;
    for (int s = 0; s < 2; s++)
        for (int a = 0; a < 5; a++)
            for (int b = 0; b < 5; b++) {
                for (int z = 0; z < 5; z++) {
                    const int t[6] = {axis_kinds[a][0], axis_kinds[a][1], axis_kinds[b][0],
                                      axis_kinds[b][1], axis_kinds[z][0], axis_kinds[z][1]};
                    failures += check_variants(sizes3[s], t, 19, temporal, N_TEMPORAL);
                    combos++;
                }
                const int t2[6] = {
                    axis_kinds[a][0], axis_kinds[a][1], axis_kinds[b][0], axis_kinds[b][1], 0, 0};
                failures += check_variants(sizes2[s], t2, 19, temporal, N_TEMPORAL);
                combos++;
            }
    print_message("temporal blocking: %d face combinations x %d depths x 2 precisions = %d cases, "
                  "%d failures\n",
                  combos, N_TEMPORAL, combos * N_TEMPORAL * 2, failures);
    assert_int_equal(failures, 0);
}

/* Larger awkward grids with temporal blocking: several windows in x and y,
 * blocks whose share of the planes ends inside a window or runs on into the
 * next (a tall thin grid: several blocks on one window), grids thinner than
 * a pass is deep, a few face mixes. */
static void test_temporal_awkward_sizes(void **state)
{
    (void)state;
    const int64_t sizes[][3] = {{257, 131, 70}, {130, 67, 45}, {40, 13, 300}, {1027, 515, 1},
                                {8, 1000, 1},   {1000, 3, 1},  {3, 3, 3},     {5, 300, 4}};
    const int mixes[][6] = {
        {0, 0, 0, 0, 0, 0}, {2, 2, 2, 2, 2, 2}, {1, 1, 1, 1, 1, 1}, {0, 1, 2, 2, 1, 0}};
    int failures = 0, cases = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int m = 0; m < 4; m++) {
            failures += check_variants(sizes[s], mixes[m], 19, temporal, N_TEMPORAL);
            cases += 2 * N_TEMPORAL;
        }
    print_message("temporal blocking, awkward sizes: %d cases, %d failures\n", cases, failures);
    assert_int_equal(failures, 0);
}

/* Every step count from 1 to 2k + 1 for every k from 2 to 8 (less than one
 * pass, whole passes, passes and a remainder), with and without the
 * residual; and 19 steps in five calls of mixed lengths on one backend, the
 * field downloaded after each: the field after n steps must be the CPU's
 * after n steps however the steps are split into calls and passes. */
static void test_temporal_every_step_count(void **state)
{
    (void)state;
    enum { MAX_STEPS = 19 };
    const int64_t sizes[2][3] = {{37, 19, 11}, {45, 29, 1}};
    const int types[2][6] = {{0, 1, 2, 2, 1, 0}, {2, 2, 1, 0, 0, 0}};
    const int64_t calls[] = {3, 8, 1, 5, 2}; /* MAX_STEPS in all */
    const int ncalls = (int)(sizeof calls / sizeof calls[0]);
    int failures = 0, runs = 0, split = 0;
    for (int s = 0; s < 2; s++)
        for (int p = 0; p < 2; p++) {
            const char *prec = p ? "double" : "float";
            double grads[6];
            for (int f = 0; f < 6; f++) grads[f] = 2.0 * rnd() - 1.0;
            heat_case ref;
            make_case(&ref, sizes[s], types[s], prec, "cpu", "register_tiled", 1, grads);
            const size_t vs = heat_case_value_size(&ref), bytes = (size_t)ref.d.points * vs;
            void *field = malloc(bytes), *got = malloc(bytes);
            char *want = malloc(bytes * (MAX_STEPS + 1)); /* the CPU's field after n steps */
            double rw[MAX_STEPS + 1];                     /* and its residual */
            assert_non_null(field);
            assert_non_null(got);
            assert_non_null(want);
            fill(field, ref.d.points, vs);

            /* A run of its own for each step count, the residual on its last step,
             * as the driver would ask for it. */
            memcpy(want, field, bytes);
            rw[0] = NAN;
            for (int n = 1; n <= MAX_STEPS; n++)
                run_backend(&ref, field, n, want + (size_t)n * bytes, &rw[n], 0);

            for (int depth = 2; depth <= 8; depth++) {
                heat_case c;
                make_case(&c, sizes[s], types[s], prec, "cuda", "register_tiled", depth, grads);
                char what[256];
                for (int n = 1; n <= 2 * depth + 1; n++)
                    for (int resid = 0; resid < 2; resid++) {
                        double rg = -1;
                        memset(got, 0, bytes);
                        run_backend(&c, field, n, got, resid ? &rg : NULL, 1);
                        snprintf(what, sizeof what,
                                 "temporal_block %d, %d steps%s, %s %lldx%lldx%lld", depth, n,
                                 resid ? " with the residual" : "", prec, (long long)sizes[s][0],
                                 (long long)sizes[s][1], (long long)sizes[s][2]);
                        int ok = compare(&ref, want + (size_t)n * bytes, got, what);
                        if (resid && rg != rw[n]) {
                            print_error("%s: residual cpu %.17g, gpu %.17g\n", what, rw[n], rg);
                            ok = 0;
                        }
                        failures += !ok;
                        runs++;
                    }

                heat_backend *b = NULL;
                heat_error err;
                if (heat_backend_create(&c, NULL, &b, &err)) fail_msg("backend: %s", err.msg);
                /* Else every test here would pass on single steps. */
                char fused[64];
                snprintf(fused, sizeof fused, "%d steps per pass", depth);
                if (!strstr(heat_backend_describe(b), fused))
                    fail_msg("temporal_block %d: the backend (\"%s\") does not say \"%s\"", depth,
                             heat_backend_describe(b), fused);
                if (heat_backend_upload(b, field, &err)) fail_msg("upload: %s", err.msg);
                int64_t done = 0;
                for (int i = 0; i < ncalls; i++) {
                    /* The residual on the second call and the last. */
                    const int resid = i == 1 || i == ncalls - 1;
                    double rg = -1;
                    poison_next(b);
                    if (heat_backend_advance(b, calls[i], resid ? &rg : NULL, &err))
                        fail_msg("advance: %s", err.msg);
                    done += calls[i];
                    memset(got, 0, bytes);
                    if (heat_backend_download(b, got, &err)) fail_msg("download: %s", err.msg);
                    snprintf(what, sizeof what,
                             "temporal_block %d, call %d of %lld steps (step %lld), %s "
                             "%lldx%lldx%lld",
                             depth, i + 1, (long long)calls[i], (long long)done, prec,
                             (long long)sizes[s][0], (long long)sizes[s][1],
                             (long long)sizes[s][2]);
                    int ok = compare(&ref, want + (size_t)done * bytes, got, what);
                    if (resid && rg != rw[done]) {
                        print_error("%s: residual cpu %.17g, gpu %.17g\n", what, rw[done], rg);
                        ok = 0;
                    }
                    failures += !ok;
                }
                assert_int_equal(done, MAX_STEPS);
                heat_backend_destroy(b);
                split++;
            }
            free(field);
            free(got);
            free(want);
        }
    print_message("temporal blocking: %d runs of 1 to 2k + 1 steps, %d runs in %d calls each, %d "
                  "failures\n",
                  runs, split, ncalls, failures);
    assert_int_equal(failures, 0);
}

/* A NaN in the field is reported through the residual as Inf with temporal
 * blocking too, as by the single-step kernels: when the last pass is a
 * remainder, one whole pass or passes and a remainder, from inside the grid
 * or from a Neumann face on the periodic seam. */
static void test_temporal_nan_reaches_the_residual(void **state)
{
    (void)state;
    const int64_t n[3] = {40, 20, 10};
    const int t[6] = {1, 1, 2, 2, 0, 0};
    const double g[6] = {0};
    const int64_t at[2] = {5 + 40 * (7 + 20 * 4), 40 * 20 * 4}; /* (5, 7, 4), (0, 0, 4) */
    const int64_t steps[3] = {3, 4, 9};
    int failures = 0;
    for (int p = 0; p < 2; p++)
        for (int d = 0; d < N_TEMPORAL; d++) {
            heat_case c;
            make_case(&c, n, t, p ? "double" : "float", "cuda", temporal[d].kernel,
                      temporal[d].depth, g);
            const size_t vs = heat_case_value_size(&c), bytes = (size_t)c.d.points * vs;
            void *f = malloc(bytes), *out = malloc(bytes);
            assert_non_null(f);
            assert_non_null(out);
            for (int a = 0; a < 2; a++)
                for (int s = 0; s < 3; s++) {
                    fill(f, c.d.points, vs);
                    if (vs == 4)
                        ((float *)f)[at[a]] = NAN;
                    else
                        ((double *)f)[at[a]] = NAN;
                    double r = 0;
                    run_backend(&c, f, steps[s], out, &r, 0);
                    if (!isinf(r)) {
                        print_error("temporal_block %d, %s, NaN at index %lld, %lld steps: "
                                    "residual %g, want Inf\n",
                                    temporal[d].depth, p ? "double" : "float", (long long)at[a],
                                    (long long)steps[s], r);
                        failures++;
                    }
                }
            free(f);
            free(out);
        }
    assert_int_equal(failures, 0);
}

/* ---- temporal blocking through the driver --------------------------------- */

/* The deck of the driver test; grid, precision, backend, temporal_block,
 * the initial field file and output.dir come as overrides. Checks every 5
 * steps, snapshots every 7, checkpoints every 10 (all kept): with 4 or 3
 * steps per pass, most of them fall inside a pass. */
static const char driver_deck[] =
    "name = \"temporal\";\n"
    "grid = { points = [61, 37, 29]; length = [1.0, 0.6, 0.45]; };\n"
    "material = { diffusivity = 0.01; };\n"
    "time = { max_steps = 45; };\n"
    "steady = { tolerance = 1e-300; check_every = 5; };\n"
    "initial = { type = \"constant\"; value = 1.0; };\n"
    "boundary = {\n"
    "  x_lo = { type = \"dirichlet\"; value = 0.5; };\n"
    "  x_hi = { type = \"neumann\"; gradient = 0.75; };\n"
    "  y_lo = { type = \"periodic\"; };\n"
    "  y_hi = { type = \"periodic\"; };\n"
    "  z_lo = { type = \"neumann\"; gradient = -0.5; };\n"
    "  z_hi = { type = \"dirichlet\"; value = 1.5; };\n"
    "};\n"
    "output = { every = 7; checkpoint_every = 10; keep_checkpoints = 10; };\n"
    "solver = { kernel = \"register_tiled\"; };\n";

typedef struct driver_run {
    heat_case c;
    char *text; /* the canonical deck */
    char dir[4096];
} driver_run;

/* Loads driver_deck with output.dir = `dir`, the initial field from the file
 * `init` (NULL: the deck's constant) and the overrides `sets`
 * (NULL-terminated); derives it. */
static void load_driver_run(driver_run *r, const char *dir, const char *init,
                            const char *const *sets)
{
    memset(r, 0, sizeof *r);
    snprintf(r->dir, sizeof r->dir, "%s", dir);
    test_sets s = {0};
    test_sets_add(&s, "output.dir=\"%s\"", dir);
    if (init) test_sets_add(&s, "initial={type=\"file\"; path=\"%s\";}", init);
    for (int i = 0; sets[i]; i++) test_sets_add(&s, "%s", sets[i]);
    test_load_case_text(driver_deck, "test_gpu", &s, &r->c, &r->text);
}

/* heat_run, quiet; fails the test unless it returns HEAT_OK. */
static void run_driver(const driver_run *r, const char *restart, void *field_out,
                       heat_run_result *res)
{
    heat_run_options opt = {0};
    opt.restart = restart;
    opt.quiet = 1;
    opt.out = stdout;
    opt.notices = stderr;
    opt.field_out = field_out;
    heat_error err;
    heat_error_clear(&err);
    int rc = heat_run(&r->c, r->text, &opt, res, &err);
    if (rc != HEAT_OK) fail_msg("heat_run (%s) returned %d: %s", r->dir, rc, err.msg);
}

static void field_file_path(char *buf, size_t n, const driver_run *r, int checkpoint, int64_t step)
{
    if (checkpoint)
        heat_output_checkpoint_path(buf, n, r->dir, r->c.name, step);
    else
        heat_output_snapshot_path(buf, n, r->dir, r->c.name, step);
}

/* The snapshot (or checkpoint) at `step` of run `want` (the CPU's) against
 * that of run `got`: both absent, or both there with the same step, time and
 * field. Returns 1 when there were files to compare; failures are counted. */
static int compare_field_files(const driver_run *want, const driver_run *got, int checkpoint,
                               int64_t step, int *failures)
{
    char pw[4400], pg[4400];
    field_file_path(pw, sizeof pw, want, checkpoint, step);
    field_file_path(pg, sizeof pg, got, checkpoint, step);
    const int ew = test_exists(pw), eg = test_exists(pg);
    if (ew != eg) {
        print_error("%s %s, but %s %s\n", pw, ew ? "exists" : "does not exist", pg,
                    eg ? "exists" : "does not exist");
        (*failures)++;
        return 0;
    }
    if (!ew) return 0;
    heat_file_meta mw, mg;
    void *fw = test_read_field(pw, &mw), *fg = test_read_field(pg, &mg);
    if (mw.step != step || mg.step != step || mw.time != mg.time || mw.dt != mg.dt) {
        print_error("%s: step %lld, t %.17g, dt %.17g; %s: step %lld, t %.17g, dt %.17g\n", pw,
                    (long long)mw.step, mw.time, mw.dt, pg, (long long)mg.step, mg.time, mg.dt);
        (*failures)++;
    }
    if (mw.precision != want->c.solver.precision || mg.precision != want->c.solver.precision) {
        print_error("%s or %s: not in the run's precision\n", pw, pg);
        (*failures)++;
    } else if (!compare(&want->c, fw, fg, pg)) {
        (*failures)++;
    }
    heat_file_meta_free(&mw);
    heat_file_meta_free(&mg);
    free(fw);
    free(fg);
    return 1;
}

/* history.csv of a run without its wall-clock column: step, time and
 * residual of each row, a line each (malloc'd). */
static char *history_rows(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/history.csv", dir);
    char *text = test_read_file(path);
    if (!text) fail_msg("cannot read %s", path);
    char *rows = malloc(strlen(text) + 2), *o = rows;
    assert_non_null(rows);
    for (const char *line = text; *line;) {
        const char *nl = strchr(line, '\n');
        const size_t len = nl ? (size_t)(nl - line) : strlen(line);
        size_t keep = len;
        for (size_t i = 0; i < len; i++)
            if (line[i] == ',') keep = i;
        memcpy(o, line, keep);
        o += keep;
        *o++ = '\n';
        line += len + (nl ? 1 : 0);
    }
    *o = '\0';
    free(text);
    return rows;
}

/* A whole run through heat_run on the GPU with temporal_block = 4 against
 * the same deck on the CPU: the final field, the residual, every snapshot
 * and checkpoint (at steps 7, 21, 45, ..., mostly inside a pass) and the
 * residuals in history.csv, bit for bit. Then restarts with temporal_block =
 * 3: from the checkpoint at step 30 by its path into a fresh directory, and
 * with "latest" after a run stopped at step 30; both must end on the
 * uninterrupted run's field at step 45. In 3D (float) and 2D (double), from a
 * random initial field. */
static void test_temporal_through_the_driver(void **state)
{
    (void)state;
    static const struct {
        const char *name, *points, *precision;
    } shapes[] = {
        {"gpu_temporal_driver_3d", "grid.points=[61, 37, 29]", "solver.precision=\"float\""},
        {"gpu_temporal_driver_2d", "grid.points=[67, 45, 1]", "solver.precision=\"double\""},
    };
    int failures = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        char base[4096], init[4200], dcpu[4200], dgpu[4200], drestart[4200], dlatest[4200];
        snprintf(base, sizeof base, "%s", test_scratch_dir(shapes[i].name));
        snprintf(init, sizeof init, "%s/initial.vtkhdf", base);
        snprintf(dcpu, sizeof dcpu, "%s/cpu", base);
        snprintf(dgpu, sizeof dgpu, "%s/cuda", base);
        snprintf(drestart, sizeof drestart, "%s/restart", base);
        snprintf(dlatest, sizeof dlatest, "%s/latest", base);
        const char *pts = shapes[i].points, *prec = shapes[i].precision;
        const char *cpu_sets[] = {pts, prec, "solver.backend=\"cpu\"", NULL};
        const char *gpu_sets[] = {pts, prec, "solver.backend=\"cuda\"", "solver.temporal_block=4",
                                  NULL};
        const char *first_sets[] = {
            pts, prec, "solver.backend=\"cuda\"", "solver.temporal_block=4", "time.max_steps=30",
            NULL};
        const char *restart_sets[] = {pts, prec, "solver.backend=\"cuda\"",
                                      "solver.temporal_block=3", NULL};
        /* The initial field, written first (the deck checks the file): random
         * values, the Dirichlet faces get theirs when it is read. */
        driver_run cpu, gpu;
        load_driver_run(&cpu, dcpu, NULL, cpu_sets);
        const size_t bytes = (size_t)cpu.c.d.points * heat_case_value_size(&cpu.c);
        void *f0 = malloc(bytes);
        assert_non_null(f0);
        fill(f0, cpu.c.d.points, heat_case_value_size(&cpu.c));
        heat_file_meta m;
        heat_file_meta_from_case(&m, &cpu.c, HEAT_FILE_SNAPSHOT, 0, 0.0, cpu.text);
        heat_error err;
        if (heat_file_write(init, &m, f0, 0, &err)) fail_msg("%s", err.msg);
        free(f0);
        free(cpu.text);

        load_driver_run(&cpu, dcpu, init, cpu_sets);
        load_driver_run(&gpu, dgpu, init, gpu_sets);
        assert_int_equal(cpu.c.initial.type, HEAT_INIT_FILE);
        assert_int_equal(gpu.c.solver.temporal_block, 4);

        void *fc = malloc(bytes), *fg = malloc(bytes), *fr = malloc(bytes);
        assert_non_null(fc);
        assert_non_null(fg);
        assert_non_null(fr);
        heat_run_result rc, rg, rr;
        run_driver(&cpu, NULL, fc, &rc);
        run_driver(&gpu, NULL, fg, &rg);
        assert_int_equal(rc.final_step, 45);
        assert_int_equal(rg.final_step, 45);
        assert_int_equal(rg.reason, HEAT_STOP_MAX_STEPS);
        char what[256];
        snprintf(what, sizeof what, "%s: final field, temporal_block 4", shapes[i].name);
        failures += !compare(&cpu.c, fc, fg, what);
        if (rc.last_residual != rg.last_residual) {
            print_error("%s: last residual cpu %.17g, gpu %.17g\n", shapes[i].name,
                        rc.last_residual, rg.last_residual);
            failures++;
        }
        /* Every field file; those at 7, 21, 45 and the checkpoint at 30 must be there. */
        int files = 0;
        for (int64_t step = 0; step <= 45; step++)
            for (int ck = 0; ck < 2; ck++)
                files += compare_field_files(&cpu, &gpu, ck, step, &failures);
        char p[4400];
        const int64_t must[][2] = {{0, 7}, {0, 21}, {0, 45}, {1, 30}, {1, 45}};
        for (size_t k = 0; k < sizeof must / sizeof must[0]; k++) {
            field_file_path(p, sizeof p, &gpu, (int)must[k][0], must[k][1]);
            if (!test_exists(p)) fail_msg("%s was not written", p);
        }
        char *hc = history_rows(cpu.dir), *hg = history_rows(gpu.dir);
        if (strcmp(hc, hg) != 0) {
            print_error("%s: history.csv (without wall seconds) differs:\ncpu:\n%sgpu:\n%s",
                        shapes[i].name, hc, hg);
            failures++;
        }
        free(hc);
        free(hg);

        /* Restart from the checkpoint at step 30, by its path. */
        driver_run rs;
        load_driver_run(&rs, drestart, init, restart_sets);
        char ck30[4400];
        field_file_path(ck30, sizeof ck30, &gpu, 1, 30);
        memset(fr, 0, bytes);
        run_driver(&rs, ck30, fr, &rr);
        assert_int_equal(rr.start_step, 30);
        assert_int_equal(rr.final_step, 45);
        assert_true(rr.final_time == rg.final_time);
        snprintf(what, sizeof what,
                 "%s: restarted at 30 with temporal_block 3 vs uninterrupted (want) run",
                 shapes[i].name);
        failures += !compare(&gpu.c, fg, fr, what);
        for (int64_t step = 31; step <= 45; step++)
            for (int ck = 0; ck < 2; ck++)
                files += compare_field_files(&cpu, &rs, ck, step, &failures);

        /* A run stopped at 30, then continued with "latest". */
        driver_run l1, l2;
        load_driver_run(&l1, dlatest, init, first_sets);
        run_driver(&l1, NULL, NULL, &rr);
        assert_int_equal(rr.final_step, 30);
        load_driver_run(&l2, dlatest, init, restart_sets);
        memset(fr, 0, bytes);
        run_driver(&l2, "latest", fr, &rr);
        assert_int_equal(rr.start_step, 30);
        assert_int_equal(rr.final_step, 45);
        snprintf(what, sizeof what,
                 "%s: --restart latest at 30 with temporal_block 3 vs uninterrupted (want) run",
                 shapes[i].name);
        failures += !compare(&gpu.c, fg, fr, what);
        for (int64_t step = 0; step <= 45; step++)
            for (int ck = 0; ck < 2; ck++)
                if (step != 30 || ck) files += compare_field_files(&cpu, &l2, ck, step, &failures);

        print_message("%s: %d field files compared with the CPU run's\n", shapes[i].name, files);
        free(fc);
        free(fg);
        free(fr);
        free(cpu.text);
        free(gpu.text);
        free(rs.text);
        free(l1.text);
        free(l2.text);
    }
    assert_int_equal(failures, 0);
}

/* HEAT_TEST_FILTER=PATTERN runs only the tests whose names match it
 * (cmocka's filter: * and ? wildcards), e.g. "test_temporal_*". */
int main(void)
{
    const char *filter = getenv("HEAT_TEST_FILTER");
    if (filter && *filter) cmocka_set_test_filter(filter);
    char why[512];
    if (!heat_backend_gpu_usable(why, sizeof why)) {
        printf("test_gpu: skipped: %s\n", why);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_face_combination),
        cmocka_unit_test(test_awkward_sizes),
        cmocka_unit_test(test_nan_reaches_the_residual),
        cmocka_unit_test(test_out_of_memory_message),
        cmocka_unit_test(test_temporal_every_face_combination),
        cmocka_unit_test(test_temporal_awkward_sizes),
        cmocka_unit_test(test_temporal_every_step_count),
        cmocka_unit_test(test_temporal_nan_reaches_the_residual),
        cmocka_unit_test(test_temporal_through_the_driver),
        cmocka_unit_test(test_more_than_2_31_points),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
