/* The variable-coefficient update (materials, sources, convective and flux
 * faces) against what it must reproduce: its written formula bit for bit on
 * random material maps with every face type, steady states known in closed
 * form (layers in series, a convective face, a uniform source), the energy
 * balance of an insulated body with a source, and second order on a
 * manufactured solution with smoothly varying conductivity. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "driver.h"
#include "heat_case.h"
#include "initial.h"
#include "materials.h"
#include "test_util.h"

/* ------------------------------------------------------------ helpers */

/* Loads `deck` (output in a fresh scratch directory `name`) with the
 * overrides `sets` (NULL-terminated, may be NULL), runs it on the CPU and
 * returns the final field in double (caller frees) and the case. */
static double *run_deck(const char *deck, const char *name, const char *const *sets, heat_case *c,
                        heat_run_result *res)
{
    test_sets s = {0};
    test_sets_add(&s, "output.dir=\"%s\"", test_scratch_dir(name));
    test_sets_add(&s, "output.every=0");
    test_sets_add(&s, "solver.backend=\"cpu\"");
    for (int i = 0; sets && sets[i]; i++) test_sets_add(&s, "%s", sets[i]);
    char *text = NULL;
    test_load_case_text(deck, name, &s, c, &text);
    const size_t n = (size_t)c->d.points;
    void *raw = malloc(n * heat_case_value_size(c));
    double *u = malloc(n * sizeof *u);
    assert_non_null(raw);
    assert_non_null(u);
    heat_run_options opt = {.quiet = 1, .out = stdout, .notices = stderr, .field_out = raw};
    heat_error err;
    if (heat_run(c, text, &opt, res, &err)) fail_msg("%s: heat_run: %s", name, err.msg);
    for (size_t i = 0; i < n; i++)
        u[i] = c->solver.precision == HEAT_FLOAT ? ((float *)raw)[i] : ((double *)raw)[i];
    free(raw);
    free(text);
    return u;
}

/* A steady run must stop as steady, not at its step limit. */
static void expect_steady(const char *what, const heat_run_result *r)
{
    if (r->reason != HEAT_STOP_STEADY)
        fail_msg("%s: stopped as \"%s\" at step %lld (residual %g), expected a steady state", what,
                 heat_stop_reason_text(r->reason), (long long)r->final_step, r->last_residual);
}

/* max |u - want(x)| over the nodes of a (nx, 3, 1) grid, x = i h. */
static double max_error_1d(const double *u, int64_t nx, double h,
                           double (*want)(double x, const double *p), const double *p)
{
    double e = 0;
    for (int64_t j = 0; j < 3; j++)
        for (int64_t i = 0; i < nx; i++) {
            double d = fabs(u[j * nx + i] - want((double)i * h, p));
            if (!(d <= e)) e = d;
        }
    return e;
}

/* Runs a line deck (freed here) to its steady state and holds it to the
 * closed form want(x, p) within tol (max over the nodes); `dir` names the
 * run's directory, `what` the messages. */
static void expect_line_steady(char *deck, int64_t nx, double L, const char *dir, const char *what,
                               double (*want)(double x, const double *p), const double *p,
                               double tol)
{
    heat_case c;
    heat_run_result r;
    double *u = run_deck(deck, dir, NULL, &c, &r);
    expect_steady(what, &r);
    const double e = max_error_1d(u, nx, L / (double)(nx - 1), want, p);
    if (!(e <= tol)) fail_msg("%s: max error %g, expected <= %g", what, e, tol);
    free(u);
    free(deck);
}

/* A line along x: nx x 3 nodes, y faces insulated; `materials`, `extra`
 * (regions, sources) and the x faces are filled in. */
static char *line_deck(int64_t nx, double length, const char *materials, const char *extra,
                       const char *x_lo, const char *x_hi, double tolerance)
{
    const size_t cap = strlen(materials) + strlen(extra) + 2048;
    char *d = malloc(cap);
    assert_non_null(d);
    snprintf(d, cap,
             "grid = { points = [%lld, 3, 1]; length = [%#.17g, %#.17g, 1.0]; };\n"
             "%s\n%s\n"
             "time = { max_steps = 5000000; };\n"
             "steady = { tolerance = %#.17g; check_every = 200; };\n"
             "initial = { type = \"constant\"; value = 0.0; };\n"
             "boundary = { x_lo = %s; x_hi = %s;\n"
             "  y_lo = { type = \"neumann\"; gradient = 0.0; };\n"
             "  y_hi = { type = \"neumann\"; gradient = 0.0; }; };\n",
             (long long)nx, length, 2 * length / (double)(nx - 1), materials, extra, tolerance,
             x_lo, x_hi);
    return d;
}

/* ---------------------------------------------- closed-form steady states */

/* Two layers in series, the interface midway between nodes m and m + 1:
 * T = T0 - q x / k1 left of it, T1 + q (L - x) / k2 right of it, with the
 * flux q = (T0 - T1) / (xi / k1 + (L - xi) / k2). p = {T0, T1, k1, k2, xi, L}. */
static double series_want(double x, const double *p)
{
    const double q = (p[0] - p[1]) / (p[4] / p[2] + (p[5] - p[4]) / p[3]);
    return x < p[4] ? p[0] - q * x / p[2] : p[1] + q * (p[5] - x) / p[3];
}

static void test_layers_in_series(void **state)
{
    (void)state;
    const int64_t nx = 41, m = 14;
    const double L = 2.0, h = L / (double)(nx - 1), xi = ((double)m + 0.5) * h;
    const double p[6] = {3.0, -1.0, 5.0, 0.25, xi, L};
    char region[512];
    snprintf(region, sizeof region,
             "regions = ( { material = \"b\"; box = { min = [%#.17g, -1.0, -1.0]; max = [%#.17g, "
             "9.0, 1.0]; }; } );",
             xi, L);
    char *deck = line_deck(nx, L,
                           "materials = ( { name = \"a\"; conductivity = 5.0; density = 2.0; "
                           "specific_heat = 2.5; },\n"
                           "  { name = \"b\"; conductivity = 0.25; density = 0.5; "
                           "specific_heat = 0.5; } );",
                           region, "{ type = \"dirichlet\"; value = 3.0; }",
                           "{ type = \"dirichlet\"; value = -1.0; }", 1e-11);
    /* The discrete steady state is the analytic one (harmonic means are
     * exact for layers in series); what remains is the distance the
     * tolerance leaves, about tolerance L^2 / (pi^2 alpha_min). */
    expect_line_steady(deck, nx, L, "series", "layers in series", series_want, p, 1e-9);
}

/* T0 + s x with s = -h (T0 - Ta) / (k + h L). p = {T0, Ta, k, h, L}. */
static double convective_want(double x, const double *p)
{
    return p[0] - p[3] * (p[0] - p[1]) / (p[2] + p[3] * p[4]) * x;
}

static void test_convective_face(void **state)
{
    (void)state;
    const int64_t nx = 33;
    const double L = 0.5, p[5] = {80.0, 20.0, 2.0, 7.0, L};
    char *deck =
        line_deck(nx, L, "material = { conductivity = 2.0; density = 3.0; specific_heat = 1.0; };",
                  "", "{ type = \"dirichlet\"; value = 80.0; }",
                  "{ type = \"convective\"; h = 7.0; ambient = 20.0; }", 1e-10);
    expect_line_steady(deck, nx, L, "convective", "convective face", convective_want, p, 1e-8);
}

/* q x (L - x) / (2 k). p = {q, k, L}. */
static double source_want(double x, const double *p)
{
    return p[0] * x * (p[2] - x) / (2 * p[1]);
}

static void test_uniform_source(void **state)
{
    (void)state;
    const int64_t nx = 29;
    const double L = 1.5, p[3] = {40.0, 3.0, L};
    char *deck = line_deck(
        nx, L, "material = { conductivity = 3.0; density = 1.0; specific_heat = 2.0; };",
        "sources = ( { box = { min = [-1.0, -1.0, -1.0]; max = [9.0, 9.0, 1.0]; }; "
        "power_density = 40.0; } );",
        "{ type = \"dirichlet\"; value = 0.0; }", "{ type = \"dirichlet\"; value = 0.0; }", 1e-10);
    expect_line_steady(deck, nx, L, "source", "uniform source", source_want, p, 1e-8);
}

/* A flux face: heat F enters at x = 0, x_hi is held at T1, so T = T1 + F
 * (L - x) / k. p = {F, k, L, T1}. */
static double flux_want(double x, const double *p)
{
    return p[3] + p[0] * (p[2] - x) / p[1];
}

static void test_flux_face(void **state)
{
    (void)state;
    const int64_t nx = 25;
    const double L = 0.8, p[4] = {6.0, 1.5, L, 10.0};
    char *deck = line_deck(
        nx, L, "material = { conductivity = 1.5; density = 2.0; specific_heat = 1.0; };", "",
        "{ type = \"flux\"; value = 6.0; }", "{ type = \"dirichlet\"; value = 10.0; }", 1e-10);
    expect_line_steady(deck, nx, L, "flux", "flux face", flux_want, p, 1e-8);
}

/* ------------------------------------------------------- energy balance */

/* The trapezoid weight of node i of n on an axis of a non-periodic grid. */
static double trap(int64_t i, int64_t n)
{
    return n == 1 ? 1.0 : (i == 0 || i == n - 1) ? 0.5 : 1.0;
}

/* Insulated faces, two materials and two overlapping sources: the heat
 * content sum(w rho c T) grows by exactly sum(w q) dt per step (the same
 * trapezoid weights), to round-off, in 2D and 3D. */
static void energy_case(const char *points, int three_d)
{
    static const char deck[] =
        "materials = ( { name = \"a\"; conductivity = 2.0; density = 3.0; specific_heat = 0.5; },\n"
        "  { name = \"b\"; conductivity = 0.3; density = 1.0; specific_heat = 4.0; } );\n"
        "regions = ( { material = \"b\"; sphere = { center = [0.3, 0.4, 0.2]; radius = 0.25; }; "
        "} );\n"
        "sources = ( { box = { min = [0.0, 0.0, 0.0]; max = [0.5, 0.3, 0.5]; }; power_density = "
        "7.0; },\n"
        "  { cylinder = { axis = \"y\"; center = [0.6, 0.1]; radius = 0.2; min = 0.2; max = 0.8; "
        "}; power_density = 3.0; } );\n"
        "time = { max_steps = 300; };\n"
        "initial = { type = \"gaussian\"; center = [0.5, 0.5, 0.5]; width = 0.2; amplitude = 2.0; "
        "base = 1.0; };\n"
        "boundary = { x_lo = { type = \"neumann\"; gradient = 0.0; }; x_hi = { type = "
        "\"neumann\"; gradient = 0.0; };\n"
        "  y_lo = { type = \"neumann\"; gradient = 0.0; }; y_hi = { type = \"neumann\"; gradient "
        "= 0.0; };\n"
        "  z_lo = { type = \"neumann\"; gradient = 0.0; }; z_hi = { type = \"neumann\"; gradient "
        "= 0.0; }; };\n";
    char full[4096];
    snprintf(full, sizeof full, "grid = { points = [%s]; length = [1.0, 0.9, 0.7]; };\n%s", points,
             deck);
    heat_case c;
    heat_run_result r;
    double *u = run_deck(full, "energy", NULL, &c, &r);
    assert_int_equal(c.grid.dims, three_d ? 3 : 2);
    /* The initial field and the painted classes, independently of the run. */
    double *u0 = malloc(sizeof *u0 * (size_t)c.d.points);
    uint8_t *cls = malloc((size_t)c.d.points);
    heat_classes t;
    int contained[HEAT_SHAPES_MAX];
    heat_error err;
    const int64_t lo[3] = {0, 0, 0};
    if (heat_initial_fill(&c, u0, &err)) fail_msg("initial: %s", err.msg);
    if (heat_materials_paint(&c, lo, c.grid.n, cls, &t, contained, &err))
        fail_msg("paint: %s", err.msg);
    long double e0 = 0, e1 = 0, p = 0, scale = 0;
    const int64_t *n = c.grid.n;
    for (int64_t k = 0; k < n[2]; k++)
        for (int64_t j = 0; j < n[1]; j++)
            for (int64_t i = 0; i < n[0]; i++) {
                const int64_t at = (k * n[1] + j) * n[0] + i;
                const heat_material *m = &c.materials.m[t.material[cls[at]]];
                const double w = trap(i, n[0]) * trap(j, n[1]) * trap(k, n[2]);
                e0 += (long double)w * m->rho * m->cp * u0[at];
                e1 += (long double)w * m->rho * m->cp * u[at];
                p += (long double)w * t.power[cls[at]];
                scale += (long double)w * m->rho * m->cp * fabs(u[at]);
            }
    const double got = (double)(e1 - e0), want = (double)(p * r.final_step * c.d.dt);
    const double tol = 1e-12 * (double)scale;
    if (!(fabs(got - want) <= tol))
        fail_msg("energy %s: heat gained %#.17g, injected %#.17g (difference %g, allowed %g)",
                 points, got, want, got - want, tol);
    assert_true(want > 1e-3 * (double)scale); /* the sources matter */
    free(u);
    free(u0);
    free(cls);
}

static void test_energy_balance(void **state)
{
    (void)state;
    energy_case("23, 19, 1", 0);
    energy_case("17, 14, 11", 1);
}

/* ------------------------------------------------- manufactured solution */

/* k(x) = 1 + x / 2 + sin(3 x) / 4 sampled at every node (one material per
 * node, from a material file), x_lo at 1, x_hi at 0, no source: the steady
 * state is T(x) = 1 - F(x) / F(L) with F(x) = int_0^x 1/k.
 * The harmonic face means make the discrete flux a trapezoid sum of 1/k,
 * so the error falls as h^2. */
static double k_of(double x)
{
    return 1.0 + 0.5 * x + 0.25 * sin(3.0 * x);
}

/* int_0^x 1/k by Simpson's rule on 2^16 panels (error far below the test's). */
static double f_of(double x)
{
    const int n = 1 << 16;
    const double h = x / n;
    double s = 1.0 / k_of(0) + 1.0 / k_of(x);
    for (int i = 1; i < n; i++) s += (i % 2 ? 4.0 : 2.0) / k_of(i * h);
    return s * h / 3.0;
}

static void write_index_file(const char *path, int64_t nx)
{
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(f >= 0);
    const hsize_t dims[2] = {3, (hsize_t)nx};
    hid_t sp = H5Screate_simple(2, dims, NULL);
    hid_t ds = H5Dcreate2(f, "/material", H5T_STD_U8LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    uint8_t *v = malloc((size_t)(3 * nx));
    for (int64_t j = 0; j < 3; j++)
        for (int64_t i = 0; i < nx; i++) v[j * nx + i] = (uint8_t)i;
    assert_true(H5Dwrite(ds, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
    free(v);
    H5Dclose(ds);
    H5Sclose(sp);
    H5Fclose(f);
}

/* The largest error of the manufactured case on nx nodes. */
static double manufactured_error(int64_t nx)
{
    const double L = 2.0, h = L / (double)(nx - 1);
    char name[64], path[4200];
    snprintf(name, sizeof name, "manufactured_%lld", (long long)nx);
    snprintf(path, sizeof path, "%s/k.h5", test_scratch_dir("manufactured_files"));
    write_index_file(path, nx);
    size_t cap = 128 * (size_t)nx + 512, len = 0;
    char *mats = malloc(cap), *region = malloc(5000);
    len += (size_t)snprintf(mats + len, cap - len, "materials = (");
    for (int64_t i = 0; i < nx; i++)
        len += (size_t)snprintf(mats + len, cap - len,
                                "%s{ name = \"k%lld\"; conductivity = %#.17g; density = 1.0; "
                                "specific_heat = 1.0; }",
                                i ? ", " : "", (long long)i, k_of((double)i * h));
    snprintf(mats + len, cap - len, ");");
    snprintf(region, 5000, "regions = ( { file = { path = \"%s\"; dataset = \"/material\"; }; } );",
             path);
    char *deck = line_deck(nx, L, mats, region, "{ type = \"dirichlet\"; value = 1.0; }",
                           "{ type = \"dirichlet\"; value = 0.0; }", 1e-10);
    heat_case c;
    heat_run_result r;
    double *u = run_deck(deck, name, NULL, &c, &r);
    expect_steady(name, &r);
    const double fl = f_of(L);
    double e = 0;
    for (int64_t i = 0; i < nx; i++) {
        const double d = fabs(u[nx + i] - (1.0 - f_of((double)i * h) / fl));
        if (d > e) e = d;
    }
    free(u);
    free(deck);
    free(mats);
    free(region);
    return e;
}

static void test_manufactured_second_order(void **state)
{
    (void)state;
    const int64_t sizes[] = {17, 33, 65};
    double e[3];
    for (int s = 0; s < 3; s++) e[s] = manufactured_error(sizes[s]);
    for (int s = 1; s < 3; s++) {
        const double order = log2(e[s - 1] / e[s]);
        print_message("manufactured: n %lld error %.3e, n %lld error %.3e: order %.3f\n",
                      (long long)sizes[s - 1], e[s - 1], (long long)sizes[s], e[s], order);
        if (!(order > 1.9 && order < 2.1))
            fail_msg("manufactured solution: order %.3f between n = %lld and %lld (errors %g, "
                     "%g), expected 2",
                     order, (long long)sizes[s - 1], (long long)sizes[s], e[s - 1], e[s]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layers_in_series), cmocka_unit_test(test_convective_face),
        cmocka_unit_test(test_uniform_source),   cmocka_unit_test(test_flux_face),
        cmocka_unit_test(test_energy_balance),   cmocka_unit_test(test_manufactured_second_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
