/* Damaged and hostile files, and restarts that must not trust them: shapes
 * whose byte count overflows, a deck stored as an array, flipped metadata,
 * a field without its checksum, a dt above the stability limit, a step past
 * the deck's end, NaN in a checkpoint; the index on a failed restart; the
 * lock on the output directory. Each file is made here from a good one with
 * the HDF5 library, so the damage is exactly the one named; but for a
 * damaged header of attributes, which only changed bytes can make. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <hdf5.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_helpers.h"
#include "driver.h"
#include "h5file.h"
#include "io_helpers.h"
#include "output.h"
#include "test_util.h"

/* ---- making damaged files --------------------------------------------- */

/* A good checkpoint of case `r` at `step` (values 0.5 + i/n, poison at
 * index `nan_at` when >= 0) written by the library. */
static void write_checkpoint(const run_case *r, const char *path, int64_t step, int64_t nan_at)
{
    const int64_t n = r->c.d.points;
    double *f = xmalloc(field_bytes(&r->c));
    for (int64_t i = 0; i < n; i++) f[i] = 0.5 + (double)i / (double)n;
    if (nan_at >= 0) f[nan_at] = NAN;
    heat_file_meta m;
    heat_file_meta_from_case(&m, &r->c, HEAT_FILE_CHECKPOINT, step, heat_case_time(&r->c, step),
                             r->text);
    heat_error err;
    if (heat_file_write(path, &m, f, 0, &err)) fail_msg("write: %s", err.msg);
    free(f);
}

static hid_t open_rw(const char *path)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    return f;
}

/* Replaces attribute `name` of `obj` by `count` values of `type` (0: a scalar). */
static void set_attr(hid_t obj, const char *name, hid_t type, hsize_t count, const void *v)
{
    if (H5Aexists(obj, name) > 0) assert_true(H5Adelete(obj, name) >= 0);
    hid_t sp = count ? H5Screate_simple(1, &count, NULL) : H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, name, type, sp, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(a >= 0);
    assert_true(H5Awrite(a, type, v) >= 0);
    H5Aclose(a);
    H5Sclose(sp);
}

/* Format 1: no metadata checksum, so that the checks behind it are reached. */
static void make_format1(hid_t f)
{
    const int64_t one = 1;
    set_attr(f, "heat_format_version", H5T_NATIVE_INT64, 0, &one);
    if (H5Aexists(f, "heat_checksum") > 0) assert_true(H5Adelete(f, "heat_checksum") >= 0);
}

/* Replaces the field by an empty chunked dataset of shape (nz, ny, nx), with
 * or without the Fletcher-32 filter. */
static void replace_field(hid_t f, const hsize_t dims[3], int checksum)
{
    assert_true(H5Ldelete(f, "/VTKHDF/PointData/temperature", H5P_DEFAULT) >= 0);
    hid_t sp = H5Screate_simple(3, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hsize_t chunk[3] = {1, 1, dims[2] < 1024 ? dims[2] : 1024};
    assert_true(H5Pset_chunk(dcpl, 3, chunk) >= 0);
    if (checksum) assert_true(H5Pset_fletcher32(dcpl) >= 0);
    hid_t ds = H5Dcreate2(f, "/VTKHDF/PointData/temperature", H5T_IEEE_F64LE, sp, H5P_DEFAULT, dcpl,
                          H5P_DEFAULT);
    assert_true(ds >= 0);
    H5Dclose(ds);
    H5Pclose(dcpl);
    H5Sclose(sp);
}

/* Gives the file the grid n: attributes, extent and, with `field`, an empty
 * field of that shape (HDF5 refuses a dataset of more than 2^64 bytes). */
static void set_grid(hid_t f, const int64_t n[3], int field)
{
    set_attr(f, "grid_points", H5T_NATIVE_INT64, 3, n);
    const int64_t ext[6] = {0, n[0] - 1, 0, n[1] - 1, 0, n[2] - 1};
    hid_t g = H5Gopen2(f, "VTKHDF", H5P_DEFAULT);
    set_attr(g, "WholeExtent", H5T_NATIVE_INT64, 6, ext);
    H5Gclose(g);
    const hsize_t dims[3] = {(hsize_t)n[2], (hsize_t)n[1], (hsize_t)n[0]};
    if (field) replace_field(f, dims, 1);
}

/* What reading the file's metadata says: HEAT_OK or the error, in err. */
static int read_meta(const char *path, heat_error *err)
{
    heat_file_meta m;
    int rc = heat_file_read_meta(path, &m, err);
    heat_file_meta_free(&m);
    return rc;
}

/* `heat info` on the file: exit status 1 (damaged), no crash, `text` said. */
static void info_says_damaged(const char *path, const char *text)
{
    result r;
    heat(&r, NULL, "info", path, NULL);
    expect_rc(&r, 1);
    EXPECT_ERR(&r, text);
    EXPECT_ERR(&r, path);
    result_free(&r);
}

static void setup_case(run_case *r, const char *name)
{
    const char *sets[] = {"time.max_steps=8", "output.checkpoint_every=4", NULL};
    load_case(r, bc_sets[3][1], test_scratch_dir(name), sets);
}

/* ---- reading ------------------------------------------------------------ */

/* A shape whose point count times 8 bytes overflows size_t (2^20 x 2^20 x
 * 2^21, and 2^31 x 2^31 x 1) is refused before anything is allocated. */
static void test_overflowing_shape(void **state)
{
    (void)state;
    run_case r;
    setup_case(&r, "dmg_shape");
    const int64_t shapes[2][3] = {{INT64_C(1) << 20, INT64_C(1) << 20, INT64_C(1) << 21},
                                  {INT64_C(1) << 31, INT64_C(1) << 31, 1}};
    for (int k = 0; k < 2; k++) {
        char path[4400];
        snprintf(path, sizeof path, "%s/shape%d.vtkhdf", r.dir, k);
        write_checkpoint(&r, path, 4, -1);
        hid_t f = open_rw(path);
        make_format1(f);
        set_grid(f, shapes[k], k == 0);
        H5Fclose(f);
        heat_error err;
        assert_int_equal(read_meta(path, &err), HEAT_ERUNTIME);
        test_expect_in("error", err.msg, "values out of place");
        info_says_damaged(path, "values out of place");
    }
    free_case(&r);
}

/* /deck as a 1-D array of strings instead of one string. */
static void test_deck_as_array(void **state)
{
    (void)state;
    run_case r;
    setup_case(&r, "dmg_deck_array");
    char path[4400];
    snprintf(path, sizeof path, "%s/deck_array.vtkhdf", r.dir);
    write_checkpoint(&r, path, 4, -1);
    hid_t f = open_rw(path);
    assert_true(H5Ldelete(f, "/deck", H5P_DEFAULT) >= 0);
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, 8);
    hsize_t three = 3;
    hid_t sp = H5Screate_simple(1, &three, NULL);
    hid_t ds = H5Dcreate2(f, "/deck", t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(ds >= 0);
    assert_true(H5Dwrite(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, "aaaaaaaabbbbbbbbcccccccc") >= 0);
    H5Dclose(ds);
    H5Sclose(sp);
    H5Tclose(t);
    H5Fclose(f);
    heat_error err;
    assert_int_equal(read_meta(path, &err), HEAT_ERUNTIME);
    test_expect_in("error", err.msg, "reading the deck");
    info_says_damaged(path, "corrupt");
    result res;
    /* a damaged file the user names to --restart is bad input */
    heat(&res, NULL, "run", "--restart", path, "--quiet", NULL);
    expect_rc(&res, 2);
    EXPECT_ERR(&res, path);
    EXPECT_ERR(&res, "corrupt");
    result_free(&res);
    free_case(&r);
}

/* One changed character of the deck, or a changed dt or step: the metadata
 * checksum catches each; `heat info` no longer says "verified". */
static void test_flipped_metadata(void **state)
{
    (void)state;
    run_case r;
    setup_case(&r, "dmg_meta");
    for (int k = 0; k < 3; k++) {
        char path[4400];
        snprintf(path, sizeof path, "%s/meta%d.vtkhdf", r.dir, k);
        write_checkpoint(&r, path, 4, -1);
        heat_error err;
        assert_int_equal(read_meta(path, &err), HEAT_OK);
        hid_t f = open_rw(path);
        if (k == 0) {
            hid_t ds = H5Dopen2(f, "/deck", H5P_DEFAULT), t = H5Dget_type(ds);
            size_t w = H5Tget_size(t);
            char *text = xmalloc(w + 1);
            assert_true(H5Dread(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, text) >= 0);
            char *digit = strpbrk(text, "0123456789");
            assert_non_null(digit);
            *digit = *digit == '9' ? '8' : (char)(*digit + 1);
            assert_true(H5Dwrite(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, text) >= 0);
            free(text);
            H5Tclose(t);
            H5Dclose(ds);
        } else if (k == 1) {
            const double dt = r.c.d.dt * 0.5;
            set_attr(f, "dt", H5T_NATIVE_DOUBLE, 0, &dt);
        } else {
            const int64_t step = 5;
            set_attr(f, "step", H5T_NATIVE_INT64, 0, &step);
        }
        H5Fclose(f);
        assert_int_equal(read_meta(path, &err), HEAT_ERUNTIME);
        test_expect_in("error", err.msg, "fail their checksum");
        info_says_damaged(path, "fail their checksum");
    }
    free_case(&r);
}

/* The root's header of attributes damaged (the bytes of an attribute's
 * name changed, as a failing disk would): the file is said to be corrupt,
 * not to be another program's (HDF5's checksum of the header fails before
 * any attribute is found). */
static void test_damaged_header(void **state)
{
    (void)state;
    run_case r;
    setup_case(&r, "dmg_header");
    char path[4400];
    snprintf(path, sizeof path, "%s/header.vtkhdf", r.dir);
    write_checkpoint(&r, path, 4, -1);
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    const long size = ftell(f);
    char *bytes = xmalloc((size_t)size);
    rewind(f);
    assert_int_equal(fread(bytes, 1, (size_t)size, f), (size_t)size);
    const char name[] = "heat_format_version";
    long at = -1;
    for (long i = 0; at < 0 && i + (long)sizeof name - 1 <= size; i++)
        if (!memcmp(bytes + i, name, sizeof name - 1)) at = i;
    assert_true(at >= 0);
    for (long i = at; i < at + 8; i++) bytes[i] ^= (char)0xff;
    rewind(f);
    assert_int_equal(fwrite(bytes, 1, (size_t)size, f), (size_t)size);
    assert_int_equal(fclose(f), 0);
    free(bytes);
    heat_error err;
    assert_int_equal(read_meta(path, &err), HEAT_ERUNTIME);
    test_expect_in("error", err.msg, "corrupt: reading its attributes");
    assert_null(strstr(err.msg, "without the heat_format_version"));
    info_says_damaged(path, "corrupt: reading its attributes");
    free_case(&r);
}

/* A pipe named as a file (HDF5 would block reading it, for ever): heat info
 * and a restart refuse it as bad input (exit status 2), without blocking. */
static void test_pipe_as_file(void **state)
{
    (void)state;
    run_case r;
    setup_case(&r, "dmg_pipe");
    char path[4400];
    snprintf(path, sizeof path, "%s/pipe.vtkhdf", r.dir);
    unlink(path);
    assert_int_equal(mkfifo(path, 0600), 0);
    result res;
    heat(&res, NULL, "info", path, NULL);
    expect_rc(&res, 2);
    EXPECT_ERR(&res, path);
    EXPECT_ERR(&res, "is not a regular file");
    result_free(&res);
    heat(&res, NULL, "run", "--restart", path, "--quiet", NULL);
    expect_rc(&res, 2);
    EXPECT_ERR(&res, "is not a regular file");
    result_free(&res);
    unlink(path);
    free_case(&r);
}

/* A field stored without the Fletcher-32 filter could be damaged unseen. */
static void test_field_without_checksum(void **state)
{
    (void)state;
    run_case r;
    setup_case(&r, "dmg_nosum");
    char path[4400];
    snprintf(path, sizeof path, "%s/nosum.vtkhdf", r.dir);
    write_checkpoint(&r, path, 4, -1);
    hid_t f = open_rw(path);
    const hsize_t dims[3] = {(hsize_t)r.c.grid.n[2], (hsize_t)r.c.grid.n[1],
                             (hsize_t)r.c.grid.n[0]};
    replace_field(f, dims, 0);
    H5Fclose(f);
    heat_error err;
    assert_int_equal(read_meta(path, &err), HEAT_ERUNTIME);
    test_expect_in("error", err.msg, "no Fletcher-32 checksum");
    free_case(&r);
}

/* ---- restart ------------------------------------------------------------ */

/* --restart latest past a checkpoint that is newest but unusable: the run
 * falls back to the older one, says why, and continues from it. */
static void expect_fallback(const run_case *r, const char *why, int64_t want_start)
{
    heat_run_result res;
    heat_error err;
    char *notices = NULL;
    int rc = run(r, "latest", NULL, &res, &notices, &err);
    if (rc) fail_msg("%s\n%s", err.msg, notices ? notices : "");
    test_expect_in("notices", notices, why);
    test_expect_in("notices", notices, "trying the next older checkpoint");
    assert_int_equal(res.start_step, want_start);
    free(notices);
}

/* A newest checkpoint (format 1, so no checksum stands in the way) with a dt
 * above the stability limit; one with NaN on a Dirichlet node, whose value a
 * run never changes and no residual would see; one past the deck's end
 * whose field is damaged (NaN). An intact one past the end is refused
 * instead (test_restart_keeps_later). */
static void test_restart_distrusts(void **state)
{
    (void)state;
    for (int k = 0; k < 3; k++) {
        run_case r;
        char name[32];
        snprintf(name, sizeof name, "dmg_restart%d", k);
        setup_case(&r, name);
        heat_run_result first;
        run_ok(&r, NULL, NULL, &first);
        char newest[4400];
        path_of(newest, sizeof newest, &r, 1, 12);
        if (k == 0) {
            write_checkpoint(&r, newest, 12, -1);
            hid_t f = open_rw(newest);
            make_format1(f);
            const double dt = 1.5 * r.c.d.dt_max;
            set_attr(f, "dt", H5T_NATIVE_DOUBLE, 0, &dt);
            H5Fclose(f);
            r.c.time.max_steps = r.c.d.stop_step = 16;
            expect_fallback(&r, "above the stability limit", 8);
        } else if (k == 1) {
            write_checkpoint(&r, newest, 12, 0); /* node (0, 0, 0): x_lo is Dirichlet */
            r.c.time.max_steps = r.c.d.stop_step = 16;
            expect_fallback(&r, "NaN or Inf", 8);
        } else {
            write_checkpoint(&r, newest, 12, 0);
            r.c.time.max_steps = r.c.d.stop_step = 10;
            expect_fallback(&r, "NaN or Inf", 8);
        }
        free_case(&r);
    }
}

/* --restart latest with the newest checkpoint intact but past the deck's
 * end (time.max_steps lowered): refused, and that checkpoint kept (an older
 * one would have the restart remove it); named, the older one is taken. */
static void test_restart_keeps_later(void **state)
{
    (void)state;
    run_case r;
    setup_case(&r, "dmg_later");
    heat_run_result first;
    run_ok(&r, NULL, NULL, &first);
    char newest[4400], older[4400];
    path_of(newest, sizeof newest, &r, 1, 8);
    path_of(older, sizeof older, &r, 1, 4);
    assert_true(test_exists(newest));
    r.c.time.max_steps = r.c.d.stop_step = 6;
    heat_run_result res;
    heat_error err;
    char *notices = NULL;
    assert_int_equal(run(&r, "latest", NULL, &res, &notices, &err), HEAT_EINPUT);
    test_expect_in("error", err.msg, newest);
    test_expect_in("error", err.msg, "past the last step of this deck, 6 (time.max_steps)");
    test_expect_in("error", err.msg, "An older checkpoint is not taken instead");
    assert_true(test_exists(newest));
    free(notices);
    notices = NULL;
    if (run(&r, older, NULL, &res, &notices, &err)) fail_msg("%s", err.msg);
    assert_int_equal(res.start_step, 4);
    assert_false(test_exists(newest));
    free(notices);
    free_case(&r);
}

/* A restart that cannot remove a later file of the interrupted run fails;
 * the index it leaves names only files that exist, because it is rewritten
 * before anything is removed. */
static void test_index_before_removal(void **state)
{
    (void)state;
    run_case r;
    const char *sets[] = {"time.max_steps=12", "output.every=2", "output.checkpoint_every=4", NULL};
    load_case(&r, bc_sets[3][1], test_scratch_dir("dmg_index"), sets);
    heat_run_result first;
    run_ok(&r, NULL, NULL, &first);
    char ckpt12[4400], snap10[4400], blocker[4500];
    path_of(ckpt12, sizeof ckpt12, &r, 1, 12);
    assert_int_equal(unlink(ckpt12), 0); /* latest is then step 8 */
    path_of(snap10, sizeof snap10, &r, 0, 10);
    assert_int_equal(unlink(snap10), 0);
    /* a "snapshot" at step 10 that unlink() cannot remove: a directory */
    assert_int_equal(mkdir(snap10, 0755), 0);
    snprintf(blocker, sizeof blocker, "%s/keep", snap10);
    test_write_file(blocker, "x");
    heat_run_result res;
    heat_error err;
    assert_int_equal(run(&r, "latest", NULL, &res, NULL, &err), HEAT_ERUNTIME);
    test_expect_in("error", err.msg, snap10);
    xmf_entry e[32];
    int n = read_index(&r, e, 32); /* fails the test if an entry names a missing file */
    assert_true(n > 0);
    assert_int_equal(e[n - 1].step, 8);
    free_case(&r);
}

/* --restart latest in a directory with checkpoints and no snapshot. */
static void test_restart_without_snapshots(void **state)
{
    (void)state;
    run_case r;
    setup_case(&r, "dmg_nosnap");
    heat_run_result first;
    run_ok(&r, NULL, NULL, &first);
    for (int64_t s = 0; s <= 8; s++) {
        char p[4400];
        path_of(p, sizeof p, &r, 0, s);
        unlink(p);
    }
    r.c.time.max_steps = r.c.d.stop_step = 12;
    heat_run_result res;
    run_ok(&r, "latest", NULL, &res);
    assert_int_equal(res.start_step, 8);
    assert_int_equal(res.final_step, 12);
    free_case(&r);
}

/* ---- the directory lock ------------------------------------------------- */

static void test_directory_lock(void **state)
{
    (void)state;
    run_case r;
    setup_case(&r, "dmg_lock");
    heat_output_options oo = {.mode = HEAT_OUTPUT_NEW, .deck_text = r.text};
    heat_output *o = NULL;
    heat_error err;
    if (heat_output_open(&r.c, &oo, &o, &err)) fail_msg("%s", err.msg);
    /* a second holder, in this process or another: refused, exit 2 */
    heat_output *o2 = NULL;
    oo.mode = HEAT_OUTPUT_CONTINUE;
    assert_int_equal(heat_output_open(&r.c, &oo, &o2, &err), HEAT_EINPUT);
    char pid[32];
    snprintf(pid, sizeof pid, "pid %ld", (long)getpid());
    test_expect_in("error", err.msg, "in use by another heat run");
    test_expect_in("error", err.msg, pid);
    char out_dir[4200];
    snprintf(out_dir, sizeof out_dir, "output.dir=\"%s\"", r.dir);
    result res;
    heat(&res, NULL, "run", "--quiet", "--restart", "latest", "--set", out_dir, NULL);
    expect_rc(&res, 2);
    EXPECT_ERR(&res, r.dir);
    EXPECT_ERR(&res, pid);
    result_free(&res);
    heat_output_close(o);
    free_case(&r);
}

/* A lock left by a process that died is taken over, with a notice. */
static void test_stale_lock(void **state)
{
    (void)state;
    run_case r;
    setup_case(&r, "dmg_stale");
    pid_t child = fork();
    if (child == 0) _exit(0);
    waitpid(child, NULL, 0);
    char lock[4400], text[32], said[48];
    snprintf(lock, sizeof lock, "%s/.heat.lock", r.dir);
    snprintf(text, sizeof text, "%ld\n", (long)child);
    snprintf(said, sizeof said, "pid %ld,", (long)child);
    test_write_file(lock, text);
    heat_run_result res;
    heat_error err;
    char *notices = NULL;
    if (run(&r, NULL, NULL, &res, &notices, &err)) fail_msg("%s", err.msg);
    test_expect_in("notices", notices, "taking over the lock");
    test_expect_in("notices", notices, said);
    free(notices);
    free_case(&r);
}

/* Temporary names carry the writer's pid: two processes never share one. */
static void test_temporary_names(void **state)
{
    (void)state;
    char tmp[256], want[64];
    heat_file_tmp_path(tmp, sizeof tmp, "d/x.vtkhdf");
    snprintf(want, sizeof want, "d/x.vtkhdf.%ld.tmp", (long)getpid());
    assert_string_equal(tmp, want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_overflowing_shape),
        cmocka_unit_test(test_deck_as_array),
        cmocka_unit_test(test_flipped_metadata),
        cmocka_unit_test(test_field_without_checksum),
        cmocka_unit_test(test_damaged_header),
        cmocka_unit_test(test_pipe_as_file),
        cmocka_unit_test(test_restart_distrusts),
        cmocka_unit_test(test_restart_keeps_later),
        cmocka_unit_test(test_index_before_removal),
        cmocka_unit_test(test_restart_without_snapshots),
        cmocka_unit_test(test_directory_lock),
        cmocka_unit_test(test_stale_lock),
        cmocka_unit_test(test_temporary_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
