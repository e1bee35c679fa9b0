/* io/ at run level, through heat_run: cadence and rotation, restart bit for
 * bit (every boundary type, 2D and 3D, float and double, every backend
 * usable here), decks that do not match, initial fields from files,
 * `--restart latest` past a damaged checkpoint, the index after a
 * restart. */
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
#include "h5file.h"
#include "initial.h"
#include "output.h"
#include "heat_case.h"
#include "io_helpers.h"
#include "test_util.h"

/* ---- cases ---------------------------------------------------------------- */

/* The backends the restart test runs on: every one compiled in that can be
 * created here. "cuda" joins when this build has it and a device is usable. */
static const char *const all_backends[] = {"cpu", "cuda"};

/* ---- runs ----------------------------------------------------------------- */

static void test_cadence_and_rotation(void **state)
{
    (void)state;
    for (int keep = 1; keep <= 3; keep++) {
        char name[64], kset[64];
        snprintf(name, sizeof name, "io_rotation_%d", keep);
        snprintf(kset, sizeof kset, "output.keep_checkpoints=%d", keep);
        const char *dir = test_scratch_dir(name);
        const char *sets[] = {"time.max_steps=20", "output.every=6", "output.checkpoint_every=3",
                              kset, NULL};
        run_case r;
        load_case(&r, bc_sets[3][1], dir, sets);
        heat_run_result res;
        run_ok(&r, NULL, NULL, &res);
        assert_int_equal(res.final_step, 20);
        /* checkpoints at 3, 6, ..., 18 and 20: the newest `keep` remain */
        const int64_t newest[] = {20, 18, 15, 12};
        int ckpts = 0;
        for (int64_t s = 0; s <= 20; s++) {
            char p[4400];
            path_of(p, sizeof p, &r, 1, s);
            if (test_exists(p)) {
                ckpts++;
                int ok = 0;
                for (int k = 0; k < keep; k++) ok |= newest[k] == s;
                if (!ok) fail_msg("keep_checkpoints = %d, but %s is still there", keep, p);
            }
        }
        assert_int_equal(ckpts, keep);
        /* snapshots at 0, 6, 12, 18 and the final 20, each with its step and time */
        const int64_t snaps[] = {0, 6, 12, 18, 20};
        for (int i = 0; i < 5; i++) {
            char p[4400];
            path_of(p, sizeof p, &r, 0, snaps[i]);
            heat_file_meta m;
            heat_error err;
            if (heat_file_read_meta(p, &m, &err) != HEAT_OK) fail_msg("%s", err.msg);
            assert_int_equal(m.step, snaps[i]);
            assert_true(m.time == heat_case_time(&r.c, snaps[i]));
            assert_int_equal(m.kind, HEAT_FILE_SNAPSHOT);
            heat_file_meta_free(&m);
        }
        assert_int_equal(count_files(r.dir, ".vtkhdf"), 5 + keep);
        assert_int_equal(count_files(r.dir, ".tmp"), 0);
        xmf_entry e[16];
        assert_int_equal(read_index(&r, e, 16), 5);
        for (int i = 0; i < 5; i++) {
            assert_int_equal(e[i].step, snaps[i]);
            assert_true(e[i].time == heat_case_time(&r.c, snaps[i]));
        }
        free_case(&r);
    }
}

static void test_checkpoint_wall(void **state)
{
    (void)state;
    const char *dir = test_scratch_dir("io_wall");
    /* A checkpoint whenever a nanosecond of wall time has passed: after
     * every chunk of the loop, which here ends at every check step. */
    const char *sets[] = {"time.max_steps=24", "output.checkpoint_wall=1e-9",
                          "output.keep_checkpoints=1000", NULL};
    run_case r;
    load_case(&r, bc_sets[1][1], dir, sets);
    heat_run_result res;
    run_ok(&r, NULL, NULL, &res);
    int n = 0;
    for (int64_t s = 1; s <= 24; s++) {
        char p[4400];
        path_of(p, sizeof p, &r, 1, s);
        n += test_exists(p);
    }
    if (n < 3) fail_msg("only %d checkpoints with checkpoint_wall = 1e-9", n);
    free_case(&r);
}

/* Whether a backend of this kind can be created here: the CPU always, the
 * GPU wherever the machine has a CUDA device and heat has CUDA (where the
 * device is there but cannot be used, or the backend is not created on a
 * usable one, the test fails). */
static int backend_usable(const char *kind)
{
    char why[512];
    const int gpu = !strcmp(kind, "cuda");
    if (gpu && !heat_backend_gpu_usable(why, sizeof why)) {
        if (heat_backend_has_gpu_build() && !heat_backend_gpu_absent())
            fail_msg("this machine has a CUDA device, but heat cannot use it: %s", why);
        return 0;
    }
    run_case r;
    const char *dir = test_scratch_dir("io_probe");
    char set[64];
    snprintf(set, sizeof set, "solver.backend=\"%s\"", kind);
    const char *sets[] = {set, NULL};
    load_case(&r, bc_sets[0][1], dir, sets);
    heat_backend *b = NULL;
    heat_error err;
    int ok = heat_backend_create(&r.c, NULL, &b, &err) == HEAT_OK;
    heat_backend_destroy(b);
    free_case(&r);
    if (!ok && !strcmp(kind, "cpu")) fail_msg("the cpu backend: %s", err.msg);
    if (!ok && gpu) fail_msg("the cuda backend on a usable GPU: %s", err.msg);
    return ok;
}

static void test_restart_bit_identical(void **state)
{
    (void)state;
    int tested = 0;
    for (size_t bi = 0; bi < sizeof all_backends / sizeof *all_backends; bi++) {
        const char *backend = all_backends[bi];
        if (!backend_usable(backend)) {
            printf("    (backend %s not usable here: skipped)\n", backend);
            continue;
        }
        for (size_t bc = 0; bc < N_BC_SETS; bc++)
            for (int dims = 2; dims <= 3; dims++)
                for (int p = 0; p < 2; p++) {
                    const int64_t n = 9; /* 2N straight vs N + restart + N */
                    char bset[64], nset[64], n2set[64];
                    snprintf(bset, sizeof bset, "solver.backend=\"%s\"", backend);
                    snprintf(nset, sizeof nset, "time.max_steps=%lld", (long long)n);
                    snprintf(n2set, sizeof n2set, "time.max_steps=%lld", (long long)(2 * n));
                    const char *prec =
                        p ? "solver.precision=\"float\"" : "solver.precision=\"double\"";
                    const char *grid = dims == 2 ? "grid.points=[17, 13, 1]" : "name=\"bits\"";
                    const char *common[] = {bset, prec, grid, "output.every=4",
                                            "output.checkpoint_every=5"};
                    const char *straight_sets[] = {common[0], common[1], common[2], common[3],
                                                   common[4], n2set,     NULL};
                    const char *first_sets[] = {common[0], common[1], common[2], common[3],
                                                common[4], nset,      NULL};
                    char what[256];
                    snprintf(what, sizeof what, "%s, %s, %dD, %s", backend, bc_sets[bc][0], dims,
                             p ? "float" : "double");

                    run_case a, b1, b2;
                    load_case(&a, bc_sets[bc][1], test_scratch_dir("io_bits_a"), straight_sets);
                    load_case(&b1, bc_sets[bc][1], test_scratch_dir("io_bits_b"), first_sets);
                    load_case(&b2, bc_sets[bc][1], b1.dir, straight_sets);
                    void *fa = xmalloc(field_bytes(&a.c)), *fb = xmalloc(field_bytes(&a.c));
                    heat_run_result ra, rb;
                    run_ok(&a, NULL, fa, &ra);
                    run_ok(&b1, NULL, NULL, &rb);
                    assert_int_equal(rb.final_step, n);
                    run_ok(&b2, "latest", fb, &rb);
                    assert_int_equal(rb.start_step, n);
                    assert_int_equal(rb.final_step, 2 * n);
                    assert_true(rb.final_time == ra.final_time);
                    expect_same_bits(&a.c, fb, fa, what);
                    /* and the files agree: the checkpoints kept, and every snapshot
                     * (the interrupted run's last step has one more) */
                    for (int64_t s = 0; s <= 2 * n; s++)
                        for (int ck = 0; ck < 2; ck++) {
                            if (s == n && !ck) continue;
                            char pa[4400], pb[4400];
                            path_of(pa, sizeof pa, &a, ck, s);
                            path_of(pb, sizeof pb, &b2, ck, s);
                            if (test_exists(pa) != test_exists(pb))
                                fail_msg("%s: %s and %s: one exists, the other not", what, pa, pb);
                            if (!test_exists(pa)) continue;
                            heat_file_meta ma, mb;
                            void *xa = test_read_field(pa, &ma), *xb = test_read_field(pb, &mb);
                            assert_int_equal(ma.step, mb.step);
                            assert_true(ma.time == mb.time && ma.dt == mb.dt);
                            expect_same_bits(&a.c, xb, xa, pb);
                            heat_file_meta_free(&ma);
                            heat_file_meta_free(&mb);
                            free(xa);
                            free(xb);
                        }
                    free(fa);
                    free(fb);
                    free_case(&a);
                    free_case(&b1);
                    free_case(&b2);
                    tested++;
                }
    }
    assert_int_equal(tested % (int)(N_BC_SETS * 4), 0);
    assert_true(tested >= (int)(N_BC_SETS * 4));
}

/* A steady run that stalls (float, a tolerance below its rounding floor)
 * stops at the same step when restarted part-way: the checkpoint carries
 * the stall check's state (its lowest residual and the checks since). */
static void test_restart_keeps_stall(void **state)
{
    (void)state;
    const char *common[] = {"solver.precision=\"float\"",
                            "steady={tolerance=1e-12; check_every=5; stall_checks=4;}",
                            "output.every=0", "output.checkpoint_every=5", "time.max_steps=100000"};
    const char *straight_sets[] = {common[0], common[1], common[2], common[3], common[4], NULL};
    run_case a, b1, b2;
    load_case(&a, bc_sets[0][1], test_scratch_dir("io_stall_a"), straight_sets);
    heat_run_result ra, rb;
    void *fa = xmalloc(field_bytes(&a.c)), *fb = xmalloc(field_bytes(&a.c));
    run_ok(&a, NULL, fa, &ra);
    assert_int_equal(ra.reason, HEAT_STOP_STALLED);
    /* Interrupted one check before the stall: 3 checks without a new low. */
    char nset[64];
    snprintf(nset, sizeof nset, "time.max_steps=%lld", (long long)(ra.final_step - 5));
    const char *first_sets[] = {common[0], common[1], common[2], common[3], nset, NULL};
    load_case(&b1, bc_sets[0][1], test_scratch_dir("io_stall_b"), first_sets);
    run_ok(&b1, NULL, NULL, &rb);
    char ck[4400];
    path_of(ck, sizeof ck, &b1, 1, ra.final_step - 5);
    heat_file_meta m;
    void *x = test_read_field(ck, &m);
    assert_true(m.has_steady);
    assert_int_equal(m.steady_no_best, 3);
    free(x);
    heat_file_meta_free(&m);
    load_case(&b2, bc_sets[0][1], b1.dir, straight_sets);
    run_ok(&b2, "latest", fb, &rb);
    assert_int_equal(rb.reason, HEAT_STOP_STALLED);
    assert_int_equal(rb.final_step, ra.final_step);
    expect_same_bits(&a.c, fb, fa, "stalled run, restarted");
    free(fa);
    free(fb);
    free_case(&a);
    free_case(&b1);
    free_case(&b2);
}

/* time.end: the restarted run keeps the checkpoint's dt and ends exactly at
 * time.end, as the straight run does. */
static void test_restart_to_end_time(void **state)
{
    (void)state;
    const char *straight_sets[] = {"time.end=0.0123", NULL};
    const char *first_sets[] = {"time.end=0.0123", "time.max_steps=7", NULL};
    run_case a, b1, b2;
    load_case(&a, bc_sets[3][1], test_scratch_dir("io_end_a"), straight_sets);
    load_case(&b1, bc_sets[3][1], test_scratch_dir("io_end_b"), first_sets);
    load_case(&b2, bc_sets[3][1], b1.dir, straight_sets);
    assert_true(a.c.d.end_step > 10);
    void *fa = xmalloc(field_bytes(&a.c)), *fb = xmalloc(field_bytes(&a.c));
    heat_run_result ra, rb;
    run_ok(&a, NULL, fa, &ra);
    run_ok(&b1, NULL, NULL, &rb);
    char *notices = NULL;
    heat_error err;
    int rc = run(&b2, "latest", fb, &rb, &notices, &err);
    if (rc) fail_msg("%s", err.msg);
    assert_int_equal(rb.reason, HEAT_STOP_END);
    assert_int_equal(rb.final_step, ra.final_step);
    assert_true(rb.final_time == 0.0123);
    expect_same_bits(&a.c, fb, fa, "restart to time.end");
    free(notices);

    /* A restart with another time.end keeps dt: the deck alone would fit
     * another dt, and the run says which it keeps. */
    const char *later[] = {"time.end=0.02", NULL};
    run_case b3;
    load_case(&b3, bc_sets[3][1], b1.dir, later);
    assert_true(b3.c.d.dt != a.c.d.dt);
    notices = NULL;
    rc = run(&b3, "latest", NULL, &rb, &notices, &err);
    if (rc) fail_msg("%s", err.msg);
    test_expect_in("notices", notices, "keeping the dt of");
    char ckpt[4400];
    path_of(ckpt, sizeof ckpt, &b3, 1, rb.final_step);
    heat_file_meta m;
    free(test_read_field(ckpt, &m));
    assert_true(m.dt == a.c.d.dt);
    assert_true(fabs(m.time - (double)rb.final_step * a.c.d.dt) <= 1e-9 * 0.02);
    assert_true(m.time >= 0.02 && m.time < 0.02 + a.c.d.dt);
    heat_file_meta_free(&m);
    free(notices);
    free(fa);
    free(fb);
    free_case(&a);
    free_case(&b1);
    free_case(&b2);
    free_case(&b3);
}

static void test_restart_incompatible(void **state)
{
    (void)state;
    const char *dir = test_scratch_dir("io_incompatible");
    const char *first[] = {"time.max_steps=5", NULL};
    run_case r;
    load_case(&r, bc_sets[3][1], dir, first);
    heat_run_result res;
    run_ok(&r, NULL, NULL, &res);
    char ckpt[4400];
    path_of(ckpt, sizeof ckpt, &r, 1, 5);
    char history[4400];
    snprintf(history, sizeof history, "%s/history.csv", r.dir);
    char *before = test_read_file(history);

    static const struct {
        const char *set, *bc, *want;
    } cases[] = {
        {"grid.points=[17, 13, 10]", NULL,
         "grid.points = [17, 13, 10] in the deck, [17, 13, 9] in the checkpoint"},
        {"grid.length=[1.0, 0.8, 0.75]", NULL, "grid.length = [1, 0.80000000000000004, 0.75]"},
        {"grid.origin=[0.0, 0.0, 0.0]", NULL, "grid.origin = [0, 0, 0] in the deck"},
        {"solver.precision=\"float\"", NULL,
         "solver.precision = \"float\" in the deck, \"double\" in the checkpoint"},
        {"material.diffusivity=0.5", NULL,
         "material.diffusivity = 0.5 in the deck, 1 in the checkpoint"},
        {NULL,
         "boundary = { x_lo = { type = \"dirichlet\"; value = 2.0; };\n"
         "  x_hi = { type = \"neumann\"; gradient = 0.5; };\n"
         "  y_lo = { type = \"periodic\"; }; y_hi = { type = \"periodic\"; };\n"
         "  z_lo = { type = \"neumann\"; gradient = 0.0; };\n"
         "  z_hi = { type = \"dirichlet\"; value = 0.0; }; };\n",
         "boundary.x_lo = dirichlet, value 2 in the deck, dirichlet, value 1 in the checkpoint"},
        {NULL,
         "boundary = { x_lo = { type = \"dirichlet\"; value = 1.0; };\n"
         "  x_hi = { type = \"dirichlet\"; value = 0.5; };\n"
         "  y_lo = { type = \"periodic\"; }; y_hi = { type = \"periodic\"; };\n"
         "  z_lo = { type = \"neumann\"; gradient = 0.0; };\n"
         "  z_hi = { type = \"dirichlet\"; value = 0.0; }; };\n",
         "boundary.x_hi = dirichlet, value 0.5 in the deck, neumann, gradient 0.5 in the "
         "checkpoint"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *sets[] = {"time.max_steps=10", cases[i].set, NULL};
        run_case b;
        load_case(&b, cases[i].bc ? cases[i].bc : bc_sets[3][1], dir, sets);
        heat_error err;
        int rc = run(&b, ckpt, NULL, &res, NULL, &err);
        assert_int_equal(rc, HEAT_EINPUT);
        test_expect_in("error", err.msg, ckpt);
        test_expect_in("error", err.msg, "does not match the checkpoint");
        test_expect_in("error", err.msg, cases[i].want);
        /* nothing written */
        char *now = test_read_file(history);
        assert_string_equal(now, before);
        free(now);
        char p[4400];
        path_of(p, sizeof p, &b, 1, 10);
        assert_false(test_exists(p));
        free_case(&b);
    }
    /* Several differences at once: all named. */
    const char *both[] = {"time.max_steps=10", "material.diffusivity=2.0",
                          "solver.precision=\"float\"", NULL};
    run_case b;
    load_case(&b, bc_sets[3][1], dir, both);
    heat_error err;
    assert_int_equal(run(&b, ckpt, NULL, &res, NULL, &err), HEAT_EINPUT);
    test_expect_in("error", err.msg, "material.diffusivity");
    test_expect_in("error", err.msg, "solver.precision");
    free_case(&b);
    free(before);
    free_case(&r);
}

/* Same grid, other boundaries: the file's field with the deck's Dirichlet
 * faces; a run from it starts at step 0 with that field. */
static void initial_same_grid(const char *d, const char *init, const char *file)
{
    heat_file_meta m;
    void *want = test_read_field(file, &m);
    heat_file_meta_free(&m);
    char new_dir[4200];
    snprintf(new_dir, sizeof new_dir, "%s/new", d);
    const char *sets[] = {init, "time.max_steps=3", NULL};
    run_case r;
    load_case(&r, bc_sets[0][1], new_dir, sets);
    assert_int_equal(r.c.initial.type, HEAT_INIT_FILE);
    void *f = xmalloc(field_bytes(&r.c));
    heat_error err;
    if (heat_initial_fill(&r.c, f, &err) != HEAT_OK) fail_msg("%s", err.msg);
    heat_initial_apply_dirichlet(&r.c, want);
    expect_same_bits(&r.c, f, want, "initial field from a file");
    /* a run from it starts at step 0 with that field */
    heat_run_result res;
    run_ok(&r, NULL, NULL, &res);
    assert_int_equal(res.start_step, 0);
    char snap0[4400];
    path_of(snap0, sizeof snap0, &r, 0, 0);
    void *got = test_read_field(snap0, &m);
    assert_int_equal(m.step, 0);
    heat_file_meta_free(&m);
    expect_same_bits(&r.c, got, want, "snapshot 0 of a run from a file");
    free(got);
    free_case(&r);
    free(want);
    free(f);
}

/* The other precision: converted, with a notice. `src` is the case that
 * wrote the file. */
static void initial_other_precision(const char *d, const char *init, const char *file,
                                    const heat_case *src)
{
    const char *fsets[] = {init, "time.max_steps=3", "solver.precision=\"float\"", NULL};
    char fdir[4200];
    snprintf(fdir, sizeof fdir, "%s/float", d);
    run_case r;
    load_case(&r, bc_sets[3][1], fdir, fsets);
    char *notices = NULL;
    heat_run_result res;
    heat_error err;
    assert_int_equal(run(&r, NULL, NULL, &res, &notices, &err), HEAT_OK);
    test_expect_in("notices", notices, "converting the file's double field to float");
    free(notices);
    char snap0[4400];
    path_of(snap0, sizeof snap0, &r, 0, 0);
    heat_file_meta m;
    float *gf = test_read_field(snap0, &m);
    heat_file_meta_free(&m);
    void *want = test_read_field(file, &m);
    heat_file_meta_free(&m);
    heat_initial_apply_dirichlet(src, want);
    for (int64_t i = 0; i < r.c.d.points; i++) assert_true(gf[i] == (float)((double *)want)[i]);
    free(gf);
    free_case(&r);
    free(want);
}

/* Another grid: refused, naming both shapes. */
static void initial_other_grid(const char *d, const char *init)
{
    const char *gsets[] = {init, "time.max_steps=3", "grid.points=[17, 13, 1]", NULL};
    char gdir[4200];
    snprintf(gdir, sizeof gdir, "%s/grid", d);
    run_case r;
    load_case(&r, bc_sets[3][1], gdir, gsets);
    void *g2 = xmalloc(field_bytes(&r.c));
    heat_error err;
    assert_int_equal(heat_initial_fill(&r.c, g2, &err), HEAT_EINPUT);
    test_expect_in("error", err.msg, "initial.path");
    test_expect_in("error", err.msg, "17 x 13 x 9");
    test_expect_in("error", err.msg, "grid.points = [17, 13, 1]");
    heat_run_result res;
    assert_int_equal(run(&r, NULL, NULL, &res, NULL, &err), HEAT_EINPUT);
    test_expect_in("error", err.msg, "17 x 13 x 9");
    free(g2);
    free_case(&r);
}

/* A missing file, and one that is there but not ours: both refused before
 * anything is written. */
static void initial_bad_files(const char *d)
{
    /* A missing file: a deck error naming the path. */
    char missing[4600], deck[8192];
    snprintf(missing, sizeof missing, "initial={type=\"file\"; path=\"%s/none.vtkhdf\";}", d);
    snprintf(deck, sizeof deck, "%s%s", deck_head, bc_sets[0][1]);
    const char *msets[] = {missing};
    heat_case c;
    heat_error err;
    assert_int_equal(heat_deck_load_string(deck, "io", msets, 1, &c, NULL, NULL, &err),
                     HEAT_EINPUT);
    test_expect_in("error", err.msg, "none.vtkhdf");
    test_expect_in("error", err.msg, "cannot read the file");

    /* A file that is there but not ours: refused before the run, exit 2. */
    char text[4400], tset[4600];
    snprintf(text, sizeof text, "%s/text.vtkhdf", d);
    test_write_file(text, "not a field\n");
    snprintf(tset, sizeof tset, "initial={type=\"file\"; path=\"%s\";}", text);
    const char *tsets[] = {tset, "time.max_steps=3", NULL};
    char tdir[4200];
    snprintf(tdir, sizeof tdir, "%s/t", d);
    run_case r;
    load_case(&r, bc_sets[3][1], tdir, tsets);
    heat_run_result res;
    assert_int_equal(run(&r, NULL, NULL, &res, NULL, &err), HEAT_EINPUT);
    test_expect_in("error", err.msg, "initial.path");
    test_expect_in("error", err.msg, "not a heat snapshot or checkpoint");
    assert_false(test_exists(tdir)); /* nothing written */
    free_case(&r);
}

/* initial.type = "file": a run's snapshot as the initial field of others. */
static void test_initial_from_file(void **state)
{
    (void)state;
    const char *dir = test_scratch_dir("io_initial");
    char d[4096];
    snprintf(d, sizeof d, "%s", dir);
    char src_dir[4200];
    snprintf(src_dir, sizeof src_dir, "%s/src", d);
    const char *first[] = {"time.max_steps=6", NULL};
    run_case src;
    load_case(&src, bc_sets[3][1], src_dir, first);
    heat_run_result res;
    run_ok(&src, NULL, NULL, &res);
    char file[4400];
    path_of(file, sizeof file, &src, 0, 6);
    char init[4600];
    snprintf(init, sizeof init, "initial={type=\"file\"; path=\"%s\";}", file);

    initial_same_grid(d, init, file);
    initial_other_precision(d, init, file, &src.c);
    initial_other_grid(d, init);
    initial_bad_files(d);
    free_case(&src);
}

static void test_latest_skips_damaged(void **state)
{
    (void)state;
    const char *straight_sets[] = {"time.max_steps=20", "output.checkpoint_every=5", NULL};
    const char *first_sets[] = {"time.max_steps=12", "output.checkpoint_every=5",
                                "output.keep_checkpoints=3", NULL};
    run_case a, b1, b2;
    load_case(&a, bc_sets[4][1], test_scratch_dir("io_latest_a"), straight_sets);
    load_case(&b1, bc_sets[4][1], test_scratch_dir("io_latest_b"), first_sets);
    load_case(&b2, bc_sets[4][1], b1.dir, straight_sets);
    void *fa = xmalloc(field_bytes(&a.c)), *fb = xmalloc(field_bytes(&a.c));
    heat_run_result ra, rb;
    run_ok(&a, NULL, fa, &ra);
    run_ok(&b1, NULL, NULL, &rb);
    /* checkpoints 5, 10, 12: damage the newest */
    char c12[4400], c10[4400], c5[4400];
    path_of(c12, sizeof c12, &b1, 1, 12);
    path_of(c10, sizeof c10, &b1, 1, 10);
    path_of(c5, sizeof c5, &b1, 1, 5);
    assert_true(test_exists(c12) && test_exists(c10) && test_exists(c5));
    damage_field(c12);
    char *notices = NULL;
    heat_error err;
    int rc = run(&b2, "latest", fb, &rb, &notices, &err);
    if (rc) fail_msg("%s", err.msg);
    test_expect_in("notices", notices, c12);
    test_expect_in("notices", notices, ": corrupt: ");
    test_expect_in("notices", notices, "trying the next older checkpoint");
    assert_int_equal(rb.start_step, 10);
    expect_same_bits(&a.c, fb, fa, "restart past a damaged checkpoint");
    free(notices);

    free_case(&b1);
    free(fa);
    free(fb);
    free_case(&a);
    free_case(&b2);
}

static void test_latest_all_damaged(void **state)
{
    (void)state;
    const char *first_sets[] = {"time.max_steps=10", "output.checkpoint_every=5", NULL};
    run_case b1;
    load_case(&b1, bc_sets[1][1], test_scratch_dir("io_all_damaged"), first_sets);
    heat_run_result rb;
    run_ok(&b1, NULL, NULL, &rb);
    char c10[4400], c5[4400];
    path_of(c10, sizeof c10, &b1, 1, 10);
    path_of(c5, sizeof c5, &b1, 1, 5);
    damage_field(c10);
    damage_field(c5);
    char history[4400];
    snprintf(history, sizeof history, "%s/history.csv", b1.dir);
    char *before = test_read_file(history);
    const char *more[] = {"time.max_steps=20", NULL};
    run_case b2;
    load_case(&b2, bc_sets[1][1], b1.dir, more);
    char *notices = NULL;
    heat_error err;
    assert_int_equal(run(&b2, "latest", NULL, &rb, &notices, &err), HEAT_ERUNTIME);
    test_expect_in("error", err.msg, "no intact checkpoint");
    test_expect_in("error", err.msg, c10);
    test_expect_in("error", err.msg, c5);
    test_expect_in("notices", notices, "trying the next older checkpoint");
    char *after = test_read_file(history);
    assert_string_equal(before, after); /* nothing written */
    free(before);
    free(after);
    free(notices);
    /* an explicit damaged path is bad input: the user named that file */
    assert_int_equal(run(&b2, c10, NULL, &rb, NULL, &err), HEAT_EINPUT);
    test_expect_in("error", err.msg, "corrupt");
    free_case(&b1);
    free_case(&b2);
}

static void test_index_after_restart(void **state)
{
    (void)state;
    const char *first_sets[] = {"time.max_steps=20", "output.every=4", "output.checkpoint_every=5",
                                "output.keep_checkpoints=10", NULL};
    run_case b1;
    load_case(&b1, bc_sets[2][1], test_scratch_dir("io_index"), first_sets);
    heat_run_result rb;
    run_ok(&b1, NULL, NULL, &rb);
    xmf_entry e[32];
    assert_int_equal(read_index(&b1, e, 32), 6); /* 0 4 8 12 16 20 */

    /* Back to the checkpoint of step 10, on to 22 with snapshots every 6. */
    char c10[4400];
    path_of(c10, sizeof c10, &b1, 1, 10);
    const char *more[] = {"time.max_steps=22", "output.every=6", "output.checkpoint_every=5",
                          "output.keep_checkpoints=10", NULL};
    run_case b2;
    load_case(&b2, bc_sets[2][1], b1.dir, more);
    run_ok(&b2, c10, NULL, &rb);
    int n = read_index(&b2, e, 32);
    const long long want[] = {0, 4, 8, 12, 18, 22};
    assert_int_equal(n, 6);
    for (int i = 0; i < n; i++) {
        if (e[i].step != want[i])
            fail_msg("index entry %d: step %lld, expected %lld", i, e[i].step, want[i]);
        assert_true(e[i].time == heat_case_time(&b2.c, want[i]));
    }
    /* the interrupted run's later files are gone, not left beside the index */
    char p[4400];
    path_of(p, sizeof p, &b2, 0, 16);
    assert_false(test_exists(p));
    path_of(p, sizeof p, &b2, 0, 20);
    assert_false(test_exists(p));
    path_of(p, sizeof p, &b2, 1, 15);
    assert_true(test_exists(p)); /* written again by this run */

    /* A second restart from the same checkpoint: the same index again. */
    run_ok(&b2, c10, NULL, &rb);
    assert_int_equal(read_index(&b2, e, 32), 6);
    for (int i = 0; i < 6; i++) assert_int_equal(e[i].step, want[i]);
    free_case(&b1);
    free_case(&b2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cadence_and_rotation),  cmocka_unit_test(test_checkpoint_wall),
        cmocka_unit_test(test_restart_bit_identical), cmocka_unit_test(test_restart_keeps_stall),
        cmocka_unit_test(test_restart_to_end_time),   cmocka_unit_test(test_restart_incompatible),
        cmocka_unit_test(test_initial_from_file),     cmocka_unit_test(test_latest_skips_damaged),
        cmocka_unit_test(test_latest_all_damaged),    cmocka_unit_test(test_index_after_restart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
