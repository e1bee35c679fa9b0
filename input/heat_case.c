#include "heat_case.h"

#include <math.h>
#include <string.h>

const char *const heat_bc_type_names[HEAT_BC_COUNT + 1] = {"dirichlet", "neumann", "periodic",
                                                           NULL};
const char *const heat_init_type_names[HEAT_INIT_COUNT + 1] = {"constant", "gaussian", "sine",
                                                               "file", NULL};
const char *const heat_backend_kind_names[HEAT_BACKEND_COUNT + 1] = {"auto", "cpu", "cuda", NULL};
const char *const heat_precision_names[HEAT_PRECISION_COUNT + 1] = {"double", "float", NULL};
const char *const heat_kernel_names[HEAT_KERNEL_COUNT + 1] = {"naive", "tiled", "sliced",
                                                              "register_tiled", NULL};
const char *const heat_face_names[HEAT_NFACES + 1] = {"x_lo", "x_hi", "y_lo", "y_hi",
                                                      "z_lo", "z_hi", NULL};
const char *const heat_transport_names[HEAT_TRANSPORT_COUNT + 1] = {"auto", "mpi", "nccl", NULL};
const char *const heat_pio_names[HEAT_PIO_COUNT + 1] = {"auto", "collective", "aggregated", NULL};

int heat_name_index(const char *const *names, const char *s)
{
    for (int i = 0; names[i]; i++)
        if (strcmp(names[i], s) == 0) return i;
    return -1;
}

static const char *name_of(const char *const *names, int count, int v)
{
    return v >= 0 && v < count ? names[v] : "?";
}

const char *heat_bc_type_name(heat_bc_type t)
{
    return name_of(heat_bc_type_names, HEAT_BC_COUNT, (int)t);
}

const char *heat_init_type_name(heat_init_type t)
{
    return name_of(heat_init_type_names, HEAT_INIT_COUNT, (int)t);
}

const char *heat_backend_kind_name(heat_backend_kind k)
{
    return name_of(heat_backend_kind_names, HEAT_BACKEND_COUNT, (int)k);
}

const char *heat_precision_name(heat_precision p)
{
    return name_of(heat_precision_names, HEAT_PRECISION_COUNT, (int)p);
}

const char *heat_kernel_name(heat_kernel k)
{
    return name_of(heat_kernel_names, HEAT_KERNEL_COUNT, (int)k);
}

const char *heat_face_name(int face)
{
    return name_of(heat_face_names, HEAT_NFACES, face);
}

const char *heat_transport_name(heat_transport t)
{
    return name_of(heat_transport_names, HEAT_TRANSPORT_COUNT, (int)t);
}

const char *heat_pio_name(heat_pio p)
{
    return name_of(heat_pio_names, HEAT_PIO_COUNT, (int)p);
}

/* ---- derived numbers ---------------------------------------------------- */

/* The step count that reaches time.end with steps of dt: ceil(end / dt), less
 * one where dt divides end up to rounding (1e-9 relative), at least 1.
 * HEAT_EINPUT when it would not fit. */
static int steps_to_end(const heat_case *c, double dt, const char *whose, double *n,
                        heat_error *err)
{
    double q = c->time.end / dt;
    if (q > 9.0e15)
        return heat_error_set(err, HEAT_EINPUT,
                              "time.end = %.9g needs %.3g steps of %sdt = %.9g: too many",
                              c->time.end, q, whose, dt);
    *n = ceil(q);
    if (*n > 1 && q - (*n - 1) < 1e-9 * q) *n -= 1;
    if (*n < 1) *n = 1;
    return HEAT_OK;
}

/* r from dt, and stop_step from end_step and max_steps. */
static void finish_steps(heat_case *c)
{
    for (int a = 0; a < c->grid.dims; a++) c->d.r[a] = c->alpha * c->d.dt / (c->d.h[a] * c->d.h[a]);
    c->d.stop_step = c->d.end_step;
    if (c->time.has_max_steps && (c->d.stop_step < 0 || c->time.max_steps < c->d.stop_step))
        c->d.stop_step = c->time.max_steps;
}

/* A derived number that must be finite and > 0. */
static int positive(double x)
{
    return x > 0 && isfinite(x);
}

/* The spacing, the stability limit and the Gaussian's 2 w^2 must be finite
 * and positive, or the run could only produce zeros, Inf or NaN: a deck of
 * such extremes is refused, naming the keys. */
static int check_derived(const heat_case *c, heat_error *err)
{
    for (int a = 0; a < c->grid.dims; a++)
        if (!positive(c->d.h[a]))
            return heat_error_set(err, HEAT_EINPUT,
                                  "grid.length[%d] = %.9g over grid.points[%d] = %lld gives the "
                                  "spacing h = %.3g: it must be a positive, representable number",
                                  a, c->grid.length[a], a, (long long)c->grid.n[a], c->d.h[a]);
    if (!positive(c->d.dt_max))
        return heat_error_set(err, HEAT_EINPUT,
                              "material.diffusivity = %.9g with the grid's spacing (hx = %.3g, "
                              "hy = %.3g, hz = %.3g): the stability limit dt_max = 1 / (2 alpha "
                              "sum 1/h^2) comes out as %.3g, not a positive representable number: "
                              "keep the diffusivity and the spacing within about 1e-100 to 1e100",
                              c->alpha, c->d.h[0], c->d.h[1], c->grid.dims == 3 ? c->d.h[2] : 0.0,
                              c->d.dt_max);
    if (c->initial.type == HEAT_INIT_GAUSSIAN &&
        !positive(2.0 * c->initial.width * c->initial.width))
        return heat_error_set(err, HEAT_EINPUT,
                              "initial.width = %.9g: 2 width^2 comes out as %.3g: the width must "
                              "be a positive number whose square is representable (about 1e-150 "
                              "to 1e150)",
                              c->initial.width, 2.0 * c->initial.width * c->initial.width);
    return HEAT_OK;
}

/* dt and r: finite and positive once dt is chosen. */
static int check_dt(const heat_case *c, heat_error *err)
{
    if (!positive(c->d.dt))
        return heat_error_set(err, HEAT_EINPUT,
                              "the time step comes out as dt = %.3g: it must be "
                              "a positive, representable number",
                              c->d.dt);
    for (int a = 0; a < c->grid.dims; a++)
        if (!positive(c->d.r[a]))
            return heat_error_set(err, HEAT_EINPUT,
                                  "alpha dt / h^2 along axis %d comes out as %.3g (dt = %.3g, h = "
                                  "%.3g, material.diffusivity = %.9g): it must be a positive, "
                                  "representable number",
                                  a, c->d.r[a], c->d.dt, c->d.h[a], c->alpha);
    return HEAT_OK;
}

int heat_case_derive(heat_case *c, heat_error *err)
{
    memset(&c->d, 0, sizeof c->d);
    int dims = c->grid.dims;
    double inv_h2 = 0;
    for (int a = 0; a < 3; a++) {
        int periodic = c->bc[2 * a].type == HEAT_BC_PERIODIC;
        if (a >= dims) {
            c->d.h[a] = 1.0;
            continue;
        }
        c->d.h[a] = c->grid.length[a] / (double)(periodic ? c->grid.n[a] : c->grid.n[a] - 1);
        inv_h2 += 1.0 / (c->d.h[a] * c->d.h[a]);
    }
    c->d.dt_max = 0.5 / (c->alpha * inv_h2);
    c->d.points = c->grid.n[0] * c->grid.n[1] * c->grid.n[2];
    int rc = check_derived(c, err);
    if (rc) return rc;

    double dt = c->time.has_dt ? c->time.dt : c->time.safety * c->d.dt_max;
    if (c->time.has_dt && dt > c->d.dt_max)
        return heat_error_set(err, HEAT_EINPUT,
                              "%s%stime.dt = %.9g is above the stability limit dt_max = %.9g "
                              "(forward Euler needs sum of alpha*dt/h^2 over the axes <= 1/2; "
                              "here it would be %.6g): use dt <= %.9g or leave dt out",
                              c->time.dt_where, c->time.dt_where[0] ? ": " : "", dt, c->d.dt_max,
                              0.5 * dt / c->d.dt_max, c->d.dt_max);
    c->d.end_step = -1;
    if (c->time.has_end) {
        double n = 1;
        if ((rc = steps_to_end(c, dt, "", &n, err))) return rc;
        /* A dt fitted to end must not pass the stability limit. */
        if (c->time.end / n > c->d.dt_max) n += 1;
        c->d.end_step = (int64_t)n;
        dt = c->time.end / n;
    }
    c->d.dt = dt;
    finish_steps(c);
    c->d.check_every = c->steady.check_every > 0 ? c->steady.check_every : 100;
    return check_dt(c, err);
}

int heat_case_keep_dt(heat_case *c, double dt, int *end_moved, heat_error *err)
{
    *end_moved = 0;
    c->d.dt = dt;
    c->d.end_step = -1;
    if (c->time.has_end) {
        double n = 1;
        int rc = steps_to_end(c, dt, "the restart file's ", &n, err);
        if (rc) return rc;
        c->d.end_step = (int64_t)n;
        if (!(fabs(n * dt - c->time.end) <= 1e-9 * c->time.end)) {
            c->time.end = n * dt; /* the time of that step, as reported */
            *end_moved = 1;
        }
    }
    finish_steps(c);
    return check_dt(c, err);
}

double heat_case_value_scale(const heat_case *c)
{
    double u = 0;
    for (int f = 0; f < 2 * c->grid.dims; f++)
        if (c->bc[f].type == HEAT_BC_DIRICHLET) u = fmax(u, fabs(c->bc[f].value));
    switch (c->initial.type) {
    case HEAT_INIT_CONSTANT:
        return fmax(u, fabs(c->initial.value));
    case HEAT_INIT_GAUSSIAN:
        return fmax(u, fabs(c->initial.base) + fabs(c->initial.amplitude));
    case HEAT_INIT_SINE:
        return fmax(u, fabs(c->initial.amplitude));
    default:
        return u;
    }
}

double heat_case_residual_floor(const heat_case *c, double umax)
{
    const double eps = c->solver.precision == HEAT_FLOAT ? 0x1p-23 : 0x1p-52;
    return eps * umax / c->d.dt;
}

double heat_case_time(const heat_case *c, int64_t step)
{
    if (c->d.end_step >= 0 && step == c->d.end_step) return c->time.end;
    return (double)step * c->d.dt;
}
