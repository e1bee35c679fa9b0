/* The driver's inside, shared by its files: the state of a run in progress
 * (driver.c) and where it starts, a restart or the initial condition
 * (restart.c). Private to solver/. */
#ifndef HEAT_RUN_STATE_H
#define HEAT_RUN_STATE_H

#include <stdint.h>

#include "backend.h"
#include "driver.h"
#include "h5file.h"
#include "h5part.h"
#include "output.h"
#include "parallel.h"
#include "progress.h"

/* A run in progress: what the steps below share. */
typedef struct run_state {
    heat_case *c; /* the run's own copy: a restart changes dt and the step counts */
    const heat_run_options *opt;
    heat_backend *b;
    heat_output *out;
    heat_progress progress;
    int64_t step;
    int64_t last_snapshot, last_checkpoint;
    double t0, last_checkpoint_wall;
    int64_t chunk_max; /* grows to about 0.1 s of work per call */
    double residual;
    double best_residual;   /* the lowest residual of a steady check so far */
    int64_t best_step;      /* the step (V-cycle) of best_residual */
    int64_t checks_no_best; /* steady checks since it was set */
    /* A run over several ranks (NULL: one process). Every decision that
     * changes what the ranks do next (stop, check, write, chunk size) is
     * taken from values agreed by all of them. */
    heat_par *par;
    heat_part part;        /* this rank's box (the whole grid for one process) */
    heat_h5dist *writer;   /* the ranks' field-file writer */
    uint8_t *material;     /* the material of each node of the part, for the files; or NULL */
    heat_mg_info mg;       /* multigrid: what the last chunk's solve did */
    heat_halo_stats halo0; /* the halo figures when the loop's clock started */
    /* The history row of the last check, written while the next steps run
     * (a backend that queues them, driver.c), and its loop seconds. */
    int row_pending;
    double row_wall;
} run_state;

/* Points of this rank's field: its box, or the whole grid. */
static inline int64_t field_points(const run_state *s)
{
    return s->part.n[0] * s->part.n[1] * s->part.n[2];
}

/* Collective where the run has ranks: the agreed status and message. */
static inline int agree(run_state *s, int rc, heat_error *err)
{
    return s->par ? heat_par_agree(s->par, rc, err) : rc;
}

/* The file a run continues from (have = 0: none). */
typedef struct restart_file {
    int have;
    char path[HEAT_PATH_MAX + HEAT_NAME_MAX + 64];
    heat_file_meta meta;
} restart_file;

/* The field the run starts from, in `field` (this rank's box), and its step
 * in s->step: the restart file of s->opt (a path, or "latest") or the
 * initial condition. A restart keeps the file's dt (s->c changes). */
int heat_run_start_field(run_state *s, void *field, restart_file *r, heat_error *err);

/* After the deck's regions are painted (s->material): a restart's file, where
 * it holds a material index, must hold the same one for this rank's part;
 * else HEAT_EINPUT naming the first node that differs (a material file
 * changed since the run began). Collective. */
int heat_restart_check_materials(run_state *s, const restart_file *r, heat_error *err);

#endif
