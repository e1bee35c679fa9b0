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
