/* The run's output directory: ownership, history.csv, and the places where
 * snapshots and checkpoints are written.
 *
 * io/ never knows which backend produced a field; the driver hands it host
 * memory. Snapshot and checkpoint files (HDF5) are the seam for the HDF5
 * writer: until it is built in, heat_output_snapshot() and
 * heat_output_checkpoint() record nothing and report that they wrote nothing,
 * so the driver's cadence and its signal path are already in place.
 */
#ifndef HEAT_OUTPUT_H
#define HEAT_OUTPUT_H

#include <stdint.h>

#include "heat_case.h"
#include "heat_error.h"

typedef struct heat_output heat_output;

typedef enum {
    HEAT_OUTPUT_NEW,       /* refuse a directory that holds another run's files */
    HEAT_OUTPUT_OVERWRITE, /* remove the earlier run's files first */
    HEAT_OUTPUT_CONTINUE,  /* a restart: keep and append */
} heat_output_mode;

/* Checks whether `dir` may be used without creating anything: HEAT_EINPUT
 * when it holds another run's files (history.csv, *.vtkhdf, *.xmf) and mode is
 * HEAT_OUTPUT_NEW, naming a file found and the ways out (--overwrite,
 * --restart, another output.dir); HEAT_EINPUT when it exists and is not a
 * directory. Used by `heat check` and before a run starts. */
int heat_output_check_dir(const char *dir, heat_output_mode mode, heat_error *err);

/* Creates the directory (with parents) and opens history.csv (appending in
 * HEAT_OUTPUT_CONTINUE mode, after dropping the rows from `start_step` on,
 * which this run writes again).
 * HEAT_ERUNTIME with the path and the system's reason on failure. */
int heat_output_open(const heat_case *c, heat_output_mode mode, int64_t start_step,
                     heat_output **out, heat_error *err);

/* Appends a row to history.csv: step, time, residual (empty when NaN is
 * passed for "not computed"), wall seconds. Flushed at once so that the file
 * is current whenever the run stops. */
int heat_output_history(heat_output *o, int64_t step, double time, double residual, double wall,
                        heat_error *err);

/* Writes the snapshot for `step` (the HDF5 seam; see above). Sets *written to
 * 1 when a file was written. */
int heat_output_snapshot(heat_output *o, int64_t step, double time, const void *field, int *written,
                         heat_error *err);

/* Writes a checkpoint for `step` (the HDF5 seam; see above). */
int heat_output_checkpoint(heat_output *o, int64_t step, double time, const void *field,
                           int *written, heat_error *err);

/* Whether snapshots or checkpoints need the field on the host at all. */
int heat_output_wants_fields(const heat_output *o);

/* Files written so far (history.csv counted once). */
int64_t heat_output_files_written(const heat_output *o);
const char *heat_output_dir(const heat_output *o);

/* Closes history.csv; NULL is a no-op. */
void heat_output_close(heat_output *o);

#endif
