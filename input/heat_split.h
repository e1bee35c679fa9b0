/* The split of a grid over ranks: plain arithmetic on a case, no MPI.
 *
 * A run on P processes cuts the grid into px x py x pz boxes (pz = 1 in 2D),
 * a Cartesian decomposition as MPI_Cart_create lays it out: rank r has the
 * coordinates (cx, cy, cz) in row-major order with z fastest. Along an axis
 * of n points cut into p parts, part c has n / p points, the first n % p
 * parts one more (uneven splits are allowed). Each box is surrounded by
 * `depth` ghost layers on every face that has a neighbour (a halo face);
 * the other faces are the grid's own boundary, or an uncut periodic axis,
 * which wraps inside the box.
 *
 * The halo depth is solver.temporal_block (k): ranks exchange k-deep halos
 * once per k steps. Results never depend on the split (docs/ARCHITECTURE.md).
 */
#ifndef HEAT_SPLIT_H
#define HEAT_SPLIT_H

#include <stddef.h>
#include <stdint.h>

#include "heat_case.h"

/* One rank's part of the grid: what a backend and io/ need to know. */
typedef struct heat_part {
    int ranks[3];        /* the split: ranks per axis */
    int coord[3];        /* this rank's place in it */
    int rank, size;      /* this rank, and the number of ranks */
    int64_t lo[3], n[3]; /* the box it owns: first node and node count per axis */
    int peer[6];         /* the rank across each face (heat_face order), -1: no neighbour */
    int depth;           /* ghost layers on each face that has a neighbour */
} heat_part;

/* The halo depth of a case: solver.temporal_block. */
int heat_split_depth(const heat_case *c);

/* Whether `ranks` fits the grid with halos of `depth`: in 2D pz must be 1,
 * and every box must have at least max(depth, 1) points on each cut axis.
 * When not, says why in why[n] (naming the numbers) and returns 0. */
int heat_split_fits(const heat_case *c, const int ranks[3], int depth, char *why, size_t n);

/* The split of `nranks` with the fewest halo points exchanged per step, among
 * every factorization px * py * pz = nranks that fits (ties: fewer cuts of x,
 * then of y, so that halos stay whole rows). Returns 0, or -1 when none fits. */
int heat_split_choose(const heat_case *c, int nranks, int depth, int ranks[3]);

/* Rank -> coordinates in the split (row-major, z fastest: MPI_Cart's order). */
void heat_split_coord(const int ranks[3], int rank, int coord[3]);

/* The box of the part at `coord`: its first node and node count per axis. */
void heat_split_box(const heat_case *c, const int ranks[3], const int coord[3], int64_t lo[3],
                    int64_t n[3]);

/* Fills *p for `rank` of the split: box, neighbours (the periodic wrap
 * included; an uncut axis has none) and depth. */
void heat_split_part(const heat_case *c, const int ranks[3], int rank, int depth, heat_part *p);

/* Values one rank receives per halo exchange (every face with a neighbour,
 * depth layers; with depth > 1 and several cut axes the edges and corners
 * too, as the exchange sends them). */
int64_t heat_split_halo_values(const heat_part *p);

/* Values one part holds with its ghost layers (per time level). */
int64_t heat_split_local_values(const heat_part *p);

#endif
