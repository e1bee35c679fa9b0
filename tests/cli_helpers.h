/* Helpers of the command-line tests (test_cli.c, test_run.c): running the
 * heat program and checking what it printed, files in scratch directories,
 * history.csv rows and the decks those tests run. */
#ifndef HEAT_TEST_CLI_HELPERS_H
#define HEAT_TEST_CLI_HELPERS_H

#include <stddef.h>

#include "test_util.h"

/* One run of the program: exit status and what it printed. */
typedef struct result {
    int rc;
    char *out, *err;
} result;

/* Runs heat in `cwd` (NULL: the current directory) with the NULL-terminated
 * arguments that follow; fills *r (free it with result_free). */
void heat(result *r, const char *cwd, ...);

void result_free(result *r);

/* Asserts the exit status, showing what the program printed when it differs. */
void expect_rc(const result *r, int rc);

#define EXPECT_OUT(r, s)     test_expect_in("stdout", (r)->out, (s))
#define EXPECT_ERR(r, s)     test_expect_in("stderr", (r)->err, (s))
#define EXPECT_NOT_OUT(r, s) test_expect_not_in("stdout", (r)->out, (s))
#define EXPECT_NOT_ERR(r, s) test_expect_not_in("stderr", (r)->err, (s))

/* A scratch directory of our own, copied out of test_scratch_dir's storage. */
void scratch(char *buf, size_t n, const char *name);

/* dir/name into buf. */
void path_in(char *buf, size_t n, const char *dir, const char *name);

/* Whether dir/name exists. */
int exists_in(const char *dir, const char *name);

/* The whole of dir/name as a malloc'd string; fails the test when it cannot
 * be read. */
char *read_in(const char *dir, const char *name);

/* The step of the last row of history.csv text (-1 when there is none), and
 * optionally its time and residual (NaN when empty). */
long long last_history_row(const char *csv, double *time, double *residual);

/* Writes dir/file, a 16^3 deck (line numbers matter: tests refer to them):
 *   1 grid, 2 material, 3 time (time_line), 4 initial, 5-12 boundary,
 *   13 output (dir "res"), 14 solver, 15 `extra`.
 * Periodic in y, so hx = hz = 1/15, hy = 1/16 and dt_max = 0.5 / 706. */
void write_deck(const char *dir, const char *file, const char *time_line, const char *extra);

/* The usual deck, dir/d.cfg: 16 steps to t = 0.01. */
void write_small_deck(const char *dir);

#endif
