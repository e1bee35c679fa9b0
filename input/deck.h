/* The input deck: libconfig text + --set overrides -> a validated heat_case.
 *
 * Every key of the deck is checked: an unknown key, a wrong type or a value
 * out of range is reported with the deck file and line (or "--set" for an
 * override), the key path, the value and what is allowed. All problems found
 * are reported together, one per line, in err->msg with code HEAT_EINPUT.
 * The schema itself is documented in docs/DECK.md.
 */
#ifndef HEAT_DECK_H
#define HEAT_DECK_H

#include <stdio.h>

#include "heat_case.h"
#include "heat_error.h"

/* The built-in default deck that `heat run` uses when no deck is given. */
extern const char heat_default_deck[];
#define HEAT_DEFAULT_DECK_NAME "default"

/* Parses a deck file, applies the overrides ("key=value" strings, in order),
 * validates everything and fills *out.
 *   path       deck file, or NULL for the built-in default deck
 *   sets       nsets override strings; a value is libconfig syntax
 *              (1.5, [64, 64, 1], "float") or a bare word taken as a string
 *   text_out   if not NULL, receives a malloc'd canonical text of the deck
 *              after overrides (libconfig syntax, all numbers exact), which
 *              reproduces *out when loaded again; caller frees
 *   notices    if not NULL, receives one line per harmless oddity (z faces
 *              ignored in 2D)
 * Returns HEAT_OK, or HEAT_EINPUT with every problem in err. Reads the deck
 * file and nothing else; writes nothing. */
int heat_deck_load(const char *path, const char *const *sets, int nsets, heat_case *out,
                   char **text_out, FILE *notices, heat_error *err);

/* As heat_deck_load, from text in memory; `origin` names it in messages
 * (a file name, "checkpoint", ...) and gives the default run name. */
int heat_deck_load_string(const char *text, const char *origin, const char *const *sets, int nsets,
                          heat_case *out, char **text_out, FILE *notices, heat_error *err);

/* As heat_deck_load_string, for the deck stored in a file that a restart
 * continues: initial.path is not required to be readable, since a restart
 * never reads the initial field (its seed file may have moved since, or be
 * relative to another directory). */
int heat_deck_load_restart(const char *text, const char *origin, const char *const *sets, int nsets,
                           heat_case *out, char **text_out, FILE *notices, heat_error *err);

#endif
