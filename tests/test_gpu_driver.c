/* Temporal blocking through the driver: a whole GPU run with fused steps
 * against the same deck on the CPU, whose final field, snapshots,
 * checkpoints, history and restarts (by path and "latest", with another
 * depth) must match bit for bit. Skipped (77) without a usable CUDA device. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend.h"
#include "driver.h"
#include "h5file.h"
#include "output.h"
#include "gpu_helpers.h"
#include "heat_case.h"
#include "test_util.h"

/* ---- temporal blocking through the driver --------------------------------- */

/* The deck of the driver test; grid, precision, backend, temporal_block,
 * the initial field file and output.dir come as overrides. Checks every 5
 * steps, snapshots every 7, checkpoints every 10 (all kept): with 4 or 3
 * steps per pass, most of them fall inside a pass. */
static const char driver_deck[] =
    "name = \"temporal\";\n"
    "grid = { points = [61, 37, 29]; length = [1.0, 0.6, 0.45]; };\n"
    "material = { diffusivity = 0.01; };\n"
    "time = { max_steps = 45; };\n"
    "steady = { tolerance = 1e-300; check_every = 5; };\n"
    "initial = { type = \"constant\"; value = 1.0; };\n"
    "boundary = {\n"
    "  x_lo = { type = \"dirichlet\"; value = 0.5; };\n"
    "  x_hi = { type = \"neumann\"; gradient = 0.75; };\n"
    "  y_lo = { type = \"periodic\"; };\n"
    "  y_hi = { type = \"periodic\"; };\n"
    "  z_lo = { type = \"neumann\"; gradient = -0.5; };\n"
    "  z_hi = { type = \"dirichlet\"; value = 1.5; };\n"
    "};\n"
    "output = { every = 7; checkpoint_every = 10; keep_checkpoints = 10; };\n"
    "solver = { kernel = \"register_tiled\"; };\n";

typedef struct driver_run {
    heat_case c;
    char *text; /* the canonical deck */
    char dir[4096];
} driver_run;

/* Loads driver_deck with output.dir = `dir`, the initial field from the file
 * `init` (NULL: the deck's constant) and the overrides `sets`
 * (NULL-terminated); derives it. */
static void load_driver_run(driver_run *r, const char *dir, const char *init,
                            const char *const *sets)
{
    memset(r, 0, sizeof *r);
    snprintf(r->dir, sizeof r->dir, "%s", dir);
    test_sets s = {0};
    test_sets_add(&s, "output.dir=\"%s\"", dir);
    if (init) test_sets_add(&s, "initial={type=\"file\"; path=\"%s\";}", init);
    for (int i = 0; sets[i]; i++) test_sets_add(&s, "%s", sets[i]);
    test_load_case_text(driver_deck, "test_gpu", &s, &r->c, &r->text);
}

/* heat_run, quiet; fails the test unless it returns HEAT_OK. */
static void run_driver(const driver_run *r, const char *restart, void *field_out,
                       heat_run_result *res)
{
    heat_run_options opt = {0};
    opt.restart = restart;
    opt.quiet = 1;
    opt.out = stdout;
    opt.notices = stderr;
    opt.field_out = field_out;
    heat_error err;
    heat_error_clear(&err);
    int rc = heat_run(&r->c, r->text, &opt, res, &err);
    if (rc != HEAT_OK) fail_msg("heat_run (%s) returned %d: %s", r->dir, rc, err.msg);
}

static void field_file_path(char *buf, size_t n, const driver_run *r, int checkpoint, int64_t step)
{
    if (checkpoint)
        heat_output_checkpoint_path(buf, n, r->dir, r->c.name, step);
    else
        heat_output_snapshot_path(buf, n, r->dir, r->c.name, step);
}

/* The snapshot (or checkpoint) at `step` of run `want` (the CPU's) against
 * that of run `got`: both absent, or both there with the same step, time and
 * field. Returns 1 when there were files to compare; failures are counted. */
static int compare_field_files(const driver_run *want, const driver_run *got, int checkpoint,
                               int64_t step, int *failures)
{
    char pw[4400], pg[4400];
    field_file_path(pw, sizeof pw, want, checkpoint, step);
    field_file_path(pg, sizeof pg, got, checkpoint, step);
    const int ew = test_exists(pw), eg = test_exists(pg);
    if (ew != eg) {
        print_error("%s %s, but %s %s\n", pw, ew ? "exists" : "does not exist", pg,
                    eg ? "exists" : "does not exist");
        (*failures)++;
        return 0;
    }
    if (!ew) return 0;
    heat_file_meta mw, mg;
    void *fw = test_read_field(pw, &mw), *fg = test_read_field(pg, &mg);
    if (mw.step != step || mg.step != step || mw.time != mg.time || mw.dt != mg.dt) {
        print_error("%s: step %lld, t %.17g, dt %.17g; %s: step %lld, t %.17g, dt %.17g\n", pw,
                    (long long)mw.step, mw.time, mw.dt, pg, (long long)mg.step, mg.time, mg.dt);
        (*failures)++;
    }
    if (mw.precision != want->c.solver.precision || mg.precision != want->c.solver.precision) {
        print_error("%s or %s: not in the run's precision\n", pw, pg);
        (*failures)++;
    } else if (!compare(&want->c, fw, fg, pg)) {
        (*failures)++;
    }
    heat_file_meta_free(&mw);
    heat_file_meta_free(&mg);
    free(fw);
    free(fg);
    return 1;
}

/* The directories and overrides of one shape of the driver test. */
typedef struct driver_shape {
    const char *name, *points, *precision;
    char init[4200], dcpu[4200], dgpu[4200], drestart[4200], dlatest[4200];
} driver_shape;

/* The initial field, written first (the deck checks the file): random
 * values; the Dirichlet faces get theirs when it is read. */
static void write_initial(driver_shape *sh)
{
    const char *sets[] = {sh->points, sh->precision, "solver.backend=\"cpu\"", NULL};
    driver_run r;
    load_driver_run(&r, sh->dcpu, NULL, sets);
    const size_t bytes = (size_t)r.c.d.points * heat_case_value_size(&r.c);
    void *f0 = malloc(bytes);
    assert_non_null(f0);
    fill(f0, r.c.d.points, heat_case_value_size(&r.c));
    heat_file_meta m;
    heat_file_meta_from_case(&m, &r.c, HEAT_FILE_SNAPSHOT, 0, 0.0, r.text);
    heat_error err;
    if (heat_file_write(sh->init, &m, f0, 0, &err)) fail_msg("%s", err.msg);
    free(f0);
    free(r.text);
}

/* The CPU run and the GPU run (temporal_block 4): final fields, residuals,
 * every field file and history.csv. Returns the failures; *files counts the
 * files compared. */
static int compare_whole_runs(const driver_shape *sh, const driver_run *cpu, const driver_run *gpu,
                              const void *fc, const void *fg, const heat_run_result *rc,
                              const heat_run_result *rg, int *files)
{
    int failures = 0;
    char what[256];
    snprintf(what, sizeof what, "%s: final field, temporal_block 4", sh->name);
    failures += !compare(&cpu->c, fc, fg, what);
    if (rc->last_residual != rg->last_residual) {
        print_error("%s: last residual cpu %.17g, gpu %.17g\n", sh->name, rc->last_residual,
                    rg->last_residual);
        failures++;
    }
    /* Every field file; those at 7, 21, 45 and the checkpoint at 30 must be there. */
    for (int64_t step = 0; step <= 45; step++)
        for (int ck = 0; ck < 2; ck++) *files += compare_field_files(cpu, gpu, ck, step, &failures);
    char p[4400];
    const int64_t must[][2] = {{0, 7}, {0, 21}, {0, 45}, {1, 30}, {1, 45}};
    for (size_t k = 0; k < sizeof must / sizeof must[0]; k++) {
        field_file_path(p, sizeof p, gpu, (int)must[k][0], must[k][1]);
        if (!test_exists(p)) fail_msg("%s was not written", p);
    }
    char *hc = test_csv_without(cpu->dir, "history.csv", 3),
         *hg = test_csv_without(gpu->dir, "history.csv", 3);
    if (strcmp(hc, hg) != 0) {
        print_error("%s: history.csv (without wall seconds) differs:\ncpu:\n%sgpu:\n%s", sh->name,
                    hc, hg);
        failures++;
    }
    free(hc);
    free(hg);
    return failures;
}

/* Restarts with temporal_block = 3: from the GPU run's checkpoint at step 30
 * by its path into a fresh directory, and with "latest" after a run stopped
 * at step 30; both must end on the uninterrupted run's field `fg` at step 45
 * and write the CPU run's files. Returns the failures. */
static int compare_restarts(const driver_shape *sh, const driver_run *cpu, const driver_run *gpu,
                            const void *fg, const heat_run_result *rg, int *files)
{
    const char *first_sets[] = {
        sh->points,          sh->precision, "solver.backend=\"cuda\"", "solver.temporal_block=4",
        "time.max_steps=30", NULL};
    const char *restart_sets[] = {sh->points, sh->precision, "solver.backend=\"cuda\"",
                                  "solver.temporal_block=3", NULL};
    const size_t bytes = (size_t)gpu->c.d.points * heat_case_value_size(&gpu->c);
    void *fr = calloc(1, bytes);
    assert_non_null(fr);
    int failures = 0;
    char what[256], ck30[4400];
    heat_run_result rr;
    driver_run rs, l1, l2;
    load_driver_run(&rs, sh->drestart, sh->init, restart_sets);
    field_file_path(ck30, sizeof ck30, gpu, 1, 30);
    run_driver(&rs, ck30, fr, &rr);
    assert_int_equal(rr.start_step, 30);
    assert_int_equal(rr.final_step, 45);
    assert_true(rr.final_time == rg->final_time);
    snprintf(what, sizeof what,
             "%s: restarted at 30 with temporal_block 3 vs uninterrupted (want) run", sh->name);
    failures += !compare(&gpu->c, fg, fr, what);
    for (int64_t step = 31; step <= 45; step++)
        for (int ck = 0; ck < 2; ck++) *files += compare_field_files(cpu, &rs, ck, step, &failures);

    /* A run stopped at 30, then continued with "latest". */
    load_driver_run(&l1, sh->dlatest, sh->init, first_sets);
    run_driver(&l1, NULL, NULL, &rr);
    assert_int_equal(rr.final_step, 30);
    load_driver_run(&l2, sh->dlatest, sh->init, restart_sets);
    memset(fr, 0, bytes);
    run_driver(&l2, "latest", fr, &rr);
    assert_int_equal(rr.start_step, 30);
    assert_int_equal(rr.final_step, 45);
    snprintf(what, sizeof what,
             "%s: --restart latest at 30 with temporal_block 3 vs uninterrupted (want) run",
             sh->name);
    failures += !compare(&gpu->c, fg, fr, what);
    for (int64_t step = 0; step <= 45; step++)
        for (int ck = 0; ck < 2; ck++)
            if (step != 30 || ck) *files += compare_field_files(cpu, &l2, ck, step, &failures);
    free(fr);
    free(rs.text);
    free(l1.text);
    free(l2.text);
    return failures;
}

/* A whole run through heat_run on the GPU with temporal_block = 4 against
 * the same deck on the CPU: the final field, the residual, every snapshot
 * and checkpoint (at steps 7, 21, 45, ..., mostly inside a pass) and the
 * residuals in history.csv, bit for bit. Then restarts with temporal_block =
 * 3: from the checkpoint at step 30 by its path into a fresh directory, and
 * with "latest" after a run stopped at step 30; both must end on the
 * uninterrupted run's field at step 45. In 3D (float) and 2D (double), from a
 * random initial field. */
static void test_temporal_through_the_driver(void **state)
{
    (void)state;
    static driver_shape shapes[] = {
        {.name = "gpu_temporal_driver_3d",
         .points = "grid.points=[61, 37, 29]",
         .precision = "solver.precision=\"float\""},
        {.name = "gpu_temporal_driver_2d",
         .points = "grid.points=[67, 45, 1]",
         .precision = "solver.precision=\"double\""},
    };
    int failures = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        driver_shape *sh = &shapes[i];
        char base[4096];
        snprintf(base, sizeof base, "%s", test_scratch_dir(sh->name));
        snprintf(sh->init, sizeof sh->init, "%s/initial.vtkhdf", base);
        snprintf(sh->dcpu, sizeof sh->dcpu, "%s/cpu", base);
        snprintf(sh->dgpu, sizeof sh->dgpu, "%s/cuda", base);
        snprintf(sh->drestart, sizeof sh->drestart, "%s/restart", base);
        snprintf(sh->dlatest, sizeof sh->dlatest, "%s/latest", base);
        const char *cpu_sets[] = {sh->points, sh->precision, "solver.backend=\"cpu\"", NULL};
        const char *gpu_sets[] = {sh->points, sh->precision, "solver.backend=\"cuda\"",
                                  "solver.temporal_block=4", NULL};
        write_initial(sh);
        driver_run cpu, gpu;
        load_driver_run(&cpu, sh->dcpu, sh->init, cpu_sets);
        load_driver_run(&gpu, sh->dgpu, sh->init, gpu_sets);
        assert_int_equal(cpu.c.initial.type, HEAT_INIT_FILE);
        assert_int_equal(gpu.c.solver.temporal_block, 4);
        const size_t bytes = (size_t)cpu.c.d.points * heat_case_value_size(&cpu.c);
        void *fc = malloc(bytes), *fg = malloc(bytes);
        assert_non_null(fc);
        assert_non_null(fg);
        heat_run_result rc, rg;
        run_driver(&cpu, NULL, fc, &rc);
        run_driver(&gpu, NULL, fg, &rg);
        assert_int_equal(rc.final_step, 45);
        assert_int_equal(rg.final_step, 45);
        assert_int_equal(rg.reason, HEAT_STOP_MAX_STEPS);
        int files = 0;
        failures += compare_whole_runs(sh, &cpu, &gpu, fc, fg, &rc, &rg, &files);
        failures += compare_restarts(sh, &cpu, &gpu, fg, &rg, &files);
        print_message("%s: %d field files compared with the CPU run's\n", sh->name, files);
        free(fc);
        free(fg);
        free(cpu.text);
        free(gpu.text);
    }
    assert_int_equal(failures, 0);
}

int main(void)
{
    const int skip = gpu_tests_skip("test_gpu_driver");
    if (skip) return skip;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_temporal_through_the_driver),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
