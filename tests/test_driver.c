/* The driver through heat_run: why and where a run stops, that a run gives
 * the field the backend gives, a blow-up reported with its step, the output
 * directory guard and history.csv. */
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
#include "initial.h"
#include "heat_case.h"
#include "test_util.h"

/* 3D by default; mixed faces so that every kind of node is exercised. */
static const char base_deck[] =
    "grid = { points = [17, 13, 9]; length = [1.0, 0.8, 0.5]; };\n"
    "material = { diffusivity = 1.0; };\n"
    "initial = { type = \"gaussian\"; center = [0.4, 0.5, 0.2]; width = 0.15;\n"
    "            amplitude = 3.0; base = 0.5; };\n"
    "boundary = {\n"
    "  x_lo = { type = \"dirichlet\"; value = 1.0; };\n"
    "  x_hi = { type = \"neumann\"; gradient = 0.5; };\n"
    "  y_lo = { type = \"periodic\"; };\n"
    "  y_hi = { type = \"periodic\"; };\n"
    "  z_lo = { type = \"neumann\"; gradient = 0.0; };\n"
    "  z_hi = { type = \"dirichlet\"; value = 0.0; };\n"
    "};\n"
    "solver = { backend = \"cpu\"; };\n";

/* One run's inputs: the case, its canonical text and its output directory. */
typedef struct run_case {
    heat_case c;
    char *text;
    char dir[4096];
} run_case;

/* Loads `deck` with output.dir set to a fresh scratch directory `name`, the
 * precision and dimensions asked for, and the overrides in `s`; derives it. */
static void load_run(run_case *r, const char *deck, const char *name, int dims, heat_precision prec,
                     test_sets *s)
{
    memset(r, 0, sizeof *r);
    snprintf(r->dir, sizeof r->dir, "%s", test_scratch_dir(name));
    test_sets_add(s, "output.dir=\"%s\"", r->dir);
    test_sets_add(s, "solver.precision=%s", prec == HEAT_FLOAT ? "float" : "double");
    if (dims == 2) test_sets_add(s, "grid.points=[17, 13, 1]");
    test_load_case_text(deck, name, s, &r->c, &r->text);
    assert_int_equal(r->c.grid.dims, dims);
}

static void free_run(run_case *r)
{
    free(r->text);
    r->text = NULL;
}

static size_t field_bytes(const heat_case *c)
{
    return (size_t)c->d.points * heat_case_value_size(c);
}

static int run(const run_case *r, int overwrite, void *field_out, heat_run_result *res,
               heat_error *err)
{
    heat_run_options opt = {0};
    opt.overwrite = overwrite;
    opt.quiet = 1;
    opt.out = stdout;
    opt.notices = stderr;
    opt.field_out = field_out;
    return heat_run(&r->c, r->text, &opt, res, err);
}

/* Runs and requires HEAT_OK. */
static void run_ok(const run_case *r, void *field_out, heat_run_result *res)
{
    heat_error err;
    int rc = run(r, 0, field_out, res, &err);
    if (rc != HEAT_OK) fail_msg("heat_run returned %d: %s", rc, err.msg);
}

/* The initial field of the case, on a fresh backend. */
static heat_backend *backend_initial(const heat_case *c)
{
    void *f = malloc(field_bytes(c));
    assert_non_null(f);
    heat_error err;
    heat_backend *b = NULL;
    if (heat_initial_fill(c, f, &err) != HEAT_OK) fail_msg("heat_initial_fill: %s", err.msg);
    if (heat_backend_create(c, NULL, &b, &err) != HEAT_OK)
        fail_msg("heat_backend_create: %s", err.msg);
    if (heat_backend_upload(b, f, &err) != HEAT_OK) fail_msg("heat_backend_upload: %s", err.msg);
    free(f);
    return b;
}

static void advance(heat_backend *b, int64_t steps, double *residual)
{
    heat_error err;
    if (heat_backend_advance(b, steps, residual, &err) != HEAT_OK)
        fail_msg("heat_backend_advance: %s", err.msg);
}

/* The field after `steps` steps straight on the backend. */
static void *backend_field_after(const heat_case *c, int64_t steps)
{
    heat_backend *b = backend_initial(c);
    advance(b, steps, NULL);
    void *f = malloc(field_bytes(c));
    assert_non_null(f);
    heat_error err;
    if (heat_backend_download(b, f, &err) != HEAT_OK)
        fail_msg("heat_backend_download: %s", err.msg);
    heat_backend_destroy(b);
    return f;
}

/* Bit for bit; fails naming the first differing value. */
static void expect_same_field(const heat_case *c, const void *got, const void *want,
                              const char *what)
{
    size_t vs = heat_case_value_size(c);
    for (int64_t i = 0; i < c->d.points; i++) {
        const char *g = (const char *)got + (size_t)i * vs,
                   *w = (const char *)want + (size_t)i * vs;
        if (memcmp(g, w, vs) != 0) {
            double gv = vs == sizeof(float) ? (double)*(const float *)g : *(const double *)g;
            double wv = vs == sizeof(float) ? (double)*(const float *)w : *(const double *)w;
            fail_msg("%s: first differing index %lld: %.17g vs %.17g", what, (long long)i, gv, wv);
        }
    }
}

static const heat_precision precisions[] = {HEAT_DOUBLE, HEAT_FLOAT};

/* ---- stop reasons ------------------------------------------------------ */

static void test_stops_exactly_at_end(void **state)
{
    (void)state;
    for (int dims = 2; dims <= 3; dims++)
        for (int p = 0; p < 2; p++) {
            test_sets s = {0};
            /* 0.0123 is no multiple of the default dt, and check_every 7 is
             * no divisor of the step count: the last chunk is a short one. */
            test_sets_add(&s, "time.end=0.0123");
            test_sets_add(&s, "steady.check_every=7");
            test_sets_add(&s, "steady.tolerance=1e-300");
            run_case r;
            load_run(&r, base_deck, "end", dims, precisions[p], &s);
            assert_true(r.c.d.end_step > 7 && r.c.d.end_step % 7 != 0);
            void *f = malloc(field_bytes(&r.c));
            assert_non_null(f);
            heat_run_result res;
            run_ok(&r, f, &res);
            assert_int_equal(res.reason, HEAT_STOP_END);
            assert_int_equal(res.final_step, r.c.d.end_step);
            /* Exactly the end time, not n * dt rounded. */
            if (res.final_time != 0.0123)
                fail_msg("final_time %.17g, time.end 0.0123", res.final_time);
            assert_true(isfinite(res.last_residual));
            void *want = backend_field_after(&r.c, r.c.d.end_step);
            expect_same_field(&r.c, f, want, "run to time.end vs the backend");
            free(want);
            free(f);
            free_run(&r);
        }
}

static void test_stops_at_max_steps(void **state)
{
    (void)state;
    for (int dims = 2; dims <= 3; dims++) {
        test_sets s = {0};
        test_sets_add(&s, "time.max_steps=37");
        test_sets_add(&s, "steady.check_every=10");
        test_sets_add(&s, "steady.tolerance=1e-300");
        run_case r;
        load_run(&r, base_deck, "max_steps", dims, HEAT_DOUBLE, &s);
        assert_int_equal(r.c.d.end_step, -1);
        heat_run_result res;
        run_ok(&r, NULL, &res);
        assert_int_equal(res.reason, HEAT_STOP_MAX_STEPS);
        assert_int_equal(res.final_step, 37);
        assert_true(res.final_time == 37 * r.c.d.dt);
        /* The last step is always a check step. */
        assert_true(isfinite(res.last_residual) && res.last_residual > 0);
        free_run(&r);
    }
}

static void test_max_steps_before_end_wins(void **state)
{
    (void)state;
    {
        test_sets s = {0};
        test_sets_add(&s, "time.end=1.0");
        test_sets_add(&s, "time.max_steps=25");
        run_case r;
        load_run(&r, base_deck, "max_first", 3, HEAT_DOUBLE, &s);
        assert_true(r.c.d.end_step > 25);
        heat_run_result res;
        run_ok(&r, NULL, &res);
        assert_int_equal(res.reason, HEAT_STOP_MAX_STEPS);
        assert_int_equal(res.final_step, 25);
        assert_true(res.final_time == heat_case_time(&r.c, 25));
        assert_true(res.final_time < 1.0);
        free_run(&r);
    }
    {
        /* And the other way round: the end comes first. */
        test_sets s = {0};
        test_sets_add(&s, "time.end=0.001");
        test_sets_add(&s, "time.max_steps=100000");
        run_case r;
        load_run(&r, base_deck, "end_first", 3, HEAT_DOUBLE, &s);
        assert_true(r.c.d.end_step < 100000);
        heat_run_result res;
        run_ok(&r, NULL, &res);
        assert_int_equal(res.reason, HEAT_STOP_END);
        assert_int_equal(res.final_step, r.c.d.end_step);
        assert_true(res.final_time == 0.001);
        free_run(&r);
    }
}

static void test_stops_at_steady_state(void **state)
{
    (void)state;
    for (int dims = 2; dims <= 3; dims++)
        for (int p = 0; p < 2; p++) {
            const int64_t every = 7;
            const double tol = 1e-3;
            test_sets s = {0};
            test_sets_add(&s, "steady.tolerance=%.17e", tol);
            test_sets_add(&s, "steady.check_every=%lld", (long long)every);
            test_sets_add(&s, "time.max_steps=1000000");
            run_case r;
            load_run(&r, base_deck, "steady", dims, precisions[p], &s);

            /* Where it must stop: the first multiple of check_every at which
             * the residual is <= tolerance, found on the backend directly. */
            heat_backend *b = backend_initial(&r.c);
            int64_t step = 0;
            double res_want = INFINITY;
            while (!(res_want <= tol)) {
                advance(b, every, &res_want);
                step += every;
                if (step > 200000) fail_msg("the residual never fell to %g", tol);
            }
            void *want = malloc(field_bytes(&r.c)), *f = malloc(field_bytes(&r.c));
            assert_non_null(want);
            assert_non_null(f);
            heat_error err;
            assert_int_equal(heat_backend_download(b, want, &err), HEAT_OK);
            heat_backend_destroy(b);
            assert_true(step > 10 * every); /* not trivially at the first check */

            heat_run_result res;
            run_ok(&r, f, &res);
            assert_int_equal(res.reason, HEAT_STOP_STEADY);
            assert_int_equal(res.final_step, step);
            assert_int_equal(res.final_step % every, 0);
            assert_true(res.last_residual <= tol);
            /* The same field, hence the very same residual. */
            assert_true(res.last_residual == res_want);
            expect_same_field(&r.c, f, want, "steady stop vs the backend");
            free(want);
            free(f);
            free_run(&r);
        }
}

/* ---- the field --------------------------------------------------------- */

static void test_run_matches_backend_bit_for_bit(void **state)
{
    (void)state;
    for (int dims = 2; dims <= 3; dims++)
        for (int p = 0; p < 2; p++) {
            const int64_t n = 53;
            test_sets s = {0};
            test_sets_add(&s, "time.max_steps=%lld", (long long)n);
            /* Checks (the residual-computing sweep) at some steps only, and
             * snapshots at others, so that the run is cut into chunks of
             * several lengths. */
            test_sets_add(&s, "steady.check_every=5");
            test_sets_add(&s, "steady.tolerance=1e-300");
            test_sets_add(&s, "output.every=11");
            run_case r;
            load_run(&r, base_deck, "bits", dims, precisions[p], &s);
            void *f = malloc(field_bytes(&r.c));
            assert_non_null(f);
            heat_run_result res;
            run_ok(&r, f, &res);
            assert_int_equal(res.final_step, n);
            void *want = backend_field_after(&r.c, n);
            expect_same_field(&r.c, f, want, "heat_run vs heat_backend_advance in one call");
            /* And the field did change from the initial one. */
            void *f0 = backend_field_after(&r.c, 1);
            assert_true(memcmp(f0, f, field_bytes(&r.c)) != 0);
            free(f0);
            free(want);
            free(f);
            free_run(&r);
        }
}

static void test_blow_up_is_runtime_error(void **state)
{
    (void)state;
    for (int p = 0; p < 2; p++) {
        /* A huge field next to a face held at minus that value: u_{x-} - u
         * overflows to -Inf in the first step, then Inf - Inf gives NaN. */
        const double big = precisions[p] == HEAT_DOUBLE ? 1e308 : 3e38;
        char deck[2048];
        snprintf(deck, sizeof deck,
                 "grid = { points = [9, 9, 9]; length = [1.0, 1.0, 1.0]; };\n"
                 "material = { diffusivity = 1.0; };\n"
                 "initial = { type = \"constant\"; value = %.17e; };\n"
                 "boundary = {\n"
                 "  x_lo = { type = \"dirichlet\"; value = %.17e; };\n"
                 "  x_hi = { type = \"neumann\"; };\n"
                 "  y_lo = { type = \"neumann\"; };\n"
                 "  y_hi = { type = \"neumann\"; };\n"
                 "  z_lo = { type = \"neumann\"; };\n"
                 "  z_hi = { type = \"neumann\"; };\n"
                 "};\n"
                 "solver = { backend = \"cpu\"; };\n",
                 big, -big);
        test_sets s = {0};
        test_sets_add(&s, "time.max_steps=50");
        test_sets_add(&s, "steady.check_every=5");
        test_sets_add(&s, "steady.tolerance=1e-300");
        run_case r;
        load_run(&r, deck, "blowup", 3, precisions[p], &s);
        heat_run_result res;
        heat_error err;
        heat_error_clear(&err);
        int rc = run(&r, 0, NULL, &res, &err);
        assert_int_equal(rc, HEAT_ERUNTIME);
        assert_int_equal(err.code, HEAT_ERUNTIME);
        /* The first check after the overflow is step 5. */
        if (!strstr(err.msg, "at step 5 ("))
            fail_msg("the message does not name step 5: %s", err.msg);
        free_run(&r);
    }
}

/* ---- the output directory and history.csv ------------------------------ */

static void test_occupied_output_dir_refused(void **state)
{
    (void)state;
    test_sets s = {0};
    test_sets_add(&s, "time.max_steps=10");
    run_case r;
    load_run(&r, base_deck, "occupied", 3, HEAT_DOUBLE, &s);
    char path[4200];
    snprintf(path, sizeof path, "%s/history.csv", r.dir);
    const char old[] = "step,time,residual,wall_seconds\n0,0,,0\n";
    test_write_file(path, old);

    heat_run_result res;
    heat_error err;
    heat_error_clear(&err);
    int rc = run(&r, 0, NULL, &res, &err);
    assert_int_equal(rc, HEAT_EINPUT);
    if (!strstr(err.msg, "history.csv"))
        fail_msg("the message does not name the file: %s", err.msg);
    /* Nothing touched. */
    char *now = test_read_file(path);
    assert_non_null(now);
    assert_string_equal(now, old);
    free(now);

    /* With overwrite the run goes ahead and replaces the file. */
    heat_error_clear(&err);
    rc = run(&r, 1, NULL, &res, &err);
    if (rc != HEAT_OK) fail_msg("with overwrite: heat_run returned %d: %s", rc, err.msg);
    assert_int_equal(res.final_step, 10);
    now = test_read_file(path);
    assert_non_null(now);
    assert_true(strcmp(now, old) != 0);
    assert_true(strncmp(now, "step,time,residual,wall", 23) == 0);
    free(now);
    free_run(&r);
}

/* Checks history.csv of a finished run: the header, then one row at step 0
 * (no residual) and one at each step in `steps` (count n), each with the
 * step's exact time, a finite residual and a non-decreasing wall time. */
static void expect_history(const run_case *r, const int64_t *steps, int n, double last_residual)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/history.csv", r->dir);
    char *text = test_read_file(path);
    if (!text) fail_msg("no %s", path);
    char *save = NULL, *line = strtok_r(text, "\n", &save);
    assert_non_null(line);
    if (strncmp(line, "step,time,residual,wall", 23) != 0) fail_msg("header: %s", line);
    double wall_prev = 0;
    for (int row = -1; row < n; row++) {
        line = strtok_r(NULL, "\n", &save);
        if (!line) fail_msg("history.csv ends before the row for step %lld", (long long)steps[row]);
        const int64_t want_step = row < 0 ? 0 : steps[row];
        char *p = line, *end;
        long long step = strtoll(p, &end, 10);
        if (end == p || *end != ',') fail_msg("bad row: %s", line);
        if (step != want_step)
            fail_msg("row %d: step %lld, want %lld (%s)", row + 1, step, (long long)want_step,
                     line);
        p = end + 1;
        double t = strtod(p, &end);
        if (end == p || *end != ',') fail_msg("bad time in row: %s", line);
        /* Written with %.17g: the exact time of the step. */
        if (t != heat_case_time(&r->c, want_step))
            fail_msg("row %s: time %.17g, want %.17g", line, t, heat_case_time(&r->c, want_step));
        p = end + 1;
        if (row < 0) {
            /* Step 0 has no residual yet: an empty field. */
            if (*p != ',') fail_msg("step 0 row has a residual: %s", line);
            end = p;
        } else {
            double res = strtod(p, &end);
            if (end == p || *end != ',') fail_msg("bad residual in row: %s", line);
            assert_true(isfinite(res) && res >= 0);
            /* %.9g: nine significant digits. */
            if (row == n - 1 && !(fabs(res - last_residual) <= 1e-8 * last_residual))
                fail_msg("last row residual %.17g, the run's %.17g", res, last_residual);
        }
        p = end + 1;
        double wall = strtod(p, &end);
        if (end == p || *end != ',') fail_msg("bad wall time in row: %s", line);
        assert_true(wall >= wall_prev);
        wall_prev = wall;
        /* min, max and mean of the field: in order, and the field's own */
        double mm[3];
        for (int k = 0; k < 3; k++) {
            p = end + 1;
            mm[k] = strtod(p, &end);
            if (end == p || *end != ',') fail_msg("bad min/max/mean: %s", line);
        }
        /* an explicit run's rows leave the multigrid columns empty */
        if (strcmp(end, ",,") != 0) fail_msg("multigrid columns in an explicit run: %s", line);
        if (!(mm[0] <= mm[2] && mm[2] <= mm[1])) fail_msg("min <= mean <= max fails: %s", line);
    }
    line = strtok_r(NULL, "\n", &save);
    if (line) fail_msg("an extra row in history.csv: %s", line);
    free(text);
}

static void test_history_rows_at_check_steps(void **state)
{
    (void)state;
    {
        test_sets s = {0};
        test_sets_add(&s, "time.max_steps=23");
        test_sets_add(&s, "steady.check_every=5");
        test_sets_add(&s, "steady.tolerance=1e-300");
        run_case r;
        load_run(&r, base_deck, "history", 3, HEAT_DOUBLE, &s);
        heat_run_result res;
        run_ok(&r, NULL, &res);
        const int64_t steps[] = {5, 10, 15, 20, 23};
        expect_history(&r, steps, 5, res.last_residual);
        free_run(&r);
    }
    {
        /* Ending on time.end: the last row is at end_step, at time end. */
        test_sets s = {0};
        test_sets_add(&s, "time.end=0.03");
        test_sets_add(&s, "steady.check_every=4");
        test_sets_add(&s, "steady.tolerance=1e-300");
        run_case r;
        load_run(&r, base_deck, "history_end", 2, HEAT_FLOAT, &s);
        heat_run_result res;
        run_ok(&r, NULL, &res);
        const int64_t end = r.c.d.end_step;
        assert_true(end > 4 && end < 200);
        int64_t steps[64];
        int n = 0;
        for (int64_t k = 4; k < end; k += 4) steps[n++] = k;
        steps[n++] = end;
        expect_history(&r, steps, n, res.last_residual);
        free_run(&r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stops_exactly_at_end),
        cmocka_unit_test(test_stops_at_max_steps),
        cmocka_unit_test(test_max_steps_before_end_wins),
        cmocka_unit_test(test_stops_at_steady_state),
        cmocka_unit_test(test_run_matches_backend_bit_for_bit),
        cmocka_unit_test(test_blow_up_is_runtime_error),
        cmocka_unit_test(test_occupied_output_dir_refused),
        cmocka_unit_test(test_history_rows_at_check_steps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
