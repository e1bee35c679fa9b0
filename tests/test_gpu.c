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
#include "stability.h"
#ifdef HEAT_HAVE_CUDA
#include "cuda_backend.h"
#endif

static const char *const kernels[] = {"naive", "tiled", "sliced", "register_tiled"};

/* The five ways an axis can be bounded: DD, DN, ND, NN, PP. */
static const int axis_kinds[5][2] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}, {2, 2}};

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * 0x1.0p-53;
}

/* A case of the given size, face types (0 D, 1 N, 2 P), precision, backend
 * and kernel; anisotropic lengths and random Neumann gradients. */
static void make_case(heat_case *c, const int64_t n[3], const int types[6], const char *prec,
                      const char *backend, const char *kernel, const double grads[6])
{
    static const char *const faces[] = {"x_lo", "x_hi", "y_lo", "y_hi", "z_lo", "z_hi"};
    char deck[4096], *p = deck;
    const char *end = deck + sizeof deck;
    p += snprintf(p, (size_t)(end - p),
                  "grid = { points = [%lld, %lld, %lld]; length = [1.0, 0.37, 2.3]; };\n"
                  "material = { diffusivity = 0.01; };\ntime = { max_steps = 50; };\n"
                  "initial = { type = \"constant\"; value = 1.0; };\n"
                  "solver = { backend = \"%s\"; precision = \"%s\"; kernel = \"%s\"; };\n"
                  "boundary = {\n",
                  (long long)n[0], (long long)n[1], (long long)n[2], backend, prec, kernel);
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
    heat_error err;
    int rc = heat_deck_load_string(deck, "test_gpu", NULL, 0, c, NULL, NULL, &err);
    if (!rc) rc = heat_case_derive(c, &err);
    if (rc) fail_msg("deck refused: %s\n%s", err.msg, deck);
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

/* Runs `steps` steps of `c` (residual on the last) from `field`; the final
 * field goes to `out`, the residual to *res. */
static void run_backend(const heat_case *c, const void *field, int64_t steps, void *out,
                        double *res, int poison)
{
    heat_backend *b = NULL;
    heat_error err;
    if (heat_backend_create(c, NULL, &b, &err)) fail_msg("backend: %s", err.msg);
    if (heat_backend_upload(b, field, &err)) fail_msg("upload: %s", err.msg);
#ifdef HEAT_HAVE_CUDA
    if (poison && heat_cuda_poison_next(b, &err)) fail_msg("poison: %s", err.msg);
#else
    (void)poison;
#endif
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

/* Every kernel and precision for one size and set of face types; the CPU
 * reference is computed once per precision. Returns the failures. */
static int check_all(const int64_t n[3], const int types[6], int64_t steps, unsigned kmask)
{
    int failures = 0;
    double grads[6];
    for (int f = 0; f < 6; f++) grads[f] = 2.0 * rnd() - 1.0;
    for (int p = 0; p < 2; p++) {
        const char *prec = p ? "double" : "float";
        heat_case ref;
        make_case(&ref, n, types, prec, "cpu", "register_tiled", grads);
        const size_t vs = heat_case_value_size(&ref), bytes = (size_t)ref.d.points * vs;
        void *field = malloc(bytes), *want = malloc(bytes), *got = malloc(bytes);
        assert_non_null(field);
        assert_non_null(want);
        assert_non_null(got);
        fill(field, ref.d.points, vs);
        double rw = 0;
        run_backend(&ref, field, steps, want, &rw, 0);
        for (int k = 0; k < 4; k++) {
            if (!(kmask & (1u << k))) continue;
            heat_case c;
            make_case(&c, n, types, prec, "cuda", kernels[k], grads);
            double rg = -1;
            memset(got, 0, bytes);
            run_backend(&c, field, steps, got, &rg, 1);
            char what[256];
            snprintf(what, sizeof what, "%s %s %lldx%lldx%lld faces %d%d %d%d %d%d", kernels[k],
                     prec, (long long)n[0], (long long)n[1], (long long)n[2], types[0], types[1],
                     types[2], types[3], types[4], types[5]);
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
                    failures += check_all(sizes3[s], t, 50, 0xf);
                    runs++;
                }
                const int t2[6] = {
                    axis_kinds[a][0], axis_kinds[a][1], axis_kinds[b][0], axis_kinds[b][1], 0, 0};
                failures += check_all(sizes2[s], t2, 50, 0xf);
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
        for (int m = 0; m < 4; m++) failures += check_all(sizes[s], mixes[m], 50, 0xf);
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
    make_case(&c, n, t, "float", "cuda", "register_tiled", grads);
    assert_true(c.d.points > (INT64_C(1) << 31));
    heat_backend *b = NULL;
    heat_error err;
    if (heat_backend_create(&c, NULL, &b, &err)) {
        print_message("skipped: %s\n", err.msg);
        skip();
    }
    heat_backend_destroy(b);
    /* register_tiled (the 16-byte path) and naive; 2 steps each. */
    assert_int_equal(check_all(n, t, 2, 0x9), 0);
}

/* An overlapped download holds the field of the step it was started at,
 * although the run goes on meanwhile, with and without the device-side
 * staging copy. */
static void test_overlapped_download(void **state)
{
    (void)state;
    const int64_t n[3] = {100, 37, 21};
    const int t[6] = {1, 0, 2, 2, 0, 1};
    const double g[6] = {0.3, 0, 0, 0, 0, -0.7};
    for (int staging = 1; staging >= 0; staging--) {
        setenv("HEAT_CUDA_NO_STAGING", staging ? "0" : "1", 1);
        heat_case cg, cc;
        make_case(&cg, n, t, "double", "cuda", "register_tiled", g);
        make_case(&cc, n, t, "double", "cpu", "register_tiled", g);
        const size_t bytes = (size_t)cg.d.points * sizeof(double);
        double *f = malloc(bytes), *want5 = malloc(bytes), *want12 = malloc(bytes);
        double *got12 = malloc(bytes);
        assert_non_null(f);
        assert_non_null(want5);
        assert_non_null(want12);
        assert_non_null(got12);
        fill(f, cg.d.points, 8);
        run_backend(&cc, f, 5, want5, NULL, 0);
        run_backend(&cc, f, 12, want12, NULL, 0);

        heat_backend *b = NULL;
        heat_error err;
        assert_int_equal(heat_backend_create(&cg, NULL, &b, &err), HEAT_OK);
        double *host = heat_backend_host_alloc(b, bytes);
        assert_non_null(host);
        memset(host, 0, bytes);
        assert_int_equal(heat_backend_upload(b, f, &err), HEAT_OK);
        assert_int_equal(heat_backend_advance(b, 5, NULL, &err), HEAT_OK);
        assert_int_equal(heat_backend_download_start(b, host, &err), HEAT_OK);
        assert_int_equal(heat_backend_advance(b, 1, NULL, &err), HEAT_OK);
        assert_int_equal(heat_backend_advance(b, 6, NULL, &err), HEAT_OK);
        assert_int_equal(heat_backend_download_wait(b, &err), HEAT_OK);
        assert_int_equal(heat_backend_download(b, got12, &err), HEAT_OK);
        assert_true(
            compare(&cg, want5, host, staging ? "download at 5 (staging)" : "download at 5"));
        assert_true(compare(&cg, want12, got12, "field at 12"));
        heat_backend_host_free(b, host);
        heat_backend_destroy(b);
        free(f);
        free(want5);
        free(want12);
        free(got12);
    }
    unsetenv("HEAT_CUDA_NO_STAGING");
}

/* A non-finite field is reported through the residual, as on the CPU. */
static void test_nan_reaches_the_residual(void **state)
{
    (void)state;
    const int64_t n[3] = {40, 20, 10};
    const int t[6] = {1, 1, 2, 2, 0, 0};
    const double g[6] = {0};
    for (int k = 0; k < 4; k++) {
        heat_case c;
        make_case(&c, n, t, "double", "cuda", kernels[k], g);
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
    make_case(&c, n, t, "double", "cuda", "register_tiled", g);
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
#ifdef HEAT_HAVE_CUDA
    char why[512];
    if (!heat_cuda_usable(why, sizeof why)) {
        printf("test_gpu: skipped: %s\n", why);
        return 77;
    }
#else
    printf("test_gpu: skipped: this heat was built without CUDA\n");
    return 77;
#endif
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_face_combination),
        cmocka_unit_test(test_awkward_sizes),
        cmocka_unit_test(test_nan_reaches_the_residual),
        cmocka_unit_test(test_overlapped_download),
        cmocka_unit_test(test_out_of_memory_message),
        cmocka_unit_test(test_more_than_2_31_points),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
