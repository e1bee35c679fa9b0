/* What a backend needs to run one rank's part of a distributed grid: the
 * part (input/heat_split.h) and the transport seam through which halos move.
 *
 * kernels/ knows no MPI: the transport is a table of functions that the
 * caller fills (solver/parallel.c with MPI). A backend may instead move
 * halos itself (the CUDA backend's NCCL transport); it still uses this
 * table to agree with the other ranks and to share NCCL's id.
 */
#ifndef HEAT_HALO_H
#define HEAT_HALO_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "heat_error.h"
#include "heat_split.h"

/* One message of a halo exchange: `count` values of `value_size` bytes
 * (heat_halo_comm.start) to or from rank `peer`. */
typedef struct heat_halo_msg {
    int peer, tag;
    void *buf; /* host memory; device memory only where the transport takes it */
    size_t count;
} heat_halo_msg;

/* The transport seam. One exchange is in flight at a time. Every function
 * returns HEAT_OK or HEAT_ERUNTIME with the reason. */
typedef struct heat_halo_comm {
    void *ctx;
    /* Posts every receive, then every send, and returns at once. */
    int (*start)(void *ctx, const heat_halo_msg *recv, int nrecv, const heat_halo_msg *send,
                 int nsend, size_t value_size, heat_error *err);
    /* Moves the exchange on; *done = 1 once every message has arrived. */
    int (*test)(void *ctx, int *done, heat_error *err);
    /* Waits until every message has arrived. */
    int (*wait)(void *ctx, heat_error *err);
    /* Collective over the run's ranks: 1 on every rank when `ok` is 1 on
     * every rank, else 0 on every rank. */
    int (*all_ok)(void *ctx, int ok);
    /* Collective: rank 0's `bytes` bytes at `buf` on every rank. */
    int (*bcast)(void *ctx, void *buf, size_t bytes);
    /* Collective over the ranks of this node: `mine` of every one of them,
     * in node-rank order, into all[node_size * bytes]. */
    int (*node_allgather)(void *ctx, const void *mine, void *all, size_t bytes);
    /* Collective: v[i] becomes the largest (sum 0; NaN as Inf) or the sum
     * (in MPI's order) over every rank. */
    void (*reduce)(void *ctx, double *v, int n, int sum);
    /* Collective: each rank's bytes[r] bytes at `mine`, in rank order, into
     * `all` on every rank. */
    int (*allgatherv)(void *ctx, const void *mine, void *all, const size_t *bytes, heat_error *err);
    int node_rank, node_size; /* this rank among the ranks of its node */
    /* The MPI library says that it takes GPU memory (MPIX_Query_cuda_support). */
    int gpu_aware;
} heat_halo_comm;

/* What the halo exchange cost, since the backend was created (the driver
 * reports the loop's share). Times in seconds of this rank's wall clock. */
typedef struct heat_halo_stats {
    int64_t exchanges;             /* exchanges run (one per pass of temporal_block steps) */
    double exposed;                /* time the rank's compute waited for halos: not hidden */
    double pack, transfer, unpack; /* the parts of an exchange (transfer: posted to arrived) */
    char transport[96];            /* "mpi, host-staged", "mpi, GPU memory", "nccl", "mpi" */
} heat_halo_stats;

/* x's counts and times added to st's (its transport kept). */
static inline void heat_halo_stats_add(heat_halo_stats *st, const heat_halo_stats *x)
{
    st->exchanges += x->exchanges;
    st->exposed += x->exposed, st->pack += x->pack, st->transfer += x->transfer;
    st->unpack += x->unpack;
}

/* The clock of the halo statistics: seconds of a monotonic wall clock. */
static inline double heat_halo_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
