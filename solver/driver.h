/* The time-stepping driver: owns the loop, never the field memory.
 *
 * It creates the backend, uploads the initial field, and advances in chunks
 * that end exactly on every step where something is due (a residual check,
 * a snapshot, a checkpoint, the end), writes history.csv, reports progress,
 * stops at time.end, time.max_steps, steady state or a signal, and prints a
 * summary.
 */
#ifndef HEAT_DRIVER_H
#define HEAT_DRIVER_H

#include <stdint.h>
#include <stdio.h>

#include "heat_case.h"
#include "heat_error.h"
#include "output.h"

typedef enum {
    HEAT_STOP_END,           /* t reached time.end */
    HEAT_STOP_MAX_STEPS,     /* the step number reached time.max_steps */
    HEAT_STOP_STEADY,        /* max |du|/dt fell to steady.tolerance */
    HEAT_STOP_SIGNAL,        /* SIGINT or SIGTERM */
    HEAT_STOP_STALLED,       /* the residual set no new low in steady.stall_checks checks */
    HEAT_STOP_SOLVE_STALLED, /* an implicit step's multigrid solve stopped above its tolerance */
} heat_stop_reason;

typedef struct heat_run_options {
    const char *restart; /* NULL, a checkpoint path, or "latest" */
    int overwrite;       /* replace another run's files in output.dir */
    int quiet;           /* no progress, no summary */
    FILE *out;           /* progress and summary (stdout) */
    FILE *notices;       /* notices such as a backend fallback (stderr) */
    void *field_out;     /* if not NULL: receives the final field (nx*ny*nz values; under
                            MPI this rank's box) */
} heat_run_options;

typedef struct heat_run_result {
    heat_stop_reason reason;
    int signal;         /* the signal number for HEAT_STOP_SIGNAL */
    int64_t start_step; /* 0, or the step restarted from */
    int64_t final_step;
    double final_time;
    double last_residual; /* NaN when never computed */
    double wall;          /* seconds in the time loop */
    double glups;         /* 1e9 point updates per second of wall */
    double gbps;          /* effective bandwidth: one read + one write per update */
    int64_t files;        /* files written */
    /* A run over several ranks (ranks > 1): the split, how halos moved and
     * what the exchange cost (seconds, the slowest rank's), how files were
     * written. */
    int ranks, split[3], halo_depth;
    int64_t halo_exchanges;
    double halo_exposed; /* waiting for halos, not hidden by compute */
    double halo_pack, halo_transfer, halo_unpack;
    char transport[96], writer[96];
    /* Multigrid (steady.method = "multigrid", implicit time.scheme). */
    int64_t mg_cycles;   /* V-cycles in all */
    double mg_reduction; /* the last solve's: heat_mg_info.reduction */
    int mg_zero_rhs;     /* ... over its first residual, its right-hand side being zero */
    char mg_text[256];   /* the hierarchy, heat_mg_info.text */
} heat_run_result;

/* Runs the case (already derived with heat_case_derive). The output buffers
 * come from the backend's host memory (page-locked on the GPU). deck_text is the
 * canonical deck after overrides, kept in every snapshot and checkpoint.
 *
 * Outputs: a snapshot at the first step, every output.every steps and at the
 * last step; a checkpoint every output.checkpoint_every steps, when
 * output.checkpoint_wall seconds of wall time have passed since the last
 * one, at the last step and on SIGINT/SIGTERM. They are written in the
 * background; the run returns only when every file is complete on disk.
 *
 * Restart (opt->restart): a checkpoint or snapshot path, or "latest" (the
 * newest intact checkpoint of the case in output.dir: a damaged one is
 * reported on opt->notices and the next older one tried; with none at all the
 * run starts from the initial condition, saying so). The deck must match the
 * file in grid, precision, boundary conditions and diffusivity. The run keeps
 * the file's dt, so that it continues bit for bit; the time of step n is
 * n * dt, the end step is the first n with n * dt >= time.end (within 1e-9
 * relative: then t = time.end exactly), and time.max_steps still counts from
 * step 0.
 *
 * Under MPI (solver/parallel.h) every rank calls it: each holds its part of
 * the grid (solver/decomp.c), the stop rules, checks and outputs are agreed
 * at chunk ends, and every rank returns the same status and message; the
 * results are those of one process, bit for bit.
 *
 * Returns HEAT_OK when the run stopped for any reason in heat_stop_reason (a
 * signal included: see result->reason), HEAT_EINPUT for problems found
 * before anything was written (an occupied output directory, a deck that
 * does not match the restart file, a missing file), HEAT_ERUNTIME for
 * failures during the run (a non-finite field names the step and time; a
 * failed write names the file) and for a restart file that fails its
 * checksum. */
int heat_run(const heat_case *c, const char *deck_text, const heat_run_options *opt,
             heat_run_result *result, heat_error *err);

const char *heat_stop_reason_text(heat_stop_reason r);

#endif
