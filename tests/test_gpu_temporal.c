/* Temporal blocking (register_tiled with solver.temporal_block = k > 1: k
 * steps fused per pass over GPU memory, a shorter pass for the remainder)
 * against the CPU backend, value for value: every k from 2 to 8, every face
 * combination, awkward sizes, step counts that are no multiple of k, several
 * calls on one backend, NaN through the residual, "auto" timing its
 * depths. Skipped (77) without a usable CUDA device. */
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
#include "gpu_helpers.h"
#include "heat_case.h"
#include "test_util.h"

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
                    failures += check_variants(sizes3[s], t, 19, temporal, n_temporal);
                    combos++;
                }
                const int t2[6] = {
                    axis_kinds[a][0], axis_kinds[a][1], axis_kinds[b][0], axis_kinds[b][1], 0, 0};
                failures += check_variants(sizes2[s], t2, 19, temporal, n_temporal);
                combos++;
            }
    print_message("temporal blocking: %d face combinations x %d depths x 2 precisions = %d cases, "
                  "%d failures\n",
                  combos, n_temporal, combos * n_temporal * 2, failures);
    assert_int_equal(failures, 0);
}

/* Larger awkward grids with temporal blocking: several windows in x and y,
 * blocks whose share of the planes ends inside a window or runs on into the
 * next (a tall thin grid: several blocks on one window), grids thinner than
 * a pass is deep, a few face mixes. Rows of whole groups (nx a multiple of
 * 4 in float, 2 in double) take the whole-vector loops, whose threads
 * beyond an x face load a clamped or wrapped column; so do other rows in 3D,
 * which the backend pads to 16 bytes, where x is not periodic (the last
 * group then reaches into the padding); with a periodic x, and in 2D, they
 * take the loops that load whole groups inside the grid and single values
 * at its ends (k_temporal.cu); unpadded (HEAT_CUDA_ROWS=packed, the second
 * round), single values throughout. At k = 4 in 3D the last window of a row
 * on 16-byte boundaries is narrow where what it stores fits (temporal.cuh):
 * 148 x 67 x 45 has rows of 2 float windows ending in a narrow one and of 3
 * full double windows, 180 x 37 x 30 rows of 2 full float windows and of 4
 * double windows ending in a narrow one, 130 x 67 x 45 rows of 3 double
 * windows ending in a narrow one and padded float rows of 2 windows ending
 * in one, 257 x 131 x 70 padded rows of 3 float windows ending in a narrow
 * one and of 5 full double windows. On padded rows the windows at the low x
 * face take the selects, those at the high face the substitutions: the
 * mixes put either face kind on either side. */
static void test_temporal_awkward_sizes(void **state)
{
    (void)state;
    const int64_t sizes[][3] = {{257, 131, 70}, {130, 67, 45},  {148, 67, 45}, {180, 37, 30},
                                {40, 13, 300},  {1027, 515, 1}, {8, 1000, 1},  {1000, 3, 1},
                                {3, 3, 3},      {5, 300, 4}};
    const int mixes[][6] = {{0, 0, 0, 0, 0, 0},
                            {2, 2, 2, 2, 2, 2},
                            {1, 1, 1, 1, 1, 1},
                            {0, 1, 2, 2, 1, 0},
                            {1, 0, 0, 1, 2, 2}};
    int failures = 0, cases = 0;
    for (int packed = 0; packed < 2; packed++) {
        if (packed) assert_int_equal(setenv("HEAT_CUDA_ROWS", "packed", 1), 0);
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            for (size_t m = 0; m < sizeof mixes / sizeof mixes[0]; m++) {
                if (packed && sizes[s][0] % 4 == 0) continue; /* the same layout */
                failures += check_variants(sizes[s], mixes[m], 19, temporal, n_temporal);
                cases += 2 * n_temporal;
            }
    }
    unsetenv("HEAT_CUDA_ROWS");
    print_message("temporal blocking, awkward sizes: %d cases, %d failures\n", cases, failures);
    assert_int_equal(failures, 0);
}

/* The CPU's fields after 0 to STEP_COUNTS_MAX steps of one case, and its
 * residuals, for test_temporal_every_step_count. */
enum { STEP_COUNTS_MAX = 19 };
typedef struct step_counts {
    heat_case ref;
    const int64_t *size;
    const int *types;
    const char *prec;
    const double *grads;
    size_t bytes;
    void *field, *got;
    char *want; /* the CPU's field after n steps at want + n * bytes */
    double rw[STEP_COUNTS_MAX + 1];
} step_counts;

static void step_counts_what(const step_counts *sc, char *what, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(what, n, fmt, ap);
    va_end(ap);
    if (k >= 0 && (size_t)k < n)
        snprintf(what + k, n - (size_t)k, ", %s %lldx%lldx%lld", sc->prec, (long long)sc->size[0],
                 (long long)sc->size[1], (long long)sc->size[2]);
}

/* 1 to 2 depth + 1 steps in one call each, with and without the residual;
 * returns the failures and counts the runs. */
static int step_counts_one_call(step_counts *sc, const heat_case *c, int depth, int *runs)
{
    int failures = 0;
    char what[256];
    for (int n = 1; n <= 2 * depth + 1; n++)
        for (int resid = 0; resid < 2; resid++) {
            double rg = -1;
            memset(sc->got, 0, sc->bytes);
            run_backend(c, sc->field, n, sc->got, resid ? &rg : NULL, 1);
            step_counts_what(sc, what, sizeof what, "temporal_block %d, %d steps%s", depth, n,
                             resid ? " with the residual" : "");
            int ok = compare(&sc->ref, sc->want + (size_t)n * sc->bytes, sc->got, what);
            if (resid && rg != sc->rw[n]) {
                print_error("%s: residual cpu %.17g, gpu %.17g\n", what, sc->rw[n], rg);
                ok = 0;
            }
            failures += !ok;
            (*runs)++;
        }
    return failures;
}

/* STEP_COUNTS_MAX steps in calls of mixed lengths on one backend, the field
 * downloaded after each; returns the failures. */
static int step_counts_split(step_counts *sc, const heat_case *c, int depth)
{
    static const int64_t calls[] = {3, 8, 1, 5, 2}; /* STEP_COUNTS_MAX in all */
    const int ncalls = (int)(sizeof calls / sizeof calls[0]);
    int failures = 0;
    char what[256];
    heat_backend *b = NULL;
    heat_error err;
    if (heat_backend_create(c, NULL, &b, &err)) fail_msg("backend: %s", err.msg);
    /* Else every test here would pass on single steps. */
    char fused[64];
    snprintf(fused, sizeof fused, "%d steps per pass", depth);
    if (!strstr(heat_backend_describe(b), fused))
        fail_msg("temporal_block %d: the backend (\"%s\") does not say \"%s\"", depth,
                 heat_backend_describe(b), fused);
    if (heat_backend_upload(b, sc->field, &err)) fail_msg("upload: %s", err.msg);
    int64_t done = 0;
    for (int i = 0; i < ncalls; i++) {
        /* The residual on the second call and the last. */
        const int resid = i == 1 || i == ncalls - 1;
        double rg = -1;
        poison_next(b);
        if (heat_backend_advance(b, calls[i], resid ? &rg : NULL, &err))
            fail_msg("advance: %s", err.msg);
        done += calls[i];
        memset(sc->got, 0, sc->bytes);
        if (heat_backend_download(b, sc->got, &err)) fail_msg("download: %s", err.msg);
        step_counts_what(sc, what, sizeof what,
                         "temporal_block %d, call %d of %lld steps (step %lld)", depth, i + 1,
                         (long long)calls[i], (long long)done);
        int ok = compare(&sc->ref, sc->want + (size_t)done * sc->bytes, sc->got, what);
        if (resid && rg != sc->rw[done]) {
            print_error("%s: residual cpu %.17g, gpu %.17g\n", what, sc->rw[done], rg);
            ok = 0;
        }
        failures += !ok;
    }
    assert_int_equal(done, STEP_COUNTS_MAX);
    heat_backend_destroy(b);
    return failures;
}

/* Every step count from 1 to 2k + 1 for every k from 2 to 8 (less than one
 * pass, whole passes, passes and a remainder), with and without the
 * residual; and 19 steps in five calls of mixed lengths on one backend, the
 * field downloaded after each: the field after n steps must be the CPU's
 * after n steps however the steps are split into calls and passes. */
static void test_temporal_every_step_count(void **state)
{
    (void)state;
    static const int64_t sizes[2][3] = {{37, 19, 11}, {45, 29, 1}};
    static const int types[2][6] = {{0, 1, 2, 2, 1, 0}, {2, 2, 1, 0, 0, 0}};
    int failures = 0, runs = 0, split = 0;
    for (int s = 0; s < 2; s++)
        for (int p = 0; p < 2; p++) {
            step_counts *sc = calloc(1, sizeof *sc);
            assert_non_null(sc);
            double grads[6];
            for (int f = 0; f < 6; f++) grads[f] = 2.0 * rnd() - 1.0;
            sc->size = sizes[s], sc->types = types[s], sc->prec = p ? "double" : "float";
            sc->grads = grads;
            make_case(&sc->ref, sizes[s], types[s], sc->prec, "cpu", "register_tiled", 1, grads);
            const size_t vs = heat_case_value_size(&sc->ref);
            sc->bytes = (size_t)sc->ref.d.points * vs;
            sc->field = malloc(sc->bytes), sc->got = malloc(sc->bytes);
            sc->want = malloc(sc->bytes * (STEP_COUNTS_MAX + 1));
            assert_non_null(sc->field);
            assert_non_null(sc->got);
            assert_non_null(sc->want);
            fill(sc->field, sc->ref.d.points, vs);
            /* A run of its own for each step count, the residual on its last
             * step, as the driver would ask for it. */
            memcpy(sc->want, sc->field, sc->bytes);
            sc->rw[0] = NAN;
            for (int n = 1; n <= STEP_COUNTS_MAX; n++)
                run_backend(&sc->ref, sc->field, n, sc->want + (size_t)n * sc->bytes, &sc->rw[n],
                            0);
            for (int depth = 2; depth <= 8; depth++) {
                heat_case c;
                make_case(&c, sizes[s], types[s], sc->prec, "cuda", "register_tiled", depth, grads);
                failures += step_counts_one_call(sc, &c, depth, &runs);
                failures += step_counts_split(sc, &c, depth);
                split++;
            }
            free(sc->field);
            free(sc->got);
            free(sc->want);
            free(sc);
        }
    print_message("temporal blocking: %d runs of 1 to 2k + 1 steps, %d runs in 5 calls each, %d "
                  "failures\n",
                  runs, split, failures);
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
        for (int d = 0; d < n_temporal; d++) {
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

/* solver.temporal_block = "auto" on one GPU: the backend times the table's
 * k and its neighbours before the field arrives, says what it measured and
 * which it keeps, and the steps are the CPU's, bit for bit, in calls that
 * are no multiple of the depth. */
static void test_temporal_auto_measures(void **state)
{
    (void)state;
    const int64_t n[3] = {64, 48, 40}; /* table: 3 (a small plane); 40 >= 8 x 4 */
    const int t[6] = {0, 1, 2, 2, 1, 0};
    double g[6];
    for (int f = 0; f < 6; f++) g[f] = 2.0 * rnd() - 1.0;
    int failures = 0;
    for (int p = 0; p < 2; p++) {
        const char *prec = p ? "double" : "float";
        heat_case ref, c;
        make_case(&ref, n, t, prec, "cpu", "register_tiled", 1, g);
        make_case(&c, n, t, prec, "cuda", "register_tiled", 3, g);
        c.solver.temporal_auto = 1;
        assert_int_equal(heat_case_auto_depth(&c), 3);
        const size_t vs = heat_case_value_size(&c), bytes = (size_t)c.d.points * vs;
        void *f = malloc(bytes), *want = malloc(bytes), *got = malloc(bytes);
        assert_non_null(f);
        assert_non_null(want);
        assert_non_null(got);
        fill(f, c.d.points, vs);
        double rw = 0, rg = -1;
        run_backend(&ref, f, 19, want, &rw, 0);
        heat_backend *b = NULL;
        heat_error err;
        if (heat_backend_create(&c, NULL, &b, &err)) fail_msg("backend: %s", err.msg);
        const char *d = heat_backend_describe(b);
        print_message("%s: %s\n", prec, d);
        int k = 0;
        const char *kp = strstr(d, "kernel, ");
        if (!kp || sscanf(kp + 8, "%d", &k) != 1) k = 0;
        const char *per = strstr(d, " steps per pass (auto: measured k = 2 ");
        if (!per || !strstr(per, ", k = 3 ") || !strstr(per, ", k = 4 ") || k < 2 || k > 4)
            fail_msg("%s: the backend (\"%s\") does not say the depths it timed and the one it "
                     "keeps (2 to 4)",
                     prec, d);
        if (heat_backend_upload(b, f, &err)) fail_msg("upload: %s", err.msg);
        if (heat_backend_advance(b, 7, NULL, &err) || heat_backend_advance(b, 12, &rg, &err))
            fail_msg("advance: %s", err.msg);
        if (heat_backend_download(b, got, &err)) fail_msg("download: %s", err.msg);
        char what[128];
        snprintf(what, sizeof what, "auto (%d steps per pass), %s, 19 steps", k, prec);
        failures += !compare(&ref, want, got, what);
        if (rg != rw) {
            print_error("%s: residual cpu %.17g, gpu %.17g\n", what, rw, rg);
            failures++;
        }
        heat_backend_destroy(b);
        free(f);
        free(want);
        free(got);
    }
    assert_int_equal(failures, 0);
}

int main(void)
{
    const int skip = gpu_tests_skip("test_gpu_temporal");
    if (skip) return skip;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_temporal_every_face_combination),
        cmocka_unit_test(test_temporal_awkward_sizes),
        cmocka_unit_test(test_temporal_every_step_count),
        cmocka_unit_test(test_temporal_nan_reaches_the_residual),
        cmocka_unit_test(test_temporal_auto_measures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
