/* Multigrid on the GPU against the CPU backend, the reference (kernels/mg.h):
 * V-cycles of the steady solve and implicit steps (backward Euler,
 * Crank-Nicolson) from the same random field give the same field bit for
 * bit, and the same residuals, V-cycles and reductions (the implicit
 * steps' residual over max |b|), in float and double, 2D and 3D, on grids of
 * sizes that are not 2^k + 1 and with every uniform face, and on a deck of
 * three materials with a source and convective and flux faces, and on a
 * singular problem (no Dirichlet face), whose kept mean is an exact sum over
 * the nodes; and history.csv's statistics of the field after them are the
 * same bits. Without a usable GPU the program says why and exits with 77,
 * which ctest reports as skipped. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "heat_case.h"
#include "materials.h"
#include "test_util.h"
#include "xsum.h"

static const char deck[] =
    "grid = { points = [37, 29, 21]; length = [1.0, 0.8, 0.6]; };\n"
    "material = { diffusivity = 1.0; };\n"
    "steady = { tolerance = 1.0e-9; method = \"multigrid\"; };\n"
    "initial = { type = \"constant\"; value = 0.0; };\n"
    "boundary = { x_lo = { type = \"dirichlet\"; value = 1.0; };\n"
    "  x_hi = { type = \"neumann\"; gradient = 0.5; };\n"
    "  y_lo = { type = \"periodic\"; }; y_hi = { type = \"periodic\"; };\n"
    "  z_lo = { type = \"dirichlet\"; value = 0.25; }; z_hi = { type = \"neumann\"; }; };\n";

/* The deck of test_materials: the same grid and faces with three materials
 * (no diffusivity), a source, a convective and a flux face. */
static const char deck_materials[] =
    "grid = { points = [37, 29, 21]; length = [1.0, 0.8, 0.6]; };\n"
    "materials = ({ name = \"a\"; conductivity = 1.0; density = 1.0; specific_heat = 1.0; },\n"
    "  { name = \"b\"; conductivity = 20.0; density = 3.0; specific_heat = 0.5; },\n"
    "  { name = \"c\"; conductivity = 0.1; density = 1.5; specific_heat = 2.0; });\n"
    "regions = ({ material = \"b\"; box = { min = [0.2, 0.0, 0.0]; max = [0.55, 0.5, 0.6]; }; },\n"
    "  { material = \"c\"; sphere = { center = [0.7, 0.4, 0.3]; radius = 0.2; }; });\n"
    "sources = ({ box = { min = [0.3, 0.2, 0.1]; max = [0.5, 0.4, 0.3]; }; power_density = 50.0; "
    "});\n"
    "steady = { tolerance = 1.0e-9; method = \"multigrid\"; };\n"
    "initial = { type = \"constant\"; value = 0.0; };\n"
    "boundary = { x_lo = { type = \"dirichlet\"; value = 1.0; };\n"
    "  x_hi = { type = \"convective\"; h = 4.0; ambient = 0.1; };\n"
    "  y_lo = { type = \"periodic\"; }; y_hi = { type = \"periodic\"; };\n"
    "  z_lo = { type = \"dirichlet\"; value = 0.25; }; z_hi = { type = \"flux\"; value = -0.5; }; "
    "};\n";

static const char *deck_now = deck; /* the deck load() reads */

static double fget(const heat_case *c, const void *f, int64_t i)
{
    return c->solver.precision == HEAT_FLOAT ? (double)((const float *)f)[i]
                                             : ((const double *)f)[i];
}

/* The case with `sets`, on backend `be`. */
static void load(heat_case *c, const test_sets *sets, const char *be)
{
    test_sets s = *sets;
    for (int i = 0; i < s.n; i++) s.ptr[i] = s.buf[i];
    test_sets_add(&s, "solver.backend=\"%s\"", be);
    memset(c, 0, sizeof *c);
    test_load_case(deck_now, "test_gpu_mg", &s, c);
}

/* A field of uniform random values in [0, 1), the Dirichlet faces holding
 * theirs (as the driver uploads them). */
static void *random_field(const heat_case *c, uint64_t seed)
{
    const size_t vs = heat_case_value_size(c);
    void *f = malloc((size_t)c->d.points * vs);
    assert_non_null(f);
    for (int64_t i = 0; i < c->d.points; i++) {
        const double x = test_uniform(&seed, 0.0, 1.0);
        const int64_t ix[3] = {i % c->grid.n[0], i / c->grid.n[0] % c->grid.n[1],
                               i / (c->grid.n[0] * c->grid.n[1])};
        double v = x;
        for (int f2 = 0; f2 < 2 * c->grid.dims; f2++) {
            const int a = f2 / 2;
            if (c->bc[f2].type == HEAT_BC_DIRICHLET && ix[a] == (f2 % 2 ? c->grid.n[a] - 1 : 0))
                v = c->bc[f2].value;
        }
        if (vs == sizeof(float))
            ((float *)f)[i] = (float)v;
        else
            ((double *)f)[i] = v;
    }
    return f;
}

/* The classes of the whole grid and their tables, as the driver gives them
 * to a backend before the multigrid hierarchy is built. */
static void set_classes(const heat_case *c, heat_backend *b, const char *be)
{
    const int64_t lo[3] = {0, 0, 0};
    uint8_t *cls = malloc((size_t)c->d.points);
    assert_non_null(cls);
    heat_classes t = {0};
    heat_coeffs k = {0};
    heat_error err;
    if (heat_materials_paint(c, lo, c->grid.n, cls, &t, NULL, &err) ||
        heat_case_coeffs(c, &t, &k, &err) || heat_backend_set_classes(b, cls, &k, &err))
        fail_msg("%s: classes: %s", be, err.msg);
    heat_coeffs_free(&k);
    free(cls);
}

/* `calls` advances of `steps` each on backend `be`: the final field, the
 * residual of each call, the solves' report after the last and the field's
 * statistics then (minimum, maximum, sum). */
static void *advance_on(const test_sets *sets, const char *be, int calls, int steps, double *resid,
                        heat_mg_info *info, double stats[3])
{
    heat_case c;
    load(&c, sets, be);
    heat_backend *b = NULL;
    heat_error err;
    if (heat_backend_create(&c, NULL, &b, &err)) fail_msg("%s: %s", be, err.msg);
    if (c.d.general) set_classes(&c, b, be);
    if (heat_backend_mg_setup(b, &err)) fail_msg("%s: mg_setup: %s", be, err.msg);
    void *f = random_field(&c, 12345);
    assert_int_equal(heat_backend_upload(b, f, &err), HEAT_OK);
    for (int i = 0; i < calls; i++)
        if (heat_backend_advance(b, steps, &resid[i], &err)) fail_msg("%s: %s", be, err.msg);
    assert_int_equal(heat_backend_download(b, f, &err), HEAT_OK);
    /* the probes' values (one node each) are the downloaded field's: the
     * first and last nodes and some between, planes apart */
    int64_t at[6] = {0, c.d.points - 1, c.d.points / 2, c.grid.n[0] * c.grid.n[1] + 1, 7, 0};
    at[5] = (c.grid.n[2] - 1) * c.grid.n[0] * c.grid.n[1] + c.grid.n[0];
    for (int i = 0; i < 6; i++)
        if (at[i] >= c.d.points) at[i] = c.d.points - 1 - i; /* 2D: one plane */
    double got[6];
    if (heat_backend_sample(b, 6, at, got, &err)) fail_msg("%s: sample: %s", be, err.msg);
    for (int i = 0; i < 6; i++)
        if (got[i] != fget(&c, f, at[i]))
            fail_msg("%s: node %lld sampled %.17g, downloaded %.17g", be, (long long)at[i], got[i],
                     fget(&c, f, at[i]));
    heat_backend_mg_info(b, info);
    if (heat_backend_field_stats(b, &stats[0], &stats[1], &stats[2], &err))
        fail_msg("%s: field_stats: %s", be, err.msg);
    heat_backend_destroy(b);
    return f;
}

/* The GPU's field, residuals and statistics against the CPU's: equal bits. */
static void compare(const test_sets *sets, int calls, int steps, const char *what)
{
    heat_case c;
    load(&c, sets, "cpu");
    double rc[8], rg[8], sc[3], sg[3];
    heat_mg_info ic, ig;
    void *fc = advance_on(sets, "cpu", calls, steps, rc, &ic, sc);
    void *fg = advance_on(sets, "cuda", calls, steps, rg, &ig, sg);
    double worst = 0;
    int64_t first = -1;
    for (int64_t i = 0; i < c.d.points; i++) {
        const double a = fget(&c, fc, i), b = fget(&c, fg, i);
        if (memcmp(&a, &b, sizeof a) != 0 && first < 0) first = i;
        worst = fmax(worst, fabs(a - b));
    }
    if (first >= 0)
        fail_msg("%s: first difference at index %lld: cpu %.17g, cuda %.17g; largest %.3g", what,
                 (long long)first, fget(&c, fc, first), fget(&c, fg, first), worst);
    for (int i = 0; i < calls; i++)
        if (memcmp(&rc[i], &rg[i], sizeof rc[i]) != 0)
            fail_msg("%s: call %d's residual: cpu %.17g, cuda %.17g", what, i, rc[i], rg[i]);
    static const char *const stat[3] = {"minimum", "maximum", "sum"};
    for (int i = 0; i < 3; i++)
        if (memcmp(&sc[i], &sg[i], sizeof sc[i]) != 0)
            fail_msg("%s: the field's %s: cpu %.17g, cuda %.17g", what, stat[i], sc[i], sg[i]);
    /* the same cycles, and (implicit steps) the same residual over max |b| */
    if (ic.total_cycles != ig.total_cycles || ic.reduction != ig.reduction)
        fail_msg("%s: cpu %lld V-cycles, reduction %.17g; cuda %lld, %.17g", what,
                 (long long)ic.total_cycles, ic.reduction, (long long)ig.total_cycles,
                 ig.reduction);
    free(fc);
    free(fg);
}

static void test_steady_cycles(void **state)
{
    (void)state;
    /* 3D with rows of an odd length (padded to whole groups on the finest
     * level; one node a thread under test_packed_rows), 2D with rows of a
     * multiple of 4 (groups of 16 bytes), 3D with such rows, x periodic,
     * and fewer rows than a tile has, the same with rows of an odd length
     * (the wrap inside a tile), rows shorter than a group of floats, a grid
     * small enough to be the coarsest level itself (solved directly, its
     * planes padded under test_padded_planes), and rows of several tiles,
     * odd and of 2 mod 4 values (the last group of floats part of a group,
     * of doubles a whole one, before the padding), x periodic too */
    static const char *const shapes[8][3] = {
        {"grid.points=[37, 29, 21]"},
        {"grid.points=[100, 65, 1]"},
        {"grid.points=[48, 7, 33]", "boundary.x_lo={type=\"periodic\";}",
         "boundary.x_hi={type=\"periodic\";}"},
        {"grid.points=[45, 9, 17]", "boundary.x_lo={type=\"periodic\";}",
         "boundary.x_hi={type=\"periodic\";}"},
        {"grid.points=[6, 35, 19]"},
        {"grid.points=[9, 7, 5]"},
        {"grid.points=[131, 9, 7]"},
        {"grid.points=[130, 9, 7]", "boundary.x_lo={type=\"periodic\";}",
         "boundary.x_hi={type=\"periodic\";}"}};
    for (int p = 0; p < 2; p++)
        for (int sh = 0; sh < 8; sh++) {
            test_sets s = {0};
            test_sets_add(&s, "solver.precision=\"%s\"", p ? "float" : "double");
            for (int i = 0; i < 3 && shapes[sh][i]; i++) test_sets_add(&s, "%s", shapes[sh][i]);
            char what[160];
            snprintf(what, sizeof what, "steady, %s, %s%s", p ? "float" : "double", shapes[sh][0],
                     shapes[sh][1] ? ", x periodic" : "");
            compare(&s, 3, 2, what);
        }
}

static void test_implicit_steps(void **state)
{
    (void)state;
    for (int p = 0; p < 2; p++)
        for (int scheme = 0; scheme < 2; scheme++) {
            test_sets s = {0};
            test_sets_add(&s, "solver.precision=\"%s\"", p ? "float" : "double");
            test_sets_add(&s, "steady={tolerance=1e-9; method=\"explicit\";}");
            test_sets_add(&s, "time={scheme=\"%s\"; dt=0.05; max_steps=10;}",
                          scheme ? "crank_nicolson" : "backward_euler");
            if (scheme) test_sets_add(&s, "grid.points=[40, 29, 21]"); /* 16-byte groups */
            char what[96];
            snprintf(what, sizeof what, "%s, %s", scheme ? "crank_nicolson" : "backward_euler",
                     p ? "float" : "double");
            compare(&s, 2, 3, what);
        }
}

/* Three materials, a source, a convective and a flux face: the steady
 * solve and backward-Euler steps, on rows of an odd length (one node a
 * thread on the finest level) and of a multiple of 4 (groups of 16
 * bytes), with x or z periodic too (classes read across the wrap). */
static void test_materials(void **state)
{
    (void)state;
    deck_now = deck_materials;
    static const char *const shapes[6][3] = {
        {"grid.points=[37, 29, 21]"},
        {"grid.points=[40, 29, 21]"},
        {"grid.points=[45, 7, 33]", "boundary.x_lo={type=\"periodic\";}",
         "boundary.x_hi={type=\"periodic\";}"},
        {"grid.points=[40, 13, 24]", "boundary.z_lo={type=\"periodic\";}",
         "boundary.z_hi={type=\"periodic\";}"},
        {"grid.points=[53, 30, 1]"},
        {"grid.points=[52, 30, 1]"}};
    for (int p = 0; p < 2; p++)
        for (int sh = 0; sh < 6; sh++)
            for (int implicit = 0; implicit < 2; implicit++) {
                test_sets s = {0};
                test_sets_add(&s, "solver.precision=\"%s\"", p ? "float" : "double");
                for (int i = 0; i < 3 && shapes[sh][i]; i++) test_sets_add(&s, "%s", shapes[sh][i]);
                if (implicit) {
                    test_sets_add(&s, "steady={tolerance=1e-9; method=\"explicit\";}");
                    test_sets_add(&s, "time={scheme=\"backward_euler\"; dt=0.05; max_steps=10;}");
                }
                char what[160];
                snprintf(what, sizeof what, "materials, %s, %s, %s%s",
                         implicit ? "backward_euler" : "steady", p ? "float" : "double",
                         shapes[sh][0], shapes[sh][1] ? ", periodic" : "");
                compare(&s, 2, 3, what);
            }
    deck_now = deck;
}

/* The materials again with the finest level's passes by the point kernel
 * (HEAT_CUDA_MG_POINT=1), the kernel of more materials than
 * k_mg_fine.cu stages. */
static void test_materials_point(void **state)
{
    assert_int_equal(setenv("HEAT_CUDA_MG_POINT", "1", 1), 0);
    test_materials(state);
    unsetenv("HEAT_CUDA_MG_POINT");
}

/* The steady cycles and implicit steps of one material again with every
 * finest-level pass by the kernel of two planes an iteration
 * (HEAT_CUDA_MG_PAIR=1: float and the residual too), then by the kernel of
 * one plane (=0: the double sweeps too). */
static void test_pair_forced(void **state)
{
    const char *both[] = {"1", "0"};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(setenv("HEAT_CUDA_MG_PAIR", both[i], 1), 0);
        test_steady_cycles(state);
        test_implicit_steps(state);
    }
    unsetenv("HEAT_CUDA_MG_PAIR");
}

/* Periodic and Neumann faces only: the mean is kept through an exact sum,
 * in float and double, on rows of an odd length and of whole 16-byte
 * groups, and with three materials (no source, flux faces that
 * balance). */
static void test_singular(void **state)
{
    (void)state;
    static const char *const shapes[2] = {"grid.points=[37, 29, 21]", "grid.points=[40, 29, 21]"};
    for (int mt = 0; mt < 2; mt++)
        for (int p = 0; p < 2; p++)
            for (int sh = 0; sh < 2; sh++) {
                deck_now = mt ? deck_materials : deck;
                test_sets s = {0};
                test_sets_add(&s, "solver.precision=\"%s\"", p ? "float" : "double");
                test_sets_add(&s, "%s", shapes[sh]);
                test_sets_add(&s, "boundary.x_lo={type=\"neumann\";}");
                test_sets_add(&s, "boundary.x_hi={type=\"neumann\";}");
                if (mt) { /* the conductivities differ along the z faces: flux faces */
                    test_sets_add(&s, "sources=()");
                    test_sets_add(&s, "boundary.z_lo={type=\"flux\"; value=0.5;}");
                    test_sets_add(&s, "boundary.z_hi={type=\"flux\"; value=-0.5;}");
                } else {
                    test_sets_add(&s, "boundary.z_lo={type=\"neumann\"; gradient=0.25;}");
                    test_sets_add(&s, "boundary.z_hi={type=\"neumann\"; gradient=-0.25;}");
                }
                char what[160];
                snprintf(what, sizeof what, "singular%s, %s, %s", mt ? ", materials" : "",
                         p ? "float" : "double", shapes[sh]);
                compare(&s, 3, 2, what);
            }
    deck_now = deck;
}

/* The GPU's exact sum (kernels/cuda/xsum.cuh, the kept mean's) against the
 * CPU's (kernels/xsum.h) on terms of every exponent, subnormals, zeros of
 * both signs, cancelling pairs, terms of a few binades (a thread's window
 * kept) and NaN and infinities, 1, 5 or 64 terms a thread: the same
 * digits. */
static void exact_sum_case(const double *v, int64_t n, const char *what)
{
    static const int pers[3] = {1, 5, 64};
    heat_xsum want;
    heat_xsum_zero(&want);
    for (int64_t i = 0; i < n; i++) heat_xsum_add(&want, v[i]);
    heat_xsum_normalise(&want);
    for (int p = 0; p < 3; p++) {
        heat_xsum got;
        heat_error err;
        if (heat_backend_gpu_xsum(v, n, pers[p], &got, &err)) fail_msg("%s: %s", what, err.msg);
        if (got.nonfinite != want.nonfinite)
            fail_msg("%s, %d a thread: nonfinite %d on the GPU, %d on the CPU", what, pers[p],
                     got.nonfinite, want.nonfinite);
        for (int i = 0; i < HEAT_XSUM_LIMBS; i++)
            if (!want.nonfinite && got.d[i] != want.d[i])
                fail_msg("%s, %d a thread: digit %d: GPU %lld, CPU %lld (sums %.17g, %.17g)", what,
                         pers[p], i, (long long)got.d[i], (long long)want.d[i],
                         heat_xsum_value(&got), heat_xsum_value(&want));
    }
}

static void test_exact_sum(void **state)
{
    (void)state;
    const int64_t n = 300007;
    double *v = malloc((size_t)n * sizeof *v);
    assert_non_null(v);
    uint64_t seed = 777;
    /* every exponent, either sign, some zeros */
    for (int64_t i = 0; i < n; i++) {
        const double m = test_uniform(&seed, 0.5, 1.0);
        const int e = (int)test_uniform(&seed, -1100.0, 1024.0);
        v[i] = (i % 2 ? -1 : 1) * ldexp(m, e);
        if (i % 97 == 0) v[i] = i % 2 ? -0.0 : 0.0;
    }
    exact_sum_case(v, n, "every exponent");
    /* pairs that cancel, shuffled, around a few small terms */
    for (int64_t i = 0; i + 1 < n; i += 2) v[i + 1] = -v[i];
    v[n - 1] = 4.9e-324;
    v[100] = 1e-300, v[101] = 3.0;
    for (int64_t i = n - 1; i > 0; i--) {
        const int64_t j = (int64_t)test_uniform(&seed, 0.0, (double)(i + 1)) % (i + 1);
        const double t = v[i];
        v[i] = v[j], v[j] = t;
    }
    exact_sum_case(v, n, "cancelling pairs");
    /* terms of a few binades, as a field's (rho c) V u */
    for (int64_t i = 0; i < n; i++)
        v[i] = test_uniform(&seed, -0.01, 0.1) * (i % 3 == 0 ? 0.25 : i % 3 == 1 ? 1.0 : 3.0);
    exact_sum_case(v, n, "a few binades");
    exact_sum_case(v, 1, "one term");
    exact_sum_case(v, 0, "no term");
    v[n / 2] = NAN;
    exact_sum_case(v, n, "with a NaN");
    v[n / 2] = INFINITY;
    v[7] = -INFINITY;
    exact_sum_case(v, n, "with infinities");
    free(v);
}

/* The steady cycles, implicit steps, materials and a singular problem again
 * with the finest level's rows packed (HEAT_CUDA_MG_ROWS=packed: rows of an
 * odd length one node a thread, as the split runs' own level 0). */
static void test_packed_rows(void **state)
{
    assert_int_equal(setenv("HEAT_CUDA_MG_ROWS", "packed", 1), 0);
    test_steady_cycles(state);
    test_implicit_steps(state);
    test_materials(state);
    test_singular(state);
    unsetenv("HEAT_CUDA_MG_ROWS");
}

/* Every case above again with the finest level's planes padded by 3 rows
 * (in 3D: the field's buffers, the level's arrays, the upload, download and
 * probes), as grids whose planes are 2 MiB get them (heat_mg_gpu_rows,
 * kernels/mg.h). */
static void test_padded_planes(void **state)
{
    assert_int_equal(setenv("HEAT_CUDA_MG_PAD", "3", 1), 0);
    test_steady_cycles(state);
    test_implicit_steps(state);
    test_materials(state);
    test_singular(state);
    unsetenv("HEAT_CUDA_MG_PAD");
}

int main(void)
{
    const int skip = gpu_tests_skip("test_gpu_mg");
    if (skip) return skip;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_steady_cycles), cmocka_unit_test(test_implicit_steps),
        cmocka_unit_test(test_materials),     cmocka_unit_test(test_materials_point),
        cmocka_unit_test(test_exact_sum),     cmocka_unit_test(test_singular),
        cmocka_unit_test(test_padded_planes), cmocka_unit_test(test_packed_rows),
        cmocka_unit_test(test_pair_forced),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
