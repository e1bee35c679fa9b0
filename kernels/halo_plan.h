/* The geometry of one rank's part, shared by the backends: the local array
 * with its ghost layers, the views a sweep covers, the regions of the
 * overlapped step and the messages of a halo exchange. Plain arithmetic;
 * private to kernels/.
 *
 * Local array. Axis a holds gv[lo] valid ghost layers, the owned points, and
 * gv[hi] ghost layers, where gv = depth on a face with a neighbour and 0 on a
 * boundary of the grid (or an uncut periodic axis). A backend whose vector
 * loads need aligned rows (xalign values) gets the owned x range starting on
 * such a boundary (where x has ghost layers) and rows padded to it (always);
 * the padding holds zeros that no owned value ever reads.
 *
 * Views. A sweep writes every node of its view except the faces whose kind
 * is Dirichlet: that is how a boundary node of the grid is held, and also
 * how a view is bounded inside the array: its face layer is read, never
 * written. So a region R (the nodes to update) is swept as the view R + 1
 * layer on each side that is not a boundary of the grid; on the grid's
 * boundary the view keeps the deck's condition (Neumann mirror, periodic
 * wrap of an uncut axis, Dirichlet). Every node then sees the neighbours and
 * the arithmetic it has in a one-process run: results do not depend on the
 * split.
 *
 * Passes. With depth k, a pass of d <= k steps starts from k valid ghost
 * layers and sweeps, at its step s (1..d), the owned box grown by d - s
 * layers on every face with a neighbour (the rest of each step's ghosts go
 * stale, and are never read). Its last step (s = d, the owned box) runs as
 * the shell (the k layers of owned nodes at each face with a neighbour,
 * which the neighbours need) and then the interior, while the shell's
 * layers are exchanged.
 *
 * Exchange. With depth 1 (or one cut axis) one phase: every face's k layers
 * to its neighbour. With depth > 1 and several cut axes the k-deep ghosts
 * need edges and corners too: phases x, y, z in turn, each message spanning
 * the ghost layers of the axes exchanged before it.
 */
#ifndef HEAT_HALO_PLAN_H
#define HEAT_HALO_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "heat_case.h"
#include "heat_split.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A box of local indices, [lo, hi) per axis. */
typedef struct hbox {
    int64_t lo[3], hi[3];
} hbox;

/* What one sweep covers: the box, its faces included, and each face's kind
 * (heat_bc_type; HEAT_BC_DIRICHLET also for a face that is only read). */
typedef struct hview {
    hbox b;
    int face[HEAT_NFACES];
} hview;

/* One message: across `face` of this rank, to and from `peer`. */
typedef struct hmsg {
    int face, peer;
    int send_tag, recv_tag;
    hbox send, recv; /* the owned layers sent, the ghost layers received */
    size_t count;    /* values each way */
    size_t off;      /* where in the send and in the receive buffer */
} hmsg;

#define HEAT_HALO_MAX_PIECES 8

typedef struct heat_halo_plan {
    heat_part part;
    int dims;
    int depth;              /* ghost layers on a face with a neighbour */
    int bc[HEAT_NFACES];    /* the case's face kinds */
    int gv[HEAT_NFACES];    /* valid ghost layers per face: depth or 0 */
    int64_t off[3], ext[3]; /* where the owned box starts; the local array's extent */
    int64_t sy, sz;         /* strides of y and z in values */
    int64_t values;         /* the local array's values */
    hbox owned;
    int nphase;
    int nmsg[3];
    hmsg msg[3][HEAT_NFACES];
    size_t buf_values; /* values of all messages (each way) */
    int nshell;
    hbox shell[HEAT_NFACES];
    hbox interior; /* may be empty */
} heat_halo_plan;

/* The values between the starts of two rows of nx values of vs bytes where
 * the CUDA backend holds a whole grid: nx rounded up to 16 bytes, so that
 * every row starts on a 16-byte boundary and its kernels load whole 16-byte
 * groups wherever nx is (without it a row of 513 ran the one-value path,
 * 2.8 times slower than one of 512 at k = 1: docs/PERFORMANCE.md); a part's
 * rows are padded alike (xalign = 16 / vs).
 * HEAT_CUDA_ROWS=packed keeps rows of nx, for the tests of that path and for
 * measurement. */
int64_t heat_gpu_row_pitch(int64_t nx, size_t vs);

/* Lays out the part of `c`; xalign >= 1 values. */
void heat_halo_plan_init(heat_halo_plan *p, const heat_case *c, const heat_part *part, int xalign);

/* Re-plans the exchange in phases (x, y, z, each spanning the ghosts of the
 * axes before it) whatever the depth, so that ghost edges and corners are
 * filled too (multigrid's transfers read them). */
void heat_halo_plan_corners(heat_halo_plan *p);

/* Whether the part has any face with a neighbour. */
int heat_halo_any(const heat_halo_plan *p);

int64_t heat_halo_box_count(const hbox *b);

/* The owned box grown by e layers on every face with a neighbour. */
hbox heat_halo_grow(const heat_halo_plan *p, int e);

/* The view that updates exactly `region`. */
hview heat_halo_view(const heat_halo_plan *p, const hbox *region);

/* `region` cut along its outermost axis of more than one node (not an uncut
 * periodic axis, whose wrap needs it whole) into at most
 * `pieces` boxes (pieces <= HEAT_HALO_MAX_PIECES); returns their number. */
int heat_halo_pieces(const heat_halo_plan *p, const hbox *region, int pieces, hbox *out);

/* The operations of one pass of d <= depth steps, shared by the backends:
 *   HALO_SWEEP: `steps` steps over `view` (steps > 1 only where the backend
 *     fuses steps: one launch of the fused kernel);
 *   HALO_EXCHANGE: an exchange of the current level, nothing to hide it;
 *   HALO_LAST: the overlapped last step (shell, exchange, interior).
 * Without fusing: d - 1 single sweeps over the owned box grown by d - 1,
 * d - 2, ..., 1 layers, then HALO_LAST. Fusing (d > 1): one sweep of d steps
 * over the box grown by d - 1, then HALO_EXCHANGE; a pass that ends on a
 * check step (`resid`) fuses d - 1 steps and ends with HALO_LAST, since the
 * residual needs the level before the last step. */
typedef enum { HALO_SWEEP, HALO_EXCHANGE, HALO_LAST } halo_op_kind;

typedef struct halo_op {
    halo_op_kind kind;
    hview view;
    int steps;
} halo_op;

#define HEAT_HALO_MAX_OPS (HEAT_TEMPORAL_BLOCK_MAX + 2)

int heat_halo_pass(const heat_halo_plan *p, int d, int fused, int resid, halo_op *ops);

/* `v` with its first x node moved down to a multiple of xalign where x has
 * ghost layers (the vector loads of the GPU kernels need aligned rows); the
 * nodes it adds are recomputed alike or are ghosts that the next exchange
 * overwrites, so a backend that aligns takes the residual over the owned box
 * apart from the sweeps. */
hview heat_halo_align(const heat_halo_plan *p, hview v, int xalign);

/* The local index of local node (i, j, k). */
static inline int64_t heat_halo_at(const heat_halo_plan *p, int64_t i, int64_t j, int64_t k)
{
    return k * p->sz + j * p->sy + i;
}

#ifdef __cplusplus
}
#endif

#endif
