/* Backend selection (solver.backend): "cpu", "cuda" and "auto" on whatever
 * machine the tests run on. Without a usable GPU (or without CUDA in the
 * build) "cuda" is an error that gives the reason and `heat run` exits 1;
 * "auto" runs on the CPU and says why. With a GPU, "cuda" and "auto" both
 * run there. Nothing is skipped: each machine checks the half it can. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend.h"
#include "test_util.h"

/* Whether this build and machine can run the CUDA backend; why not in `why`. */
static int gpu_usable(char *why, size_t n)
{
    return heat_backend_gpu_usable(why, n);
}

static void load_sized(heat_case *c, const char *backend, int nx, int ny, int nz)
{
    char deck[512];
    snprintf(deck, sizeof deck,
             "grid = { points = [%d, %d, %d]; length = [1.0, 1.0, 1.0]; };\n"
             "material = { diffusivity = 1.0; };\n"
             "time = { max_steps = 3; };\n"
             "boundary = {\n"
             "  x_lo = { type = \"dirichlet\"; value = 1.0; }; x_hi = { type = \"neumann\"; "
             "gradient = 0.0; };\n"
             "  y_lo = { type = \"periodic\"; }; y_hi = { type = \"periodic\"; };\n"
             "  z_lo = { type = \"neumann\"; gradient = 1.0; }; z_hi = { type = \"dirichlet\"; "
             "value = 0.0; };\n"
             "};\n"
             "initial = { type = \"constant\"; value = 1.0; };\n"
             "solver = { backend = \"%s\"; };\n",
             nx, ny, nz, backend);
    test_load_case(deck, "test_backend", NULL, c);
}

static void load(heat_case *c, const char *backend)
{
    load_sized(c, backend, 12, 10, 8);
}

/* history.csv's statistics on the CPU backend in the order backend_impl.h
 * documents, recomputed here: rows of x by 32 interleaved partial sums,
 * the rows' sums by groups of 256, then the groups. Values of mixed sign and
 * scale, so that another order gives other bits; 37 x 23 x 13 nodes are 299
 * rows: a group and a part of one. */
static void test_stats_order(void **state)
{
    (void)state;
    heat_case c;
    load_sized(&c, "cpu", 37, 23, 13);
    const int64_t nx = 37, rows = 23 * 13;
    double *f = malloc(sizeof *f * (size_t)(nx * rows));
    assert_non_null(f);
    srand(7);
    for (int64_t i = 0; i < nx * rows; i++)
        f[i] = ((double)rand() / RAND_MAX - 0.5) * pow(10.0, rand() % 16);
    double want = 0, group = 0, lo = INFINITY, hi = -INFINITY;
    for (int64_t r = 0; r < rows; r++) {
        double part[32] = {0}, rs = 0;
        for (int64_t i = 0; i < nx; i++) {
            const double v = f[r * nx + i];
            part[i % 32] += v;
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
        for (int l = 0; l < 32; l++) rs += part[l];
        group += rs;
        if (r % 256 == 255 || r == rows - 1) want += group, group = 0;
    }
    heat_backend *b = NULL;
    heat_error err;
    assert_int_equal(heat_backend_create(&c, NULL, &b, &err), HEAT_OK);
    assert_int_equal(heat_backend_upload(b, f, &err), HEAT_OK);
    double mn, mx, sum;
    assert_int_equal(heat_backend_field_stats(b, &mn, &mx, &sum, &err), HEAT_OK);
    assert_true(mn == lo && mx == hi);
    if (memcmp(&sum, &want, sizeof sum) != 0)
        fail_msg("sum %.17g, the documented order gives %.17g", sum, want);
    heat_backend_destroy(b);
    free(f);
}

static void test_cuda_backend(void **state)
{
    (void)state;
    char why[512];
    const int gpu = gpu_usable(why, sizeof why);
    heat_case c;
    load(&c, "cuda");
    heat_backend *b = NULL;
    heat_error err;
    int rc = heat_backend_create(&c, NULL, &b, &err);
    if (gpu) {
        assert_int_equal(rc, HEAT_OK);
        assert_non_null(b);
        assert_string_equal(strstr(heat_backend_describe(b), "cuda") ? "cuda" : "?", "cuda");
    } else {
        /* no GPU: a runtime failure; a build without CUDA: a deck it can
         * never run */
        assert_int_equal(rc, heat_backend_has_gpu_build() ? HEAT_ERUNTIME : HEAT_EINPUT);
        assert_null(b);
        print_message("%s\n", err.msg);
        assert_non_null(strstr(err.msg, "cuda"));
        if (heat_backend_has_gpu_build())
            assert_non_null(strstr(err.msg, why)); /* the reason, as CUDA gave it */
        else
            assert_non_null(strstr(err.msg, "without CUDA"));
    }
    heat_backend_destroy(b);
}

static void test_auto_backend(void **state)
{
    (void)state;
    char why[512];
    const int gpu = gpu_usable(why, sizeof why);
    heat_case c;
    load(&c, "auto");
    char *text = NULL;
    size_t len = 0;
    FILE *notices = open_memstream(&text, &len);
    assert_non_null(notices);
    heat_backend *b = NULL;
    heat_error err;
    assert_int_equal(heat_backend_create(&c, notices, &b, &err), HEAT_OK);
    fclose(notices);
    const char *d = heat_backend_describe(b);
    if (gpu) {
        assert_int_equal(strncmp(d, "cuda", 4), 0);
        assert_int_equal(len, 0);
    } else {
        assert_int_equal(strncmp(d, "cpu", 3), 0);
        if (heat_backend_has_gpu_build()) {
            /* The fallback is said, with the reason. */
            assert_non_null(strstr(text, "running on the CPU"));
            assert_non_null(strstr(text, why));
        }
    }
    free(text);
    heat_backend_destroy(b);
}

/* The program: backend = "cuda" without a GPU exits 1 with the reason and
 * writes nothing, in a build without CUDA 2 (bad input: heat check notes
 * it there); "auto" runs. */
static void test_cli_exit_status(void **state)
{
    (void)state;
    char why[512];
    const int gpu = gpu_usable(why, sizeof why);
    const char *dir = test_scratch_dir("cli");
    char out_dir[4200];
    snprintf(out_dir, sizeof out_dir, "output.dir=%s/run", dir);
    const char *argv[] = {"run",   "--quiet", "--set", "grid.points=[12,10,8]",
                          "--set", out_dir,   "--set", "solver.backend=cuda",
                          NULL};
    char *out = NULL, *errs = NULL;
    int rc = test_run_heat(NULL, argv, &out, &errs);
    if (gpu) {
        assert_int_equal(rc, 0);
    } else {
        assert_int_equal(rc, heat_backend_has_gpu_build() ? 1 : 2);
        assert_non_null(strstr(errs, "solver.backend = \"cuda\""));
        char hist[4300];
        snprintf(hist, sizeof hist, "%s/run", dir);
        assert_false(test_exists(hist));
    }
    free(out);
    free(errs);
    /* heat check: valid (the deck may be meant for another machine's heat),
     * with a note where this heat could not run it */
    const char *check[] = {"check", "-", "--set", "solver.backend=cuda", NULL};
    rc = test_run_heat(NULL, check, &out, &errs);
    assert_int_equal(rc, 0);
    if (!heat_backend_has_gpu_build())
        assert_non_null(strstr(out, "built without CUDA (see heat --version); use \"cpu\" or "
                                    "\"auto\": a heat built with CUDA runs this deck"));
    else
        assert_null(strstr(out, "built without CUDA"));
    free(out);
    free(errs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stats_order),
        cmocka_unit_test(test_cuda_backend),
        cmocka_unit_test(test_auto_backend),
        cmocka_unit_test(test_cli_exit_status),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
