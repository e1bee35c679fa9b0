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
                                       (int)klen, set, tok, heat_deck_type_text(m));
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
