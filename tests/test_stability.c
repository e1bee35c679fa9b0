/* Tests of the derived numbers (solver/stability.h): spacing, the stability
 * limit dt_max = 1 / (2 alpha sum_d h_d^-2), the refusal of a dt above it,
 * the shortening of dt so that time.end is hit exactly, and the step counts.
 * Expected values are computed here from the formulas, independently of the
 * code under test. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "deck.h"
#include "heat_case.h"
#include "test_util.h"

/* A validated-looking case built by hand: all faces Dirichlet, no stop
 * condition set (each test adds its own). */
static heat_case make_case(int64_t nx, int64_t ny, int64_t nz, double lx, double ly, double lz,
                           double alpha)
{
    heat_case c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "test");
    c.grid.n[0] = nx;
    c.grid.n[1] = ny;
    c.grid.n[2] = nz;
    c.grid.length[0] = lx;
    c.grid.length[1] = ly;
    c.grid.length[2] = lz;
    c.grid.dims = nz == 1 ? 2 : 3;
    c.alpha = alpha;
    c.time.safety = 0.9;
    c.steady.check_every = 100;
    for (int f = 0; f < HEAT_NFACES; f++) c.bc[f].type = HEAT_BC_DIRICHLET;
    c.solver.temporal_block = 1;
    return c;
}

static void set_periodic(heat_case *c, int axis)
{
    c->bc[2 * axis].type = HEAT_BC_PERIODIC;
    c->bc[2 * axis + 1].type = HEAT_BC_PERIODIC;
}

static void derive_ok(heat_case *c)
{
    heat_error err;
    int rc = heat_case_derive(c, &err);
    if (rc != HEAT_OK) fail_msg("heat_case_derive failed (%d): %s", rc, err.msg);
}

static void assert_close(double got, double want, double rel)
{
    if (!(fabs(got - want) <= rel * fabs(want)))
        fail_msg("got %.17g, want %.17g (relative error %.3g > %.3g)", got, want,
                 fabs(got - want) / fabs(want), rel);
}

static void assert_has(const char *msg, const char *needle)
{
    if (!strstr(msg, needle)) fail_msg("message lacks \"%s\":\n%s", needle, msg);
}

/* dt_max from the formula, with h_d = L_d / (n_d - 1), or L_d / n_d where
 * periodic[d]; only the first `dims` axes count. */
/* The dt_max and the advised bound of a refusal: both exactly the derived
 * dt_max (a dt copied from them is accepted), and that is the formula's. */
static void assert_limit_in(const char *msg, double derived, double want)
{
    const char *at[] = {"dt_max = ", "use dt <= "};
    for (int i = 0; i < 2; i++) {
        const char *p = strstr(msg, at[i]);
        if (!p) fail_msg("message lacks \"%s\":\n%s", at[i], msg);
        double got = strtod(p + strlen(at[i]), NULL);
        if (got != derived) fail_msg("%s%.17g, but dt_max is %.17g:\n%s", at[i], got, derived, msg);
    }
    assert_close(derived, want, 1e-14);
}

static double expected_dt_max(const heat_case *c, const int periodic[3], double h[3])
{
    double s = 0;
    for (int a = 0; a < c->grid.dims; a++) {
        h[a] = c->grid.length[a] / (double)(periodic[a] ? c->grid.n[a] : c->grid.n[a] - 1);
        s += 1.0 / (h[a] * h[a]);
    }
    return 1.0 / (2.0 * c->alpha * s);
}

/* ----------------------------------------------------------- dt_max */

static void test_dt_max_3d(void **state)
{
    (void)state;
    heat_case c = make_case(11, 21, 5, 1.0, 2.0, 0.5, 1.0e-3);
    c.time.has_max_steps = 1;
    c.time.max_steps = 100;
    derive_ok(&c);
    /* h = (0.1, 0.1, 0.125): dt_max = 1 / (2e-3 (100 + 100 + 64)) */
    assert_close(c.d.h[0], 0.1, 1e-15);
    assert_close(c.d.h[1], 0.1, 1e-15);
    assert_close(c.d.h[2], 0.125, 1e-15);
    assert_close(c.d.dt_max, 1.0 / (2.0e-3 * 264.0), 1e-14);
    int periodic[3] = {0, 0, 0};
    double h[3];
    assert_close(c.d.dt_max, expected_dt_max(&c, periodic, h), 1e-14);
    assert_int_equal(c.d.points, 11 * 21 * 5);
    /* No dt given: safety * dt_max, and sum r = safety / 2. */
    assert_close(c.d.dt, 0.9 * c.d.dt_max, 1e-15);
    double sum_r = 0;
    for (int a = 0; a < 3; a++) {
        assert_close(c.d.r[a], c.alpha * c.d.dt / (h[a] * h[a]), 1e-14);
        sum_r += c.d.r[a];
    }
    assert_close(sum_r, 0.45, 1e-14);
    assert_int_equal(c.d.end_step, -1);
    assert_int_equal(c.d.stop_step, 100);
    assert_int_equal(c.d.check_every, 100);
}

static void test_dt_max_2d(void **state)
{
    (void)state;
    heat_case c = make_case(11, 21, 1, 1.0, 2.0, 0.5, 1.0e-3);
    c.time.has_max_steps = 1;
    c.time.max_steps = 10;
    derive_ok(&c);
    /* Only x and y: dt_max = 1 / (2e-3 (100 + 100)); Lz and nz play no part. */
    assert_close(c.d.dt_max, 1.0 / (2.0e-3 * 200.0), 1e-14);
    int periodic[3] = {0, 0, 0};
    double h[3];
    assert_close(c.d.dt_max, expected_dt_max(&c, periodic, h), 1e-14);
    assert_true(c.d.h[2] == 1.0);
    assert_true(c.d.r[2] == 0.0);
    assert_close(c.d.r[0] + c.d.r[1], 0.45, 1e-14);
    assert_int_equal(c.d.points, 11 * 21);

    /* A different Lz changes nothing in 2D. */
    heat_case c2 = make_case(11, 21, 1, 1.0, 2.0, 1.0e-6, 1.0e-3);
    c2.time.has_max_steps = 1;
    c2.time.max_steps = 10;
    derive_ok(&c2);
    assert_true(c2.d.dt_max == c.d.dt_max);
}

static void test_dt_max_periodic(void **state)
{
    (void)state;
    /* x periodic: hx = 1 / 10, not 1 / 9. */
    heat_case c = make_case(10, 21, 5, 1.0, 2.0, 0.5, 2.0e-3);
    set_periodic(&c, 0);
    c.time.has_max_steps = 1;
    c.time.max_steps = 10;
    derive_ok(&c);
    assert_close(c.d.h[0], 0.1, 1e-15);
    assert_close(c.d.h[1], 0.1, 1e-15);
    assert_close(c.d.h[2], 0.125, 1e-15);
    int periodic[3] = {1, 0, 0};
    double h[3];
    assert_close(c.d.dt_max, expected_dt_max(&c, periodic, h), 1e-14);
    assert_close(c.d.dt_max, 1.0 / (4.0e-3 * 264.0), 1e-14);

    /* Periodic in y and z as well. */
    heat_case all = make_case(16, 12, 8, 1.0, 3.0, 0.25, 1.0e-4);
    for (int a = 0; a < 3; a++) set_periodic(&all, a);
    all.time.has_max_steps = 1;
    all.time.max_steps = 10;
    derive_ok(&all);
    int p3[3] = {1, 1, 1};
    assert_close(all.d.dt_max, expected_dt_max(&all, p3, h), 1e-14);
    for (int a = 0; a < 3; a++) assert_close(all.d.h[a], h[a], 1e-15);

    /* 2D with y periodic. */
    heat_case two = make_case(33, 64, 1, 1.0, 1.0, 1.0, 1.0e-2);
    set_periodic(&two, 1);
    two.time.has_max_steps = 1;
    two.time.max_steps = 10;
    derive_ok(&two);
    int p2[3] = {0, 1, 0};
    assert_close(two.d.dt_max, expected_dt_max(&two, p2, h), 1e-14);
    assert_close(two.d.h[0], 1.0 / 32.0, 1e-15);
    assert_close(two.d.h[1], 1.0 / 64.0, 1e-15);
}

/* Through the deck: the built-in default deck (64^3, y periodic) and a 2D
 * deck with x periodic. */
static void test_dt_max_from_decks(void **state)
{
    (void)state;
    heat_case c;
    heat_error err;
    memset(&c, 0, sizeof c);
    assert_int_equal(heat_deck_load(NULL, NULL, 0, &c, NULL, NULL, &err), HEAT_OK);
    derive_ok(&c);
    double hx = 1.0 / 63, hy = 1.0 / 64, hz = 1.0 / 63;
    double want = 1.0 / (2.0 * 1.0e-4 * (1 / (hx * hx) + 1 / (hy * hy) + 1 / (hz * hz)));
    assert_close(c.d.dt_max, want, 1e-14);
    assert_close(c.d.h[1], hy, 1e-15);
    /* end = 600 hit exactly with dt <= 0.9 dt_max. */
    int64_t steps = (int64_t)ceil(600.0 / (0.9 * want));
    assert_int_equal(c.d.end_step, steps);
    assert_int_equal(c.d.stop_step, steps);
    assert_true(heat_case_time(&c, c.d.end_step) == 600.0);

    const char *deck2d = "grid = { points = [21, 41, 1]; length = [2.0, 1.0, 1.0]; };\n"
                         "material = { diffusivity = 0.5; };\n"
                         "time = { max_steps = 10; safety = 0.5; };\n"
                         "initial = { type = \"constant\"; value = 0.0; };\n"
                         "boundary = { x_lo = { type = \"periodic\"; }; x_hi = { type = "
                         "\"periodic\"; };\n"
                         "  y_lo = { type = \"neumann\"; }; y_hi = { type = \"dirichlet\"; value "
                         "= 1.0; }; };\n";
    memset(&c, 0, sizeof c);
    test_load_case(deck2d, "d2.cfg", NULL, &c);
    hx = 2.0 / 21;
    hy = 1.0 / 40;
    want = 1.0 / (2.0 * 0.5 * (1 / (hx * hx) + 1 / (hy * hy)));
    assert_close(c.d.dt_max, want, 1e-14);
    assert_close(c.d.dt, 0.5 * want, 1e-14);
}

/* ------------------------------------------------------ dt vs dt_max */

static void test_dt_above_limit_refused(void **state)
{
    (void)state;
    heat_case c = make_case(11, 21, 5, 1.0, 2.0, 0.5, 1.0e-3);
    int periodic[3] = {0, 0, 0};
    double h[3];
    double dt_max = expected_dt_max(&c, periodic, h);
    c.time.has_end = 1;
    c.time.end = 1.0;
    c.time.has_dt = 1;
    c.time.dt = 1.01 * dt_max;
    heat_error err;
    assert_int_equal(heat_case_derive(&c, &err), HEAT_EINPUT);
    assert_int_equal(err.code, HEAT_EINPUT);
    char num[64];
    assert_has(err.msg, "time.dt");
    snprintf(num, sizeof num, "%.9g", c.time.dt);
    assert_has(err.msg, num);
    assert_limit_in(err.msg, c.d.dt_max, dt_max);
    assert_has(err.msg, "dt_max");

    /* Far above, in 2D with a periodic axis. */
    heat_case p = make_case(40, 30, 1, 4.0, 3.0, 1.0, 0.25);
    set_periodic(&p, 0);
    int pp[3] = {1, 0, 0};
    dt_max = expected_dt_max(&p, pp, h);
    p.time.has_max_steps = 1;
    p.time.max_steps = 5;
    p.time.has_dt = 1;
    p.time.dt = 10 * dt_max;
    assert_int_equal(heat_case_derive(&p, &err), HEAT_EINPUT);
    snprintf(num, sizeof num, "%.9g", p.time.dt);
    assert_has(err.msg, num);
    assert_limit_in(err.msg, p.d.dt_max, dt_max);
}

static void test_dt_above_limit_from_deck(void **state)
{
    (void)state;
    /* h = 0.1 on all axes, alpha = 1: dt_max = 1 / (2 * 300) = 1/600. */
    const char *text = "grid = { points = [11, 11, 11]; length = [1.0, 1.0, 1.0]; };\n"
                       "material = { diffusivity = 1.0; };\n"
                       "time = { end = 1.0; dt = 0.002; };\n"
                       "initial = { type = \"constant\"; value = 0.0; };\n"
                       "boundary = { x_lo = { type = \"neumann\"; }; x_hi = { type = \"neumann\"; "
                       "};\n"
                       "  y_lo = { type = \"neumann\"; }; y_hi = { type = \"neumann\"; };\n"
                       "  z_lo = { type = \"neumann\"; }; z_hi = { type = \"neumann\"; }; };\n";
    heat_case c;
    heat_error err;
    memset(&c, 0, sizeof c);
    assert_int_equal(heat_deck_load_string(text, "dt.cfg", NULL, 0, &c, NULL, NULL, &err), HEAT_OK);
    assert_int_equal(heat_case_derive(&c, &err), HEAT_EINPUT);
    char num[64];
    snprintf(num, sizeof num, "%.9g", 0.002);
    assert_has(err.msg, num);
    assert_limit_in(err.msg, c.d.dt_max, 1.0 / 600.0);
    assert_has(err.msg, "time.dt");

    /* Below the limit through --set: accepted, and used as given (1/0.0015
     * is not an integer, so it is shortened to 1/667). */
    const char *sets[] = {"time.dt=0.0015"};
    memset(&c, 0, sizeof c);
    assert_int_equal(heat_deck_load_string(text, "dt.cfg", sets, 1, &c, NULL, NULL, &err), HEAT_OK);
    derive_ok(&c);
    assert_int_equal(c.d.end_step, 667);
    assert_true(c.d.dt == 1.0 / 667);
    assert_true(c.d.dt <= 0.0015);
}

static void test_dt_at_limit_accepted(void **state)
{
    (void)state;
    heat_case c = make_case(17, 9, 33, 1.0, 0.5, 3.0, 7.0e-5);
    c.time.has_max_steps = 1;
    c.time.max_steps = 3;
    derive_ok(&c);
    double dt_max = c.d.dt_max;
    c.time.has_dt = 1;
    c.time.dt = dt_max;
    derive_ok(&c);
    assert_true(c.d.dt == dt_max);
    c.time.dt = 0.5 * dt_max;
    derive_ok(&c);
    assert_true(c.d.dt == 0.5 * dt_max);
    /* The smallest step above is refused. */
    c.time.dt = nextafter(dt_max, INFINITY);
    heat_error err;
    assert_int_equal(heat_case_derive(&c, &err), HEAT_EINPUT);
}

static void test_safety(void **state)
{
    (void)state;
    const char *text = "grid = { points = [11, 11, 11]; length = [1.0, 1.0, 1.0]; };\n"
                       "material = { diffusivity = 1.0; };\n"
                       "time = { max_steps = 10; };\n"
                       "initial = { type = \"constant\"; value = 0.0; };\n"
                       "boundary = { x_lo = { type = \"neumann\"; }; x_hi = { type = \"neumann\"; "
                       "};\n"
                       "  y_lo = { type = \"neumann\"; }; y_hi = { type = \"neumann\"; };\n"
                       "  z_lo = { type = \"neumann\"; }; z_hi = { type = \"neumann\"; }; };\n";
    heat_case c;
    heat_error err;
    memset(&c, 0, sizeof c);
    assert_int_equal(heat_deck_load_string(text, "s.cfg", NULL, 0, &c, NULL, NULL, &err), HEAT_OK);
    assert_true(c.time.safety == 0.9);
    derive_ok(&c);
    assert_close(c.d.dt_max, 1.0 / 600.0, 1e-14);
    assert_close(c.d.dt, 0.9 / 600.0, 1e-14);

    const char *sets[] = {"time.safety=0.25"};
    memset(&c, 0, sizeof c);
    assert_int_equal(heat_deck_load_string(text, "s.cfg", sets, 1, &c, NULL, NULL, &err), HEAT_OK);
    derive_ok(&c);
    assert_close(c.d.dt, 0.25 / 600.0, 1e-14);

    /* safety is ignored when dt is given. */
    const char *sets2[] = {"time.safety=0.25", "time.dt=1e-3"};
    memset(&c, 0, sizeof c);
    assert_int_equal(heat_deck_load_string(text, "s.cfg", sets2, 2, &c, NULL, NULL, &err), HEAT_OK);
    derive_ok(&c);
    assert_true(c.d.dt == 1e-3);
}

/* ----------------------------------------------------- end and steps */

static void test_end_hit_exactly(void **state)
{
    (void)state;
    uint64_t rng = 12345;
    for (int i = 0; i < 500; i++) {
        double alpha = pow(10.0, test_uniform(&rng, -6, 1));
        double end = pow(10.0, test_uniform(&rng, -3, 3));
        int64_t n = 3 + (int64_t)test_uniform(&rng, 0, 60);
        heat_case c = make_case(n, n + 2, n + 5, test_uniform(&rng, 0.1, 3),
                                test_uniform(&rng, 0.1, 3), test_uniform(&rng, 0.1, 3), alpha);
        c.time.has_end = 1;
        c.time.end = end;
        int periodic[3] = {0, 0, 0};
        double h[3];
        double dt0 = 0.9 * expected_dt_max(&c, periodic, h);
        if (end / dt0 > 1e8) continue; /* keep the step counts sane */
        derive_ok(&c);
        assert_true(c.d.end_step >= 1);
        assert_int_equal(c.d.stop_step, c.d.end_step);
        /* The last step lands on end exactly, and never beyond the stable dt. */
        assert_true(heat_case_time(&c, c.d.end_step) == end);
        assert_close(c.d.dt * (double)c.d.end_step, end, 1e-12);
        assert_true(c.d.dt <= dt0 * (1 + 1e-9));
        /* The fewest steps: one step fewer would need a dt above dt0. */
        if (c.d.end_step > 1) assert_true(end / (double)(c.d.end_step - 1) > dt0 * (1 - 1e-9));
        assert_int_equal(c.d.end_step, (int64_t)ceil(end / dt0 * (1 - 1e-9)));
        /* Earlier steps are step * dt, strictly before end. */
        assert_true(heat_case_time(&c, c.d.end_step - 1) == (double)(c.d.end_step - 1) * c.d.dt);
        assert_true(heat_case_time(&c, c.d.end_step - 1) < end);
        assert_true(heat_case_time(&c, 0) == 0.0);
    }
}

static heat_case end_dt_case(double end, double dt)
{
    /* A small alpha: dt_max is about 1e4, far above every dt used here. */
    heat_case c = make_case(11, 11, 11, 1.0, 1.0, 1.0, 1.0e-9);
    c.time.has_end = 1;
    c.time.end = end;
    c.time.has_dt = 1;
    c.time.dt = dt;
    return c;
}

static void test_integral_end_adds_no_step(void **state)
{
    (void)state;
    heat_case c = end_dt_case(1.0, 0.1);
    derive_ok(&c);
    assert_int_equal(c.d.end_step, 10);
    assert_true(c.d.dt == 0.1);
    assert_true(heat_case_time(&c, 10) == 1.0);
    assert_true(heat_case_time(&c, 3) == 3 * 0.1);

    c = end_dt_case(0.3, 0.1); /* 0.3 / 0.1 = 2.9999999999999996 */
    derive_ok(&c);
    assert_int_equal(c.d.end_step, 3);
    c = end_dt_case(1.1, 0.1); /* 1.1 / 0.1 = 11.000000000000002 */
    derive_ok(&c);
    assert_int_equal(c.d.end_step, 11);
    c = end_dt_case(600.0, 0.6);
    derive_ok(&c);
    assert_int_equal(c.d.end_step, 1000);

    /* end = k dt for many k, written both ways. */
    const double dts[] = {0.1, 1e-3, 0.3, 0.7, 1.0 / 3.0, 2.5e-4};
    for (size_t j = 0; j < sizeof dts / sizeof *dts; j++)
        for (int k = 1; k <= 3000; k++) {
            double ends[2] = {(double)k * dts[j], (double)k / (1.0 / dts[j])};
            for (int e = 0; e < 2; e++) {
                c = end_dt_case(ends[e], dts[j]);
                derive_ok(&c);
                if (c.d.end_step != k)
                    fail_msg("end = %.17g, dt = %.17g: %lld steps, want %d", ends[e], dts[j],
                             (long long)c.d.end_step, k);
                assert_true(heat_case_time(&c, k) == ends[e]);
            }
        }

    /* Not integral: a dt a little too long or short still gives the
     * ceiling. */
    c = end_dt_case(1.0, 0.1 * (1 + 1e-6));
    derive_ok(&c);
    assert_int_equal(c.d.end_step, 10);
    c = end_dt_case(1.0, 0.1 * (1 - 1e-6));
    derive_ok(&c);
    assert_int_equal(c.d.end_step, 11);
    assert_true(c.d.dt == 1.0 / 11);
    /* dt longer than end: a single step of length end. */
    c = end_dt_case(0.5, 2.0);
    derive_ok(&c);
    assert_int_equal(c.d.end_step, 1);
    assert_true(c.d.dt == 0.5);
    assert_true(heat_case_time(&c, 1) == 0.5);
}

static void test_stop_step(void **state)
{
    (void)state;
    heat_case c = end_dt_case(1.0, 0.1);
    c.time.has_max_steps = 1;
    c.time.max_steps = 5;
    derive_ok(&c);
    assert_int_equal(c.d.end_step, 10);
    assert_int_equal(c.d.stop_step, 5);

    c.time.max_steps = 50;
    derive_ok(&c);
    assert_int_equal(c.d.end_step, 10);
    assert_int_equal(c.d.stop_step, 10);

    c.time.max_steps = 10;
    derive_ok(&c);
    assert_int_equal(c.d.stop_step, 10);

    /* max_steps alone. */
    c = make_case(11, 11, 11, 1.0, 1.0, 1.0, 1.0e-2);
    c.time.has_max_steps = 1;
    c.time.max_steps = INT64_C(5000000000);
    derive_ok(&c);
    assert_int_equal(c.d.end_step, -1);
    assert_true(c.d.stop_step == INT64_C(5000000000));
    /* Without an end, time is step * dt throughout. */
    for (int64_t s = 0; s < 1000; s += 37) assert_true(heat_case_time(&c, s) == (double)s * c.d.dt);

    /* end with a steady check: still stops at end. */
    c = end_dt_case(2.0, 0.5);
    c.steady.enabled = 1;
    c.steady.tolerance = 1e-6;
    derive_ok(&c);
    assert_int_equal(c.d.end_step, 4);
    assert_int_equal(c.d.stop_step, 4);
}

static void test_steady_only(void **state)
{
    (void)state;
    heat_case c = make_case(11, 11, 1, 1.0, 1.0, 1.0, 1.0e-2);
    c.steady.enabled = 1;
    c.steady.tolerance = 1e-6;
    c.steady.check_every = 25;
    derive_ok(&c);
    assert_int_equal(c.d.end_step, -1);
    assert_int_equal(c.d.stop_step, -1);
    assert_int_equal(c.d.check_every, 25);
    assert_close(c.d.dt, 0.9 * c.d.dt_max, 1e-15);
    assert_true(heat_case_time(&c, 7) == 7 * c.d.dt);

    /* Through a deck, with the default check interval. */
    const char *text = "grid = { points = [11, 11, 1]; length = [1.0, 1.0, 1.0]; };\n"
                       "material = { diffusivity = 1.0; };\n"
                       "steady = { tolerance = 1e-4; };\n"
                       "initial = { type = \"constant\"; value = 0.0; };\n"
                       "boundary = { x_lo = { type = \"neumann\"; }; x_hi = { type = \"neumann\"; "
                       "};\n"
                       "  y_lo = { type = \"neumann\"; }; y_hi = { type = \"neumann\"; }; };\n";
    memset(&c, 0, sizeof c);
    test_load_case(text, "st.cfg", NULL, &c);
    assert_int_equal(c.d.end_step, -1);
    assert_int_equal(c.d.stop_step, -1);
    assert_int_equal(c.d.check_every, 100);
}

static void test_too_many_steps(void **state)
{
    (void)state;
    heat_case c = end_dt_case(1.0e12, 1.0e-6);
    heat_error err;
    assert_int_equal(heat_case_derive(&c, &err), HEAT_EINPUT);
    assert_int_equal(err.code, HEAT_EINPUT);
    assert_has(err.msg, "time.end");
    assert_has(err.msg, "too many");
}

/* Deriving twice gives the same numbers: derive starts from scratch. */
static void test_derive_is_repeatable(void **state)
{
    (void)state;
    heat_case a = make_case(21, 13, 7, 1.0, 0.7, 0.3, 3.0e-4);
    a.time.has_end = 1;
    a.time.end = 2.5;
    derive_ok(&a);
    heat_case b = a;
    derive_ok(&b);
    assert_memory_equal(&a.d, &b.d, sizeof a.d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dt_max_3d),
        cmocka_unit_test(test_dt_max_2d),
        cmocka_unit_test(test_dt_max_periodic),
        cmocka_unit_test(test_dt_max_from_decks),
        cmocka_unit_test(test_dt_above_limit_refused),
        cmocka_unit_test(test_dt_above_limit_from_deck),
        cmocka_unit_test(test_dt_at_limit_accepted),
        cmocka_unit_test(test_safety),
        cmocka_unit_test(test_end_hit_exactly),
        cmocka_unit_test(test_integral_end_adds_no_step),
        cmocka_unit_test(test_stop_step),
        cmocka_unit_test(test_steady_only),
        cmocka_unit_test(test_too_many_steps),
        cmocka_unit_test(test_derive_is_repeatable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
