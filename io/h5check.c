/* What a field file is checked for beyond its own checksums: every chunk
 * of the field present (the chunk index has no checksum), a field with no
 * NaN or Inf, and a file's grid, faces and physics against a deck's. See
 * h5file.h. */
#include "h5file.h"

#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h5file_impl.h"
#include "io_util.h"

/* Whether every chunk of the field is where the grid needs one. The chunk
 * index (a B-tree) carries no checksum of its own, and HDF5 reads a chunk
 * it cannot find as fill values without complaint: so each chunk is looked
 * up by its coordinates before the read, and one that is missing, or not
 * filtered as written, is damage. */
int heat_h5_chunks_complete(hid_t ds, char *what, size_t n)
{
    hid_t dcpl = H5Dget_create_plist(ds), sp = H5Dget_space(ds);
    hsize_t chunk[3] = {1, 1, 1}, dims[3] = {1, 1, 1};
    const int rank = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
    int ok = dcpl >= 0 && rank >= 1 && rank <= 3 && H5Pget_layout(dcpl) == H5D_CHUNKED &&
             H5Pget_chunk(dcpl, rank, chunk) == rank &&
             H5Sget_simple_extent_dims(sp, dims, NULL) == rank;
    if (!ok) snprintf(what, n, "the field is not stored in chunks as written");
    hsize_t at[3] = {0, 0, 0}, found = 0;
    while (ok) {
        unsigned mask = 0;
        haddr_t addr = HADDR_UNDEF;
        hsize_t bytes = 0;
        if (H5Dget_chunk_info_by_coord(ds, at, &mask, &addr, &bytes) < 0 || addr == HADDR_UNDEF ||
            mask != 0 || bytes == 0) {
            snprintf(what, n, "its chunk at (%llu, %llu, %llu) is missing from the chunk index",
                     (unsigned long long)at[0], (unsigned long long)at[1],
                     (unsigned long long)at[2]);
            ok = 0;
            break;
        }
        found++;
        int d = rank - 1; /* the next chunk, last axis fastest */
        while (d >= 0 && (at[d] += chunk[d]) >= dims[d]) at[d--] = 0;
        if (d < 0) break;
    }
    hsize_t total = 0;
    if (ok && (H5Dget_num_chunks(ds, sp, &total) < 0 || total != found)) {
        snprintf(what, n, "its chunk index holds %llu chunks where the grid has %llu",
                 (unsigned long long)total, (unsigned long long)found);
        ok = 0;
    }
    if (sp >= 0) H5Sclose(sp);
    if (dcpl >= 0) H5Pclose(dcpl);
    return ok;
}

/* ------------------------------------------------------------ matching */

static void triple_text(char *buf, size_t n, const double *v, int count)
{
    size_t used = 0;
    used += (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < count && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%.17g", i ? ", " : "", v[i]);
    if (used < n) snprintf(buf + used, n - used, "]");
}

static int same_bc(const heat_bc *a, const heat_bc *b)
{
    if (a->type != b->type) return 0;
    switch (a->type) {
    case HEAT_BC_DIRICHLET:
    case HEAT_BC_FLUX:
        return a->value == b->value;
    case HEAT_BC_NEUMANN:
        return a->gradient == b->gradient;
    case HEAT_BC_CONVECTIVE:
        return a->h == b->h && a->ambient == b->ambient;
    default:
        return 1;
    }
}

int heat_file_check_case(const heat_file_meta *m, const heat_case *c, heat_error *err)
{
    heat_error diff;
    heat_error_clear(&diff);
    const char *kind = heat_file_kind_name(m->kind);
    if (m->n[0] != c->grid.n[0] || m->n[1] != c->grid.n[1] || m->n[2] != c->grid.n[2])
        heat_error_append(&diff, HEAT_EINPUT,
                          "  grid.points = [%lld, %lld, %lld] in the deck, [%lld, %lld, %lld] in "
                          "the %s",
                          (long long)c->grid.n[0], (long long)c->grid.n[1], (long long)c->grid.n[2],
                          (long long)m->n[0], (long long)m->n[1], (long long)m->n[2], kind);
    const int dims = c->grid.dims;
    int length_differs = 0, origin_differs = 0;
    for (int a = 0; a < dims; a++) {
        length_differs |= m->length[a] != c->grid.length[a];
        origin_differs |= m->origin[a] != c->grid.origin[a];
    }
    char x[160], y[160];
    if (length_differs) {
        triple_text(x, sizeof x, c->grid.length, 3);
        triple_text(y, sizeof y, m->length, 3);
        heat_error_append(&diff, HEAT_EINPUT, "  grid.length = %s in the deck, %s in the %s", x, y,
                          kind);
    }
    if (origin_differs) {
        triple_text(x, sizeof x, c->grid.origin, 3);
        triple_text(y, sizeof y, m->origin, 3);
        heat_error_append(&diff, HEAT_EINPUT, "  grid.origin = %s in the deck, %s in the %s", x, y,
                          kind);
    }
    if (m->precision != c->solver.precision)
        heat_error_append(
            &diff, HEAT_EINPUT, "  solver.precision = \"%s\" in the deck, \"%s\" in the %s",
            heat_precision_name(c->solver.precision), heat_precision_name(m->precision), kind);
    for (int f = 0; f < 2 * dims; f++) {
        if (same_bc(&m->bc[f], &c->bc[f])) continue;
        heat_bc_text(&c->bc[f], 1, x, sizeof x);
        heat_bc_text(&m->bc[f], 1, y, sizeof y);
        heat_error_append(&diff, HEAT_EINPUT, "  boundary.%s = %s in the deck, %s in the %s",
                          heat_face_name(f), x, y, kind);
    }
    if (m->alpha != c->alpha)
        heat_error_append(&diff, HEAT_EINPUT,
                          "  material.diffusivity = %.17g in the deck, %.17g in the %s", c->alpha,
                          m->alpha, kind);
    if (diff.code == HEAT_OK) return HEAT_OK;
    return heat_error_set(err, HEAT_EINPUT,
                          "the deck does not match the %s (grid, precision, boundary "
                          "conditions and diffusivity must stay the same to continue a run):\n%s",
                          kind, diff.msg);
}
