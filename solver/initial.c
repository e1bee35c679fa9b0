#include "initial.h"

#include <math.h>

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

#define FILL(T)                                                                                    \
    do {                                                                                           \
        T *f = field;                                                                              \
        _Pragma("omp parallel for schedule(static)") for (int64_t k = 0; k < nz; k++)              \
        {                                                                                          \
            double x[3];                                                                           \
            x[2] = c->grid.origin[2] + (double)k * c->d.h[2];                                      \
            for (int64_t j = 0; j < ny; j++) {                                                     \
                x[1] = c->grid.origin[1] + (double)j * c->d.h[1];                                  \
                for (int64_t i = 0; i < nx; i++) {                                                 \
                    x[0] = c->grid.origin[0] + (double)i * c->d.h[0];                              \
                    f[(k * ny + j) * nx + i] = (T)initial_value(c, x);                             \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    } while (0)

int heat_initial_fill(const heat_case *c, void *field, heat_error *err)
{
    if (c->initial.type == HEAT_INIT_FILE)
        return heat_error_set(err, HEAT_EINPUT,
                              "initial.type = \"file\" (%s): reading a field from a file needs "
                              "the HDF5 reader, which this build does not have yet",
                              c->initial.path);
    const int64_t nx = c->grid.n[0], ny = c->grid.n[1], nz = c->grid.n[2];
    if (c->solver.precision == HEAT_FLOAT)
        FILL(float);
    else
        FILL(double);
    heat_initial_apply_dirichlet(c, field);
    return HEAT_OK;
}

void heat_initial_apply_dirichlet(const heat_case *c, void *field)
{
    const int64_t n[3] = {c->grid.n[0], c->grid.n[1], c->grid.n[2]};
    for (int face = 0; face < 2 * c->grid.dims; face++) {
        if (c->bc[face].type != HEAT_BC_DIRICHLET) continue;
        const int axis = face / 2;
        const int64_t pos = (face % 2) ? n[axis] - 1 : 0;
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
