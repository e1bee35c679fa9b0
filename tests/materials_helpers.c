#include "materials_helpers.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const base_lines[M_COUNT] = {
    "grid = { points = [11, 11, 11]; length = [1.0, 1.0, 1.0]; };",
    "materials = ( { name = \"a\"; conductivity = 1.0; density = 1.0; specific_heat = 1.0; }, "
    "{ name = \"b\"; conductivity = 4.0; density = 1.0; specific_heat = 1.0; } );",
    "# regions",
    "# sources",
    "# probes",
    "time = { max_steps = 10; };",
    "initial = { type = \"constant\"; value = 20.0; };",
    "boundary = {",
    "  x_lo = { type = \"neumann\"; };",
    "  x_hi = { type = \"neumann\"; };",
    "  y_lo = { type = \"neumann\"; };",
    "  y_hi = { type = \"neumann\"; };",
    "  z_lo = { type = \"neumann\"; };",
    "  z_hi = { type = \"neumann\"; };",
    "};",
    "# output",
    "solver = { backend = \"cpu\"; };",
};

/* The base deck with lines replaced: mdeck(LINE, "text", ..., 0). Returns a
 * static buffer, overwritten by the next call. */
const char *mdeck(int line, ...)
{
    static char buf[65536];
    const char *lines[M_COUNT];
    for (int i = 0; i < M_COUNT; i++) lines[i] = base_lines[i];
    va_list ap;
    va_start(ap, line);
    while (line != 0) {
        assert_true(line >= 1 && line <= M_COUNT);
        lines[line - 1] = va_arg(ap, const char *);
        line = va_arg(ap, int);
    }
    va_end(ap);
    buf[0] = '\0';
    for (int i = 0; i < M_COUNT; i++) {
        assert_true(strlen(buf) + strlen(lines[i]) + 2 < sizeof buf);
        strcat(buf, lines[i]);
        strcat(buf, "\n");
    }
    return buf;
}

/* Problems in a message: lines that start with where they were written (a
 * value that is a list spans several lines of its own). */
static int problems(const char *msg)
{
    int n = 0;
    for (const char *p = msg; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        n += strncmp(p, ORIGIN ":", strlen(ORIGIN ":")) == 0 || strncmp(p, "--set", 5) == 0;
    return n;
}

/* `text` refused with n problems, the message holding every needle. */
const char *bad(int n, const char *text, const char *const *needles)
{
    const char *msg = expect_err(text, NULL, 0, -1, needles);
    if (problems(msg) != n) fail_msg("expected %d problem(s), got:\n%s", n, msg);
    return msg;
}

/* |got - want| <= tol, saying both numbers otherwise. */
void assert_close(double got, double want, double tol)
{
    if (!(fabs(got - want) <= tol))
        fail_msg("got %.17g, expected %.17g (within %.3g)", got, want, tol);
}

/* The base deck with `line` replaced, loaded and derived. */
void load_line(heat_case *c, int line, const char *text)
{
    load_ok(mdeck(line, text, 0), NULL, 0, c, NULL, NULL);
    derive_ok(c);
}

/* `n` copies of `item` joined by ", " into a fresh string, %d in item
 * replaced by the copy's index. */
char *repeat(const char *head, const char *item, int n, const char *tail)
{
    size_t cap = strlen(head) + strlen(tail) + (size_t)n * (strlen(item) + 16) + 1;
    char *s = malloc(cap);
    assert_non_null(s);
    size_t len = (size_t)snprintf(s, cap, "%s", head);
    for (int i = 0; i < n; i++) {
        if (i) len += (size_t)snprintf(s + len, cap - len, ", ");
        len += (size_t)snprintf(s + len, cap - len, item, i);
    }
    snprintf(s + len, cap - len, "%s", tail);
    return s;
}
