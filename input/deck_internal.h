/* The deck module's inside, shared by its files: the canonical text
 * (deck_text.c), the checked getters every section uses (deck_get.c), the
 * sections of the schema (deck_schema.c), --set (deck_set.c) and loading
 * (deck.c). Private to input/. */
#ifndef HEAT_DECK_INTERNAL_H
#define HEAT_DECK_INTERNAL_H

#include <libconfig.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "deck.h"

/* ---- text (deck_text.c) ---- */

typedef struct strbuf {
    char *s;
    size_t len, cap;
} strbuf;

/* Appends printf-style text (grows the buffer; on failure leaves it as it was). */
void sb_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends a string in libconfig's quotes, escaped. */
void sb_quoted(strbuf *b, const char *s);

/* Appends a setting's value in libconfig syntax, every number exact. */
void sb_value(strbuf *b, const config_setting_t *s, int indent);

/* The shortest "%.*g" text that reads back as exactly x (a float to libconfig). */
void fmt_double(char *buf, size_t n, double x);

/* The whole deck in libconfig syntax (malloc'd), with `name` written down
 * when the deck has none. */
char *canonical_text(const config_t *cfg, const char *name);

/* ---- checked reading (deck_get.c) ---- */

typedef struct vctx {
    const char *origin; /* deck file name or description, for messages */
    heat_error *err;
    FILE *notices;
} vctx;

#define MEMBER(g, k) config_setting_get_member((g), (k))

/* "deck.cfg:7", "--set" or the origin: where a setting was written. */
void where(const vctx *v, const config_setting_t *s, char *buf, size_t n);

/* The key path of a setting: "boundary.x_lo.value", "grid.points[2]". */
void path_of(const config_setting_t *s, char *buf, size_t n);

/* The setting's value as written, whole. */
void value_text(const config_setting_t *s, char *buf, size_t n);

/* "an integer", "a string", ...: the setting's type in words. */
const char *type_text(const config_setting_t *s);

/* Reports "<where>: <key> = <value>: <message>". */
void bad(vctx *v, const config_setting_t *s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Reports a missing key of `group`, saying what it should be. */
void missing(vctx *v, const config_setting_t *group, const char *key, const char *what);

/* Reports every member of `group` whose name is not in `allowed`
 * (NULL-terminated), with the nearest allowed name. */
void check_keys(vctx *v, const config_setting_t *group, const char *const *allowed,
                const char *context);

/* A number setting (int, int64 or float) as a finite double: 1, or -1 with
 * the problem reported. */
int number_of(vctx *v, const config_setting_t *s, double *out);

/* An integer setting, or an integral float (1e5): 1 with *out, else 0. */
int as_int64(const config_setting_t *s, int64_t *out);

/* The getters return 1 when the key is there with a fitting type (and set
 * *out), 0 when it is absent (reported when `required`), -1 when it has the
 * wrong type (reported). */
int get_number(vctx *v, const config_setting_t *g, const char *key, int required, double *out);
int get_int(vctx *v, const config_setting_t *g, const char *key, int required, int64_t *out);
int get_string(vctx *v, const config_setting_t *g, const char *key, int required, const char **out);
/* A string that must be one of `choices` (a NULL-terminated name table). */
int get_choice(vctx *v, const config_setting_t *g, const char *key, int required,
               const char *const *choices, int *index);
/* Exactly three numbers (an array or a list). */
int get_triple(vctx *v, const config_setting_t *g, const char *key, int required, double out[3],
               const char *what);
/* A member that must be a group; absent or of another type: NULL. */
const config_setting_t *get_group(vctx *v, const config_setting_t *g, const char *key, int required,
                                  const char *what);

/* ---- the schema (deck_schema.c) ---- */

/* Checks every section of the deck into *c, reporting every problem. */
void validate(vctx *v, const config_t *cfg, heat_case *c);

/* The `parallel` group (deck_parallel.c); after grid and solver. */
void validate_parallel(vctx *v, const config_setting_t *root, heat_case *c);

/* ---- overrides (deck_set.c) ---- */

/* Applies one "key=value" override to the deck; problems are appended to err. */
int apply_set(config_t *cfg, const char *set, heat_error *err);

#endif
