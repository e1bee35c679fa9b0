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
void heat_deck_sb_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends a string in libconfig's quotes, escaped. */
void heat_deck_sb_quoted(strbuf *b, const char *s);

/* Appends a setting's value in libconfig syntax, every number exact. */
void heat_deck_sb_value(strbuf *b, const config_setting_t *s, int indent);

/* The shortest "%.*g" text that reads back as exactly x (a float to libconfig). */
void heat_deck_fmt_double(char *buf, size_t n, double x);

/* The whole deck in libconfig syntax (malloc'd), with `name` written down
 * when the deck has none. */
char *heat_deck_canonical_text(const config_t *cfg, const char *name);

/* ---- checked reading (deck_get.c) ---- */

typedef struct vctx {
    const char *origin; /* deck file name or description, for messages */
    heat_error *err;
    FILE *notices;
    int restart; /* the deck of a file a restart continues: its initial field is never read */
} vctx;

#define MEMBER(g, k) config_setting_get_member((g), (k))

/* "deck.cfg:7", "--set" or the origin: where a setting was written. */
void heat_deck_where(const vctx *v, const config_setting_t *s, char *buf, size_t n);

/* The key path of a setting: "boundary.x_lo.value", "grid.points[2]". */
void heat_deck_path_of(const config_setting_t *s, char *buf, size_t n);

/* The setting's value as written, whole (malloc'd; NULL when out of memory). */
char *heat_deck_value_text(const config_setting_t *s);

/* "an integer", "a string", ...: the setting's type in words. */
const char *heat_deck_type_text(const config_setting_t *s);

/* Reports "<where>: <key> = <value>: <message>". */
void heat_deck_bad(vctx *v, const config_setting_t *s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Reports a missing key of `group`, saying what it should be. */
void heat_deck_missing(vctx *v, const config_setting_t *group, const char *key, const char *what);

/* Reports every member of `group` whose name is not in `allowed`
 * (NULL-terminated), with the nearest allowed name. */
void heat_deck_check_keys(vctx *v, const config_setting_t *group, const char *const *allowed,
                          const char *context);

/* A number setting (int, int64 or float) as a finite double: 1, or -1 with
 * the problem reported. */
int heat_deck_number_of(vctx *v, const config_setting_t *s, double *out);

/* An integer setting, or an integral float (1e5): 1 with *out, else 0. */
int heat_deck_as_int64(const config_setting_t *s, int64_t *out);

/* Why a setting that as_int64 refuses is not an integer, in words. */
const char *heat_deck_not_integer_text(const config_setting_t *s);

/* The getters return 1 when the key is there with a fitting type (and set
 * *out), 0 when it is absent (reported when `required`), -1 when it has the
 * wrong type (reported). */
int heat_deck_get_number(vctx *v, const config_setting_t *g, const char *key, int required,
                         double *out);
int heat_deck_get_int(vctx *v, const config_setting_t *g, const char *key, int required,
                      int64_t *out);
int heat_deck_get_string(vctx *v, const config_setting_t *g, const char *key, int required,
                         const char **out);
/* A string that must be one of `choices` (a NULL-terminated name table). */
int heat_deck_get_choice(vctx *v, const config_setting_t *g, const char *key, int required,
                         const char *const *choices, int *index);
/* Exactly three numbers (an array or a list). */
int heat_deck_get_triple(vctx *v, const config_setting_t *g, const char *key, int required,
                         double out[3], const char *what);
/* A member that must be a group; absent or of another type: NULL. */
const config_setting_t *heat_deck_get_group(vctx *v, const config_setting_t *g, const char *key,
                                            int required, const char *what);

/* ---- materials, regions, sources, probes (deck_materials.c) ---- */

void heat_deck_v_materials(vctx *v, const config_setting_t *root, heat_case *c);
void heat_deck_v_regions(vctx *v, const config_setting_t *root, heat_case *c);
void heat_deck_v_sources(vctx *v, const config_setting_t *root, heat_case *c);
void heat_deck_v_probes(vctx *v, const config_setting_t *root, heat_case *c);
/* Convective and flux faces and sources need a conductivity: an error for
 * each when the deck gives only a diffusivity. */
void heat_deck_check_conductivity(vctx *v, const config_setting_t *root, const heat_case *c);

/* ---- the schema (deck_schema.c) ---- */

/* Checks every section of the deck into *c, reporting every problem. */
void heat_deck_validate(vctx *v, const config_t *cfg, heat_case *c);

/* ---- integers as written (deck_ints.c) ---- */

/* A copy of deck text (malloc'd into *out) in which every integer literal
 * beyond 32 bits has the L suffix and every decimal one beyond 64 bits a
 * decimal point, so that libconfig 1.5 reads what is written, as 1.7 does.
 * HEAT_EINPUT ("origin:line: ...") for a hexadecimal literal beyond 64 bits. */
int heat_deck_widen_ints(const char *text, char **out, const char *origin, heat_error *err);

/* Checks the files that `text` (from `origin`) includes (@include "file",
 * relative to `dir`, recursively): HEAT_EINPUT naming the file and line of
 * a directive whose file cannot be read, or of an integer literal that
 * libconfig 1.5 would wrap. */
int heat_deck_check_includes(const char *text, const char *origin, const char *dir, int depth,
                             heat_error *err);

/* The whole text of a deck file (malloc'd), or NULL with HEAT_EINPUT in err
 * (err may be NULL): missing, unreadable, not text, over 64 MiB. */
char *heat_deck_read_text(const char *path, heat_error *err);

/* The `parallel` group (deck_parallel.c); after grid and solver. */
void validate_parallel(vctx *v, const config_setting_t *root, heat_case *c);

/* ---- overrides (deck_set.c) ---- */

/* Applies one "key=value" override to the deck; problems are appended to err. */
int heat_deck_apply_set(config_t *cfg, const char *set, heat_error *err);

#endif
