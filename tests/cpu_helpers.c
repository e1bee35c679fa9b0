/* Helpers of the CPU backend's tests: see cpu_helpers.h. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_helpers.h"

/* ---- building cases ---------------------------------------------------- */

const char cpu_common_deck[] = "grid = { points = [9, 9, 9]; length = [1.0, 1.0, 1.0]; };\n"
                               "material = { diffusivity = 1.0; };\n"
                               "time = { max_steps = 1; };\n"
                               "solver = { backend = \"cpu\"; };\n";

const char *prec_name(heat_precision p)
{
    return p == HEAT_FLOAT ? "float" : "double";
}

/* Loads cpu_common_deck with the given boundary and initial group bodies and the
 * overrides, and derives it. */
void load_case(heat_case *c, const char *boundary, const char *initial, const test_sets *s)
{
    char deck[8192];
    snprintf(deck, sizeof deck, "%sinitial = { %s };\nboundary = { %s };\n", cpu_common_deck,
             initial, boundary);
    memset(c, 0, sizeof *c);
    test_load_case(deck, "test_cpu", s, c);
}

void load_mixed(heat_case *c, const mixed_config *mc, heat_precision p, int64_t max_steps)
{
    test_sets s = {0};
    test_sets_add(&s, "solver.precision=%s", prec_name(p));
    test_sets_add(&s, "grid.points=[%lld, %lld, %lld]", (long long)mc->n[0], (long long)mc->n[1],
                  (long long)mc->n[2]);
    test_sets_add(&s, "grid.length=%s", mc->length);
    if (max_steps > 0) test_sets_add(&s, "time.max_steps=%lld", (long long)max_steps);
    load_case(c, mc->bc, init_zero, &s);
}

/* ---- fields ------------------------------------------------------------ */

double fget(const heat_case *c, const void *f, int64_t i)
{
    return c->solver.precision == HEAT_FLOAT ? (double)((const float *)f)[i]
                                             : ((const double *)f)[i];
}

void fset(const heat_case *c, void *f, int64_t i, double v)
{
    if (c->solver.precision == HEAT_FLOAT)
        ((float *)f)[i] = (float)v;
    else
        ((double *)f)[i] = v;
}

void *field_alloc(const heat_case *c)
{
    void *f = calloc((size_t)c->d.points, heat_case_value_size(c));
    assert_non_null(f);
    return f;
}

/* Uniform random values in [lo, hi), rounded to the case's precision. */
void field_random(const heat_case *c, void *f, uint64_t seed, double lo, double hi)
{
    for (int64_t i = 0; i < c->d.points; i++) fset(c, f, i, test_uniform(&seed, lo, hi));
}

void index_ijk(const heat_case *c, int64_t at, int64_t ijk[3])
{
    ijk[0] = at % c->grid.n[0];
    ijk[1] = at / c->grid.n[0] % c->grid.n[1];
    ijk[2] = at / (c->grid.n[0] * c->grid.n[1]);
}

/* Fails naming the first index where |got - want| > tol, and the largest
 * difference. */
void expect_field_near(const heat_case *c, const void *got, const double *want, double tol,
                       const char *what)
{
    int64_t first = -1, worst = 0;
    double maxd = 0;
    for (int64_t i = 0; i < c->d.points; i++) {
        double d = fabs(fget(c, got, i) - want[i]);
        if (!(d <= tol) && first < 0) first = i;
        if (d > maxd || d != d) maxd = d, worst = i;
    }
    if (first >= 0) {
        int64_t a[3], w[3];
        index_ijk(c, first, a);
        index_ijk(c, worst, w);
        fail_msg("%s (%s, %dD, %lldx%lldx%lld): first bad index %lld (i=%lld j=%lld k=%lld): got "
                 "%.17g, want %.17g, tolerance %.3g; largest difference %.3g at (%lld, %lld, "
                 "%lld)",
                 what, prec_name(c->solver.precision), c->grid.dims, (long long)c->grid.n[0],
                 (long long)c->grid.n[1], (long long)c->grid.n[2], (long long)first,
                 (long long)a[0], (long long)a[1], (long long)a[2], fget(c, got, first),
                 want[first], tol, maxd, (long long)w[0], (long long)w[1], (long long)w[2]);
    }
}

/* ---- the backend ------------------------------------------------------- */

heat_backend *backend_with(const heat_case *c, const void *field)
{
    heat_backend *b = NULL;
    heat_error err;
    int rc = heat_backend_create(c, NULL, &b, &err);
    if (rc != HEAT_OK) fail_msg("heat_backend_create: %s", err.msg);
    rc = heat_backend_upload(b, field, &err);
    if (rc != HEAT_OK) fail_msg("heat_backend_upload: %s", err.msg);
    return b;
}

void advance(heat_backend *b, int64_t steps, double *residual)
{
    heat_error err;
    int rc = heat_backend_advance(b, steps, residual, &err);
    if (rc != HEAT_OK) fail_msg("heat_backend_advance: %s", err.msg);
}

void download(heat_backend *b, void *field)
{
    heat_error err;
    int rc = heat_backend_download(b, field, &err);
    if (rc != HEAT_OK) fail_msg("heat_backend_download: %s", err.msg);
}

/* ---- an independent host reference ------------------------------------- */

void ref_init(ref_case *rc, const heat_case *c)
{
    memset(rc, 0, sizeof *rc);
    rc->dims = c->grid.n[2] == 1 ? 2 : 3;
    for (int a = 0; a < 3; a++) rc->n[a] = c->grid.n[a];
    for (int f = 0; f < HEAT_NFACES; f++) rc->bc[f] = c->bc[f];
    for (int a = 0; a < rc->dims; a++) {
        int periodic = c->bc[2 * a].type == HEAT_BC_PERIODIC;
        rc->h[a] = c->grid.length[a] / (double)(periodic ? rc->n[a] : rc->n[a] - 1);
        rc->r[a] = c->alpha * c->d.dt / (rc->h[a] * rc->h[a]);
    }
}

/* Whether node p lies on a Dirichlet face. */
int ref_is_dirichlet(const ref_case *rc, const int64_t p[3])
{
    for (int f = 0; f < 2 * rc->dims; f++) {
        int a = f / 2;
        int64_t at = f % 2 ? rc->n[a] - 1 : 0;
        if (rc->bc[f].type == HEAT_BC_DIRICHLET && p[a] == at) return 1;
    }
    return 0;
}

/* Sets the Dirichlet faces of u in the order x_lo ... z_hi: a later face
 * overwrites an earlier one where they meet. */
void ref_apply_dirichlet(const ref_case *rc, double *u)
{
    for (int f = 0; f < 2 * rc->dims; f++) {
        if (rc->bc[f].type != HEAT_BC_DIRICHLET) continue;
        int a = f / 2;
        int64_t at = f % 2 ? rc->n[a] - 1 : 0;
        int64_t p[3];
        for (p[2] = 0; p[2] < rc->n[2]; p[2]++)
            for (p[1] = 0; p[1] < rc->n[1]; p[1]++)
                for (p[0] = 0; p[0] < rc->n[0]; p[0]++)
                    if (p[a] == at) u[(p[2] * rc->n[1] + p[1]) * rc->n[0] + p[0]] = rc->bc[f].value;
    }
}

void ref_step(const ref_case *rc, const double *u, double *out)
{
    const int64_t stride[3] = {1, rc->n[0], rc->n[0] * rc->n[1]};
    int64_t p[3];
    for (p[2] = 0; p[2] < rc->n[2]; p[2]++)
        for (p[1] = 0; p[1] < rc->n[1]; p[1]++)
            for (p[0] = 0; p[0] < rc->n[0]; p[0]++) {
                const int64_t at = p[0] + p[1] * stride[1] + p[2] * stride[2];
                const double c = u[at];
                if (ref_is_dirichlet(rc, p)) {
                    out[at] = c;
                    continue;
                }
                double s = 0;
                for (int a = 0; a < rc->dims; a++) {
                    const int64_t n = rc->n[a], st = stride[a];
                    const heat_bc *lo = &rc->bc[2 * a], *hi = &rc->bc[2 * a + 1];
                    double um, up;
                    /* A node on a Dirichlet face was handled above, so a
                     * face reached here is periodic or Neumann. */
                    if (p[a] > 0)
                        um = u[at - st];
                    else if (lo->type == HEAT_BC_PERIODIC)
                        um = u[at + (n - 1) * st];
                    else
                        um = u[at + st] + 2.0 * rc->h[a] * lo->gradient;
                    if (p[a] < n - 1)
                        up = u[at + st];
                    else if (hi->type == HEAT_BC_PERIODIC)
                        up = u[at - (n - 1) * st];
                    else
                        up = u[at - st] + 2.0 * rc->h[a] * hi->gradient;
                    s += rc->r[a] * ((um - c) + (up - c));
                }
                out[at] = c + s;
            }
}

void ref_run(const ref_case *rc, double *u, int64_t steps)
{
    int64_t points = rc->n[0] * rc->n[1] * rc->n[2];
    double *v = malloc((size_t)points * sizeof *v);
    assert_non_null(v);
    for (int64_t s = 0; s < steps; s++) {
        ref_step(rc, u, v);
        memcpy(u, v, (size_t)points * sizeof *u);
    }
    free(v);
}

/* ---- the configurations ----------------------------------------------- */

const heat_precision precisions[2] = {HEAT_DOUBLE, HEAT_FLOAT};

const char bc_all_dirichlet_zero[] = "x_lo = { type = \"dirichlet\"; value = 0.0; };\n"
                                     "x_hi = { type = \"dirichlet\"; value = 0.0; };\n"
                                     "y_lo = { type = \"dirichlet\"; value = 0.0; };\n"
                                     "y_hi = { type = \"dirichlet\"; value = 0.0; };\n"
                                     "z_lo = { type = \"dirichlet\"; value = 0.0; };\n"
                                     "z_hi = { type = \"dirichlet\"; value = 0.0; };\n";

const char bc_all_periodic[] = "x_lo = { type = \"periodic\"; };\n"
                               "x_hi = { type = \"periodic\"; };\n"
                               "y_lo = { type = \"periodic\"; };\n"
                               "y_hi = { type = \"periodic\"; };\n"
                               "z_lo = { type = \"periodic\"; };\n"
                               "z_hi = { type = \"periodic\"; };\n";

const char bc_all_insulated[] = "x_lo = { type = \"neumann\"; gradient = 0.0; };\n"
                                "x_hi = { type = \"neumann\"; gradient = 0.0; };\n"
                                "y_lo = { type = \"neumann\"; gradient = 0.0; };\n"
                                "y_hi = { type = \"neumann\"; gradient = 0.0; };\n"
                                "z_lo = { type = \"neumann\"; gradient = 0.0; };\n"
                                "z_hi = { type = \"neumann\"; gradient = 0.0; };\n";

/* Mixed faces: periodic, Dirichlet and Neumann with non-zero gradients. */
const char bc_mixed[] = "x_lo = { type = \"periodic\"; };\n"
                        "x_hi = { type = \"periodic\"; };\n"
                        "y_lo = { type = \"dirichlet\"; value = 0.5; };\n"
                        "y_hi = { type = \"neumann\"; gradient = 0.8; };\n"
                        "z_lo = { type = \"neumann\"; gradient = -1.2; };\n"
                        "z_hi = { type = \"dirichlet\"; value = -0.25; };\n";

const char bc_mixed_x_neumann[] = "x_lo = { type = \"neumann\"; gradient = 0.6; };\n"
                                  "x_hi = { type = \"dirichlet\"; value = 1.0; };\n"
                                  "y_lo = { type = \"periodic\"; };\n"
                                  "y_hi = { type = \"periodic\"; };\n"
                                  "z_lo = { type = \"neumann\"; gradient = 0.3; };\n"
                                  "z_hi = { type = \"neumann\"; gradient = -0.9; };\n";

const char bc_mixed_z_periodic[] = "x_lo = { type = \"dirichlet\"; value = 2.0; };\n"
                                   "x_hi = { type = \"neumann\"; gradient = -0.4; };\n"
                                   "y_lo = { type = \"neumann\"; gradient = 0.3; };\n"
                                   "y_hi = { type = \"neumann\"; gradient = -0.9; };\n"
                                   "z_lo = { type = \"periodic\"; };\n"
                                   "z_hi = { type = \"periodic\"; };\n";

/* Dirichlet faces meeting at edges and corners, with different values. */
const char bc_dirichlet_edges[] = "x_lo = { type = \"dirichlet\"; value = 1.0; };\n"
                                  "x_hi = { type = \"neumann\"; gradient = 0.5; };\n"
                                  "y_lo = { type = \"dirichlet\"; value = 2.0; };\n"
                                  "y_hi = { type = \"dirichlet\"; value = 3.0; };\n"
                                  "z_lo = { type = \"dirichlet\"; value = 4.0; };\n"
                                  "z_hi = { type = \"neumann\"; gradient = -0.5; };\n";

const char bc_six_dirichlet[] = "x_lo = { type = \"dirichlet\"; value = 1.25; };\n"
                                "x_hi = { type = \"dirichlet\"; value = -0.75; };\n"
                                "y_lo = { type = \"dirichlet\"; value = 2.5; };\n"
                                "y_hi = { type = \"dirichlet\"; value = 0.125; };\n"
                                "z_lo = { type = \"dirichlet\"; value = -3.0; };\n"
                                "z_hi = { type = \"dirichlet\"; value = 7.0; };\n";

const char init_zero[] = "type = \"constant\"; value = 0.0;";
