#include "initial.h"

#include <math.h>
#include <string.h>

#include "h5file.h"
#include "h5part.h"

static double initial_value(const heat_case *c, const double x[3])
{
    const int dims = c->grid.dims;
    switch (c->initial.type) {
    case HEAT_INIT_CONSTANT:
        return c->initial.value;
    case HEAT_INIT_GAUSSIAN: {
        double r2 = 0;
        for (int a = 0; a < dims; a++) {
            double d = x[a] - c->initial.center[a];
            r2 += d * d;
        }
        double w = c->initial.width;
        return c->initial.base + c->initial.amplitude * exp(-r2 / (2.0 * w * w));
    }
    case HEAT_INIT_SINE: {
        double p = c->initial.amplitude;
        for (int a = 0; a < dims; a++)
            p *= sin(c->initial.modes[a] * M_PI * (x[a] - c->grid.origin[a]) / c->grid.length[a]);
        return p;
    }
    default:
        return 0;
    }
}

/* The box [lo, lo + n) of the field, x fastest; the node coordinates are
 * those of the whole grid, so a box holds the very values of the whole
 * field. */
#define FILL(T)                                                                                    \
    do {                                                                                           \
        T *f = field;                                                                              \
        _Pragma("omp parallel for schedule(static)") for (int64_t k = 0; k < nz; k++)              \
        {                                                                                          \
            double x[3];                                                                           \
            x[2] = c->grid.origin[2] + (double)(lo[2] + k) * c->d.h[2];                            \
            for (int64_t j = 0; j < ny; j++) {                                                     \
                x[1] = c->grid.origin[1] + (double)(lo[1] + j) * c->d.h[1];                        \
                for (int64_t i = 0; i < nx; i++) {                                                 \
                    x[0] = c->grid.origin[0] + (double)(lo[0] + i) * c->d.h[0];                    \
                    f[(k * ny + j) * nx + i] = (T)initial_value(c, x);                             \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    } while (0)

/* A reader's problem with initial.path as a deck error:
 * "initial.path = "x": ...". */
static int path_error(const char *path, heat_error *err)
{
    heat_error_prefix(err, "initial.path = \"%s\": ", path);
    err->code = HEAT_EINPUT;
    return HEAT_EINPUT;
}

/* Reads initial.path's metadata and checks its shape against the deck. */
static int file_meta(const heat_case *c, heat_file_meta *m, FILE *notices, heat_error *err)
{
    const char *path = c->initial.path;
    if (heat_file_read_meta(path, m, err)) return path_error(path, err);
    if (m->n[0] != c->grid.n[0] || m->n[1] != c->grid.n[1] || m->n[2] != c->grid.n[2]) {
        int rc = heat_error_set(err, HEAT_EINPUT,
                                "initial.path = \"%s\": the file's grid is %lld x %lld x %lld "
                                "points, but grid.points = [%lld, %lld, %lld]: the initial field "
                                "must have the deck's shape",
                                path, (long long)m->n[0], (long long)m->n[1], (long long)m->n[2],
                                (long long)c->grid.n[0], (long long)c->grid.n[1],
                                (long long)c->grid.n[2]);
        heat_file_meta_free(m);
        return rc;
    }
    if (notices && m->precision != c->solver.precision)
        fprintf(notices,
                "notice: initial.path = \"%s\": converting the file's %s field to %s (the "
                "run's solver.precision)\n",
                path, heat_precision_name(m->precision), heat_precision_name(c->solver.precision));
    int differs = 0;
    for (int a = 0; a < c->grid.dims; a++)
        differs |= m->length[a] != c->grid.length[a] || m->origin[a] != c->grid.origin[a];
    if (notices && differs)
        fprintf(notices,
                "notice: initial.path = \"%s\": the file's grid.length or grid.origin differ "
                "from the deck's; its values are taken node by node\n",
                path);
    return HEAT_OK;
}

int heat_initial_check_file(const heat_case *c, FILE *notices, heat_error *err)
{
    if (c->initial.type != HEAT_INIT_FILE) return HEAT_OK;
    heat_file_meta m;
    int rc = file_meta(c, &m, notices, err);
    if (rc == HEAT_OK) heat_file_meta_free(&m);
    return rc;
}

/* The box of the field of a snapshot or checkpoint, node by node. */
static int fill_from_file(const heat_case *c, const int64_t lo[3], const int64_t n[3], void *field,
                          FILE *notices, heat_error *err)
{
    heat_file_meta m;
    int rc = file_meta(c, &m, notices, err);
    if (rc) return rc;
    const int whole = !lo[0] && !lo[1] && !lo[2] && n[0] == c->grid.n[0] && n[1] == c->grid.n[1] &&
                      n[2] == c->grid.n[2];
    rc = whole ? heat_file_read_field(c->initial.path, &m, c->solver.precision, field, err)
               : heat_file_read_box(c->initial.path, &m, c->solver.precision, lo, n, field, err);
    heat_file_meta_free(&m);
    if (rc) return path_error(c->initial.path, err);
    heat_initial_apply_dirichlet_box(c, lo, n, field);
    return HEAT_OK;
}

int heat_initial_fill(const heat_case *c, void *field, heat_error *err)
{
    return heat_initial_fill_with_notices(c, field, NULL, err);
}

int heat_initial_fill_with_notices(const heat_case *c, void *field, FILE *notices, heat_error *err)
{
    const int64_t lo[3] = {0, 0, 0};
    return heat_initial_fill_box(c, lo, c->grid.n, field, notices, err);
}

int heat_initial_fill_box(const heat_case *c, const int64_t lo[3], const int64_t n[3], void *field,
                          FILE *notices, heat_error *err)
{
    if (c->initial.type == HEAT_INIT_FILE) return fill_from_file(c, lo, n, field, notices, err);
    const int64_t nx = n[0], ny = n[1], nz = n[2];
    if (c->solver.precision == HEAT_FLOAT)
        FILL(float);
    else
        FILL(double);
    heat_initial_apply_dirichlet_box(c, lo, n, field);
    return HEAT_OK;
}

void heat_initial_apply_dirichlet(const heat_case *c, void *field)
{
    const int64_t lo[3] = {0, 0, 0};
    heat_initial_apply_dirichlet_box(c, lo, c->grid.n, field);
}

void heat_initial_apply_dirichlet_box(const heat_case *c, const int64_t box_lo[3],
                                      const int64_t box_n[3], void *field)
{
    const int64_t *n = box_n;
    for (int face = 0; face < 2 * c->grid.dims; face++) {
        if (c->bc[face].type != HEAT_BC_DIRICHLET) continue;
        const int axis = face / 2;
        /* The face's plane in the box's own indices, when the box has it. */
        const int64_t pos = (face % 2) ? c->grid.n[axis] - 1 - box_lo[axis] : -box_lo[axis];
        if (pos < 0 || pos >= n[axis]) continue;
        /* Loop over the face only: clamp the face axis to one index. */
        int64_t lo[3] = {0, 0, 0}, hi[3] = {n[0], n[1], n[2]};
        lo[axis] = pos;
        hi[axis] = pos + 1;
        for (int64_t k = lo[2]; k < hi[2]; k++)
            for (int64_t j = lo[1]; j < hi[1]; j++)
                for (int64_t i = lo[0]; i < hi[0]; i++) {
                    int64_t at = (k * n[1] + j) * n[0] + i;
                    if (c->solver.precision == HEAT_FLOAT)
                        ((float *)field)[at] = (float)c->bc[face].value;
                    else
                        ((double *)field)[at] = c->bc[face].value;
                }
    }
}

double heat_field_max_abs(const heat_case *c, const void *field, int64_t n)
{
    double m = 0;
    if (c->solver.precision == HEAT_FLOAT) {
        const float *f = field;
#pragma omp parallel for reduction(max : m)
        for (int64_t i = 0; i < n; i++) m = fmax(m, fabs((double)f[i]));
    } else {
        const double *f = field;
#pragma omp parallel for reduction(max : m)
        for (int64_t i = 0; i < n; i++) m = fmax(m, fabs(f[i]));
    }
    return m;
}

void heat_node_text(const int64_t lo[3], const int64_t n[3], int64_t index, char *buf, size_t len)
{
    snprintf(buf, len, "(%lld, %lld, %lld)", (long long)(lo[0] + index % n[0]),
             (long long)(lo[1] + index / n[0] % n[1]), (long long)(lo[2] + index / (n[0] * n[1])));
}
