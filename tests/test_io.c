/* io/: snapshot and checkpoint files and the background writer.
 *
 * File level: write/read round trips in both precisions, the VTKHDF layout as
 * ParaView reads it, a flipped byte found by the checksum, files that are not
 * ours. Failed writes through the heat program (injected, a full disk, a
 * read-only directory). Writer thread: order, not waiting for the disk,
 * errors. Runs and restart: test_restart.c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <hdf5.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "h5file.h"
#include "output.h"
#include "heat_case.h"
#include "io_helpers.h"
#include "test_util.h"

/* ---- the file layer --------------------------------------------------------- */

static void fill_random(const heat_case *c, void *f, uint64_t seed)
{
    for (int64_t i = 0; i < c->d.points; i++) {
        double v = test_uniform(&seed, -100.0, 100.0);
        if (c->solver.precision == HEAT_FLOAT)
            ((float *)f)[i] = (float)v;
        else
            ((double *)f)[i] = v;
    }
}

/* Checks an attribute's type class, size and element count. */
static void expect_attr(hid_t obj, const char *name, H5T_class_t cls, size_t size, hssize_t count)
{
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0) fail_msg("no attribute %s", name);
    hid_t t = H5Aget_type(a), sp = H5Aget_space(a);
    if (H5Tget_class(t) != cls || H5Tget_size(t) != size ||
        H5Sget_simple_extent_npoints(sp) != count)
        fail_msg("attribute %s: class %d size %zu count %lld, expected %d %zu %lld", name,
                 (int)H5Tget_class(t), H5Tget_size(t), (long long)H5Sget_simple_extent_npoints(sp),
                 (int)cls, size, (long long)count);
    H5Sclose(sp);
    H5Tclose(t);
    H5Aclose(a);
}

static void read_attr(hid_t obj, const char *name, hid_t mtype, void *out)
{
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    assert_true(a >= 0);
    assert_true(H5Aread(a, mtype, out) >= 0);
    H5Aclose(a);
}

/* The VTKHDF layout as ParaView's reader takes it (docs/FORMAT.md). */
static void expect_vtkhdf_layout(const char *path, const heat_case *c, int compress)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(f >= 0);
    hid_t g = H5Gopen2(f, "VTKHDF", H5P_DEFAULT);
    assert_true(g >= 0);
    expect_attr(g, "Version", H5T_INTEGER, 8, 2);
    int64_t version[2], extent[6];
    read_attr(g, "Version", H5T_NATIVE_INT64, version);
    assert_true(version[0] == 1 && version[1] == 0);
    /* Type: fixed-length ASCII, exactly "ImageData", no terminator */
    hid_t a = H5Aopen(g, "Type", H5P_DEFAULT);
    hid_t t = H5Aget_type(a);
    assert_int_equal(H5Tget_class(t), H5T_STRING);
    assert_int_equal(H5Tis_variable_str(t), 0);
    assert_int_equal(H5Tget_size(t), 9);
    assert_int_equal(H5Tget_cset(t), H5T_CSET_ASCII);
    char type[10] = {0};
    assert_true(H5Aread(a, t, type) >= 0);
    assert_string_equal(type, "ImageData");
    H5Tclose(t);
    H5Aclose(a);
    expect_attr(g, "WholeExtent", H5T_INTEGER, 8, 6);
    read_attr(g, "WholeExtent", H5T_NATIVE_INT64, extent);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(extent[2 * i], 0);
        assert_int_equal(extent[2 * i + 1], c->grid.n[i] - 1);
    }
    double origin[3], spacing[3], dir[9];
    expect_attr(g, "Origin", H5T_FLOAT, 8, 3);
    expect_attr(g, "Spacing", H5T_FLOAT, 8, 3);
    expect_attr(g, "Direction", H5T_FLOAT, 8, 9);
    read_attr(g, "Origin", H5T_NATIVE_DOUBLE, origin);
    read_attr(g, "Spacing", H5T_NATIVE_DOUBLE, spacing);
    read_attr(g, "Direction", H5T_NATIVE_DOUBLE, dir);
    for (int i = 0; i < 3; i++) {
        assert_true(origin[i] == c->grid.origin[i]);
        assert_true(spacing[i] == c->d.h[i]);
    }
    for (int i = 0; i < 9; i++) assert_true(dir[i] == (i % 4 == 0 ? 1.0 : 0.0));
    /* the root's time (float64) and step (int64) */
    expect_attr(f, "time", H5T_FLOAT, 8, 1);
    expect_attr(f, "step", H5T_INTEGER, 8, 1);
    /* the field: (nz, ny, nx), the run's precision, chunked with checksums */
    hid_t ds = H5Dopen2(f, "/VTKHDF/PointData/temperature", H5P_DEFAULT);
    assert_true(ds >= 0);
    hid_t sp = H5Dget_space(ds);
    hsize_t dims[3];
    assert_int_equal(H5Sget_simple_extent_ndims(sp), 3);
    H5Sget_simple_extent_dims(sp, dims, NULL);
    assert_true(dims[0] == (hsize_t)c->grid.n[2] && dims[1] == (hsize_t)c->grid.n[1] &&
                dims[2] == (hsize_t)c->grid.n[0]);
    t = H5Dget_type(ds);
    assert_int_equal(H5Tget_class(t), H5T_FLOAT);
    assert_int_equal(H5Tget_size(t), heat_case_value_size(c));
    hid_t dcpl = H5Dget_create_plist(ds);
    assert_int_equal(H5Pget_layout(dcpl), H5D_CHUNKED);
    int fletcher = 0, deflate = 0;
    for (int i = 0; i < H5Pget_nfilters(dcpl); i++) {
        unsigned flags, cd[8];
        size_t ncd = 8;
        H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, cd, 0, NULL, NULL);
        fletcher |= id == H5Z_FILTER_FLETCHER32;
        deflate |= id == H5Z_FILTER_DEFLATE;
    }
    assert_true(fletcher);
    assert_int_equal(deflate, compress > 0);
    H5Pclose(dcpl);
    H5Tclose(t);
    H5Sclose(sp);
    H5Dclose(ds);
    H5Gclose(g);
    H5Fclose(f);
}

static void test_round_trip(void **state)
{
    (void)state;
    const char *dir = test_scratch_dir("io_round_trip");
    char d[4096];
    snprintf(d, sizeof d, "%s", dir);
    for (int dims = 2; dims <= 3; dims++)
        for (int p = 0; p < 2; p++)
            for (int compress = 0; compress <= 6; compress += 6) {
                const char *sets[] = {p ? "solver.precision=\"float\""
                                        : "solver.precision=\"double\"",
                                      dims == 2 ? "grid.points=[17, 13, 1]" : "name=\"rt\"", NULL};
                run_case r;
                load_case(&r, bc_sets[3][1], d, sets);
                r.c.output.compress = compress;
                void *f = xmalloc(field_bytes(&r.c));
                fill_random(&r.c, f, 17u + (unsigned)(dims * 4 + p * 2 + compress));
                heat_file_meta m;
                heat_file_meta_from_case(&m, &r.c, p ? HEAT_FILE_CHECKPOINT : HEAT_FILE_SNAPSHOT,
                                         123, 0.125, r.text);
                char path[4400];
                snprintf(path, sizeof path, "%s/rt_%d_%d_%d.vtkhdf", d, dims, p, compress);
                heat_error err;
                if (heat_file_write(path, &m, f, compress, &err) != HEAT_OK)
                    fail_msg("write: %s", err.msg);
                /* no temporary left behind */
                char tmp[4500];
                heat_file_tmp_path(tmp, sizeof tmp, path);
                assert_false(test_exists(tmp));
                expect_vtkhdf_layout(path, &r.c, compress);

                heat_file_meta got;
                void *back = test_read_field(path, &got);
                assert_int_equal(got.kind, m.kind);
                assert_int_equal(got.format_version, HEAT_FORMAT_VERSION);
                assert_string_equal(got.program_version, HEAT_VERSION);
                assert_int_equal(got.step, 123);
                assert_true(got.time == 0.125 && got.dt == r.c.d.dt);
                assert_int_equal(got.precision, r.c.solver.precision);
                assert_int_equal(got.dims, dims);
                for (int a = 0; a < 3; a++) {
                    assert_int_equal(got.n[a], r.c.grid.n[a]);
                    assert_true(got.length[a] == r.c.grid.length[a]);
                    assert_true(got.origin[a] == r.c.grid.origin[a]);
                    assert_true(got.spacing[a] == r.c.d.h[a]);
                }
                assert_true(got.alpha == r.c.alpha);
                for (int fc = 0; fc < HEAT_NFACES; fc++) {
                    assert_int_equal(got.bc[fc].type, r.c.bc[fc].type);
                    assert_true(got.bc[fc].value == r.c.bc[fc].value);
                    assert_true(got.bc[fc].gradient == r.c.bc[fc].gradient);
                }
                assert_string_equal(got.deck, r.text);
                assert_int_equal(got.has_checksum, 1);
                assert_int_equal(got.deflate, compress);
                assert_int_equal(heat_file_check_case(&got, &r.c, &err), HEAT_OK);
                expect_same_bits(&r.c, back, f, "read back");

                /* the other precision: converted value by value */
                heat_precision other = p ? HEAT_DOUBLE : HEAT_FLOAT;
                void *conv = xmalloc((size_t)r.c.d.points * 8);
                assert_int_equal(heat_file_read_field(path, &got, other, conv, &err), HEAT_OK);
                for (int64_t i = 0; i < r.c.d.points; i++) {
                    if (p) {
                        assert_true(((double *)conv)[i] == (double)((float *)f)[i]);
                    } else {
                        assert_true(((float *)conv)[i] == (float)((double *)f)[i]);
                    }
                }
                free(conv);
                heat_file_meta_free(&got);
                free(back);
                free(f);
                free_case(&r);
            }
}

/* Fields whose planes, rows or values do not fill whole chunks of about
 * 4 MiB: the chunks share them out equally, so that the file stores little
 * more than the field (HDF5 stores the last chunk whole: chunks of the most
 * that fit stored 1.43, 1.36 and 1.75 times these fields). Read back equal. */
static void test_chunk_padding(void **state)
{
    (void)state;
    const char *dir = test_scratch_dir("io_chunks");
    char d[4096];
    snprintf(d, sizeof d, "%s", dir);
    static const char *const shapes[3] = {
        "grid.points=[128, 96, 88]",   /* planes: 42 a chunk fit, 88 planes */
        "grid.points=[1100, 700, 1]",  /* rows: 476 fit, 700 rows */
        "grid.points=[600000, 3, 1]"}; /* part of a row: 524288 values fit */
    for (int s = 0; s < 3; s++) {
        const char *sets[] = {"solver.precision=\"double\"", shapes[s], NULL};
        run_case r;
        load_case(&r, bc_sets[3][1], d, sets);
        void *f = xmalloc(field_bytes(&r.c));
        fill_random(&r.c, f, 99u + (unsigned)s);
        heat_file_meta m;
        heat_file_meta_from_case(&m, &r.c, HEAT_FILE_SNAPSHOT, 1, 0.5, r.text);
        char path[4400];
        snprintf(path, sizeof path, "%s/ch_%d.vtkhdf", d, s);
        heat_error err;
        if (heat_file_write(path, &m, f, 0, &err) != HEAT_OK) fail_msg("write: %s", err.msg);
        hid_t fid = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
        assert_true(fid >= 0);
        hid_t ds = H5Dopen2(fid, "/VTKHDF/PointData/temperature", H5P_DEFAULT);
        assert_true(ds >= 0);
        const double stored = (double)H5Dget_storage_size(ds), field = (double)field_bytes(&r.c);
        H5Dclose(ds);
        H5Fclose(fid);
        if (!(stored <= 1.03 * field))
            fail_msg("%s: the field's %.0f bytes stored in %.0f (%.2f times)", shapes[s], field,
                     stored, stored / field);
        heat_file_meta got;
        void *back = test_read_field(path, &got);
        expect_same_bits(&r.c, back, f, shapes[s]);
        heat_file_meta_free(&got);
        free(back);
        free(f);
        free_case(&r);
    }
}

static void test_flipped_byte_is_corrupt(void **state)
{
    (void)state;
    const char *dir = test_scratch_dir("io_flip");
    char d[4096];
    snprintf(d, sizeof d, "%s", dir);
    for (int compress = 0; compress <= 4; compress += 4) {
        run_case r;
        load_case(&r, bc_sets[0][1], d, NULL);
        void *f = xmalloc(field_bytes(&r.c));
        fill_random(&r.c, f, 5);
        heat_file_meta m;
        heat_file_meta_from_case(&m, &r.c, HEAT_FILE_CHECKPOINT, 7, 0.5, r.text);
        char path[4400];
        snprintf(path, sizeof path, "%s/flip_%d.vtkhdf", d, compress);
        heat_error err;
        assert_int_equal(heat_file_write(path, &m, f, compress, &err), HEAT_OK);
        heat_file_meta got;
        free(test_read_field(path, &got)); /* intact before */
        heat_file_meta_free(&got);

        damage_field(path);
        assert_int_equal(heat_file_read_meta(path, &got, &err), HEAT_OK); /* metadata intact */
        void *back = xmalloc(field_bytes(&r.c));
        heat_error_clear(&err);
        int rc = heat_file_read_field(path, &got, got.precision, back, &err);
        assert_int_equal(rc, HEAT_ERUNTIME);
        /* The reader says what is wrong; the caller names the file. */
        test_expect_in("error", err.msg, "corrupt: ");
        if (compress == 0) test_expect_in("error", err.msg, "Fletcher-32 checksum");
        heat_file_meta_free(&got);
        free(back);
        free(f);
        free_case(&r);
    }
}

static void test_not_heat_files(void **state)
{
    (void)state;
    const char *dir = test_scratch_dir("io_not_ours");
    char d[4096], path[4400];
    snprintf(d, sizeof d, "%s", dir);
    heat_file_meta m;
    heat_error err;

    snprintf(path, sizeof path, "%s/missing.vtkhdf", d);
    assert_int_equal(heat_file_read_meta(path, &m, &err), HEAT_EINPUT);
    test_expect_in("error", err.msg, "cannot read the file: No such file");

    snprintf(path, sizeof path, "%s/text.vtkhdf", d);
    test_write_file(path, "hello\n");
    assert_int_equal(heat_file_read_meta(path, &m, &err), HEAT_EINPUT);
    test_expect_in("error", err.msg, "not an HDF5 file");

    /* an HDF5 file that is not ours */
    snprintf(path, sizeof path, "%s/other.h5", d);
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(f >= 0);
    H5Fclose(f);
    assert_int_equal(heat_file_read_meta(path, &m, &err), HEAT_EINPUT);
    test_expect_in("error", err.msg, "not a heat snapshot or checkpoint");
    test_expect_in("error", err.msg, "heat_format_version");
}

/* ---- failed writes (the heat program) ------------------------------------ */

static const char cli_deck[] =
    "name = \"w\";\n"
    "grid = { points = [16, 16, 16]; length = [1.0, 1.0, 1.0]; };\n"
    "material = { diffusivity = 1.0; };\n"
    "time = { max_steps = 20; };\n"
    "initial = { type = \"constant\"; value = 1.0; };\n"
    "boundary = {\n"
    "  x_lo = { type = \"dirichlet\"; value = 1.0; };\n"
    "  x_hi = { type = \"dirichlet\"; value = 0.0; };\n"
    "  y_lo = { type = \"periodic\"; }; y_hi = { type = \"periodic\"; };\n"
    "  z_lo = { type = \"neumann\"; }; z_hi = { type = \"neumann\"; };\n"
    "};\n"
    "output = { dir = \"res\"; checkpoint_every = 5; };\n"
    "solver = { backend = \"cpu\"; };\n";

static void expect_intact(const char *path)
{
    heat_file_meta m;
    free(test_read_field(path, &m));
    heat_file_meta_free(&m);
}

static void test_injected_write_failure(void **state)
{
    (void)state;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", test_scratch_dir("io_inject"));
    char deck[4200];
    snprintf(deck, sizeof deck, "%s/w.cfg", dir);
    test_write_file(deck, cli_deck);
    /* Writes in order: snapshot 0, checkpoints 5, 10, 15, then snapshot and
     * checkpoint 20. The fourth, checkpoint 15, fails half-way on the
     * writer thread. */
    setenv("HEAT_TEST_FAIL_WRITE", "4", 1);
    const char *argv[] = {"run", "w.cfg", NULL};
    char *out = NULL, *err = NULL;
    int rc = test_run_heat(dir, argv, &out, &err);
    unsetenv("HEAT_TEST_FAIL_WRITE");
    if (rc != 1) fail_msg("exit status %d, expected 1\nstderr:\n%s", rc, err);
    test_expect_in("stderr", err, "cannot write res/w_ckpt_00000015.vtkhdf");
    test_expect_in("stderr", err, "injected failure");
    free(out);
    free(err);
    char p[4400];
    /* the previous checkpoints intact, nothing half-written left */
    snprintf(p, sizeof p, "%s/res/w_ckpt_00000010.vtkhdf", dir);
    expect_intact(p);
    snprintf(p, sizeof p, "%s/res/w_ckpt_00000005.vtkhdf", dir);
    expect_intact(p);
    snprintf(p, sizeof p, "%s/res/w_ckpt_00000015.vtkhdf", dir);
    assert_false(test_exists(p));
    snprintf(p, sizeof p, "%s/res", dir);
    assert_int_equal(count_files(p, ".tmp"), 0);
    /* and the run continues from the newest intact one */
    const char *again[] = {"run", "w.cfg", "--restart", "latest", NULL};
    rc = test_run_heat(dir, again, &out, &err);
    if (rc != 0) fail_msg("exit status %d\nstderr:\n%s", rc, err);
    test_expect_in("stdout", out, "continuing from res/w_ckpt_00000010.vtkhdf at step 10");
    free(out);
    free(err);
}

static void test_disk_full(void **state)
{
    (void)state;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", test_scratch_dir("io_full"));
    char deck[4200];
    snprintf(deck, sizeof deck, "%s/w.cfg", dir);
    test_write_file(deck, cli_deck);
    const char *argv[] = {"run", "w.cfg", NULL};
    char *out = NULL, *err = NULL;
    int rc = test_run_heat(dir, argv, &out, &err);
    assert_int_equal(rc, 0);
    free(out);
    free(err);
    /* Files may grow to 16 KiB: history.csv fits, a 32 KiB field does not,
     * as on a full disk (heat ignores SIGXFSZ itself; the test too). */
    const char *more[] = {"run", "w.cfg", "--restart", "latest", "--set", "time.max_steps=30",
                          NULL};
    rc = test_run_heat_fsize(dir, more, 16384, &out, &err);
    if (rc != 1) fail_msg("exit status %d, expected 1\nstderr:\n%s", rc, err);
    test_expect_in("stderr", err, "cannot write res/w_ckpt_00000025.vtkhdf");
    test_expect_in("stderr", err, "File too large");
    free(out);
    free(err);
    char p[4400];
    snprintf(p, sizeof p, "%s/res/w_ckpt_00000020.vtkhdf", dir);
    expect_intact(p);
    snprintf(p, sizeof p, "%s/res", dir);
    assert_int_equal(count_files(p, ".tmp"), 0);
    /* heat check says so beforehand */
    const char *check[] = {"check", "w.cfg", NULL};
    rc = test_run_heat_fsize(dir, check, 16384, &out, &err);
    if (rc != 0) fail_msg("heat check: exit status %d\nstderr:\n%s", rc, err);
    test_expect_in("stdout", out, "is more than the file size limit of 16 KiB (ulimit -f)");
    free(out);
    free(err);
    rc = test_run_heat_fsize(dir, check, -1, &out, &err);
    assert_int_equal(rc, 0);
    assert_null(strstr(out, "file size limit"));
    free(out);
    free(err);
}

static void test_read_only_directory(void **state)
{
    (void)state;
    if (geteuid() == 0) {
        /* root writes anyway; test_disk_full and the injected failure cover
         * the same path */
        printf("    (running as root: the read-only directory case is skipped)\n");
        skip();
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", test_scratch_dir("io_read_only"));
    char deck[4200];
    snprintf(deck, sizeof deck, "%s/w.cfg", dir);
    test_write_file(deck, cli_deck);
    const char *argv[] = {"run", "w.cfg", NULL};
    char *out = NULL, *err = NULL;
    assert_int_equal(test_run_heat(dir, argv, &out, &err), 0);
    free(out);
    free(err);
    char res[4200];
    snprintf(res, sizeof res, "%s/res", dir);
    assert_int_equal(chmod(res, 0555), 0);
    const char *more[] = {"run", "w.cfg", "--restart", "latest", "--set", "time.max_steps=30",
                          NULL};
    int rc = test_run_heat(dir, more, &out, &err);
    chmod(res, 0755);
    if (rc != 1) fail_msg("exit status %d, expected 1\nstderr:\n%s", rc, err);
    test_expect_in("stderr", err, "res/");
    test_expect_in("stderr", err, "Permission denied");
    free(out);
    free(err);
    char p[4400];
    snprintf(p, sizeof p, "%s/res/w_ckpt_00000020.vtkhdf", dir);
    expect_intact(p);
}

/* ---- the writer thread ------------------------------------------------------ */

typedef struct recorder {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int gate_closed; /* the first file waits while this is set */
    int n;
    char path[16][4400];
    heat_file_kind kind[16];
    int64_t step[16];
} recorder;

static void on_file(void *ctx, const char *path, heat_file_kind kind, int64_t step)
{
    recorder *r = ctx;
    pthread_mutex_lock(&r->mu);
    while (r->gate_closed) pthread_cond_wait(&r->cv, &r->mu);
    if (r->n < 16) {
        snprintf(r->path[r->n], sizeof r->path[r->n], "%s", path);
        r->kind[r->n] = kind;
        r->step[r->n] = step;
        r->n++;
    }
    pthread_mutex_unlock(&r->mu);
}

static int allocations;
static void *counting_alloc(size_t bytes, void *ctx)
{
    (void)ctx;
    allocations++;
    return malloc(bytes);
}

static void counting_free(void *p, void *ctx)
{
    (void)ctx;
    allocations--;
    free(p);
}

typedef struct acquirer {
    heat_output *o;
    void *buf;
    int done;
    pthread_mutex_t *mu;
} acquirer;

static void *acquire_main(void *arg)
{
    acquirer *a = arg;
    heat_error err;
    int rc = heat_output_acquire(a->o, &a->buf, &err);
    pthread_mutex_lock(a->mu);
    a->done = rc == HEAT_OK ? 1 : -1;
    pthread_mutex_unlock(a->mu);
    return NULL;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Fills a buffer with a field that tells its step. */
static void fill_step(const heat_case *c, void *buf, int64_t step)
{
    for (int64_t i = 0; i < c->d.points; i++) ((double *)buf)[i] = (double)(step * 1000 + i);
}

/* Opens an output for `r` with a pool of two buffers from counting_alloc
 * that reports each file to `rec`. */
static heat_output *open_recorded_output(const run_case *r, recorder *rec)
{
    heat_output_options oo = {0};
    oo.mode = HEAT_OUTPUT_NEW;
    oo.deck_text = r->text;
    oo.buffers = 2;
    oo.alloc.alloc = counting_alloc;
    oo.alloc.free = counting_free;
    oo.on_file = on_file;
    oo.on_file_ctx = rec;
    heat_output *o = NULL;
    heat_error err;
    if (heat_output_open(&r->c, &oo, &o, &err) != HEAT_OK) fail_msg("%s", err.msg);
    return o;
}

/* With the writer held up on the first file: two submissions return, and a
 * third buffer waits until the gate opens, then comes from the pool. Submits
 * steps 0 to 3 with `kinds` and flushes. */
static void submit_past_a_busy_writer(heat_output *o, const heat_case *c, recorder *rec,
                                      const int *kinds)
{
    heat_error err;
    /* Two submissions return while the writer is held up on the first file. */
    for (int i = 0; i < 2; i++) {
        void *buf;
        assert_int_equal(heat_output_acquire(o, &buf, &err), HEAT_OK);
        fill_step(c, buf, i);
        assert_int_equal(heat_output_submit(o, buf, i, 0.5 * i, kinds[i], NULL, &err), HEAT_OK);
    }
    assert_int_equal(allocations, 2);
    pthread_mutex_lock(&rec->mu);
    assert_int_equal(rec->n, 0);
    pthread_mutex_unlock(&rec->mu);
    /* A third buffer waits: both are in use. */
    pthread_mutex_t amu = PTHREAD_MUTEX_INITIALIZER;
    acquirer a = {o, NULL, 0, &amu};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, acquire_main, &a), 0);
    sleep_ms(150);
    pthread_mutex_lock(&amu);
    assert_int_equal(a.done, 0);
    pthread_mutex_unlock(&amu);
    /* Open the gate: the writer goes on, the third buffer comes free. */
    pthread_mutex_lock(&rec->mu);
    rec->gate_closed = 0;
    pthread_cond_broadcast(&rec->cv);
    pthread_mutex_unlock(&rec->mu);
    pthread_join(th, NULL);
    assert_int_equal(a.done, 1);
    assert_int_equal(allocations, 2); /* a buffer of the pool, not a new one */
    fill_step(c, a.buf, 2);
    assert_int_equal(heat_output_submit(o, a.buf, 2, 1.0, kinds[2], NULL, &err), HEAT_OK);
    void *buf;
    assert_int_equal(heat_output_acquire(o, &buf, &err), HEAT_OK);
    fill_step(c, buf, 3);
    assert_int_equal(heat_output_submit(o, buf, 3, 1.5, kinds[3], NULL, &err), HEAT_OK);
    assert_int_equal(heat_output_flush(o, &err), HEAT_OK);
}

/* In the order submitted, snapshot before checkpoint within a step; each
 * file holds the field submitted for its step. */
static void expect_files_in_order(const recorder *rec, const heat_case *c)
{
    const struct {
        int64_t step;
        heat_file_kind kind;
    } want[] = {{0, HEAT_FILE_SNAPSHOT},
                {1, HEAT_FILE_CHECKPOINT},
                {2, HEAT_FILE_SNAPSHOT},
                {2, HEAT_FILE_CHECKPOINT},
                {3, HEAT_FILE_SNAPSHOT}};
    assert_int_equal(rec->n, 5);
    for (int i = 0; i < 5; i++) {
        if (rec->step[i] != want[i].step || rec->kind[i] != want[i].kind)
            fail_msg("file %d: step %lld %s, expected step %lld %s", i, (long long)rec->step[i],
                     heat_file_kind_name(rec->kind[i]), (long long)want[i].step,
                     heat_file_kind_name(want[i].kind));
        /* each holds the field submitted for its step */
        heat_file_meta m;
        double *f = test_read_field(rec->path[i], &m);
        assert_int_equal(m.step, want[i].step);
        assert_true(m.time == 0.5 * (double)want[i].step);
        for (int64_t k = 0; k < c->d.points; k++)
            assert_true(f[k] == (double)(want[i].step * 1000 + k));
        heat_file_meta_free(&m);
        free(f);
    }
}

static void test_writer_order_and_async(void **state)
{
    (void)state;
    const char *sets[] = {"output.keep_checkpoints=10", NULL};
    run_case r;
    load_case(&r, bc_sets[3][1], test_scratch_dir("io_writer"), sets);
    recorder rec;
    memset(&rec, 0, sizeof rec);
    pthread_mutex_init(&rec.mu, NULL);
    pthread_cond_init(&rec.cv, NULL);
    rec.gate_closed = 1;
    heat_output *o = open_recorded_output(&r, &rec);

    const int kinds[] = {HEAT_OUTPUT_SNAPSHOT, HEAT_OUTPUT_CHECKPOINT,
                         HEAT_OUTPUT_SNAPSHOT | HEAT_OUTPUT_CHECKPOINT, HEAT_OUTPUT_SNAPSHOT};
    submit_past_a_busy_writer(o, &r.c, &rec, kinds);
    expect_files_in_order(&rec, &r.c);
    int64_t snaps, ckpts;
    heat_output_counts(o, &snaps, &ckpts);
    assert_int_equal(snaps, 3);
    assert_int_equal(ckpts, 2);
    assert_int_equal(heat_output_files_written(o), 1 + 1 + 5);
    xmf_entry e[8];
    assert_int_equal(read_index(&r, e, 8), 3);
    assert_true(e[0].step == 0 && e[1].step == 2 && e[2].step == 3);
    heat_output_close(o);
    assert_int_equal(allocations, 0);
    pthread_cond_destroy(&rec.cv);
    pthread_mutex_destroy(&rec.mu);
    free_case(&r);
}

static void test_writer_error_surfaces(void **state)
{
    (void)state;
    run_case r;
    load_case(&r, bc_sets[3][1], test_scratch_dir("io_writer_error"), NULL);
    heat_output_options oo = {0};
    oo.mode = HEAT_OUTPUT_NEW;
    oo.deck_text = r.text;
    heat_output *o = NULL;
    heat_error err;
    if (heat_output_open(&r.c, &oo, &o, &err) != HEAT_OK) fail_msg("%s", err.msg);
    /* A directory where the writer's temporary file must go: creating it
     * fails, as a real write failure would, on the writer thread. */
    char blocked[4400], tmp[4500];
    heat_output_checkpoint_path(blocked, sizeof blocked, r.dir, r.c.name, 1);
    heat_file_tmp_path(tmp, sizeof tmp, blocked);
    assert_int_equal(mkdir(tmp, 0755), 0);
    void *buf;
    assert_int_equal(heat_output_acquire(o, &buf, &err), HEAT_OK);
    fill_step(&r.c, buf, 0);
    assert_int_equal(heat_output_submit(o, buf, 0, 0.0, HEAT_OUTPUT_SNAPSHOT, NULL, &err), HEAT_OK);
    assert_int_equal(heat_output_acquire(o, &buf, &err), HEAT_OK);
    fill_step(&r.c, buf, 1);
    /* the submit itself does not wait for the disk, so it succeeds */
    assert_int_equal(heat_output_submit(o, buf, 1, 0.5, HEAT_OUTPUT_CHECKPOINT, NULL, &err),
                     HEAT_OK);
    heat_error_clear(&err);
    assert_int_equal(heat_output_flush(o, &err), HEAT_ERUNTIME);
    test_expect_in("error", err.msg, "cannot write");
    test_expect_in("error", err.msg, blocked);
    /* and every later call says the same */
    heat_error e2;
    assert_int_equal(heat_output_history(o, 2, 1.0, NAN, 0.0, &e2), HEAT_ERUNTIME);
    assert_string_equal(e2.msg, err.msg);
    assert_int_equal(heat_output_acquire(o, &buf, &e2), HEAT_ERUNTIME);
    assert_string_equal(e2.msg, err.msg);
    heat_output_close(o);
    /* the snapshot before it was written whole */
    char snap[4400];
    heat_output_snapshot_path(snap, sizeof snap, r.dir, r.c.name, 0);
    expect_intact(snap);
    assert_false(test_exists(blocked));
    rmdir(tmp);
    free_case(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_chunk_padding),
        cmocka_unit_test(test_flipped_byte_is_corrupt),
        cmocka_unit_test(test_not_heat_files),
        cmocka_unit_test(test_injected_write_failure),
        cmocka_unit_test(test_disk_full),
        cmocka_unit_test(test_read_only_directory),
        cmocka_unit_test(test_writer_order_and_async),
        cmocka_unit_test(test_writer_error_surfaces),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
