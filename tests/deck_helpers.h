/* Helpers of the deck tests (test_deck.c, test_deck_text.c): a valid base
 * deck (deck_helpers.c) with lines to replace, loading a deck expecting
 * success or the problems named in the message, and comparing cases. */
#ifndef HEAT_TEST_DECK_HELPERS_H
#define HEAT_TEST_DECK_HELPERS_H

#include <stdio.h>

#include "heat_case.h"

/* The lines of the base deck, one section per line so that a test can
 * replace a section (or one boundary face) and know the line of every key. */
enum {
    L_NAME = 1,
    L_GRID,
    L_MATERIAL,
    L_TIME,
    L_STEADY,
    L_INITIAL,
    L_BOUNDARY,
    L_X_LO,
    L_X_HI,
    L_Y_LO,
    L_Y_HI,
    L_Z_LO,
    L_Z_HI,
    L_BOUNDARY_END,
    L_OUTPUT,
    L_SOLVER,
    L_COUNT = L_SOLVER
};

/* Where decks given as text say they come from. */
#define ORIGIN "deck.cfg"

/* The base deck with lines replaced: deck(LINE, "text", LINE, "text", ..., 0).
 * An empty text leaves the line empty (line numbers stay). Returns a static
 * buffer, overwritten by the next call. */
const char *deck(int line, ...);

/* How many lines `s` has (0 when empty; a final newline ends the last line). */
int count_lines(const char *s);

/* Fail the test unless the message has (lacks) `needle`. */
void assert_has(const char *msg, const char *needle);
void assert_lacks(const char *msg, const char *needle);

/* Loads `text` (origin ORIGIN) with the overrides, expects HEAT_EINPUT with
 * exactly `nlines` problems (nlines < 0: any number) and every needle in the
 * message (a NULL-terminated array). Returns the message in static storage. */
const char *expect_err(const char *text, const char *const *sets, int nsets, int nlines,
                       const char *const *needles);

#define NEEDLES(...) ((const char *const[]){__VA_ARGS__, NULL})
/* One problem in `text`, whose message contains every needle. */
#define EXPECT_ERR(text, ...) expect_err((text), NULL, 0, 1, NEEDLES(__VA_ARGS__))
/* n problems in `text`. */
#define EXPECT_ERRS(n, text, ...) expect_err((text), NULL, 0, (n), NEEDLES(__VA_ARGS__))

/* Loads `text` (origin ORIGIN) with the overrides into *c, with its canonical
 * text into *text_out and notices to `notices` (either may be NULL),
 * asserting success. */
void load_ok(const char *text, const char *const *sets, int nsets, heat_case *c, char **text_out,
             FILE *notices);

/* heat_case_derive, asserting success. */
void derive_ok(heat_case *c);

/* Field by field, exact (doubles compared bit for bit through memcmp). */
void assert_case_equal(const heat_case *a, const heat_case *b);

#endif
