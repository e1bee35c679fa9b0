/* heat run end to end: the real program run in scratch directories. The
 * default deck, the summary, --quiet, the output directory guard,
 * --restart, the stop reasons, history.csv, a run that blows up (exit 1)
 * and SIGINT/SIGTERM/SIGHUP (exit 130/143/129; SIGHUP ignored under
 * nohup). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli_helpers.h"

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
    assert_true(
        strncmp(csv, "step,time,residual,wall_seconds,min,max,mean,reduction,cycles\n", 62) == 0);
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

/* The summary's file count is what the run left in output.dir (its lock
 * aside), probes.csv included. */
static void test_summary_counts_probes(void **state)
{
    (void)state;
    char dir[4096], res[4200], want[128];
    scratch(dir, sizeof dir, "summary_probes");
    write_deck(dir, "d.cfg", "time = { end = 0.01; };",
               "probes = ( { name = \"mid\"; at = [0.5, 0.5, 0.5]; } );");
    result r;
    heat(&r, dir, "run", "d.cfg", NULL);
    expect_rc(&r, 0);
    path_in(res, sizeof res, dir, "res");
    assert_true(exists_in(res, "probes.csv"));
    DIR *d = opendir(res);
    assert_non_null(d);
    int files = 0;
    for (struct dirent *e; (e = readdir(d));) files += e->d_name[0] != '.';
    closedir(d);
    snprintf(want, sizeof want, "files written: %d in res (history.csv, probes.csv, d.xmf,", files);
    EXPECT_OUT(&r, want);
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

    /* a directory of a run of another name: --restart, which would refuse
     * it, is not offered */
    path_in(p, sizeof p, dir, "other/other_00000000.vtkhdf");
    char od[4200];
    path_in(od, sizeof od, dir, "other");
    assert_int_equal(mkdir(od, 0755), 0);
    test_write_file(p, "not read\n");
    heat(&r, dir, "run", "d.cfg", "--set", "output.dir=\"other\"", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "output.dir = \"other\" already holds another run (other_00000000.vtkhdf)");
    EXPECT_ERR(&r, "--overwrite");
    EXPECT_NOT_ERR(&r, "--restart");
    result_free(&r);

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

/* --overwrite removes the files of heat's own names only, and never the
 * run's initial field, even when that is one of them; one of this run's own
 * is refused (this run would overwrite it, or take it for its own). */
static void test_overwrite_keeps_others(void **state)
{
    (void)state;
    char dir[4096], p[4200];
    scratch(dir, sizeof dir, "overwrite keeps");
    write_small_deck(dir);
    result r;
    heat(&r, dir, "run", "d.cfg", "-q", NULL);
    expect_rc(&r, 0);
    result_free(&r);
    path_in(p, sizeof p, dir, "res/notes.vtkhdf");
    test_write_file(p, "mine\n");
    path_in(p, sizeof p, dir, "res/d_notes.vtkhdf");
    test_write_file(p, "mine\n");
    /* an earlier run's probes.csv is the run's too: gone with it, though
     * this run has no probes */
    path_in(p, sizeof p, dir, "res/probes.csv");
    test_write_file(p, "step,time,a\n0,0,1\n");
    heat(&r, dir, "run", "d.cfg", "-q", "--overwrite", "--set", "time.max_steps=2", "--set",
         "initial={type=\"file\"; path=\"res/d_00000016.vtkhdf\";}", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "initial.path = \"res/d_00000016.vtkhdf\" is a file of run \"d\" in "
                   "output.dir = \"res\": this run would overwrite it or take it for its own "
                   "output; copy it out of output.dir first");
    result_free(&r);
    assert_true(exists_in(dir, "res/d_ckpt_00000016.vtkhdf"));
    assert_true(exists_in(dir, "res/probes.csv"));
    /* the same file as another run's is kept, inert */
    char q[4200];
    path_in(p, sizeof p, dir, "res/d_00000016.vtkhdf");
    path_in(q, sizeof q, dir, "res/e_00000016.vtkhdf");
    assert_int_equal(rename(p, q), 0);
    heat(&r, dir, "run", "d.cfg", "-q", "--overwrite", "--set", "time.max_steps=2", "--set",
         "initial={type=\"file\"; path=\"res/e_00000016.vtkhdf\";}", NULL);
    expect_rc(&r, 0);
    result_free(&r);
    assert_true(exists_in(dir, "res/e_00000016.vtkhdf"));
    assert_true(exists_in(dir, "res/notes.vtkhdf"));
    assert_true(exists_in(dir, "res/d_notes.vtkhdf"));
    assert_false(exists_in(dir, "res/d_ckpt_00000016.vtkhdf"));
    assert_false(exists_in(dir, "res/probes.csv"));
    assert_true(exists_in(dir, "res/d_ckpt_00000002.vtkhdf"));
    char *csv = read_in(dir, "res/history.csv");
    assert_int_equal(last_history_row(csv, NULL, NULL), 2);
    free(csv);
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

/* --restart latest with no checkpoint yet: says so and starts from the
 * initial condition. */
static void restart_latest_without_checkpoint(const char *dir)
{
    result r;
    heat(&r, dir, "run", "d.cfg", "--restart", "latest", NULL);
    expect_rc(&r, 0);
    EXPECT_ERR(&r, "--restart latest: no checkpoint in res");
    EXPECT_ERR(&r, "initial condition");
    EXPECT_OUT(&r, "steps 16 (from 0)");
    result_free(&r);
    char *csv = read_in(dir, "res/history.csv");
    assert_true(strncmp(csv, "step,time,residual,wall_seconds,min,max,mean,reduction,cycles\n0,0,,",
                        67) == 0);
    assert_int_equal(last_history_row(csv, NULL, NULL), 16);
    free(csv);
    assert_true(exists_in(dir, "res/d_ckpt_00000016.vtkhdf"));
}

/* latest now finds the final checkpoint; a later time.end continues it with
 * the checkpoint's dt (0.01/16 divides 0.02). */
static void restart_latest_continues(const char *dir)
{
    result r;
    heat(&r, dir, "run", "d.cfg", "--restart=latest", "--set", "time.end=0.02", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "continuing from res/d_ckpt_00000016.vtkhdf at step 16, t = 0.01");
    EXPECT_OUT(&r, "reached time.end at step 32, t = 0.02");
    EXPECT_OUT(&r, "steps 16 (from 16)");
    EXPECT_NOT_ERR(&r, "keeping the dt");
    result_free(&r);
    char *csv = read_in(dir, "res/history.csv");
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
}

/* Restarts that run: at the deck's last step, to a time.end off the
 * checkpoint's steps, and from a file without a deck. */
static void restart_from_checkpoints(const char *dir)
{
    result r;
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
}

/* Checkpoints that do not fit the deck: exit 2 before anything is written. */
static void restart_refuses_mismatch(const char *dir)
{
    result r;
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
}

/* --restart naming a file that is missing or not a heat file: exit 2. */
static void restart_refuses_bad_files(const char *dir)
{
    result r;
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

/* One run continued through --restart in its steps, each using the files
 * the ones before it left. */
static void test_restart(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "restart");
    write_small_deck(dir);
    restart_latest_without_checkpoint(dir);
    restart_latest_continues(dir);
    restart_from_checkpoints(dir);
    restart_refuses_mismatch(dir);
    restart_refuses_bad_files(dir);
}

/* ---- stop reasons, history.csv ----------------------------------------- */

/* A restart never reads the initial field: a run seeded from a file
 * continues after that file moved, with its deck or with the file's own. */
static void test_restart_after_seed_moved(void **state)
{
    (void)state;
    char dir[4096], from[4200], to[4200];
    scratch(dir, sizeof dir, "seed moved");
    write_small_deck(dir);
    result r;
    heat(&r, dir, "run", "d.cfg", "-q", "--set", "output.dir=src", NULL);
    expect_rc(&r, 0);
    result_free(&r);
    path_in(from, sizeof from, dir, "src/d_00000016.vtkhdf");
    path_in(to, sizeof to, dir, "seed.vtkhdf");
    assert_int_equal(rename(from, to), 0);
    heat(&r, dir, "run", "d.cfg", "-q", "--set", "output.dir=f", "--set",
         "initial={type=\"file\"; path=\"seed.vtkhdf\";}", NULL);
    expect_rc(&r, 0);
    result_free(&r);
    path_in(from, sizeof from, dir, "moved.vtkhdf");
    assert_int_equal(rename(to, from), 0);

    heat(&r, dir, "run", "--restart", "f/d_ckpt_00000016.vtkhdf", "--set", "time.end=0.02", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "reached time.end at step 32");
    result_free(&r);
    heat(&r, dir, "run", "d.cfg", "--set", "output.dir=f", "--restart", "latest", "--set",
         "time.end=0.03", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "continuing from f/d_ckpt_00000032.vtkhdf");
    EXPECT_NOT_ERR(&r, "materials, regions and sources");
    result_free(&r);

    /* a fresh run still needs the file */
    heat(&r, dir, "run", "d.cfg", "--set", "output.dir=g", "--set",
         "initial={type=\"file\"; path=\"seed.vtkhdf\";}", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "initial.path = \"seed.vtkhdf\": cannot read the file");
    result_free(&r);
    assert_false(exists_in(dir, "g"));
}

/* A restart continues only a run of its own name: in a directory of another
 * run it is refused, and that run's files stay as they were. */
static void test_restart_refuses_other_run(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "restart other run");
    write_small_deck(dir);
    result r;
    heat(&r, dir, "run", "d.cfg", "-q", "--set", "time.max_steps=3", NULL);
    expect_rc(&r, 0);
    result_free(&r);
    heat(&r, dir, "run", "d.cfg", "-q", "--set", "output.dir=elsewhere", NULL);
    expect_rc(&r, 0);
    result_free(&r);
    char *before = read_in(dir, "res/history.csv");

    heat(&r, dir, "run", "d.cfg", "--set", "name=other", "--restart", "latest", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "output.dir = \"res\" holds another run, \"d\"");
    EXPECT_ERR(&r, "only a run of its own name, \"other\"");
    EXPECT_NOT_ERR(&r, "no checkpoint");
    result_free(&r);
    heat(&r, dir, "run", "d.cfg", "--set", "name=third", "--restart",
         "elsewhere/d_ckpt_00000016.vtkhdf", "--set", "time.end=0.02", NULL);
    expect_rc(&r, 2);
    EXPECT_ERR(&r, "holds another run, \"d\"");
    result_free(&r);
    char *after = read_in(dir, "res/history.csv");
    assert_string_equal(before, after);
    free(after);
    free(before);
    assert_false(exists_in(dir, "res/other.xmf"));
    assert_false(exists_in(dir, "res/third.xmf"));
    assert_false(exists_in(dir, "res/other_00000000.vtkhdf"));

    /* the run of that name still continues */
    heat(&r, dir, "run", "d.cfg", "-q", "--restart", "latest", "--set", "time.max_steps=4", NULL);
    expect_rc(&r, 0);
    result_free(&r);
    assert_true(exists_in(dir, "res/d_ckpt_00000004.vtkhdf"));
}

/* A restart from a checkpoint at the deck's end into another output.dir
 * still leaves a checkpoint there, so that --restart latest there goes on. */
static void test_restart_at_end_into_new_dir(void **state)
{
    (void)state;
    char dir[4096];
    scratch(dir, sizeof dir, "restart new dir");
    write_small_deck(dir);
    result r;
    heat(&r, dir, "run", "d.cfg", "-q", NULL);
    expect_rc(&r, 0);
    result_free(&r);
    heat(&r, dir, "run", "d.cfg", "-q", "--set", "output.dir=b", "--restart",
         "res/d_ckpt_00000016.vtkhdf", NULL);
    expect_rc(&r, 0);
    result_free(&r);
    assert_true(exists_in(dir, "b/d_ckpt_00000016.vtkhdf"));
    heat(&r, dir, "run", "d.cfg", "--set", "output.dir=b", "--restart", "latest", "--set",
         "time.end=0.02", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "continuing from b/d_ckpt_00000016.vtkhdf at step 16");
    EXPECT_NOT_ERR(&r, "no checkpoint");
    result_free(&r);
}

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
    assert_true(
        strncmp(csv, "step,time,residual,wall_seconds,min,max,mean,reduction,cycles\n", 62) == 0);
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

/* Multigrid on a deck whose coarse levels do not carry its contrast of
 * conductivities (copper in mould compound, 500 : 1): steady V-cycles and
 * the cycles of an implicit step grow the residual. The run stops with a
 * runtime error that says so (exit 1), and the diverged field is not
 * written; with one material, or small implicit steps, the same deck
 * converges. */
static void test_multigrid_divergence_exits_1(void **state)
{
    (void)state;
    char dir[4096], p[4200];
    scratch(dir, sizeof dir, "mg_diverge");
    path_in(p, sizeof p, dir, "chip.cfg");
    test_write_file(
        p,
        "grid = { points = [21, 21, 11]; length = [0.01, 0.01, 0.002]; };\n"
        "materials = (\n"
        "  { name = \"mold\"; conductivity = 0.8; density = 1900.0; specific_heat = 900.0; },\n"
        "  { name = \"copper\"; conductivity = 401.0; density = 8960.0; specific_heat = 385.0; }\n"
        ");\n"
        "regions = ( { material = \"copper\";\n"
        "              box = { min = [0.001, 0.001, 0.001]; max = [0.009, 0.009, 0.002]; }; } );\n"
        "sources = ( { box = { min = [0.003, 0.003, 0.0008]; max = [0.007, 0.007, 0.001]; };\n"
        "              power_density = 1.0e8; } );\n"
        "time = { max_steps = 200; };\n"
        "steady = { tolerance = 1.0e-6; method = \"multigrid\"; };\n"
        "initial = { type = \"constant\"; value = 25.0; };\n"
        "boundary = {\n"
        "  x_lo = { type = \"neumann\"; }; x_hi = { type = \"neumann\"; };\n"
        "  y_lo = { type = \"neumann\"; }; y_hi = { type = \"neumann\"; };\n"
        "  z_lo = { type = \"dirichlet\"; value = 25.0; };\n"
        "  z_hi = { type = \"convective\"; h = 5000.0; ambient = 25.0; };\n"
        "};\n"
        "output = { dir = \"res\"; };\n"
        "solver = { backend = \"cpu\"; };\n");
    result r;
    /* With P's weights by distance across the 500 : 1 jump (what every
     * deck had before interpolation followed the conductivities) the
     * cycles diverge: the run stops and says so. */
    setenv("HEAT_MG_INTERP", "linear", 1);
    heat(&r, dir, "run", "chip.cfg", NULL);
    expect_rc(&r, 1);
    EXPECT_ERR(&r, "the multigrid V-cycles diverge: the residual max |du/dt| grew to ");
    EXPECT_ERR(&r, "conductivities range from 0.8 to 401 W/(m K)");
    EXPECT_NOT_OUT(&r, "reached");
    result_free(&r);
    path_in(p, sizeof p, dir, "res/chip_00000000.vtkhdf");
    assert_true(test_exists(p)); /* the start is written */
    path_in(p, sizeof p, dir, "res/chip_ckpt_00000000.vtkhdf");
    assert_false(test_exists(p)); /* nothing of the diverged field */

    /* an implicit step whose cycles grow the residual */
    heat(&r, dir, "run", "chip.cfg", "--overwrite", "--set",
         "time={scheme=\"backward_euler\"; dt=5.0; max_steps=4;}", "--set",
         "steady={tolerance=1.0e-6;}", NULL);
    expect_rc(&r, 1);
    EXPECT_ERR(&r, "step 1's multigrid solve diverges: its residual grew to ");
    result_free(&r);
    /* stopped by time.max_steps before the 1000-fold growth: exit 0, and
     * the summary says the cycles were not converging */
    heat(&r, dir, "run", "chip.cfg", "--overwrite", "--set", "time.max_steps=8", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "reached time.max_steps");
    EXPECT_OUT(&r, "times above its lowest");
    EXPECT_OUT(&r, "the V-cycles were not converging");
    result_free(&r);
    unsetenv("HEAT_MG_INTERP");

    /* Operator-dependent interpolation: the same deck converges, steady in
     * few cycles (it diverged above) and by implicit steps of dt = 5 */
    heat(&r, dir, "run", "chip.cfg", "--overwrite", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "reached steady state");
    EXPECT_NOT_OUT(&r, "not converging");
    const char *cy = strstr(r.out, "multigrid: ");
    assert_non_null(cy);
    const long cycles = strtol(cy + strlen("multigrid: "), NULL, 10);
    if (cycles < 1 || cycles > 12) fail_msg("%ld V-cycles to 1e-6, expected at most 12", cycles);
    result_free(&r);
    heat(&r, dir, "run", "chip.cfg", "--overwrite", "--set",
         "time={scheme=\"backward_euler\"; dt=5.0; max_steps=4;}", "--set",
         "steady={tolerance=1.0e-6;}", NULL);
    expect_rc(&r, 0);
    result_free(&r);

    /* and with one material, and small steps */
    heat(&r, dir, "run", "chip.cfg", "--overwrite", "--set", "regions=()", NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "reached steady state");
    result_free(&r);
    heat(&r, dir, "run", "chip.cfg", "--overwrite", "--set",
         "time={scheme=\"backward_euler\"; dt=0.05; max_steps=4;}", "--set",
         "steady={tolerance=1.0e-6;}", NULL);
    expect_rc(&r, 0);
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

/* Starts `heat run long.cfg` in `dir` on a 64^3 grid, output to the files
 * named, with default signal dispositions (SIGHUP ignored where
 * start_nohup, as nohup leaves it); returns its pid. */
static int start_nohup;
static pid_t start_long_run(const char *dir, const char *out_path, const char *err_path)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* a clean slate: default dispositions, nothing blocked */
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, start_nohup ? SIG_IGN : SIG_DFL);
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
    return pid;
}

/* Waits until the run is under way (its first history row comes after the
 * handlers are installed), and at least a second has gone by since t0. */
static void wait_until_running(pid_t pid, const char *dir, const char *err_path, double t0)
{
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
}

/* Waits for heat to stop after `sig_name` (after the current step: well
 * within a few seconds); returns its wait status. */
static int wait_for_stop(pid_t pid, const char *sig_name)
{
    const double t1 = now_seconds();
    int st = 0, done = 0;
    while (!done && now_seconds() - t1 < 20) {
        done = waitpid(pid, &st, WNOHANG) == pid;
        if (!done) sleep_seconds(0.02);
    }
    if (!done) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        fail_msg("heat did not stop within 20 s of %s", sig_name);
    }
    return st;
}

/* Checks that heat stopped itself with exit status 128 + sig and said so;
 * returns the step it stopped at. */
static long long expect_stopped_by(int st, int sig, const char *sig_name, const char *out_path,
                                   const char *err_path)
{
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
    return stop;
}

/* The checkpoint of the step it stopped at is complete on disk, and the run
 * can go on from it. */
static void expect_checkpoint_continues(const char *dir, long long stop, const char *sig_name)
{
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
    /* history.csv has a row of the step the run stopped at */
    char *csv = read_in(dir, "res/history.csv");
    assert_int_equal(last_history_row(csv, NULL, NULL), stop);
    free(csv);
    char max_steps[64];
    snprintf(max_steps, sizeof max_steps, "time.max_steps=%lld", stop + 3);
    heat(&r, dir, "run", "long.cfg", "--set", "grid.points=[64,64,64]", "--restart", "latest",
         "--set", max_steps, NULL);
    expect_rc(&r, 0);
    EXPECT_OUT(&r, "steps 3 (from ");
    result_free(&r);
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

    const double t0 = now_seconds();
    pid_t pid = start_long_run(dir, out_path, err_path);
    wait_until_running(pid, dir, err_path, t0);
    assert_int_equal(kill(pid, sig), 0);
    int st = wait_for_stop(pid, sig_name);
    long long stop = expect_stopped_by(st, sig, sig_name, out_path, err_path);
    expect_checkpoint_continues(dir, stop, sig_name);
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

/* The terminal closed: as SIGTERM, with a checkpoint, exit 129. */
static void test_sighup_exits_129(void **state)
{
    (void)state;
    run_and_signal("sighup", SIGHUP, "SIGHUP");
}

/* Under nohup (SIGHUP ignored when heat starts) a SIGHUP changes nothing:
 * the run goes on until a SIGTERM stops it. */
static void test_sighup_ignored_under_nohup(void **state)
{
    (void)state;
    char dir[4096], out_path[4200], err_path[4200];
    scratch(dir, sizeof dir, "nohup");
    write_deck(dir, "long.cfg", "time = { max_steps = 100000000; };", "");
    path_in(out_path, sizeof out_path, dir, "stdout.txt");
    path_in(err_path, sizeof err_path, dir, "stderr.txt");
    const double t0 = now_seconds();
    start_nohup = 1;
    pid_t pid = start_long_run(dir, out_path, err_path);
    start_nohup = 0;
    wait_until_running(pid, dir, err_path, t0);
    assert_int_equal(kill(pid, SIGHUP), 0);
    sleep_seconds(1.0); /* a stop takes at most about 0.2 s of work */
    int st = 0;
    if (waitpid(pid, &st, WNOHANG) == pid) {
        char *e = test_read_file(err_path);
        fail_msg("a SIGHUP under nohup ended the run (status 0x%x):\n%s", st, e ? e : "");
    }
    assert_int_equal(kill(pid, SIGTERM), 0);
    st = wait_for_stop(pid, "SIGTERM");
    expect_stopped_by(st, SIGTERM, "SIGTERM", out_path, err_path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_default_deck),
        cmocka_unit_test(test_summary),
        cmocka_unit_test(test_summary_counts_probes),
        cmocka_unit_test(test_quiet),
        cmocka_unit_test(test_refuses_to_overwrite),
        cmocka_unit_test(test_overwrite_keeps_others),
        cmocka_unit_test(test_restart),
        cmocka_unit_test(test_restart_after_seed_moved),
        cmocka_unit_test(test_restart_refuses_other_run),
        cmocka_unit_test(test_restart_at_end_into_new_dir),
        cmocka_unit_test(test_stop_at_end_time),
        cmocka_unit_test(test_stop_at_max_steps),
        cmocka_unit_test(test_stop_at_steady_state),
        cmocka_unit_test(test_blow_up_exits_1),
        cmocka_unit_test(test_multigrid_divergence_exits_1),
        cmocka_unit_test(test_sigint_exits_130),
        cmocka_unit_test(test_sigterm_exits_143),
        cmocka_unit_test(test_sighup_exits_129),
        cmocka_unit_test(test_sighup_ignored_under_nohup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
