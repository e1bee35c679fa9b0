/* The deck as text: canonical libconfig syntax with every number exact. */
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

/* ------------------------------------------------------------------ text */

/* Shortest "%.*g" text that reads back as exactly x. */
void heat_deck_fmt_double(char *buf, size_t n, double x)
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

void heat_deck_sb_printf(strbuf *b, const char *fmt, ...)
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

void heat_deck_sb_quoted(strbuf *b, const char *s)
{
    heat_deck_sb_printf(b, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            heat_deck_sb_printf(b, "\\%c", *s);
        else if (*s == '\n')
            heat_deck_sb_printf(b, "\\n");
        else if (*s == '\t')
            heat_deck_sb_printf(b, "\\t");
        else if (*s == '\r')
            heat_deck_sb_printf(b, "\\r");
        else if ((unsigned char)*s < 0x20 || *s == 0x7f) /* libconfig reads \xNN back */
            heat_deck_sb_printf(b, "\\x%02x", (unsigned)(unsigned char)*s);
        else
            heat_deck_sb_printf(b, "%c", *s);
    }
    heat_deck_sb_printf(b, "\"");
}

/* Writes a setting's value in libconfig syntax (numbers exact). */
void heat_deck_sb_value(strbuf *b, const config_setting_t *s, int indent)
{
    char num[64];
    switch (config_setting_type(s)) {
    case CONFIG_TYPE_INT:
        heat_deck_sb_printf(b, "%d", config_setting_get_int(s));
        break;
    case CONFIG_TYPE_INT64:
        heat_deck_sb_printf(b, "%lldL", config_setting_get_int64(s));
        break;
    case CONFIG_TYPE_FLOAT:
        heat_deck_fmt_double(num, sizeof num, config_setting_get_float(s));
        heat_deck_sb_printf(b, "%s", num);
        break;
    case CONFIG_TYPE_BOOL:
        heat_deck_sb_printf(b, "%s", config_setting_get_bool(s) ? "true" : "false");
        break;
    case CONFIG_TYPE_STRING:
        heat_deck_sb_quoted(b, config_setting_get_string(s));
        break;
    case CONFIG_TYPE_ARRAY:
    case CONFIG_TYPE_LIST: {
        int list = config_setting_type(s) == CONFIG_TYPE_LIST;
        heat_deck_sb_printf(b, list ? "(" : "[");
        for (int i = 0; i < config_setting_length(s); i++) {
            if (i) heat_deck_sb_printf(b, ", ");
            heat_deck_sb_value(b, config_setting_get_elem(s, (unsigned)i), indent);
        }
        heat_deck_sb_printf(b, list ? ")" : "]");
        break;
    }
    case CONFIG_TYPE_GROUP:
        heat_deck_sb_printf(b, "{\n");
        for (int i = 0; i < config_setting_length(s); i++) {
            const config_setting_t *m = config_setting_get_elem(s, (unsigned)i);
            heat_deck_sb_printf(b, "%*s%s = ", indent + 2, "", config_setting_name(m));
            heat_deck_sb_value(b, m, indent + 2);
            heat_deck_sb_printf(b, ";\n");
        }
        heat_deck_sb_printf(b, "%*s}", indent, "");
        break;
    default:
        heat_deck_sb_printf(b, "?");
    }
}

char *heat_deck_canonical_text(const config_t *cfg, const char *name)
{
    strbuf b = {0};
    const config_setting_t *root = config_root_setting(cfg);
    /* A name taken from the deck's file name is written down, so that the text
     * gives the same case wherever it is loaded from again. */
    if (!config_setting_get_member(root, "name")) {
        heat_deck_sb_printf(&b, "name = ");
        heat_deck_sb_quoted(&b, name);
        heat_deck_sb_printf(&b, ";\n");
    }
    for (int i = 0; i < config_setting_length(root); i++) {
        const config_setting_t *m = config_setting_get_elem(root, (unsigned)i);
        heat_deck_sb_printf(&b, "%s = ", config_setting_name(m));
        heat_deck_sb_value(&b, m, 0);
        heat_deck_sb_printf(&b, ";\n");
    }
    if (!b.s) heat_deck_sb_printf(&b, "%s", "");
    return b.s;
}
