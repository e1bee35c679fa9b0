/* Small helpers shared inside io/: durable renames, file names, HDF5 error
 * text. Not part of the public interface. */
#ifndef HEAT_IO_UTIL_H
#define HEAT_IO_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "heat_error.h"

/* File names inside the output directory (name, step): docs/FORMAT.md. */
#define HEAT_SNAPSHOT_FMT   "%s_%08lld.vtkhdf"
#define HEAT_CHECKPOINT_FMT "%s_ckpt_%08lld.vtkhdf"

/* Makes `tmp` durable and moves it to `path`: fsync(tmp), rename, fsync of
 * the directory. On failure removes `tmp` and returns HEAT_ERUNTIME naming
 * `path` and the system's reason. */
int heat_io_commit(const char *tmp, const char *path, heat_error *err);

/* fsync of the directory that holds `path` (the rename itself must reach the
 * disk); 0 or -1 with errno set. */
int heat_io_fsync_parent(const char *path);

/* Makes room for `need` elements of `elem` bytes in the malloc'd *array of
 * *cap elements, doubling (from 16); 0, or -1 when out of memory (the array
 * is then unchanged). */
int heat_io_grow(void **array, size_t *cap, size_t need, size_t elem);

/* The free bytes of the file system where `dir` is or would be made (its
 * nearest existing ancestor), or -1 when that cannot be told.
 * HEAT_TEST_FREE_BYTES=n in the environment makes it n, for the tests. */
double heat_io_free_bytes(const char *dir);

/* This process's file size limit in bytes (RLIMIT_FSIZE, ulimit -f; a write
 * past it fails with EFBIG, heat ignoring SIGXFSZ), or -1 where there is
 * none. */
double heat_io_file_limit(void);

/* Starts HDF5 with its exit handler off (see heat_io_h5_quiet). Called
 * before MPI_Init: a parallel HDF5 started after it ties its shutdown to
 * MPI_Finalize, which then crashes on a file whose close failed (a full
 * disk) as the exit handler would. */
void heat_io_h5_start(void);

/* Switches off HDF5's printing of its error stack for the calling thread
 * (the setting is per thread in thread-safe builds). */
void heat_io_h5_quiet(void);

/* The cause of the HDF5 call that just failed, from the error stack: the
 * system's reason where the stack has one ("No space left on device"),
 * else the innermost description. Sets *checksum when a checksum failed. */
void heat_io_h5_cause(char *buf, size_t n, int *checksum);

#endif
