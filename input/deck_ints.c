/* Integers as written, with every libconfig.
 *
 * libconfig 1.5 (Debian 12) reads an integer literal without the L suffix as
 * a 32-bit int and wraps what does not fit: `max_steps = 4294967297` reads as
 * 1, `value = 4294967396` as 100. libconfig 1.7 promotes such literals to 64
 * bits. So that a deck means the same everywhere, its text is scanned before
 * libconfig reads it: a literal beyond 32 bits gets the L suffix (a 64-bit
 * integer, exact), and one beyond 64 bits a decimal point (a number, which an
 * integer key then refuses naming itself). Included files are read by
 * libconfig itself, so there such a literal is an error asking for the
 * suffix. */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "deck_internal.h"

typedef struct scan {
    const char *p;   /* the text */
    size_t i;        /* where the scan is */
    int line;        /* of p[i] */
    strbuf out;      /* the text with suffixes added */
    size_t copied;   /* p[0..copied) is in out */
    int rewrite;     /* add suffixes (else: report the first literal needing one) */
    int dry;         /* only find out what the literals need (an array's first pass) */
    int need;        /* the widest suffix a literal needs: 0, 1 (L), 2 (decimal point) */
    int array_need;  /* inside an array: what every integer gets (libconfig's arrays hold
                        one type) */
    const char *bad; /* a literal that needs a suffix (rewrite == 0) */
    size_t bad_len;
    int bad_line;
} scan;

static int name_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '*' || c == '-';
}

/* Skips a string, a comment or a name at s->i; 1 when it did. */
static int skip_non_number(scan *s)
{
    const char *p = s->p;
    size_t i = s->i;
    if (p[i] == '"') {
        for (i++; p[i] && p[i] != '"'; i++) {
            if (p[i] == '\\' && p[i + 1]) i++;
            if (p[i] == '\n') s->line++;
        }
    } else if (p[i] == '#' || (p[i] == '/' && p[i + 1] == '/')) {
        while (p[i] && p[i] != '\n') i++;
        s->i = i;
        return 1;
    } else if (p[i] == '/' && p[i + 1] == '*') {
        for (i += 2; p[i] && !(p[i] == '*' && p[i + 1] == '/'); i++)
            if (p[i] == '\n') s->line++;
        if (p[i]) i++;
    } else if (isalpha((unsigned char)p[i]) || p[i] == '_' || p[i] == '*' || p[i] == '@') {
        i++;
        while (name_char(p[i])) i++;
        s->i = i;
        return 1;
    } else {
        return 0;
    }
    s->i = p[i] ? i + 1 : i;
    return 1;
}

/* The magnitude of the digits p[a..b) in `base`; *over when beyond 2^64. */
static uint64_t magnitude(const char *p, size_t a, size_t b, int base, int *over)
{
    uint64_t v = 0;
    *over = 0;
    for (size_t i = a; i < b; i++) {
        int d = isdigit((unsigned char)p[i]) ? p[i] - '0' : tolower((unsigned char)p[i]) - 'a' + 10;
        if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base) *over = 1;
        v = v * (uint64_t)base + (uint64_t)d;
    }
    return v;
}

/* A number at s->i (digits, or a sign before them): an integer literal that
 * does not fit 32 bits gets its suffix. */
static void scan_number(scan *s)
{
    const char *p = s->p;
    size_t start = s->i, i = s->i;
    int neg = 0;
    if (p[i] == '-' || p[i] == '+') neg = p[i++] == '-';
    int base = 10;
    size_t a = i;
    if (p[i] == '0' && (p[i + 1] == 'x' || p[i + 1] == 'X')) base = 16, i += 2, a = i;
    while (base == 16 ? isxdigit((unsigned char)p[i]) : isdigit((unsigned char)p[i])) i++;
    size_t b = i;
    s->i = i;
    if (base == 10 && (p[i] == '.' || p[i] == 'e' || p[i] == 'E')) {
        /* A float: its fraction and exponent are digits of no concern. */
        while (isalnum((unsigned char)p[s->i]) || p[s->i] == '.' ||
               ((p[s->i] == '-' || p[s->i] == '+') && tolower((unsigned char)p[s->i - 1]) == 'e'))
            s->i++;
        return;
    }
    int over;
    uint64_t v = magnitude(p, a, b, base, &over);
    int has_l = p[i] == 'L';
    int fits32 = !over && (base == 16 ? v <= INT32_MAX
                                      : (neg ? v <= (uint64_t)INT32_MAX + 1 : v <= INT32_MAX));
    int fits64 = !over && (neg ? v <= (uint64_t)INT64_MAX + 1 : v <= INT64_MAX);
    int need = fits32 || (has_l && fits64) ? 0 : fits64 ? 1 : 2;
    if (need > s->need) s->need = need;
    if (s->dry) return;
    if (need < s->array_need && !has_l) need = s->array_need;
    if (need == 0) return;
    const char *suffix = need == 1 ? "L" : (base == 10 && !has_l ? ".0" : NULL);
    if (!s->rewrite || !suffix || has_l) {
        /* Nothing to add: remember it for the error. */
        if (!s->bad)
            s->bad = p + start, s->bad_len = i - start + (size_t)has_l, s->bad_line = s->line;
        return;
    }
    heat_deck_sb_printf(&s->out, "%.*s%s", (int)(b - s->copied), p + s->copied, suffix);
    s->copied = b;
}

/* Scans the whole text; see the top of the file. In an array, a first dry
 * pass finds the widest suffix its integers need, so that all get it. */
static void scan_text(scan *s)
{
    const char *p = s->p;
    while (p[s->i]) {
        char c = p[s->i];
        if (c == '[' && !s->dry) {
            scan a = *s;
            a.dry = 1;
            a.need = 0;
            a.i++;
            while (p[a.i] && p[a.i] != ']') {
                if (!skip_non_number(&a)) {
                    if (isdigit((unsigned char)p[a.i]) ||
                        ((p[a.i] == '-' || p[a.i] == '+') && isdigit((unsigned char)p[a.i + 1])))
                        scan_number(&a);
                    else
                        a.i++;
                }
            }
            s->array_need = a.need;
            s->i++;
        } else if (c == ']') {
            s->array_need = 0;
            s->i++;
        } else if (c == '\n') {
            s->line++;
            s->i++;
        } else if (skip_non_number(s)) {
        } else if (isdigit((unsigned char)c) ||
                   ((c == '-' || c == '+') && isdigit((unsigned char)p[s->i + 1]))) {
            scan_number(s);
        } else {
            s->i++;
        }
    }
}

int heat_deck_widen_ints(const char *text, char **out, const char *origin, heat_error *err)
{
    scan s = {.p = text, .line = 1, .rewrite = 1};
    scan_text(&s);
    if (s.bad) {
        free(s.out.s);
        return heat_error_set(err, HEAT_EINPUT,
                              "%s:%d: %.*s: an integer beyond 64 bits (at most "
                              "9223372036854775807); write a number with a decimal point",
                              origin, s.bad_line, (int)s.bad_len, s.bad);
    }
    heat_deck_sb_printf(&s.out, "%s", text + s.copied);
    if (!s.out.s) return heat_error_set(err, HEAT_ERUNTIME, "out of memory");
    *out = s.out.s;
    return HEAT_OK;
}

/* The line of `text` that `at` lies on, counted from 1, and whether only
 * blanks come before `at` on it (where libconfig takes a directive). */
static int line_of(const char *text, const char *at, int *first)
{
    int line = 1;
    const char *start = text;
    for (const char *p = text; p < at; p++)
        if (*p == '\n') line++, start = p + 1;
    *first = 1;
    for (const char *p = start; p < at; p++)
        if (*p != ' ' && *p != '\t') *first = 0;
    return line;
}

/* The `@include "file"` directives of `text`, each checked (recursively, as
 * libconfig reads them, relative to `dir`) for a file that cannot be read
 * and for literals that libconfig 1.5 would wrap. */
int heat_deck_check_includes(const char *text, const char *origin, const char *dir, int depth,
                             heat_error *err)
{
    for (const char *p = text; (p = strstr(p, "@include")); p += 8) {
        const char *q = strchr(p, '"'), *e = q ? strchr(q + 1, '"') : NULL;
        if (!q || !e || depth > 10) continue; /* libconfig reports it */
        int first;
        const int line = line_of(text, p, &first);
        char path[HEAT_PATH_MAX];
        snprintf(path, sizeof path, "%s%s%.*s", q[1] == '/' || !dir ? "" : dir,
                 q[1] == '/' || !dir ? "" : "/", (int)(e - q - 1), q + 1);
        heat_error why;
        char *inc = heat_deck_read_text(path, &why);
        if (!inc) {
            /* a directive (not one in a comment or a string): libconfig would
             * say "cannot open include file" without naming it */
            if (first && !memchr(p, '\n', (size_t)(q - p)))
                return heat_error_set(err, HEAT_EINPUT, "%s:%d: @include \"%.*s\": %s", origin,
                                      line, (int)(e - q - 1), q + 1, why.msg);
            continue;
        }
        scan s = {.p = inc, .line = 1};
        scan_text(&s);
        int rc = HEAT_OK;
        if (s.bad)
            rc = heat_error_set(err, HEAT_EINPUT,
                                "%s:%d: %.*s: an integer beyond 32 bits in an included file: "
                                "write it with the L suffix (%.*sL), or with a decimal point for "
                                "a number",
                                path, s.bad_line, (int)s.bad_len, s.bad, (int)s.bad_len, s.bad);
        if (!rc) rc = heat_deck_check_includes(inc, path, dir, depth + 1, err);
        free(inc);
        if (rc) return rc;
    }
    return HEAT_OK;
}

char *heat_deck_read_text(const char *path, heat_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        heat_error_set(err, HEAT_EINPUT, "%s: cannot open the deck: %s", path, strerror(errno));
        return NULL;
    }
    strbuf b = {0};
    char chunk[65536];
    size_t n;
    const char *why = NULL;
    while (!why && (n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (memchr(chunk, '\0', n))
            why = "it holds NUL bytes: not a text file";
        else if (b.len + n > (64u << 20))
            why = "more than 64 MiB: not a deck";
        else
            heat_deck_sb_printf(&b, "%.*s", (int)n, chunk);
    }
    if (!why && ferror(f)) why = strerror(errno);
    fclose(f);
    if (!why && !b.s) heat_deck_sb_printf(&b, "%s", "");
    if (!why && !b.s) why = "out of memory";
    if (why) {
        free(b.s);
        heat_error_set(err, HEAT_EINPUT, "%s: cannot read the deck: %s", path, why);
        return NULL;
    }
    return b.s;
}
