/* The run's output directory: ownership, history.csv, snapshots, the XDMF
 * index, checkpoints and their rotation.
 *
 * io/ never knows which backend produced a field; the driver hands it host
 * memory. Field files are written by a background writer thread so that the
 * time loop does not wait for the disk: the driver takes a host buffer from a
 * small pool (heat_output_acquire), copies the field into it, and submits it
 * with the step, the time and what to write (heat_output_submit). The thread
 * writes the files in the order submitted, rewrites the index after each
 * snapshot, and deletes old checkpoints once a new one is complete. A
 * failure on the thread is reported by the next call from the driver
 * (history, acquire, submit, flush), with the file named, as HEAT_ERUNTIME.
 *
 * In `dir` (docs/FORMAT.md has the details):
 *   history.csv                       step, time, residual, wall seconds, min, max, mean,
 *                                     reduction, cycles (multigrid)
 *   probes.csv                        step, time, a value per probe (cases with probes)
 *   <name>_<step:08>.vtkhdf           snapshots (VTKHDF ImageData)
 *   <name>_ckpt_<step:08>.vtkhdf      checkpoints (the same layout)
 *   <name>.xmf                        XDMF 3 time series of the snapshots
 */
#ifndef HEAT_OUTPUT_H
#define HEAT_OUTPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "h5file.h"
#include "h5part.h"
#include "heat_case.h"
#include "heat_error.h"

typedef struct heat_output heat_output;

typedef enum {
    HEAT_OUTPUT_NEW,       /* refuse a directory that holds another run's files */
    HEAT_OUTPUT_OVERWRITE, /* remove the earlier run's files first */
    HEAT_OUTPUT_CONTINUE,  /* a restart: keep and append */
} heat_output_mode;

/* What a submitted field is written as: a mask of heat_file_kind bits (both
 * at once is one copy). */
enum {
    HEAT_OUTPUT_SNAPSHOT = 1 << HEAT_FILE_SNAPSHOT,
    HEAT_OUTPUT_CHECKPOINT = 1 << HEAT_FILE_CHECKPOINT
};

/* Host memory for the field buffers; the GPU backend may pass page-locked
 * memory. alloc returns NULL when out of memory. */
typedef struct heat_output_allocator {
    void *(*alloc)(size_t bytes, void *ctx);
    void (*free)(void *p, void *ctx);
    void *ctx;
} heat_output_allocator;

typedef struct heat_output_options {
    heat_output_mode mode;
    int64_t start_step;          /* 0, or the step a restart continues from */
    const char *deck_text;       /* the canonical deck, kept in every field file (copied) */
    heat_output_allocator alloc; /* alloc == NULL: malloc and free */
    int buffers;                 /* field buffers in the pool; 0: 2 */
    FILE *notices; /* harmless oddities (an old checkpoint not removable); may be NULL */
    /* If not NULL, called (on the writer thread) after each field file is in
     * place under its final name, in the order written. */
    void (*on_file)(void *ctx, const char *path, heat_file_kind kind, int64_t step);
    void *on_file_ctx;
    /* A distributed run: the ranks' writer (h5part.h), NULL for one process.
     * Every rank opens an output; the buffers then hold the rank's box of
     * field_points values, and each field file is written by all ranks
     * together (collective: every rank submits the same steps). Rank 0 alone
     * owns the directory, history.csv and the index; on the other ranks
     * check_dir and history are no-ops. */
    heat_h5dist *dist;
    int64_t field_points;
    /* Write in the caller's thread, at submit (an MPI without thread support). */
    int inline_writes;
    /* The material index of every node of the buffers' layout (whole grid,
     * or the rank's box), written into every field file as point data; NULL
     * for none (heat_case_writes_material). Borrowed: it must outlive the
     * output. */
    const uint8_t *material;
} heat_output_options;

/* Checks whether `dir` may be used without creating anything: HEAT_EINPUT
 * when it exists and is not a directory; when a live run holds it (its lock,
 * naming the pid); when it holds another run's files (history.csv, *.vtkhdf,
 * *.xmf) and mode is HEAT_OUTPUT_NEW, naming a file found and the ways out
 * (--overwrite, --restart where no file there has another run's name,
 * another output.dir); when it holds snapshots,
 * checkpoints or an index of a run not named `name` and mode is
 * HEAT_OUTPUT_CONTINUE. Used by `heat check` and before a run starts;
 * heat_output_open takes the lock itself. */
int heat_output_check_dir(const char *dir, const char *name, heat_output_mode mode,
                          heat_error *err);

/* HEAT_EINPUT when parallel.io = "collective" and this heat's HDF5 is not
 * parallel: a deck error for a run over several processes (`heat check`
 * applies it where it knows the run has them). */
int heat_output_check_parallel_io(const heat_case *c, heat_error *err);

/* Only the first of those checks: HEAT_EINPUT when `dir` exists and is not a
 * directory (what `heat check` refuses; the rest it reports as notes). */
int heat_output_check_path(const char *dir, heat_error *err);

/* Creates the directory (with parents), opens history.csv and starts the
 * writer thread. In HEAT_OUTPUT_CONTINUE mode it first drops what belongs to
 * the interrupted run's future, which this run computes again: history rows
 * after start_step (and a residual-less row at start_step, which this run
 * writes again), and this case's snapshots and checkpoints after start_step
 * (files and index entries). `c` (derived) must outlive the output.
 * HEAT_ERUNTIME with the path and the system's reason on failure. */
int heat_output_open(const heat_case *c, const heat_output_options *opt, heat_output **out,
                     heat_error *err);

/* A row of history.csv; NaN for a residual or statistic not computed. */
typedef struct heat_history_row {
    int64_t step;
    double time, residual, wall;
    double min, max, mean; /* of the field */
    /* Multigrid: the solve's residual over its start's (NaN: none) and its
     * V-cycles (steady: so far; implicit: the last step's; -1: none). */
    double reduction;
    int64_t cycles;
} heat_history_row;

/* Appends a row to history.csv (empty fields for NaN). Flushed at once so
 * that the file is current whenever the run stops. */
int heat_output_history_row(heat_output *o, const heat_history_row *row, heat_error *err);

/* Appends a row to probes.csv (the case's probes, in the deck's order). */
int heat_output_probes(heat_output *o, int64_t step, double time, const double *values,
                       heat_error *err);

/* Appends a row to history.csv: step, time, residual (empty when NaN is
 * passed for "not computed"), wall seconds. Flushed at once so that the file
 * is current whenever the run stops. */
int heat_output_history(heat_output *o, int64_t step, double time, double residual, double wall,
                        heat_error *err);

/* Takes a free host buffer of nx*ny*nz values of the case's precision,
 * blocking only while every buffer of the pool is being written. */
int heat_output_acquire(heat_output *o, void **buffer, heat_error *err);

/* Gives back an acquired buffer without writing it. */
void heat_output_release(heat_output *o, void *buffer);

/* The stall check's state of a steady run (its lowest residual, that
 * residual's step, the checks since), which a checkpoint records
 * (docs/FORMAT.md), so that a restart stops where the uninterrupted run
 * would; have 0: none. */
typedef struct heat_output_steady {
    int have;
    double best;
    int64_t best_step, no_best;
} heat_output_steady;

/* Queues an acquired buffer, holding the field at `step` and `time`, to be
 * written as `kinds` (HEAT_OUTPUT_SNAPSHOT | HEAT_OUTPUT_CHECKPOINT), a
 * checkpoint with `steady` (NULL: none); the buffer returns to the pool when
 * written. Does not wait for the disk. */
int heat_output_submit(heat_output *o, void *buffer, int64_t step, double time, int kinds,
                       const heat_output_steady *steady, heat_error *err);

/* Waits until everything submitted is written: after it returns HEAT_OK the
 * files are complete on disk. */
int heat_output_flush(heat_output *o, heat_error *err);

/* Files written so far (history.csv, probes.csv and the index counted once
 * each), and of those the snapshots and checkpoints; exact after a flush. */
int64_t heat_output_files_written(const heat_output *o);
void heat_output_counts(const heat_output *o, int64_t *snapshots, int64_t *checkpoints);
const char *heat_output_dir(const heat_output *o);

/* Waits for writes in flight (their errors are dropped: call
 * heat_output_flush first to see them), stops the writer thread, closes
 * history.csv and frees the buffers. NULL is a no-op. */
void heat_output_close(heat_output *o);

/* The paths of a case's files. */
void heat_output_snapshot_path(char *buf, size_t n, const char *dir, const char *name,
                               int64_t step);
void heat_output_checkpoint_path(char *buf, size_t n, const char *dir, const char *name,
                                 int64_t step);
void heat_output_index_path(char *buf, size_t n, const char *dir, const char *name);

/* The steps of the checkpoints of run `name` in `dir`, newest first, in a
 * malloc'd array (*steps NULL when none; a missing directory has none). */
int heat_output_list_checkpoints(const char *dir, const char *name, int64_t **steps, size_t *n,
                                 heat_error *err);

#endif
