/* The heat command line end to end: the real program run in scratch
 * directories. Help and version, usage errors (exit 2), heat check, bad
 * decks writing nothing, --set, heat info and heat bench. Running, restart,
 * the stop reasons and signals: test_run.c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "cli_helpers.h"
#include "heat_case.h"
#include "output.h"

/* ---- help, version, usage ---------------------------------------------- */

static void test_help_main(void **state)
{
    (void)state;
    const char *flags[] = {"--help", "-h"};
    for (int i = 0; i < 2; i++) {
        result r;
        heat(&r, NULL, flags[i], NULL);
        expect_rc(&r, 0);
        const char *want[] = {"heat run", "heat check", "--set", "--restart", "--overwrite",
                              "--quiet", "--version", "exit status", "0 done", "1 runtime", "2 bad",
                              "130", "143", "129", "SIGINT", "SIGTERM", "SIGHUP",
                              /* exit status 3 for both kinds of stall, as heat run --help */
                              "3 steady run or an\n             implicit step's solve stalled"};
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
                          "3 steady run or an implicit\nstep's solve stalled",
                          "without CUDA",
                          "-s key=value, --set=key=value",
                          "--option=value",
                          "current batch of steps",
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

/* heat help COMMAND is that command's --help; stray arguments are refused. */
static void test_help_command(void **state)
{
    (void)state;
    result r;
    heat(&r, NULL, "help", "bench", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "usage: heat bench");
    result_free(&r);
    heat(&r, NULL, "help", "check", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "usage: heat check");
    result_free(&r);
    heat(&r, NULL, "help", "frob", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "unknown command 'frob'");
    result_free(&r);
    const char *stray[][3] = {
        {"help", "info", "extra"}, {"version", "extra", NULL}, {"--help", "extra", NULL}};
    for (int i = 0; i < 3; i++) {
        heat(&r, NULL, stray[i][0], stray[i][1], stray[i][2], NULL);
        expect_rc(&r, 2);
        EXPECT_ERR(&r, "unexpected argument 'extra'");
        assert_string_equal(r.out, "");
        result_free(&r);
    }
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
    EXPECT_NOT_OUT(&r, "would fail part-way with a full disk");
    assert_string_equal(r.err, "");
    result_free(&r);
    /* check writes nothing */
    assert_false(exists_in(dir, "res"));
}

/* A tolerance below the rounding floor: the note says what ends a stalled
 * run, the stall check or, where steady.stall_checks = 0 turns it off, the
 * step bound, or nothing at all. */
static void test_check_stall_end(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "check_stall");
    write_small_deck(dir);
    result r;
    heat(&r, dir, "check", "d.cfg", "--set", "steady={tolerance=1e-30; stall_checks=7;}", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "the residual may stall above the tolerance, and then the run stops after "
                   "steady.stall_checks = 7 checks without a new low (exit status 3)");
    result_free(&r);
    heat(&r, dir, "check", "d.cfg", "--set", "steady={tolerance=1e-30; stall_checks=0;}", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "and then with steady.stall_checks = 0 the run goes on to its step bound "
                   "(step 16)");
    result_free(&r);
    heat(&r, dir, "check", "d.cfg", "--set", "steady={tolerance=1e-30; stall_checks=0;}", "--set",
         "time={}", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "and then with steady.stall_checks = 0 and no time.end or time.max_steps the "
                   "run never ends");
    EXPECT_OUT(&r, "at steady state only (no step bound); steady.stall_checks = 0: should the "
                   "residual stall above the tolerance, the run never ends");
    result_free(&r);
}

/* Crank-Nicolson far above the explicit limit: heat check says that the
 * fastest modes ring; not at a dt near the limit, nor for backward Euler. */
static void test_check_crank_nicolson_rings(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "check_cn");
    write_small_deck(dir);
    result r;
    heat(&r, dir, "check", "d.cfg", "--set",
         "time={scheme=\"crank_nicolson\"; dt=0.1; max_steps=10;}", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "time.scheme = \"crank_nicolson\" at dt = ");
    EXPECT_OUT(&r, "the grid's fastest modes change sign each step and shrink only by a factor");
    EXPECT_OUT(&r, "\"backward_euler\" damps them");
    result_free(&r);
    const char *quiet[] = {"time={scheme=\"crank_nicolson\"; dt=0.001; max_steps=10;}",
                           "time={scheme=\"backward_euler\"; dt=0.1; max_steps=10;}"};
    for (int i = 0; i < 2; i++) {
        heat(&r, dir, "check", "d.cfg", "--set", quiet[i], NULL);
        expect_rc(&r, 0);
        EXPECT_NOT_OUT(&r, "fastest modes change sign");
        result_free(&r);
    }
}

/* A multigrid deck: heat check names multigrid instead of the explicit
 * kernel, counts the levels' memory, and shows a split over ranks with how
 * the levels are held; a grid of one level cannot be split (exit 2, as heat
 * run refuses it, nothing written). */
static void test_check_multigrid(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "check_mg");
    write_small_deck(dir);
    result r;
    heat(&r, dir, "check", "d.cfg", "--set", "steady={tolerance=1e-6; method=\"multigrid\";}",
         NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "multigrid (solver.kernel and solver.temporal_block do not apply)");
    EXPECT_OUT(&r, "multigrid levels' arrays");
    EXPECT_OUT(&r, "split           one process (under mpirun -np N");
    assert_null(strstr(r.out, "temporal_block 1"));
    EXPECT_NOT_OUT(&r, "interpolate by the faces' conductivities");
    result_free(&r);
    /* two conductivities: the interpolation that follows them is named */
    char p[4200];
    path_in(p, sizeof p, dir, "m.cfg");
    test_write_file(
        p,
        "grid = { points = [16, 16, 16]; length = [1.0, 1.0, 1.0]; };\n"
        "materials = ( { name = \"a\"; conductivity = 2.0; density = 1.0; specific_heat = 1.0; },\n"
        "  { name = \"b\"; conductivity = 0.5; density = 1.0; specific_heat = 1.0; } );\n"
        "regions = ( { material = \"b\"; box = { min = [0.0, 0.0, 0.0]; max = [0.5, 1.0, 1.0]; }; "
        "} );\n"
        "time = { max_steps = 10; };\n"
        "steady = { tolerance = 1.0e-6; method = \"multigrid\"; };\n"
        "initial = { type = \"constant\"; value = 1.0; };\n"
        "boundary = {\n"
        "  x_lo = { type = \"dirichlet\"; value = 1.0; }; x_hi = { type = \"dirichlet\"; value = "
        "0.0; };\n"
        "  y_lo = { type = \"neumann\"; }; y_hi = { type = \"neumann\"; };\n"
        "  z_lo = { type = \"neumann\"; }; z_hi = { type = \"neumann\"; };\n"
        "};\n"
        "output = { dir = \"res\"; };\n");
    heat(&r, dir, "check", "m.cfg", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "the coarse levels interpolate by the faces' conductivities (0.5 to 2 W/(m K)");
    result_free(&r);
    heat(&r, dir, "check", "d.cfg", "--set", "steady={tolerance=1e-6; method=\"multigrid\";}",
         "--ranks", "2", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "multigrid: each rank holds its box of the fine levels");
    EXPECT_OUT(&r, "more for the multigrid levels' arrays (its box of the");
    result_free(&r);
    heat(&r, dir, "check", "d.cfg", "--set", "steady={tolerance=1e-6; method=\"multigrid\";}",
         "--set", "grid.points=[8, 8, 8]", "--ranks", "2", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "is solved directly, in one process");
    EXPECT_ERR(&r, "without mpirun");
    result_free(&r);
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

/* What heat run refuses as deck errors when it sets up, check refuses too:
 * "nccl" on the CPU backend, and "collective" files over several processes
 * where this heat's HDF5 is serial (the same function decides). */
static void test_check_refuses_what_run_refuses(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "check refuses");
    write_small_deck(dir);
    result r;
    heat(&r, dir, "check", "d.cfg", "--set", "parallel.transport=\"nccl\"", "--set",
         "solver.backend=\"cpu\"", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "parallel.transport = \"nccl\" moves halos between GPUs, but this run is on "
                   "the CPU: use \"auto\" or \"mpi\"");
    EXPECT_NOT_OUT(&r, "valid");
    result_free(&r);
    /* and heat run in one process, before anything is written */
    heat(&r, dir, "run", "d.cfg", "--set", "parallel.transport=\"nccl\"", "--set",
         "solver.backend=\"cpu\"", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "parallel.transport = \"nccl\" moves halos between GPUs, but this run is on "
                   "the CPU: use \"auto\" or \"mpi\"");
    char out[4200];
    path_in(out, sizeof out, dir, "res");
    assert_int_not_equal(access(out, F_OK), 0);
    result_free(&r);
    heat(&r, dir, "check", "d.cfg", "--set", "parallel.transport=\"mpi\"", "--set",
         "solver.backend=\"cpu\"", NULL);
    expect_rc(&r, 0);
    result_free(&r);

    heat_case c;
    memset(&c, 0, sizeof c);
    c.parallel.io = HEAT_PIO_COLLECTIVE;
    heat_error err;
    const int serial = heat_output_check_parallel_io(&c, &err) != HEAT_OK;
    heat(&r, dir, "check", "d.cfg", "--set", "parallel.io=\"collective\"", "--ranks", "2", NULL);
    expect_rc(&r, serial ? 2 : 0);
    if (serial) EXPECT_ERR(&r, "parallel.io = \"collective\" needs a parallel HDF5");
    result_free(&r);
    /* one process writes its files alone: nothing to refuse */
    heat(&r, dir, "check", "d.cfg", "--set", "parallel.io=\"collective\"", NULL);
    expect_rc(&r, 0);
    result_free(&r);
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

/* The number after `prefix` in text, copied as a user would copy it. */
static void number_after(char *buf, size_t n, const char *text, const char *prefix)
{
    const char *p = strstr(text, prefix);
    if (!p) fail_msg("no \"%s\" in:\n%s", prefix, text);
    p += strlen(prefix);
    size_t len = strspn(p, "0123456789.e-+");
    if (len == 0 || len >= n) fail_msg("no number after \"%s\" in:\n%s", prefix, text);
    memcpy(buf, p, len);
    buf[len] = '\0';
}

/* The dt_max that heat check prints, and the bound the refusal advises, are
 * accepted as time.dt. With diffusivity 3, dt_max = 0.5 / 2118 =
 * 2.3607176581...e-4, which nine digits round up. */
static void test_dt_max_as_printed_is_accepted(void **state)
{
    (void)state;
    char dir[4096], dt[64], set[96];
    scratch(dir, sizeof dir, "dt_max_copied");
    write_small_deck(dir);
    result r;
    heat(&r, dir, "check", "d.cfg", "--set", "material.diffusivity=3", NULL);
    expect_rc(&r, 0);
    number_after(dt, sizeof dt, r.out, "dt_max          ");
    result_free(&r);
    snprintf(set, sizeof set, "time.dt=%s", dt);
    heat(&r, dir, "check", "d.cfg", "--set", "material.diffusivity=3", "--set", set, NULL);
    expect_rc(&r, 0);
    result_free(&r);
    heat(&r, dir, "check", "d.cfg", "--set", "material.diffusivity=3", "--set", "time.dt=0.001",
         NULL);
    expect_rc(&r, 2);
    number_after(dt, sizeof dt, r.err, "use dt <= ");
    result_free(&r);
    snprintf(set, sizeof set, "time.dt=%s", dt);
    heat(&r, dir, "check", "d.cfg", "--set", "material.diffusivity=3", "--set", set, NULL);
    expect_rc(&r, 0);
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
    /* under that file: a deck error too, for run and check, naming the file */
    const char *cmds[] = {"run", "check"};
    for (int i = 0; i < 2; i++) {
        heat(&r, dir, cmds[i], "d.cfg", "--set", "output.dir=res/a/b", NULL);
        expect_rc(&r, 2);
        EXPECT_ERR(&r, "output.dir = \"res/a/b\": res is a file, not a directory");
        result_free(&r);
    }
    /* a part longer than a file name may be: a deck error, named whole,
     * before any directory above it is made */
    char longpart[300], set[400];
    memset(longpart, 'x', 299);
    longpart[299] = '\0';
    snprintf(set, sizeof set, "output.dir=new/%s/b", longpart);
    for (int i = 0; i < 2; i++) {
        heat(&r, dir, cmds[i], "d.cfg", "--set", set, NULL);
        expect_rc(&r, 2);
        char want[400];
        snprintf(want, sizeof want, "its part \"%s\" has 299 characters", longpart);
        EXPECT_ERR(&r, want);
        result_free(&r);
    }
    assert_false(exists_in(dir, "new"));
}

/* A truncated checkpoint named to --restart is bad input (2), with or
 * without a deck, like a file that is not HDF5 at all. */
static void test_restart_truncated_file(void **state)
{
    (void)state;
    char dir[4096], ckpt[4200], cut[4200];
    scratch(dir, sizeof dir, "restart_truncated");
    write_small_deck(dir);
    result r;
    heat(&r, dir, "run", "d.cfg", "-q", "--set", "time.max_steps=2", NULL);
    expect_rc(&r, 0);
    result_free(&r);
    path_in(ckpt, sizeof ckpt, dir, "res/d_ckpt_00000002.vtkhdf");
    path_in(cut, sizeof cut, dir, "cut.vtkhdf");
    FILE *in = fopen(ckpt, "rb"), *out = fopen(cut, "wb");
    assert_non_null(in);
    assert_non_null(out);
    char buf[2000];
    assert_int_equal(fread(buf, 1, sizeof buf, in), sizeof buf);
    assert_int_equal(fwrite(buf, 1, sizeof buf, out), sizeof buf);
    fclose(in);
    fclose(out);
    heat(&r, dir, "run", "-q", "--restart", "cut.vtkhdf", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "--restart cut.vtkhdf: corrupt");
    result_free(&r);
    heat(&r, dir, "run", "d.cfg", "-q", "--set", "output.dir=res2", "--restart", "cut.vtkhdf",
         NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "--restart cut.vtkhdf: corrupt");
    result_free(&r);
    assert_false(exists_in(dir, "res2"));
}

/* output.dir with a trailing slash: the files' paths have no doubled slash,
 * and a second run is pointed to a sibling, not a directory inside. */
static void test_output_dir_trailing_slash(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "dir_slash");
    write_small_deck(dir);
    result r;
    heat(&r, dir, "run", "d.cfg", "-q", "--set", "output.dir=res/", "--set", "time.max_steps=2",
         NULL);
    expect_rc(&r, 0);
    result_free(&r);
    heat(&r, dir, "run", "d.cfg", "--set", "output.dir=res/", "--set", "time.max_steps=3",
         "--restart", "latest", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "continuing from res/d_ckpt_00000002.vtkhdf");
    EXPECT_NOT_OUT(&r, "//");
    EXPECT_NOT_ERR(&r, "//");
    result_free(&r);
    heat(&r, dir, "run", "d.cfg", "-q", "--set", "output.dir=res/", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "output.dir=\"res-2\"");
    EXPECT_NOT_ERR(&r, "res/-2");
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

    /* an output more than any disk holds (petabytes): said, still valid */
    heat(&r, dir, "check", "d.cfg", "--set", "grid.points=[4096,4096,4096]", "--set",
         "time.max_steps=100000", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "note            the output, up to ");
    EXPECT_OUT(&r, "free where res would lie: the run would fail part-way with a full disk");
    result_free(&r);

    /* memory as the backend holds the field: on the GPU rows of 15 floats
     * padded to 16 (2 x 16 x 16 x 16 x 4 bytes; a rank's part 16 x 16 x 9
     * with its ghost layer), packed on the CPU (2 x 15 x 16 x 16 x 4) */
    heat(&r, dir, "check", "d.cfg", "--set", "grid.points=[15,16,16]", "--set",
         "solver.precision=\"float\"", "--set", "solver.backend=\"cuda\"", "--ranks", "2", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "32 KiB on the device");
    EXPECT_OUT(&r, "per rank: memory 18 KiB to 18 KiB");
    result_free(&r);
    heat(&r, dir, "check", "d.cfg", "--set", "grid.points=[15,16,16]", "--set",
         "solver.precision=\"float\"", "--set", "solver.backend=\"cpu\"", "--ranks", "2", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "30 KiB on the device");
    EXPECT_OUT(&r, "per rank: memory 16.9 KiB to 16.9 KiB");
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

    /* a value missing its closing quote is refused, not taken as a
     * directory named with the quote */
    heat(&r, dir, "run", "d.cfg", "-q", "--set", "output.dir=\"runs/p3", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "--set output.dir=\"runs/p3: cannot read the value");
    result_free(&r);
    assert_false(exists_in(dir, "\"runs"));
    assert_false(exists_in(dir, "runs/p3"));
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
    /* "auto": the table's k, and on one GPU the depths a run times first. */
    heat(&r, dir, "check", "d.cfg", "--set", "solver.temporal_block=\"auto\"", "--set",
         "solver.backend=cuda", "--set", "solver.precision=\"float\"", "--set",
         "grid.points=[64, 64, 64]", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "temporal_block 3 (\"auto\": the fastest measured for 3D float on an H100 with "
                   "register_tiled; a run on one GPU times k = 2 to 4 there first and keeps the "
                   "fastest)\n");
    result_free(&r);
    heat(&r, dir, "check", "d.cfg", "--set", "solver.temporal_block=\"auto\"", "--set",
         "solver.backend=cuda", "--set", "solver.precision=\"float\"", "--set",
         "grid.points=[64, 64, 28]", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "a run on one GPU times k = 2 to 3 there first");
    result_free(&r);
    /* backend "auto" in a build without CUDA: the table's k, run one by one */
    heat(&r, dir, "check", "d.cfg", "--set", "solver.temporal_block=\"auto\"", "--set",
         "solver.backend=auto", "--set", "grid.points=[64, 64, 64]", NULL);
    expect_rc(&r, 0);
    if (heat_backend_has_gpu_build())
        EXPECT_NOT_OUT(&r, "this run is on the CPU");
    else
        EXPECT_OUT(&r, "on an H100 with register_tiled; this run is on the CPU, which runs the "
                       "steps one by one)\n");
    result_free(&r);
    heat(&r, dir, "check", "d.cfg", "--set", "solver.temporal_block=\"auto\"", "--set",
         "solver.backend=cuda", "--set", "solver.precision=\"float\"", "--set",
         "grid.points=[64, 64, 64]", "--set",
         "material={conductivity=1.0; density=1.0; specific_heat=1.0;}", "--set",
         "boundary.x_lo={type=\"convective\"; h=10.0; ambient=0.0;}", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "temporal_block 1 (\"auto\": the fastest measured for 3D float general cases "
                   "on an H100 with register_tiled; a run on one GPU times k = 1 to 2 there first");
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

/* A key with an empty part is refused, not merged: time..end is not time.end. */
static void test_set_empty_key_part(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "set_empty_part");
    write_small_deck(dir);
    const char *cmds[] = {"run", "check"};
    const char *keys[][2] = {
        {"time..end=3", "--set time..end=3: the key time..end has an empty part"},
        {".time.end=3", "--set .time.end=3: the key .time.end has an empty part"},
        {"time.end.=3", "--set time.end.=3: the key time.end. has an empty part"}};
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 3; k++) {
            result r;
            heat(&r, dir, cmds[i], "d.cfg", "--set", keys[k][0], NULL);
            expect_rc(&r, 2);
            EXPECT_ERR(&r, keys[k][1]);
            EXPECT_NOT_OUT(&r, "valid");
            result_free(&r);
        }
    assert_false(exists_in(dir, "res"));
}

/* Names that could not be run whole are refused before anything is written:
 * X_ckpt (its snapshots carry the names of run X's checkpoints, so it could
 * never be restarted), given or made from the deck file's name, and a
 * default name beyond the 200 characters a given one may have. */
static void test_name_refusals(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "name_rules");
    write_small_deck(dir);
    result r;
    heat(&r, dir, "run", "d.cfg", "-q", "--set", "name=x_ckpt", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "--set: name = \"x_ckpt\": a name must not end in \"_ckpt\"");
    EXPECT_ERR(&r, "the checkpoints of a run \"x\"");
    EXPECT_ERR(&r, "e.g. \"x-ckpt\"");
    result_free(&r);
    assert_false(exists_in(dir, "res"));

    write_deck(dir, "foo_ckpt.cfg", "time = { max_steps = 20; };", "");
    const char *cmds[] = {"check", "run"};
    for (int i = 0; i < 2; i++) {
        heat(&r, dir, cmds[i], "foo_ckpt.cfg", NULL);
        expect_rc(&r, 2);
        EXPECT_ERR(&r, "foo_ckpt.cfg: the default name \"foo_ckpt\", made from the deck file's "
                       "name, ends in \"_ckpt\"");
        EXPECT_ERR(&r, "set a name in the deck that does not end in \"_ckpt\", e.g. name = "
                       "\"foo-ckpt\";");
        EXPECT_NOT_OUT(&r, "valid");
        result_free(&r);
    }
    assert_false(exists_in(dir, "res"));

    char file[256], want[600];
    memset(file, 'a', 240);
    snprintf(file + 240, sizeof file - 240, ".cfg");
    write_deck(dir, file, "time = { max_steps = 20; };", "");
    for (int i = 0; i < 2; i++) {
        heat(&r, dir, cmds[i], file, NULL);
        expect_rc(&r, 2);
        snprintf(want, sizeof want, "%s: the default name \"%.240s\"", file, file);
        EXPECT_ERR(&r, want);
        EXPECT_ERR(&r, "has 240 characters, more than the 200 a name may have: set name =");
        result_free(&r);
    }
    assert_false(exists_in(dir, "res"));

    /* With a name of its own the deck runs, and restarts. */
    heat(&r, dir, "run", "foo_ckpt.cfg", "-q", "--set", "name=foo", NULL);
    expect_rc(&r, 0);
    result_free(&r);
    heat(&r, dir, "run", "foo_ckpt.cfg", "-q", "--set", "name=foo", "--set", "time.max_steps=30",
         "--restart", "latest", NULL);
    expect_rc(&r, 0);
    result_free(&r);
    assert_true(exists_in(dir, "res/foo_ckpt_00000030.vtkhdf"));
}

/* In float precision a deck value that sets a temperature must be a float:
 * refused as a deck error (key, value, the range, double suggested) before
 * anything is written, not as a field that is no longer finite at step 0. */
static void test_float_range(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "float_range");
    write_small_deck(dir);
    const char *sets[][2] = {{"boundary.x_lo.value=1e39", "--set: boundary.x_lo.value = 1e+39: "},
                             {"initial.value=1e308", "--set: initial.value = 1e+308: "}};
    for (int k = 0; k < 2; k++) {
        result r;
        heat(&r, dir, "run", "d.cfg", "-q", "--set", "solver.precision=float", "--set", sets[k][0],
             NULL);
        expect_rc(&r, 2);
        EXPECT_ERR(&r, sets[k][1]);
        EXPECT_ERR(&r, "beyond the range of solver.precision = \"float\" (|value| <= "
                       "3.40282347e+38): use a smaller value, or solver.precision = \"double\"");
        EXPECT_NOT_ERR(&r, "no longer finite");
        result_free(&r);
        assert_false(exists_in(dir, "res"));
        heat(&r, dir, "check", "d.cfg", "--set", "solver.precision=float", "--set", sets[k][0],
             NULL);
        expect_rc(&r, 2);
        EXPECT_ERR(&r, sets[k][1]);
        result_free(&r);
        /* double holds it */
        heat(&r, dir, "check", "d.cfg", "--set", sets[k][0], NULL);
        expect_rc(&r, 0);
        result_free(&r);
    }
}

/* time.end beyond the steps a run may count: the refusal says the limit and
 * what to change. */
static void test_too_many_steps_says_limit(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "steps_limit");
    write_small_deck(dir);
    result r;
    heat(&r, dir, "check", "d.cfg", "--set", "time.end=1e15", "--set", "time.max_steps=5", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "time.end = 1e+15 needs ");
    EXPECT_ERR(&r, "too many (at most 9e+15 steps may reach time.end): use a smaller time.end, "
                   "or a larger time.dt (explicit steps take at most dt_max = 0.000708215297");
    result_free(&r);
}

/* --ranks names the value it refuses. */
static void test_ranks_values(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "ranks");
    write_small_deck(dir);
    const char *bad[] = {"99999999", "abc", "0", "-2", "3x"};
    for (int i = 0; i < 5; i++) {
        char want[128], opt[64];
        snprintf(want, sizeof want,
                 "heat: --ranks %s: expected a number of processes from 1 to 16777216", bad[i]);
        result r;
        heat(&r, dir, "check", "d.cfg", "--ranks", bad[i], NULL);
        expect_rc(&r, 2);
        EXPECT_ERR(&r, want);
        result_free(&r);
        snprintf(opt, sizeof opt, "--ranks=%s", bad[i]);
        heat(&r, dir, "check", "d.cfg", opt, NULL);
        expect_rc(&r, 2);
        EXPECT_ERR(&r, want);
        result_free(&r);
    }
    result r;
    heat(&r, dir, "check", "d.cfg", "--ranks", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "heat: --ranks needs a number of processes from 1 to 16777216");
    result_free(&r);
}

/* ---- heat info ----------------------------------------------------------- */

/* heat info --help, and the main help naming the command. */
static void info_help(const char *dir)
{
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
}

/* A float run's checkpoint and first snapshot: what heat info says of them. */
static void info_describes_files(const char *dir)
{
    result r;
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
    EXPECT_OUT(&r, "boundary x_lo    dirichlet, value 1");
    EXPECT_OUT(&r, "boundary y_hi    periodic");
    EXPECT_OUT(&r, "boundary z_hi    neumann, gradient 0");
    EXPECT_OUT(&r, "written by heat ");
    EXPECT_OUT(&r, "format          heat field file format 2");
    EXPECT_OUT(&r, "checksum        verified (all 4096 values read)");
    EXPECT_OUT(&r, "deck:\n  name = \"d\";");
    EXPECT_OUT(&r, "    precision = \"float\";");
    result_free(&r);
    heat(&r, dir, "info", "res/d_00000000.vtkhdf", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "kind            snapshot");
    EXPECT_OUT(&r, "step            0\n");
    result_free(&r);
}

/* heat check reads an initial field's shape from the file. */
static void check_reads_initial_file_shape(const char *dir)
{
    result r;
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
}

/* missing: 2; not a heat file: 1; usage: 2 */
static void info_exit_statuses(const char *dir)
{
    result r;
    heat(&r, dir, "info", "res/nothing.vtkhdf", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "res/nothing.vtkhdf: No such file");
    result_free(&r);
    heat(&r, dir, "info", "d.cfg", NULL);
    expect_rc(&r, 1);
    EXPECT_ERR(&r, "d.cfg: not a heat snapshot or checkpoint (not an HDF5 file)");
    result_free(&r);
    heat(&r, dir, "info", "", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "heat info: the file name is empty");
    result_free(&r);
    heat(&r, dir, "info", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "which file?");
    result_free(&r);
    /* a directory is named as one, not as a file that is not HDF5 */
    heat(&r, dir, "info", "res", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "res: is a directory");
    EXPECT_NOT_ERR(&r, "not an HDF5 file");
    result_free(&r);
}

/* A damaged file: the last byte of the field's only chunk ends the file
 * region written last; flip a byte in the middle of the file's data. */
static void info_finds_damage(const char *dir)
{
    char p[4200];
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
    result r;
    heat(&r, dir, "info", "res/d_ckpt_00000016.vtkhdf", NULL);
    expect_rc(&r, 1);
    EXPECT_ERR(&r, "res/d_ckpt_00000016.vtkhdf: corrupt: ");
    EXPECT_OUT(&r, "checksum        FAILED");
    result_free(&r);
}

/* heat info in steps on the files of one run (the last damages one). */
static void test_info(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "info");
    write_small_deck(dir);
    info_help(dir);
    info_describes_files(dir);
    check_reads_initial_file_shape(dir);
    info_exit_statuses(dir);
    info_finds_damage(dir);
}

static void bench_help(const char *dir)
{
    result r;
    heat(&r, dir, "bench", "--help", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "--size");
    EXPECT_OUT(&r, "median");
    EXPECT_OUT(&r, "--temporal K");
    EXPECT_OUT(&r, "1,2,3,4,6,8");
    EXPECT_OUT(&r, "per time step");
    result_free(&r);
}

/* The table heat bench prints: a k = 1 row per size and precision, with
 * numbers that are measurements. */
static void expect_bench_table(const char *out)
{
    int rows = 0;
    for (const char *line = out; line; line = strchr(line, '\n')) {
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
        /* GB/s is GLUP/s times 2 bytes a value, printed to 2 and 3 decimals:
         * equal to their rounding, 0.005 + 2 bytes 0.0005 (on a slow machine
         * the old bound, 0.01 + 1e-3 GB/s, was below that for doubles) */
        assert_true(fabs(gbps - glups * 2 * bytes) <= 0.005 + 2 * bytes * 0.0005 + 1e-9);
        assert_true(strcmp(size, "20x12x7") == 0 || strcmp(size, "24x16x1") == 0);
    }
    assert_int_equal(rows, 4);
}

/* The same rows in the JSON file, with positive numbers and k = 1. */
static void expect_bench_json(const char *dir)
{
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
}

/* Bad --size, --runs, --material-blocks and --temporal: exit 2 before
 * anything is timed. */
static void bench_refuses_bad_options(const char *dir)
{
    result r;
    heat(&r, dir, "bench", "--size", "2x2x2", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "--size 2x2x2");
    result_free(&r);
    heat(&r, dir, "bench", "--runs", "1", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "--runs 1");
    result_free(&r);
    /* the grid's limits, named for --size as written, not the deck bench makes */
    const char *big[][2] = {
        {"99999999999x99999x99999",
         "heat bench: --size 99999999999x99999x99999: at most 2^50 points in all"},
        {"3x1099511627777x3", "heat bench: --size 3x1099511627777x3: at most 2^40 points along "
                              "each axis"},
        {"99999999999999999999999x3x3", "heat bench: --size 99999999999999999999999x3x3: at "
                                        "most 2^40 points along each axis"},
        {"16x16", "heat bench: --size 16x16: expected NXxNYxNZ"},
        {"16x16x16x", "heat bench: --size 16x16x16x: expected NXxNYxNZ"}};
    for (int i = 0; i < 5; i++) {
        heat(&r, dir, "bench", "--backend", "cpu", "--size", big[i][0], NULL);
        expect_rc(&r, 2);
        EXPECT_ERR(&r, big[i][1]);
        EXPECT_NOT_ERR(&r, "grid.points");
        EXPECT_NOT_OUT(&r, "openmp");
        result_free(&r);
        /* --multigrid reads --size alike */
        heat(&r, dir, "bench", "--multigrid", "--backend", "cpu", "--size", big[i][0], NULL);
        expect_rc(&r, 2);
        EXPECT_ERR(&r, big[i][1] + strlen("heat bench: "));
        EXPECT_ERR(&r, "heat bench --multigrid: --size");
        EXPECT_NOT_ERR(&r, "grid.points");
        result_free(&r);
    }
    /* A solve that cannot meet its target (1e-5 lies below float's floor
     * here) is said not to have reached it, not given as a count. */
    char json[4200];
    path_in(json, sizeof json, dir, "mg.json");
    heat(&r, dir, "bench", "--multigrid", "--backend", "cpu", "--size", "33x33x1", "--runs", "3",
         "--precision", "float", "--json", json, NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "solve to max |du/dt| <= 1e-5: not reached in 200 cycles");
    result_free(&r);
    char *js = read_in(dir, "mg.json");
    assert_non_null(strstr(js, "\"steady_reached\": false"));
    free(js);
    heat(&r, dir, "bench", "--material-blocks", "0", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "--material-blocks 0: expected an integer from 1 to 4096");
    result_free(&r);
    /* --multigrid: an option it does not know is named as unknown, last on
     * the line or not, and a known one without its value as such */
    const char *mg_unknown[] = {"--bogus", "--materials"};
    for (int i = 0; i < 2; i++) {
        heat(&r, dir, "bench", "--multigrid", mg_unknown[i], NULL);
        expect_rc(&r, 2);
        EXPECT_ERR(&r, "unknown option");
        EXPECT_ERR(&r, mg_unknown[i]);
        EXPECT_NOT_ERR(&r, "needs a value");
        result_free(&r);
    }
    heat(&r, dir, "bench", "--multigrid", "--bogus", "1", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "unknown option --bogus");
    result_free(&r);
    heat(&r, dir, "bench", "--multigrid", "--runs", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "--runs needs a value");
    result_free(&r);
    /* --option=value there too */
    heat(&r, dir, "bench", "--multigrid", "--backend=cpu", "--size=17x17x1", "--runs=3",
         "--precision=float", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "17x17x1");
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

/* --option=value; an option without its value named as such; --kernel
 * where only the CPU runs; --json written whole or not at all: a run that
 * fails leaves an earlier file as it was and no partial one. */
static void bench_options_and_json(const char *dir)
{
    result r;
    heat(&r, dir, "bench", "--backend=cpu", "--size=16x16x8", "--runs=3", "--steps=1",
         "--precision=float", "--json=e.json", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "16x16x8");
    result_free(&r);
    char *js = read_in(dir, "e.json");
    assert_non_null(strstr(js, "\"size\": [16, 16, 8]"));
    free(js);
    heat(&r, dir, "bench", "--backend", "cpu", "--runs", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "heat bench: --runs needs a value");
    result_free(&r);
    heat(&r, dir, "bench", "--materials=1", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "--materials takes no value");
    result_free(&r);
    heat(&r, dir, "bench", "--json", "", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "--json: the file name is empty");
    result_free(&r);
    heat(&r, dir, "bench", "--backend", "cpu", "--kernel", "tiled", "--size", "16x16x8", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "--kernel tiled: the cpu backend has one kernel");
    EXPECT_NOT_OUT(&r, "openmp");
    result_free(&r);
    char keep[4200];
    path_in(keep, sizeof keep, dir, "keep.json");
    FILE *f = fopen(keep, "w");
    assert_non_null(f);
    fputs("{\"earlier\": 1}\n", f);
    fclose(f);
    heat(&r, dir, "bench", "--backend", "cpu", "--runs", "3", "--steps", "1", "--size", "16x16x8",
         "--size", "100000x100000x100000", "--json", "keep.json", NULL);
    expect_rc(&r, 1);
    EXPECT_ERR(&r, "the row of --size 100000x100000x100000, float, backend cpu: cannot allocate");
    EXPECT_ERR(&r, "keep.json not written (an earlier one is left as it was)");
    result_free(&r);
    js = read_in(dir, "keep.json");
    assert_string_equal(js, "{\"earlier\": 1}\n");
    free(js);
    assert_false(exists_in(dir, "keep.json.partial"));
}

/* heat bench: a row per size and precision, the same in the JSON file, with
 * numbers that are measurements (positive, and GB/s = GLUP/s * 2 * bytes).
 * The CPU gets only k = 1 rows, whatever --temporal asks for. */
static void test_bench(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "bench");
    bench_help(dir);
    result r;
    heat(&r, dir, "bench", "--backend", "cpu", "--size", "20x12x7", "--size", "24x16x1", "--runs",
         "3", "--steps", "2", "--temporal", "4,2", "--json", "b.json", NULL);
    expect_rc(&r, 0);
    expect_bench_table(r.out);
    result_free(&r);
    expect_bench_json(dir);
    /* classes per cube of 4^3 nodes: the rows as with --materials */
    heat(&r, dir, "bench", "--backend", "cpu", "--size", "20x12x7", "--runs", "3", "--steps", "1",
         "--material-blocks", "4", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "one at random per cube of 4^3 nodes");
    EXPECT_OUT(&r, "20x12x7");
    result_free(&r);
    bench_refuses_bad_options(dir);
    bench_options_and_json(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help_main),
        cmocka_unit_test(test_help_run),
        cmocka_unit_test(test_help_check),
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_help_command),
        cmocka_unit_test(test_bench),
        cmocka_unit_test(test_no_arguments),
        cmocka_unit_test(test_unknown_command_and_options),
        cmocka_unit_test(test_check_prints_derived_numbers),
        cmocka_unit_test(test_check_multigrid),
        cmocka_unit_test(test_check_stall_end),
        cmocka_unit_test(test_check_crank_nicolson_rings),
        cmocka_unit_test(test_check_default_deck),
        cmocka_unit_test(test_check_invalid_deck),
        cmocka_unit_test(test_check_refuses_what_run_refuses),
        cmocka_unit_test(test_bad_deck_reports_every_problem),
        cmocka_unit_test(test_syntax_error),
        cmocka_unit_test(test_dt_above_stability_limit),
        cmocka_unit_test(test_dt_max_as_printed_is_accepted),
        cmocka_unit_test(test_output_dir_is_a_file),
        cmocka_unit_test(test_output_dir_trailing_slash),
        cmocka_unit_test(test_restart_truncated_file),
        cmocka_unit_test(test_set_overrides),
        cmocka_unit_test(test_temporal_block),
        cmocka_unit_test(test_set_bad_value),
        cmocka_unit_test(test_set_unknown_key),
        cmocka_unit_test(test_set_empty_key_part),
        cmocka_unit_test(test_name_refusals),
        cmocka_unit_test(test_float_range),
        cmocka_unit_test(test_too_many_steps_says_limit),
        cmocka_unit_test(test_ranks_values),
        cmocka_unit_test(test_info),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
