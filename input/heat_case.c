#include "heat_case.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const heat_bc_type_names[HEAT_BC_COUNT + 1] = {"dirichlet",  "neumann", "periodic",
                                                           "convective", "flux",    NULL};
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
const char *const heat_scheme_names[HEAT_SCHEME_COUNT + 1] = {"explicit", "backward_euler",
                                                              "crank_nicolson", NULL};
const char *const heat_steady_method_names[HEAT_STEADY_METHOD_COUNT + 1] = {"explicit", "multigrid",
                                                                            NULL};

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

const char *heat_scheme_name(heat_scheme s)
{
    return name_of(heat_scheme_names, HEAT_SCHEME_COUNT, (int)s);
}

double heat_case_default_implicit_tolerance(heat_precision p)
{
    return p == HEAT_FLOAT ? 1e-5 : 1e-10;
}

double heat_case_implicit_floor(const heat_case *c)
{
    const double eps = c->solver.precision == HEAT_FLOAT ? 0x1p-23 : 0x1p-52;
    return 16.0 * eps * (1.0 + c->d.theta * c->d.dt / c->d.dt_max);
}

int heat_case_singular(const heat_case *c)
{
    for (int f = 0; f < 2 * c->grid.dims; f++)
        if (c->bc[f].type == HEAT_BC_DIRICHLET ||
            (c->bc[f].type == HEAT_BC_CONVECTIVE && c->bc[f].h > 0))
            return 0;
    return 1;
}

void heat_bc_text(const heat_bc *bc, int exact, char *buf, size_t n)
{
    const char *g = exact ? "%.17g" : "%g";
    char a[40], b[40];
    switch (bc->type) {
    case HEAT_BC_DIRICHLET:
        snprintf(a, sizeof a, g, bc->value);
        snprintf(buf, n, "dirichlet, value %s", a);
        break;
    case HEAT_BC_NEUMANN:
        snprintf(a, sizeof a, g, bc->gradient);
        snprintf(buf, n, "neumann, gradient %s", a);
        break;
    case HEAT_BC_CONVECTIVE:
        snprintf(a, sizeof a, g, bc->h);
        snprintf(b, sizeof b, g, bc->ambient);
        snprintf(buf, n, "convective, h %s, ambient %s", a, b);
        break;
    case HEAT_BC_FLUX:
        snprintf(a, sizeof a, g, bc->value);
        snprintf(buf, n, "flux, value %s", a);
        break;
    default:
        snprintf(buf, n, "periodic");
    }
}

static int same_shape(const heat_shape *a, const heat_shape *b, const heat_case *ca,
                      const heat_case *cb)
{
    if (a->kind != b->kind) return 0;
    if (a->kind == HEAT_SHAPE_FILE)
        return strcmp(ca->regions.files[a->file].path, cb->regions.files[b->file].path) == 0 &&
               strcmp(ca->regions.files[a->file].dataset, cb->regions.files[b->file].dataset) == 0;
    return memcmp(a->min, b->min, sizeof a->min) == 0 &&
           memcmp(a->max, b->max, sizeof a->max) == 0 &&
           memcmp(a->center, b->center, sizeof a->center) == 0 && a->radius == b->radius &&
           a->axis == b->axis && a->lo == b->lo && a->hi == b->hi;
}

/* A shape in words, numbers exact: what a restart's refusal names. */
static void shape_text(const heat_shape *s, const heat_case *c, char *buf, size_t n)
{
    const char *ax = "xyz";
    switch (s->kind) {
    case HEAT_SHAPE_BOX:
        snprintf(buf, n, "box min [%.17g, %.17g, %.17g] max [%.17g, %.17g, %.17g]", s->min[0],
                 s->min[1], s->min[2], s->max[0], s->max[1], s->max[2]);
        break;
    case HEAT_SHAPE_SPHERE:
        snprintf(buf, n, "sphere center [%.17g, %.17g, %.17g] radius %.17g", s->center[0],
                 s->center[1], s->center[2], s->radius);
        break;
    case HEAT_SHAPE_CYLINDER:
        snprintf(buf, n, "cylinder axis %c center [%.17g, %.17g] radius %.17g from %.17g to %.17g",
                 ax[s->axis], s->center[0], s->center[1], s->radius, s->lo, s->hi);
        break;
    default:
        snprintf(buf, n, "file %s:%s", c->regions.files[s->file].path,
                 c->regions.files[s->file].dataset);
    }
}

/* Region i of c in words: its material and shape. */
static void region_text(const heat_case *c, int i, char *buf, size_t n)
{
    const heat_region *r = &c->regions.r[i];
    char shape[HEAT_PATH_MAX + HEAT_NAME_MAX + 160];
    shape_text(&r->shape, c, shape, sizeof shape);
    if (r->material >= 0 && r->material < c->materials.count)
        snprintf(buf, n, "material \"%s\", %s", c->materials.m[r->material].name, shape);
    else
        snprintf(buf, n, "%s", shape);
}

int heat_case_same_physics(const heat_case *d, const heat_case *f, heat_error *diff)
{
    const int before = diff->code;
    if (d->materials.count != f->materials.count)
        heat_error_append(diff, HEAT_EINPUT, "  materials: %d in the deck, %d in the file",
                          d->materials.count, f->materials.count);
    for (int i = 0; i < d->materials.count && i < f->materials.count; i++) {
        const heat_material *a = &d->materials.m[i], *b = &f->materials.m[i];
        if (strcmp(a->name, b->name) || a->k != b->k || a->rho != b->rho || a->cp != b->cp)
            heat_error_append(diff, HEAT_EINPUT,
                              "  materials[%d] = \"%s\" (k %.17g, rho %.17g, c %.17g) in the deck, "
                              "\"%s\" (k %.17g, rho %.17g, c %.17g) in the file",
                              i, a->name, a->k, a->rho, a->cp, b->name, b->k, b->rho, b->cp);
    }
    char a[HEAT_PATH_MAX + HEAT_NAME_MAX + 256], b[sizeof a];
    if (d->regions.count != f->regions.count)
        heat_error_append(diff, HEAT_EINPUT, "  regions: %d in the deck, %d in the file",
                          d->regions.count, f->regions.count);
    for (int i = 0; i < d->regions.count && i < f->regions.count; i++) {
        if (d->regions.r[i].material == f->regions.r[i].material &&
            same_shape(&d->regions.r[i].shape, &f->regions.r[i].shape, d, f))
            continue;
        region_text(d, i, a, sizeof a);
        region_text(f, i, b, sizeof b);
        heat_error_append(diff, HEAT_EINPUT, "  regions[%d]: %s in the deck, %s in the file", i, a,
                          b);
    }
    if (d->sources.count != f->sources.count)
        heat_error_append(diff, HEAT_EINPUT, "  sources: %d in the deck, %d in the file",
                          d->sources.count, f->sources.count);
    for (int i = 0; i < d->sources.count && i < f->sources.count; i++) {
        const heat_source *x = &d->sources.s[i], *y = &f->sources.s[i];
        if (x->power == y->power && same_shape(&x->shape, &y->shape, d, f)) continue;
        shape_text(&x->shape, d, a, sizeof a);
        shape_text(&y->shape, f, b, sizeof b);
        heat_error_append(diff, HEAT_EINPUT,
                          "  sources[%d]: power density %.17g W/m^3, %s in the deck; %.17g W/m^3, "
                          "%s in the file",
                          i, x->power, a, y->power, b);
    }
    return diff->code == before;
}

/* ---- derived numbers ---------------------------------------------------- */

/* The most steps time.end may take: a step number must stay exact in a
 * double (below 2^53, about 9.007e15). */
#define END_STEPS_MAX 9.0e15

/* The step count that reaches time.end with steps of dt: ceil(end / dt), less
 * one where dt divides end up to rounding (1e-9 relative), at least 1.
 * HEAT_EINPUT when it would not fit, saying the limit and what to change. */
static int steps_to_end(const heat_case *c, double dt, const char *whose, double *n,
                        heat_error *err)
{
    double q = c->time.end / dt;
    if (q > END_STEPS_MAX) {
        char fix[160];
        if (whose[0])
            snprintf(fix, sizeof fix, "use a smaller time.end (a restart keeps its file's dt)");
        else if (heat_case_implicit(c))
            snprintf(fix, sizeof fix, "use a larger time.dt or a smaller time.end");
        else
            snprintf(fix, sizeof fix,
                     "use a smaller time.end, or a larger time.dt (explicit steps take at most "
                     "dt_max = %.17g)",
                     c->d.dt_max);
        return heat_error_set(err, HEAT_EINPUT,
                              "time.end = %.9g needs %.3g steps of %sdt = %.9g: too many (at most "
                              "%.3g steps may reach time.end): %s",
                              c->time.end, q, whose, dt, END_STEPS_MAX, fix);
    }
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
    if (!positive(c->d.dt_max) && c->materials.count > 0 && c->materials.m[0].k > 0) {
        /* Materials of conductivity, density and specific heat: the one
         * whose diffusivity k / (rho c) is largest (or not a number) sets it. */
        int w = 0;
        double aw = -1;
        for (int i = 0; i < c->materials.count; i++) {
            const heat_material *m = &c->materials.m[i];
            const double a = m->k / (m->rho * m->cp);
            if (!(a <= aw)) w = i, aw = a;
        }
        const heat_material *m = &c->materials.m[w];
        char key[32];
        if (c->materials.count > 1 || c->regions.count > 0)
            snprintf(key, sizeof key, "materials[%d]", w);
        else
            snprintf(key, sizeof key, "material");
        return heat_error_set(err, HEAT_EINPUT,
                              "%s = \"%s\": its diffusivity k / (rho c) = %.9g / (%.9g * %.9g) = "
                              "%.3g with the grid's spacing (hx = %.3g, hy = %.3g, hz = %.3g) "
                              "gives the stability limit dt_max = 1 / (2 alpha sum 1/h^2) = %.3g, "
                              "not a positive representable number: keep the conductivity, "
                              "density and specific heat within about 1e-100 to 1e100",
                              key, m->name, m->k, m->rho, m->cp, aw, c->d.h[0], c->d.h[1],
                              c->grid.dims == 3 ? c->d.h[2] : 0.0, c->d.dt_max);
    }
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

int heat_case_coeffs(const heat_case *c, const heat_classes *cls, heat_coeffs *k, heat_error *err)
{
    memset(k, 0, sizeof *k);
    const int nm = c->materials.count > 0 ? c->materials.count : 1;
    k->nmat = nm;
    k->ncls = cls->count;
    k->w = malloc(sizeof *k->w * 3 * (size_t)nm * (size_t)nm);
    if (!k->w) return heat_error_set(err, HEAT_ERUNTIME, "out of memory for the material tables");
    const double dt = c->d.dt;
    for (int d = 0; d < 3; d++)
        for (int a = 0; a < nm; a++) {
            const heat_material *m = &c->materials.m[a];
            for (int b = 0; b < nm; b++)
                k->w[((size_t)d * nm + a) * nm + b] =
                    d < c->grid.dims
                        ? dt * heat_case_face_k(c, a, b) / (m->rho * m->cp * c->d.h[d] * c->d.h[d])
                        : 0.0;
        }
    for (int i = 0; i < cls->count; i++) {
        const heat_material *m = &c->materials.m[cls->material[i]];
        k->mat[i] = cls->material[i];
        k->q[i] = dt * cls->power[i] / (m->rho * m->cp);
        k->power[i] = cls->power[i];
    }
    for (int f = 0; f < HEAT_NFACES; f++) {
        const heat_bc *bc = &c->bc[f];
        const double h = c->d.h[f / 2];
        k->ambient[f] = bc->ambient;
        for (int a = 0; a < nm; a++) {
            const double ka = c->materials.m[a].k;
            k->g[f][a] = bc->type == HEAT_BC_NEUMANN ? 2.0 * h * bc->gradient
                         : bc->type == HEAT_BC_FLUX  ? 2.0 * h * bc->value / ka
                                                     : 0.0;
            k->beta[f][a] = bc->type == HEAT_BC_CONVECTIVE ? 2.0 * h * bc->h / ka : 0.0;
        }
    }
    return HEAT_OK;
}

void heat_coeffs_free(heat_coeffs *k)
{
    free(k->w);
    k->w = NULL;
}

double heat_case_face_k(const heat_case *c, int a, int b)
{
    const double ka = c->materials.m[a].k, kb = c->materials.m[b].k;
    return a == b ? ka : 2.0 * ka * kb / (ka + kb);
}

/* The stability limit of the variable-coefficient update. A node of
 * material a changes by dt / (rho c)_a times the sum over its faces of
 * K_f (u_f - u) / h^2, K_f the harmonic mean of the two conductivities; on a
 * convective face the mirrored ghost also takes beta (u - ambient), beta =
 * 2 h h_c / k_a. The update is monotone (every weight >= 0) while dt times
 * the sum of the weights on u stays <= 1. Counting each face with the largest
 * K_f that material a has with any material listed gives, per material,
 *   S_a = Kmax_a / (rho c)_a (sum_d 2 / h_d^2 + sum_d max_side beta / h_d^2)
 * and dt_max = min_a 1 / S_a: the material of the most restrictive nodes,
 * remembered in d.dt_material. */
static void general_dt_max(heat_case *c)
{
    c->d.dt_max = INFINITY;
    c->d.dt_material = -1;
    for (int a = 0; a < c->materials.count; a++) {
        double kmax = 0;
        for (int b = 0; b < c->materials.count; b++) kmax = fmax(kmax, heat_case_face_k(c, a, b));
        const heat_material *m = &c->materials.m[a];
        double sum = 0;
        for (int d = 0; d < c->grid.dims; d++) {
            const double h = c->d.h[d];
            double beta = 0;
            for (int side = 0; side < 2; side++) {
                const heat_bc *bc = &c->bc[2 * d + side];
                if (bc->type == HEAT_BC_CONVECTIVE) beta = fmax(beta, 2.0 * h * bc->h / m->k);
            }
            sum += (2.0 + beta) / (h * h);
        }
        const double dt = 1.0 / (kmax / (m->rho * m->cp) * sum);
        if (dt < c->d.dt_max) c->d.dt_max = dt, c->d.dt_material = a;
    }
}

/* Whether the case needs the variable-coefficient update: several
 * materials, a heat source, or a convective or flux face (whose ghosts
 * depend on the conductivity). The uniform kernels see only Dirichlet,
 * Neumann and periodic faces. */
static int needs_general(const heat_case *c)
{
    if (c->materials.count > 1 || c->sources.count > 0) return 1;
    for (int f = 0; f < 2 * c->grid.dims; f++)
        if (c->bc[f].type == HEAT_BC_CONVECTIVE || c->bc[f].type == HEAT_BC_FLUX) return 1;
    return 0;
}

/* Each probe's nearest node (a periodic axis wraps). */
static void probe_nodes(heat_case *c)
{
    for (int i = 0; i < c->probes.count; i++) {
        heat_probe *p = &c->probes.p[i];
        for (int a = 0; a < 3; a++) {
            const int64_t n = c->grid.n[a];
            if (a >= c->grid.dims) {
                p->node[a] = 0;
                continue;
            }
            int64_t k = (int64_t)llround((p->at[a] - c->grid.origin[a]) / c->d.h[a]);
            if (c->bc[2 * a].type == HEAT_BC_PERIODIC)
                k = ((k % n) + n) % n;
            else
                k = k < 0 ? 0 : (k >= n ? n - 1 : k);
            p->node[a] = k;
        }
    }
}

int heat_case_auto_depth(const heat_case *c)
{
    if (c->solver.backend == HEAT_BACKEND_CPU || c->solver.kernel != HEAT_KERNEL_FUSING) return 1;
    /* [general][3D][float]; general decks (materials, sources, convective or
     * flux faces) measured k = 1 to 4: 2D fastest at 4 in both precisions,
     * 3D fastest at 1 (the fused general kernels lose there). Uniform 3D: 4
     * in both precisions where a (rank's) plane has at least 256 x 256
     * points, 3 on smaller planes, whose windows' halos weigh more (H100:
     * k = 4 up to 7% faster from 384^3 up, level at 256^3 and 512^3 in
     * float; k = 3 5 to 8% faster at 128^3). Double k = 3 runs one row a
     * thread (temporal.cuh): 2 to 3% faster than k = 4 at 512^3, 1.4 to 5%
     * slower at the other sizes measured from 256^3 up, so the table keeps
     * 4 (docs/PERFORMANCE.md). On one GPU with the uniform update the CUDA
     * backend times this k and its neighbours before a run and keeps the
     * fastest (cuda_backend.cu, measure_depth). */
    static const int best[2][2][2] = {
        {/* 2D: double, float */ {4, 8}, /* 3D */ {4, 4}},
        {/* 2D */ {4, 4}, /* 3D */ {1, 1}},
    };
    const int is3 = c->grid.dims == 3;
    const int general = needs_general(c);
    int k = best[general][is3][c->solver.precision == HEAT_FLOAT];
    long long part[3];
    for (int a = 0; a < 3; a++)
        part[a] = c->parallel.ranks[a] > 1 ? c->grid.n[a] / c->parallel.ranks[a] : c->grid.n[a];
    if (is3 && !general && part[0] * part[1] < 256LL * 256) k = 3;
    const long long nw = part[is3 ? 2 : 1];
    while (k > 1 && nw < 8LL * k) k--;
    return k;
}

void heat_case_auto_range(const heat_case *c, int *lo, int *hi)
{
    const int k = c->solver.temporal_block;
    const long long nw = c->grid.n[c->grid.dims == 3 ? 2 : 1];
    *lo = k > 1 ? k - 1 : 1;
    *hi = k < HEAT_TEMPORAL_BLOCK_MAX && nw >= 8LL * (k + 1) ? k + 1 : k;
}

/* HEAT_EINPUT for a time.dt above dt_max, with both numbers and why. */
static int dt_refused(const heat_case *c, double dt, heat_error *err)
{
    char why[256];
    if (c->d.general)
        snprintf(why, sizeof why,
                 "the weights of a node's neighbours must sum to <= 1, and for the nodes of "
                 "material \"%s\", the most restrictive, they would sum to %.6g",
                 c->materials.m[c->d.dt_material].name, dt / c->d.dt_max);
    else
        snprintf(why, sizeof why,
                 "forward Euler needs sum of alpha*dt/h^2 over the axes <= 1/2; here it would be "
                 "%.6g",
                 0.5 * dt / c->d.dt_max);
    /* dt_max in full: rounded to fewer digits it can come out above itself,
     * and a dt copied from it would be refused again. */
    return heat_error_set(err, HEAT_EINPUT,
                          "%s%stime.dt = %.9g is above the stability limit dt_max = %.17g (%s): "
                          "use dt <= %.17g or leave dt out",
                          c->time.dt_where, c->time.dt_where[0] ? ": " : "", dt, c->d.dt_max, why,
                          c->d.dt_max);
}

/* A steady multigrid run: its steps are V-cycles, dt = 1 (so that the time
 * of a row is its cycle), every cycle checked; time.end and time.dt do not
 * apply, time.max_steps bounds the cycles. */
static int derive_cycles(heat_case *c, heat_error *err)
{
    c->d.dt = 1.0;
    c->d.end_step = -1;
    finish_steps(c);
    c->d.check_every = 1;
    return check_dt(c, err);
}

int heat_case_derive(heat_case *c, heat_error *err)
{
    if (c->solver.temporal_auto) c->solver.temporal_block = heat_case_auto_depth(c);
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
    c->d.dt_material = -1;
    c->d.general = needs_general(c);
    if (c->d.general) general_dt_max(c);
    c->d.points = c->grid.n[0] * c->grid.n[1] * c->grid.n[2];
    probe_nodes(c);
    int rc = check_derived(c, err);
    if (rc) return rc;

    c->d.theta = c->time.scheme == HEAT_SCHEME_CRANK_NICOLSON ? 0.5 : 1.0;
    if (heat_case_steady_multigrid(c)) return derive_cycles(c, err);
    if (heat_case_implicit(c) && !c->time.has_dt)
        return heat_error_set(err, HEAT_EINPUT,
                              "%s%stime.scheme = \"%s\" needs time.dt: any dt > 0 (the explicit "
                              "limit here is dt_max = %.9g)",
                              c->time.scheme_where, c->time.scheme_where[0] ? ": " : "",
                              heat_scheme_name(c->time.scheme), c->d.dt_max);
    double dt = c->time.has_dt ? c->time.dt : c->time.safety * c->d.dt_max;
    if (c->time.has_dt && dt > c->d.dt_max && !heat_case_implicit(c)) return dt_refused(c, dt, err);
    c->d.end_step = -1;
    if (c->time.has_end) {
        double n = 1;
        if ((rc = steps_to_end(c, dt, "", &n, err))) return rc;
        /* A dt fitted to end must not pass the stability limit. */
        if (c->time.end / n > c->d.dt_max && !heat_case_implicit(c)) n += 1;
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
    return eps * umax / (heat_case_steady_multigrid(c) ? c->d.dt_max : c->d.dt);
}

const char *heat_case_stall_end(const heat_case *c, char *buf, size_t n)
{
    if (c->steady.stall_checks > 0)
        snprintf(buf, n,
                 "the run stops after steady.stall_checks = %lld checks without a new low "
                 "(exit status 3)",
                 (long long)c->steady.stall_checks);
    else if (c->d.stop_step >= 0)
        snprintf(buf, n,
                 "with steady.stall_checks = 0 the run goes on to its step bound (step %lld)",
                 (long long)c->d.stop_step);
    else
        snprintf(buf, n,
                 "with steady.stall_checks = 0 and no time.end or time.max_steps the run never "
                 "ends");
    return buf;
}

double heat_case_time(const heat_case *c, int64_t step)
{
    if (c->d.end_step >= 0 && step == c->d.end_step) return c->time.end;
    return (double)step * c->d.dt;
}
