/* Multigrid on the CPU backend (kernels/mg.h): the steady solve against the
 * exact linear profile (2D and 3D, grid sizes that are and are not 2^k + 1)
 * and against explicit time marching on decks with every kind of face,
 * materials and sources; the residual's reduction per V-cycle on a fixed
 * deck; a discrete sine mode under backward Euler and Crank-Nicolson with
 * dt 100 times the explicit limit; a singular problem (its mean kept, and
 * refused when its heat input does not balance); a restart of an implicit
 * run bit for bit; the deck's keys. Each case is loaded the way the program
 * loads it: deck text, --set overrides, heat_case_derive. */
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
#include "deck.h"
#include "driver.h"
#include "heat_case.h"
#include "initial.h"
#include "materials.h"
#include "mg.h"
#include "test_util.h"
#include "xsum.h"

/* ---- cases and runs --------------------------------------------------------------- */

static double fget(const heat_case *c, const void *f, int64_t i)
{
    return c->solver.precision == HEAT_FLOAT ? (double)((const float *)f)[i]
                                             : ((const double *)f)[i];
}

static void *field_alloc(const heat_case *c)
{
    void *f = calloc((size_t)c->d.points, heat_case_value_size(c));
    assert_non_null(f);
    return f;
}

static void load(heat_case *c, const char *deck, const test_sets *s)
{
    memset(c, 0, sizeof *c);
    test_load_case(deck, "test_mg", s, c);
}

/* A backend of the case with its multigrid set up, holding the case's
 * initial condition (filled into `field` too). */
static heat_backend *mg_start(const heat_case *c, void *field)
{
    heat_backend *b = NULL;
    heat_error err;
    assert_int_equal(heat_initial_fill(c, field, &err), HEAT_OK);
    assert_int_equal(heat_backend_create(c, NULL, &b, &err), HEAT_OK);
    if (heat_backend_mg_setup(b, &err)) fail_msg("%s", err.msg);
    assert_int_equal(heat_backend_upload(b, field, &err), HEAT_OK);
    return b;
}

/* Runs the case quietly into a scratch directory `name`; the final field in
 * `field` (may be NULL). Returns heat_run's status. */
static int run_case(const heat_case *c, const char *name, const char *restart, void *field,
                    heat_run_result *res, heat_error *err)
{
    heat_case rc = *c;
    if (!restart) {
        const char *dir = test_scratch_dir(name);
        snprintf(rc.output.dir, sizeof rc.output.dir, "%s", dir);
    }
    heat_run_options opt = {.restart = restart, .quiet = 1, .overwrite = 1, .field_out = field};
    opt.out = stdout;
    return heat_run(&rc, "# test_mg\n", &opt, res, err);
}

static void run_ok(const heat_case *c, const char *name, void *field, heat_run_result *res)
{
    heat_error err;
    const int rc = run_case(c, name, NULL, field, res, &err);
    if (rc) fail_msg("%s: heat_run: %s", name, err.msg);
}

/* max |a - b| over the field. */
static double max_diff(const heat_case *c, const void *a, const void *b)
{
    double m = 0;
    for (int64_t i = 0; i < c->d.points; i++) m = fmax(m, fabs(fget(c, a, i) - fget(c, b, i)));
    return m;
}

/* How far apart two fields whose residuals max |du/dt| are at most tol may
 * lie: the error e solves (rho c) de/dt-operator e = r, and the inverse of
 * the operator is bounded by the steady state of a unit source, at most
 * (2 L)^2 / (8 alpha) on a domain of largest extent L whose faces are at
 * worst insulated up to a Dirichlet one at its far end (alpha the smallest
 * diffusivity): so 2 tol (2 L)^2 / (8 alpha), both fields counted. */
static double agree_bound(double tol, double length, double alpha)
{
    return 2.0 * tol * (2.0 * length) * (2.0 * length) / (8.0 * alpha);
}

/* ---- the steady solve ---------------------------------------------------------------- */

static const char linear_deck[] =
    "grid = { points = [37, 37, 37]; length = [1.0, 1.0, 1.0]; };\n"
    "material = { diffusivity = 1.0; };\n"
    "steady = { tolerance = 1.0e-8; method = \"multigrid\"; stall_checks = 20; };\n"
    "initial = { type = \"constant\"; value = 0.0; };\n"
    "solver = { backend = \"cpu\"; };\n"
    "boundary = { x_lo = { type = \"dirichlet\"; value = 1.0; };\n"
    "  x_hi = { type = \"dirichlet\"; value = 0.0; };\n"
    "  y_lo = { type = \"neumann\"; }; y_hi = { type = \"neumann\"; };\n"
    "  z_lo = { type = \"periodic\"; }; z_hi = { type = \"periodic\"; }; };\n";

/* Between two Dirichlet faces, with the other faces insulated or periodic,
 * the steady state is linear in x: exactly the discrete solution too. */
static void test_linear_profile(void **state)
{
    (void)state;
    const int sizes[][3] = {{37, 37, 37}, {64, 64, 64}, {65, 65, 65},  {100, 100, 1}, {64, 37, 1},
                            {101, 65, 1}, {65, 100, 1}, {37, 100, 37}, {100, 9, 9}};
    for (size_t t = 0; t < sizeof sizes / sizeof *sizes; t++)
        for (int p = 0; p < 2; p++) {
            const int *n = sizes[t];
            /* Float: a tolerance above its rounding floor (eps |u| / dt_max). */
            const double tol = p ? 2e-2 * (n[0] - 1) * (n[0] - 1) / 4096.0 : 1e-8;
            test_sets s = {0};
            test_sets_add(&s, "grid.points=[%d,%d,%d]", n[0], n[1], n[2]);
            test_sets_add(&s, "solver.precision=\"%s\"", p ? "float" : "double");
            test_sets_add(&s, "steady.tolerance=%.17g", tol);
            heat_case c;
            load(&c, linear_deck, &s);
            void *f = field_alloc(&c);
            heat_run_result res;
            run_ok(&c, "mg_linear", f, &res);
            if (res.reason != HEAT_STOP_STEADY)
                fail_msg("%dx%dx%d %s: stopped as \"%s\" after %lld cycles", n[0], n[1], n[2],
                         p ? "float" : "double", heat_stop_reason_text(res.reason),
                         (long long)res.final_step);
            double err = 0;
            for (int64_t i = 0; i < c.d.points; i++) {
                const double x = (double)(i % n[0]) / (n[0] - 1);
                err = fmax(err, fabs(fget(&c, f, i) - (1.0 - x)));
            }
            const double bound = agree_bound(tol, 1.0, 1.0) / 2;
            if (!(err <= bound))
                fail_msg("%dx%dx%d %s: max |u - (1 - x)| = %.3g, above %.3g", n[0], n[1], n[2],
                         p ? "float" : "double", err, bound);
            free(f);
        }
}

/* The measure deck of docs/PERFORMANCE.md at 65^3: each V(2,2) cycle reduces
 * max |du/dt| by at least 5, and cycles 2 to 10 by at least 8 on (geometric)
 * average (measured: 7.4 and 10 to 12 in turn, 8.9 on average; the smoother
 * of two degree-2 Chebyshev halves gave 6.3). */
static void test_reduction_per_cycle(void **state)
{
    (void)state;
    static const char deck[] =
        "grid = { points = [65, 65, 65]; length = [1.0, 1.0, 1.0]; };\n"
        "material = { diffusivity = 1.0; };\n"
        "steady = { tolerance = 1.0e-5; method = \"multigrid\"; };\n"
        "initial = { type = \"constant\"; value = 0.0; };\n"
        "solver = { backend = \"cpu\"; };\n"
        "boundary = { x_lo = { type = \"dirichlet\"; value = 1.0; };\n"
        "  x_hi = { type = \"dirichlet\"; value = 0.0; };\n"
        "  y_lo = { type = \"dirichlet\"; value = 0.0; }; y_hi = { type = \"neumann\"; };\n"
        "  z_lo = { type = \"dirichlet\"; value = 0.0; }; z_hi = { type = \"neumann\"; }; };\n";
    heat_case c;
    load(&c, deck, NULL);
    void *f = field_alloc(&c);
    heat_backend *b = mg_start(&c, f);
    heat_error err;
    double prev = NAN, r, r1 = NAN;
    heat_mg_info info;
    for (int k = 1; k <= 10; k++) {
        assert_int_equal(heat_backend_advance(b, 1, &r, &err), HEAT_OK);
        heat_backend_mg_info(b, &info);
        if (k > 1 && !(r <= prev / 5.0))
            fail_msg("cycle %d reduced max |du/dt| from %.6g to %.6g: by %.3g, not by 5", k, prev,
                     r, prev / r);
        if (k == 1) r1 = r;
        prev = r;
    }
    const double mean = pow(r1 / r, 1.0 / 9.0);
    if (!(mean >= 8.0))
        fail_msg("cycles 2 to 10 reduced max |du/dt| by %.3g each on average, not by 8", mean);
    assert_int_equal(info.total_cycles, 10);
    assert_true(info.levels >= 3);
    heat_backend_destroy(b);
    free(f);
}

/* Every kind of face, two materials and a source, 2D and 3D: the steady
 * state of multigrid is the one explicit steps reach, within what the
 * tolerance allows. */
static const char faces_deck[] =
    "grid = { points = [33, 25, 1]; length = [1.0, 0.75, 0.5]; };\n"
    "materials = ( { name = \"a\"; conductivity = 1.0; density = 1.0; specific_heat = 1.0; },\n"
    "  { name = \"b\"; conductivity = 4.0; density = 2.0; specific_heat = 1.5; } );\n"
    "regions = ( { material = \"b\"; box = { min = [0.3, 0.2, 0.0]; max = [0.7, 0.5, 0.5]; }; } "
    ");\n"
    "sources = ( { power_density = 5.0; box = { min = [0.1, 0.1, 0.0]; max = [0.25, 0.3, 0.5]; "
    "}; } );\n"
    "steady = { tolerance = 1.0e-8; check_every = 200; stall_checks = 0; };\n"
    "initial = { type = \"constant\"; value = 0.5; };\n"
    "solver = { backend = \"cpu\"; };\n";

static const char *const face_sets[][2] = {
    {"dirichlet, convective, flux, neumann",
     "boundary = { x_lo = { type = \"dirichlet\"; value = 1.0; };\n"
     "  x_hi = { type = \"convective\"; h = 3.0; ambient = 0.25; };\n"
     "  y_lo = { type = \"flux\"; value = 0.5; }; y_hi = { type = \"neumann\"; gradient = -0.3; "
     "};\n"
     "  z_lo = { type = \"dirichlet\"; value = 0.0; }; z_hi = { type = \"neumann\"; }; };\n"},
    {"periodic, convective",
     "boundary = { x_lo = { type = \"periodic\"; }; x_hi = { type = \"periodic\"; };\n"
     "  y_lo = { type = \"convective\"; h = 2.0; ambient = 0.0; };\n"
     "  y_hi = { type = \"dirichlet\"; value = 0.75; };\n"
     "  z_lo = { type = \"flux\"; value = 1.0; }; z_hi = { type = \"convective\"; h = 1.0; "
     "ambient = 1.0; }; };\n"},
};

static void test_agrees_with_explicit(void **state)
{
    (void)state;
    for (size_t t = 0; t < sizeof face_sets / sizeof *face_sets; t++)
        for (int dims = 2; dims <= 3; dims++) {
            char deck[8192];
            snprintf(deck, sizeof deck, "%s%s", faces_deck, face_sets[t][1]);
            test_sets s = {0};
            if (dims == 3) test_sets_add(&s, "grid.points=[17, 13, 9]");
            heat_case ce, cm;
            load(&ce, deck, &s);
            test_sets_add(&s, "steady.method=\"multigrid\"");
            load(&cm, deck, &s);
            void *fe = field_alloc(&ce), *fm = field_alloc(&cm);
            heat_run_result re, rm;
            run_ok(&ce, "mg_faces_explicit", fe, &re);
            run_ok(&cm, "mg_faces_multigrid", fm, &rm);
            assert_int_equal(re.reason, HEAT_STOP_STEADY);
            assert_int_equal(rm.reason, HEAT_STOP_STEADY);
            /* the smallest diffusivity: material a's 1 / (1 1) = 1, b's 4 / 3 */
            const double d = max_diff(&ce, fe, fm), bound = agree_bound(1e-8, 1.0, 1.0);
            if (!(d <= bound))
                fail_msg("%s, %dD: multigrid and explicit steady states differ by %.3g, above "
                         "%.3g",
                         face_sets[t][0], dims, d, bound);
            free(fe);
            free(fm);
        }
}

/* No Dirichlet or convective face: the steady state is fixed up to a
 * constant, and multigrid keeps the start's (rho c) V-weighted mean, as
 * explicit steps do. Sources and faces that do not balance are refused. */
static void test_singular(void **state)
{
    (void)state;
    static const char deck[] =
        "grid = { points = [33, 33, 1]; length = [1.0, 1.0, 1.0]; };\n"
        "materials = ( { name = \"a\"; conductivity = 1.0; density = 1.0; specific_heat = 1.0; "
        "} );\n"
        "sources = ( { power_density = 1.0; box = { min = [0.2, 0.2, 0.0]; max = [0.4, 0.4, "
        "1.0]; }; },\n"
        "  { power_density = -1.0; box = { min = [0.6, 0.6, 0.0]; max = [0.8, 0.8, 1.0]; }; } );\n"
        "steady = { tolerance = 1.0e-8; check_every = 200; stall_checks = 0; };\n"
        "initial = { type = \"gaussian\"; center = [0.3, 0.6, 0.0]; width = 0.2; amplitude = "
        "1.0; };\n"
        "solver = { backend = \"cpu\"; };\n"
        "boundary = { x_lo = { type = \"periodic\"; }; x_hi = { type = \"periodic\"; };\n"
        "  y_lo = { type = \"neumann\"; }; y_hi = { type = \"neumann\"; }; };\n";
    heat_case ce, cm;
    test_sets s = {0};
    load(&ce, deck, &s);
    test_sets_add(&s, "steady.method=\"multigrid\"");
    load(&cm, deck, &s);
    void *fe = field_alloc(&ce), *fm = field_alloc(&cm);
    heat_run_result re, rm;
    run_ok(&ce, "mg_singular_explicit", fe, &re);
    run_ok(&cm, "mg_singular_multigrid", fm, &rm);
    assert_int_equal(rm.reason, HEAT_STOP_STEADY);
    const double d = max_diff(&ce, fe, fm), bound = agree_bound(1e-8, 1.0, 1.0);
    if (!(d <= bound)) fail_msg("singular: the steady states differ by %.3g, above %.3g", d, bound);
    /* unbalanced: a deck error, nothing run */
    test_sets_add(&s,
                  "sources=({power_density=1.0; box={min=[0.2,0.2,0.0]; max=[0.4,0.4,1.0];};})");
    heat_case cu;
    load(&cu, deck, &s);
    heat_error err;
    assert_int_equal(run_case(&cu, "mg_singular_refused", NULL, NULL, &rm, &err), HEAT_EINPUT);
    test_expect_in("error", err.msg, "sums to zero");
    free(fe);
    free(fm);
}

/* ---- implicit steps --------------------------------------------------------------------- */

static const char sine_deck[] =
    "grid = { points = [65, 65, 1]; length = [1.0, 1.0, 1.0]; };\n"
    "material = { diffusivity = 1.0; };\n"
    "time = { scheme = \"backward_euler\"; dt = 1.0; max_steps = 4; };\n"
    "initial = { type = \"sine\"; modes = [1.0, 2.0, 1.0]; amplitude = 1.0; };\n"
    "solver = { backend = \"cpu\"; };\n"
    "boundary = { x_lo = { type = \"dirichlet\"; value = 0.0; };\n"
    "  x_hi = { type = \"dirichlet\"; value = 0.0; };\n"
    "  y_lo = { type = \"dirichlet\"; value = 0.0; }; y_hi = { type = \"dirichlet\"; value = 0.0; "
    "};\n"
    "  z_lo = { type = \"dirichlet\"; value = 0.0; }; z_hi = { type = \"dirichlet\"; value = 0.0; "
    "}; };\n";

/* The eigenvalue of the discrete Laplacian for the sine mode of the deck:
 * sum_d (2 - 2 cos(k_d pi h_d)) / h_d^2. */
static double lambda_h(const heat_case *c)
{
    double l = 0;
    for (int d = 0; d < c->grid.dims; d++) {
        const double h = c->d.h[d], k = c->initial.modes[d];
        l += (2.0 - 2.0 * cos(k * M_PI * h)) / (h * h);
    }
    return l * c->alpha;
}

/* A discrete sine mode with zero Dirichlet faces is an eigenvector of the
 * operator: backward Euler multiplies it by 1 / (1 + dt lambda) per step,
 * Crank-Nicolson by (1 - dt lambda / 2) / (1 + dt lambda / 2), to the
 * accuracy of the solve (1e-10 relative), with dt 100 times the explicit
 * limit. */
static void test_sine_decay(void **state)
{
    (void)state;
    for (int scheme = 0; scheme < 2; scheme++)
        for (int dims = 2; dims <= 3; dims++) {
            test_sets s = {0};
            if (dims == 3) test_sets_add(&s, "grid.points=[33, 33, 33]");
            test_sets_add(&s, "time.scheme=\"%s\"", scheme ? "crank_nicolson" : "backward_euler");
            heat_case c;
            load(&c, sine_deck, &s);
            test_sets_add(&s, "time.dt=%.17g", 100.0 * c.d.dt_max);
            load(&c, sine_deck, &s);
            void *f0 = field_alloc(&c), *f = field_alloc(&c);
            heat_error err;
            assert_int_equal(heat_initial_fill(&c, f0, &err), HEAT_OK);
            heat_run_result res;
            run_ok(&c, "mg_sine", f, &res);
            assert_int_equal(res.final_step, 4);
            const double x = c.d.dt * lambda_h(&c);
            const double g = scheme ? (1 - x / 2) / (1 + x / 2) : 1 / (1 + x);
            double m = 0;
            for (int64_t i = 0; i < c.d.points; i++)
                m = fmax(m, fabs(fget(&c, f, i) - pow(g, 4) * fget(&c, f0, i)));
            if (!(m <= 1e-9))
                fail_msg("%s, %dD, dt = %.3g (100 dt_max): after 4 steps max |u - g^4 u0| = %.3g "
                         "(g = %.9f)",
                         scheme ? "crank_nicolson" : "backward_euler", dims, c.d.dt, m, g);
            /* and backward Euler takes few V-cycles per step */
            if (!scheme && !(res.mg_cycles <= 4 * 12))
                fail_msg("%dD: %lld V-cycles for 4 backward Euler steps", dims,
                         (long long)res.mg_cycles);
            free(f0);
            free(f);
        }
}

/* max |b - A u1| / ((rho c) V) of a backward Euler step from u0 to u1 over
 * the nodes not held, evaluated here from the case alone (one material, every
 * face Dirichlet: each node not held is the centre of a whole cell, and
 * (b - A u1) / ((rho c) V) = (u0 - u1) / dt + alpha lap_h u1); *bmax:
 * max |b| / ((rho c) V) = max |u0| / dt over the same nodes. */
static double be_residual(const heat_case *c, const void *u0, const void *u1, double *bmax)
{
    const int64_t *n = c->grid.n, sy = n[0], sz = n[0] * n[1];
    const int64_t st[3] = {1, sy, sz};
    double rm = 0, bm = 0;
    for (int64_t k = c->grid.dims > 2; k < n[2] - (c->grid.dims > 2); k++)
        for (int64_t j = 1; j < n[1] - 1; j++)
            for (int64_t i = 1; i < n[0] - 1; i++) {
                const int64_t p = k * sz + j * sy + i;
                const double u = fget(c, u1, p);
                double lap = 0;
                for (int d = 0; d < c->grid.dims; d++)
                    lap += (fget(c, u1, p - st[d]) - 2.0 * u + fget(c, u1, p + st[d])) /
                           (c->d.h[d] * c->d.h[d]);
                const double r = (fget(c, u0, p) - u) / c->d.dt + c->alpha * lap;
                rm = fmax(rm, fabs(r));
                bm = fmax(bm, fabs(fget(c, u0, p)) / c->d.dt);
            }
    *bmax = bm;
    return rm;
}

/* The solve's tolerance is relative to the step's right-hand side: steps of
 * a transient that has nearly settled start close to their solution and
 * take far fewer V-cycles than the first step from a rough field (relative
 * to the step's first residual, each would take as many), and every step's
 * residual, evaluated here, is at most tolerance max |b| / ((rho c) V). A
 * right-hand side of zero solves to the rounding floor: no cycle at all for
 * a zero field between zero faces. */
static void test_tolerance_of_rhs(void **state)
{
    (void)state;
    const double tol = 1e-6;
    test_sets s = {0};
    test_sets_add(&s, "grid.points=[33, 33, 33]");
    test_sets_add(&s, "initial={type=\"constant\"; value=0.5;}");
    test_sets_add(&s, "boundary.x_lo={type=\"dirichlet\"; value=1.0;}");
    test_sets_add(&s, "solver.implicit_tolerance=%.17g", tol);
    heat_case c;
    load(&c, sine_deck, &s);
    test_sets_add(&s, "time.dt=%.17g", 100.0 * c.d.dt_max);
    load(&c, sine_deck, &s);
    void *u0 = field_alloc(&c), *u1 = field_alloc(&c);
    heat_backend *b = mg_start(&c, u0);
    heat_error err;
    const int steps = 30;
    int64_t cycles[30];
    double r;
    heat_mg_info info;
    for (int n = 0; n < steps; n++) {
        assert_int_equal(heat_backend_advance(b, 1, &r, &err), HEAT_OK);
        assert_int_equal(heat_backend_download(b, u1, &err), HEAT_OK);
        heat_backend_mg_info(b, &info);
        cycles[n] = info.cycles;
        double bmax;
        const double res = be_residual(&c, u0, u1, &bmax);
        if (info.stalled || !(res <= tol * bmax) || !(info.reduction <= tol))
            fail_msg("step %d: max |b - A u| = %.3g, above %.3g = tolerance max |b| (the backend's "
                     "ratio %.3g%s)",
                     n + 1, res, tol * bmax, info.reduction, info.stalled ? ", stalled" : "");
        memcpy(u0, u1, (size_t)c.d.points * heat_case_value_size(&c));
    }
    if (!(2 * cycles[steps - 1] <= cycles[0]))
        fail_msg("step %d of a settling transient took %lld V-cycles, the first %lld: not half",
                 steps, (long long)cycles[steps - 1], (long long)cycles[0]);
    heat_backend_destroy(b);
    /* From rest (b = 0), x_lo at 1: to the rounding floor, 16 eps |u|max
     * (1 / dt + 1 / dt_max) (mg_solve.c), within twice that for the
     * rounding of the evaluation here; a zero field between zero faces is
     * solved already. */
    for (int hot = 1; hot >= 0; hot--) {
        test_sets z = s;
        for (int i = 0; i < z.n; i++) z.ptr[i] = z.buf[i];
        test_sets_add(&z, "initial={type=\"constant\"; value=0.0;}");
        test_sets_add(&z, "boundary.x_lo={type=\"dirichlet\"; value=%d.0;}", hot);
        load(&c, sine_deck, &z);
        b = mg_start(&c, u0);
        assert_int_equal(heat_backend_advance(b, 1, &r, &err), HEAT_OK);
        assert_int_equal(heat_backend_download(b, u1, &err), HEAT_OK);
        heat_backend_mg_info(b, &info);
        double bmax;
        const double res = be_residual(&c, u0, u1, &bmax);
        const double floor = 16.0 * 0x1p-52 * hot * (1.0 / c.d.dt + 1.0 / c.d.dt_max);
        assert_true(bmax == 0);
        assert_false(info.stalled);
        if (!(res <= 2.0 * floor))
            fail_msg("from rest, x_lo at %d: residual %.3g after %lld V-cycles, above the floor "
                     "%.3g",
                     hot, res, (long long)info.cycles, floor);
        if (!hot) assert_int_equal(info.cycles, 0);
        heat_backend_destroy(b);
    }
    free(u0);
    free(u1);
}

/* N implicit steps, a restart from the checkpoint at N, N more: the same
 * field bit for bit as 2N steps straight (both schemes, float and double). */
static void test_implicit_restart(void **state)
{
    (void)state;
    for (int p = 0; p < 2; p++)
        for (int scheme = 0; scheme < 2; scheme++) {
            test_sets s = {0};
            test_sets_add(&s, "grid.points=[33, 21, 17]");
            test_sets_add(&s, "solver.precision=\"%s\"", p ? "float" : "double");
            test_sets_add(&s, "time.scheme=\"%s\"", scheme ? "crank_nicolson" : "backward_euler");
            test_sets_add(&s, "time.dt=0.01");
            test_sets_add(&s, "initial={type=\"gaussian\"; center=[0.3,0.4,0.5]; width=0.2; "
                              "amplitude=1.0;}");
            test_sets_add(&s, "boundary.y_hi={type=\"neumann\"; gradient=0.5;}");
            test_sets_add(&s, "time.max_steps=6");
            heat_case a, b;
            load(&a, sine_deck, &s);
            test_sets_add(&s, "time.max_steps=3");
            load(&b, sine_deck, &s);
            void *fa = field_alloc(&a), *fb = field_alloc(&a);
            heat_run_result ra, rb;
            run_ok(&a, "mg_restart_a", fa, &ra);
            /* 3 steps into a directory, then on to 6 from its latest checkpoint */
            const char *dir = test_scratch_dir("mg_restart_b");
            snprintf(b.output.dir, sizeof b.output.dir, "%s", dir);
            heat_case b2 = a;
            snprintf(b2.output.dir, sizeof b2.output.dir, "%s", dir);
            heat_run_options first = {.quiet = 1},
                             second = {.restart = "latest", .quiet = 1, .field_out = fb};
            heat_error err;
            if (heat_run(&b, sine_deck, &first, &rb, &err)) fail_msg("%s", err.msg);
            assert_int_equal(rb.final_step, 3);
            if (heat_run(&b2, sine_deck, &second, &rb, &err)) fail_msg("%s", err.msg);
            assert_int_equal(rb.start_step, 3);
            assert_int_equal(rb.final_step, 6);
            if (memcmp(fa, fb, (size_t)a.d.points * heat_case_value_size(&a)) != 0)
                fail_msg("%s, %s: the restarted run differs from the straight one by %.3g",
                         p ? "float" : "double", scheme ? "crank_nicolson" : "backward_euler",
                         max_diff(&a, fa, fb));
            free(fa);
            free(fb);
        }
}

/* A float run whose implicit tolerance lies below what float resolves still
 * ends each step at the rounding floor; a steady multigrid tolerance below
 * float's floor stalls (exit status 3 through heat run). */
static void test_float_floor(void **state)
{
    (void)state;
    test_sets s = {0};
    test_sets_add(&s, "solver.precision=\"float\"");
    test_sets_add(&s, "solver.implicit_tolerance=1e-12");
    test_sets_add(&s, "time.dt=0.01");
    heat_case c;
    load(&c, sine_deck, &s);
    heat_run_result res;
    run_ok(&c, "mg_float_floor", NULL, &res);
    assert_int_equal(res.reason, HEAT_STOP_MAX_STEPS);
    test_sets t = {0};
    test_sets_add(&t, "solver.precision=\"float\"");
    test_sets_add(&t, "steady.tolerance=1e-9");
    test_sets_add(&t, "steady.stall_checks=5");
    load(&c, linear_deck, &t);
    run_ok(&c, "mg_float_stall", NULL, &res);
    assert_int_equal(res.reason, HEAT_STOP_STALLED);
    /* A field that decays below the smallest normal number (dt = 100: a
     * factor of about 2e-4 a step) has met its floor: no stall. */
    for (int p = 0; p < 2; p++) {
        test_sets d = {0};
        test_sets_add(&d, p ? "solver.precision=\"double\"" : "solver.precision=\"float\"");
        test_sets_add(&d, "time.dt=100.0");
        test_sets_add(&d, p ? "time.max_steps=100" : "time.max_steps=20");
        load(&c, sine_deck, &d);
        run_ok(&c, p ? "mg_double_underflow" : "mg_float_underflow", NULL, &res);
        assert_int_equal(res.reason, HEAT_STOP_MAX_STEPS);
    }
}

/* ---- the deck ------------------------------------------------------------------------------ */

static void expect_refused(const char *deck, const char *set, const char *needle)
{
    heat_case c;
    heat_error err;
    const char *sets[] = {set};
    int rc = heat_deck_load_string(deck, "deck.cfg", sets, 1, &c, NULL, NULL, &err);
    if (rc == HEAT_OK) rc = heat_case_derive(&c, &err);
    if (rc != HEAT_EINPUT) fail_msg("--set %s: accepted (%d)", set, rc);
    test_expect_in("error", err.msg, needle);
}

/* heat_mg_plan (what `heat check` reports) gives the levels and bytes of
 * the hierarchy heat_mg_build makes: steady and implicit, 2D and 3D, odd,
 * even and periodic axes, a right-hand side from a Neumann gradient, and
 * materials with a source. */
static void test_plan_matches_build(void **state)
{
    (void)state;
    static const char *const sets[][4] = {
        {"grid.points=[37, 37, 37]"},
        {"grid.points=[64, 33, 20]", "boundary.y_lo={type=\"neumann\"; gradient=0.5;}"},
        {"grid.points=[100, 65, 1]", "solver.precision=\"float\""},
        {"grid.points=[41, 30, 17]", "steady={tolerance=1e-6; method=\"explicit\";}",
         "time={scheme=\"backward_euler\"; dt=0.01; max_steps=2;}"},
    };
    for (int i = 0; i < 5; i++) {
        heat_case c;
        test_sets s = {0};
        if (i < 4) {
            for (int j = 0; j < 4 && sets[i][j]; j++) test_sets_add(&s, "%s", sets[i][j]);
            load(&c, linear_deck, &s);
        } else {
            char deck[8192];
            snprintf(deck, sizeof deck, "%s%s", faces_deck, face_sets[0][1]);
            test_sets_add(&s, "steady.method=\"multigrid\"");
            test_sets_add(&s, "grid.points=[17, 13, 9]");
            /* faces that put no heat in: the source alone makes b0 */
            test_sets_add(&s, "boundary.x_hi={type=\"dirichlet\"; value=0.0;}");
            test_sets_add(&s, "boundary.y_lo={type=\"neumann\";}");
            test_sets_add(&s, "boundary.y_hi={type=\"neumann\";}");
            load(&c, deck, &s);
        }
        uint8_t *cls = NULL;
        heat_classes t;
        heat_coeffs k;
        heat_error err;
        memset(&t, 0, sizeof t);
        memset(&k, 0, sizeof k);
        if (c.d.general) {
            cls = malloc((size_t)c.d.points);
            assert_non_null(cls);
            const int64_t lo[3] = {0, 0, 0};
            assert_int_equal(heat_materials_paint(&c, lo, c.grid.n, cls, &t, NULL, &err), HEAT_OK);
            assert_int_equal(heat_case_coeffs(&c, &t, &k, &err), HEAT_OK);
        }
        heat_mg *m = NULL;
        if (heat_mg_build(&c, cls, c.d.general ? &k : NULL, &m, &err)) fail_msg("%s", err.msg);
        int levels = 0;
        double bytes = 0;
        assert_int_equal(heat_mg_plan(&c, &levels, &bytes, &err), HEAT_OK);
        const double built = heat_mg_bytes(m, heat_case_value_size(&c));
        if (levels != m->levels || bytes != built)
            fail_msg("case %d: plan %d levels, %.0f bytes; build %d levels, %.0f bytes", i, levels,
                     bytes, m->levels, built);
        heat_mg_free(m);
        if (c.d.general) heat_coeffs_free(&k);
        free(cls);
    }
}

/* heat_mg_plan_part (heat check --ranks N): a rank of a split holds less
 * than the whole hierarchy, the ranks together at least all of it (their
 * boxes cover the split levels, the coarse ones are on each), and a split
 * of one rank is the whole grid with its gather level held twice (its box
 * and the whole level). */
static void test_plan_part(void **state)
{
    (void)state;
    heat_case c;
    test_sets s = {0};
    test_sets_add(&s, "grid.points=[129, 80, 65]");
    load(&c, linear_deck, &s);
    heat_error err;
    int levels, split, split1;
    double whole, b0, b1, one;
    assert_int_equal(heat_mg_plan(&c, &levels, &whole, &err), HEAT_OK);
    const int r2[3] = {2, 1, 1}, r1[3] = {1, 1, 1};
    assert_int_equal(heat_mg_plan_part(&c, r2, 0, &b0, &split, &err), HEAT_OK);
    assert_int_equal(heat_mg_plan_part(&c, r2, 1, &b1, &split, &err), HEAT_OK);
    assert_int_equal(heat_mg_plan_part(&c, r1, 0, &one, &split1, &err), HEAT_OK);
    assert_true(split >= 2 && split < levels);
    assert_true(b0 < whole && b1 < whole);
    assert_true(b0 + b1 > whole);
    assert_true(one > whole && one < 1.25 * whole);
}

static void test_deck_keys(void **state)
{
    (void)state;
    expect_refused(linear_deck, "steady.method=\"newton\"",
                   "steady.method = \"newton\": expected one of \"explicit\", \"multigrid\"");
    expect_refused(sine_deck, "time.scheme=\"rk4\"", "time.scheme = \"rk4\"");
    expect_refused(sine_deck, "time.scheme=\"rk4\"", "\"backward_euler\"");
    expect_refused(sine_deck, "solver.implicit_tolerance=1.5",
                   "solver.implicit_tolerance = 1.5: expected a number in (0, 1)");
    expect_refused(sine_deck, "solver.implicit_tolerance=0", "in (0, 1)");
    expect_refused(sine_deck, "time={scheme=\"backward_euler\"; max_steps=3;}",
                   "--set: time.scheme = \"backward_euler\" needs time.dt");
    expect_refused(linear_deck, "time={scheme=\"crank_nicolson\"; dt=0.1; max_steps=3;}",
                   "steady.method = \"multigrid\" solves the steady state directly");
    /* a split is the driver's to check (heat_mg_split_check): the deck
     * accepts one, a singular steady problem too; a one-level grid cannot be
     * split */
    {
        test_sets t = {0};
        test_sets_add(&t, "parallel.ranks=[2, 1, 1]");
        heat_case c;
        heat_error err;
        load(&c, linear_deck, &t);
        assert_int_equal(heat_mg_split_check(&c, &err), HEAT_OK);
        test_sets_add(&t, "boundary.x_lo={type=\"neumann\"; gradient=0.0;}");
        test_sets_add(&t, "boundary.x_hi={type=\"neumann\"; gradient=0.0;}");
        load(&c, linear_deck, &t);
        assert_int_equal(heat_mg_split_check(&c, &err), HEAT_OK); /* its mean: exact */
        test_sets u = {0};
        test_sets_add(&u, "grid.points=[7, 7, 7]");
        load(&c, linear_deck, &u);
        assert_int_equal(heat_mg_split_check(&c, &err), HEAT_EINPUT);
        test_expect_in("error", err.msg, "solved directly");
    }
    /* an implicit dt far above the explicit limit is accepted */
    test_sets s = {0};
    test_sets_add(&s, "time.dt=1e3");
    heat_case c;
    load(&c, sine_deck, &s);
    assert_true(c.d.dt == 1e3 && c.d.dt > 1e6 * c.d.dt_max);
    assert_true(c.solver.implicit_tolerance == 1e-10);
}

/* The exact sum (kernels/xsum.h) of a singular problem's kept mean: the
 * same bits in any order and any partition (threads, ranks: the limbs
 * summed as doubles), within an ulp of the true sum, NaN with a NaN term. */
static void test_exact_sum(void **state)
{
    (void)state;
    enum { N = 20000 };
    static double v[N];
    long double ref = 0;
    srand(7);
    for (int i = 0; i < N; i++) v[i] = ldexp((double)rand() / RAND_MAX - 0.5, rand() % 120 - 60);
    v[17] = 0x1p-1074, v[18] = -0x1p1000, v[19] = 0x1p1000; /* subnormal, cancelling */
    for (int i = 0; i < N; i++)
        if (i != 18 && i != 19) ref += v[i]; /* the two cancel exactly */
    heat_xsum fwd, bwd, part[3], all;
    heat_xsum_zero(&fwd), heat_xsum_zero(&bwd), heat_xsum_zero(&all);
    for (int i = 0; i < N; i++) heat_xsum_add(&fwd, v[i]);
    for (int i = N - 1; i >= 0; i--) heat_xsum_add(&bwd, v[i]);
    double limbs[HEAT_XSUM_LIMBS + 1], total[HEAT_XSUM_LIMBS + 1] = {0};
    for (int r = 0; r < 3; r++) {
        heat_xsum_zero(&part[r]);
        for (int i = r; i < N; i += 3) heat_xsum_add(&part[r], v[i]);
        heat_xsum_limbs_out(&part[r], limbs);
        for (int q = 0; q <= HEAT_XSUM_LIMBS; q++) total[q] += limbs[q];
    }
    heat_xsum_limbs_in(&all, total);
    const double a = heat_xsum_value(&fwd);
    assert_true(a == heat_xsum_value(&bwd));
    assert_true(a == heat_xsum_value(&all));
    heat_xsum_merge(&part[0], &part[1]);
    heat_xsum_merge(&part[0], &part[2]);
    assert_true(a == heat_xsum_value(&part[0]));
    assert_true(fabsl((long double)a - ref) <= 2 * nextafter(fabs(a), INFINITY) - 2 * fabs(a));
    /* a plain sum in two orders: not the same bits (what the accumulator fixes) */
    double s1 = 0, s2 = 0;
    for (int i = 0; i < N; i++) s1 += v[i];
    for (int i = N - 1; i >= 0; i--) s2 += v[i];
    if (s1 == s2) print_message("note: the plain sums happened to agree\n");
    heat_xsum_add(&fwd, NAN);
    assert_true(isnan(heat_xsum_value(&fwd)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_sum),
        cmocka_unit_test(test_deck_keys),
        cmocka_unit_test(test_linear_profile),
        cmocka_unit_test(test_reduction_per_cycle),
        cmocka_unit_test(test_agrees_with_explicit),
        cmocka_unit_test(test_singular),
        cmocka_unit_test(test_sine_decay),
        cmocka_unit_test(test_tolerance_of_rhs),
        cmocka_unit_test(test_implicit_restart),
        cmocka_unit_test(test_float_floor),
        cmocka_unit_test(test_plan_matches_build),
        cmocka_unit_test(test_plan_part),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
