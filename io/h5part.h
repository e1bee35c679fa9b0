/* Field files of a grid split over ranks: each rank reads its own box of a
 * file (any split, any rank count, files of a one-process run included),
 * and the ranks write one file together, with the layout, checksums,
 * temporary name, fsync and rename of h5file.h. docs/FORMAT.md says which
 * writer is used where, and why.
 *
 * The writer is collective: every rank calls it for the same file with the
 * same metadata, and every rank returns the same status (the message of the
 * lowest rank that failed, naming it). */
#ifndef HEAT_H5PART_H
#define HEAT_H5PART_H

#include <stddef.h>
#include <stdint.h>

#include "h5file.h"
#include "heat_case.h"
#include "heat_error.h"
#include "heat_split.h"

/* Reads the box [lo, lo + n) of the field of `path` (metadata `m` from
 * heat_file_read_meta) into `field` (n[0] * n[1] * n[2] values of `as`, x
 * fastest), converting the precision as heat_file_read_field does, and so
 * verifies the checksums of the chunks it touches. Errors as
 * heat_file_read_field's. */
int heat_file_read_box(const char *path, const heat_file_meta *m, heat_precision as,
                       const int64_t lo[3], const int64_t n[3], void *field, heat_error *err);

/* The same box of the file's material index (m->has_material), one byte a
 * node. */
int heat_file_read_material_box(const char *path, const heat_file_meta *m, const int64_t lo[3],
                                const int64_t n[3], uint8_t *material, heat_error *err);

/* The ranks' writer (h5dist.c, built with MPI). */
typedef struct heat_h5dist heat_h5dist;

#ifdef HEAT_HAVE_MPI
#include <mpi.h>
/* The writer of `part` over the ranks of `comm` (duplicated: the writer
 * thread has its own). Collective. parallel.io chooses collective writes
 * (a parallel HDF5 needed: HEAT_EINPUT without one) or gathered ones;
 * "auto" takes collective where the HDF5 is parallel. */
int heat_h5dist_create(const heat_case *c, const heat_part *part, MPI_Comm comm, heat_h5dist **out,
                       heat_error *err);
#endif

/* Writes `box` (this rank's part->n values, x fastest) as its part of the
 * field file `path`, atomically as heat_file_write does. Collective. With
 * HEAT_TEST_FAIL_WRITE=n (and HEAT_TEST_FAIL_RANK=r: only on rank r) the
 * n-th write fails half-way. */
int heat_h5dist_write(heat_h5dist *d, const char *path, const heat_file_meta *m, const void *box,
                      int compress, heat_error *err);

/* Collective: the status of the lowest rank whose `rc` is not HEAT_OK, with
 * its message (naming the rank when it is not 0), on every rank. */
int heat_h5dist_agree(heat_h5dist *d, int rc, heat_error *err);

/* This rank in the writer's communicator (0 does the directory's work). */
int heat_h5dist_rank(const heat_h5dist *d);

/* "collective (parallel HDF5)" or "gathered to rank 0 slab by slab". */
const char *heat_h5dist_method(const heat_h5dist *d);

void heat_h5dist_destroy(heat_h5dist *d);

#endif
