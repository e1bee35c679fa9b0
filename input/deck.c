/* Deck loading: parse, apply the overrides, check, canonical text. See
 * deck.h for the contract. */
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

/* ------------------------------------------------------------------ load */

static int finish(config_t *cfg, const char *origin, const char *const *sets, int nsets,
                  heat_case *out, char **text_out, FILE *notices, int restart, heat_error *err)
{
    for (int i = 0; i < nsets; i++) heat_deck_apply_set(cfg, sets[i], err);
    if (err->code != HEAT_OK) return err->code;

    heat_case c;
    memset(&c, 0, sizeof c);
    vctx v = {origin, err, notices, restart};
    heat_deck_validate(&v, cfg, &c);
    if (err->code != HEAT_OK) return err->code;
    *out = c;
    if (text_out) {
        *text_out = heat_deck_canonical_text(cfg, c.name);
        if (!*text_out) return heat_error_set(err, HEAT_ERUNTIME, "out of memory");
    }
    return HEAT_OK;
}

/* What libconfig's terse messages mean, where one helps. */
static const char *parse_hint(const char *what)
{
    if (!what) return "";
    if (strstr(what, "duplicate setting"))
        return " (a key given twice in one group; the second is on this line)";
    if (strstr(what, "mismatched element type"))
        return " (an array's elements are all of one type: write 1.0, not 1, beside numbers with "
               "a decimal point)";
    if (strstr(what, "syntax error"))
        return " (on this line or just before it: a missing ';', '=', quote or closing bracket?)";
    return "";
}

/* Parses deck text (its integers widened first, deck_ints.c) into cfg;
 * `dir` is where @include looks (NULL: the working directory). */
static int parse_text(config_t *cfg, const char *text, const char *origin, const char *dir,
                      heat_error *err)
{
    char *wide = NULL;
    int rc = heat_deck_widen_ints(text, &wide, origin, err);
    if (!rc) rc = heat_deck_check_includes(text, origin, dir, 0, err);
    if (rc) {
        free(wide);
        return rc;
    }
    if (dir) config_set_include_dir(cfg, dir);
    if (config_read_string(cfg, wide) != CONFIG_TRUE) {
        const char *file = config_error_file(cfg);
        const int line = config_error_line(cfg);
        rc = heat_error_set(err, HEAT_EINPUT, "%s:%d: %s%s", file ? file : origin, line,
                            config_error_text(cfg), parse_hint(config_error_text(cfg)));
        /* the line itself: libconfig names neither the key nor the value */
        char *inc = file ? heat_deck_read_text(file, NULL) : NULL;
        const char *src = file ? inc : text;
        for (int l = 1; src && *src && l < line; src++)
            if (*src == '\n') l++;
        if (src && *src && *src != '\n') {
            const int len = (int)strcspn(src, "\r\n");
            heat_error_append(err, HEAT_EINPUT, "    %.*s", len, src);
        }
        free(inc);
    }
    free(wide);
    return rc;
}

static int load_string(const char *text, const char *origin, const char *const *sets, int nsets,
                       heat_case *out, char **text_out, FILE *notices, int restart, heat_error *err)
{
    heat_error_clear(err);
    config_t cfg;
    config_init(&cfg);
    int rc = parse_text(&cfg, text, origin, NULL, err);
    if (!rc) rc = finish(&cfg, origin, sets, nsets, out, text_out, notices, restart, err);
    config_destroy(&cfg);
    return rc;
}

int heat_deck_load_string(const char *text, const char *origin, const char *const *sets, int nsets,
                          heat_case *out, char **text_out, FILE *notices, heat_error *err)
{
    return load_string(text, origin, sets, nsets, out, text_out, notices, 0, err);
}

int heat_deck_load_restart(const char *text, const char *origin, const char *const *sets, int nsets,
                           heat_case *out, char **text_out, FILE *notices, heat_error *err)
{
    return load_string(text, origin, sets, nsets, out, text_out, notices, 1, err);
}

int heat_deck_load(const char *path, const char *const *sets, int nsets, heat_case *out,
                   char **text_out, FILE *notices, heat_error *err)
{
    if (!path)
        return heat_deck_load_string(heat_default_deck, HEAT_DEFAULT_DECK_NAME, sets, nsets, out,
                                     text_out, notices, err);
    heat_error_clear(err);
    char *text = heat_deck_read_text(path, err);
    if (!text) return HEAT_EINPUT;
    config_t cfg;
    config_init(&cfg);
    /* @include "other.cfg" resolves next to the deck, as users expect. */
    char dir[HEAT_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    int rc = parse_text(&cfg, text, path, slash ? dir : NULL, err);
    if (!rc) rc = finish(&cfg, path, sets, nsets, out, text_out, notices, 0, err);
    config_destroy(&cfg);
    free(text);
    return rc;
}
