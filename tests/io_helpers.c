#include "io_helpers.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "output.h"
#include "test_util.h"

const char deck_head[] =
    "grid = { points = [17, 13, 9]; length = [1.0, 0.8, 0.5]; origin = [0.25, -1.0, 3.0]; };\n"
    "material = { diffusivity = 1.0; };\n"
    "initial = { type = \"gaussian\"; center = [0.6, -0.6, 3.2]; width = 0.15;\n"
    "            amplitude = 3.0; base = 0.5; };\n"
    "steady = { tolerance = 1e-300; check_every = 4; };\n";

const char *const bc_sets[N_BC_SETS][2] = {
    {"dirichlet", "boundary = { x_lo = { type = \"dirichlet\"; value = 1.5; };\n"
                  "  x_hi = { type = \"dirichlet\"; value = -0.5; };\n"
                  "  y_lo = { type = \"dirichlet\"; value = 0.25; };\n"
                  "  y_hi = { type = \"dirichlet\"; value = 2.0; };\n"
                  "  z_lo = { type = \"dirichlet\"; value = 0.0; };\n"
                  "  z_hi = { type = \"dirichlet\"; value = 1.0; }; };\n"},
    {"neumann", "boundary = { x_lo = { type = \"neumann\"; gradient = 0.5; };\n"
                "  x_hi = { type = \"neumann\"; gradient = -1.0; };\n"
                "  y_lo = { type = \"neumann\"; gradient = 0.0; };\n"
                "  y_hi = { type = \"neumann\"; gradient = 2.0; };\n"
                "  z_lo = { type = \"neumann\"; gradient = 0.0; };\n"
                "  z_hi = { type = \"neumann\"; gradient = -0.25; }; };\n"},
    {"periodic", "boundary = { x_lo = { type = \"periodic\"; }; x_hi = { type = \"periodic\"; };\n"
                 "  y_lo = { type = \"periodic\"; }; y_hi = { type = \"periodic\"; };\n"
                 "  z_lo = { type = \"periodic\"; }; z_hi = { type = \"periodic\"; }; };\n"},
    {"mixed", "boundary = { x_lo = { type = \"dirichlet\"; value = 1.0; };\n"
              "  x_hi = { type = \"neumann\"; gradient = 0.5; };\n"
              "  y_lo = { type = \"periodic\"; }; y_hi = { type = \"periodic\"; };\n"
              "  z_lo = { type = \"neumann\"; gradient = 0.0; };\n"
              "  z_hi = { type = \"dirichlet\"; value = 0.0; }; };\n"},
    {"mixed2", "boundary = { x_lo = { type = \"periodic\"; }; x_hi = { type = \"periodic\"; };\n"
               "  y_lo = { type = \"neumann\"; gradient = -0.75; };\n"
               "  y_hi = { type = \"dirichlet\"; value = 3.0; };\n"
               "  z_lo = { type = \"dirichlet\"; value = -1.0; };\n"
               "  z_hi = { type = \"neumann\"; gradient = 1.0; }; };\n"},
};

void load_case(run_case *r, const char *bc, const char *dir, const char *const *sets)
{
    memset(r, 0, sizeof *r);
    snprintf(r->dir, sizeof r->dir, "%s", dir);
    char deck[8192];
    snprintf(deck, sizeof deck, "%s%s", deck_head, bc);
    test_sets s = {0};
    test_sets_add(&s, "output.dir=\"%s\"", dir);
    for (int i = 0; sets && sets[i]; i++) test_sets_add(&s, "%s", sets[i]);
    test_load_case_text(deck, "io", &s, &r->c, &r->text);
}

void free_case(run_case *r)
{
    free(r->text);
    r->text = NULL;
}

size_t field_bytes(const heat_case *c)
{
    return (size_t)c->d.points * heat_case_value_size(c);
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    assert_non_null(p);
    return p;
}

void expect_same_bits(const heat_case *c, const void *got, const void *want, const char *what)
{
    size_t vs = heat_case_value_size(c);
    for (int64_t i = 0; i < c->d.points; i++) {
        const char *g = (const char *)got + (size_t)i * vs,
                   *w = (const char *)want + (size_t)i * vs;
        if (memcmp(g, w, vs) != 0) {
            double gv = vs == 4 ? (double)*(const float *)g : *(const double *)g;
            double wv = vs == 4 ? (double)*(const float *)w : *(const double *)w;
            fail_msg("%s: first differing index %lld: %.17g vs %.17g", what, (long long)i, gv, wv);
        }
    }
}

/* Flips one byte of `path` at `offset`. */
static void flip_byte(const char *path, long offset)
{
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, offset, SEEK_SET), 0);
    int c = fgetc(f);
    assert_true(c != EOF);
    assert_int_equal(fseek(f, offset, SEEK_SET), 0);
    assert_int_equal(fputc(c ^ 0x5a, f), c ^ 0x5a);
    assert_int_equal(fclose(f), 0);
}

/* Where the field's first chunk lies in the file, and its stored size. */
static void first_chunk(const char *path, long *offset, long *size)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(f >= 0);
    hid_t ds = H5Dopen2(f, "/VTKHDF/PointData/temperature", H5P_DEFAULT);
    assert_true(ds >= 0);
    hid_t sp = H5Dget_space(ds);
    hsize_t nchunks = 0;
    assert_true(H5Dget_num_chunks(ds, sp, &nchunks) >= 0);
    assert_true(nchunks >= 1);
    hsize_t coords[3];
    unsigned mask;
    haddr_t addr;
    hsize_t bytes;
    assert_true(H5Dget_chunk_info(ds, sp, 0, coords, &mask, &addr, &bytes) >= 0);
    H5Sclose(sp);
    *offset = (long)addr;
    *size = (long)bytes;
    H5Dclose(ds);
    H5Fclose(f);
}

void damage_field(const char *path)
{
    long off, size;
    first_chunk(path, &off, &size);
    assert_true(size > 16);
    flip_byte(path, off + size / 2);
}

int count_files(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    size_t ls = strlen(suffix);
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l >= ls && strcmp(e->d_name + l - ls, suffix) == 0) n++;
    }
    closedir(d);
    return n;
}

int read_index(const run_case *r, xmf_entry *e, int max)
{
    char path[4400];
    heat_output_index_path(path, sizeof path, r->dir, r->c.name);
    char *text = test_read_file(path);
    if (!text) fail_msg("no index %s", path);
    int n = 0;
    const char *p = text;
    while ((p = strstr(p, "<Time Value=\""))) {
        assert_true(n < max);
        e[n].time = strtod(p + 13, NULL);
        const char *item = strstr(p, "Format=\"HDF\">");
        assert_non_null(item);
        item += 13;
        char want[512];
        snprintf(want, sizeof want, "%s_", r->c.name);
        assert_true(strncmp(item, want, strlen(want)) == 0);
        e[n].step = strtoll(item + strlen(want), NULL, 10);
        /* every file the index names exists */
        char file[4400];
        snprintf(file, sizeof file, "%s/%s_%08lld.vtkhdf", r->dir, r->c.name, e[n].step);
        if (!test_exists(file)) fail_msg("%s names %s, which does not exist", path, file);
        n++;
        p = item;
    }
    free(text);
    return n;
}

/* Runs the case; `notices` collects what the run says (may be NULL). */
int run(const run_case *r, const char *restart, void *field_out, heat_run_result *res,
        char **notices, heat_error *err)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *nf = notices ? open_memstream(&buf, &len) : NULL;
    heat_run_options opt = {0};
    opt.restart = restart;
    opt.quiet = 1;
    opt.out = stdout;
    opt.notices = nf;
    opt.field_out = field_out;
    heat_error_clear(err);
    int rc = heat_run(&r->c, r->text, &opt, res, err);
    if (nf) {
        fclose(nf);
        *notices = buf;
    }
    return rc;
}

void run_ok(const run_case *r, const char *restart, void *field_out, heat_run_result *res)
{
    heat_error err;
    int rc = run(r, restart, field_out, res, NULL, &err);
    if (rc != HEAT_OK) fail_msg("heat_run (%s) returned %d: %s", r->dir, rc, err.msg);
}

void path_of(char *buf, size_t n, const run_case *r, int checkpoint, int64_t step)
{
    if (checkpoint)
        heat_output_checkpoint_path(buf, n, r->dir, r->c.name, step);
    else
        heat_output_snapshot_path(buf, n, r->dir, r->c.name, step);
}
