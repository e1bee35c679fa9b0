/* VTKHDF ImageData files with the restart state. See h5file.h and
 * docs/FORMAT.md.
 *
 * The VTKHDF part follows VTK's "VTKHDF File Format" (version 1.0,
 * ImageData), which ParaView 5.10 and later read: group /VTKHDF with the
 * attributes Version, Type, WholeExtent, Origin, Spacing, Direction and the
 * point field in /VTKHDF/PointData, an array of shape (nz, ny, nx) with x
 * fastest (nz = 1 in 2D). Everything else lives at the root, where VTK
 * does not look. */
#include "h5file.h"

#include <errno.h>
#include <hdf5.h>
#include <stdarg.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "h5file_impl.h"
#include "io_util.h"

#ifndef HEAT_VERSION
#define HEAT_VERSION "0.0.0"
#endif

#define FIELD_PATH   "/VTKHDF/PointData/temperature"
#define DECK_PATH    "/deck"
#define BC_STR_WIDTH 16

/* Chunks of about this many bytes: large enough that the per-chunk cost
 * vanishes, small enough that a damaged chunk names a small region. */
#define CHUNK_BYTES (4u << 20)

const char *const heat_file_kind_names[HEAT_FILE_KIND_COUNT + 1] = {"snapshot", "checkpoint", NULL};

const char *heat_file_kind_name(heat_file_kind k)
{
    return (unsigned)k < HEAT_FILE_KIND_COUNT ? heat_file_kind_names[k] : "?";
}

void heat_file_meta_from_case(heat_file_meta *m, const heat_case *c, heat_file_kind kind,
                              int64_t step, double time, const char *deck)
{
    memset(m, 0, sizeof *m);
    m->kind = kind;
    m->format_version = HEAT_FORMAT_VERSION;
    snprintf(m->program_version, sizeof m->program_version, "%s", HEAT_VERSION);
    m->step = step;
    m->time = time;
    m->dt = c->d.dt;
    m->precision = c->solver.precision;
    m->dims = c->grid.dims;
    for (int a = 0; a < 3; a++) {
        m->n[a] = c->grid.n[a];
        m->length[a] = c->grid.length[a];
        m->origin[a] = c->grid.origin[a];
        m->spacing[a] = c->d.h[a];
    }
    m->alpha = c->alpha;
    memcpy(m->bc, c->bc, sizeof m->bc);
    m->deck = (char *)deck; /* borrowed: only read by heat_file_write */
}

/* ------------------------------------------------------------- writing */

static hid_t string_type(size_t len)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t < 0) return t;
    /* Fixed length, no terminator stored: VTK reads Type this way. */
    if (H5Tset_size(t, len ? len : 1) < 0 || H5Tset_strpad(t, H5T_STR_NULLPAD) < 0 ||
        H5Tset_cset(t, H5T_CSET_ASCII) < 0) {
        H5Tclose(t);
        return H5I_INVALID_HID;
    }
    return t;
}

/* An attribute of `count` values (0: a scalar). */
static int put_attr(hid_t obj, const char *name, hid_t ftype, hid_t mtype, hsize_t count,
                    const void *v)
{
    hid_t sp = count ? H5Screate_simple(1, &count, NULL) : H5Screate(H5S_SCALAR);
    if (sp < 0) return -1;
    hid_t a = H5Acreate2(obj, name, ftype, sp, H5P_DEFAULT, H5P_DEFAULT);
    int rc = a < 0 || H5Awrite(a, mtype, v) < 0 ? -1 : 0;
    if (a >= 0 && H5Aclose(a) < 0) rc = -1;
    H5Sclose(sp);
    return rc;
}

static int put_i64(hid_t obj, const char *name, const int64_t *v, hsize_t count)
{
    return put_attr(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, count, v);
}

static int put_f64(hid_t obj, const char *name, const double *v, hsize_t count)
{
    return put_attr(obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, count, v);
}

static int put_str(hid_t obj, const char *name, const char *s)
{
    hid_t t = string_type(strlen(s));
    if (t < 0) return -1;
    int rc = put_attr(obj, name, t, t, 0, s[0] ? s : "");
    H5Tclose(t);
    return rc;
}

/* `count` strings of at most BC_STR_WIDTH characters, as one attribute. */
static int put_strs(hid_t obj, const char *name, const char *const *s, int count)
{
    char buf[HEAT_NFACES][BC_STR_WIDTH];
    memset(buf, 0, sizeof buf);
    for (int i = 0; i < count && i < HEAT_NFACES; i++) strncpy(buf[i], s[i], BC_STR_WIDTH);
    hid_t t = string_type(BC_STR_WIDTH);
    if (t < 0) return -1;
    int rc = put_attr(obj, name, t, t, (hsize_t)count, buf);
    H5Tclose(t);
    return rc;
}

/* The deck text as a scalar fixed-length string dataset (it may outgrow
 * what an attribute holds comfortably). */
static int put_deck(hid_t fid, const char *deck)
{
    const char *text = deck && deck[0] ? deck : "";
    hid_t t = string_type(strlen(text));
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t ds = t < 0 || sp < 0
                   ? H5I_INVALID_HID
                   : H5Dcreate2(fid, DECK_PATH, t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int rc = ds < 0 || H5Dwrite(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, text) < 0 ? -1 : 0;
    if (ds >= 0 && H5Dclose(ds) < 0) rc = -1;
    if (sp >= 0) H5Sclose(sp);
    if (t >= 0) H5Tclose(t);
    return rc;
}

/* ---- the metadata checksum --------------------------------------------- */

/* FNV-1a, 64 bits (Fowler, Noll, Vo): every change of one byte changes the
 * result, which is what damage detection needs. */
static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * UINT64_C(0x100000001b3);
    return h;
}

static uint64_t fnv_printf(uint64_t h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static uint64_t fnv_printf(uint64_t h, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return fnv1a(h, buf, n < 0 ? 0 : (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* The checksum of everything a restart trusts (docs/FORMAT.md): the format,
 * the program, kind, step, time, dt, precision, the grid, the diffusivity,
 * the boundary conditions and the deck, each field written exactly (%a). */
static uint64_t meta_checksum(const heat_file_meta *m)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    h = fnv_printf(h, "format %lld\nprogram %s\nkind %s\nstep %lld\ntime %a\ndt %a\n",
                   (long long)m->format_version, m->program_version, heat_file_kind_name(m->kind),
                   (long long)m->step, m->time, m->dt);
    h = fnv_printf(h, "precision %s\ndiffusivity %a\n", heat_precision_name(m->precision),
                   m->alpha);
    for (int a = 0; a < 3; a++)
        h = fnv_printf(h, "axis %d: %lld %a %a %a\n", a, (long long)m->n[a], m->length[a],
                       m->origin[a], m->spacing[a]);
    for (int f = 0; f < HEAT_NFACES; f++)
        h = fnv_printf(h, "face %d: %s %a %a %a %a\n", f, heat_bc_type_name(m->bc[f].type),
                       m->bc[f].value, m->bc[f].gradient, m->bc[f].h, m->bc[f].ambient);
    const char *deck = m->deck ? m->deck : "";
    return fnv1a(h, deck, strlen(deck));
}

static int put_root_attrs(hid_t fid, const heat_file_meta *m)
{
    const int64_t version = HEAT_FORMAT_VERSION;
    const char *bc_types[HEAT_NFACES];
    double bc_value[HEAT_NFACES], bc_gradient[HEAT_NFACES], bc_h[HEAT_NFACES],
        bc_ambient[HEAT_NFACES];
    for (int f = 0; f < HEAT_NFACES; f++) {
        bc_types[f] = heat_bc_type_name(m->bc[f].type);
        bc_value[f] = m->bc[f].value;
        bc_gradient[f] = m->bc[f].gradient;
        bc_h[f] = m->bc[f].h;
        bc_ambient[f] = m->bc[f].ambient;
    }
    if (put_i64(fid, "heat_format_version", &version, 0) || //
        put_str(fid, "heat_version", m->program_version) ||
        put_str(fid, "kind", heat_file_kind_name(m->kind)) || //
        put_i64(fid, "step", &m->step, 0) ||                  //
        put_f64(fid, "time", &m->time, 0) ||                  //
        put_f64(fid, "dt", &m->dt, 0) ||
        put_str(fid, "precision", heat_precision_name(m->precision)) ||
        put_i64(fid, "grid_points", m->n, 3) ||      //
        put_f64(fid, "grid_length", m->length, 3) || //
        put_f64(fid, "grid_origin", m->origin, 3) || //
        put_f64(fid, "grid_spacing", m->spacing, 3) || put_f64(fid, "diffusivity", &m->alpha, 0) ||
        put_strs(fid, "boundary_type", bc_types, HEAT_NFACES) ||
        put_f64(fid, "boundary_value", bc_value, HEAT_NFACES) ||
        put_f64(fid, "boundary_gradient", bc_gradient, HEAT_NFACES) ||
        put_f64(fid, "boundary_h", bc_h, HEAT_NFACES) ||
        put_f64(fid, "boundary_ambient", bc_ambient, HEAT_NFACES))
        return -1;
    /* Not in the checksum, which readers of format 2 compute without it. */
    const double steady[3] = {m->steady_best, (double)m->steady_best_step,
                              (double)m->steady_no_best};
    if (m->has_steady && put_f64(fid, "steady_stall", steady, 3)) return -1;
    heat_file_meta v2 = *m;
    v2.format_version = HEAT_FORMAT_VERSION;
    const uint64_t sum = meta_checksum(&v2);
    return put_attr(fid, "heat_checksum", H5T_STD_U64LE, H5T_NATIVE_UINT64, 0, &sum);
}

static int put_vtkhdf_attrs(hid_t g, const heat_file_meta *m)
{
    const int64_t version[2] = {1, 0};
    const int64_t extent[6] = {0, m->n[0] - 1, 0, m->n[1] - 1, 0, m->n[2] - 1};
    const double direction[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    if (put_i64(g, "Version", version, 2) || put_str(g, "Type", "ImageData") ||
        put_i64(g, "WholeExtent", extent, 6) || put_f64(g, "Origin", m->origin, 3) ||
        put_f64(g, "Spacing", m->spacing, 3) || put_f64(g, "Direction", direction, 9))
        return -1;
    return 0;
}

/* At most k (>= 1) of n a chunk, in the fewest chunks, as equal as they
 * come: HDF5 stores the last chunk whole, so a chunk of k where the last
 * holds a few would pad the file by up to k - 1 (88 planes in chunks of 42
 * were 126 stored; in chunks of 30, 90). */
static hsize_t even_share(double k, int64_t n)
{
    if (k >= (double)n) return (hsize_t)n;
    const int64_t kk = k < 1 ? 1 : (int64_t)k, chunks = (n + kk - 1) / kk;
    return (hsize_t)((n + chunks - 1) / chunks);
}

/* Chunk shape (z, y, x) of about CHUNK_BYTES: whole planes where they fit,
 * else whole rows, else part of a row; the split axis in equal shares. */
void heat_h5_chunk_shape(const int64_t n[3], size_t vs, hsize_t chunk[3])
{
    const double target = (double)CHUNK_BYTES / (double)vs; /* values per chunk */
    const double row = (double)n[0], plane = (double)n[0] * (double)n[1];
    if (plane <= target) {
        chunk[0] = even_share(floor(target / plane), n[2]);
        chunk[1] = (hsize_t)n[1];
        chunk[2] = (hsize_t)n[0];
    } else if (row <= target) {
        chunk[0] = 1;
        chunk[1] = even_share(floor(target / row), n[1]);
        chunk[2] = (hsize_t)n[0];
    } else {
        chunk[0] = chunk[1] = 1;
        chunk[2] = even_share(target, n[0]);
    }
    for (int i = 0; i < 3; i++)
        if (chunk[i] < 1) chunk[i] = 1;
}

double heat_h5_stored_bytes(const int64_t n[3], size_t vs)
{
    hsize_t chunk[3];
    heat_h5_chunk_shape(n, vs, chunk);
    double v = (double)vs;
    for (int i = 0; i < 3; i++) { /* chunk (z, y, x), n (x, y, z) */
        const double e = (double)n[2 - i], c = (double)chunk[i];
        v *= ceil(e / c) * c;
    }
    return v;
}

/* The n-th file write of the process fails half-way when the environment
 * says HEAT_TEST_FAIL_WRITE=n: the tests' way to break a write on purpose. */
int heat_h5_injected_failure(void)
{
    static atomic_long writes;
    const char *s = getenv("HEAT_TEST_FAIL_WRITE");
    long k = atomic_fetch_add(&writes, 1) + 1;
    return s && atol(s) > 0 && atol(s) == k;
}

static hid_t file_access(void)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl < 0) return fapl;
    /* The 1.8 format: readable by every HDF5 that ParaView ships, and its
     * object headers and superblock carry checksums of their own. */
    if (H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_V18) < 0 ||
        H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG) < 0) {
        H5Pclose(fapl);
        return H5I_INVALID_HID;
    }
#if H5_VERSION_GE(1, 10, 7)
    /* Our files are never written in place, so no lock is needed; and some
     * file systems (NFS, Lustre) refuse locks. */
    H5Pset_file_locking(fapl, 0, 1);
#endif
    return fapl;
}

hid_t heat_h5_file_access(void)
{
    return file_access();
}

/* A dataset of point data in /VTKHDF/PointData (the group `pd`): the
 * field's shape and chunks, deflated when compress > 0, every chunk
 * checksummed, `fill` where nothing was written. */
static hid_t create_point_data(hid_t pd, const char *name, hid_t file_type, const heat_file_meta *m,
                               int compress, hid_t fill_type, const void *fill)
{
    hid_t sp = H5I_INVALID_HID, dcpl = H5I_INVALID_HID, ds = H5I_INVALID_HID;
    const size_t vs = m->precision == HEAT_FLOAT ? sizeof(float) : sizeof(double);
    /* Always (nz, ny, nx), nz = 1 in 2D: the file contract. (VTK's newer
     * readers drop a single-plane z axis and would rather have (ny, nx);
     * the reader below takes both. See docs/FORMAT.md.) */
    const hsize_t dims[3] = {(hsize_t)m->n[2], (hsize_t)m->n[1], (hsize_t)m->n[0]};
    hsize_t chunk[3];
    heat_h5_chunk_shape(m->n, vs, chunk);
    if ((sp = H5Screate_simple(3, dims, NULL)) < 0) goto done;
    if ((dcpl = H5Pcreate(H5P_DATASET_CREATE)) < 0 || H5Pset_chunk(dcpl, 3, chunk) < 0) goto done;
    /* Filters run in this order on writing: the checksum comes last, so
     * that it covers the bytes as stored. */
    if (compress > 0 && (H5Pset_shuffle(dcpl) < 0 || H5Pset_deflate(dcpl, (unsigned)compress) < 0))
        goto done;
    if (H5Pset_fletcher32(dcpl) < 0 || H5Pset_fill_value(dcpl, fill_type, fill) < 0) goto done;
    ds = H5Dcreate2(pd, name, file_type, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
done:
    if (dcpl >= 0) H5Pclose(dcpl);
    if (sp >= 0) H5Sclose(sp);
    return ds;
}

int heat_h5_create_meta(hid_t fid, const heat_file_meta *m)
{
    hid_t g = H5I_INVALID_HID, pd = H5I_INVALID_HID;
    int rc = -1;
    if (put_root_attrs(fid, m) || put_deck(fid, m->deck)) goto done;
    if ((g = H5Gcreate2(fid, "VTKHDF", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)) < 0) goto done;
    if (put_vtkhdf_attrs(g, m)) goto done;
    if ((pd = H5Gcreate2(g, "PointData", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)) < 0) goto done;
    rc = 0;
done:
    if (pd >= 0 && H5Gclose(pd) < 0) rc = -1;
    if (g >= 0 && H5Gclose(g) < 0) rc = -1;
    return rc;
}

hid_t heat_h5_create_field(hid_t fid, const heat_file_meta *m, int compress)
{
    hid_t pd = H5Gopen2(fid, "/VTKHDF/PointData", H5P_DEFAULT);
    if (pd < 0) return pd;
    /* A chunk that a damaged index hides reads as the fill value: NaN, which
     * no field of a run holds, so the reader notices (heat_file_read_field). */
    const double fill = NAN;
    hid_t ds = create_point_data(pd, "temperature",
                                 m->precision == HEAT_FLOAT ? H5T_IEEE_F32LE : H5T_IEEE_F64LE, m,
                                 compress, H5T_NATIVE_DOUBLE, &fill);
    H5Gclose(pd);
    return ds;
}

hid_t heat_h5_create_layout(hid_t fid, const heat_file_meta *m, int compress, const char **doing)
{
    *doing = "writing the metadata";
    if (heat_h5_create_meta(fid, m)) return H5I_INVALID_HID;
    *doing = "creating the field";
    return heat_h5_create_field(fid, m, compress);
}

hid_t heat_h5_create_material(hid_t fid, const heat_file_meta *m, int compress)
{
    hid_t pd = H5Gopen2(fid, "/VTKHDF/PointData", H5P_DEFAULT);
    if (pd < 0) return pd;
    const uint8_t fill = 255;
    hid_t ds =
        create_point_data(pd, "material", H5T_STD_U8LE, m, compress, H5T_NATIVE_UINT8, &fill);
    H5Gclose(pd);
    return ds;
}

/* The material index of m->material into the new file `fid`, whole. */
static int write_material(hid_t fid, const heat_file_meta *m, int compress)
{
    hid_t ds = heat_h5_create_material(fid, m, compress);
    if (ds < 0) return -1;
    const herr_t w = H5Dwrite(ds, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, m->material);
    return H5Dclose(ds) < 0 || w < 0 ? -1 : 0;
}

int heat_file_write(const char *path, const heat_file_meta *m, const void *field, int compress,
                    heat_error *err)
{
    heat_io_h5_quiet();
    char tmp[HEAT_PATH_MAX + HEAT_NAME_MAX + 128];
    heat_file_tmp_path(tmp, sizeof tmp, path);
    hid_t fapl = H5I_INVALID_HID, fid = H5I_INVALID_HID, ds = H5I_INVALID_HID;
    const char *doing = "creating it";
    const int is_float = m->precision == HEAT_FLOAT;
    int rc = HEAT_OK;
    unlink(tmp); /* a leftover of a run that was killed */

    if ((fapl = heat_h5_file_access()) < 0) goto h5fail;
    if ((fid = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl)) < 0) goto h5fail;
    if ((ds = heat_h5_create_layout(fid, m, compress, &doing)) < 0) goto h5fail;
    doing = "writing the field";
    if (H5Dwrite(ds, is_float ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                 field) < 0)
        goto h5fail;
    doing = "writing the material index";
    if (m->material && write_material(fid, m, compress) < 0) goto h5fail;
    if (heat_h5_injected_failure()) {
        rc = heat_error_set(err, HEAT_ERUNTIME,
                            "cannot write %s: injected failure (HEAT_TEST_FAIL_WRITE=%s) after "
                            "writing part of %s",
                            path, getenv("HEAT_TEST_FAIL_WRITE"), tmp);
        goto cleanup;
    }
    doing = "closing it";
    H5Dclose(ds), ds = H5I_INVALID_HID;
    /* Closing writes the last metadata: a full disk shows up here too. */
    herr_t closed = H5Fclose(fid);
    fid = H5I_INVALID_HID;
    if (closed < 0) goto h5fail;
    H5Pclose(fapl);
    return heat_io_commit(tmp, path, err);

h5fail : {
    char cause[512];
    heat_io_h5_cause(cause, sizeof cause, NULL);
    rc = heat_error_set(err, HEAT_ERUNTIME, "cannot write %s: %s (%s)", path, cause, doing);
}
cleanup:
    if (ds >= 0) H5Dclose(ds);
    if (fid >= 0) H5Fclose(fid);
    if (fapl >= 0) H5Pclose(fapl);
    H5Eclear2(H5E_DEFAULT);
    unlink(tmp);
    return rc;
}

/* ------------------------------------------------------------- reading */

/* Whether a dataspace holds exactly `count` values as a scalar (count 1) or
 * a one-dimensional array: anything else is not what was written. */
static int is_vector(hid_t sp, hssize_t count)
{
    H5S_class_t k = H5Sget_simple_extent_type(sp);
    if (k == H5S_SCALAR) return count == 1;
    return k == H5S_SIMPLE && H5Sget_simple_extent_ndims(sp) == 1 &&
           H5Sget_simple_extent_npoints(sp) == count;
}

/* A numeric attribute of `count` values: an integer class for an integer
 * memory type, a float class for a float one, and the shape written. */
static int get_attr(hid_t obj, const char *name, hid_t mtype, hssize_t count, void *out)
{
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0) return -1;
    hid_t sp = H5Aget_space(a), t = H5Aget_type(a);
    int rc = sp >= 0 && t >= 0 && H5Tget_class(t) == H5Tget_class(mtype) && is_vector(sp, count) &&
                     H5Aread(a, mtype, out) >= 0
                 ? 0
                 : -1;
    if (t >= 0) H5Tclose(t);
    if (sp >= 0) H5Sclose(sp);
    H5Aclose(a);
    return rc;
}

/* A fixed-length string attribute of `count` strings of equal width, each
 * copied NUL-terminated into out + i * width_out. */
static int get_strs(hid_t obj, const char *name, hssize_t count, char *out, size_t width_out)
{
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0) return -1;
    int rc = -1;
    hid_t t = H5Aget_type(a), sp = H5Aget_space(a), mt = H5I_INVALID_HID;
    char *buf = NULL;
    if (t < 0 || sp < 0 || H5Tget_class(t) != H5T_STRING || H5Tis_variable_str(t) != 0 ||
        !is_vector(sp, count))
        goto done;
    size_t w = H5Tget_size(t);
    if (w == 0 || w >= width_out || (mt = string_type(w)) < 0) goto done;
    buf = calloc((size_t)count, w);
    if (!buf || H5Aread(a, mt, buf) < 0) goto done;
    for (hssize_t i = 0; i < count; i++) {
        memcpy(out + (size_t)i * width_out, buf + (size_t)i * w, w);
        out[(size_t)i * width_out + w] = '\0';
    }
    rc = 0;
done:
    free(buf);
    if (mt >= 0) H5Tclose(mt);
    if (sp >= 0) H5Sclose(sp);
    if (t >= 0) H5Tclose(t);
    H5Aclose(a);
    return rc;
}

/* The deck: one fixed-length string, a scalar, at most 64 MiB. */
static char *get_deck(hid_t fid)
{
    hid_t ds = H5Dopen2(fid, DECK_PATH, H5P_DEFAULT);
    if (ds < 0) return NULL;
    char *text = NULL;
    hid_t t = H5Dget_type(ds), sp = H5Dget_space(ds), mt = H5I_INVALID_HID;
    if (t >= 0 && sp >= 0 && H5Tget_class(t) == H5T_STRING && H5Tis_variable_str(t) == 0 &&
        H5Sget_simple_extent_type(sp) == H5S_SCALAR) {
        size_t w = H5Tget_size(t);
        if (w > 0 && w <= (64u << 20) && (mt = string_type(w)) >= 0 && (text = calloc(w + 1, 1)) &&
            H5Dread(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, text) < 0) {
            free(text);
            text = NULL;
        }
        /* Text after a NUL would be hidden from every reader: not ours. */
        for (size_t i = text ? strlen(text) : w; i < w; i++)
            if (text[i]) {
                free(text);
                text = NULL;
                break;
            }
    }
    if (mt >= 0) H5Tclose(mt);
    if (sp >= 0) H5Sclose(sp);
    if (t >= 0) H5Tclose(t);
    H5Dclose(ds);
    return text;
}

/* How the field is stored: its filters. */
static void read_filters(hid_t ds, heat_file_meta *m)
{
    hid_t dcpl = H5Dget_create_plist(ds);
    if (dcpl < 0) return;
    int nf = H5Pget_nfilters(dcpl);
    for (int i = 0; i < nf; i++) {
        unsigned flags, cd[8];
        size_t ncd = 8;
        char name[64];
        H5Z_filter_t f =
            H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, cd, sizeof name, name, NULL);
        if (f == H5Z_FILTER_FLETCHER32) m->has_checksum = 1;
        if (f == H5Z_FILTER_DEFLATE) m->deflate = ncd > 0 ? (int)cd[0] : 1;
    }
    H5Pclose(dcpl);
}

/* Whether the metadata describe a grid and a state heat can hold: the
 * deck's own bounds (3 to 2^40 points per axis, nz = 1 in 2D, at most 2^50
 * in all, so that no byte count overflows), finite and positive lengths,
 * spacings, diffusivity and dt, a finite time and step >= 0, finite
 * boundary values. */
static int meta_in_range(const heat_file_meta *m)
{
    double points = 1;
    for (int a = 0; a < 3; a++) {
        const int64_t n = m->n[a];
        if (!((n >= 3 || (a == 2 && n == 1)) && n <= (INT64_C(1) << 40))) return 0;
        points *= (double)n;
        if (!(m->length[a] > 0 && isfinite(m->length[a]) && isfinite(m->origin[a]) &&
              m->spacing[a] > 0 && isfinite(m->spacing[a])))
            return 0;
    }
    if (points > 0x1p50 || m->step < 0 || !isfinite(m->time)) return 0;
    if (!(m->dt > 0 && isfinite(m->dt) && m->alpha > 0 && isfinite(m->alpha))) return 0;
    for (int f = 0; f < HEAT_NFACES; f++)
        if (!isfinite(m->bc[f].value) || !isfinite(m->bc[f].gradient) || !isfinite(m->bc[f].h) ||
            !isfinite(m->bc[f].ambient))
            return 0;
    return 1;
}

/* The reading steps below return 0, READ_H5 when an HDF5 call failed (the
 * error stack says why) or READ_BAD when the values are out of place. */
enum { READ_H5 = -1, READ_BAD = -2, READ_SUM = -3, READ_NOSUM = -4 };

/* The root attributes: the restart state and the grid. */
static int read_root_attrs(hid_t fid, heat_file_meta *m)
{
    char kind[BC_STR_WIDTH + 1], prec[BC_STR_WIDTH + 1], types[HEAT_NFACES][BC_STR_WIDTH + 1];
    double value[HEAT_NFACES], gradient[HEAT_NFACES];
    if (get_strs(fid, "heat_version", 1, m->program_version, sizeof m->program_version) ||
        get_strs(fid, "kind", 1, kind, sizeof kind) ||
        get_attr(fid, "step", H5T_NATIVE_INT64, 1, &m->step) ||
        get_attr(fid, "time", H5T_NATIVE_DOUBLE, 1, &m->time) ||
        get_attr(fid, "dt", H5T_NATIVE_DOUBLE, 1, &m->dt) ||
        get_strs(fid, "precision", 1, prec, sizeof prec) ||
        get_attr(fid, "grid_points", H5T_NATIVE_INT64, 3, m->n) ||
        get_attr(fid, "grid_length", H5T_NATIVE_DOUBLE, 3, m->length) ||
        get_attr(fid, "grid_origin", H5T_NATIVE_DOUBLE, 3, m->origin) ||
        get_attr(fid, "grid_spacing", H5T_NATIVE_DOUBLE, 3, m->spacing) ||
        get_attr(fid, "diffusivity", H5T_NATIVE_DOUBLE, 1, &m->alpha) ||
        get_strs(fid, "boundary_type", HEAT_NFACES, &types[0][0], BC_STR_WIDTH + 1) ||
        get_attr(fid, "boundary_value", H5T_NATIVE_DOUBLE, HEAT_NFACES, value) ||
        get_attr(fid, "boundary_gradient", H5T_NATIVE_DOUBLE, HEAT_NFACES, gradient))
        return READ_H5;
    /* Format 2 adds the convective faces' coefficients. */
    double hc[HEAT_NFACES] = {0}, amb[HEAT_NFACES] = {0};
    if (m->format_version >= 2 &&
        (get_attr(fid, "boundary_h", H5T_NATIVE_DOUBLE, HEAT_NFACES, hc) ||
         get_attr(fid, "boundary_ambient", H5T_NATIVE_DOUBLE, HEAT_NFACES, amb)))
        return READ_H5;
    int kind_i = heat_name_index(heat_file_kind_names, kind);
    int prec_i = heat_name_index(heat_precision_names, prec);
    if (kind_i < 0 || prec_i < 0) return READ_BAD;
    m->kind = (heat_file_kind)kind_i;
    m->precision = (heat_precision)prec_i;
    for (int f = 0; f < HEAT_NFACES; f++) {
        int t = heat_name_index(heat_bc_type_names, types[f]);
        if (t < 0) return READ_BAD;
        m->bc[f].type = (heat_bc_type)t;
        m->bc[f].value = value[f];
        m->bc[f].gradient = gradient[f];
        m->bc[f].h = hc[f];
        m->bc[f].ambient = amb[f];
    }
    m->dims = m->n[2] == 1 ? 2 : 3;
    if (!meta_in_range(m)) return READ_BAD;
    /* A steady run's stall state, where the file has it and it is in place
     * (else none: the restart starts the stall check afresh). */
    double st[3];
    const htri_t has = H5Aexists(fid, "steady_stall");
    if (has < 0) return READ_H5;
    if (has && get_attr(fid, "steady_stall", H5T_NATIVE_DOUBLE, 3, st)) return READ_H5;
    m->has_steady = has > 0 && st[0] >= 0 && st[0] < INFINITY && st[1] >= 0 &&
                    st[1] <= (double)m->step && st[1] == floor(st[1]) && st[2] >= 0 &&
                    st[2] <= 9e15 && st[2] == floor(st[2]);
    if (m->has_steady) {
        m->steady_best = st[0];
        m->steady_best_step = (int64_t)st[1];
        m->steady_no_best = (int64_t)st[2];
    }
    return 0;
}

/* /VTKHDF's WholeExtent must be the grid's. */
static int read_vtkhdf(hid_t fid, const heat_file_meta *m)
{
    int64_t extent[6];
    hid_t g = H5Gopen2(fid, "VTKHDF", H5P_DEFAULT);
    int rc = g < 0 || get_attr(g, "WholeExtent", H5T_NATIVE_INT64, 6, extent) ? READ_H5 : 0;
    if (g >= 0) H5Gclose(g);
    for (int a = 0; a < 3 && !rc; a++)
        if (extent[2 * a] != 0 || extent[2 * a + 1] != m->n[a] - 1) rc = READ_BAD;
    return rc;
}

/* Whether dataset `ds` still has the shape of m: (nz, ny, nx), or (ny, nx)
 * when nz = 1. */
static int same_shape(hid_t ds, const heat_file_meta *m)
{
    hid_t sp = H5Dget_space(ds);
    if (sp < 0) return 0;
    hsize_t dims[3] = {1, 1, 1};
    const int rank = H5Sget_simple_extent_ndims(sp);
    int ok = rank >= 2 && rank <= 3 && !(rank == 2 && m->n[2] != 1) &&
             H5Sget_simple_extent_dims(sp, dims + (3 - rank), NULL) == rank &&
             dims[0] == (hsize_t)m->n[2] && dims[1] == (hsize_t)m->n[1] &&
             dims[2] == (hsize_t)m->n[0];
    H5Sclose(sp);
    return ok;
}

/* The field: its shape and value type, and how it is stored. */
static int read_field_layout(hid_t fid, heat_file_meta *m)
{
    hid_t ds = H5Dopen2(fid, FIELD_PATH, H5P_DEFAULT), t = H5I_INVALID_HID;
    int rc = ds < 0 || (t = H5Dget_type(ds)) < 0 ? READ_H5 : 0;
    if (!rc && (!same_shape(ds, m) || H5Tget_class(t) != H5T_FLOAT ||
                H5Tget_size(t) != (m->precision == HEAT_FLOAT ? 4u : 8u)))
        rc = READ_BAD;
    if (!rc) read_filters(ds, m);
    if (!rc && !m->has_checksum) rc = READ_NOSUM;
    if (t >= 0) H5Tclose(t);
    if (ds >= 0) H5Dclose(ds);
    m->has_material = !rc && H5Lexists(fid, "/VTKHDF/PointData/material", H5P_DEFAULT) > 0;
    return rc;
}

/* After the format version: everything else, naming in *what the step that
 * failed. */
static int read_meta_body(hid_t fid, heat_file_meta *m, const char **what)
{
    int rc;
    *what = "reading its attributes";
    if ((rc = read_root_attrs(fid, m))) {
        if (rc == READ_BAD) *what = "checking its attributes";
        return rc;
    }
    *what = "reading /VTKHDF";
    if ((rc = read_vtkhdf(fid, m))) return rc;
    *what = "reading the field's shape";
    if ((rc = read_field_layout(fid, m))) return rc;
    *what = "reading the deck";
    if (!(m->deck = get_deck(fid))) return READ_H5;
    if (m->format_version < 2) return 0; /* format 1 had no metadata checksum */
    *what = "verifying the metadata checksum (heat_checksum)";
    uint64_t sum;
    if ((rc = get_attr(fid, "heat_checksum", H5T_NATIVE_UINT64, 1, &sum))) return rc;
    if (sum != meta_checksum(m)) return READ_SUM;
    m->meta_checksum = 1;
    return 0;
}

int heat_file_read_meta(const char *path, heat_file_meta *m, heat_error *err)
{
    memset(m, 0, sizeof *m);
    heat_io_h5_quiet();
    if (access(path, R_OK) != 0)
        return heat_error_set(err, HEAT_EINPUT, "cannot read the file: %s", strerror(errno));
    struct stat st;
    /* HDF5 seeks: a pipe or device would block or fail deep inside it */
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return heat_error_set(err, HEAT_EINPUT, "%s",
                              S_ISDIR(st.st_mode)
                                  ? "is a directory, not a heat snapshot or checkpoint file"
                                  : "is not a regular file (a pipe or a device), so not a heat "
                                    "snapshot or checkpoint file");
    if (H5Fis_hdf5(path) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return heat_error_set(err, HEAT_EINPUT,
                              "not a heat snapshot or checkpoint (not an HDF5 file)");
    }
    hid_t fapl = file_access(), fid = H5I_INVALID_HID;
    const char *what = "opening it";
    int rc = HEAT_OK, step = READ_H5;
    if (fapl < 0 || (fid = H5Fopen(path, H5F_ACC_RDONLY, fapl)) < 0) goto out;
    step = 0;
    /* < 0: the root's attributes cannot be read, the file is damaged */
    const htri_t has_version = H5Aexists(fid, "heat_format_version");
    what = "reading its attributes";
    if (has_version < 0) {
        step = READ_H5;
        goto out;
    }
    if (has_version == 0) {
        rc = heat_error_set(err, HEAT_EINPUT,
                            "not a heat snapshot or checkpoint (an HDF5 file without the "
                            "heat_format_version attribute)");
        goto out;
    }
    what = "reading heat_format_version";
    if (get_attr(fid, "heat_format_version", H5T_NATIVE_INT64, 1, &m->format_version)) {
        step = READ_H5;
        goto out;
    }
    if (m->format_version < 1 || m->format_version > HEAT_FORMAT_VERSION) {
        rc = heat_error_set(err, HEAT_EINPUT,
                            "file format %lld, but this heat (%s) reads format 1 to %d: "
                            "written by a newer heat?",
                            (long long)m->format_version, HEAT_VERSION, HEAT_FORMAT_VERSION);
        goto out;
    }
    step = read_meta_body(fid, m, &what);
out:
    if (step == READ_NOSUM) {
        rc = heat_error_set(err, HEAT_ERUNTIME,
                            "corrupt: the field has no Fletcher-32 checksum (heat always writes "
                            "one), so damage to it could not be detected");
    } else if (step == READ_SUM) {
        rc = heat_error_set(err, HEAT_ERUNTIME,
                            "corrupt: the metadata (step, time, dt, grid, boundary conditions or "
                            "the deck) fail their checksum");
    } else if (step == READ_BAD) {
        rc = heat_error_set(err, HEAT_ERUNTIME, "corrupt: %s: values out of place", what);
    } else if (step == READ_H5) {
        char cause[512];
        heat_io_h5_cause(cause, sizeof cause, NULL);
        rc = heat_error_set(err, HEAT_ERUNTIME, "corrupt: %s: %s", what, cause);
    }
    if (fid >= 0) H5Fclose(fid);
    if (fapl >= 0) H5Pclose(fapl);
    H5Eclear2(H5E_DEFAULT);
    if (rc != HEAT_OK) heat_file_meta_free(m);
    return rc;
}

int64_t heat_first_nonfinite(const void *field, int64_t n, heat_precision p)
{
    int64_t first = n;
    if (p == HEAT_FLOAT) {
        const float *f = field;
#pragma omp parallel for reduction(min : first)
        for (int64_t i = 0; i < n; i++)
            if (!isfinite(f[i]) && i < first) first = i;
    } else {
        const double *f = field;
#pragma omp parallel for reduction(min : first)
        for (int64_t i = 0; i < n; i++)
            if (!isfinite(f[i]) && i < first) first = i;
    }
    return first < n ? first : -1;
}

int heat_file_read_field(const char *path, const heat_file_meta *m, heat_precision as, void *field,
                         heat_error *err)
{
    heat_io_h5_quiet();
    hid_t fapl = file_access(), fid = H5I_INVALID_HID, ds = H5I_INVALID_HID;
    int rc = HEAT_OK;
    char what[160];
    if (fapl >= 0 && (fid = H5Fopen(path, H5F_ACC_RDONLY, fapl)) >= 0 &&
        (ds = H5Dopen2(fid, FIELD_PATH, H5P_DEFAULT)) >= 0 && !same_shape(ds, m)) {
        rc = heat_error_set(err, HEAT_ERUNTIME,
                            "corrupt: the field is no longer of %lld x %lld x %lld points",
                            (long long)m->n[0], (long long)m->n[1], (long long)m->n[2]);
    } else if (ds >= 0 && !heat_h5_chunks_complete(ds, what, sizeof what)) {
        rc = heat_error_set(err, HEAT_ERUNTIME, "corrupt: %s", what);
    } else if (ds < 0 || H5Dread(ds, as == HEAT_FLOAT ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE,
                                 H5S_ALL, H5S_ALL, H5P_DEFAULT, field) < 0) {
        char cause[512];
        int checksum = 0;
        heat_io_h5_cause(cause, sizeof cause, &checksum);
        rc = checksum
                 ? heat_error_set(err, HEAT_ERUNTIME,
                                  "corrupt: the field fails its Fletcher-32 checksum (%s)", cause)
                 : heat_error_set(err, HEAT_ERUNTIME, "corrupt: cannot read the field: %s", cause);
    }
    if (ds >= 0) H5Dclose(ds);
    if (fid >= 0) H5Fclose(fid);
    if (fapl >= 0) H5Pclose(fapl);
    H5Eclear2(H5E_DEFAULT);
    const int64_t bad = rc ? -1 : heat_first_nonfinite(field, m->n[0] * m->n[1] * m->n[2], as);
    if (bad >= 0)
        rc = heat_error_set(err, HEAT_ERUNTIME,
                            "corrupt: the field holds NaN or Inf (first at value %lld), which no "
                            "field of a run holds: a damaged chunk index hides part of it, or it "
                            "was not written by heat",
                            (long long)bad);
    return rc;
}

void heat_file_meta_free(heat_file_meta *m)
{
    free(m->deck);
    m->deck = NULL;
}

int heat_output_check_parallel_io(const heat_case *c, heat_error *err)
{
#ifndef H5_HAVE_PARALLEL
    if (c->parallel.io == HEAT_PIO_COLLECTIVE)
        return heat_error_set(err, HEAT_EINPUT,
                              "parallel.io = \"collective\" needs a parallel HDF5, but this heat "
                              "was built with a serial HDF5 (%d.%d.%d): use \"auto\" or "
                              "\"aggregated\"",
                              H5_VERS_MAJOR, H5_VERS_MINOR, H5_VERS_RELEASE);
#else
    (void)c;
    (void)err;
#endif
    return HEAT_OK;
}
