/* Hostile input to the deck and the command line: integers beyond 32 and 64
 * bits (libconfig 1.5 wraps them), derived numbers that overflow or vanish,
 * long paths in messages, a float steady run below what float resolves, an
 * output.dir that is a file, a signal before the first step. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_helpers.h"
#include "deck.h"
#include "driver.h"
#include "output.h"
#include "signals.h"
#include "test_util.h"

/* The sections of the test deck, each replaceable. */
enum { S_GRID, S_MATERIAL, S_TIME, S_INITIAL, S_BOUNDARY, S_REST, S_COUNT };
static const char *const base_sections[S_COUNT] = {
    "grid = { points = [12, 12, 12]; length = [1.0, 1.0, 1.0]; };\n",
    "material = { diffusivity = 1.0; };\n",
    "time = { max_steps = 20; };\n",
    "initial = { type = \"constant\"; value = 0.0; };\n",
    "boundary = { x_lo = { type = \"dirichlet\"; value = 1.0; };\n"
    "  x_hi = { type = \"dirichlet\"; value = 0.0; };\n"
    "  y_lo = { type = \"neumann\"; gradient = 0.3; }; y_hi = { type = \"neumann\"; };\n"
    "  z_lo = { type = \"neumann\"; }; z_hi = { type = \"dirichlet\"; value = 0.5; }; };\n",
    "solver = { backend = \"cpu\"; };\n"};

/* The test deck with sections replaced: make_deck(buf, n, WHICH, "text", ...,
 * -1) (no pair: the base deck). */
static void make_deck(char *buf, size_t n, ...)
{
    const char *sec[S_COUNT];
    memcpy(sec, base_sections, sizeof sec);
    va_list ap;
    va_start(ap, n);
    for (int which; (which = va_arg(ap, int)) >= 0;) sec[which] = va_arg(ap, const char *);
    va_end(ap);
    buf[0] = '\0';
    for (int i = 0; i < S_COUNT; i++) strncat(buf, sec[i], n - strlen(buf) - 1);
}

static int load_deck(int which, const char *extra, const char *const *sets, int nsets, heat_case *c,
                     heat_error *err)
{
    char text[16384];
    make_deck(text, sizeof text, which, extra, -1);
    int rc = heat_deck_load_string(text, "hostile.cfg", sets, nsets, c, NULL, NULL, err);
    return rc ? rc : heat_case_derive(c, err);
}

static void load_ok(int which, const char *extra, const char *const *sets, int nsets, heat_case *c)
{
    heat_error err;
    if (load_deck(which, extra, sets, nsets, c, &err)) fail_msg("%s", err.msg);
}

static void load_fails(int which, const char *extra, const char *const *sets, int nsets,
                       const char *a, const char *b)
{
    heat_case c;
    heat_error err;
    assert_int_equal(load_deck(which, extra, sets, nsets, &c, &err), HEAT_EINPUT);
    test_expect_in("error", err.msg, a);
    if (b) test_expect_in("error", err.msg, b);
}

/* ---- integers as written ------------------------------------------------ */

static void test_integers_beyond_32_bits(void **state)
{
    (void)state;
    heat_case c;
    load_ok(S_TIME, "time = { max_steps = 4294967297; };\n", NULL, 0, &c);
    assert_true(c.time.max_steps == INT64_C(4294967297));
    load_ok(S_TIME, "time = { max_steps = 0x100000000; };\n", NULL, 0, &c);
    assert_true(c.time.max_steps == INT64_C(4294967296));
    load_ok(S_BOUNDARY,
            "boundary = { x_lo = { type = \"dirichlet\"; value = 4294967396; };\n"
            "  x_hi = { type = \"dirichlet\"; value = -2147483649; };\n"
            "  y_lo = { type = \"neumann\"; }; y_hi = { type = \"neumann\"; };\n"
            "  z_lo = { type = \"neumann\"; }; z_hi = { type = \"neumann\"; }; };\n",
            NULL, 0, &c);
    assert_true(c.bc[HEAT_X_LO].value == 4294967396.0);
    assert_true(c.bc[HEAT_X_HI].value == -2147483649.0);
    /* an array mixing small and large integers; a --set value */
    const char *sets[] = {"grid.points=[8,7,4294967297]", "time.max_steps=4294967298"};
    load_ok(-1, "", sets, 2, &c);
    assert_true(c.grid.n[2] == INT64_C(4294967297) && c.grid.dims == 3);
    assert_true(c.time.max_steps == INT64_C(4294967298));
}

static void test_integers_beyond_64_bits(void **state)
{
    (void)state;
    load_fails(S_TIME, "time = { max_steps = 99999999999999999999; };\n", NULL, 0, "time.max_steps",
               "too large");
    const char *sets[] = {"time.max_steps=99999999999999999999"};
    load_fails(-1, "", sets, 1, "--set: time.max_steps", "too large");
    load_fails(S_TIME, "time = { max_steps = 0x1FFFFFFFFFFFFFFFFF; };\n", NULL, 0,
               "hostile.cfg:", "beyond 64 bits");
    /* a large value where a number is expected is that number */
    heat_case c;
    load_ok(S_INITIAL, "initial = { type = \"constant\"; value = 99999999999999999999; };\n", NULL,
            0, &c);
    assert_true(c.initial.value == 1e20);
}

/* An included file is read by libconfig itself: a literal there that
 * libconfig 1.5 would wrap is an error naming the file and line. */
static void test_integers_in_included_files(void **state)
{
    (void)state;
    const char *dir = test_scratch_dir("hostile_include");
    char inc[4300], deck[4300];
    snprintf(inc, sizeof inc, "%s/steps.cfg", dir);
    snprintf(deck, sizeof deck, "%s/main.cfg", dir);
    test_write_file(inc, "# steps\ntime = { max_steps = 4294967297; };\n");
    char text[8192];
    snprintf(text, sizeof text, "%s@include \"steps.cfg\"\n",
             "grid = { points = [8, 8, 8]; length = [1.0, 1.0, 1.0]; };\n"
             "material = { diffusivity = 1.0; };\n"
             "initial = { type = \"constant\"; value = 0.0; };\n"
             "boundary = { x_lo = { type = \"periodic\"; }; x_hi = { type = \"periodic\"; };\n"
             "  y_lo = { type = \"periodic\"; }; y_hi = { type = \"periodic\"; };\n"
             "  z_lo = { type = \"periodic\"; }; z_hi = { type = \"periodic\"; }; };\n");
    test_write_file(deck, text);
    heat_case c;
    heat_error err;
    assert_int_equal(heat_deck_load(deck, NULL, 0, &c, NULL, NULL, &err), HEAT_EINPUT);
    test_expect_in("error", err.msg, inc);
    test_expect_in("error", err.msg, ":2: 4294967297");
    test_expect_in("error", err.msg, "4294967297L");
    test_write_file(inc, "time = { max_steps = 4294967297L; };\n");
    assert_int_equal(heat_deck_load(deck, NULL, 0, &c, NULL, NULL, &err), HEAT_OK);
    assert_true(c.time.max_steps == INT64_C(4294967297));
}

/* ---- derived numbers ---------------------------------------------------- */

static void test_derived_numbers(void **state)
{
    (void)state;
    load_fails(S_MATERIAL, "material = { diffusivity = 1e308; };\n", NULL, 0,
               "material.diffusivity", "dt_max");
    load_fails(S_INITIAL,
               "initial = { type = \"gaussian\"; center = [0.5, 0.5, 0.5]; width = 4.9e-324; "
               "amplitude = 1.0; };\n",
               NULL, 0, "initial.width", "2 width^2");
    load_fails(S_GRID, "grid = { points = [12, 12, 12]; length = [1e-320, 1.0, 1.0]; };\n", NULL, 0,
               "dt_max", "hx");
    /* and heat check says so, exit 2 */
    const char *dir = test_scratch_dir("hostile_derived");
    char deck[4300], text[8192];
    snprintf(deck, sizeof deck, "%s/d.cfg", dir);
    make_deck(text, sizeof text, S_MATERIAL, "material = { diffusivity = 1e308; };\n", -1);
    test_write_file(deck, text);
    result r;
    heat(&r, NULL, "check", deck, NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "material.diffusivity = 1e+308");
    result_free(&r);
}

/* ---- messages show paths whole ------------------------------------------ */

static void test_paths_whole(void **state)
{
    (void)state;
    const char *dir = test_scratch_dir("hostile_paths");
    char missing[4096], extra[4400];
    snprintf(missing, sizeof missing, "%s/", dir);
    for (int i = 0; i < 20; i++) strcat(missing, "a_rather_long_directory_name/");
    strcat(missing, "initial_field.vtkhdf");
    snprintf(extra, sizeof extra, "initial = { type = \"file\"; path = \"%s\"; };\n", missing);
    load_fails(S_INITIAL, extra, NULL, 0, "initial.path", missing);
    /* a value of any kind, whole */
    char name[300];
    memset(name, 'n', 250);
    name[250] = '\0';
    snprintf(extra, sizeof extra, "name = \"%s\";\nsolver = { backend = \"cpu\"; };\n", name);
    load_fails(S_REST, extra, NULL, 0, "name", name);
}

/* ---- a steady float run below what float resolves -------------------------- */

static void write_stall_deck(const char *dir, char *deck, size_t n)
{
    char text[16384], rest[4400];
    snprintf(deck, n, "%s/stall.cfg", dir);
    snprintf(rest, sizeof rest,
             "steady = { tolerance = 1e-12; check_every = 10; stall_checks = 3; };\n"
             "output = { dir = \"%s/out\"; every = 0; };\n"
             "solver = { backend = \"cpu\"; precision = \"float\"; };\n",
             dir);
    make_deck(text, sizeof text, S_REST, rest, S_TIME, "time = { max_steps = 200000; };\n", -1);
    test_write_file(deck, text);
}

static void test_float_stall(void **state)
{
    (void)state;
    const char *dir = test_scratch_dir("hostile_stall");
    char deck[4300], out[4400];
    write_stall_deck(dir, deck, sizeof deck);
    snprintf(out, sizeof out, "%s/out", dir);
    result r;
    heat(&r, NULL, "check", deck, NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "below what float resolves");
    result_free(&r);
    heat(&r, NULL, "run", deck, "--quiet", NULL);
    expect_rc(&r, 3);
    EXPECT_ERR(&r, "below what float resolves");
    EXPECT_ERR(&r, "the residual stalled");
    EXPECT_ERR(&r, "steady.stall_checks");
    EXPECT_ERR(&r, "Use double precision");
    result_free(&r);
    char ckpt[4500], *hist = read_in(out, "history.csv");
    double t, res;
    long long step = last_history_row(hist, &t, &res);
    heat_output_checkpoint_path(ckpt, sizeof ckpt, out, "stall", step);
    if (!test_exists(ckpt)) fail_msg("no final checkpoint %s", ckpt);
    free(hist);
    /* the same deck in double reaches the tolerance: no stall on the way */
    heat(&r, NULL, "run", deck, "--quiet", "--overwrite", "--set", "solver.precision=double", NULL);
    expect_rc(&r, 0);
    EXPECT_NOT_ERR(&r, "stalled");
    result_free(&r);
    /* a double run stalls too below what double resolves, and is not told
     * to use the precision it already has */
    heat(&r, NULL, "run", deck, "--quiet", "--overwrite", "--set", "solver.precision=double",
         "--set", "steady.tolerance=1e-300", NULL);
    expect_rc(&r, 3);
    EXPECT_ERR(&r, "the residual stalled");
    EXPECT_ERR(&r, "Use a larger tolerance");
    EXPECT_NOT_ERR(&r, "Use double precision");
    result_free(&r);
}

/* ---- heat check and the output directory -------------------------------- */

static void test_check_output_dir_is_a_file(void **state)
{
    (void)state;
    const char *dir = test_scratch_dir("hostile_outfile");
    char file[4300], set[4400];
    snprintf(file, sizeof file, "%s/taken", dir);
    test_write_file(file, "not a directory\n");
    snprintf(set, sizeof set, "output.dir=\"%s\"", file);
    result r;
    heat(&r, NULL, "check", "-", "--set", set, NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "exists and is not a directory");
    EXPECT_ERR(&r, file);
    result_free(&r);
}

/* ---- a signal before the first step ------------------------------------- */

/* In a child process, since the signal stays caught for the process. */
static int signal_before_first_step(const char *dir)
{
    heat_case c;
    char extra[4400], *text = NULL;
    snprintf(extra, sizeof extra, "output = { dir = \"%s\"; };\nsolver = { backend = \"cpu\"; };\n",
             dir);
    char deck[16384];
    make_deck(deck, sizeof deck, S_REST, extra, -1);
    heat_error err;
    if (heat_deck_load_string(deck, "sig", NULL, 0, &c, &text, NULL, &err) ||
        heat_case_derive(&c, &err))
        return 10;
    heat_signals_install();
    raise(SIGTERM);
    heat_run_options opt = {.quiet = 1, .out = stdout};
    heat_run_result res;
    if (heat_run(&c, text, &opt, &res, &err)) return 11;
    free(text);
    if (res.reason != HEAT_STOP_SIGNAL || res.signal != SIGTERM) return 12;
    if (res.final_step != 0) return 13;
    char ckpt[4500];
    heat_output_checkpoint_path(ckpt, sizeof ckpt, dir, c.name, 0);
    return access(ckpt, F_OK) == 0 ? 0 : 14;
}

static void test_signal_before_first_step(void **state)
{
    (void)state;
    const char *dir = test_scratch_dir("hostile_signal");
    char d[4200];
    snprintf(d, sizeof d, "%s/out", dir);
    pid_t pid = fork();
    if (pid == 0) _exit(signal_before_first_step(d));
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_integers_beyond_32_bits),
        cmocka_unit_test(test_integers_beyond_64_bits),
        cmocka_unit_test(test_integers_in_included_files),
        cmocka_unit_test(test_derived_numbers),
        cmocka_unit_test(test_paths_whole),
        cmocka_unit_test(test_float_stall),
        cmocka_unit_test(test_check_output_dir_is_a_file),
        cmocka_unit_test(test_signal_before_first_step),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
