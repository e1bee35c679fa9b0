/* The sweeps of the CPU backend equal, bit for bit, the formulas every GPU
 * kernel repeats: the uniform update (cpu_sweep.inc) with its fused
 * multiply-adds, constant fields kept exactly, and the variable-coefficient
 * update (materials, sources, convective and flux faces: heat_case.h) on
 * random material maps with every face type. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cpu_helpers.h"
#include "heat_case.h"
#include "test_util.h"

/* ---- 6. the written formula, bit for bit ------------------------------- */

/* One step of the sweep as kernels/cpu/cpu_sweep.inc documents it, in the
 * case's precision with C's fma(), node by node: the backend's vectorized
 * rows (with FMA instructions where the CPU has them) must give these bits
 * exactly, since every GPU kernel is held to the same formula. h, r and the
 * ghost constants are the backend's own (c->d), rounded to T as it rounds
 * them: this checks the arithmetic, not their derivation. */
#define EXACT_STEP(T, FMA, NAME)                                                                   \
    static void NAME(const heat_case *c, const ref_case *rc, const T *u, T *out)                   \
    {                                                                                              \
        const int64_t stride[3] = {1, rc->n[0], rc->n[0] * rc->n[1]};                              \
        int64_t p[3];                                                                              \
        for (p[2] = 0; p[2] < rc->n[2]; p[2]++)                                                    \
            for (p[1] = 0; p[1] < rc->n[1]; p[1]++)                                                \
                for (p[0] = 0; p[0] < rc->n[0]; p[0]++) {                                          \
                    const int64_t at = p[0] + p[1] * stride[1] + p[2] * stride[2];                 \
                    const T ctr = u[at];                                                           \
                    if (ref_is_dirichlet(rc, p)) {                                                 \
                        out[at] = ctr;                                                             \
                        continue;                                                                  \
                    }                                                                              \
                    T s = 0;                                                                       \
                    for (int a = 0; a < rc->dims; a++) {                                           \
                        const int64_t n = rc->n[a], st = stride[a];                                \
                        const heat_bc *lo = &rc->bc[2 * a], *hi = &rc->bc[2 * a + 1];              \
                        T um, up;                                                                  \
                        if (p[a] > 0)                                                              \
                            um = u[at - st];                                                       \
                        else if (lo->type == HEAT_BC_PERIODIC)                                     \
                            um = u[at + (n - 1) * st];                                             \
                        else                                                                       \
                            um = u[at + st] + (T)(2.0 * c->d.h[a] * lo->gradient);                 \
                        if (p[a] < n - 1)                                                          \
                            up = u[at + st];                                                       \
                        else if (hi->type == HEAT_BC_PERIODIC)                                     \
                            up = u[at - (n - 1) * st];                                             \
                        else                                                                       \
                            up = u[at - st] + (T)(2.0 * c->d.h[a] * hi->gradient);                 \
                        const T d = FMA(-2, ctr, um + up);                                         \
                        s = a == 0 ? (T)c->d.r[a] * d : FMA((T)c->d.r[a], d, s);                   \
                    }                                                                              \
                    out[at] = ctr + s;                                                             \
                }                                                                                  \
    }
EXACT_STEP(float, fmaf, exact_step_f)
EXACT_STEP(double, fma, exact_step_d)
#undef EXACT_STEP

static void test_sweep_is_the_written_formula(void **state)
{
    (void)state;
    static const mixed_config configs[] = {
        {bc_mixed, {67, 9, 5}, "[1.0, 0.6, 0.3]"},
        {bc_mixed_x_neumann, {70, 17, 1}, "[2.0, 1.0, 1.0]"},
        {bc_mixed_z_periodic, {45, 11, 7}, "[0.8, 0.9, 0.5]"},
        {bc_dirichlet_edges, {9, 7, 6}, "[1.0, 1.0, 1.0]"},
        {bc_all_periodic, {33, 5, 3}, "[1.0, 0.6, 0.3]"},
    };
    const int64_t steps = 7;
    for (size_t ci = 0; ci < sizeof configs / sizeof configs[0]; ci++)
        for (int p = 0; p < 2; p++) {
            const mixed_config *mc = &configs[ci];
            heat_case c;
            load_mixed(&c, mc, precisions[p], 0);
            ref_case rc;
            ref_init(&rc, &c);
            const size_t bytes = (size_t)c.d.points * heat_case_value_size(&c);
            void *f = field_alloc(&c), *want = field_alloc(&c), *tmp = field_alloc(&c);
            field_random(&c, f, 777 + ci, 0.25, 1.25);
            memcpy(want, f, bytes);
            heat_backend *b = backend_with(&c, f);
            advance(b, steps, NULL);
            download(b, f);
            heat_backend_destroy(b);
            for (int64_t n = 0; n < steps; n++) {
                if (c.solver.precision == HEAT_FLOAT)
                    exact_step_f(&c, &rc, want, tmp);
                else
                    exact_step_d(&c, &rc, want, tmp);
                memcpy(want, tmp, bytes);
            }
            int64_t bad = 0, first = -1;
            for (int64_t at = 0; at < c.d.points; at++)
                if (memcmp((char *)f + at * (int64_t)heat_case_value_size(&c),
                           (char *)want + at * (int64_t)heat_case_value_size(&c),
                           heat_case_value_size(&c))) {
                    if (first < 0) first = at;
                    bad++;
                }
            if (bad)
                fail_msg("config #%zu %s: %lld of %lld nodes differ from the written formula "
                         "after %lld steps; first at %lld: backend %.17g, formula %.17g",
                         ci, prec_name(c.solver.precision), (long long)bad, (long long)c.d.points,
                         (long long)steps, (long long)first, fget(&c, f, first),
                         fget(&c, want, first));
            free(f);
            free(want);
            free(tmp);
        }
}

/* A constant field stays exactly constant under faces that keep it (its own
 * value on Dirichlet faces, insulated or periodic faces): m + p = 2c exactly,
 * so each d is 0 and u' = c, in float and double, for values whose doubles
 * are inexact too. */
static void test_constant_field_stays_constant(void **state)
{
    (void)state;
    const double values[] = {0.3, 300.7, -1.0e-3};
    const char *const kinds[] = {"periodic", "insulated", "dirichlet"};
    for (int k = 0; k < 3; k++)
        for (int v = 0; v < 3; v++)
            for (int dims = 2; dims <= 3; dims++)
                for (int p = 0; p < 2; p++) {
                    char bc[1024], init[128], *q = bc;
                    static const char *const faces[] = {"x_lo", "x_hi", "y_lo",
                                                        "y_hi", "z_lo", "z_hi"};
                    for (int f = 0; f < 6; f++) {
                        if (k == 0)
                            q += sprintf(q, "%s = { type = \"periodic\"; };\n", faces[f]);
                        else if (k == 1)
                            q += sprintf(q, "%s = { type = \"neumann\"; gradient = 0.0; };\n",
                                         faces[f]);
                        else
                            q += sprintf(q, "%s = { type = \"dirichlet\"; value = %.17g; };\n",
                                         faces[f], values[v]);
                    }
                    snprintf(init, sizeof init, "type = \"constant\"; value = %.17g;", values[v]);
                    test_sets s = {0};
                    test_sets_add(&s, "solver.precision=%s", prec_name(precisions[p]));
                    test_sets_add(&s,
                                  dims == 3 ? "grid.points=[13, 9, 7]" : "grid.points=[21, 11, 1]");
                    test_sets_add(&s, "grid.length=[1.0, 0.7, 0.45]");
                    heat_case c;
                    load_case(&c, bc, init, &s);
                    void *f = field_alloc(&c);
                    for (int64_t at = 0; at < c.d.points; at++) fset(&c, f, at, values[v]);
                    const double want = fget(&c, f, 0);
                    heat_backend *b = backend_with(&c, f);
                    double res = -1;
                    advance(b, 50, &res);
                    download(b, f);
                    heat_backend_destroy(b);
                    for (int64_t at = 0; at < c.d.points; at++)
                        if (fget(&c, f, at) != want)
                            fail_msg("%s faces, %s %dD, constant %.17g: node %lld is %.17g after "
                                     "50 steps",
                                     kinds[k], prec_name(precisions[p]), dims, want, (long long)at,
                                     fget(&c, f, at));
                    assert_true(res == 0.0);
                    free(f);
                }
}

/* ---- the variable-coefficient update, bit for bit ---------------------- */

/* The update of heat_case.h ("the variable-coefficient update"), node by
 * node in the case's precision, from the tables the backend is given
 * (rounded once to T): a plain transcription, independent of the row
 * sweeps of cpu_general.inc. */
#define GENERAL_STEP(T, NAME)                                                                      \
    static void NAME(const ref_case *rc, const heat_coeffs *k, const uint8_t *cls, const T *u,     \
                     T *out)                                                                       \
    {                                                                                              \
        const int64_t stride[3] = {1, rc->n[0], rc->n[0] * rc->n[1]};                              \
        const int M = k->nmat;                                                                     \
        int64_t p[3];                                                                              \
        for (p[2] = 0; p[2] < rc->n[2]; p[2]++)                                                    \
            for (p[1] = 0; p[1] < rc->n[1]; p[1]++)                                                \
                for (p[0] = 0; p[0] < rc->n[0]; p[0]++) {                                          \
                    const int64_t at = p[0] + p[1] * stride[1] + p[2] * stride[2];                 \
                    const T c = u[at];                                                             \
                    if (ref_is_dirichlet(rc, p)) {                                                 \
                        out[at] = c;                                                               \
                        continue;                                                                  \
                    }                                                                              \
                    const int a = k->mat[cls[at]];                                                 \
                    T s = 0;                                                                       \
                    for (int d = 0; d < rc->dims; d++) {                                           \
                        T diff[2];                                                                 \
                        int mb[2];                                                                 \
                        for (int side = 0; side < 2; side++) {                                     \
                            const int f = 2 * d + side;                                            \
                            const int64_t st = side ? stride[d] : -stride[d];                      \
                            const int inside = side ? p[d] < rc->n[d] - 1 : p[d] > 0;              \
                            int64_t nb = at + st;                                                  \
                            int ghost = 0;                                                         \
                            if (!inside && rc->bc[f].type == HEAT_BC_PERIODIC)                     \
                                nb = at - st * (rc->n[d] - 1);                                     \
                            else if (!inside)                                                      \
                                nb = at - st, ghost = 1;                                           \
                            mb[side] = k->mat[cls[nb]];                                            \
                            if (!ghost)                                                            \
                                diff[side] = u[nb] - c;                                            \
                            else if (rc->bc[f].type == HEAT_BC_CONVECTIVE)                         \
                                diff[side] =                                                       \
                                    (u[nb] - c) - (T)k->beta[f][a] * (c - (T)k->ambient[f]);       \
                            else                                                                   \
                                diff[side] = (u[nb] + (T)k->g[f][a]) - c;                          \
                        }                                                                          \
                        const double *w = k->w + ((size_t)d * M + a) * M;                          \
                        const T sd = (T)w[mb[0]] * diff[0] + (T)w[mb[1]] * diff[1];                \
                        s = d == 0 ? sd : s + sd;                                                  \
                    }                                                                              \
                    out[at] = c + (s + (T)k->q[cls[at]]);                                          \
                }                                                                                  \
    }
GENERAL_STEP(float, general_step_f)
GENERAL_STEP(double, general_step_d)
#undef GENERAL_STEP

/* Face sets with every type: convective and flux next to Dirichlet,
 * Neumann and periodic ones, on awkward grids, 2D and 3D. */
static const mixed_config general_configs[] = {
    {"x_lo = { type = \"convective\"; h = 30.0; ambient = -1.5; };\n"
     "x_hi = { type = \"flux\"; value = 250.0; };\n"
     "y_lo = { type = \"periodic\"; }; y_hi = { type = \"periodic\"; };\n"
     "z_lo = { type = \"dirichlet\"; value = 2.0; };\n"
     "z_hi = { type = \"neumann\"; gradient = -0.5; };\n",
     {37, 11, 6},
     "[1.0, 0.6, 0.3]"},
    {"x_lo = { type = \"periodic\"; }; x_hi = { type = \"periodic\"; };\n"
     "y_lo = { type = \"flux\"; value = -40.0; };\n"
     "y_hi = { type = \"convective\"; h = 5.0; ambient = 3.0; };\n"
     "z_lo = { type = \"convective\"; h = 0.5; ambient = 0.0; };\n"
     "z_hi = { type = \"flux\"; value = 10.0; };\n",
     {19, 23, 9},
     "[0.9, 1.1, 0.4]"},
    {"x_lo = { type = \"dirichlet\"; value = 1.0; };\n"
     "x_hi = { type = \"convective\"; h = 12.0; ambient = 0.25; };\n"
     "y_lo = { type = \"neumann\"; gradient = 0.75; };\n"
     "y_hi = { type = \"flux\"; value = 7.0; };\n",
     {53, 29, 1},
     "[2.0, 1.0, 1.0]"},
};

static const char general_materials[] =
    "materials = ( { name = \"a\"; conductivity = 3.0; density = 2.0; specific_heat = 1.5; },\n"
    "  { name = \"b\"; conductivity = 0.4; density = 1.0; specific_heat = 2.0; },\n"
    "  { name = \"c\"; conductivity = 40.0; density = 8.0; specific_heat = 0.5; } );\n";

/* The backend given random classes (materials and source powers) on every
 * node, then `steps` steps, against the transcription above. */
static void general_config(const mixed_config *mc, heat_precision prec, uint64_t seed)
{
    char deck[4096];
    snprintf(deck, sizeof deck,
             "grid = { points = [%lld, %lld, %lld]; length = %s; };\n%s"
             "time = { max_steps = 1; };\nsolver = { backend = \"cpu\"; };\n"
             "initial = { type = \"constant\"; value = 0.0; };\nboundary = { %s };\n",
             (long long)mc->n[0], (long long)mc->n[1], (long long)mc->n[2], mc->length,
             general_materials, mc->bc);
    test_sets s = {0};
    test_sets_add(&s, "solver.precision=%s", prec_name(prec));
    heat_case c;
    test_load_case(deck, "general", &s, &c);
    assert_true(c.d.general);
    heat_classes t = {.count = 7};
    for (int i = 0; i < t.count; i++)
        t.material[i] = (uint8_t)(i % 3), t.power[i] = test_uniform(&seed, -50.0, 200.0);
    heat_coeffs k;
    heat_error err;
    if (heat_case_coeffs(&c, &t, &k, &err)) fail_msg("heat_case_coeffs: %s", err.msg);
    uint8_t *cls = malloc((size_t)c.d.points);
    for (int64_t i = 0; i < c.d.points; i++) cls[i] = (uint8_t)(test_uniform(&seed, 0, 7));
    const size_t bytes = (size_t)c.d.points * heat_case_value_size(&c);
    void *f = field_alloc(&c), *want = field_alloc(&c), *tmp = field_alloc(&c);
    field_random(&c, f, seed, -1.0, 3.0);
    memcpy(want, f, bytes);
    heat_backend *b = NULL;
    if (heat_backend_create(&c, NULL, &b, &err) || heat_backend_set_classes(b, cls, &k, &err) ||
        heat_backend_upload(b, f, &err))
        fail_msg("backend: %s", err.msg);
    const int64_t steps = 5;
    advance(b, steps, NULL);
    download(b, f);
    heat_backend_destroy(b);
    ref_case rc;
    ref_init(&rc, &c);
    for (int64_t n = 0; n < steps; n++) {
        if (prec == HEAT_FLOAT)
            general_step_f(&rc, &k, cls, want, tmp);
        else
            general_step_d(&rc, &k, cls, want, tmp);
        memcpy(want, tmp, bytes);
    }
    const size_t vs = heat_case_value_size(&c);
    int64_t bad = 0, first = -1;
    for (int64_t at = 0; at < c.d.points; at++)
        if (memcmp((char *)f + at * (int64_t)vs, (char *)want + at * (int64_t)vs, vs)) {
            if (first < 0) first = at;
            bad++;
        }
    if (bad)
        fail_msg("%lldx%lldx%lld %s: %lld of %lld nodes differ from the written formula after "
                 "%lld steps; first at %lld: backend %.17g, formula %.17g",
                 (long long)mc->n[0], (long long)mc->n[1], (long long)mc->n[2], prec_name(prec),
                 (long long)bad, (long long)c.d.points, (long long)steps, (long long)first,
                 fget(&c, f, first), fget(&c, want, first));
    heat_coeffs_free(&k);
    free(cls);
    free(f);
    free(want);
    free(tmp);
}

static void test_general_sweep_is_the_written_formula(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof general_configs / sizeof *general_configs; i++)
        for (int p = 0; p < 2; p++) general_config(&general_configs[i], precisions[p], 91 + i);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sweep_is_the_written_formula),
        cmocka_unit_test(test_constant_field_stays_constant),
        cmocka_unit_test(test_general_sweep_is_the_written_formula),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
