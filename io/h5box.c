/* Reading one box of a field file: what each rank of a distributed run
 * reads at a restart or from initial.path. See h5part.h. */
#include <hdf5.h>
#include <stdio.h>

#include "h5file_impl.h"
#include "h5part.h"
#include "io_util.h"

/* The box [lo, lo + n) of dataset `name` (`what` in messages: "the
 * field") into buf as mtype, its chunks' checksums verified. */
static int read_box(const char *path, const heat_file_meta *m, const char *name, const char *what,
                    hid_t mtype, const int64_t lo[3], const int64_t n[3], void *buf,
                    heat_error *err)
{
    heat_io_h5_quiet();
    hid_t fapl = heat_h5_file_access(), fid = H5I_INVALID_HID, ds = H5I_INVALID_HID,
          fs = H5I_INVALID_HID, ms = H5I_INVALID_HID;
    int rc = HEAT_OK;
    if (fapl < 0 || (fid = H5Fopen(path, H5F_ACC_RDONLY, fapl)) < 0 ||
        (ds = H5Dopen2(fid, name, H5P_DEFAULT)) < 0 || (fs = H5Dget_space(ds)) < 0)
        goto h5fail;
    /* (nz, ny, nx), or (ny, nx) for a one-plane grid (docs/FORMAT.md). */
    hsize_t dims[3] = {1, 1, 1};
    const int rank = H5Sget_simple_extent_ndims(fs);
    if (rank < 2 || rank > 3 || H5Sget_simple_extent_dims(fs, dims + (3 - rank), NULL) != rank ||
        (rank == 2 && m->n[2] != 1) || dims[0] != (hsize_t)m->n[2] || dims[1] != (hsize_t)m->n[1] ||
        dims[2] != (hsize_t)m->n[0]) {
        rc = heat_error_set(err, HEAT_ERUNTIME,
                            "corrupt: %s is no longer of %lld x %lld x %lld points", what,
                            (long long)m->n[0], (long long)m->n[1], (long long)m->n[2]);
        goto done;
    }
    char gap[160];
    if (!heat_h5_chunks_complete(ds, gap, sizeof gap)) {
        rc = heat_error_set(err, HEAT_ERUNTIME, "corrupt: %s", gap);
        goto done;
    }
    const hsize_t start3[3] = {(hsize_t)lo[2], (hsize_t)lo[1], (hsize_t)lo[0]};
    const hsize_t count3[3] = {(hsize_t)n[2], (hsize_t)n[1], (hsize_t)n[0]};
    if (H5Sselect_hyperslab(fs, H5S_SELECT_SET, start3 + (3 - rank), NULL, count3 + (3 - rank),
                            NULL) < 0 ||
        (ms = H5Screate_simple(3, count3, NULL)) < 0)
        goto h5fail;
    if (H5Dread(ds, mtype, ms, fs, H5P_DEFAULT, buf) < 0) {
        char cause[512];
        int checksum = 0;
        heat_io_h5_cause(cause, sizeof cause, &checksum);
        rc = checksum
                 ? heat_error_set(err, HEAT_ERUNTIME,
                                  "corrupt: %s fails its Fletcher-32 checksum (%s)", what, cause)
                 : heat_error_set(err, HEAT_ERUNTIME, "corrupt: cannot read %s: %s", what, cause);
    }
    goto done;
h5fail : {
    char cause[512];
    heat_io_h5_cause(cause, sizeof cause, NULL);
    rc = heat_error_set(err, HEAT_ERUNTIME, "corrupt: cannot read %s: %s", what, cause);
}
done:
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    if (ds >= 0) H5Dclose(ds);
    if (fid >= 0) H5Fclose(fid);
    if (fapl >= 0) H5Pclose(fapl);
    H5Eclear2(H5E_DEFAULT);
    return rc;
}

int heat_file_read_box(const char *path, const heat_file_meta *m, heat_precision as,
                       const int64_t lo[3], const int64_t n[3], void *field, heat_error *err)
{
    int rc = read_box(path, m, HEAT_H5_FIELD_PATH, "the field",
                      as == HEAT_FLOAT ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE, lo, n, field, err);
    if (!rc && heat_first_nonfinite(field, n[0] * n[1] * n[2], as) >= 0)
        rc = heat_error_set(err, HEAT_ERUNTIME,
                            "corrupt: the field holds NaN or Inf, which no field of a run holds: "
                            "a damaged chunk index hides part of it, or it was not written by "
                            "heat");
    return rc;
}

int heat_file_read_material_box(const char *path, const heat_file_meta *m, const int64_t lo[3],
                                const int64_t n[3], uint8_t *material, heat_error *err)
{
    return read_box(path, m, "/VTKHDF/PointData/material", "the material index", H5T_NATIVE_UINT8,
                    lo, n, material, err);
}
