/* Integer datasets of other programs' HDF5 files: the material index per
 * node that a region reads (regions = ( { file = { path; dataset; }; } )).
 * See h5file.h. */
#include <errno.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "h5file.h"
#include "io_util.h"

struct heat_intfile {
    hid_t fid, ds;
    int rank; /* 3: (nz, ny, nx); 2: (ny, nx) for a one-plane grid */
    int64_t n[3];
};

void heat_intfile_close(heat_intfile *f)
{
    if (!f) return;
    if (f->ds >= 0) H5Dclose(f->ds);
    if (f->fid >= 0) H5Fclose(f->fid);
    H5Eclear2(H5E_DEFAULT);
    free(f);
}

/* "(a, b, c)": the dims of a dataset's space. */
static void shape_text(char *buf, size_t n, int rank, const hsize_t *d)
{
    size_t len = (size_t)snprintf(buf, n, "(");
    for (int i = 0; i < rank && len < n; i++)
        len +=
            (size_t)snprintf(buf + len, n - len, "%s%llu", i ? ", " : "", (unsigned long long)d[i]);
    if (len < n) snprintf(buf + len, n - len, ")");
}

/* The dataset of f must be an integer one of the grid's shape, (nz, ny, nx)
 * or (ny, nx) for a grid of one plane. */
static int check_layout(heat_intfile *f, const char *path, const char *dataset, heat_error *err)
{
    hid_t sp = H5Dget_space(f->ds), t = H5Dget_type(f->ds);
    hsize_t d[H5S_MAX_RANK];
    f->rank = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
    if (f->rank < 0 || f->rank > H5S_MAX_RANK || H5Sget_simple_extent_dims(sp, d, NULL) < 0)
        f->rank = -1;
    const int64_t *n = f->n;
    const int r = f->rank;
    const int fits = (r == 3 && d[0] == (hsize_t)n[2]) || (r == 2 && n[2] == 1);
    int rc = HEAT_OK;
    if (t < 0 || H5Tget_class(t) != H5T_INTEGER) {
        rc = heat_error_set(err, HEAT_EINPUT,
                            "%s:%s is not an integer dataset (it must hold an index into the "
                            "materials for every node)",
                            path, dataset);
    } else if (!fits || d[r - 2] != (hsize_t)n[1] || d[r - 1] != (hsize_t)n[0]) {
        char got[256] = "unreadable", ny_nx[64] = "";
        if (f->rank >= 0) shape_text(got, sizeof got, f->rank, d);
        if (n[2] == 1)
            snprintf(ny_nx, sizeof ny_nx, " or (ny, nx) = (%lld, %lld)", (long long)n[1],
                     (long long)n[0]);
        rc = heat_error_set(err, HEAT_EINPUT,
                            "%s:%s has the shape %s, not the grid's (nz, ny, nx) = (%lld, %lld, "
                            "%lld)%s",
                            path, dataset, got, (long long)n[2], (long long)n[1], (long long)n[0],
                            ny_nx);
    }
    if (t >= 0) H5Tclose(t);
    if (sp >= 0) H5Sclose(sp);
    return rc;
}

int heat_intfile_open(const char *path, const char *dataset, const int64_t n[3], heat_intfile **out,
                      heat_error *err)
{
    *out = NULL;
    heat_io_h5_quiet();
    heat_intfile *f = calloc(1, sizeof *f);
    if (!f) return heat_error_set(err, HEAT_ERUNTIME, "out of memory");
    f->fid = f->ds = H5I_INVALID_HID;
    for (int a = 0; a < 3; a++) f->n[a] = n[a];
    int rc = HEAT_OK;
    struct stat st;
    if (access(path, R_OK) != 0)
        rc = heat_error_set(err, HEAT_EINPUT, "cannot read %s: %s", path, strerror(errno));
    else if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) /* HDF5 would block on a pipe */
        rc = heat_error_set(err, HEAT_EINPUT, "cannot read %s as an HDF5 file: not a regular file",
                            path);
    else if (H5Fis_hdf5(path) <= 0 || (f->fid = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT)) < 0)
        rc = heat_error_set(err, HEAT_EINPUT, "cannot read %s as an HDF5 file", path);
    else if ((f->ds = H5Dopen2(f->fid, dataset, H5P_DEFAULT)) < 0)
        rc = heat_error_set(err, HEAT_EINPUT, "%s has no dataset %s", path, dataset);
    else
        rc = check_layout(f, path, dataset, err);
    if (rc) {
        heat_intfile_close(f);
        return rc;
    }
    *out = f;
    return HEAT_OK;
}

int heat_intfile_plane(heat_intfile *f, int64_t k, int64_t *plane, heat_error *err)
{
    hid_t fs = H5Dget_space(f->ds), ms = H5I_INVALID_HID;
    const hsize_t start[3] = {(hsize_t)k, 0, 0}, count[3] = {1, (hsize_t)f->n[1], (hsize_t)f->n[0]};
    const int r = f->rank;
    int rc = HEAT_OK;
    if (fs < 0 ||
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, start + (3 - r), NULL, count + (3 - r), NULL) < 0 ||
        (ms = H5Screate_simple(3, count, NULL)) < 0 ||
        H5Dread(f->ds, H5T_NATIVE_INT64, ms, fs, H5P_DEFAULT, plane) < 0) {
        char cause[512];
        heat_io_h5_cause(cause, sizeof cause, NULL);
        rc = heat_error_set(err, HEAT_EINPUT, "cannot read plane %lld: %s", (long long)k, cause);
    }
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    H5Eclear2(H5E_DEFAULT);
    return rc;
}
