/* The writer's parts that the distributed writer (h5dist.c) and the box
 * reader (h5box.c) share with h5file.c, so that every field file has one
 * layout, made in one place. Private to io/. */
#ifndef HEAT_H5FILE_IMPL_H
#define HEAT_H5FILE_IMPL_H

#include <hdf5.h>
#include <stdint.h>

#include "h5file.h"

#define HEAT_H5_FIELD_PATH "/VTKHDF/PointData/temperature"

/* The file access list of every field file (the 1.8 format, no locking);
 * H5I_INVALID_HID on failure. The caller closes it. */
hid_t heat_h5_file_access(void);

/* In the new, open file `fid`: the root attributes, the deck, /VTKHDF with
 * its attributes and the field's dataset (chunked, checksummed, deflated
 * when compress > 0), not yet written. Returns the dataset, or
 * H5I_INVALID_HID with *doing naming the step that failed. */
hid_t heat_h5_create_layout(hid_t fid, const heat_file_meta *m, int compress, const char **doing);

/* Its two halves: the metadata and groups (0, or -1 on failure), then the
 * field's dataset in /VTKHDF/PointData. With the MPI-IO driver every rank
 * calls both with the same metadata, and agrees on the first's outcome
 * before the second: creating a dataset is collective (HDF5 allocates its
 * chunks behind a barrier), while a failure of the first (a full disk) may
 * show on rank 0 alone, which writes the metadata. */
int heat_h5_create_meta(hid_t fid, const heat_file_meta *m);
hid_t heat_h5_create_field(hid_t fid, const heat_file_meta *m, int compress);

/* Creates /VTKHDF/PointData/material (unsigned bytes, the field's shape and
 * chunks, checksummed; fill value 255, which names no material) in a file
 * whose layout heat_h5_create_layout made. */
hid_t heat_h5_create_material(hid_t fid, const heat_file_meta *m, int compress);

/* The field's chunk shape (z, y, x): whole planes where they fit in about
 * 4 MiB, else whole rows, else part of a row, the axis split into equal
 * shares. */
void heat_h5_chunk_shape(const int64_t n[3], size_t vs, hsize_t chunk[3]);

/* The bytes a field of n[0] x n[1] x n[2] values of vs bytes takes in the
 * file uncompressed: its chunks, whole (HDF5 stores the edge chunks whole). */
double heat_h5_stored_bytes(const int64_t n[3], size_t vs);

/* Whether every chunk of the field dataset `ds` is in its chunk index (which
 * has no checksum; HDF5 reads a chunk it cannot find as fill values); else
 * 0 with what is wrong in what[n]. */
int heat_h5_chunks_complete(hid_t ds, char *what, size_t n);

/* Whether this file write is the one HEAT_TEST_FAIL_WRITE=n asks to fail
 * (counts every call of the process). */
int heat_h5_injected_failure(void);

#endif
