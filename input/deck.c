/* Deck parsing and validation. See deck.h for the contract and docs/DECK.md
 * for the schema that users read. */
#include "deck.h"

#include <ctype.h>
#include <errno.h>
#include <libconfig.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------ text */

/* Shortest "%.*g" text that reads back as exactly x. */
static void fmt_double(char *buf, size_t n, double x)
{
    if (!isfinite(x)) {
        snprintf(buf, n, "%s", isnan(x) ? "nan" : (x > 0 ? "inf" : "-inf"));
        return;
    }
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, n, "%.*g", p, x);
        if (strtod(buf, NULL) == x) break;
    }
    /* "%.1g" writes 10 as "1e+01": write such numbers in plain digits. */
    char *e = strchr(buf, 'e');
    int exp10 = e ? atoi(e + 1) : 0;
    if (e && exp10 >= 0 && exp10 < 17) {
        char plain[64];
        snprintf(plain, sizeof plain, "%.0f", x); /* %g uses e only when exp10 >= p */
        if (strtod(plain, NULL) == x) snprintf(buf, n, "%s", plain);
    }
    /* Keep it a float in libconfig's eyes: "1" would read back as an int. */
    if (!strpbrk(buf, ".eEn")) strncat(buf, ".0", n - strlen(buf) - 1);
}

typedef struct strbuf {
    char *s;
    size_t len, cap;
} strbuf;

static void sb_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(strbuf *b, const char *fmt, ...)
{
    for (;;) {
        size_t room = b->cap - b->len;
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? room : 0, fmt, ap);
        va_end(ap);
        if (k < 0) return;
        if (b->s && (size_t)k < room) {
            b->len += (size_t)k;
            return;
        }
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + (size_t)k + 1) cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) return;
        b->s = s;
        b->cap = cap;
    }
}

static void sb_quoted(strbuf *b, const char *s)
{
    sb_printf(b, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            sb_printf(b, "\\%c", *s);
        else if (*s == '\n')
            sb_printf(b, "\\n");
        else if (*s == '\t')
            sb_printf(b, "\\t");
        else
            sb_printf(b, "%c", *s);
    }
    sb_printf(b, "\"");
}

/* Writes a setting's value in libconfig syntax (numbers exact). */
static void sb_value(strbuf *b, const config_setting_t *s, int indent)
{
    char num[64];
    switch (config_setting_type(s)) {
    case CONFIG_TYPE_INT:
        sb_printf(b, "%d", config_setting_get_int(s));
        break;
    case CONFIG_TYPE_INT64:
        sb_printf(b, "%lldL", config_setting_get_int64(s));
        break;
    case CONFIG_TYPE_FLOAT:
        fmt_double(num, sizeof num, config_setting_get_float(s));
        sb_printf(b, "%s", num);
        break;
    case CONFIG_TYPE_BOOL:
        sb_printf(b, "%s", config_setting_get_bool(s) ? "true" : "false");
        break;
    case CONFIG_TYPE_STRING:
        sb_quoted(b, config_setting_get_string(s));
        break;
    case CONFIG_TYPE_ARRAY:
    case CONFIG_TYPE_LIST: {
        int list = config_setting_type(s) == CONFIG_TYPE_LIST;
        sb_printf(b, list ? "(" : "[");
        for (int i = 0; i < config_setting_length(s); i++) {
            if (i) sb_printf(b, ", ");
            sb_value(b, config_setting_get_elem(s, (unsigned)i), indent);
        }
        sb_printf(b, list ? ")" : "]");
        break;
    }
    case CONFIG_TYPE_GROUP:
        sb_printf(b, "{\n");
        for (int i = 0; i < config_setting_length(s); i++) {
            const config_setting_t *m = config_setting_get_elem(s, (unsigned)i);
            sb_printf(b, "%*s%s = ", indent + 2, "", config_setting_name(m));
            sb_value(b, m, indent + 2);
            sb_printf(b, ";\n");
        }
        sb_printf(b, "%*s}", indent, "");
        break;
    default:
        sb_printf(b, "?");
    }
}

static char *canonical_text(const config_t *cfg, const char *name)
{
    strbuf b = {0};
    const config_setting_t *root = config_root_setting(cfg);
    /* A name taken from the deck's file name is written down, so that the text
     * gives the same case wherever it is loaded from again. */
    if (!config_setting_get_member(root, "name")) {
        sb_printf(&b, "name = ");
        sb_quoted(&b, name);
        sb_printf(&b, ";\n");
    }
    for (int i = 0; i < config_setting_length(root); i++) {
        const config_setting_t *m = config_setting_get_elem(root, (unsigned)i);
        sb_printf(&b, "%s = ", config_setting_name(m));
        sb_value(&b, m, 0);
        sb_printf(&b, ";\n");
    }
    if (!b.s) sb_printf(&b, "%s", "");
    return b.s;
}

/* ------------------------------------------------------- validation core */

typedef struct vctx {
    const char *origin; /* deck file name or description, for messages */
    heat_error *err;
    FILE *notices;
} vctx;

static void where(const vctx *v, const config_setting_t *s, char *buf, size_t n)
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

static void path_of(const config_setting_t *s, char *buf, size_t n)
{
    if (!s || config_setting_is_root(s)) {
        buf[0] = '\0';
        return;
    }
    char parent[512];
    path_of(config_setting_parent(s), parent, sizeof parent);
    if (config_setting_name(s))
        snprintf(buf, n, "%s%s%s", parent, parent[0] ? "." : "", config_setting_name(s));
    else
        snprintf(buf, n, "%s[%d]", parent, config_setting_index(s));
}

static void value_text(const config_setting_t *s, char *buf, size_t n)
{
    strbuf b = {0};
    if (config_setting_is_group(s))
        sb_printf(&b, "{ ... }");
    else
        sb_value(&b, s, 0);
    snprintf(buf, n, "%s", b.s ? b.s : "");
    if (strlen(buf) > 80) strcpy(buf + 76, " ...");
    free(b.s);
}

static const char *type_text(const config_setting_t *s)
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

/* "<where>: <key> = <value>: <message>" */
static void bad(vctx *v, const config_setting_t *s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void bad(vctx *v, const config_setting_t *s, const char *fmt, ...)
{
    char loc[HEAT_PATH_MAX + 32], path[512], val[128], msg[1024];
    where(v, s, loc, sizeof loc);
    path_of(s, path, sizeof path);
    value_text(s, val, sizeof val);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    heat_error_append(v->err, HEAT_EINPUT, "%s: %s = %s: %s", loc, path, val, msg);
}

static void missing(vctx *v, const config_setting_t *group, const char *key, const char *what)
{
    char loc[HEAT_PATH_MAX + 32], path[512];
    where(v, group, loc, sizeof loc);
    path_of(group, path, sizeof path);
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
static void check_keys(vctx *v, const config_setting_t *group, const char *const *allowed,
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
        where(v, m, loc, sizeof loc);
        path_of(m, path, sizeof path);
        heat_error_append(v->err, HEAT_EINPUT, "%s: unknown key %s%s (allowed%s%s: %s)%s%s%s", loc,
                          path, "", context ? " " : "", context ? context : "", list,
                          near ? "; did you mean " : "", near ? near : "", near ? "?" : "");
    }
}

/* A number setting (int, int64 or float) as a finite double: 1, or -1 with
 * the problem reported. */
static int number_of(vctx *v, const config_setting_t *s, double *out)
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
        bad(v, s, "expected a number, found %s", type_text(s));
        return -1;
    }
    if (!isfinite(*out)) {
        bad(v, s, "expected a finite number");
        return -1;
    }
    return 1;
}

/* The getters return 1 when the key is there with a fitting type (and set
 * *out), 0 when it is absent (reported when `required`), -1 when it has the
 * wrong type (reported). */

static int get_number(vctx *v, const config_setting_t *g, const char *key, int required,
                      double *out)
{
    const config_setting_t *s = config_setting_get_member(g, key);
    if (!s) {
        if (required) missing(v, g, key, "a number");
        return 0;
    }
    return number_of(v, s, out);
}

static int as_int64(const config_setting_t *s, int64_t *out)
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

static int get_int(vctx *v, const config_setting_t *g, const char *key, int required, int64_t *out)
{
    const config_setting_t *s = config_setting_get_member(g, key);
    if (!s) {
        if (required) missing(v, g, key, "an integer");
        return 0;
    }
    if (!as_int64(s, out)) {
        bad(v, s, "expected an integer, found %s", type_text(s));
        return -1;
    }
    return 1;
}

static int get_string(vctx *v, const config_setting_t *g, const char *key, int required,
                      const char **out)
{
    const config_setting_t *s = config_setting_get_member(g, key);
    if (!s) {
        if (required) missing(v, g, key, "a string");
        return 0;
    }
    if (config_setting_type(s) != CONFIG_TYPE_STRING) {
        bad(v, s, "expected a string, found %s", type_text(s));
        return -1;
    }
    *out = config_setting_get_string(s);
    return 1;
}

/* A string that must be one of `choices` (NULL-terminated); *index set. */
static int get_choice(vctx *v, const config_setting_t *g, const char *key, int required,
                      const char *const *choices, int *index)
{
    const char *str = NULL;
    int got = get_string(v, g, key, 0, &str);
    char list[256] = "";
    for (const char *const *c = choices; *c; c++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s\"%s\"",
                 c == choices ? "" : ", ", *c);
    if (got == 0 && required) {
        char what[300];
        snprintf(what, sizeof what, "one of %s", list);
        missing(v, g, key, what);
    }
    if (got != 1) return got;
    for (int i = 0; choices[i]; i++)
        if (strcmp(str, choices[i]) == 0) {
            *index = i;
            return 1;
        }
    bad(v, config_setting_get_member(g, key), "expected one of %s", list);
    return -1;
}

/* Exactly three numbers (an array or a list). */
static int get_triple(vctx *v, const config_setting_t *g, const char *key, int required,
                      double out[3], const char *what)
{
    const config_setting_t *s = config_setting_get_member(g, key);
    if (!s) {
        if (required) missing(v, g, key, what);
        return 0;
    }
    if ((!config_setting_is_array(s) && !config_setting_is_list(s)) ||
        config_setting_length(s) != 3) {
        bad(v, s, "expected %s", what);
        return -1;
    }
    for (unsigned i = 0; i < 3; i++) {
        if (number_of(v, config_setting_get_elem(s, i), &out[i]) != 1) return -1;
    }
    return 1;
}

/* A group member that must itself be a group; absent -> NULL (reported when
 * required), wrong type -> NULL (reported). */
static const config_setting_t *get_group(vctx *v, const config_setting_t *g, const char *key,
                                         int required, const char *what)
{
    const config_setting_t *s = config_setting_get_member(g, key);
    if (!s) {
        if (required) missing(v, g, key, what);
        return NULL;
    }
    if (!config_setting_is_group(s)) {
        bad(v, s, "expected a group { ... }, found %s", type_text(s));
        return NULL;
    }
    return s;
}

#define MEMBER(g, k) config_setting_get_member((g), (k))

/* ------------------------------------------------------------ sections */

static int name_ok(const char *s)
{
    if (!s[0] || s[0] == '.' || strlen(s) > 200) return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-' && *s != '.') return 0;
    return 1;
}

static void v_name(vctx *v, const config_setting_t *root, heat_case *c, const char *origin)
{
    const char *name;
    if (get_string(v, root, "name", 0, &name) == 1) {
        if (!name_ok(name))
            bad(v, MEMBER(root, "name"),
                "expected 1 to 200 characters from A-Z a-z 0-9 _ - . (not starting with '.'): "
                "the name is part of every output file name");
        else
            snprintf(c->name, sizeof c->name, "%s", name);
        return;
    }
    /* Default: the deck file's base name without its extension, made safe. */
    const char *base = strrchr(origin, '/');
    base = base ? base + 1 : origin;
    snprintf(c->name, sizeof c->name, "%s", base);
    char *dot = strrchr(c->name, '.');
    if (dot && dot != c->name) *dot = '\0';
    for (char *p = c->name; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-' && *p != '.') *p = '_';
    if (c->name[0] == '.' || c->name[0] == '\0') c->name[0] = '_';
}

static void v_grid(vctx *v, const config_setting_t *root, heat_case *c)
{
    static const char *const keys[] = {"points", "length", "origin", NULL};
    const config_setting_t *g = get_group(v, root, "grid", 1, "a group with points and length");
    if (!g) return;
    check_keys(v, g, keys, NULL);

    const config_setting_t *p = MEMBER(g, "points");
    if (!p)
        missing(v, g, "points", "[nx, ny, nz], integers >= 3, nz = 1 for a 2D run");
    else if ((!config_setting_is_array(p) && !config_setting_is_list(p)) ||
             config_setting_length(p) != 3)
        bad(v, p, "expected [nx, ny, nz], integers >= 3, nz = 1 for a 2D run");
    else {
        int ok = 1;
        for (unsigned i = 0; i < 3; i++) {
            const config_setting_t *e = config_setting_get_elem(p, i);
            int64_t n;
            if (!as_int64(e, &n)) {
                bad(v, e, "expected an integer, found %s", type_text(e));
                ok = 0;
            } else if (n < 3 && !(i == 2 && n == 1)) {
                bad(v, e, "each of nx, ny, nz must be >= 3 (nz = 1 makes a 2D run)");
                ok = 0;
            } else if (n > (INT64_C(1) << 40)) {
                bad(v, e, "at most 2^40 points per axis");
                ok = 0;
            } else
                c->grid.n[i] = n;
        }
        if (ok) {
            double total = (double)c->grid.n[0] * (double)c->grid.n[1] * (double)c->grid.n[2];
            if (total > 0x1p50) bad(v, p, "at most 2^50 points in all");
            c->grid.dims = c->grid.n[2] == 1 ? 2 : 3;
        }
    }

    if (get_triple(v, g, "length", 1, c->grid.length, "[Lx, Ly, Lz], each > 0") == 1)
        for (unsigned i = 0; i < 3; i++)
            if (!(c->grid.length[i] > 0))
                bad(v, config_setting_get_elem(MEMBER(g, "length"), i),
                    "each length must be > 0 (Lz too in a 2D run, where it is unused)");
    get_triple(v, g, "origin", 0, c->grid.origin, "[x0, y0, z0], three numbers");
}

static void v_material(vctx *v, const config_setting_t *root, heat_case *c)
{
    static const char *const keys[] = {"diffusivity", NULL};
    const config_setting_t *g = get_group(v, root, "material", 1, "a group with diffusivity");
    if (!g) return;
    check_keys(v, g, keys, NULL);
    if (get_number(v, g, "diffusivity", 1, &c->alpha) == 1 && !(c->alpha > 0))
        bad(v, MEMBER(g, "diffusivity"), "the diffusivity must be > 0");
}

static void v_time(vctx *v, const config_setting_t *root, heat_case *c)
{
    static const char *const keys[] = {"end", "max_steps", "dt", "safety", NULL};
    c->time.safety = 0.9;
    const config_setting_t *g = get_group(v, root, "time", 0, NULL);
    if (!g) return;
    check_keys(v, g, keys, NULL);
    if (get_number(v, g, "end", 0, &c->time.end) == 1) {
        if (c->time.end > 0)
            c->time.has_end = 1;
        else
            bad(v, MEMBER(g, "end"), "the end time must be > 0");
    }
    if (get_int(v, g, "max_steps", 0, &c->time.max_steps) == 1) {
        if (c->time.max_steps >= 1)
            c->time.has_max_steps = 1;
        else
            bad(v, MEMBER(g, "max_steps"), "max_steps must be >= 1");
    }
    if (get_number(v, g, "dt", 0, &c->time.dt) == 1) {
        if (c->time.dt > 0) {
            c->time.has_dt = 1;
            where(v, MEMBER(g, "dt"), c->time.dt_where, sizeof c->time.dt_where);
        } else
            bad(v, MEMBER(g, "dt"), "dt must be > 0 (leave it out for safety * dt_max)");
    }
    if (get_number(v, g, "safety", 0, &c->time.safety) == 1 &&
        !(c->time.safety > 0 && c->time.safety <= 1))
        bad(v, MEMBER(g, "safety"), "safety must be in (0, 1]");
}

static void v_steady(vctx *v, const config_setting_t *root, heat_case *c)
{
    static const char *const keys[] = {"tolerance", "check_every", NULL};
    c->steady.check_every = 100;
    const config_setting_t *g = get_group(v, root, "steady", 0, NULL);
    if (!g) return;
    check_keys(v, g, keys, NULL);
    c->steady.enabled = 1;
    if (get_number(v, g, "tolerance", 1, &c->steady.tolerance) == 1 && !(c->steady.tolerance > 0))
        bad(v, MEMBER(g, "tolerance"), "the tolerance must be > 0");
    if (get_int(v, g, "check_every", 0, &c->steady.check_every) == 1 && c->steady.check_every < 1)
        bad(v, MEMBER(g, "check_every"), "check_every must be >= 1");
}

static void v_initial(vctx *v, const config_setting_t *root, heat_case *c)
{
    static const char *const types[] = {"constant", "gaussian", "sine", "file", NULL};
    static const char *const k_constant[] = {"type", "value", NULL};
    static const char *const k_gaussian[] = {"type", "center", "width", "amplitude", "base", NULL};
    static const char *const k_sine[] = {"type", "modes", "amplitude", NULL};
    static const char *const k_file[] = {"type", "path", NULL};
    static const char *const k_all[] = {"type", "value", "center", "width", "amplitude",
                                        "base", "modes", "path",   NULL};
    const config_setting_t *g =
        get_group(v, root, "initial", 1, "a group with type = constant, gaussian, sine or file");
    if (!g) return;
    int t;
    if (get_choice(v, g, "type", 1, types, &t) != 1) {
        check_keys(v, g, k_all, NULL);
        return;
    }
    c->initial.type = (heat_init_type)t;
    char ctx[64];
    snprintf(ctx, sizeof ctx, "for type \"%s\"", types[t]);
    switch (c->initial.type) {
    case HEAT_INIT_CONSTANT:
        check_keys(v, g, k_constant, ctx);
        get_number(v, g, "value", 1, &c->initial.value);
        break;
    case HEAT_INIT_GAUSSIAN:
        check_keys(v, g, k_gaussian, ctx);
        get_triple(v, g, "center", 1, c->initial.center, "[x, y, z], three numbers");
        if (get_number(v, g, "width", 1, &c->initial.width) == 1 && !(c->initial.width > 0))
            bad(v, MEMBER(g, "width"), "the width must be > 0");
        get_number(v, g, "amplitude", 1, &c->initial.amplitude);
        get_number(v, g, "base", 0, &c->initial.base);
        break;
    case HEAT_INIT_SINE:
        check_keys(v, g, k_sine, ctx);
        if (get_triple(v, g, "modes", 1, c->initial.modes, "[kx, ky, kz], three numbers >= 0") == 1)
            for (unsigned i = 0; i < 3; i++)
                if (!(c->initial.modes[i] >= 0))
                    bad(v, config_setting_get_elem(MEMBER(g, "modes"), i),
                        "each wave number must be >= 0");
        get_number(v, g, "amplitude", 1, &c->initial.amplitude);
        break;
    case HEAT_INIT_FILE: {
        check_keys(v, g, k_file, ctx);
        const char *path;
        if (get_string(v, g, "path", 1, &path) == 1) {
            if (!path[0] || strlen(path) >= HEAT_PATH_MAX)
                bad(v, MEMBER(g, "path"), "expected the path of a snapshot or checkpoint file");
            else if (access(path, R_OK) != 0)
                bad(v, MEMBER(g, "path"), "cannot read the file: %s", strerror(errno));
            else
                snprintf(c->initial.path, sizeof c->initial.path, "%s", path);
        }
        break;
    }
    default:
        break;
    }
}

static void v_boundary(vctx *v, const config_setting_t *root, heat_case *c)
{
    static const char *const faces[] = {"x_lo", "x_hi", "y_lo", "y_hi", "z_lo", "z_hi", NULL};
    static const char *const types[] = {"dirichlet", "neumann", "periodic", NULL};
    static const char *const k_dirichlet[] = {"type", "value", NULL};
    static const char *const k_neumann[] = {"type", "gradient", NULL};
    static const char *const k_periodic[] = {"type", NULL};
    static const char *const k_all[] = {"type", "value", "gradient", NULL};
    const config_setting_t *g = get_group(v, root, "boundary", 1, "a group with x_lo ... z_hi");
    if (!g) return;
    check_keys(v, g, faces, NULL);
    int nfaces = c->grid.dims == 2 ? 4 : 6;
    int have[HEAT_NFACES] = {0};
    for (int f = 0; f < HEAT_NFACES; f++) {
        if (f >= nfaces) {
            if (MEMBER(g, faces[f]) && v->notices)
                fprintf(v->notices, "notice: boundary.%s is ignored: nz = 1 makes a 2D run\n",
                        faces[f]);
            c->bc[f].type = HEAT_BC_NEUMANN; /* unused in 2D */
            continue;
        }
        const config_setting_t *fg =
            get_group(v, g, faces[f], 1,
                      "type = \"dirichlet\" with value, \"neumann\" with gradient, or "
                      "\"periodic\"");
        if (!fg) continue;
        int t;
        if (get_choice(v, fg, "type", 1, types, &t) != 1) {
            check_keys(v, fg, k_all, NULL);
            continue;
        }
        have[f] = 1;
        c->bc[f].type = (heat_bc_type)t;
        char ctx[64];
        snprintf(ctx, sizeof ctx, "for type \"%s\"", types[t]);
        if (t == HEAT_BC_DIRICHLET) {
            check_keys(v, fg, k_dirichlet, ctx);
            get_number(v, fg, "value", 1, &c->bc[f].value);
        } else if (t == HEAT_BC_NEUMANN) {
            check_keys(v, fg, k_neumann, ctx);
            get_number(v, fg, "gradient", 0, &c->bc[f].gradient);
        } else {
            check_keys(v, fg, k_periodic, ctx);
        }
    }
    for (int axis = 0; axis < nfaces / 2; axis++) {
        int lo = 2 * axis, hi = lo + 1;
        if (!have[lo] || !have[hi]) continue;
        int plo = c->bc[lo].type == HEAT_BC_PERIODIC, phi = c->bc[hi].type == HEAT_BC_PERIODIC;
        if (plo != phi) {
            const config_setting_t *p = MEMBER(MEMBER(g, faces[plo ? lo : hi]), "type");
            bad(v, p, "periodic faces come in pairs: boundary.%s is \"%s\"", faces[plo ? hi : lo],
                types[c->bc[plo ? hi : lo].type]);
        }
    }
}

static void v_output(vctx *v, const config_setting_t *root, heat_case *c)
{
    static const char *const keys[] = {
        "dir",      "every", "checkpoint_every", "keep_checkpoints", "checkpoint_wall",
        "compress", NULL};
    snprintf(c->output.dir, sizeof c->output.dir, "out/%s", c->name);
    c->output.keep_checkpoints = 2;
    const config_setting_t *g = get_group(v, root, "output", 0, NULL);
    if (!g) return;
    check_keys(v, g, keys, NULL);
    const char *dir;
    if (get_string(v, g, "dir", 0, &dir) == 1) {
        if (!dir[0] || strlen(dir) >= HEAT_PATH_MAX - 64)
            bad(v, MEMBER(g, "dir"), "expected a directory path");
        else
            snprintf(c->output.dir, sizeof c->output.dir, "%s", dir);
    }
    if (get_int(v, g, "every", 0, &c->output.every) == 1 && c->output.every < 0)
        bad(v, MEMBER(g, "every"),
            "expected an integer >= 0 (0: initial and final snapshots only)");
    if (get_int(v, g, "checkpoint_every", 0, &c->output.checkpoint_every) == 1 &&
        c->output.checkpoint_every < 0)
        bad(v, MEMBER(g, "checkpoint_every"),
            "expected an integer >= 0 (0: checkpoints only at the end and on signals)");
    if (get_int(v, g, "keep_checkpoints", 0, &c->output.keep_checkpoints) == 1 &&
        (c->output.keep_checkpoints < 1 || c->output.keep_checkpoints > 1000))
        bad(v, MEMBER(g, "keep_checkpoints"), "expected an integer from 1 to 1000");
    if (get_number(v, g, "checkpoint_wall", 0, &c->output.checkpoint_wall) == 1 &&
        !(c->output.checkpoint_wall >= 0))
        bad(v, MEMBER(g, "checkpoint_wall"),
            "expected a number of seconds >= 0 (0: no checkpoints by wall time)");
    int64_t level;
    if (get_int(v, g, "compress", 0, &level) == 1) {
        if (level < 0 || level > 9)
            bad(v, MEMBER(g, "compress"),
                "expected an integer from 0 (off) to 9 (deflate level of the field files)");
        else
            c->output.compress = (int)level;
    }
}

static void v_solver(vctx *v, const config_setting_t *root, heat_case *c)
{
    static const char *const keys[] = {"backend", "precision", "kernel", "temporal_block", NULL};
    static const char *const backends[] = {"auto", "cpu", "cuda", NULL};
    static const char *const precisions[] = {"double", "float", NULL};
    static const char *const kernels[] = {"naive", "tiled", "sliced", "register_tiled", NULL};
    c->solver.backend = HEAT_BACKEND_AUTO;
    c->solver.precision = HEAT_DOUBLE;
    c->solver.kernel = HEAT_KERNEL_REGISTER_TILED;
    c->solver.temporal_block = 1;
    const config_setting_t *g = get_group(v, root, "solver", 0, NULL);
    if (!g) return;
    check_keys(v, g, keys, NULL);
    int i;
    if (get_choice(v, g, "backend", 0, backends, &i) == 1) c->solver.backend = i;
    if (get_choice(v, g, "precision", 0, precisions, &i) == 1) c->solver.precision = i;
    if (get_choice(v, g, "kernel", 0, kernels, &i) == 1) c->solver.kernel = i;
    /* One message for every bad value, a non-integer included, so it always says what is
     * allowed. */
    const config_setting_t *tb = config_setting_get_member(g, "temporal_block");
    int64_t k;
    if (tb) {
        if (!as_int64(tb, &k) || k < 1 || k > HEAT_TEMPORAL_BLOCK_MAX)
            bad(v, tb,
                "expected an integer from 1 to %d (steps fused per pass over GPU memory by the "
                "register_tiled kernel)",
                HEAT_TEMPORAL_BLOCK_MAX);
        else
            c->solver.temporal_block = (int)k;
    }
}

static void validate(vctx *v, const config_t *cfg, heat_case *c)
{
    static const char *const keys[] = {"name",    "grid",     "material", "time",   "steady",
                                       "initial", "boundary", "output",   "solver", NULL};
    const config_setting_t *root = config_root_setting(cfg);
    check_keys(v, root, keys, "at the top level");
    v_name(v, root, c, v->origin);
    v_grid(v, root, c);
    v_material(v, root, c);
    v_time(v, root, c);
    v_steady(v, root, c);
    v_initial(v, root, c);
    v_boundary(v, root, c);
    v_output(v, root, c);
    v_solver(v, root, c);
    /* Only when no stop rule is written at all: a bad one is reported already. */
    if (!config_lookup(cfg, "time.end") && !config_lookup(cfg, "time.max_steps") &&
        !config_lookup(cfg, "steady"))
        heat_error_append(v->err, HEAT_EINPUT,
                          "%s: nothing would stop the run: give time.end, time.max_steps or a "
                          "steady = { tolerance = ...; } group",
                          v->origin);
}

/* ------------------------------------------------------------- overrides */

static int copy_setting(config_setting_t *parent, const char *name, const config_setting_t *src)
{
    int type = config_setting_type(src);
    config_setting_t *d = config_setting_add(parent, name, type);
    if (!d) return -1;
    switch (type) {
    case CONFIG_TYPE_INT:
        return config_setting_set_int(d, config_setting_get_int(src)) ? 0 : -1;
    case CONFIG_TYPE_INT64:
        return config_setting_set_int64(d, config_setting_get_int64(src)) ? 0 : -1;
    case CONFIG_TYPE_FLOAT:
        return config_setting_set_float(d, config_setting_get_float(src)) ? 0 : -1;
    case CONFIG_TYPE_BOOL:
        return config_setting_set_bool(d, config_setting_get_bool(src)) ? 0 : -1;
    case CONFIG_TYPE_STRING:
        return config_setting_set_string(d, config_setting_get_string(src)) ? 0 : -1;
    default:
        for (int i = 0; i < config_setting_length(src); i++) {
            const config_setting_t *e = config_setting_get_elem(src, (unsigned)i);
            if (copy_setting(d, type == CONFIG_TYPE_GROUP ? config_setting_name(e) : NULL, e))
                return -1;
        }
        return 0;
    }
}

static int valid_name(const char *s)
{
    if (!isalpha((unsigned char)s[0]) && s[0] != '*') return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-' && *s != '*') return 0;
    return 1;
}

/* Parses one override value: libconfig syntax, or else a bare string. */
static int parse_value(config_t *tmp, const char *value)
{
    strbuf b = {0};
    sb_printf(&b, "v = %s;", value);
    int ok = b.s && config_read_string(tmp, b.s) == CONFIG_TRUE &&
             config_setting_length(config_root_setting(tmp)) == 1;
    free(b.s);
    if (ok) return 1;
    config_destroy(tmp);
    config_init(tmp);
    b = (strbuf){0};
    sb_printf(&b, "v = ");
    sb_quoted(&b, value);
    sb_printf(&b, ";");
    ok = b.s && config_read_string(tmp, b.s) == CONFIG_TRUE;
    free(b.s);
    return ok;
}

static int apply_set(config_t *cfg, const char *set, heat_error *err)
{
    const char *eq = strchr(set, '=');
    if (!eq)
        return heat_error_append(err, HEAT_EINPUT,
                                 "--set%s%s: expected key=value, e.g. --set time.end=2.0",
                                 set[0] ? " " : "", set);
    char key[512];
    size_t klen = (size_t)(eq - set);
    while (klen && isspace((unsigned char)set[klen - 1])) klen--;
    const char *value = eq + 1;
    while (isspace((unsigned char)*value)) value++;
    if (klen == 0 || klen >= sizeof key)
        return heat_error_append(err, HEAT_EINPUT, "--set %s: the key is empty or too long", set);
    memcpy(key, set, klen);
    key[klen] = '\0';
    if (!*value) return heat_error_append(err, HEAT_EINPUT, "--set %s: the value is empty", set);

    config_t tmp;
    config_init(&tmp);
    if (!parse_value(&tmp, value)) {
        config_destroy(&tmp);
        return heat_error_append(err, HEAT_EINPUT, "--set %s: cannot read the value %s", key,
                                 value);
    }
    const config_setting_t *src = config_lookup(&tmp, "v");

    config_setting_t *cur = config_root_setting(cfg);
    char *save = NULL, *tok = strtok_r(key, ".", &save);
    int rc = HEAT_OK;
    while (tok) {
        char *next = strtok_r(NULL, ".", &save);
        if (!valid_name(tok)) {
            rc = heat_error_append(err, HEAT_EINPUT, "--set %.*s: '%s' is not a valid key name",
                                   (int)klen, set, tok);
            break;
        }
        config_setting_t *m = config_setting_get_member(cur, tok);
        if (next) {
            if (!m)
                m = config_setting_add(cur, tok, CONFIG_TYPE_GROUP);
            else if (!config_setting_is_group(m)) {
                rc = heat_error_append(err, HEAT_EINPUT, "--set %.*s: '%s' is %s, not a group",
                                       (int)klen, set, tok, type_text(m));
                break;
            }
            cur = m;
        } else {
            if (m) config_setting_remove(cur, tok);
            if (copy_setting(cur, tok, src) != 0)
                rc = heat_error_append(err, HEAT_EINPUT, "--set %.*s: cannot store the value",
                                       (int)klen, set);
        }
        tok = next;
    }
    config_destroy(&tmp);
    return rc;
}

/* ------------------------------------------------------------------ load */

static int finish(config_t *cfg, const char *origin, const char *const *sets, int nsets,
                  heat_case *out, char **text_out, FILE *notices, heat_error *err)
{
    for (int i = 0; i < nsets; i++) apply_set(cfg, sets[i], err);
    if (err->code != HEAT_OK) return err->code;

    heat_case c;
    memset(&c, 0, sizeof c);
    vctx v = {origin, err, notices};
    validate(&v, cfg, &c);
    if (err->code != HEAT_OK) return err->code;
    *out = c;
    if (text_out) {
        *text_out = canonical_text(cfg, c.name);
        if (!*text_out) return heat_error_set(err, HEAT_ERUNTIME, "out of memory");
    }
    return HEAT_OK;
}

int heat_deck_load_string(const char *text, const char *origin, const char *const *sets, int nsets,
                          heat_case *out, char **text_out, FILE *notices, heat_error *err)
{
    heat_error_clear(err);
    config_t cfg;
    config_init(&cfg);
    if (config_read_string(&cfg, text) != CONFIG_TRUE) {
        heat_error_set(err, HEAT_EINPUT, "%s:%d: %s", origin, config_error_line(&cfg),
                       config_error_text(&cfg));
        config_destroy(&cfg);
        return HEAT_EINPUT;
    }
    int rc = finish(&cfg, origin, sets, nsets, out, text_out, notices, err);
    config_destroy(&cfg);
    return rc;
}

int heat_deck_load(const char *path, const char *const *sets, int nsets, heat_case *out,
                   char **text_out, FILE *notices, heat_error *err)
{
    if (!path)
        return heat_deck_load_string(heat_default_deck, HEAT_DEFAULT_DECK_NAME, sets, nsets, out,
                                     text_out, notices, err);
    heat_error_clear(err);
    FILE *f = fopen(path, "r");
    if (!f)
        return heat_error_set(err, HEAT_EINPUT, "%s: cannot open the deck: %s", path,
                              strerror(errno));
    fclose(f);
    config_t cfg;
    config_init(&cfg);
    /* @include "other.cfg" resolves next to the deck, as users expect. */
    char dir[HEAT_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
        config_set_include_dir(&cfg, dir);
    }
    if (config_read_file(&cfg, path) != CONFIG_TRUE) {
        const char *file = config_error_file(&cfg);
        heat_error_set(err, HEAT_EINPUT, "%s:%d: %s", file ? file : path, config_error_line(&cfg),
                       config_error_text(&cfg));
        config_destroy(&cfg);
        return HEAT_EINPUT;
    }
    int rc = finish(&cfg, path, sets, nsets, out, text_out, notices, err);
    config_destroy(&cfg);
    return rc;
}
