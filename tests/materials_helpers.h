/* Helpers of the materials tests (test_materials_deck.c,
 * test_materials_check.c): a base deck with two materials, a section per
 * line so that a test can replace one and knows the line of every key;
 * decks expected to be refused with a number of problems; a case loaded
 * and derived; lists of many entries; numbers compared within a tolerance. */
#ifndef HEAT_TEST_MATERIALS_HELPERS_H
#define HEAT_TEST_MATERIALS_HELPERS_H

#include "deck_helpers.h"
#include "heat_case.h"

/* The lines of the base deck: 11 x 11 x 11 nodes on the unit cube (h =
 * 0.1), materials a (k 1) and b (k 4, both rho = c = 1), insulated faces,
 * 10 steps on the CPU. The commented lines are free for a test's section. */
enum {
    M_GRID = 1,
    M_MATERIALS,
    M_REGIONS, /* # regions */
    M_SOURCES, /* # sources */
    M_PROBES,  /* # probes */
    M_TIME,
    M_INITIAL,
    M_BOUNDARY,
    M_X_LO,
    M_X_HI,
    M_Y_LO,
    M_Y_HI,
    M_Z_LO,
    M_Z_HI,
    M_BOUNDARY_END,
    M_OUTPUT, /* # output */
    M_SOLVER,
    M_COUNT = M_SOLVER
};

/* The base deck with lines replaced: mdeck(LINE, "text", ..., 0). Returns a
 * static buffer, overwritten by the next call. */
const char *mdeck(int line, ...);

/* Loads `text` (origin ORIGIN) expecting HEAT_EINPUT with `n` problems
 * (lines that start with where they were written: a value that is a list
 * spans lines of its own) and every needle in the message; returns it. */
const char *bad(int n, const char *text, const char *const *needles);

#define BAD(text, ...)     bad(1, (text), NEEDLES(__VA_ARGS__))
#define BADN(n, text, ...) bad((n), (text), NEEDLES(__VA_ARGS__))

/* The base deck with `line` replaced, loaded and derived (asserting success). */
void load_line(heat_case *c, int line, const char *text);

/* head, then `n` copies of `item` (its %d replaced by the copy's index)
 * joined by ", ", then tail: a malloc'd string. */
char *repeat(const char *head, const char *item, int n, const char *tail);

/* Fails the test unless |got - want| <= tol, naming both numbers. */
void assert_close(double got, double want, double tol);

#endif
