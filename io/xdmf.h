/* The XDMF index of a run's snapshots: `<dir>/<name>.xmf`, an XDMF 3
 * temporal collection that ParaView opens as one time series. Each entry
 * points at the field inside a snapshot file (they sit side by side, so the
 * index uses bare file names and the directory can be moved whole). */
#ifndef HEAT_XDMF_H
#define HEAT_XDMF_H

#include <stddef.h>
#include <stdint.h>

#include "heat_case.h"
#include "heat_error.h"

typedef struct heat_xdmf_entry {
    int64_t step;
    double time;
} heat_xdmf_entry;

/* Writes the index of the snapshots `e[0..n)` (in the order given) of case
 * `c` to `path`, atomically: under a temporary name, flushed to disk, renamed.
 * HEAT_ERUNTIME naming `path` and the system's reason on failure. */
int heat_xdmf_write(const char *path, const heat_case *c, const heat_xdmf_entry *e, size_t n,
                    heat_error *err);

#endif
