/* The heat command line end to end: the real program run in scratch
 * directories. Help and version, exit statuses (usage, deck, runtime,
 * signals), heat check, bad decks writing nothing, --set, the default deck,
 * the output directory guard, --restart, the summary, the stop reasons,
 * history.csv and a run that blows up. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"

/* ---- helpers ------------------------------------------------------------ */

/* One run of the program: exit status and what it printed. */
typedef struct result {
    int rc;
    char *out, *err;
} result;

#define MAX_ARGS 32

/* Runs heat in `cwd` with the NULL-terminated arguments that follow. */
static void heat(result *r, const char *cwd, ...)
{
    const char *argv[MAX_ARGS + 1];
    int n = 0;
    va_list ap;
    va_start(ap, cwd);
    for (const char *s; (s = va_arg(ap, const char *));) {
        assert_true(n < MAX_ARGS);
        argv[n++] = s;
    }
    va_end(ap);
    argv[n] = NULL;
    r->rc = test_run_heat(cwd, argv, &r->out, &r->err);
}

static void result_free(result *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

/* Asserts the exit status, showing what the program printed when it differs. */
static void expect_rc(const result *r, int rc)
{
    if (r->rc != rc)
        fail_msg("exit status %d, expected %d\n--- stdout:\n%s\n--- stderr:\n%s", r->rc, rc, r->out,
                 r->err);
}

#define EXPECT_OUT(r, s)     test_expect_in("stdout", (r)->out, (s))
#define EXPECT_ERR(r, s)     test_expect_in("stderr", (r)->err, (s))
#define EXPECT_NOT_OUT(r, s) test_expect_not_in("stdout", (r)->out, (s))
#define EXPECT_NOT_ERR(r, s) test_expect_not_in("stderr", (r)->err, (s))

/* A scratch directory of our own, copied out of test_scratch_dir's storage. */
static void scratch(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s", test_scratch_dir(name));
}

static void path_in(char *buf, size_t n, const char *dir, const char *name)
{
    snprintf(buf, n, "%s/%s", dir, name);
}

static int exists_in(const char *dir, const char *name)
{
    char p[4200];
    path_in(p, sizeof p, dir, name);
    return test_exists(p);
}

static char *read_in(const char *dir, const char *name)
{
    char p[4200];
    path_in(p, sizeof p, dir, name);
    char *s = test_read_file(p);
    if (!s) fail_msg("cannot read %s", p);
    return s;
}

/* The step of the last row of history.csv text (-1 when there is none), and
 * optionally its time and residual (NaN when empty). */
static long long last_history_row(const char *csv, double *time, double *residual)
{
    const char *last = NULL;
    for (const char *p = csv; *p;) {
        const char *nl = strchr(p, '\n');
        if (p[0] >= '0' && p[0] <= '9') last = p;
        if (!nl) break;
        p = nl + 1;
    }
    if (!last) return -1;
    char *end;
    long long step = strtoll(last, &end, 10);
    assert_true(*end == ',');
    double t = strtod(end + 1, &end);
    assert_true(*end == ',');
    double res = end[1] == ',' ? NAN : strtod(end + 1, &end);
    if (time) *time = t;
    if (residual) *residual = res;
    return step;
}

/* A 16^3 deck (line numbers matter: tests refer to them):
 *   1 grid, 2 material, 3 time (time_line), 4 initial, 5-12 boundary,
 *   13 output (dir "res"), 14 solver, 15 `extra`.
 * Periodic in y, so hx = hz = 1/15, hy = 1/16 and dt_max = 0.5 / 706. */
static void write_deck(const char *dir, const char *file, const char *time_line, const char *extra)
{
    char text[4096], p[4200];
    snprintf(text, sizeof text,
             "grid = { points = [16, 16, 16]; length = [1.0, 1.0, 1.0]; };\n"
             "material = { diffusivity = 1.0; };\n"
             "%s\n"
             "initial = { type = \"constant\"; value = 1.0; };\n"
             "boundary = {\n"
             "  x_lo = { type = \"dirichlet\"; value = 1.0; };\n"
             "  x_hi = { type = \"dirichlet\"; value = 0.0; };\n"
             "  y_lo = { type = \"periodic\"; };\n"
             "  y_hi = { type = \"periodic\"; };\n"
             "  z_lo = { type = \"neumann\"; gradient = 0.0; };\n"
             "  z_hi = { type = \"neumann\"; gradient = 0.0; };\n"
             "};\n"
             "output = { dir = \"res\"; };\n"
             "solver = { backend = \"cpu\"; };\n"
             "%s\n",
             time_line, extra);
    path_in(p, sizeof p, dir, file);
    test_write_file(p, text);
}

/* The usual deck: 16 steps to t = 0.01. */
static void write_small_deck(const char *dir)
{
    write_deck(dir, "d.cfg", "time = { end = 0.01; };", "");
}

/* ---- help, version, usage ---------------------------------------------- */

static void test_help_main(void **state)
{
    (void)state;
    const char *flags[] = {"--help", "-h"};
    for (int i = 0; i < 2; i++) {
        result r;
        heat(&r, NULL, flags[i], NULL);
        expect_rc(&r, 0);
        const char *want[] = {"heat run", "heat check", "--set",       "--restart", "--overwrite",
                              "--quiet",  "--version",  "exit status", "0 done",    "1 runtime",
                              "2 bad",    "130",        "143",         "SIGINT",    "SIGTERM"};
        for (size_t k = 0; k < sizeof want / sizeof *want; k++) EXPECT_OUT(&r, want[k]);
        assert_string_equal(r.err, "");
        result_free(&r);
    }
}

static void test_help_run(void **state)
{
    (void)state;
    result r;
    heat(&r, NULL, "run", "--help", NULL);
    expect_rc(&r, 0);
    const char *want[] = {"usage: heat run",
                          "--set key=value",
                          "--restart PATH",
                          "latest",
                          "--overwrite",
                          "--quiet",
                          "-q",
                          "history.csv",
                          "time.end",
                          "max_steps",
                          "steady",
                          "exit status",
                          "0 done",
                          "1 runtime",
                          "2 bad",
                          "130",
                          "143"};
    for (size_t k = 0; k < sizeof want / sizeof *want; k++) EXPECT_OUT(&r, want[k]);
    assert_string_equal(r.err, "");
    result_free(&r);

    /* --help wins over a deck that does not exist: nothing is run. */
    heat(&r, NULL, "run", "no-such-deck.cfg", "-h", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "usage: heat run");
    result_free(&r);
}

static void test_help_check(void **state)
{
    (void)state;
    result r;
    heat(&r, NULL, "check", "--help", NULL);
    expect_rc(&r, 0);
    const char *want[] = {"usage: heat check", "--set", "dt_max",      "memory",  "output volume",
                          "Writes nothing",    "'-'",   "exit status", "0 valid", "2 invalid"};
    for (size_t k = 0; k < sizeof want / sizeof *want; k++) EXPECT_OUT(&r, want[k]);
    assert_string_equal(r.err, "");
    result_free(&r);
}

static void test_version(void **state)
{
    (void)state;
    result r;
    heat(&r, NULL, "--version", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "heat ");
    EXPECT_OUT(&r, "backends:");
    EXPECT_OUT(&r, "cpu");
    assert_string_equal(r.err, "");
    result_free(&r);
}

static void test_no_arguments(void **state)
{
    (void)state;
    result r;
    heat(&r, NULL, NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "usage:");
    EXPECT_ERR(&r, "heat run");
    assert_string_equal(r.out, "");
    result_free(&r);
}

static void test_unknown_command_and_options(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "usage");
    write_small_deck(dir);
    result r;

    heat(&r, dir, "frobnicate", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "unknown command 'frobnicate'");
    EXPECT_ERR(&r, "--help");
    result_free(&r);

    heat(&r, dir, "run", "d.cfg", "--bogus", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "unknown option --bogus");
    result_free(&r);

    /* run's options are not check's. */
    heat(&r, dir, "check", "d.cfg", "--overwrite", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "unknown option --overwrite");
    EXPECT_ERR(&r, "heat check --help");
    result_free(&r);

    heat(&r, dir, "run", "d.cfg", "--set", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "--set needs key=value");
    result_free(&r);

    heat(&r, dir, "run", "d.cfg", "--restart", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "--restart needs");
    result_free(&r);

    heat(&r, dir, "run", "d.cfg", "d.cfg", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "one deck at a time");
    result_free(&r);

    heat(&r, dir, "check", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "which deck?");
    result_free(&r);

    heat(&r, dir, "run", "missing.cfg", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "missing.cfg");
    EXPECT_ERR(&r, "cannot open");
    result_free(&r);

    /* None of that ran anything. */
    assert_false(exists_in(dir, "res"));
}

/* ---- heat check --------------------------------------------------------- */

static void test_check_prints_derived_numbers(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "check");
    write_small_deck(dir);
    result r;
    heat(&r, dir, "check", "d.cfg", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "deck d.cfg: valid");
    EXPECT_OUT(&r, "16 x 16 x 16 = 4096 points (3D)");
    /* spacing: 1/15 on the fixed axes, 1/16 on the periodic one */
    EXPECT_OUT(&r, "hx 0.0666666667");
    EXPECT_OUT(&r, "hy 0.0625");
    EXPECT_OUT(&r, "hz 0.0666666667");
    /* dt_max = 0.5 / (225 + 256 + 225); 0.9 dt_max fitted to end: 0.01 / 16 */
    EXPECT_OUT(&r, "dt_max          0.000708215297");
    EXPECT_OUT(&r, "dt              0.000625 ");
    EXPECT_OUT(&r, "rx 0.140625  ry 0.16  rz 0.140625");
    EXPECT_OUT(&r, "t = 0.01 at step 16");
    EXPECT_OUT(&r, "memory          64 KiB on the device");
    EXPECT_OUT(&r, "output          res: 2 snapshots of 32 KiB");
    assert_string_equal(r.err, "");
    result_free(&r);
    /* check writes nothing */
    assert_false(exists_in(dir, "res"));
}

static void test_check_default_deck(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "check_default");
    result r;
    heat(&r, dir, "check", "-", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "(built-in default): valid");
    EXPECT_OUT(&r, "name            default");
    EXPECT_OUT(&r, "spacing");
    EXPECT_OUT(&r, "dt_max");
    EXPECT_OUT(&r, "memory");
    result_free(&r);
    assert_false(exists_in(dir, "out"));
}

static void test_check_invalid_deck(void **state)
{
    (void)state;
    char dir[4096], p[4200];
    scratch(dir, sizeof dir, "check_invalid");
    path_in(p, sizeof p, dir, "bad.cfg");
    test_write_file(p, "grid = { points = [16, 2, 16]; length = [1.0, 1.0, 1.0]; };\n"
                       "material = { diffusivity = 1.0; };\n"
                       "time = { end = 0.01; };\n"
                       "initial = { type = \"constant\"; value = 1.0; };\n"
                       "boundary = {\n"
                       "  x_lo = { type = \"dirichlet\"; value = 1.0; };\n"
                       "  x_hi = { type = \"dirichlet\"; value = 0.0; };\n"
                       "  y_lo = { type = \"dirichlet\"; value = 0.0; };\n"
                       "  y_hi = { type = \"dirichlet\"; value = 0.0; };\n"
                       "  z_lo = { type = \"dirichlet\"; value = 0.0; };\n"
                       "  z_hi = { type = \"dirichlet\"; value = 0.0; };\n"
                       "};\n"
                       "output = { dir = \"res\"; };\n");
    result r;
    heat(&r, dir, "check", "bad.cfg", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "bad.cfg:1: grid.points[1] = 2");
    EXPECT_ERR(&r, ">= 3");
    EXPECT_NOT_OUT(&r, "valid");
    result_free(&r);
    assert_false(exists_in(dir, "res"));
}

/* ---- bad decks: exit 2 and nothing written ------------------------------- */

static void test_bad_deck_reports_every_problem(void **state)
{
    (void)state;
    char dir[4096], p[4200];
    scratch(dir, sizeof dir, "bad_deck");
    path_in(p, sizeof p, dir, "bad.cfg");
    test_write_file(p, "grid = { points = [16, 16, 16]; length = [1.0, 1.0, 1.0]; };\n"
                       "material = { diffusivity = -1.5; };\n"
                       "time = { end = 0.01; };\n"
                       "initial = { type = \"constant\"; value = 1.0; };\n"
                       "boundary = {\n"
                       "  x_lo = { type = \"dirichlet\"; value = 1.0; };\n"
                       "  x_hi = { type = \"dirichlet\"; value = 0.0; };\n"
                       "  y_lo = { type = \"periodic\"; };\n"
                       "  y_hi = { type = \"periodic\"; };\n"
                       "  z_lo = { type = \"neumann\"; gradient = 0.0; };\n"
                       "  z_hi = { type = \"neumann\"; gradient = 0.0; };\n"
                       "};\n"
                       "output = { dir = \"deep/res\"; evrey = 5; };\n"
                       "solver = { backend = \"cpu\"; precision = \"quad\"; };\n");
    result r;
    heat(&r, dir, "run", "bad.cfg", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "invalid deck");
    EXPECT_ERR(&r, "bad.cfg:2: material.diffusivity = -1.5");
    EXPECT_ERR(&r, "bad.cfg:13: unknown key output.evrey");
    EXPECT_ERR(&r, "did you mean every?");
    EXPECT_ERR(&r, "bad.cfg:14: solver.precision = \"quad\"");
    EXPECT_NOT_OUT(&r, "reached");
    result_free(&r);
    assert_false(exists_in(dir, "deep"));

    /* check says the same */
    heat(&r, dir, "check", "bad.cfg", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "bad.cfg:2: material.diffusivity = -1.5");
    EXPECT_ERR(&r, "bad.cfg:13: unknown key output.evrey");
    result_free(&r);
    assert_false(exists_in(dir, "deep"));
}

static void test_syntax_error(void **state)
{
    (void)state;
    char dir[4096], p[4200];
    scratch(dir, sizeof dir, "syntax");
    path_in(p, sizeof p, dir, "syn.cfg");
    test_write_file(p, "output = { dir = \"res\"; };\n"
                       "grid = { points = [16, 16, 16] \n"
                       "material = ;\n");
    const char *cmds[] = {"run", "check"};
    for (int i = 0; i < 2; i++) {
        result r;
        heat(&r, dir, cmds[i], "syn.cfg", NULL);
        expect_rc(&r, 2);
        /* file:line: message, with a message */
        const char *at = strstr(r.err, "syn.cfg:");
        if (!at) fail_msg("no syn.cfg:LINE in:\n%s", r.err);
        char *end;
        long line = strtol(at + 8, &end, 10);
        assert_true(line >= 2 && line <= 3);
        assert_true(end[0] == ':' && end[1] == ' ');
        assert_true(end[2] != '\0' && end[2] != '\n');
        result_free(&r);
        assert_false(exists_in(dir, "res"));
    }
}

static void test_dt_above_stability_limit(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "dt_limit");
    write_deck(dir, "dt.cfg", "time = { end = 0.01; dt = 0.5; };", "");
    const char *cmds[] = {"run", "check"};
    for (int i = 0; i < 2; i++) {
        result r;
        heat(&r, dir, cmds[i], "dt.cfg", NULL);
        expect_rc(&r, 2);
        EXPECT_ERR(&r, "time.dt = 0.5");
        EXPECT_ERR(&r, "stability limit");
        EXPECT_ERR(&r, "dt_max = 0.000708215297");
        result_free(&r);
        assert_false(exists_in(dir, "res"));
    }
    /* the same through --set, and a dt just below the limit is fine */
    write_small_deck(dir);
    result r;
    heat(&r, dir, "run", "d.cfg", "--set", "time.dt=0.001", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "time.dt = 0.001");
    EXPECT_ERR(&r, "0.000708215297");
    result_free(&r);
    assert_false(exists_in(dir, "res"));
    heat(&r, dir, "check", "d.cfg", "--set", "time.dt=0.0007", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "(time.dt, fitted to end)");
    result_free(&r);
}

static void test_output_dir_is_a_file(void **state)
{
    (void)state;
    char dir[4096], p[4200];
    scratch(dir, sizeof dir, "dir_is_file");
    write_small_deck(dir);
    path_in(p, sizeof p, dir, "res");
    test_write_file(p, "not a directory\n");
    result r;
    heat(&r, dir, "run", "d.cfg", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "output.dir = \"res\"");
    EXPECT_ERR(&r, "not a directory");
    result_free(&r);
}

/* ---- --set ------------------------------------------------------------- */

static void test_set_overrides(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "set");
    write_small_deck(dir);
    result r;

    heat(&r, dir, "check", "d.cfg", "--set", "time.end=2.0", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "end             t = 2 at step");
    result_free(&r);

    heat(&r, dir, "check", "d.cfg", "--set", "grid.points=[32,32,1]", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "32 x 32 x 1 = 1024 points (2D)");
    result_free(&r);

    heat(&r, dir, "check", "d.cfg", "--set", "solver.precision=\"float\"", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "precision float");
    EXPECT_OUT(&r, "32 KiB on the device");
    result_free(&r);

    /* a bare word is a string; --set=key=value and -s are the same option */
    heat(&r, dir, "check", "d.cfg", "--set=solver.precision=float", "-s", "time.end=3", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "precision float");
    EXPECT_OUT(&r, "t = 3 at step");
    result_free(&r);

    /* on run, all together; the later --set wins */
    heat(&r, dir, "run", "d.cfg", "--set", "grid.points=[32,32,1]", "--set",
         "solver.precision=float", "--set", "time.end=0.5", "--set", "time.end=0.002", "--set",
         "output.dir=\"runs/p2\"", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "32 x 32 x 1 points");
    EXPECT_OUT(&r, "float");
    EXPECT_OUT(&r, "reached time.end");
    EXPECT_OUT(&r, "t = 0.002");
    result_free(&r);
    assert_true(exists_in(dir, "runs/p2/history.csv"));
    assert_false(exists_in(dir, "res"));
}

/* solver.temporal_block: heat check says what it will do (without a GPU), and
 * a run where it cannot fuse steps says so once and gives the same results. */
static void test_temporal_block(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "temporal");
    write_small_deck(dir);
    result r;
    heat(&r, dir, "check", "d.cfg", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "kernel register_tiled, temporal_block 1\n");
    result_free(&r);
    heat(&r, dir, "check", "d.cfg", "--set", "solver.temporal_block=4", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "temporal_block 4 (the CPU runs the steps one by one; only register_tiled on "
                   "the GPU fuses steps)\n");
    result_free(&r);
    heat(&r, dir, "check", "d.cfg", "--set", "solver.temporal_block=4", "--set",
         "solver.backend=cuda", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "temporal_block 4 (4 steps fused per pass over GPU memory)\n");
    result_free(&r);
    heat(&r, dir, "check", "d.cfg", "--set", "solver.temporal_block=4", "--set",
         "solver.backend=cuda", "--set", "solver.kernel=sliced", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "temporal_block 4 (kernel sliced runs the steps one by one");
    result_free(&r);
    heat(&r, dir, "check", "d.cfg", "--set", "solver.temporal_block=9", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "solver.temporal_block = 9: expected an integer from 1 to 8");
    result_free(&r);

    /* The CPU backend runs the steps one at a time: said once, same field. */
    heat(&r, dir, "run", "d.cfg", NULL);
    expect_rc(&r, 0);
    EXPECT_NOT_ERR(&r, "temporal_block");
    result_free(&r);
    char *want = read_in(dir, "res/history.csv");
    heat(&r, dir, "run", "d.cfg", "--overwrite", "--set", "solver.temporal_block=3", NULL);
    expect_rc(&r, 0);
    const char *notice = "notice: solver.temporal_block = 3: the cpu backend runs the steps one "
                         "at a time (only the register_tiled GPU kernel fuses steps); results "
                         "are the same\n";
    EXPECT_ERR(&r, notice);
    assert_null(strstr(strstr(r.err, notice) + 1, notice));
    EXPECT_OUT(&r, "reached time.end at step 16");
    result_free(&r);
    char *got = read_in(dir, "res/history.csv");
    double t1, t2, r1, r2;
    assert_int_equal(last_history_row(want, &t1, &r1), 16);
    assert_int_equal(last_history_row(got, &t2, &r2), 16);
    assert_true(t1 == t2 && r1 == r2 && r1 > 0);
    free(want);
    free(got);
}

static void test_set_bad_value(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "set_bad");
    write_small_deck(dir);
    const char *cmds[] = {"run", "check"};
    for (int i = 0; i < 2; i++) {
        result r;
        heat(&r, dir, cmds[i], "d.cfg", "--set", "grid.points=[2,2,2]", NULL);
        expect_rc(&r, 2);
        EXPECT_ERR(&r, "--set: grid.points[0] = 2");
        EXPECT_ERR(&r, ">= 3");
        result_free(&r);

        heat(&r, dir, cmds[i], "d.cfg", "--set", "solver.precision=quad", NULL);
        expect_rc(&r, 2);
        EXPECT_ERR(&r, "--set: solver.precision = \"quad\"");
        EXPECT_ERR(&r, "\"float\"");
        result_free(&r);

        heat(&r, dir, cmds[i], "d.cfg", "--set", "time.end", NULL);
        expect_rc(&r, 2);
        EXPECT_ERR(&r, "--set time.end");
        EXPECT_ERR(&r, "key=value");
        result_free(&r);

        heat(&r, dir, cmds[i], "d.cfg", "--set", "time.end=", NULL);
        expect_rc(&r, 2);
        EXPECT_ERR(&r, "--set");
        EXPECT_ERR(&r, "empty");
        result_free(&r);
        assert_false(exists_in(dir, "res"));
    }
}

static void test_set_unknown_key(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "set_typo");
    write_small_deck(dir);
    const char *cmds[] = {"run", "check"};
    for (int i = 0; i < 2; i++) {
        result r;
        heat(&r, dir, cmds[i], "d.cfg", "--set", "time.ned=3", NULL);
        expect_rc(&r, 2);
        EXPECT_ERR(&r, "--set");
        EXPECT_ERR(&r, "unknown key time.ned");
        EXPECT_ERR(&r, "did you mean end?");
        result_free(&r);

        heat(&r, dir, cmds[i], "d.cfg", "--set", "solvr.precision=float", NULL);
        expect_rc(&r, 2);
        EXPECT_ERR(&r, "solvr");
        result_free(&r);
        assert_false(exists_in(dir, "res"));
    }
}

/* ---- running ------------------------------------------------------------ */

static void test_run_default_deck(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "default");
    result r;
    heat(&r, dir, "run", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "heat: default:");
    EXPECT_OUT(&r, "reached time.end");
    EXPECT_OUT(&r, "out/default");
    result_free(&r);
    char *csv = read_in(dir, "out/default/history.csv");
    assert_true(strncmp(csv, "step,time,residual,wall_seconds\n", 32) == 0);
    assert_true(last_history_row(csv, NULL, NULL) > 0);
    free(csv);
}

static void test_summary(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "summary");
    write_small_deck(dir);
    result r;
    heat(&r, dir, "run", "d.cfg", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "heat: d: 16 x 16 x 16 points, dt 0.000625, on cpu");
    EXPECT_OUT(&r, "reached time.end at step 16, t = 0.01");
    EXPECT_OUT(&r, "steps 16 (from 0)");
    EXPECT_OUT(&r, "simulated time 0.01,");
    EXPECT_OUT(&r, "wall ");
    EXPECT_OUT(&r, " GLUP/s");
    EXPECT_OUT(&r, " GB/s effective");
    EXPECT_OUT(&r, "last residual");
    EXPECT_OUT(&r, "files written: 5 in res (history.csv, d.xmf, 2 snapshots, 1 checkpoint)");
    /* stdout is not a terminal: no status line with \r, and a short run
     * (well under the 5 s log interval) logs no progress line */
    EXPECT_NOT_OUT(&r, "\r");
    EXPECT_NOT_OUT(&r, "\nstep ");
    EXPECT_NOT_OUT(&r, "ETA");
    assert_string_equal(r.err, "");
    result_free(&r);
}

static void test_quiet(void **state)
{
    (void)state;
    const char *flags[] = {"--quiet", "-q"};
    for (int i = 0; i < 2; i++) {
        char dir[4096];
        scratch(dir, sizeof dir, i ? "quiet_q" : "quiet");
        write_small_deck(dir);
        result r;
        heat(&r, dir, "run", "d.cfg", flags[i], NULL);
        expect_rc(&r, 0);
        assert_string_equal(r.out, "");
        assert_string_equal(r.err, "");
        result_free(&r);
        /* it did run */
        char *csv = read_in(dir, "res/history.csv");
        assert_int_equal(last_history_row(csv, NULL, NULL), 16);
        free(csv);
    }
}

static void test_refuses_to_overwrite(void **state)
{
    (void)state;
    char dir[4096], p[4200];
    scratch(dir, sizeof dir, "overwrite");
    write_small_deck(dir);
    result r;
    heat(&r, dir, "run", "d.cfg", NULL);
    expect_rc(&r, 0);
    result_free(&r);
    char *before = read_in(dir, "res/history.csv");
    path_in(p, sizeof p, dir, "res/notes.txt");
    test_write_file(p, "mine\n");

    /* a second run into the same directory is refused and changes nothing */
    heat(&r, dir, "run", "d.cfg", "--set", "time.end=0.02", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "output.dir = \"res\" already holds another run");
    EXPECT_ERR(&r, "--overwrite");
    EXPECT_ERR(&r, "--restart latest");
    EXPECT_NOT_OUT(&r, "reached");
    result_free(&r);
    char *after = read_in(dir, "res/history.csv");
    assert_string_equal(before, after);
    free(after);

    /* check says so too, without failing */
    heat(&r, dir, "check", "d.cfg", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "note");
    EXPECT_OUT(&r, "already holds another run");
    result_free(&r);

    /* --restart and --overwrite together are refused before anything */
    heat(&r, dir, "run", "d.cfg", "--restart", "latest", "--overwrite", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "--restart");
    EXPECT_ERR(&r, "--overwrite");
    EXPECT_ERR(&r, "choose one");
    result_free(&r);
    after = read_in(dir, "res/history.csv");
    assert_string_equal(before, after);
    free(after);

    /* --overwrite replaces the run's files and keeps the others */
    heat(&r, dir, "run", "d.cfg", "--overwrite", "--set", "time.end=0.02", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "reached time.end at step 32");
    result_free(&r);
    after = read_in(dir, "res/history.csv");
    assert_int_equal(last_history_row(after, NULL, NULL), 32);
    assert_string_not_equal(before, after);
    free(after);
    free(before);
    assert_true(exists_in(dir, "res/notes.txt"));
}

/* The rows of history.csv whose step is `step`: how many, and how many of
 * them carry a residual. */
static void history_rows_at(const char *csv, long long step, int *rows, int *with_residual)
{
    *rows = *with_residual = 0;
    for (const char *p = strchr(csv, '\n'); p && p[1]; p = strchr(p + 1, '\n')) {
        char *end;
        long long s = strtoll(p + 1, &end, 10);
        if (end == p + 1 || s != step) continue;
        (*rows)++;
        const char *res = strchr(end + 1, ',');
        if (res && res[1] != ',') (*with_residual)++;
    }
}

static void test_restart(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "restart");
    write_small_deck(dir);
    result r;

    /* latest with no checkpoint: says so and starts from the initial condition */
    heat(&r, dir, "run", "d.cfg", "--restart", "latest", NULL);
    expect_rc(&r, 0);
    EXPECT_ERR(&r, "--restart latest: no checkpoint in res");
    EXPECT_ERR(&r, "initial condition");
    EXPECT_OUT(&r, "steps 16 (from 0)");
    result_free(&r);
    char *csv = read_in(dir, "res/history.csv");
    assert_true(strncmp(csv, "step,time,residual,wall_seconds\n0,0,,", 36) == 0);
    assert_int_equal(last_history_row(csv, NULL, NULL), 16);
    free(csv);
    assert_true(exists_in(dir, "res/d_ckpt_00000016.vtkhdf"));

    /* latest now finds the final checkpoint; a later time.end continues it
     * with the checkpoint's dt (0.01/16 divides 0.02) */
    heat(&r, dir, "run", "d.cfg", "--restart=latest", "--set", "time.end=0.02", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "continuing from res/d_ckpt_00000016.vtkhdf at step 16, t = 0.01");
    EXPECT_OUT(&r, "reached time.end at step 32, t = 0.02");
    EXPECT_OUT(&r, "steps 16 (from 16)");
    EXPECT_NOT_ERR(&r, "keeping the dt");
    result_free(&r);
    csv = read_in(dir, "res/history.csv");
    /* rows are not written twice: step 0 once; step 16 keeps its residual
     * and gains one mark of the restart; 32 once */
    int rows, with_res;
    history_rows_at(csv, 0, &rows, &with_res);
    assert_int_equal(rows, 1);
    history_rows_at(csv, 16, &rows, &with_res);
    assert_int_equal(rows, 2);
    assert_int_equal(with_res, 1);
    history_rows_at(csv, 32, &rows, &with_res);
    assert_int_equal(rows, 1);
    assert_int_equal(with_res, 1);
    free(csv);
    /* rotation: the newest two checkpoints */
    assert_true(exists_in(dir, "res/d_ckpt_00000016.vtkhdf"));
    assert_true(exists_in(dir, "res/d_ckpt_00000032.vtkhdf"));

    /* restarting at the last step of the deck: nothing to run, no error */
    heat(&r, dir, "run", "d.cfg", "--restart=latest", "--set", "time.end=0.02", "-q", NULL);
    expect_rc(&r, 0);
    result_free(&r);

    /* a time.end that is not a whole number of steps of the checkpoint's dt:
     * the run keeps dt, stops at the first step past it and says so */
    heat(&r, dir, "run", "d.cfg", "--restart", "res/d_ckpt_00000016.vtkhdf", "--set",
         "time.end=0.0203", NULL);
    expect_rc(&r, 0);
    EXPECT_ERR(&r, "keeping the dt of res/d_ckpt_00000016.vtkhdf, 0.000625");
    EXPECT_ERR(&r, "not a whole number of steps");
    EXPECT_OUT(&r, "reached time.end at step 33, t = 0.020625");
    result_free(&r);

    /* --restart FILE without a deck: the deck the file holds */
    heat(&r, dir, "run", "--restart", "res/d_ckpt_00000016.vtkhdf", "--set", "time.end=0.015",
         NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "heat: d: 16 x 16 x 16 points");
    EXPECT_OUT(&r, "reached time.end at step 24, t = 0.015");
    result_free(&r);

    /* past the deck's end: refused before anything is written */
    char *before = read_in(dir, "res/history.csv");
    heat(&r, dir, "run", "d.cfg", "--restart", "res/d_ckpt_00000024.vtkhdf", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "--restart res/d_ckpt_00000024.vtkhdf: the file is at step 24");
    EXPECT_ERR(&r, "past the last step of this deck, 16 (time.end)");
    result_free(&r);

    /* a deck that does not match: exit 2, every difference named, nothing written */
    heat(&r, dir, "run", "d.cfg", "--restart", "res/d_ckpt_00000024.vtkhdf", "--set", "time.end=1",
         "--set", "grid.points=[16,16,8]", "--set", "material.diffusivity=2.0", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "does not match the checkpoint");
    EXPECT_ERR(&r, "grid.points = [16, 16, 8] in the deck, [16, 16, 16] in the checkpoint");
    EXPECT_ERR(&r, "material.diffusivity = 2 in the deck, 1 in the checkpoint");
    result_free(&r);
    char *after = read_in(dir, "res/history.csv");
    assert_string_equal(before, after);
    free(after);
    free(before);

    /* a checkpoint file that is not there: exit 2 */
    heat(&r, dir, "run", "d.cfg", "--restart", "nowhere.vtkhdf", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "--restart nowhere.vtkhdf: cannot read the file: No such file");
    result_free(&r);
    heat(&r, dir, "run", "--restart", "nowhere.vtkhdf", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "nowhere.vtkhdf");
    result_free(&r);
    /* and one that is not a heat file */
    heat(&r, dir, "run", "d.cfg", "--restart", "d.cfg", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "not a heat snapshot or checkpoint");
    result_free(&r);
}

/* ---- heat info ----------------------------------------------------------- */

static void test_info(void **state)
{
    (void)state;
    char dir[4096], p[4200];
    scratch(dir, sizeof dir, "info");
    write_small_deck(dir);
    result r;
    heat(&r, dir, "info", "--help", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "usage: heat info FILE");
    EXPECT_OUT(&r, "checksum");
    EXPECT_OUT(&r, "exit status");
    result_free(&r);
    heat(&r, NULL, "--help", NULL);
    EXPECT_OUT(&r, "heat info FILE");
    EXPECT_OUT(&r, "  info ");
    result_free(&r);

    heat(&r, dir, "run", "d.cfg", "-q", "--set", "solver.precision=float", NULL);
    expect_rc(&r, 0);
    result_free(&r);
    heat(&r, dir, "info", "res/d_ckpt_00000016.vtkhdf", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "kind            checkpoint");
    EXPECT_OUT(&r, "step            16\n");
    EXPECT_OUT(&r, "time            0.01\n");
    EXPECT_OUT(&r, "dt              0.000625");
    EXPECT_OUT(&r, "grid            16 x 16 x 16 = 4096 points (3D)");
    EXPECT_OUT(&r, "spacing         hx 0.066666666666666666  hy 0.0625  hz 0.066666666666666666");
    EXPECT_OUT(&r, "precision       float");
    EXPECT_OUT(&r, "boundary x_lo    dirichlet u = 1");
    EXPECT_OUT(&r, "boundary y_hi    periodic");
    EXPECT_OUT(&r, "boundary z_hi    neumann du/dn = 0");
    EXPECT_OUT(&r, "written by heat ");
    EXPECT_OUT(&r, "format          heat field file format 1");
    EXPECT_OUT(&r, "checksum        verified (all 4096 values read)");
    EXPECT_OUT(&r, "deck:\n  name = \"d\";");
    EXPECT_OUT(&r, "    precision = \"float\";");
    result_free(&r);
    heat(&r, dir, "info", "res/d_00000000.vtkhdf", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "kind            snapshot");
    EXPECT_OUT(&r, "step            0\n");
    result_free(&r);

    /* heat check reads an initial field's shape from the file */
    heat(&r, dir, "check", "d.cfg", "--set",
         "initial={type=\"file\"; path=\"res/d_00000000.vtkhdf\";}", NULL);
    expect_rc(&r, 0);
    result_free(&r);
    heat(&r, dir, "check", "d.cfg", "--set",
         "initial={type=\"file\"; path=\"res/d_00000000.vtkhdf\";}", "--set",
         "grid.points=[16,16,8]", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "initial.path = \"res/d_00000000.vtkhdf\": the file's grid is 16 x 16 x 16 "
                   "points, but grid.points = [16, 16, 8]");
    result_free(&r);

    /* missing: 2; not a heat file: 1; usage: 2 */
    heat(&r, dir, "info", "res/nothing.vtkhdf", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "res/nothing.vtkhdf: No such file");
    result_free(&r);
    heat(&r, dir, "info", "d.cfg", NULL);
    expect_rc(&r, 1);
    EXPECT_ERR(&r, "d.cfg: not a heat snapshot or checkpoint (not an HDF5 file)");
    result_free(&r);
    heat(&r, dir, "info", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "which file?");
    result_free(&r);

    /* a damaged file: the last byte of the field's only chunk ends the file
     * region written last; flip a byte in the middle of the file's data */
    path_in(p, sizeof p, dir, "res/d_ckpt_00000016.vtkhdf");
    FILE *f = fopen(p, "r+b");
    assert_non_null(f);
    /* The field (16 KiB of floats) is most of the file: its middle is data. */
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long size = ftell(f);
    assert_true(size > 16384);
    long at = size - 8192;
    assert_int_equal(fseek(f, at, SEEK_SET), 0);
    int c = fgetc(f);
    assert_int_equal(fseek(f, at, SEEK_SET), 0);
    fputc(c ^ 0x10, f);
    fclose(f);
    heat(&r, dir, "info", "res/d_ckpt_00000016.vtkhdf", NULL);
    expect_rc(&r, 1);
    EXPECT_ERR(&r, "res/d_ckpt_00000016.vtkhdf: corrupt: ");
    EXPECT_OUT(&r, "checksum        FAILED");
    result_free(&r);
}

/* ---- stop reasons, history.csv ----------------------------------------- */

static void test_stop_at_end_time(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "stop_end");
    write_deck(dir, "d.cfg", "time = { end = 0.01; max_steps = 1000; };", "");
    result r;
    heat(&r, dir, "run", "d.cfg", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "reached time.end at step 16, t = 0.01");
    result_free(&r);
    double t, res;
    char *csv = read_in(dir, "res/history.csv");
    assert_true(strncmp(csv, "step,time,residual,wall_seconds\n", 32) == 0);
    assert_int_equal(last_history_row(csv, &t, &res), 16);
    assert_true(t == 0.01);
    assert_true(res > 0);
    free(csv);
}

static void test_stop_at_max_steps(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "stop_max");
    write_deck(dir, "d.cfg", "time = { end = 10.0; max_steps = 37; };", "");
    result r;
    heat(&r, dir, "run", "d.cfg", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "reached time.max_steps at step 37");
    EXPECT_OUT(&r, "steps 37 (from 0)");
    result_free(&r);
    char *csv = read_in(dir, "res/history.csv");
    double t;
    assert_int_equal(last_history_row(csv, &t, NULL), 37);
    assert_true(t > 0 && t < 10.0);
    free(csv);

    /* max_steps alone */
    heat(&r, dir, "run", "d.cfg", "--overwrite", "--set", "time={max_steps=5;}", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "reached time.max_steps at step 5");
    result_free(&r);
}

static void test_stop_at_steady_state(void **state)
{
    (void)state;
    char dir[4096], p[4200];
    scratch(dir, sizeof dir, "stop_steady");
    path_in(p, sizeof p, dir, "st.cfg");
    test_write_file(p, "grid = { points = [8, 8, 1]; length = [1.0, 1.0, 1.0]; };\n"
                       "material = { diffusivity = 1.0; };\n"
                       "steady = { tolerance = 1.0e-6; check_every = 10; };\n"
                       "initial = { type = \"constant\"; value = 0.0; };\n"
                       "boundary = {\n"
                       "  x_lo = { type = \"dirichlet\"; value = 1.0; };\n"
                       "  x_hi = { type = \"dirichlet\"; value = 0.0; };\n"
                       "  y_lo = { type = \"dirichlet\"; value = 0.0; };\n"
                       "  y_hi = { type = \"dirichlet\"; value = 0.0; };\n"
                       "};\n"
                       "output = { dir = \"res\"; };\n"
                       "solver = { backend = \"cpu\"; };\n");
    result r;
    heat(&r, dir, "check", "st.cfg", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "checked every 10 steps");
    EXPECT_OUT(&r, "at steady state only");
    result_free(&r);

    heat(&r, dir, "run", "st.cfg", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "reached steady state at step ");
    result_free(&r);
    char *csv = read_in(dir, "res/history.csv");
    double res;
    long long step = last_history_row(csv, NULL, &res);
    assert_true(step > 0);
    assert_int_equal(step % 10, 0);
    assert_true(res <= 1.0e-6);
    free(csv);

    /* a step bound that comes first wins */
    heat(&r, dir, "run", "st.cfg", "--overwrite", "--set", "time.max_steps=20", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "reached time.max_steps at step 20");
    result_free(&r);
}

static void test_blow_up_exits_1(void **state)
{
    (void)state;
    char dir[4096], p[4200];
    scratch(dir, sizeof dir, "blow_up");
    path_in(p, sizeof p, dir, "nf.cfg");
    /* h = 10: the ghost node behind x_lo, u + 2 h gradient = 1e308 + 2e309,
     * overflows to Inf, and so does the face next to it at the first step. */
    test_write_file(p, "grid = { points = [8, 8, 1]; length = [70.0, 70.0, 1.0]; };\n"
                       "material = { diffusivity = 1.0; };\n"
                       "time = { max_steps = 1000; };\n"
                       "initial = { type = \"constant\"; value = 1.0e308; };\n"
                       "boundary = {\n"
                       "  x_lo = { type = \"neumann\"; gradient = 1.0e308; };\n"
                       "  x_hi = { type = \"neumann\"; gradient = 0.0; };\n"
                       "  y_lo = { type = \"neumann\"; gradient = 0.0; };\n"
                       "  y_hi = { type = \"neumann\"; gradient = 0.0; };\n"
                       "};\n"
                       "output = { dir = \"res\"; };\n"
                       "solver = { backend = \"cpu\"; };\n");
    result r;
    heat(&r, dir, "check", "nf.cfg", NULL);
    expect_rc(&r, 0); /* the deck itself is valid */
    result_free(&r);

    heat(&r, dir, "run", "nf.cfg", NULL);
    expect_rc(&r, 1);
    /* the first check step: steady.check_every defaults to 100 */
    EXPECT_ERR(&r, "no longer finite at step 100 (t = ");
    EXPECT_NOT_OUT(&r, "reached");
    result_free(&r);

    heat(&r, dir, "run", "nf.cfg", "--overwrite", "--set", "steady.check_every=1", "--set",
         "steady.tolerance=1e-300", NULL);
    expect_rc(&r, 1);
    EXPECT_ERR(&r, "no longer finite at step 1 (t = ");
    result_free(&r);
}

/* ---- signals ------------------------------------------------------------ */

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void sleep_seconds(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* Starts a long run in `dir`, sends `sig` about a second in, and checks that
 * heat stopped itself with exit status 128 + sig and said so. */
static void run_and_signal(const char *name, int sig, const char *sig_name)
{
    char dir[4096], out_path[4200], err_path[4200];
    scratch(dir, sizeof dir, name);
    /* 64^3 for 10^8 steps: minutes of work, so only the signal ends it */
    write_deck(dir, "long.cfg", "time = { max_steps = 100000000; };", "");
    path_in(out_path, sizeof out_path, dir, "stdout.txt");
    path_in(err_path, sizeof err_path, dir, "stderr.txt");

    fflush(NULL);
    const double t0 = now_seconds();
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* a clean slate: default dispositions, nothing blocked */
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (chdir(dir) != 0) _exit(126);
        int in = open("/dev/null", O_RDONLY);
        int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (in < 0 || o < 0 || e < 0) _exit(126);
        dup2(in, 0), dup2(o, 1), dup2(e, 2);
        execl(HEAT_EXE, HEAT_EXE, "run", "long.cfg", "--set", "grid.points=[64,64,64]",
              (char *)NULL);
        _exit(127);
    }

    /* Wait until the run is under way (its first history row comes after
     * the handlers are installed), and at least a second has gone by. */
    char hist[4200];
    path_in(hist, sizeof hist, dir, "res/history.csv");
    int st = 0, started = 0;
    while (now_seconds() - t0 < 30) {
        if (waitpid(pid, &st, WNOHANG) == pid) {
            char *e = test_read_file(err_path);
            fail_msg("heat ended before the signal (status 0x%x):\n%s", st, e ? e : "");
        }
        char *h = test_read_file(hist);
        started = h && last_history_row(h, NULL, NULL) >= 0;
        free(h);
        if (started && now_seconds() - t0 >= 1.0) break;
        sleep_seconds(0.02);
    }
    if (!started) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        fail_msg("heat did not start its run within 30 s");
    }
    assert_int_equal(kill(pid, sig), 0);

    /* It stops after the current step: well within a few seconds. */
    const double t1 = now_seconds();
    int done = 0;
    while (!done && now_seconds() - t1 < 20) {
        done = waitpid(pid, &st, WNOHANG) == pid;
        if (!done) sleep_seconds(0.02);
    }
    if (!done) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        fail_msg("heat did not stop within 20 s of %s", sig_name);
    }
    char *out = test_read_file(out_path), *err = test_read_file(err_path);
    assert_non_null(out);
    assert_non_null(err);
    if (WIFSIGNALED(st))
        fail_msg("heat was killed by signal %d instead of stopping itself\nstderr:\n%s",
                 WTERMSIG(st), err);
    assert_true(WIFEXITED(st));
    if (WEXITSTATUS(st) != 128 + sig)
        fail_msg("exit status %d, expected %d\nstderr:\n%s", WEXITSTATUS(st), 128 + sig, err);
    char want[64];
    snprintf(want, sizeof want, "stopped by %s at step ", sig_name);
    test_expect_in("stderr", err, want);
    test_expect_in("stdout", out, "interrupted by a signal at step ");
    /* and it got somewhere before that */
    const char *at = strstr(err, want);
    const long long stop = strtoll(at + strlen(want), NULL, 10);
    assert_true(stop > 0);
    free(out);
    free(err);

    /* The checkpoint of the step it stopped at is complete on disk, and the
     * run can go on from it. */
    char ckpt[256], want_step[64];
    snprintf(ckpt, sizeof ckpt, "res/long_ckpt_%08lld.vtkhdf", stop);
    if (!exists_in(dir, ckpt)) fail_msg("no %s after %s", ckpt, sig_name);
    result r;
    heat(&r, dir, "info", ckpt, NULL);
    expect_rc(&r, 0);
    snprintf(want_step, sizeof want_step, "step            %lld\n", stop);
    EXPECT_OUT(&r, want_step);
    EXPECT_OUT(&r, "checksum        verified");
    result_free(&r);
    char max_steps[64];
    snprintf(max_steps, sizeof max_steps, "time.max_steps=%lld", stop + 3);
    heat(&r, dir, "run", "long.cfg", "--set", "grid.points=[64,64,64]", "--restart", "latest",
         "--set", max_steps, NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "steps 3 (from ");
    result_free(&r);
}

static void test_sigint_exits_130(void **state)
{
    (void)state;
    run_and_signal("sigint", SIGINT, "SIGINT");
}

static void test_sigterm_exits_143(void **state)
{
    (void)state;
    run_and_signal("sigterm", SIGTERM, "SIGTERM");
}

/* heat bench: a row per size and precision, the same in the JSON file, with
 * numbers that are measurements (positive, and GB/s = GLUP/s * 2 * bytes).
 * The CPU gets only k = 1 rows, whatever --temporal asks for. */
static void test_bench(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "bench");
    result r;
    heat(&r, dir, "bench", "--help", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "--size");
    EXPECT_OUT(&r, "median");
    EXPECT_OUT(&r, "--temporal K");
    EXPECT_OUT(&r, "1,2,3,4,6,8");
    EXPECT_OUT(&r, "per time step");
    result_free(&r);

    heat(&r, dir, "bench", "--backend", "cpu", "--size", "20x12x7", "--size", "24x16x1", "--runs",
         "3", "--steps", "2", "--temporal", "4,2", "--json", "b.json", NULL);
    expect_rc(&r, 0);
    int rows = 0;
    for (const char *line = r.out; line; line = strchr(line, '\n')) {
        if (*line == '\n') line++;
        char size[64], prec[16];
        int k;
        double ms, glups, gbps, copy, pct;
        if (sscanf(line, "cpu openmp %d %63s %15s %lf %lf %lf %lf %lf%%", &k, size, prec, &ms,
                   &glups, &gbps, &copy, &pct) != 8)
            continue;
        rows++;
        assert_int_equal(k, 1);
        /* On a busy machine GLUP/s and GB/s of these tiny grids can print as 0.000: the
         * JSON below, to 6 digits, shows that they are positive. */
        assert_true(ms > 0 && glups >= 0 && copy >= 0 && pct > 0);
        double bytes = strcmp(prec, "float") == 0 ? 4 : 8;
        /* printed to 3 and 2 decimals: agree to rounding */
        assert_true(fabs(gbps - glups * 2 * bytes) <= 0.01 + 1e-3 * gbps);
        assert_true(strcmp(size, "20x12x7") == 0 || strcmp(size, "24x16x1") == 0);
    }
    assert_int_equal(rows, 4);
    result_free(&r);
    char path[4200];
    snprintf(path, sizeof path, "%s/b.json", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char buf[8192];
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = '\0';
    int json_rows = 0;
    for (const char *p = buf; (p = strstr(p, "\"glups\": ")); p++) {
        json_rows++;
        assert_true(strtod(p + strlen("\"glups\": "), NULL) > 0);
        const char *peak = strstr(p, "\"peak_gbps\": ");
        assert_non_null(peak);
        assert_true(strtod(peak + strlen("\"peak_gbps\": "), NULL) > 0);
    }
    assert_int_equal(json_rows, 4);
    assert_non_null(strstr(buf, "\"peak_gbps\""));
    assert_non_null(strstr(buf, "\"efficiency\""));
    int k1_rows = 0;
    for (const char *p = buf; (p = strstr(p, "\"temporal_block\": 1,")); p++) k1_rows++;
    assert_int_equal(k1_rows, 4);

    heat(&r, dir, "bench", "--size", "2x2x2", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "--size 2x2x2");
    result_free(&r);
    heat(&r, dir, "bench", "--runs", "1", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "--runs 1");
    result_free(&r);
    /* --temporal: each k from 1 to 8, refused before anything is timed. */
    const char *bad_k[][2] = {{"0", "--temporal 0: "},
                              {"9", "--temporal 9: "},
                              {"2,9", "--temporal 2,9: 9: "},
                              {"1.5", "--temporal 1.5: "},
                              {"", "--temporal : "}};
    for (size_t i = 0; i < sizeof bad_k / sizeof *bad_k; i++) {
        heat(&r, dir, "bench", "--backend", "cpu", "--size", "16x16x16", "--runs", "3", "--steps",
             "1", "--temporal", bad_k[i][0], NULL);
        expect_rc(&r, 2);
        EXPECT_ERR(&r, bad_k[i][1]);
        EXPECT_ERR(&r, "from 1 to 8");
        EXPECT_NOT_OUT(&r, "openmp");
        result_free(&r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help_main),
        cmocka_unit_test(test_help_run),
        cmocka_unit_test(test_help_check),
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_bench),
        cmocka_unit_test(test_no_arguments),
        cmocka_unit_test(test_unknown_command_and_options),
        cmocka_unit_test(test_check_prints_derived_numbers),
        cmocka_unit_test(test_check_default_deck),
        cmocka_unit_test(test_check_invalid_deck),
        cmocka_unit_test(test_bad_deck_reports_every_problem),
        cmocka_unit_test(test_syntax_error),
        cmocka_unit_test(test_dt_above_stability_limit),
        cmocka_unit_test(test_output_dir_is_a_file),
        cmocka_unit_test(test_set_overrides),
        cmocka_unit_test(test_temporal_block),
        cmocka_unit_test(test_set_bad_value),
        cmocka_unit_test(test_set_unknown_key),
        cmocka_unit_test(test_run_default_deck),
        cmocka_unit_test(test_summary),
        cmocka_unit_test(test_quiet),
        cmocka_unit_test(test_refuses_to_overwrite),
        cmocka_unit_test(test_restart),
        cmocka_unit_test(test_info),
        cmocka_unit_test(test_stop_at_end_time),
        cmocka_unit_test(test_stop_at_max_steps),
        cmocka_unit_test(test_stop_at_steady_state),
        cmocka_unit_test(test_blow_up_exits_1),
        cmocka_unit_test(test_sigint_exits_130),
        cmocka_unit_test(test_sigterm_exits_143),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
