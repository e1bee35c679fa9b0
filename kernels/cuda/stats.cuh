/* history.csv's statistics on the GPU (k_stats.cu): each row's minimum,
 * maximum and sum in the order of heat_stats_row (backend_impl.h), then
 * their fold in the order of heat_stats_fold. */
#ifndef HEAT_CUDA_STATS_CUH
#define HEAT_CUDA_STATS_CUH

#include <cuda_runtime.h>

extern "C" {
#include "heat_error.h"
}

/* Queues on `stream` the minimum, maximum and sum of a box of nx x ny x nz
 * values (float or double) in a larger array, row (y, z) at u + y sy + z sz
 * (values), in backend_impl.h's order (the rows y fastest), and their copy
 * to (*host)[0..2], to be read after the stream's next wait. *work (device)
 * and *host (pinned) are allocated at the first call, for this box's size;
 * the caller frees them (cudaFree, cudaFreeHost). */
cudaError_t heat_cuda_stats_queue(const void *u, bool is_float, long long nx, long long ny,
                                  long long nz, long long sy, long long sz, double **work,
                                  double **host, cudaStream_t stream);

/* What a GPU backend's queue half leaves for its wait half and for
 * history.csv (backend.h's queue and wait), the same for the whole grid
 * (cuda_backend.cu) and a rank's part (cuda_part.cu):
 *
 * - a check step's residual: the steps fold max |du| (its bits) into
 *   d_resid, which the caller zeroes before them; it comes back into
 *   h_resid, then ev_resid;
 * - the field's statistics after it, in one of two slots (pinned), each
 *   with its event: the last slot queued, and the one before, which a
 *   history row still reads while the next check's steps are queued.
 *
 * Where the device waits asleep (heat_cuda_schedule_for_affinity), so do
 * the events: cudaEventSynchronize spins without cudaEventBlockingSync,
 * whatever the device's flags say. */
struct heat_cuda_checks {
    /* the box the statistics cover: nx x ny x nz values, row (y, z) at
     * y sy + z sz from the base the caller passes */
    bool is_float;
    long long nx, ny, nz, sy, sz;
    unsigned long long *d_resid, *h_resid;
    cudaEvent_t ev_resid;
    double *d_work, *h_stats[2];
    cudaEvent_t ev_stats[2];
    int slot;
    int fresh; /* h_stats[slot]: the statistics of the field as it stands (once its event passed) */
    /* Steps queued and not yet waited for (with a residual: resid_queued);
     * before: the slot with the statistics of the field before them (once
     * its event has passed), or -1. */
    int queued, resid_queued, before;
    int blocking; /* the device waits asleep */
};

/* Allocates (from a zeroed struct) for a box of the given size; the caller
 * frees with heat_cuda_checks_destroy, also after a failure. */
cudaError_t heat_cuda_checks_create(heat_cuda_checks *q, bool is_float, long long nx, long long ny,
                                    long long nz, long long sy, long long sz);
void heat_cuda_checks_destroy(heat_cuda_checks *q);

/* Before steps are queued; `residual`: a check step's residual and
 * statistics will follow them (heat_cuda_checks_queue_resid). */
void heat_cuda_checks_begin(heat_cuda_checks *q, int residual);

/* Behind a check step on `stream`: its residual's copy back, then the
 * statistics of the box at `base` (the field after the step). */
cudaError_t heat_cuda_checks_queue_resid(heat_cuda_checks *q, const void *base,
                                         cudaStream_t stream);

/* The statistics of the box at `base` into the next slot, behind what
 * `stream` holds. */
cudaError_t heat_cuda_checks_queue_stats(heat_cuda_checks *q, const void *base,
                                         cudaStream_t stream);

/* Where queuing failed: the levels may have swapped and the statistics no
 * longer match the field. Settles `stream` (after whatever did queue) and
 * leaves nothing queued or fresh. */
void heat_cuda_checks_failed(heat_cuda_checks *q, cudaStream_t stream);

/* The wait half: with a residual queued, for it alone (the statistics
 * behind it are waited for by whoever reads them, and the next steps may
 * be queued behind them first); else, and where the device waits asleep
 * (each wake-up costs), for `stream`, which every queued step joins. With
 * `residual`, max |du/dt| (dt: the step), +Inf for NaN in the field as the
 * CPU says it. Asked for what was not queued, heat_cuda_checks_failed. */
int heat_cuda_checks_wait(heat_cuda_checks *q, cudaStream_t stream, double dt, double *residual,
                          heat_error *err);

/* history.csv's statistics: those a check step's steps brought back, or
 * those of the box at `base` computed now on `stream`. While steps are
 * queued, those of the field before them (backend.h), computed before the
 * steps. */
int heat_cuda_checks_stats(heat_cuda_checks *q, const void *base, cudaStream_t stream, double *min,
                           double *max, double *sum, heat_error *err);

#endif
