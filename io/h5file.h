/* One field file: a VTKHDF ImageData file (ParaView opens it on its own)
 * that also carries everything a restart needs. Snapshots and checkpoints
 * share this layout; docs/FORMAT.md is the reference.
 *
 * Files are written atomically: under `<path>.<pid>.tmp`, flushed to disk, renamed
 * into place and the directory flushed, so that a file under its final name
 * is always complete. The field is stored in chunks with HDF5's Fletcher-32
 * checksum filter, so that a damaged file is an error on reading, never
 * silently different data.
 *
 * HDF5's own error printing is switched off; its errors come back as
 * heat_error messages naming the file and the cause.
 */
#ifndef HEAT_H5FILE_H
#define HEAT_H5FILE_H

#include <stdint.h>

#include "heat_case.h"
#include "heat_error.h"

/* The layout version this program writes and the newest it reads: 2 adds
 * the metadata checksum (heat_checksum); format 1 files are still read. */
#define HEAT_FORMAT_VERSION 2

typedef enum { HEAT_FILE_SNAPSHOT, HEAT_FILE_CHECKPOINT, HEAT_FILE_KIND_COUNT } heat_file_kind;

/* "snapshot", "checkpoint": the `kind` attribute's values. */
extern const char *const heat_file_kind_names[HEAT_FILE_KIND_COUNT + 1];

/* A file's metadata: the restart state and the grid. */
typedef struct heat_file_meta {
    heat_file_kind kind;
    int64_t format_version; /* HEAT_FORMAT_VERSION when written by this program */
    char program_version[64];
    int64_t step;
    double time; /* simulated time of `step` */
    double dt;   /* the time step of the run that wrote it */
    heat_precision precision;
    int dims; /* 2 (n[2] == 1) or 3 */
    int64_t n[3];
    double length[3], origin[3], spacing[3];
    double alpha;
    heat_bc bc[HEAT_NFACES];
    char *deck; /* the canonical deck text; malloc'd by heat_file_read_meta */
    /* Written only: the material index of every node the writer holds (the
     * field's layout: the whole grid, or a rank's box), or NULL for none;
     * borrowed. */
    const uint8_t *material;
    int has_material; /* read: the file holds /VTKHDF/PointData/material */
    /* Read only: how the field is stored. */
    int has_checksum;  /* the Fletcher-32 filter is on the field (always, or it is refused) */
    int meta_checksum; /* the metadata checksum was verified (format 2 and later) */
    int deflate;       /* deflate level, 0 when off */
    /* A checkpoint of a steady run: the stall check's state (the lowest
     * residual, its step, the checks since), so that a restart stops where
     * the run would have; has_steady 0 where the file has none. */
    int has_steady;
    double steady_best;
    int64_t steady_best_step, steady_no_best;
} heat_file_meta;

/* The temporary name a file `path` is written under before it is renamed
 * into place: `<path>.<pid>.tmp`, unique per process. */
void heat_file_tmp_path(char *buf, size_t n, const char *path);

/* The same name for the process `pid` (the ranks of a run writing one file
 * together all use rank 0's). */
void heat_file_tmp_path_of(char *buf, size_t n, const char *path, long pid);

/* Fills `m` from a derived case for a file of `kind` at `step`; `deck` is
 * borrowed (NULL: none). */
void heat_file_meta_from_case(heat_file_meta *m, const heat_case *c, heat_file_kind kind,
                              int64_t step, double time, const char *deck);

/* Writes `field` (n[0]*n[1]*n[2] values of m->precision, x fastest) and the
 * metadata to `path`, atomically (see above). compress is the deflate level
 * 0..9 (0: off). Returns HEAT_ERUNTIME with the path and the cause (the
 * system's reason where there is one: "No space left on device") on any
 * failure, after removing the temporary file; an earlier file under `path`
 * is then untouched.
 *
 * For tests: with HEAT_TEST_FAIL_WRITE=<n> in the environment, the n-th call
 * of this function in the process fails after writing part of the file. */
int heat_file_write(const char *path, const heat_file_meta *m, const void *field, int compress,
                    heat_error *err);

/* Reads the metadata of `path` (nothing of the field) into *m; free it with
 * heat_file_meta_free. Returns HEAT_EINPUT when the file is missing or
 * unreadable, is not an HDF5 file, or is not a heat snapshot or checkpoint
 * (or is of a newer format), and HEAT_ERUNTIME when it is one but cannot be
 * read (damaged: the message starts with "corrupt: "). The messages of the
 * readers leave the context to their callers: they do not name the file. */
int heat_file_read_meta(const char *path, heat_file_meta *m, heat_error *err);

/* Reads the whole field of `path` (metadata `m` from heat_file_read_meta)
 * into `field` (m->n[0]*m->n[1]*m->n[2] values of `as`), converting it to
 * `as` when the file holds the other precision, and so verifies every
 * chunk's checksum. HEAT_ERUNTIME ("corrupt: ...") when a checksum fails,
 * the data cannot be read or the field's shape is no longer m's. */
int heat_file_read_field(const char *path, const heat_file_meta *m, heat_precision as, void *field,
                         heat_error *err);

/* Frees what heat_file_read_meta allocated; safe on a zeroed struct. */
void heat_file_meta_free(heat_file_meta *m);

/* The index of the first NaN or Inf of n values of precision `p`, or -1
 * when all are finite. Read fields are scanned (the fill value of field
 * files is NaN: a chunk HDF5 did not find reads as NaN), and fields are
 * scanned before they are written. */
int64_t heat_first_nonfinite(const void *field, int64_t n, heat_precision p);

/* Compares a case (the deck of a restart) with a file's metadata: grid
 * (points, length, origin), precision, boundary conditions and diffusivity
 * must be the same. Returns HEAT_EINPUT listing every difference, each with
 * the deck key, the deck's value and the file's. */
int heat_file_check_case(const heat_file_meta *m, const heat_case *c, heat_error *err);

/* An integer dataset of one value per node, such as a material index map
 * (regions = ( { file = { path; dataset; }; } ), docs/DECK.md), read plane
 * by plane. Open checks that it is an integer dataset of the grid's shape,
 * (nz, ny, nx), or (ny, nx) for nz = 1: HEAT_EINPUT naming the file and
 * dataset otherwise. */
typedef struct heat_intfile heat_intfile;
int heat_intfile_open(const char *path, const char *dataset, const int64_t n[3], heat_intfile **out,
                      heat_error *err);
/* Plane k (ny nx values, x fastest), as 64-bit integers (wider values
 * clamped, as HDF5 converts them). */
int heat_intfile_plane(heat_intfile *f, int64_t k, int64_t *plane, heat_error *err);
void heat_intfile_close(heat_intfile *f);

/* "snapshot" or "checkpoint". */
const char *heat_file_kind_name(heat_file_kind k);

#endif
