/* Helpers of the GPU tests: see gpu_helpers.h. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpu_helpers.h"

/* The GPU kernels, from the one table of their names. */

/* The five ways an axis can be bounded: DD, DN, ND, NN, PP. */
const int axis_kinds[5][2] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}, {2, 2}};

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
double rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * 0x1.0p-53;
}

/* A case of the given size, face types (0 D, 1 N, 2 P), precision, backend,
 * kernel and solver.temporal_block; anisotropic lengths and random Neumann
 * gradients. */
void make_case(heat_case *c, const int64_t n[3], const int types[6], const char *prec,
               const char *backend, const char *kernel, int temporal_block, const double grads[6])
{
    static const char *const faces[] = {"x_lo", "x_hi", "y_lo", "y_hi", "z_lo", "z_hi"};
    char deck[4096], *p = deck;
    const char *end = deck + sizeof deck;
    p += snprintf(p, (size_t)(end - p),
                  "grid = { points = [%lld, %lld, %lld]; length = [1.0, 0.37, 2.3]; };\n"
                  "material = { diffusivity = 0.01; };\ntime = { max_steps = 50; };\n"
                  "initial = { type = \"constant\"; value = 1.0; };\n"
                  "solver = { backend = \"%s\"; precision = \"%s\"; kernel = \"%s\";\n"
                  "           temporal_block = %d; };\n"
                  "boundary = {\n",
                  (long long)n[0], (long long)n[1], (long long)n[2], backend, prec, kernel,
                  temporal_block);
    const int nf = n[2] == 1 ? 4 : 6;
    for (int f = 0; f < nf; f++) {
        if (types[f] == 0)
            p += snprintf(p, (size_t)(end - p), "  %s = { type = \"dirichlet\"; value = 0.5; };\n",
                          faces[f]);
        else if (types[f] == 1)
            p +=
                snprintf(p, (size_t)(end - p),
                         "  %s = { type = \"neumann\"; gradient = %.17g; };\n", faces[f], grads[f]);
        else
            p += snprintf(p, (size_t)(end - p), "  %s = { type = \"periodic\"; };\n", faces[f]);
    }
    snprintf(p, (size_t)(end - p), "};\n");
    test_load_case(deck, "test_gpu", NULL, c);
}

void fill(void *f, int64_t n, size_t vs)
{
    for (int64_t i = 0; i < n; i++) {
        double x = 0.25 + rnd(); /* never zero */
        if (vs == 4)
            ((float *)f)[i] = (float)x;
        else
            ((double *)f)[i] = x;
    }
}

/* Fills the next time level of a CUDA backend with NaN (the backend's
 * poison_next test hook). */
void poison_next(heat_backend *b)
{
    heat_error err;
    if (heat_backend_poison_next(b, &err)) fail_msg("poison: %s", err.msg);
}

/* Runs `steps` steps of `c` (residual on the last) from `field`; the final
 * field goes to `out`, the residual to *res. */
void run_backend(const heat_case *c, const void *field, int64_t steps, void *out, double *res,
                 int poison)
{
    heat_backend *b = NULL;
    heat_error err;
    if (heat_backend_create(c, NULL, &b, &err)) fail_msg("backend: %s", err.msg);
    if (heat_backend_upload(b, field, &err)) fail_msg("upload: %s", err.msg);
    if (poison) poison_next(b);
    if (heat_backend_advance(b, steps, res, &err)) fail_msg("advance: %s", err.msg);
    if (heat_backend_download(b, out, &err)) fail_msg("download: %s", err.msg);
    heat_backend_destroy(b);
}

/* Equal value for value (NaN never equal); on a mismatch, reports the first
 * one with its coordinates and the largest relative difference. */
int compare(const heat_case *c, const void *want, const void *got, const char *what)
{
    const size_t vs = heat_case_value_size(c);
    const int64_t nx = c->grid.n[0], ny = c->grid.n[1];
    int64_t bad = 0, first = -1;
    double worst = 0;
    for (int64_t i = 0; i < c->d.points; i++) {
        double x = vs == 4 ? ((const float *)want)[i] : ((const double *)want)[i];
        double y = vs == 4 ? ((const float *)got)[i] : ((const double *)got)[i];
        if (x == y) continue;
        double d = fabs(x - y) / fmax(fabs(x), 1e-300);
        if (!(d <= worst)) worst = d;
        if (first < 0) first = i;
        bad++;
    }
    if (bad) {
        double x = vs == 4 ? ((const float *)want)[first] : ((const double *)want)[first];
        double y = vs == 4 ? ((const float *)got)[first] : ((const double *)got)[first];
        print_error("%s: %lld of %lld points differ (bit for bit required), largest relative "
                    "difference %.3g; first at (%lld, %lld, %lld): cpu %.17g, gpu %.17g\n",
                    what, (long long)bad, (long long)c->d.points, worst, (long long)(first % nx),
                    (long long)(first / nx % ny), (long long)(first / (nx * ny)), x, y);
    }
    return bad == 0;
}

/* The temporal blocking depths under test: register_tiled fusing 2 to 8
 * steps per pass (each depth is a kernel of its own). */
const gpu_variant temporal[] = {{"register_tiled", 2}, {"register_tiled", 3}, {"register_tiled", 4},
                                {"register_tiled", 5}, {"register_tiled", 6}, {"register_tiled", 7},
                                {"register_tiled", 8}};
const int n_temporal = (int)(sizeof temporal / sizeof temporal[0]);

/* Every variant and precision for one size and set of face types, `steps`
 * steps with the residual; the CPU reference is computed once per precision.
 * Returns the failures. */
int check_variants(const int64_t n[3], const int types[6], int64_t steps, const gpu_variant *v,
                   int nv)
{
    int failures = 0;
    double grads[6];
    for (int f = 0; f < 6; f++) grads[f] = 2.0 * rnd() - 1.0;
    for (int p = 0; p < 2; p++) {
        const char *prec = p ? "double" : "float";
        heat_case ref;
        make_case(&ref, n, types, prec, "cpu", "register_tiled", 1, grads);
        const size_t vs = heat_case_value_size(&ref), bytes = (size_t)ref.d.points * vs;
        void *field = malloc(bytes), *want = malloc(bytes), *got = malloc(bytes);
        assert_non_null(field);
        assert_non_null(want);
        assert_non_null(got);
        fill(field, ref.d.points, vs);
        double rw = 0;
        run_backend(&ref, field, steps, want, &rw, 0);
        for (int k = 0; k < nv; k++) {
            heat_case c;
            make_case(&c, n, types, prec, "cuda", v[k].kernel, v[k].depth, grads);
            double rg = -1;
            memset(got, 0, bytes);
            run_backend(&c, field, steps, got, &rg, 1);
            char what[256], depth[64] = "";
            if (v[k].depth > 1)
                snprintf(depth, sizeof depth, " temporal_block %d, %lld steps", v[k].depth,
                         (long long)steps);
            snprintf(what, sizeof what, "%s%s %s %lldx%lldx%lld faces %d%d %d%d %d%d", v[k].kernel,
                     depth, prec, (long long)n[0], (long long)n[1], (long long)n[2], types[0],
                     types[1], types[2], types[3], types[4], types[5]);
            int ok = compare(&ref, want, got, what);
            if (rw != rg) {
                print_error("%s: residual cpu %.17g, gpu %.17g\n", what, rw, rg);
                ok = 0;
            }
            failures += !ok;
        }
        free(field);
        free(want);
        free(got);
    }
    return failures;
}

/* Every kernel in `kmask` (bit k: heat_kernel_names[k]; ALL_KERNELS), one step per pass. */
int check_all(const int64_t n[3], const int types[6], int64_t steps, unsigned kmask)
{
    gpu_variant v[HEAT_KERNEL_COUNT];
    int nv = 0;
    for (int k = 0; k < HEAT_KERNEL_COUNT; k++)
        if (kmask & (1u << k)) v[nv++] = (gpu_variant){heat_kernel_names[k], 1};
    return check_variants(n, types, steps, v, nv);
}
