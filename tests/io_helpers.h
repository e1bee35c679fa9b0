/* Helpers of the io tests (test_io.c, test_restart.c): one deck with every
 * kind of boundary set, loaded into a case that writes to a directory of the
 * test's own; fields compared bit for bit; files damaged on purpose; the
 * files in a directory and the entries of a run's XDMF index. */
#ifndef HEAT_TEST_IO_HELPERS_H
#define HEAT_TEST_IO_HELPERS_H

#include <stddef.h>

#include "driver.h"
#include "heat_case.h"

/* The deck without its boundary section: 3D by default (17 x 13 x 9). */
extern const char deck_head[];

/* Boundary sections, {name, text}: every kind of face, alone and mixed. */
#define N_BC_SETS 5
extern const char *const bc_sets[N_BC_SETS][2];

/* A loaded case, its canonical text and its output directory. */
typedef struct run_case {
    heat_case c;
    char *text;
    char dir[4096];
} run_case;

/* Loads deck_head + `bc` + the overrides in `sets` ("key=value" strings,
 * NULL-terminated; may be NULL) with output.dir = `dir`, and derives it;
 * fails the test when the deck is refused. */
void load_case(run_case *r, const char *bc, const char *dir, const char *const *sets);

/* Frees what load_case allocated. */
void free_case(run_case *r);

/* The bytes of one field of the case, in its precision. */
size_t field_bytes(const heat_case *c);

/* malloc that fails the test instead of returning NULL. */
void *xmalloc(size_t n);

/* Asserts that two fields of the case are the same bit for bit; fails
 * naming `what` and the first differing value. */
void expect_same_bits(const heat_case *c, const void *got, const void *want, const char *what);

/* Damages the field of the file at `path`: flips a byte in the middle of its
 * first chunk, leaving the metadata intact. */
void damage_field(const char *path);

/* How many files in `dir` end with `suffix` (0 when dir cannot be read). */
int count_files(const char *dir, const char *suffix);

/* An entry of the index: the step (from the file name) and the time. */
typedef struct xmf_entry {
    long long step;
    double time;
} xmf_entry;

/* Reads the run's index into e (at most max entries, in file order) and
 * returns how many there are; fails the test when the index is missing or
 * names a file that does not exist. */
int read_index(const run_case *r, xmf_entry *e, int max);

/* Runs the case quietly; `notices` collects what the run says (may be NULL). */
int run(const run_case *r, const char *restart, void *field_out, heat_run_result *res,
        char **notices, heat_error *err);

/* As run, failing the test unless it returns HEAT_OK. */
void run_ok(const run_case *r, const char *restart, void *field_out, heat_run_result *res);

/* The path of the case's checkpoint (checkpoint != 0) or snapshot at `step`. */
void path_of(char *buf, size_t n, const run_case *r, int checkpoint, int64_t step);

#endif
