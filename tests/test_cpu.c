/* Physics of the CPU backend, in float and double, 2D and 3D: the exact
 * steady state between two Dirichlet faces, second-order convergence of a
 * decaying sine mode, conservation under periodic and insulated faces, the
 * residual, NaN detection, Dirichlet nodes held, agreement with an
 * independent host reference on mixed faces (the written formula bit for
 * bit: test_formula.c).
 *
 * Every case is built the way the program builds it: deck text plus --set
 * overrides through heat_deck_load_string, then heat_case_derive. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cpu_helpers.h"
#include "deck.h"
#include "initial.h"
#include "heat_case.h"
#include "test_util.h"

/* ---- 1. steady state between two Dirichlet faces ----------------------- */

static void test_steady_linear_profile(void **state)
{
    (void)state;
    const double a = 1.5, b = -0.5, scale = 1.5; /* scale = max(|a|, |b|) */
    char bc[1024];
    snprintf(bc, sizeof bc,
             "x_lo = { type = \"dirichlet\"; value = %.17e; };\n"
             "x_hi = { type = \"dirichlet\"; value = %.17e; };\n"
             "y_lo = { type = \"neumann\"; gradient = 0.0; };\n"
             "y_hi = { type = \"neumann\"; gradient = 0.0; };\n"
             "z_lo = { type = \"neumann\"; gradient = 0.0; };\n"
             "z_hi = { type = \"neumann\"; gradient = 0.0; };\n",
             a, b);
    for (int dims = 2; dims <= 3; dims++)
        for (int p = 0; p < 2; p++) {
            test_sets s = {0};
            test_sets_add(&s, "solver.precision=%s", prec_name(precisions[p]));
            test_sets_add(&s, "grid.points=[17, 5, %d]", dims == 3 ? 5 : 1);
            test_sets_add(&s, "grid.length=[1.0, 0.3, 0.2]");
            heat_case c;
            load_case(&c, bc, "type = \"constant\"; value = 0.25;", &s);
            void *f = field_alloc(&c);
            heat_error err;
            assert_int_equal(heat_initial_fill(&c, f, &err), HEAT_OK);
            heat_backend *be = backend_with(&c, f);

            /* The slowest mode (half a sine in x) decays like
             * exp(-alpha pi^2 t / Lx^2) = exp(-pi^2 t): from an error of
             * O(1), t = 30 / pi^2 brings it below 1e-13, so the step cap
             * is never the reason for a bad profile. The residual is about
             * pi^2 times the remaining error, so residual < 1e-10 * scale
             * means an error of ~1e-11 * scale, well under the bound below.
             * In float the residual floor is one ulp / dt ~ 2e-4 (the field
             * can cycle by an ulp), so there we run to the cap. */
            const double res_tol = precisions[p] == HEAT_DOUBLE ? 1e-10 * scale : 0;
            const int64_t cap = (int64_t)ceil(30.0 / (M_PI * M_PI) / c.d.dt);
            const int64_t chunk = 100;
            int64_t steps = 0;
            double res = INFINITY;
            while (steps < cap && !(res < res_tol)) {
                advance(be, chunk, &res);
                steps += chunk;
            }
            if (precisions[p] == HEAT_DOUBLE && !(res < res_tol))
                fail_msg("double %dD: residual %.3g still above %.3g after %lld steps", dims, res,
                         res_tol, (long long)steps);
            download(be, f);

            double *want = malloc((size_t)c.d.points * sizeof *want);
            assert_non_null(want);
            for (int64_t at = 0; at < c.d.points; at++) {
                int64_t ijk[3];
                index_ijk(&c, at, ijk);
                want[at] = a + (b - a) * (double)ijk[0] / (double)(c.grid.n[0] - 1);
            }
            /* The discrete steady state of this problem is the linear
             * profile exactly (its Laplacian is zero and the zero-gradient
             * mirror leaves it unchanged), so only round-off remains. An
             * iteration stalls once every increment r*lap(u) is below half
             * an ulp of u; that leaves an error of at most
             * ulp/(2 r_x) * (nx-1)^2/8 = 32 ulp / (2 r_x), with r_x ~ 0.14
             * here: ~1e-13 * scale in double, ~1e-5 * scale in float. Hence
             * 1e-9 relative in double (covering the 1e-11 transient) and
             * 1e-5 relative in float. */
            double tol = (precisions[p] == HEAT_DOUBLE ? 1e-9 : 1e-5) * scale;
            double maxerr = 0;
            for (int64_t at = 0; at < c.d.points; at++)
                maxerr = fmax(maxerr, fabs(fget(&c, f, at) - want[at]));
            print_message("steady %s %dD: %lld steps, residual %.3g, max error %.3g (bound %.3g)\n",
                          prec_name(precisions[p]), dims, (long long)steps, res, maxerr, tol);
            expect_field_near(&c, f, want, tol, "steady state vs the linear profile");
            free(want);
            heat_backend_destroy(be);
            free(f);
        }
}

/* ---- 2. a decaying sine mode, second order ----------------------------- */

/* Runs the mode on an n-point grid (n^2 in 2D, n^3 in 3D) with unit lengths
 * and alpha = 1, to time T in exactly `steps` steps, and returns the max
 * error against amplitude exp(-pi^2 sum k^2 T) prod sin(k pi x). */
static double sine_error(heat_precision prec, int dims, int64_t n, double T, int64_t steps)
{
    const double amplitude = 2.0, k[3] = {1.0, 1.0, dims == 3 ? 1.0 : 0.0};
    test_sets s = {0};
    test_sets_add(&s, "solver.precision=%s", prec_name(prec));
    test_sets_add(&s, "grid.points=[%lld, %lld, %lld]", (long long)n, (long long)n,
                  dims == 3 ? (long long)n : 1LL);
    test_sets_add(&s, "time.end=%.17e", T);
    test_sets_add(&s, "time.dt=%.17e", T / (double)steps);
    char init[256];
    snprintf(init, sizeof init, "type = \"sine\"; amplitude = %.17e; modes = [%.1f, %.1f, %.1f];",
             amplitude, k[0], k[1], k[2]);
    heat_case c;
    load_case(&c, bc_all_dirichlet_zero, init, &s);
    /* T is hit exactly, in exactly the steps asked for. */
    assert_int_equal(c.d.end_step, steps);
    assert_true(heat_case_time(&c, c.d.end_step) == T);

    void *f = field_alloc(&c);
    heat_error err;
    assert_int_equal(heat_initial_fill(&c, f, &err), HEAT_OK);
    heat_backend *b = backend_with(&c, f);
    advance(b, c.d.end_step, NULL);
    download(b, f);
    heat_backend_destroy(b);

    const double h = 1.0 / (double)(n - 1);
    const double decay = exp(-M_PI * M_PI * (k[0] * k[0] + k[1] * k[1] + k[2] * k[2]) * T);
    double maxerr = 0;
    for (int64_t at = 0; at < c.d.points; at++) {
        int64_t ijk[3];
        index_ijk(&c, at, ijk);
        double exact = amplitude * decay;
        for (int a = 0; a < dims; a++) exact *= sin(k[a] * M_PI * (double)ijk[a] * h);
        double e = fabs(fget(&c, f, at) - exact);
        if (e > maxerr || e != e) maxerr = e;
    }
    free(f);
    return maxerr;
}

static void test_sine_mode_second_order(void **state)
{
    (void)state;
    /* Fixed r = alpha dt / h^2 (0.2 per axis in 2D, 0.125 in 3D) so that the
     * time error O(dt) = O(h^2) too; 100 steps on the coarsest grid (h =
     * 1/16), four times as many each time h halves, and T = 100 r h0^2 hit
     * exactly. The leading error is amplitude e^(-d pi^2 T) T h^2 pi^4
     * (d/12 - r d/2 * d) for d axes (space minus time error), not zero for
     * these r, so the ratio tends to 4. */
    for (int dims = 2; dims <= 3; dims++) {
        const double r = dims == 2 ? 0.2 : 0.125;
        const int64_t n0 = 17, steps0 = 100;
        const double h0 = 1.0 / (double)(n0 - 1);
        const double T = (double)steps0 * r * h0 * h0;
        double err[3];
        for (int level = 0; level < 3; level++) {
            int64_t n = (n0 - 1) * (INT64_C(1) << level) + 1;
            int64_t steps = steps0 * (INT64_C(1) << (2 * level));
            err[level] = sine_error(HEAT_DOUBLE, dims, n, T, steps);
        }
        for (int level = 0; level < 2; level++) {
            double ratio = err[level] / err[level + 1];
            print_message("sine double %dD: error %.4e (h=1/%d) -> %.4e (h=1/%d): ratio %.4f\n",
                          dims, err[level], 16 << level, err[level + 1], 32 << level, ratio);
            /* Second order: the error falls by 4 when h halves, up to the
             * O(h^4) terms, which are small at these h. */
            if (!(ratio > 3.5 && ratio < 4.5))
                fail_msg("%dD: error ratio %.4f between h=1/%d and h=1/%d is not about 4", dims,
                         ratio, 16 << level, 32 << level);
        }
        /* Float at the coarse grid: its error is the double one plus round-
         * off; 100 steps of about an ulp (6e-8 relative, amplitude 2) each
         * add at most ~1e-5 * amplitude. */
        double ef = sine_error(HEAT_FLOAT, dims, n0, T, steps0);
        print_message("sine float %dD: error %.4e at h=1/16 (double %.4e)\n", dims, ef, err[0]);
        if (!(ef <= err[0] + 2e-5))
            fail_msg("%dD float: error %.4e, double %.4e: more than 2e-5 of round-off", dims, ef,
                     err[0]);
    }
}

/* ---- 3. and 4. conservation -------------------------------------------- */

/* The trapezoid weight of node `at`: 1/2 per axis on which it is a first or
 * last node, or 1 everywhere when `trapezoid` is 0. */
static double weight(const heat_case *c, int64_t at, int trapezoid)
{
    if (!trapezoid) return 1.0;
    int64_t ijk[3];
    index_ijk(c, at, ijk);
    double w = 1.0;
    for (int a = 0; a < c->grid.dims; a++)
        if (ijk[a] == 0 || ijk[a] == c->grid.n[a] - 1) w *= 0.5;
    return w;
}

static double weighted_sum(const heat_case *c, const void *f, int trapezoid)
{
    double s = 0;
    for (int64_t at = 0; at < c->d.points; at++) s += weight(c, at, trapezoid) * fget(c, f, at);
    return s;
}

static void check_conservation(const char *bc, int trapezoid)
{
    for (int dims = 2; dims <= 3; dims++)
        for (int p = 0; p < 2; p++) {
            test_sets s = {0};
            test_sets_add(&s, "solver.precision=%s", prec_name(precisions[p]));
            test_sets_add(&s, dims == 3 ? "grid.points=[17, 9, 5]" : "grid.points=[33, 17, 1]");
            test_sets_add(&s, "grid.length=[1.0, 0.7, 0.45]");
            heat_case c;
            load_case(&c, bc, init_zero, &s);
            void *f0 = field_alloc(&c), *f = field_alloc(&c);
            /* Values in [1, 2): the sum is far from zero, so a relative
             * change means something. */
            field_random(&c, f0, 1234 + (uint64_t)(10 * dims + p), 1.0, 2.0);
            heat_backend *b = backend_with(&c, f0);
            const int64_t steps = 300;
            advance(b, steps, NULL);
            download(b, f);
            heat_backend_destroy(b);

            double s0 = weighted_sum(&c, f0, trapezoid), s1 = weighted_sum(&c, f, trapezoid);
            double rel = fabs(s1 - s0) / fabs(s0);
            /* Exactly conserved in exact arithmetic (the stencil, with the
             * wrap or the mirror and these weights, telescopes), so only
             * round-off: each update rounds at about an ulp of values near
             * 1.5, mostly with random sign, summed in double: a relative
             * drift of ~eps sqrt(steps/points) and some systematic part
             * (measured ~1e-15 in double, ~2e-7 in float). Bounds 1e-12 and
             * 1e-5 leave room for that while catching a real leak: a wrong
             * wrap or mirror moves the sum by ~1e-4 relative per step. */
            double bound = precisions[p] == HEAT_DOUBLE ? 1e-12 : 1e-5;
            /* And the field really moved: random data diffuses at once. */
            double moved = 0;
            for (int64_t at = 0; at < c.d.points; at++)
                moved = fmax(moved, fabs(fget(&c, f, at) - fget(&c, f0, at)));
            print_message("%s sum %s %dD: relative change %.3g (bound %.0e), field moved %.3g\n",
                          trapezoid ? "trapezoid" : "plain", prec_name(precisions[p]), dims, rel,
                          bound, moved);
            if (!(rel < bound))
                fail_msg("%s %dD: the %s sum changed by %.3g relative (%.17g -> %.17g), bound %.0e",
                         prec_name(precisions[p]), dims, trapezoid ? "trapezoid-weighted" : "plain",
                         rel, s0, s1, bound);
            assert_true(moved > 0.05);
            free(f0);
            free(f);
        }
}

static void test_periodic_conserves_sum(void **state)
{
    (void)state;
    check_conservation(bc_all_periodic, 0);
}

static void test_insulated_conserves_trapezoid_sum(void **state)
{
    (void)state;
    check_conservation(bc_all_insulated, 1);
}

/* ---- 5. residual, NaN, Dirichlet nodes, mixed faces -------------------- */

static void mixed_sets(test_sets *s, heat_precision prec, int dims)
{
    test_sets_add(s, "solver.precision=%s", prec_name(prec));
    test_sets_add(s, dims == 3 ? "grid.points=[17, 9, 5]" : "grid.points=[33, 17, 1]");
    test_sets_add(s, "grid.length=[1.0, 0.6, 0.3]");
}

static void test_residual_is_max_du_over_dt(void **state)
{
    (void)state;
    for (int dims = 2; dims <= 3; dims++)
        for (int p = 0; p < 2; p++) {
            test_sets s = {0};
            mixed_sets(&s, precisions[p], dims);
            heat_case c;
            load_case(&c, bc_mixed, init_zero, &s);
            void *f = field_alloc(&c), *u2 = field_alloc(&c), *u3 = field_alloc(&c);
            field_random(&c, f, 77, -1.0, 1.0);
            heat_initial_apply_dirichlet(&c, f);
            /* Two backends from the same data: one advanced 2 steps, the
             * other 3 in one call; the residual must be that of step 3. */
            heat_backend *b2 = backend_with(&c, f), *b3 = backend_with(&c, f);
            advance(b2, 2, NULL);
            download(b2, u2);
            double res = NAN;
            advance(b3, 3, &res);
            download(b3, u3);
            heat_backend_destroy(b2);
            heat_backend_destroy(b3);
            double m = 0;
            for (int64_t at = 0; at < c.d.points; at++)
                m = fmax(m, fabs(fget(&c, u3, at) - fget(&c, u2, at)));
            double want = m / c.d.dt;
            /* The same values and the same max over them; a few ulps of the
             * precision allow for |du| rounded in the field's precision and
             * the division by dt. */
            double eps = precisions[p] == HEAT_DOUBLE ? DBL_EPSILON : FLT_EPSILON;
            assert_true(want > 0);
            if (!(fabs(res - want) <= 4 * eps * want))
                fail_msg("%s %dD: residual %.17g, max|du|/dt of the last step %.17g",
                         prec_name(precisions[p]), dims, res, want);
            free(f);
            free(u2);
            free(u3);
        }
}

static void test_nan_makes_residual_non_finite(void **state)
{
    (void)state;
    for (int dims = 2; dims <= 3; dims++)
        for (int p = 0; p < 2; p++) {
            test_sets s = {0};
            mixed_sets(&s, precisions[p], dims);
            heat_case c;
            load_case(&c, bc_mixed_z_periodic, init_zero, &s);
            const int64_t nx = c.grid.n[0], ny = c.grid.n[1];
            const int64_t kmid = c.grid.n[2] / 2;
            /* Interior, first and last node of a row (x faces Dirichlet and
             * Neumann), a Neumann y face, a Dirichlet node, the last node. */
            const int64_t spots[] = {(kmid * ny + ny / 2) * nx + nx / 2, (kmid * ny + 3) * nx + 0,
                                     (kmid * ny + 3) * nx + nx - 1,      (kmid * ny + 0) * nx + 5,
                                     (kmid * ny + ny - 1) * nx + 7,      c.d.points - 1};
            const double bad[] = {NAN, INFINITY, -INFINITY};
            for (size_t si = 0; si < sizeof spots / sizeof spots[0]; si++)
                for (size_t vi = 0; vi < sizeof bad / sizeof bad[0]; vi++)
                    for (int64_t steps = 1; steps <= 4; steps += 3) {
                        void *f = field_alloc(&c);
                        field_random(&c, f, 5, -1.0, 1.0);
                        heat_initial_apply_dirichlet(&c, f);
                        fset(&c, f, spots[si], bad[vi]);
                        heat_backend *b = backend_with(&c, f);
                        double res = 0;
                        advance(b, steps, &res);
                        heat_backend_destroy(b);
                        if (isfinite(res))
                            fail_msg("%s %dD: %g planted at index %lld: residual %g after %lld "
                                     "step(s) is finite",
                                     prec_name(precisions[p]), dims, bad[vi], (long long)spots[si],
                                     res, (long long)steps);
                        free(f);
                    }
        }
}

static void test_dirichlet_nodes_hold(void **state)
{
    (void)state;
    const char *const bcs[] = {bc_mixed, bc_six_dirichlet, bc_dirichlet_edges};
    for (size_t bi = 0; bi < sizeof bcs / sizeof bcs[0]; bi++)
        for (int dims = 2; dims <= 3; dims++)
            for (int p = 0; p < 2; p++) {
                test_sets s = {0};
                mixed_sets(&s, precisions[p], dims);
                heat_case c;
                load_case(&c, bcs[bi], init_zero, &s);
                ref_case rc;
                ref_init(&rc, &c);
                void *f = field_alloc(&c);
                field_random(&c, f, 99, -1.0, 1.0);
                double *want = malloc((size_t)c.d.points * sizeof *want);
                assert_non_null(want);
                for (int64_t at = 0; at < c.d.points; at++) want[at] = fget(&c, f, at);
                ref_apply_dirichlet(&rc, want);
                /* initial.c sets the faces as the contract says: exactly. */
                heat_initial_apply_dirichlet(&c, f);
                expect_field_near(&c, f, want, 0.0, "heat_initial_apply_dirichlet");

                heat_backend *b = backend_with(&c, f);
                advance(b, 500, NULL);
                download(b, f);
                heat_backend_destroy(b);
                int64_t held = 0;
                for (int64_t at = 0; at < c.d.points; at++) {
                    int64_t ijk[3];
                    index_ijk(&c, at, ijk);
                    if (!ref_is_dirichlet(&rc, ijk)) continue;
                    held++;
                    /* Exactly: a Dirichlet node is never written. */
                    if (fget(&c, f, at) != want[at])
                        fail_msg("%s %dD faces #%zu: Dirichlet node %lld (%lld, %lld, %lld) is "
                                 "%.17g after 500 steps, should hold %.17g",
                                 prec_name(precisions[p]), dims, bi, (long long)at,
                                 (long long)ijk[0], (long long)ijk[1], (long long)ijk[2],
                                 fget(&c, f, at), want[at]);
                }
                assert_true(held > 0);
                free(want);
                free(f);
            }
}

static void test_mixed_faces_match_reference(void **state)
{
    (void)state;
    static const mixed_config configs[] = {
        {bc_mixed, {17, 9, 5}, "[1.0, 0.6, 0.3]"},
        {bc_mixed, {33, 17, 1}, "[2.0, 1.0, 1.0]"},
        {bc_mixed_x_neumann, {33, 17, 1}, "[2.0, 1.0, 1.0]"},
        {bc_mixed_x_neumann, {17, 9, 5}, "[1.0, 0.6, 0.3]"},
        {bc_mixed_z_periodic, {13, 11, 7}, "[0.8, 0.9, 0.5]"},
        {bc_dirichlet_edges, {9, 7, 6}, "[1.0, 1.0, 1.0]"},
        {bc_dirichlet_edges, {19, 7, 1}, "[1.0, 0.3, 1.0]"},
        {bc_all_insulated, {17, 9, 5}, "[1.0, 0.6, 0.3]"},
        {bc_all_periodic, {7, 5, 3}, "[1.0, 0.6, 0.3]"},
    };
    const int64_t steps = 20;
    for (size_t ci = 0; ci < sizeof configs / sizeof configs[0]; ci++)
        for (int p = 0; p < 2; p++) {
            const mixed_config *mc = &configs[ci];
            heat_case c;
            load_mixed(&c, mc, precisions[p], steps);
            ref_case rc;
            ref_init(&rc, &c);
            void *f = field_alloc(&c);
            field_random(&c, f, 4242 + ci, -1.0, 1.0);
            double *ref = malloc((size_t)c.d.points * sizeof *ref);
            assert_non_null(ref);
            for (int64_t at = 0; at < c.d.points; at++) ref[at] = fget(&c, f, at);
            ref_apply_dirichlet(&rc, ref);
            for (int64_t at = 0; at < c.d.points; at++) fset(&c, f, at, ref[at]);
            /* The reference starts from the same (rounded) values. */
            for (int64_t at = 0; at < c.d.points; at++) ref[at] = fget(&c, f, at);

            heat_backend *b = backend_with(&c, f);
            advance(b, steps, NULL);
            download(b, f);
            heat_backend_destroy(b);
            ref_run(&rc, ref, steps);

            double scale = 0;
            for (int64_t at = 0; at < c.d.points; at++) scale = fmax(scale, fabs(ref[at]));
            /* Double: the same formula up to the order of a few additions,
             * ~1e-16 per step, 20 steps: 1e-12 relative is generous but any
             * wrong neighbour, ghost or r is off by 1e-3 or more. Float:
             * round-off of ~6e-8 relative per operation, a handful per
             * update, over 20 steps, stays below 1e-5 relative. */
            double tol = (precisions[p] == HEAT_DOUBLE ? 1e-12 : 1e-5) * fmax(scale, 1.0);
            char what[128];
            snprintf(what, sizeof what, "mixed faces #%zu after %lld steps vs the host reference",
                     ci, (long long)steps);
            expect_field_near(&c, f, ref, tol, what);
            free(ref);
            free(f);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_steady_linear_profile),
        cmocka_unit_test(test_sine_mode_second_order),
        cmocka_unit_test(test_periodic_conserves_sum),
        cmocka_unit_test(test_insulated_conserves_trapezoid_sum),
        cmocka_unit_test(test_residual_is_max_du_over_dt),
        cmocka_unit_test(test_nan_makes_residual_non_finite),
        cmocka_unit_test(test_dirichlet_nodes_hold),
        cmocka_unit_test(test_mixed_faces_match_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
