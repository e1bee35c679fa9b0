#include "deck_helpers.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "deck.h"

static const char *const base_lines[L_COUNT] = {
    "name = \"plate\";",
    "grid = { points = [16, 12, 10]; length = [1.0, 2.0, 0.5]; };",
    "material = { diffusivity = 1.0e-4; };",
    "time = { end = 10.0; };",
    "# steady",
    "initial = { type = \"constant\"; value = 20.0; };",
    "boundary = {",
    "  x_lo = { type = \"dirichlet\"; value = 100.0; };",
    "  x_hi = { type = \"neumann\"; gradient = 0.5; };",
    "  y_lo = { type = \"periodic\"; };",
    "  y_hi = { type = \"periodic\"; };",
    "  z_lo = { type = \"neumann\"; };",
    "  z_hi = { type = \"dirichlet\"; value = -3.0; };",
    "};",
    "# output",
    "# solver",
};

const char *deck(int line, ...)
{
    static char buf[16384];
    const char *lines[L_COUNT];
    for (int i = 0; i < L_COUNT; i++) lines[i] = base_lines[i];
    va_list ap;
    va_start(ap, line);
    while (line != 0) {
        assert_true(line >= 1 && line <= L_COUNT);
        lines[line - 1] = va_arg(ap, const char *);
        line = va_arg(ap, int);
    }
    va_end(ap);
    buf[0] = '\0';
    for (int i = 0; i < L_COUNT; i++) {
        assert_true(strlen(buf) + strlen(lines[i]) + 2 < sizeof buf);
        strcat(buf, lines[i]);
        strcat(buf, "\n");
    }
    return buf;
}

int count_lines(const char *s)
{
    if (!*s) return 0;
    int n = 1;
    for (; *s; s++)
        if (*s == '\n' && s[1]) n++;
    return n;
}

void assert_has(const char *msg, const char *needle)
{
    if (!strstr(msg, needle)) fail_msg("message lacks \"%s\":\n%s", needle, msg);
}

void assert_lacks(const char *msg, const char *needle)
{
    if (strstr(msg, needle)) fail_msg("message should not contain \"%s\":\n%s", needle, msg);
}

const char *expect_err(const char *text, const char *const *sets, int nsets, int nlines,
                       const char *const *needles)
{
    static heat_error err;
    heat_case c;
    memset(&c, 0, sizeof c);
    int rc = heat_deck_load_string(text, ORIGIN, sets, nsets, &c, NULL, NULL, &err);
    if (rc != HEAT_EINPUT)
        fail_msg("expected HEAT_EINPUT, got %d (%s)\ndeck:\n%s", rc, err.msg, text);
    assert_int_equal(err.code, HEAT_EINPUT);
    for (const char *const *n = needles; *n; n++) assert_has(err.msg, *n);
    if (nlines >= 0 && count_lines(err.msg) != nlines)
        fail_msg("expected %d problem line(s), got:\n%s", nlines, err.msg);
    return err.msg;
}

void load_ok(const char *text, const char *const *sets, int nsets, heat_case *c, char **text_out,
             FILE *notices)
{
    heat_error err;
    memset(c, 0, sizeof *c);
    int rc = heat_deck_load_string(text, ORIGIN, sets, nsets, c, text_out, notices, &err);
    if (rc != HEAT_OK) fail_msg("expected HEAT_OK, got %d:\n%s\ndeck:\n%s", rc, err.msg, text);
    assert_int_equal(err.code, HEAT_OK);
}

void derive_ok(heat_case *c)
{
    heat_error err;
    int rc = heat_case_derive(c, &err);
    if (rc != HEAT_OK) fail_msg("heat_case_derive failed (%d): %s", rc, err.msg);
}

void assert_case_equal(const heat_case *a, const heat_case *b)
{
#define SAME(f)                                                                                    \
    do {                                                                                           \
        if (memcmp(&a->f, &b->f, sizeof a->f) != 0) fail_msg("heat_case field %s differs", #f);    \
    } while (0)
    assert_string_equal(a->name, b->name);
    SAME(grid.n);
    SAME(grid.length);
    SAME(grid.origin);
    SAME(grid.dims);
    SAME(alpha);
    SAME(time.has_end);
    SAME(time.end);
    SAME(time.has_max_steps);
    SAME(time.max_steps);
    SAME(time.has_dt);
    SAME(time.dt);
    SAME(time.safety);
    SAME(steady.enabled);
    SAME(steady.tolerance);
    SAME(steady.check_every);
    SAME(initial.type);
    SAME(initial.value);
    SAME(initial.center);
    SAME(initial.width);
    SAME(initial.amplitude);
    SAME(initial.base);
    SAME(initial.modes);
    assert_string_equal(a->initial.path, b->initial.path);
    for (int f = 0; f < HEAT_NFACES; f++) {
        SAME(bc[f].type);
        SAME(bc[f].value);
        SAME(bc[f].gradient);
    }
    assert_string_equal(a->output.dir, b->output.dir);
    SAME(output.every);
    SAME(output.checkpoint_every);
    SAME(output.keep_checkpoints);
    SAME(output.checkpoint_wall);
    SAME(output.compress);
    SAME(solver.backend);
    SAME(solver.precision);
    SAME(solver.kernel);
    SAME(solver.temporal_block);
    SAME(d.h);
    SAME(d.r);
    SAME(d.dt_max);
    SAME(d.dt);
    SAME(d.end_step);
    SAME(d.stop_step);
    SAME(d.check_every);
    SAME(d.points);
#undef SAME
}
