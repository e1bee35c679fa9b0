/* One field file written by every rank of a distributed run. See h5part.h
 * and docs/FORMAT.md.
 *
 * Two ways, the same file:
 * - collective: with a parallel HDF5 (H5_HAVE_PARALLEL), every rank opens
 *   the temporary file through MPI-IO, creates the layout with the same
 *   metadata (heat_h5_create_layout) and writes its box as a hyperslab in
 *   one collective H5Dwrite; HDF5 (1.10.2 and later) runs the filters,
 *   Fletcher-32 included, on chunks that several ranks share.
 * - gathered: with a serial HDF5 (or parallel.io = "aggregated"), rank 0
 *   creates the file and writes it chunk by chunk; for each chunk the ranks
 *   whose boxes it touches send their piece of it (MPI_Ssend of a subarray,
 *   so a rank sends only when rank 0 is ready for it). Rank 0 holds one
 *   chunk (about 4 MiB) at a time, never the whole field, and each chunk is
 *   filtered and written once.
 * Either way the file is made under its temporary name, flushed, renamed
 * into place by rank 0, and every step's outcome is agreed by all ranks, so
 * that a failure anywhere leaves no file and the same error on every rank.
 */
#include <errno.h>
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "h5file_impl.h"
#include "h5part.h"
#include "io_util.h"
#include "output.h"

#define TAG_PIECE 7301

struct heat_h5dist {
    MPI_Comm comm; /* our own duplicate: the writer thread's alone */
    int rank, size;
    int collective;
    int64_t (*boxes)[6]; /* every rank's box: lo[3], n[3] */
    int64_t lo[3], n[3];
    size_t vs;
    long tmp_pid; /* rank 0's pid: every rank names the same temporary file */
};

int heat_h5dist_rank(const heat_h5dist *d)
{
    return d->rank;
}

const char *heat_h5dist_method(const heat_h5dist *d)
{
    return d->collective ? "collective (parallel HDF5, MPI-IO)"
                         : "gathered to rank 0 chunk by chunk (serial HDF5)";
}

int heat_h5dist_agree(heat_h5dist *d, int rc, heat_error *err)
{
    int lowest = rc != HEAT_OK ? d->size - d->rank : 0;
    MPI_Allreduce(MPI_IN_PLACE, &lowest, 1, MPI_INT, MPI_MAX, d->comm);
    if (lowest == 0) return HEAT_OK;
    const int root = d->size - lowest;
    heat_error e;
    if (d->rank == root) e = *err;
    MPI_Bcast(&e, (int)sizeof e, MPI_BYTE, root, d->comm);
    *err = e;
    if (root != 0) heat_error_prefix(err, "rank %d: ", root);
    return err->code;
}

int heat_h5dist_create(const heat_case *c, const heat_part *part, MPI_Comm comm, heat_h5dist **out,
                       heat_error *err)
{
    *out = NULL;
    int rc = heat_output_check_parallel_io(c, err);
    if (rc) return rc;
    heat_h5dist *d = calloc(1, sizeof *d);
    if (!d) return heat_error_set(err, HEAT_ERUNTIME, "out of memory");
    MPI_Comm_dup(comm, &d->comm);
    MPI_Comm_set_errhandler(d->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(d->comm, &d->rank);
    MPI_Comm_size(d->comm, &d->size);
#ifdef H5_HAVE_PARALLEL
    d->collective = c->parallel.io != HEAT_PIO_AGGREGATED;
#endif
    d->vs = heat_case_value_size(c);
    memcpy(d->lo, part->lo, sizeof d->lo);
    memcpy(d->n, part->n, sizeof d->n);
    d->boxes = malloc(sizeof *d->boxes * (size_t)d->size);
    if (!d->boxes) {
        heat_h5dist_destroy(d);
        return heat_error_set(err, HEAT_ERUNTIME, "out of memory");
    }
    int64_t mine[6] = {d->lo[0], d->lo[1], d->lo[2], d->n[0], d->n[1], d->n[2]};
    MPI_Allgather(mine, 6, MPI_INT64_T, d->boxes, 6, MPI_INT64_T, d->comm);
    d->tmp_pid = (long)getpid();
    MPI_Bcast(&d->tmp_pid, 1, MPI_LONG, 0, d->comm);
    *out = d;
    return HEAT_OK;
}

void heat_h5dist_destroy(heat_h5dist *d)
{
    if (!d) return;
    if (d->comm != MPI_COMM_NULL) MPI_Comm_free(&d->comm);
    free(d->boxes);
    free(d);
}

/* HEAT_TEST_FAIL_WRITE=n fails the n-th write, on the rank HEAT_TEST_FAIL_RANK
 * names (every rank when unset). Every rank counts every write. */
static int injected(const heat_h5dist *d)
{
    int fail = heat_h5_injected_failure();
    const char *r = getenv("HEAT_TEST_FAIL_RANK");
    return fail && (!r || !*r || atoi(r) == d->rank);
}

static int injected_error(const heat_h5dist *d, const char *path, const char *tmp, heat_error *err)
{
    (void)d;
    return heat_error_set(err, HEAT_ERUNTIME,
                          "cannot write %s: injected failure (HEAT_TEST_FAIL_WRITE=%s) after "
                          "writing part of %s",
                          path, getenv("HEAT_TEST_FAIL_WRITE"), tmp);
}

static int h5_error(const char *path, const char *doing, heat_error *err)
{
    char cause[512];
    heat_io_h5_cause(cause, sizeof cause, NULL);
    return heat_error_set(err, HEAT_ERUNTIME, "cannot write %s: %s (%s)", path, cause, doing);
}

/* Rank 0 makes the temporary file durable and renames it into place; the
 * outcome is agreed. */
static int commit(heat_h5dist *d, const char *tmp, const char *path, int rc, heat_error *err)
{
    if (rc == HEAT_OK && d->rank == 0) rc = heat_io_commit(tmp, path, err);
    rc = heat_h5dist_agree(d, rc, err);
    if (rc != HEAT_OK && d->rank == 0) unlink(tmp);
    return rc;
}

/* ------------------------------------------------------------ collective */

#ifdef H5_HAVE_PARALLEL
/* This rank's box of `box` (memory type mtype) into dataset ds, in one
 * collective H5Dwrite that every rank joins, or none does. */
static int write_box_collective(heat_h5dist *d, hid_t ds, hid_t mtype, const void *box,
                                const char *path, const char *doing, heat_error *err)
{
    hid_t fs = H5I_INVALID_HID, ms = H5I_INVALID_HID, dxpl = H5I_INVALID_HID;
    int rc = HEAT_OK;
    const hsize_t start[3] = {(hsize_t)d->lo[2], (hsize_t)d->lo[1], (hsize_t)d->lo[0]};
    const hsize_t count[3] = {(hsize_t)d->n[2], (hsize_t)d->n[1], (hsize_t)d->n[0]};
    if ((fs = H5Dget_space(ds)) < 0 ||
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) < 0 ||
        (ms = H5Screate_simple(3, count, NULL)) < 0 || (dxpl = H5Pcreate(H5P_DATASET_XFER)) < 0 ||
        H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE) < 0)
        rc = h5_error(path, doing, err);
    if (!(rc = heat_h5dist_agree(d, rc, err)) && H5Dwrite(ds, mtype, ms, fs, dxpl, box) < 0)
        rc = h5_error(path, doing, err);
    if (dxpl >= 0) H5Pclose(dxpl);
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    return rc;
}

/* Whether the file system of `tmp` has room for the file of m, uncompressed,
 * and the file size limit allows it (HEAT_ERUNTIME saying how much is
 * missing): a collective write cannot meet a full disk half-way, because
 * HDF5 fails its collective calls on the ranks that write (rank 0 writes
 * the metadata; creating a dataset writes its fill values) while the other
 * ranks wait in them for ever. Checked by rank 0 before the file is made
 * (its limit taken for every rank's); with compression the file may come
 * out smaller, so this may refuse a file that would have fitted, never
 * hang. */
static int room_for(const char *path, const char *tmp, const heat_file_meta *m, heat_error *err)
{
    char dir[HEAT_PATH_MAX + HEAT_NAME_MAX + 128];
    snprintf(dir, sizeof dir, "%s", tmp);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    const double free_b = heat_io_free_bytes(slash ? dir : ".");
    const size_t vs = m->precision == HEAT_FLOAT ? 4 : 8;
    const double field = heat_h5_stored_bytes(m->n, vs); /* the material index: its chunks */
    const double need =
        field + (m->material ? field / (double)vs : 0.0) + (double)strlen(m->deck) + (256 << 10);
    const double limit = heat_io_file_limit();
    if (limit >= 0 && limit < need)
        return heat_error_set(err, HEAT_ERUNTIME,
                              "cannot write %s: %s (the file needs up to %.3g MB; the file size "
                              "limit, ulimit -f, is %.3g MB)",
                              path, strerror(EFBIG), need / 1e6, limit / 1e6);
    if (free_b < 0 || free_b >= need) return HEAT_OK; /* unknown: the write says why */
    return heat_error_set(err, HEAT_ERUNTIME,
                          "cannot write %s: %s (the file needs up to %.3g MB, %.3g MB are free)",
                          path, strerror(ENOSPC), need / 1e6, free_b / 1e6);
}

static int write_collective(heat_h5dist *d, const char *path, const char *tmp,
                            const heat_file_meta *m, const void *box, int compress, heat_error *err)
{
    hid_t fapl = H5I_INVALID_HID, fid = H5I_INVALID_HID, ds = H5I_INVALID_HID,
          mds = H5I_INVALID_HID;
    const char *doing = "creating it";
    int rc = d->rank == 0 ? room_for(path, tmp, m, err) : HEAT_OK;
    if ((rc = heat_h5dist_agree(d, rc, err))) return rc;
    if ((fapl = heat_h5_file_access()) < 0 || H5Pset_fapl_mpio(fapl, d->comm, MPI_INFO_NULL) < 0 ||
        (fid = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl)) < 0)
        rc = h5_error(path, doing, err);
    if ((rc = heat_h5dist_agree(d, rc, err))) goto out;
    doing = "writing the metadata";
    if (heat_h5_create_meta(fid, m)) rc = h5_error(path, doing, err);
    /* agreed before the collective creation of the datasets (h5file_impl.h) */
    if ((rc = heat_h5dist_agree(d, rc, err))) goto out;
    doing = "creating the field";
    if ((ds = heat_h5_create_field(fid, m, compress)) < 0 ||
        (m->material && (doing = "creating the material index",
                         mds = heat_h5_create_material(fid, m, compress)) < 0))
        rc = h5_error(path, doing, err);
    if ((rc = heat_h5dist_agree(d, rc, err))) goto out;
    rc = write_box_collective(d, ds,
                              m->precision == HEAT_FLOAT ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE,
                              box, path, "writing the field", err);
    if (!rc && m->material)
        rc = write_box_collective(d, mds, H5T_NATIVE_UINT8, m->material, path,
                                  "writing the material index", err);
    if (!rc && injected(d)) rc = injected_error(d, path, tmp, err);
    if ((rc = heat_h5dist_agree(d, rc, err))) goto out;
    doing = "closing it";
    H5Dclose(ds), ds = H5I_INVALID_HID;
    if (mds >= 0) H5Dclose(mds), mds = H5I_INVALID_HID;
    /* Closing flushes the metadata and the data of every rank (MPI_File_sync). */
    if (H5Fflush(fid, H5F_SCOPE_GLOBAL) < 0) rc = h5_error(path, doing, err);
    herr_t closed = H5Fclose(fid);
    fid = H5I_INVALID_HID;
    if (!rc && closed < 0) rc = h5_error(path, doing, err);
    rc = heat_h5dist_agree(d, rc, err);
out:
    if (mds >= 0) H5Dclose(mds);
    if (ds >= 0) H5Dclose(ds);
    if (fid >= 0) H5Fclose(fid);
    if (fapl >= 0) H5Pclose(fapl);
    H5Eclear2(H5E_DEFAULT);
    return rc;
}
#endif

/* -------------------------------------------------------------- gathered */

/* The intersection of box (lo, n) with the piece [plo, phi): 0 when empty. */
static int intersect(const int64_t *lo, const int64_t *n, const int64_t plo[3],
                     const int64_t phi[3], int64_t ilo[3], int64_t ihi[3])
{
    for (int a = 0; a < 3; a++) {
        ilo[a] = lo[a] > plo[a] ? lo[a] : plo[a];
        ihi[a] = lo[a] + n[a] < phi[a] ? lo[a] + n[a] : phi[a];
        if (ihi[a] <= ilo[a]) return 0;
    }
    return 1;
}

/* The subarray [ilo, ihi) of an array of `ext` values per axis starting at
 * `base` (z, y, x order for MPI, x fastest). */
static MPI_Datatype subarray(const int64_t base[3], const int64_t ext[3], const int64_t ilo[3],
                             const int64_t ihi[3], MPI_Datatype value)
{
    int sizes[3], sub[3], starts[3];
    for (int a = 0; a < 3; a++) {
        sizes[2 - a] = (int)ext[a];
        sub[2 - a] = (int)(ihi[a] - ilo[a]);
        starts[2 - a] = (int)(ilo[a] - base[a]);
    }
    MPI_Datatype t;
    MPI_Type_create_subarray(3, sizes, sub, starts, MPI_ORDER_C, value, &t);
    MPI_Type_commit(&t);
    return t;
}

/* What the gathered writer moves: the field, or the material index. */
typedef struct {
    hid_t ds;
    hid_t mtype;        /* its memory type */
    MPI_Datatype value; /* the same for MPI */
    size_t es;          /* bytes per value */
    const void *box;    /* this rank's box of it */
    const char *doing;  /* "writing the field", ... for messages */
} gathered_data;

/* The piece [plo, plo + pext) of data `g` into rank 0's `piece`, from every
 * rank whose box it touches; the other ranks send theirs. */
static int gather_piece(heat_h5dist *d, const gathered_data *g, const int64_t plo[3],
                        const int64_t pext[3], void *piece, const char *path, heat_error *err)
{
    int rc = HEAT_OK;
    int64_t phi[3], ilo[3], ihi[3];
    for (int a = 0; a < 3; a++) phi[a] = plo[a] + pext[a];
    if (d->rank != 0) {
        if (!intersect(d->lo, d->n, plo, phi, ilo, ihi)) return HEAT_OK;
        MPI_Datatype t = subarray(d->lo, d->n, ilo, ihi, g->value);
        int e = MPI_Ssend(g->box, 1, t, 0, TAG_PIECE, d->comm);
        MPI_Type_free(&t);
        if (e != MPI_SUCCESS)
            rc = heat_error_set(err, HEAT_ERUNTIME,
                                "cannot write %s: sending rank %d's part failed", path, d->rank);
        return rc;
    }
    for (int r = 0; r < d->size; r++) {
        if (!intersect(d->boxes[r], d->boxes[r] + 3, plo, phi, ilo, ihi)) continue;
        MPI_Datatype t = subarray(plo, pext, ilo, ihi, g->value);
        if (r == 0) {
            MPI_Datatype s = subarray(d->lo, d->n, ilo, ihi, g->value);
            MPI_Sendrecv(g->box, 1, s, 0, TAG_PIECE, piece, 1, t, 0, TAG_PIECE, MPI_COMM_SELF,
                         MPI_STATUS_IGNORE);
            MPI_Type_free(&s);
        } else if (MPI_Recv(piece, 1, t, r, TAG_PIECE, d->comm, MPI_STATUS_IGNORE) != MPI_SUCCESS &&
                   !rc) {
            rc = heat_error_set(err, HEAT_ERUNTIME,
                                "cannot write %s: receiving rank %d's part failed", path, r);
        }
        MPI_Type_free(&t);
    }
    return rc;
}

/* Data `g` chunk by chunk (chunk: z, y, x), in the same order on every
 * rank; rank 0 writes each piece. After a failure the rest still arrives
 * (no rank is left waiting), but nothing more is written. */
static int gather_data(heat_h5dist *d, const gathered_data *g, const heat_file_meta *m,
                       const hsize_t chunk[3], void *piece, const char *path, int rc,
                       heat_error *err)
{
    const int64_t ck[3] = {(int64_t)chunk[2], (int64_t)chunk[1], (int64_t)chunk[0]};
    int64_t plo[3];
    for (plo[2] = 0; plo[2] < m->n[2]; plo[2] += ck[2])
        for (plo[1] = 0; plo[1] < m->n[1]; plo[1] += ck[1])
            for (plo[0] = 0; plo[0] < m->n[0]; plo[0] += ck[0]) {
                int64_t pext[3];
                for (int a = 0; a < 3; a++)
                    pext[a] = (plo[a] + ck[a] < m->n[a] ? plo[a] + ck[a] : m->n[a]) - plo[a];
                int prc = gather_piece(d, g, plo, pext, piece, path, err);
                if (!rc) rc = prc;
                if (rc || d->rank != 0) continue;
                const hsize_t start[3] = {(hsize_t)plo[2], (hsize_t)plo[1], (hsize_t)plo[0]};
                const hsize_t count[3] = {(hsize_t)pext[2], (hsize_t)pext[1], (hsize_t)pext[0]};
                hid_t fs = H5Dget_space(g->ds), ms = H5Screate_simple(3, count, NULL);
                if (fs < 0 || ms < 0 ||
                    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) < 0 ||
                    H5Dwrite(g->ds, g->mtype, ms, fs, H5P_DEFAULT, piece) < 0)
                    rc = h5_error(path, g->doing, err);
                if (ms >= 0) H5Sclose(ms);
                if (fs >= 0) H5Sclose(fs);
            }
    return rc;
}

static int write_gathered(heat_h5dist *d, const char *path, const char *tmp,
                          const heat_file_meta *m, const void *box, int compress, heat_error *err)
{
    hid_t fapl = H5I_INVALID_HID, fid = H5I_INVALID_HID;
    gathered_data g = {H5I_INVALID_HID,
                       d->vs == sizeof(float) ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE,
                       d->vs == sizeof(float) ? MPI_FLOAT : MPI_DOUBLE,
                       d->vs,
                       box,
                       "writing the field"};
    gathered_data mat = {H5I_INVALID_HID, H5T_NATIVE_UINT8,
                         MPI_UINT8_T,     1,
                         m->material,     "writing the material index"};
    const char *doing = "creating it";
    int rc = HEAT_OK;
    char *piece = NULL;
    hsize_t chunk[3]; /* z, y, x */
    heat_h5_chunk_shape(m->n, d->vs, chunk);
    if (d->rank == 0) {
        unlink(tmp);
        piece = malloc((size_t)(chunk[0] * chunk[1] * chunk[2]) * d->vs);
        if (!piece)
            rc = heat_error_set(err, HEAT_ERUNTIME, "cannot write %s: out of memory", path);
        else if ((fapl = heat_h5_file_access()) < 0 ||
                 (fid = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl)) < 0 ||
                 (g.ds = heat_h5_create_layout(fid, m, compress, &doing)) < 0 ||
                 (m->material && (doing = "creating the material index",
                                  mat.ds = heat_h5_create_material(fid, m, compress)) < 0))
            rc = h5_error(path, doing, err);
    }
    if ((rc = heat_h5dist_agree(d, rc, err))) goto out;
    rc = gather_data(d, &g, m, chunk, piece, path, rc, err);
    if (m->material) rc = gather_data(d, &mat, m, chunk, piece, path, rc, err);
    if (!rc && injected(d)) rc = injected_error(d, path, tmp, err);
    if ((rc = heat_h5dist_agree(d, rc, err))) goto out;
    if (d->rank == 0) {
        H5Dclose(g.ds), g.ds = H5I_INVALID_HID;
        if (mat.ds >= 0) H5Dclose(mat.ds), mat.ds = H5I_INVALID_HID;
        herr_t closed = H5Fclose(fid);
        fid = H5I_INVALID_HID;
        if (closed < 0) rc = h5_error(path, "closing it", err);
    }
    rc = heat_h5dist_agree(d, rc, err);
out:
    if (g.ds >= 0) H5Dclose(g.ds);
    if (mat.ds >= 0) H5Dclose(mat.ds);
    if (fid >= 0) H5Fclose(fid);
    if (fapl >= 0) H5Pclose(fapl);
    H5Eclear2(H5E_DEFAULT);
    free(piece);
    return rc;
}

int heat_h5dist_write(heat_h5dist *d, const char *path, const heat_file_meta *m, const void *box,
                      int compress, heat_error *err)
{
    heat_io_h5_quiet();
    char tmp[HEAT_PATH_MAX + HEAT_NAME_MAX + 128];
    heat_file_tmp_path_of(tmp, sizeof tmp, path, d->tmp_pid);
    int rc;
#ifdef H5_HAVE_PARALLEL
    if (d->collective)
        rc = write_collective(d, path, tmp, m, box, compress, err);
    else
#endif
        rc = write_gathered(d, path, tmp, m, box, compress, err);
    return commit(d, tmp, path, rc, err);
}
