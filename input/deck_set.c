/* --set key=value: overrides applied to the parsed deck before it is checked. */
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

/* Whether a value is meant as libconfig syntax: one that opens a string,
 * array, list or group, or ends a statement, is not a bare word, and a
 * mistake in it must not turn it into a string. */
/* The length of s[0, n) without its trailing blanks. */
static size_t trimmed(const char *s, size_t n)
{
    while (n && isspace((unsigned char)s[n - 1])) n--;
    return n;
}

static int looks_like_syntax(const char *value)
{
    const size_t n = trimmed(value, strlen(value));
    return (value[0] && strchr("\"[({", value[0])) || (n && value[n - 1] == ';');
}

/* Parses one override value into tmp's setting v: libconfig syntax, or else
 * a bare word taken as a string. HEAT_EINPUT, naming key and value, for one
 * that looks like syntax but does not parse. */
static int parse_value(config_t *tmp, const char *key, const char *value, heat_error *err)
{
    strbuf b = {0};
    heat_deck_sb_printf(&b, "v = %s;", value);
    char *wide = NULL;
    heat_error werr;
    heat_error_clear(&werr);
    int ok = b.s && heat_deck_widen_ints(b.s, &wide, "--set", &werr) == HEAT_OK &&
             config_read_string(tmp, wide) == CONFIG_TRUE &&
             config_setting_length(config_root_setting(tmp)) == 1;
    free(wide);
    free(b.s);
    if (ok) return HEAT_OK;
    if (looks_like_syntax(value)) {
        const char *why = werr.code                ? werr.msg
                          : config_error_text(tmp) ? config_error_text(tmp)
                                                   : "it does not parse";
        const size_t n = trimmed(value, strlen(value));
        if (n && value[n - 1] == ';') {
            const size_t m = trimmed(value, n - 1);
            return heat_error_append(err, HEAT_EINPUT,
                                     "--set %s=%s: the value ends with ';': give it without, as "
                                     "--set %s=%.*s",
                                     key, value, key, (int)m, value);
        }
        return heat_error_append(
            err, HEAT_EINPUT,
            "--set %s=%s: cannot read the value: %s (expected a number, "
            "true or false, a \"string\" in both quotes, an [array] of one type, a "
            "(list) or a {group}; a bare word without quotes is a string)",
            key, value, why);
    }
    config_destroy(tmp);
    config_init(tmp);
    b = (strbuf){0};
    heat_deck_sb_printf(&b, "v = ");
    heat_deck_sb_quoted(&b, value);
    heat_deck_sb_printf(&b, ";");
    ok = b.s && config_read_string(tmp, b.s) == CONFIG_TRUE;
    free(b.s);
    return ok ? HEAT_OK
              : heat_error_append(err, HEAT_EINPUT, "--set %s: cannot read the value %s", key,
                                  value);
}

/* One part of a --set key: a name, or the index of an element of a list or
 * array, written name[i] (as heat's messages write it) or name.[i] (as
 * libconfig's paths do). */
typedef struct {
    const char *name; /* NULL: an index */
    long index;
} key_step;

#define KEY_STEPS 64

static int too_many(const char *set, int klen, heat_error *err)
{
    return heat_error_append(err, HEAT_EINPUT, "--set %.*s: the key has more than %d parts", klen,
                             set, KEY_STEPS);
}

/* Splits key (modified in place) into steps. HEAT_EINPUT, naming the key,
 * for a part that is neither a valid name nor an index. */
static int split_key(char *key, const char *set, int klen, key_step *steps, int *n, heat_error *err)
{
    *n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(key, ".", &save); tok; tok = strtok_r(NULL, ".", &save)) {
        char part[512];
        snprintf(part, sizeof part, "%s", tok);
        char *br = strchr(tok, '[');
        if (br != tok) {
            if (br) *br = '\0';
            if (!valid_name(tok))
                return heat_error_append(
                    err, HEAT_EINPUT, "--set %.*s: '%s' is not a valid key name", klen, set, part);
            if (*n == KEY_STEPS) return too_many(set, klen, err);
            steps[(*n)++] = (key_step){tok, 0};
        }
        /* q: just after a '[' */
        for (char *q = br ? br + 1 : NULL; q;) {
            char *end = NULL;
            errno = 0;
            const long i = isdigit((unsigned char)*q) ? strtol(q, &end, 10) : -1;
            if (i < 0 || errno || *end != ']' || (end[1] && end[1] != '['))
                return heat_error_append(err, HEAT_EINPUT,
                                         "--set %.*s: '%s' is not a valid key name or element "
                                         "(write name, name[i] or name.[i], i from 0)",
                                         klen, set, part);
            if (*n == KEY_STEPS) return too_many(set, klen, err);
            steps[(*n)++] = (key_step){NULL, i};
            q = end[1] ? end + 2 : NULL;
        }
    }
    if (*n && !steps[0].name)
        return heat_error_append(err, HEAT_EINPUT,
                                 "--set %.*s: a key starts with a name (name[i]), not an element",
                                 klen, set);
    return HEAT_OK;
}

static int is_seq(const config_setting_t *s)
{
    return config_setting_is_list(s) || config_setting_is_array(s);
}

/* Numbers change their type in place (the element's value kept): an
 * integer to a 64-bit one or to a number. libconfig has no call for it. */
static void retype_number(config_setting_t *e, int type)
{
    const int t = config_setting_type(e);
    if (t == type || (t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64)) return;
    const long long v = t == CONFIG_TYPE_INT ? e->value.ival : e->value.llval;
    if (type == CONFIG_TYPE_FLOAT)
        e->value.fval = (double)v;
    else
        e->value.llval = v;
    e->type = (short)type;
}

/* Element e (of parent, a list or array) to a numeric type: an array's
 * elements all share one type, so there every element changes. */
static void widen_element(config_setting_t *parent, config_setting_t *e, int type)
{
    if (!config_setting_is_array(parent)) {
        retype_number(e, type);
        return;
    }
    for (int i = 0; i < config_setting_length(parent); i++)
        retype_number(config_setting_get_elem(parent, (unsigned)i), type);
}

/* Stores scalar src into scalar element e of parent. Numbers go into
 * numbers: an integer into a number's place as that number, a number or a
 * large integer into an integer's place by widening the element (the whole
 * array), so that the deck's checks judge the value as they would the whole
 * list given with it. Strings and booleans only where one was. 0 on
 * success. */
static int set_scalar(config_setting_t *parent, config_setting_t *e, const config_setting_t *src)
{
    const int te = config_setting_type(e), ts = config_setting_type(src);
    const int ie = te == CONFIG_TYPE_INT || te == CONFIG_TYPE_INT64;
    const int is = ts == CONFIG_TYPE_INT || ts == CONFIG_TYPE_INT64;
    if ((ie || te == CONFIG_TYPE_FLOAT) && (is || ts == CONFIG_TYPE_FLOAT)) {
        if (ts == CONFIG_TYPE_FLOAT || te == CONFIG_TYPE_FLOAT) {
            widen_element(parent, e, CONFIG_TYPE_FLOAT);
            return !config_setting_set_float(e, is ? (double)config_setting_get_int64(src)
                                                   : config_setting_get_float(src));
        }
        const long long v = config_setting_get_int64(src);
        if (te == CONFIG_TYPE_INT && v >= INT32_MIN && v <= INT32_MAX)
            return !config_setting_set_int(e, (int)v);
        widen_element(parent, e, CONFIG_TYPE_INT64);
        e->value.llval = v;
        return 0;
    }
    if (te == CONFIG_TYPE_BOOL && ts == CONFIG_TYPE_BOOL)
        return !config_setting_set_bool(e, config_setting_get_bool(src));
    if (te == CONFIG_TYPE_STRING && ts == CONFIG_TYPE_STRING)
        return !config_setting_set_string(e, config_setting_get_string(src));
    return -1;
}

/* Replaces element e (a group, list or array) by src of the same kind:
 * its members or elements go, src's are copied in. 0 on success. */
static int set_aggregate(config_setting_t *e, const config_setting_t *src)
{
    while (config_setting_length(e) > 0) config_setting_remove_elem(e, 0);
    const int group = config_setting_is_group(e);
    for (int i = 0; i < config_setting_length(src); i++) {
        const config_setting_t *m = config_setting_get_elem(src, (unsigned)i);
        if (copy_setting(e, group ? config_setting_name(m) : NULL, m)) return -1;
    }
    return 0;
}

/* Walks the key's steps from the root, creating groups for missing names
 * (not lists: an index needs a list that is there), and stores src at the
 * last step. */
static int set_path(config_setting_t *cur, char *key, const char *set, int klen,
                    const config_setting_t *src, heat_error *err)
{
    key_step steps[KEY_STEPS];
    int n = 0;
    int rc = split_key(key, set, klen, steps, &n, err);
    if (rc || n == 0)
        return rc ? rc : heat_error_append(err, HEAT_EINPUT, "--set %.*s: no key", klen, set);
    char here[512];
    for (int k = 0; k < n; k++) {
        const key_step *st = &steps[k];
        const int last = k == n - 1;
        config_setting_t *m;
        if (st->name) {
            m = config_setting_get_member(cur, st->name);
            if (last) {
                if (m) config_setting_remove(cur, st->name);
                if (copy_setting(cur, st->name, src) != 0)
                    return heat_error_append(err, HEAT_EINPUT, "--set %.*s: cannot store the value",
                                             klen, set);
                return HEAT_OK;
            }
            if (!m && steps[k + 1].name) m = config_setting_add(cur, st->name, CONFIG_TYPE_GROUP);
            if (!m) {
                char parent[512];
                heat_deck_path_of(cur, parent, sizeof parent);
                snprintf(here, sizeof here, "%s%s%s", parent, parent[0] ? "." : "", st->name);
                return heat_error_append(err, HEAT_EINPUT,
                                         "--set %.*s: the deck has no %s to take an element of: "
                                         "give the whole list (--set %s=(...))",
                                         klen, set, here, here);
            }
        } else {
            const int len = config_setting_length(cur);
            if (st->index >= len) {
                heat_deck_path_of(cur, here, sizeof here);
                if (len == 0)
                    return heat_error_append(
                        err, HEAT_EINPUT, "--set %.*s: %s has no elements: give the whole %s", klen,
                        set, here, config_setting_is_array(cur) ? "array" : "list");
                if (len == 1)
                    return heat_error_append(err, HEAT_EINPUT, "--set %.*s: %s has 1 element, [0]",
                                             klen, set, here);
                return heat_error_append(err, HEAT_EINPUT,
                                         "--set %.*s: %s has %d elements, [0] to [%d]", klen, set,
                                         here, len, len - 1);
            }
            m = config_setting_get_elem(cur, (unsigned)st->index);
            heat_deck_path_of(m, here, sizeof here);
            if (last) {
                const int agg = config_setting_is_aggregate(m),
                          sagg = config_setting_is_aggregate(src);
                /* a group for a group; an array (of one type) for an
                 * array; a list or an array for a list */
                const int same = agg && sagg &&
                                 config_setting_is_group(m) == config_setting_is_group(src) &&
                                 (!config_setting_is_array(m) || config_setting_is_array(src));
                if (same ? set_aggregate(m, src) : agg || sagg ? -1 : set_scalar(cur, m, src))
                    return heat_error_append(
                        err, HEAT_EINPUT,
                        "--set %s: %s is %s and the value is %s: an element takes a value of "
                        "its own kind (integers and numbers count as one); to change its kind, "
                        "give the whole %s",
                        set, here, heat_deck_type_text(m), heat_deck_type_text(src),
                        config_setting_is_array(cur) ? "array" : "list");
                /* messages now say --set, as for a key it adds; an array's
                 * checks show it whole */
                m->line = 0;
                if (config_setting_is_array(cur)) cur->line = 0;
                return HEAT_OK;
            }
        }
        const int want_group = steps[k + 1].name != NULL;
        heat_deck_path_of(m, here, sizeof here);
        if (want_group && !config_setting_is_group(m))
            return heat_error_append(err, HEAT_EINPUT, "--set %.*s: %s is %s, not a group", klen,
                                     set, here, heat_deck_type_text(m));
        if (!want_group && !is_seq(m))
            return heat_error_append(err, HEAT_EINPUT,
                                     "--set %.*s: %s is %s, not a list or an array", klen, set,
                                     here, heat_deck_type_text(m));
        cur = m;
    }
    return HEAT_OK;
}

int heat_deck_apply_set(config_t *cfg, const char *set, heat_error *err)
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
    /* strtok_r below would merge empty parts: time..end must not pass as time.end. */
    if (key[0] == '.' || key[klen - 1] == '.' || strstr(key, ".."))
        return heat_error_append(err, HEAT_EINPUT,
                                 "--set %s: the key %s has an empty part (a dot at its start or "
                                 "end, or two dots in a row): write group.key, e.g. "
                                 "--set time.end=2.0",
                                 set, key);
    if (!*value) return heat_error_append(err, HEAT_EINPUT, "--set %s: the value is empty", set);

    config_t tmp;
    config_init(&tmp);
    int prc = parse_value(&tmp, key, value, err);
    if (prc) {
        config_destroy(&tmp);
        return prc;
    }
    const config_setting_t *src = config_lookup(&tmp, "v");
    int rc = set_path(config_root_setting(cfg), key, set, (int)klen, src, err);
    config_destroy(&tmp);
    return rc;
}
