/* Helpers shared by the tests: scratch directories, running the heat
 * program and capturing its output, and random fields. */
#ifndef HEAT_TEST_UTIL_H
#define HEAT_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* A fresh empty directory HEAT_TEST_TMP/<name> (removed first if present);
 * returns its path in static storage valid until the next call. */
const char *test_scratch_dir(const char *name);

/* Removes a directory tree (rm -rf). */
void test_remove_tree(const char *path);

/* Runs the heat program with argv (NULL-terminated, without argv[0]) in
 * directory `cwd` (NULL: the current one), stdin from /dev/null. Captures
 * stdout and stderr into malloc'd strings (either pointer may be NULL).
 * Returns the exit status, or 128 + signal when killed. */
int test_run_heat(const char *cwd, const char *const *argv, char **out, char **err);

/* As test_run_heat, with the size of any file the program writes limited to
 * `max_file_bytes` (RLIMIT_FSIZE: a write past it fails with EFBIG as on a
 * full disk, heat ignoring SIGXFSZ; the test leaves the signal's default
 * action); a negative limit sets none. */
int test_run_heat_fsize(const char *cwd, const char *const *argv, long max_file_bytes, char **out,
                        char **err);

/* The whole file as a malloc'd string, or NULL when it cannot be read. */
char *test_read_file(const char *path);

/* dir/file (a CSV) without the column `drop` (from 0; -1: none) of each
 * row, as a malloc'd string; fails the test when the file cannot be read. */
char *test_csv_without(const char *dir, const char *file, int drop);

/* Writes `text` to path; asserts on failure. */
void test_write_file(const char *path, const char *text);

/* A snapshot's or checkpoint's metadata into *m and its field, in the
 * file's own precision, as a malloc'd array; fails the test when the file
 * cannot be read. */
struct heat_file_meta;
void *test_read_field(const char *path, struct heat_file_meta *m);

/* Fails the test unless `text` (NULL counts as empty) contains `needle`;
 * `what` names the text in the message ("stdout", "error", ...). */
void test_expect_in(const char *what, const char *text, const char *needle);

/* Fails the test when `text` contains `needle`. */
void test_expect_not_in(const char *what, const char *text, const char *needle);

/* Whether path exists. */
int test_exists(const char *path);

/* --set overrides for heat_deck_load, formatted into owned buffers. */
#define TEST_MAX_SETS 16
typedef struct test_sets {
    char buf[TEST_MAX_SETS][4200];
    const char *ptr[TEST_MAX_SETS];
    int n;
} test_sets;

/* Appends a printf-formatted "key=value"; asserts there is room. */
void test_sets_add(test_sets *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Loads deck text (origin names it in messages) with the overrides of `s`
 * (may be NULL) and derives the case; fails the test with the deck's
 * message when it is refused. */
struct heat_case;
void test_load_case(const char *deck, const char *origin, const test_sets *s, struct heat_case *c);

/* As test_load_case, also returning the canonical text (caller frees). */
void test_load_case_text(const char *deck, const char *origin, const test_sets *s,
                         struct heat_case *c, char **text);

/* At the start of a GPU test program: HEAT_TEST_FILTER=PATTERN runs only the
 * tests whose names match (cmocka's * and ? wildcards); where the machine has
 * no CUDA device says so and returns 77, which ctest reports as skipped;
 * where it has one that heat cannot use (a driver too old, no code for its
 * architecture) says why and returns 1, a failure; else 0. */
int gpu_tests_skip(const char *program);

/* Deterministic uniform random numbers in [lo, hi) from a 64-bit state. */
double test_uniform(uint64_t *state, double lo, double hi);

#endif
