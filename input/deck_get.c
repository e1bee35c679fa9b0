/* Checked reading of deck settings: where a setting was written, its key
 * path and value for messages, and getters that report a wrong type or a
 * missing key. */
#include <ctype.h>
#include <errno.h>
#include <libconfig.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deck_internal.h"

/* ------------------------------------------------------- validation core */

void heat_deck_where(const vctx *v, const config_setting_t *s, char *buf, size_t n)
{
    if (s && config_setting_is_root(s))
        snprintf(buf, n, "%s", v->origin);
    else if (s && config_setting_source_line(s) == 0)
        snprintf(buf, n, "--set");
    else if (s)
        snprintf(buf, n, "%s:%u", s->file ? s->file : v->origin, s->line);
    else
        snprintf(buf, n, "%s", v->origin);
}

void heat_deck_path_of(const config_setting_t *s, char *buf, size_t n)
{
    if (!s || config_setting_is_root(s)) {
        buf[0] = '\0';
        return;
    }
    char parent[512];
    heat_deck_path_of(config_setting_parent(s), parent, sizeof parent);
    if (config_setting_name(s))
        snprintf(buf, n, "%s%s%s", parent, parent[0] ? "." : "", config_setting_name(s));
    else
        snprintf(buf, n, "%s[%d]", parent, config_setting_index(s));
}

/* Whether a list holds groups or lists (which print over several lines). */
static int nested_list(const config_setting_t *s)
{
    if (!config_setting_is_list(s)) return 0;
    for (int i = 0; i < config_setting_length(s); i++) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        if (config_setting_is_group(e) || config_setting_is_list(e)) return 1;
    }
    return 0;
}

char *heat_deck_value_text(const config_setting_t *s)
{
    strbuf b = {0};
    if (config_setting_is_group(s))
        heat_deck_sb_printf(&b, "{ ... }");
    else if (nested_list(s))
        heat_deck_sb_printf(&b, "( ... %d entr%s ... )", config_setting_length(s),
                            config_setting_length(s) == 1 ? "y" : "ies");
    else
        heat_deck_sb_value(&b, s, 0);
    return b.s;
}

const char *heat_deck_type_text(const config_setting_t *s)
{
    switch (config_setting_type(s)) {
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_INT64:
        return "an integer";
    case CONFIG_TYPE_FLOAT:
        return "a number";
    case CONFIG_TYPE_BOOL:
        return "a boolean";
    case CONFIG_TYPE_STRING:
        return "a string";
    case CONFIG_TYPE_ARRAY:
        return "an array";
    case CONFIG_TYPE_LIST:
        return "a list";
    case CONFIG_TYPE_GROUP:
        return "a group";
    default:
        return "something unknown";
    }
}

void heat_deck_bad(vctx *v, const config_setting_t *s, const char *fmt, ...)
{
    char loc[HEAT_PATH_MAX + 32], path[512], *msg = NULL;
    heat_deck_where(v, s, loc, sizeof loc);
    heat_deck_path_of(s, path, sizeof path);
    char *val = heat_deck_value_text(s);
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&msg, fmt, ap) < 0) msg = NULL;
    va_end(ap);
    heat_error_append(v->err, HEAT_EINPUT, "%s: %s = %s: %s", loc, path, val ? val : "?",
                      msg ? msg : "?");
    free(val);
    free(msg);
}

void heat_deck_missing(vctx *v, const config_setting_t *group, const char *key, const char *what)
{
    char loc[HEAT_PATH_MAX + 32], path[512];
    heat_deck_where(v, group, loc, sizeof loc);
    heat_deck_path_of(group, path, sizeof path);
    heat_error_append(v->err, HEAT_EINPUT, "%s: missing key %s%s%s (%s)", loc, path,
                      path[0] ? "." : "", key, what);
}

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), row[64];
    if (la >= 63 || lb >= 63) return 99;
    for (size_t j = 0; j <= lb; j++) row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t sub =
                diag + (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
            size_t best = up + 1 < row[j - 1] + 1 ? up + 1 : row[j - 1] + 1;
            row[j] = sub < best ? sub : best;
            diag = up;
        }
    }
    return row[lb];
}

/* Reports every member of `group` whose name is not in `allowed`. */
void heat_deck_check_keys(vctx *v, const config_setting_t *group, const char *const *allowed,
                          const char *context)
{
    for (int i = 0; i < config_setting_length(group); i++) {
        const config_setting_t *m = config_setting_get_elem(group, (unsigned)i);
        const char *name = config_setting_name(m);
        int ok = 0;
        const char *near = NULL;
        size_t best = 3;
        char list[512] = "";
        for (const char *const *a = allowed; *a; a++) {
            if (strcmp(name, *a) == 0) ok = 1;
            size_t d = edit_distance(name, *a);
            if (d < best) best = d, near = *a;
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                     a == allowed ? "" : ", ", *a);
        }
        if (ok) continue;
        char loc[HEAT_PATH_MAX + 32], path[512];
        heat_deck_where(v, m, loc, sizeof loc);
        heat_deck_path_of(m, path, sizeof path);
        heat_error_append(v->err, HEAT_EINPUT, "%s: unknown key %s%s (allowed%s%s: %s)%s%s%s", loc,
                          path, "", context ? " " : "", context ? context : "", list,
                          near ? "; did you mean " : "", near ? near : "", near ? "?" : "");
    }
}

/* A number setting (int, int64 or float) as a finite double: 1, or -1 with
 * the problem reported. */
int heat_deck_number_of(vctx *v, const config_setting_t *s, double *out)
{
    switch (config_setting_type(s)) {
    case CONFIG_TYPE_INT:
        *out = config_setting_get_int(s);
        break;
    case CONFIG_TYPE_INT64:
        *out = (double)config_setting_get_int64(s);
        break;
    case CONFIG_TYPE_FLOAT:
        *out = config_setting_get_float(s);
        break;
    default:
        heat_deck_bad(v, s, "expected a number, found %s", heat_deck_type_text(s));
        return -1;
    }
    if (!isfinite(*out)) {
        heat_deck_bad(v, s, "expected a finite number%s",
                      isinf(*out) ? " (one beyond +-1.8e308 reads as inf)" : "");
        return -1;
    }
    return 1;
}

/* The getters return 1 when the key is there with a fitting type (and set
 * *out), 0 when it is absent (reported when `required`), -1 when it has the
 * wrong type (reported). */

int heat_deck_get_number(vctx *v, const config_setting_t *g, const char *key, int required,
                         double *out)
{
    const config_setting_t *s = config_setting_get_member(g, key);
    if (!s) {
        if (required) heat_deck_missing(v, g, key, "a number");
        return 0;
    }
    return heat_deck_number_of(v, s, out);
}

int heat_deck_as_int64(const config_setting_t *s, int64_t *out)
{
    switch (config_setting_type(s)) {
    case CONFIG_TYPE_INT:
        *out = config_setting_get_int(s);
        return 1;
    case CONFIG_TYPE_INT64:
        *out = config_setting_get_int64(s);
        return 1;
    case CONFIG_TYPE_FLOAT: {
        /* 1e5 is a natural way to write a step count: accept integral floats. */
        double x = config_setting_get_float(s);
        if (isfinite(x) && x == floor(x) && fabs(x) < 9.0e15) {
            *out = (int64_t)x;
            return 1;
        }
        return 0;
    }
    default:
        return 0;
    }
}

const char *heat_deck_not_integer_text(const config_setting_t *s)
{
    if (config_setting_type(s) == CONFIG_TYPE_FLOAT) {
        double x = config_setting_get_float(s);
        if (isfinite(x) && x == floor(x))
            return "expected an integer, and this one is too large (at most 9e15)";
        return "expected an integer, found a number with a fraction";
    }
    static _Thread_local char buf[64];
    snprintf(buf, sizeof buf, "expected an integer, found %s", heat_deck_type_text(s));
    return buf;
}

int heat_deck_get_int(vctx *v, const config_setting_t *g, const char *key, int required,
                      int64_t *out)
{
    const config_setting_t *s = config_setting_get_member(g, key);
    if (!s) {
        if (required) heat_deck_missing(v, g, key, "an integer");
        return 0;
    }
    if (!heat_deck_as_int64(s, out)) {
        heat_deck_bad(v, s, "%s", heat_deck_not_integer_text(s));
        return -1;
    }
    return 1;
}

int heat_deck_get_string(vctx *v, const config_setting_t *g, const char *key, int required,
                         const char **out)
{
    const config_setting_t *s = config_setting_get_member(g, key);
    if (!s) {
        if (required) heat_deck_missing(v, g, key, "a string");
        return 0;
    }
    if (config_setting_type(s) != CONFIG_TYPE_STRING) {
        heat_deck_bad(v, s, "expected a string, found %s", heat_deck_type_text(s));
        return -1;
    }
    *out = config_setting_get_string(s);
    return 1;
}

/* A string that must be one of `choices` (NULL-terminated); *index set. */
int heat_deck_get_choice(vctx *v, const config_setting_t *g, const char *key, int required,
                         const char *const *choices, int *index)
{
    const char *str = NULL;
    int got = heat_deck_get_string(v, g, key, 0, &str);
    char list[256] = "";
    for (const char *const *c = choices; *c; c++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s\"%s\"",
                 c == choices ? "" : ", ", *c);
    if (got == 0 && required) {
        char what[300];
        snprintf(what, sizeof what, "one of %s", list);
        heat_deck_missing(v, g, key, what);
    }
    if (got != 1) return got;
    for (int i = 0; choices[i]; i++)
        if (strcmp(str, choices[i]) == 0) {
            *index = i;
            return 1;
        }
    heat_deck_bad(v, config_setting_get_member(g, key), "expected one of %s", list);
    return -1;
}

/* Exactly three numbers (an array or a list). */
int heat_deck_get_triple(vctx *v, const config_setting_t *g, const char *key, int required,
                         double out[3], const char *what)
{
    const config_setting_t *s = config_setting_get_member(g, key);
    if (!s) {
        if (required) heat_deck_missing(v, g, key, what);
        return 0;
    }
    if ((!config_setting_is_array(s) && !config_setting_is_list(s)) ||
        config_setting_length(s) != 3) {
        heat_deck_bad(v, s, "expected %s", what);
        return -1;
    }
    for (unsigned i = 0; i < 3; i++) {
        if (heat_deck_number_of(v, config_setting_get_elem(s, i), &out[i]) != 1) return -1;
    }
    return 1;
}

/* A group member that must itself be a group; absent -> NULL (reported when
 * required), wrong type -> NULL (reported). */
const config_setting_t *heat_deck_get_group(vctx *v, const config_setting_t *g, const char *key,
                                            int required, const char *what)
{
    const config_setting_t *s = config_setting_get_member(g, key);
    if (!s) {
        if (required) heat_deck_missing(v, g, key, what);
        return NULL;
    }
    if (!config_setting_is_group(s)) {
        heat_deck_bad(v, s, "expected a group { ... }, found %s", heat_deck_type_text(s));
        return NULL;
    }
    return s;
}
