#include "cli_helpers.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ARGS 32

void heat(result *r, const char *cwd, ...)
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

void result_free(result *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

void expect_rc(const result *r, int rc)
{
    if (r->rc != rc)
        fail_msg("exit status %d, expected %d\n--- stdout:\n%s\n--- stderr:\n%s", r->rc, rc, r->out,
                 r->err);
}

void scratch(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s", test_scratch_dir(name));
}

void path_in(char *buf, size_t n, const char *dir, const char *name)
{
    snprintf(buf, n, "%s/%s", dir, name);
}

int exists_in(const char *dir, const char *name)
{
    char p[4200];
    path_in(p, sizeof p, dir, name);
    return test_exists(p);
}

char *read_in(const char *dir, const char *name)
{
    char p[4200];
    path_in(p, sizeof p, dir, name);
    char *s = test_read_file(p);
    if (!s) fail_msg("cannot read %s", p);
    return s;
}

long long last_history_row(const char *csv, double *time, double *residual)
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

void write_deck(const char *dir, const char *file, const char *time_line, const char *extra)
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

void write_small_deck(const char *dir)
{
    write_deck(dir, "d.cfg", "time = { end = 0.01; };", "");
}
