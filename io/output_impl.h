/* The parts of io/output behind output.h, one file each: the directory
 * (outdir.c), history.csv (history.c), the XDMF index's entries (index.c)
 * and the writer thread (output.c). Private to io/. */
#ifndef HEAT_OUTPUT_IMPL_H
#define HEAT_OUTPUT_IMPL_H

#include <stdint.h>
#include <stdio.h>

#include "output.h"
#include "xdmf.h"

/* ---- the directory (outdir.c) ---- */

/* Whether `file` is `<name>_<digits>.vtkhdf` (a snapshot) or
 * `<name>_ckpt_<digits>.vtkhdf` (a checkpoint): 1 with its step and kind. */
int heat_outdir_parse(const char *file, const char *name, int64_t *step, heat_file_kind *kind);

/* Files that mark a directory as holding a run of ours (history.csv and
 * heat's own names: `<name>.xmf`, `<name>_<digits>.vtkhdf`,
 * `<name>_ckpt_<digits>.vtkhdf`); temporary files of ours that a killed run
 * may have left behind. */
int heat_outdir_is_run_file(const char *file);
int heat_outdir_is_leftover(const char *file);

/* The run's hold on its output directory: an exclusive lock (flock) on
 * `<dir>/.heat.lock` holding the holder's pid, for the run's life. Another
 * live holder: HEAT_EINPUT naming the directory and its pid. A lock left by
 * a process that died is taken over, with a notice. A file system without
 * locks: a notice, and the run goes on unlocked. *fd is -1 when unlocked. */
int heat_outdir_lock(const char *dir, FILE *notices, int *fd, heat_error *err);

/* HEAT_EINPUT when `dir` holds another run's files, naming one and the ways
 * out: for a new run (HEAT_OUTPUT_NEW) any run's files (history.csv,
 * *.vtkhdf, *.xmf); for a restart of run `name` (HEAT_OUTPUT_CONTINUE)
 * snapshots, checkpoints or an index of a run named otherwise; nothing for
 * HEAT_OUTPUT_OVERWRITE. */
int heat_outdir_check_other_run(const char *dir, const char *name, heat_output_mode mode,
                                heat_error *err);

/* Releases the hold (the lock file stays, emptied: a clean end). */
void heat_outdir_unlock(int fd);

/* mkdir -p; HEAT_ERUNTIME naming the directory that cannot be made. */
int heat_outdir_make(const char *dir, heat_error *err);

/* Removes the files of `dir` that `which` selects, except the files `keep`
 * names (NULL-terminated; NULL: none), whatever paths name them: --overwrite
 * removes the run files (heat_outdir_is_run_file) but the files the run
 * reads (initial.path, file regions). `why` starts the message of a
 * failure, HEAT_ERUNTIME naming the file. */
int heat_outdir_remove(const char *dir, int (*which)(const char *), const char *const *keep,
                       const char *why, heat_error *err);

/* Keeps the newest `keep` checkpoints of run `name`; a file that cannot be
 * removed is a notice. */
void heat_outdir_rotate(const char *dir, const char *name, int64_t keep, FILE *notices);

/* Whether `file` is one of the files of run `name` in `dir` (a snapshot,
 * a checkpoint or the .xmf index), compared as files. */
int heat_outdir_owned_by(const char *dir, const char *name, const char *file);

/* ---- history.csv (history.c) ---- */

/* Opens `path` for appending rows: a new file with its header, or on a
 * restart (`resume`) the existing one without the rows that belong to the
 * interrupted run's future (after start_step; a residual-less row at it). */
int heat_history_open(const char *path, int resume, int64_t start_step, FILE **f, heat_error *err);

#define HEAT_HISTORY_HEADER "step,time,residual,wall_seconds,min,max,mean,reduction,cycles"

/* probes.csv likewise, with its header (rows after start_step dropped). */
int heat_probes_open(const char *path, const char *header, int resume, int64_t start_step, FILE **f,
                     heat_error *err);

/* On a restart, before anything is written: probes.csv at `path`, where
 * there is one, must have the columns `header` (the deck's probes; NULL for
 * a deck without probes, which keeps the file and its columns): HEAT_EINPUT
 * naming both otherwise, since its rows hold the values of its columns'
 * probes. */
int heat_probes_check_resume(const char *path, const char *header, heat_error *err);

/* A restart of a deck without probes: probes.csv, where there is one, loses
 * its rows after start_step as history.csv does (its columns kept). */
int heat_probes_trim(const char *path, int64_t start_step, heat_error *err);

/* ---- the index's entries (index.c) ---- */

typedef struct heat_index {
    const heat_case *c;
    char path[HEAT_PATH_MAX + HEAT_NAME_MAX + 8];
    heat_xdmf_entry *entries;
    size_t n, cap;
    int written; /* the file has been written by this run */
} heat_index;

void heat_index_init(heat_index *x, const heat_case *c, const char *dir);

/* A restart from start_step: removes the case's field files after it (the
 * interrupted run's future), takes the snapshots up to it as the entries and
 * rewrites the index. */
int heat_index_resume(heat_index *x, const char *dir, int64_t start_step, FILE *notices,
                      heat_error *err);

/* A snapshot written at `step`: it replaces its entry and anything after it,
 * so that the index stays in step order with every step once; the index is
 * rewritten. */
int heat_index_add(heat_index *x, int64_t step, double time, heat_error *err);

void heat_index_free(heat_index *x);

#endif
