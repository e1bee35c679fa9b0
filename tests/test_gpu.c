/* The CUDA backend against the CPU backend (the oracle).
 *
 * Every kernel, in float and double, 2D and 3D, with every per-face boundary
 * combination, on random data of awkward sizes (and sizes whose rows take the
 * 16-byte path), 50 steps: the GPU field must equal the CPU field value for
 * value. The kernels are built to reproduce the CPU's arithmetic exactly
 * (same order, fused multiply-adds only where the formula has them), so the
 * test asks for equality; the tolerances (1e-5 relative in float,
 * 1e-12 in double) are the floor below which a difference would be a bug in
 * any case. The next time level is poisoned with NaN before each run, so a
 * point a kernel never writes shows up. Temporal blocking: test_gpu_temporal.c
 * and test_gpu_driver.c.
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
#include "gpu_helpers.h"
#include "heat_case.h"
#include "test_util.h"

#define REGISTER_ONLY (1u << HEAT_KERNEL_REGISTER_TILED)

/* Every per-face combination, 50 steps of every kernel in `kmask`
 * (check_all): the 125 of a 3D grid `s3` and the 25 of a 2D grid `s2`
 * (either may be NULL); returns the failures and counts the runs. */
static int every_face(const int64_t *s3, const int64_t *s2, unsigned kmask, int *runs)
{
    int failures = 0;
    for (int a = 0; a < 5; a++)
        for (int b = 0; b < 5; b++) {
            for (int z = 0; s3 && z < 5; z++) {
                const int t[6] = {axis_kinds[a][0], axis_kinds[a][1], axis_kinds[b][0],
                                  axis_kinds[b][1], axis_kinds[z][0], axis_kinds[z][1]};
                failures += check_all(s3, t, 50, kmask);
                (*runs)++;
            }
            const int t2[6] = {
                axis_kinds[a][0], axis_kinds[a][1], axis_kinds[b][0], axis_kinds[b][1], 0, 0};
            if (s2) {
                failures += check_all(s2, t2, 50, kmask);
                (*runs)++;
            }
        }
    return failures;
}

/* Every per-face combination on small grids: odd sizes (whose rows the
 * backend pads to 16 bytes, so that their last group of a row is partly
 * beyond the grid) and sizes whose rows hold whole groups, with a partial
 * tile at the end of x. */
static void test_every_face_combination(void **state)
{
    (void)state;
    const int64_t sizes3[][3] = {{33, 17, 9}, {36, 11, 7}, {136, 19, 10}};
    const int64_t sizes2[][3] = {{37, 23, 1}, {40, 21, 1}, {516, 9, 1}};
    int failures = 0, runs = 0;
    for (int s = 0; s < 3; s++) failures += every_face(sizes3[s], sizes2[s], ALL_KERNELS, &runs);
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

/* Rows of nx values with no padding (HEAT_CUDA_ROWS=packed), so that odd
 * sizes take the kernels' one-value path: every face combination on the
 * odd sizes above, and a larger grid. */
static void test_packed_rows(void **state)
{
    (void)state;
    const int64_t size3[3] = {33, 17, 9}, size2[3] = {37, 23, 1}, big[3] = {257, 131, 67};
    assert_int_equal(setenv("HEAT_CUDA_ROWS", "packed", 1), 0);
    int runs = 0, failures = every_face(size3, size2, ALL_KERNELS, &runs);
    const int mix[6] = {0, 1, 2, 2, 1, 0};
    failures += check_all(big, mix, 50, ALL_KERNELS);
    unsetenv("HEAT_CUDA_ROWS");
    assert_int_equal(failures, 0);
}

/* 2D register_tiled with one group a thread (HEAT_CUDA_TILE2D=1x128, kept
 * for measurement; the default takes two): every face combination on rows
 * of one tile and of several, whole and padded. The switch reaches
 * register_tiled only, so only it runs. */
static void test_one_group_2d(void **state)
{
    (void)state;
    const int64_t sizes[][3] = {{40, 21, 1}, {1027, 9, 1}, {1032, 7, 1}};
    assert_int_equal(setenv("HEAT_CUDA_TILE2D", "1x128", 1), 0);
    int failures = 0, runs = 0;
    for (int s = 0; s < 3; s++) failures += every_face(NULL, sizes[s], REGISTER_ONLY, &runs);
    unsetenv("HEAT_CUDA_TILE2D");
    assert_int_equal(failures, 0);
}

/* The end of a row past its last whole 32-group warp (3D register_tiled):
 * taken by the strip kernel where it is at most 4 groups (131: 3 columns in
 * both precisions, on padded rows; 140: 12 columns of whole groups, in
 * float), by a partial tile where it is longer (140 in double) or with
 * HEAT_CUDA_STRIP=0. Every face combination, register_tiled only (the
 * other kernels have no strip). */
static void test_strip(void **state)
{
    (void)state;
    const int64_t sizes[][3] = {{131, 13, 7}, {140, 11, 6}};
    int failures = 0, runs = 0;
    for (int off = 0; off < 2; off++) {
        if (off) assert_int_equal(setenv("HEAT_CUDA_STRIP", "0", 1), 0);
        for (int s = 0; s < 2; s++) failures += every_face(sizes[s], NULL, REGISTER_ONLY, &runs);
    }
    unsetenv("HEAT_CUDA_STRIP");
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
        /* only a device too small for the 17.5 GB of two float levels; any
         * other failure is one */
        if (!strstr(err.msg, "does not fit") && !strstr(err.msg, "cannot allocate the field"))
            fail_msg("%s", err.msg);
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
        make_case(&c, n, t, "double", "cuda", heat_kernel_names[k], 1, g);
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

/* history.csv's statistics of a backend, compared with the CPU's bit for bit. */
static int same_stats(heat_backend *cpu, heat_backend *gpu, const char *what)
{
    double a[3], g[3];
    heat_error err;
    if (heat_backend_field_stats(cpu, &a[0], &a[1], &a[2], &err) ||
        heat_backend_field_stats(gpu, &g[0], &g[1], &g[2], &err)) {
        print_error("%s: %s\n", what, err.msg);
        return 0;
    }
    if (memcmp(a, g, sizeof a) != 0) {
        print_error("%s: cpu min %.17g max %.17g sum %.17g, gpu %.17g %.17g %.17g\n", what, a[0],
                    a[1], a[2], g[0], g[1], g[2]);
        return 0;
    }
    return 1;
}

/* history.csv's statistics on the GPU against the CPU's, bit for bit, on
 * values of mixed sign and scale (another order of the sums gives other
 * bits): a group of 256 rows and a part of one; more than 1024 groups, which
 * the final fold takes 1024 at a time (3D and 2D). Then the driver's use:
 * after a check step's advance (the statistics came back with the residual),
 * while the next steps are queued (those of the field before them, twice,
 * so that both slots serve), and after they ran. */
static void test_history_statistics(void **state)
{
    (void)state;
    const int64_t sizes[][3] = {{37, 23, 13}, {33, 1100, 260}, {5, 270001, 1}};
    const int t[6] = {0, 1, 2, 2, 1, 0};
    const double gr[6] = {0};
    int failures = 0, cases = 0;
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
        for (int p = 0; p < 2; p++) {
            const char *prec = p ? "double" : "float";
            heat_case cc, cg;
            make_case(&cc, sizes[z], t, prec, "cpu", "register_tiled", 1, gr);
            make_case(&cg, sizes[z], t, prec, "cuda", "register_tiled", 3, gr);
            const size_t vs = heat_case_value_size(&cc);
            void *f = malloc((size_t)cc.d.points * vs);
            assert_non_null(f);
            for (int64_t i = 0; i < cc.d.points; i++) {
                const double x = (rnd() - 0.5) * pow(10.0, (double)(int)(rnd() * 12.0));
                if (vs == 4)
                    ((float *)f)[i] = (float)x;
                else
                    ((double *)f)[i] = x;
            }
            heat_backend *bc = NULL, *bg = NULL;
            heat_error err;
            assert_int_equal(heat_backend_create(&cc, NULL, &bc, &err), HEAT_OK);
            if (heat_backend_create(&cg, NULL, &bg, &err)) fail_msg("%s", err.msg);
            assert_int_equal(heat_backend_upload(bc, f, &err), HEAT_OK);
            assert_int_equal(heat_backend_upload(bg, f, &err), HEAT_OK);
            char what[160];
            snprintf(what, sizeof what, "%lld x %lld x %lld %s", (long long)sizes[z][0],
                     (long long)sizes[z][1], (long long)sizes[z][2], prec);
            failures += !same_stats(bc, bg, what);
            double rc = 0, rg = 0;
            assert_int_equal(heat_backend_advance(bc, 4, &rc, &err), HEAT_OK);
            assert_int_equal(heat_backend_advance(bg, 4, &rg, &err), HEAT_OK);
            failures += !same_stats(bc, bg, what) || rc != rg;
            assert_true(heat_backend_queues(bg));
            for (int round = 0; round < 2; round++) {
                assert_int_equal(heat_backend_queue(bc, 5, 1, &err), HEAT_OK);
                assert_int_equal(heat_backend_queue(bg, 5, 1, &err), HEAT_OK);
                failures += !same_stats(bc, bg, what); /* the field before the queued steps */
                assert_int_equal(heat_backend_wait(bc, &rc, &err), HEAT_OK);
                assert_int_equal(heat_backend_wait(bg, &rg, &err), HEAT_OK);
                if (rc != rg) {
                    print_error("%s: residual %.17g on the cpu, %.17g on the gpu\n", what, rc, rg);
                    failures++;
                }
            }
            failures += !same_stats(bc, bg, what);
            cases++;
            heat_backend_destroy(bc);
            heat_backend_destroy(bg);
            free(f);
        }
    print_message("%d grids and precisions, %d failures\n", cases, failures);
    assert_int_equal(failures, 0);
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

int main(void)
{
    const int skip = gpu_tests_skip("test_gpu");
    if (skip) return skip;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_face_combination),
        cmocka_unit_test(test_strip),
        cmocka_unit_test(test_awkward_sizes),
        cmocka_unit_test(test_packed_rows),
        cmocka_unit_test(test_one_group_2d),
        cmocka_unit_test(test_more_than_2_31_points),
        cmocka_unit_test(test_nan_reaches_the_residual),
        cmocka_unit_test(test_history_statistics),
        cmocka_unit_test(test_out_of_memory_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
