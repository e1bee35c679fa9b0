/* The CUDA backend's variable-coefficient update (materials, sources,
 * convective and flux faces) against the CPU backend (the oracle).
 *
 * Each check paints random classes onto the nodes (every node its own draw,
 * so that nearly every face lies between two materials), draws the classes'
 * materials and source powers and the materials' properties at random, and
 * runs the same steps from the same random field on the CPU and on the GPU:
 * the fields and the residuals must be equal, value for value (the kernels
 * keep the CPU's order of operations and contract nothing), in float and
 * double, 2D and 3D, on awkward sizes, with every kind of face (Dirichlet,
 * Neumann, periodic, convective, flux) on every face, for every kernel and
 * every fusion depth of register_tiled (2 to 8, step counts that are no
 * multiple of it). Tables of many materials (more than the kernels stage in
 * shared memory) are checked too. The next time level is poisoned with NaN
 * first, so that a node a kernel skips shows up. A whole run through the
 * driver (regions, sources, probes, history) must match the CPU's files.
 *
 * Without a usable CUDA device (or without CUDA in the build) the program
 * says why and exits with 77, which ctest reports as skipped.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend.h"
#include "driver.h"
#include "h5file.h"
#include "heat_case.h"
#include "output.h"
#include "test_util.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;
static double rnd(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng >> 11) * 0x1.0p-53;
}
static int rnd_int(int n)
{
    return (int)(rnd() * n) % n;
}

/* Face kinds, and the 17 ways an axis can be bounded: each of D, N, C, F on
 * each side, or periodic on both. */
enum { F_D, F_N, F_P, F_C, F_F };
#define AXIS_KINDS 17
static void axis_kind(int k, int out[2])
{
    static const int side[4] = {F_D, F_N, F_C, F_F};
    if (k == AXIS_KINDS - 1) {
        out[0] = out[1] = F_P;
        return;
    }
    out[0] = side[k / 4], out[1] = side[k % 4];
}

/* What a check runs: the grid, its faces, materials and classes, steps. */
typedef struct spec {
    int64_t n[3];
    int faces[6];
    int nmat, ncls;
    int64_t steps;
} spec;

/* The deck of a spec: random materials and face values (from the current
 * state of rng), without the solver group. */
static void spec_deck(const spec *s, char *deck, size_t size)
{
    static const char *const names[] = {"x_lo", "x_hi", "y_lo", "y_hi", "z_lo", "z_hi"};
    char *p = deck, *end = deck + size;
    p += snprintf(p, (size_t)(end - p),
                  "grid = { points = [%lld, %lld, %lld]; length = [1.0, 0.37, 2.3]; };\n"
                  "time = { max_steps = 50; safety = 0.95; };\n"
                  "initial = { type = \"constant\"; value = 1.0; };\nmaterials = (",
                  (long long)s->n[0], (long long)s->n[1], (long long)s->n[2]);
    for (int m = 0; m < s->nmat; m++)
        p += snprintf(p, (size_t)(end - p),
                      "%s{ name = \"m%d\"; conductivity = %.17g; density = %.17g; "
                      "specific_heat = %.17g; }",
                      m ? ", " : "", m, 0.5 + 60 * rnd(), 500 + 8000 * rnd(), 300 + 1500 * rnd());
    p += snprintf(p, (size_t)(end - p), ");\nboundary = {\n");
    const int nf = s->n[2] == 1 ? 4 : 6;
    for (int f = 0; f < nf; f++) {
        const char *nm = names[f];
        switch (s->faces[f]) {
        case F_D:
            p += snprintf(p, (size_t)(end - p),
                          "  %s = { type = \"dirichlet\"; value = %.17g; };\n", nm, 2 * rnd());
            break;
        case F_N:
            p += snprintf(p, (size_t)(end - p),
                          "  %s = { type = \"neumann\"; gradient = %.17g; };\n", nm, 2 * rnd() - 1);
            break;
        case F_P:
            p += snprintf(p, (size_t)(end - p), "  %s = { type = \"periodic\"; };\n", nm);
            break;
        case F_C:
            p += snprintf(p, (size_t)(end - p),
                          "  %s = { type = \"convective\"; h = %.17g; ambient = %.17g; };\n", nm,
                          200 * rnd(), 3 * rnd() - 1);
            break;
        default:
            p += snprintf(p, (size_t)(end - p), "  %s = { type = \"flux\"; value = %.17g; };\n", nm,
                          400 * rnd() - 200);
        }
    }
    snprintf(p, (size_t)(end - p), "};\n");
}

/* The deck with a solver group: backend, precision, kernel, fusion depth. */
static void load(heat_case *c, const char *deck, const char *backend, const char *prec,
                 const char *kernel, int depth)
{
    test_sets s = {0};
    test_sets_add(&s, "solver.backend=\"%s\"", backend);
    test_sets_add(&s, "solver.precision=\"%s\"", prec);
    test_sets_add(&s, "solver.kernel=\"%s\"", kernel);
    test_sets_add(&s, "solver.temporal_block=%d", depth);
    test_load_case(deck, "test_gpu_general", &s, c);
    assert_true(c->d.general);
}

/* ncls classes on nmat materials (some without a source), their tables
 * for the case, and a random class per node. */
static void random_classes(const heat_case *c, int nmat, int ncls, uint8_t *cls, heat_coeffs *k)
{
    heat_classes t = {0};
    t.count = ncls;
    for (int i = 0; i < ncls; i++) {
        t.material[i] = (uint8_t)rnd_int(nmat);
        t.power[i] = rnd() < 0.3 ? 0.0 : 2e4 * rnd() - 1e4;
    }
    heat_error err;
    if (heat_case_coeffs(c, &t, k, &err)) fail_msg("coefficients: %s", err.msg);
    for (int64_t i = 0; i < c->d.points; i++) cls[i] = (uint8_t)rnd_int(ncls);
}

static void fill(void *f, int64_t n, size_t vs)
{
    for (int64_t i = 0; i < n; i++) {
        const double x = 0.25 + rnd();
        if (vs == 4)
            ((float *)f)[i] = (float)x;
        else
            ((double *)f)[i] = x;
    }
}

/* `steps` steps of c from `field` with the classes and tables; the final
 * field to `out`, the last step's residual to *res. The GPU's next level is
 * poisoned first. Returns the backend's description in desc (may be NULL). */
static void run_backend(const heat_case *c, const void *field, const uint8_t *cls,
                        const heat_coeffs *k, int64_t steps, void *out, double *res, char *desc)
{
    heat_backend *b = NULL;
    heat_error err;
    if (heat_backend_create(c, NULL, &b, &err)) fail_msg("backend: %s", err.msg);
    if (heat_backend_set_classes(b, cls, k, &err)) fail_msg("classes: %s", err.msg);
    if (heat_backend_upload(b, field, &err)) fail_msg("upload: %s", err.msg);
    if (c->solver.backend == HEAT_BACKEND_CUDA && heat_backend_poison_next(b, &err))
        fail_msg("poison: %s", err.msg);
    if (heat_backend_advance(b, steps, res, &err)) fail_msg("advance: %s", err.msg);
    if (heat_backend_download(b, out, &err)) fail_msg("download: %s", err.msg);
    if (desc) snprintf(desc, 256, "%s", heat_backend_describe(b));
    heat_backend_destroy(b);
}

/* Equal bit for bit (NaN equal to the same NaN); on a mismatch the count,
 * the first one with its coordinates, and the largest relative difference. */
static int compare(const heat_case *c, const void *want, const void *got, const char *what)
{
    const size_t vs = heat_case_value_size(c);
    const int64_t nx = c->grid.n[0], ny = c->grid.n[1];
    int64_t bad = 0, first = -1;
    double worst = 0;
    for (int64_t i = 0; i < c->d.points; i++) {
        if (memcmp((const char *)want + i * vs, (const char *)got + i * vs, vs) == 0) continue;
        const double x = vs == 4 ? ((const float *)want)[i] : ((const double *)want)[i];
        const double y = vs == 4 ? ((const float *)got)[i] : ((const double *)got)[i];
        const double d = fabs(x - y) / fmax(fabs(x), 1e-300);
        if (!(d <= worst)) worst = d;
        if (first < 0) first = i;
        bad++;
    }
    if (bad) {
        const double x = vs == 4 ? ((const float *)want)[first] : ((const double *)want)[first];
        const double y = vs == 4 ? ((const float *)got)[first] : ((const double *)got)[first];
        print_error("%s: %lld of %lld points differ, largest relative difference %.3g; first at "
                    "(%lld, %lld, %lld): cpu %.17g, gpu %.17g\n",
                    what, (long long)bad, (long long)c->d.points, worst, (long long)(first % nx),
                    (long long)(first / nx % ny), (long long)(first / (nx * ny)), x, y);
    }
    return bad == 0;
}

/* A kernel and the steps it fuses per pass. */
typedef struct variant {
    const char *kernel;
    int depth;
} variant;

static const variant one_step[] = {
    {"naive", 1}, {"tiled", 1}, {"sliced", 1}, {"register_tiled", 1}};
static const variant fused[] = {{"register_tiled", 2}, {"register_tiled", 3}, {"register_tiled", 4},
                                {"register_tiled", 5}, {"register_tiled", 6}, {"register_tiled", 7},
                                {"register_tiled", 8}};
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Every variant in float and double for one spec; the CPU reference once
 * per precision. `desc_need`, when not NULL, must appear in each GPU
 * backend's description. Returns the failures. */
static int check_spec(const spec *s, const variant *v, int nv, const char *desc_need)
{
    int failures = 0;
    char deck[65536];
    spec_deck(s, deck, sizeof deck);
    for (int p = 0; p < 2; p++) {
        const char *prec = p ? "double" : "float";
        heat_case ref;
        load(&ref, deck, "cpu", prec, "register_tiled", 1);
        const size_t vs = heat_case_value_size(&ref), bytes = (size_t)ref.d.points * vs;
        void *field = malloc(bytes), *want = malloc(bytes), *got = malloc(bytes);
        uint8_t *cls = malloc((size_t)ref.d.points);
        assert_true(field && want && got && cls);
        heat_coeffs k;
        random_classes(&ref, s->nmat, s->ncls, cls, &k);
        fill(field, ref.d.points, vs);
        double rw = 0;
        run_backend(&ref, field, cls, &k, s->steps, want, &rw, NULL);
        for (int i = 0; i < nv; i++) {
            heat_case c;
            load(&c, deck, "cuda", prec, v[i].kernel, v[i].depth);
            double rg = -1;
            char desc[256], what[512];
            memset(got, 0, bytes);
            run_backend(&c, field, cls, &k, s->steps, got, &rg, desc);
            snprintf(what, sizeof what,
                     "%s k=%d %s %lldx%lldx%lld faces %d%d %d%d %d%d, %d materials, %d classes, "
                     "%lld steps",
                     v[i].kernel, v[i].depth, prec, (long long)s->n[0], (long long)s->n[1],
                     (long long)s->n[2], s->faces[0], s->faces[1], s->faces[2], s->faces[3],
                     s->faces[4], s->faces[5], s->nmat, s->ncls, (long long)s->steps);
            int ok = compare(&ref, want, got, what);
            if (memcmp(&rw, &rg, sizeof rw) != 0) {
                print_error("%s: residual cpu %.17g, gpu %.17g\n", what, rw, rg);
                ok = 0;
            }
            if (desc_need && !strstr(desc, desc_need)) {
                print_error("%s: backend \"%s\" lacks \"%s\"\n", what, desc, desc_need);
                ok = 0;
            }
            failures += !ok;
        }
        heat_coeffs_free(&k);
        free(field);
        free(want);
        free(got);
        free(cls);
    }
    return failures;
}

/* A spec of size n with random faces (axis kinds), materials and classes. */
static spec random_spec(const int64_t n[3], int64_t steps)
{
    spec s;
    memset(&s, 0, sizeof s);
    memcpy(s.n, n, sizeof s.n);
    for (int a = 0; a < 3; a++) axis_kind(rnd_int(AXIS_KINDS), s.faces + 2 * a);
    if (n[2] == 1) s.faces[4] = s.faces[5] = F_D;
    s.nmat = 2 + rnd_int(7);
    s.ncls = rnd() < 0.25 ? HEAT_CLASSES_MAX : 1 + rnd_int(HEAT_CLASSES_MAX);
    s.steps = steps;
    return s;
}

/* Each axis with each of its 17 kinds (the other axes random), on sizes
 * of odd x (rows padded to 16 bytes by the backend; 517 x 9: in float the
 * end of a 2D row past its last whole tile goes to the strip kernel) and of
 * whole 16-byte groups. */
static int every_face_kind(const int64_t (*sizes)[3], int nsizes, const variant *v, int nv,
                           int64_t steps)
{
    int failures = 0, runs = 0;
    for (int z = 0; z < nsizes; z++) {
        const int axes = sizes[z][2] == 1 ? 2 : 3;
        for (int a = 0; a < axes; a++)
            for (int k = 0; k < AXIS_KINDS; k++) {
                spec s = random_spec(sizes[z], steps);
                axis_kind(k, s.faces + 2 * a);
                failures += check_spec(&s, v, nv, NULL);
                runs += 2 * nv;
            }
    }
    print_message("%d GPU runs against the CPU, %d failed\n", runs, failures);
    return failures;
}

static void test_every_face_kind(void **state)
{
    (void)state;
    const int64_t sizes[][3] = {{33, 17, 9}, {36, 11, 7}, {37, 23, 1}, {40, 21, 1}, {517, 9, 1}};
    assert_int_equal(every_face_kind(sizes, COUNT(sizes), one_step, COUNT(one_step), 50), 0);
}

/* Temporal blocking: the same faces at every depth, 23 steps (a shorter
 * pass at the end), a grid several windows tall in 3D and wide in 2D. */
static void test_temporal_every_face_kind(void **state)
{
    (void)state;
    const int64_t sizes[][3] = {{33, 17, 9}, {36, 70, 11}, {37, 23, 1}, {520, 21, 1}};
    assert_int_equal(every_face_kind(sizes, COUNT(sizes), fused, COUNT(fused), 23), 0);
}

/* register_tiled's 3D kernels with staged weights: the warp-tile kernel
 * (the default; with 32-bit offsets, and with 64-bit ones through
 * HEAT_CUDA_GR_OFF64) and gregister_kernel (HEAT_CUDA_GR_KERNEL=plain),
 * every face kind, float and double, on grids whose tiles take one run of
 * planes and several (70 planes), with tiles and warps that end inside the
 * grid's rows and columns and beyond them. Odd x (33, 67: 1 and 3 floats,
 * 1 double past the last whole group): the backend pads rows to 16 bytes,
 * and the warp-tile kernel takes the whole groups, the strip the rest, its
 * tiles ending at and before the last whole group; with HEAT_CUDA_STRIP=0
 * single values on those rows, and unpadded with HEAT_CUDA_ROWS=packed. */
static void test_3d_kernels(void **state)
{
    (void)state;
    const int64_t sizes[][3] = {{36, 11, 9}, {33, 17, 70}, {260, 9, 70}, {68, 13, 40}, {67, 13, 9}};
    const variant v[] = {{"register_tiled", 1}};
    static const char *const how[][2] = {{"HEAT_CUDA_GR_KERNEL", "warp"},
                                         {"HEAT_CUDA_GR_OFF64", "1"},
                                         {"HEAT_CUDA_GR_KERNEL", "plain"},
                                         {"HEAT_CUDA_STRIP", "0"},
                                         {"HEAT_CUDA_ROWS", "packed"}};
    int failures = 0;
    for (int h = 0; h < COUNT(how); h++) {
        assert_int_equal(setenv(how[h][0], how[h][1], 1), 0);
        const int f = every_face_kind(sizes, COUNT(sizes), v, COUNT(v), 7);
        if (f) print_error("%s=%s: %d failed\n", how[h][0], how[h][1], f);
        failures += f;
        unsetenv(how[h][0]);
    }
    assert_int_equal(failures, 0);
}

/* Sizes that end tiles, windows and vector groups anywhere. */
static void test_awkward_sizes(void **state)
{
    (void)state;
    const int64_t sizes[][3] = {{3, 3, 3},    {5, 4, 3},   {67, 5, 4},  {259, 7, 5},
                                {64, 64, 8},  {130, 3, 3}, {3, 3, 1},   {129, 5, 1},
                                {1029, 7, 1}, {4, 300, 1}, {12, 3, 40}, {8, 67, 20}};
    const variant v[] = {{"naive", 1},          {"sliced", 1},         {"register_tiled", 1},
                         {"register_tiled", 2}, {"register_tiled", 3}, {"register_tiled", 8}};
    int failures = 0;
    for (int z = 0; z < COUNT(sizes); z++)
        for (int r = 0; r < 3; r++) {
            spec s = random_spec(sizes[z], 17);
            failures += check_spec(&s, v, COUNT(v), NULL);
        }
    assert_int_equal(failures, 0);
}

/* More materials than the kernels stage in shared memory: the weights are
 * read through the cache, and register_tiled runs one step per pass (and
 * says so) whatever solver.temporal_block asks for. */
static void test_many_materials(void **state)
{
    (void)state;
    const int64_t sizes[][3] = {{36, 19, 11}, {41, 13, 9}, {68, 29, 1}};
    const variant v[] = {{"naive", 1}, {"register_tiled", 1}};
    const variant f[] = {{"register_tiled", 3}};
    int failures = 0;
    for (int z = 0; z < COUNT(sizes); z++) {
        spec s = random_spec(sizes[z], 21);
        s.nmat = 80;
        s.ncls = HEAT_CLASSES_MAX;
        failures += check_spec(&s, v, COUNT(v), NULL);
        failures += check_spec(&s, f, COUNT(f), "one step per pass");
    }
    /* The most a case may have, 255 materials. */
    spec s = random_spec(sizes[0], 9);
    s.nmat = HEAT_MATERIALS_MAX;
    s.ncls = HEAT_CLASSES_MAX;
    failures += check_spec(&s, v, COUNT(v), NULL);
    /* Either side of register_tiled's padded weight table (16 materials),
     * in 3D and 2D, one value and four per thread. */
    const int64_t edge[][3] = {{41, 13, 9}, {36, 19, 11}, {68, 29, 1}};
    for (int n = 16; n <= 17; n++)
        for (int z = 0; z < COUNT(edge); z++) {
            spec e = random_spec(edge[z], 7);
            e.nmat = n;
            e.ncls = HEAT_CLASSES_MAX;
            failures += check_spec(&e, v, COUNT(v), NULL);
        }
    assert_int_equal(failures, 0);
}

/* A NaN in the field reaches the residual (as the CPU reports it) through
 * every kernel. */
static void test_nan_reaches_the_residual(void **state)
{
    (void)state;
    const int64_t sizes[][3] = {{36, 19, 11}, {67, 23, 1}};
    const variant v[] = {{"naive", 1}, {"register_tiled", 1}, {"register_tiled", 4}};
    for (int z = 0; z < COUNT(sizes); z++) {
        spec s = random_spec(sizes[z], 4);
        char deck[65536];
        spec_deck(&s, deck, sizeof deck);
        for (int i = 0; i < COUNT(v); i++) {
            heat_case c;
            load(&c, deck, "cuda", "double", v[i].kernel, v[i].depth);
            const size_t bytes = (size_t)c.d.points * sizeof(double);
            double *field = malloc(bytes), *out = malloc(bytes);
            uint8_t *cls = malloc((size_t)c.d.points);
            assert_true(field && out && cls);
            heat_coeffs k;
            random_classes(&c, s.nmat, s.ncls, cls, &k);
            fill(field, c.d.points, sizeof(double));
            field[c.d.points / 2 + c.grid.n[0] / 2] = NAN;
            double res = 0;
            run_backend(&c, field, cls, &k, s.steps, out, &res, NULL);
            if (!(isinf(res) && res > 0))
                fail_msg("%s k=%d: residual %g, expected +Inf for a NaN in the field", v[i].kernel,
                         v[i].depth, res);
            heat_coeffs_free(&k);
            free(field);
            free(out);
            free(cls);
        }
    }
}

/* solver.backend = "auto" runs a general case on the GPU. */
static void test_auto_runs_on_the_gpu(void **state)
{
    (void)state;
    const int64_t n[3] = {20, 12, 9};
    spec s = random_spec(n, 1);
    char deck[65536];
    spec_deck(&s, deck, sizeof deck);
    heat_case c;
    load(&c, deck, "auto", "float", "register_tiled", 2);
    heat_backend *b = NULL;
    heat_error err;
    if (heat_backend_create(&c, NULL, &b, &err)) fail_msg("backend: %s", err.msg);
    const char *d = heat_backend_describe(b);
    if (strncmp(d, "cuda", 4) != 0) fail_msg("auto chose \"%s\" for a general case", d);
    heat_backend_destroy(b);
}

/* ---- a whole run through the driver ---------------------------------- */

static const char driver_deck[] =
    "name = \"general\";\n"
    "materials = ( { name = \"steel\"; conductivity = 45.0; density = 7850.0; specific_heat = "
    "470.0; },\n"
    "  { name = \"copper\"; conductivity = 390.0; density = 8940.0; specific_heat = 385.0; },\n"
    "  { name = \"brick\"; conductivity = 0.7; density = 1900.0; specific_heat = 840.0; } );\n"
    "regions = ( { material = \"copper\"; box = { min = [0.2, 0.1, 0.1]; max = [0.6, 0.5, 0.4]; "
    "}; },\n"
    "  { material = \"brick\"; sphere = { center = [0.7, 0.35, 0.3]; radius = 0.2; }; } );\n"
    "sources = ( { power_density = 5.0e6; box = { min = [0.3, 0.2, 0.2]; max = [0.5, 0.4, 0.3]; "
    "}; } );\n"
    "probes = ( { name = \"hot\"; at = [0.4, 0.3, 0.25]; }, { name = \"edge\"; at = [0.0, 0.1, "
    "0.1]; } );\n"
    "time = { max_steps = 45; };\n"
    "steady = { tolerance = 1e-300; check_every = 5; };\n"
    "initial = { type = \"gaussian\"; center = [0.5, 0.35, 0.3]; width = 0.2; amplitude = 50.0; "
    "base = 20.0; };\n"
    "boundary = {\n"
    "  x_lo = { type = \"convective\"; h = 25.0; ambient = 15.0; };\n"
    "  x_hi = { type = \"flux\"; value = 5.0e4; };\n"
    "  y_lo = { type = \"periodic\"; };\n"
    "  y_hi = { type = \"periodic\"; };\n"
    "  z_lo = { type = \"neumann\"; gradient = -2.0; };\n"
    "  z_hi = { type = \"dirichlet\"; value = 80.0; };\n"
    "};\n"
    "output = { every = 7; checkpoint_every = 10; keep_checkpoints = 10; };\n";

/* heat_run of driver_deck into `dir` with the overrides `sets`
 * (NULL-terminated), quiet; the final field to `field` (malloc'd). */
static void *run_driver(heat_case *c, const char *dir, const char *const *sets)
{
    test_sets s = {0};
    test_sets_add(&s, "output.dir=\"%s\"", dir);
    for (int i = 0; sets[i]; i++) test_sets_add(&s, "%s", sets[i]);
    char *text = NULL;
    test_load_case_text(driver_deck, "test_gpu_general", &s, c, &text);
    void *field = malloc((size_t)c->d.points * heat_case_value_size(c));
    assert_non_null(field);
    heat_run_options opt = {0};
    opt.quiet = 1;
    opt.out = stdout;
    opt.notices = stderr;
    opt.field_out = field;
    heat_run_result res;
    heat_error err;
    heat_error_clear(&err);
    if (heat_run(c, text, &opt, &res, &err) != HEAT_OK) fail_msg("heat_run (%s): %s", dir, err.msg);
    assert_int_equal(res.final_step, 45);
    free(text);
    return field;
}

/* Every snapshot and checkpoint of two runs of the same case: present in
 * both or neither, equal fields. Returns the failures. */
static int compare_outputs(const heat_case *c, const char *dw, const char *dg)
{
    int failures = 0, files = 0;
    for (int64_t step = 0; step <= 45; step++)
        for (int ck = 0; ck < 2; ck++) {
            char pw[4400], pg[4400];
            if (ck) {
                heat_output_checkpoint_path(pw, sizeof pw, dw, c->name, step);
                heat_output_checkpoint_path(pg, sizeof pg, dg, c->name, step);
            } else {
                heat_output_snapshot_path(pw, sizeof pw, dw, c->name, step);
                heat_output_snapshot_path(pg, sizeof pg, dg, c->name, step);
            }
            if (test_exists(pw) != test_exists(pg)) {
                print_error("%s and %s: one is missing\n", pw, pg);
                failures++;
            }
            if (!test_exists(pw) || !test_exists(pg)) continue;
            heat_file_meta mw, mg;
            void *fw = test_read_field(pw, &mw), *fg = test_read_field(pg, &mg);
            failures += !compare(c, fw, fg, pg);
            failures += mw.step != mg.step || mw.time != mg.time;
            heat_file_meta_free(&mw);
            heat_file_meta_free(&mg);
            free(fw);
            free(fg);
            files++;
        }
    print_message("%s: %d field files compared\n", dg, files);
    return failures + (files < 8);
}

/* The driver deck (materials in regions, a source, probes, convective,
 * flux, periodic, Neumann and Dirichlet faces) on the CPU and on the GPU,
 * fused 3 steps per pass and with "auto" (backend, and the depth timed on
 * the GPU first: 1 to 2 in 3D, 3 to 5 in 2D): the final fields, every field
 * file, history.csv (without the wall clock) and probes.csv, bit for bit.
 * 3D in float, 2D in double. */
static void test_general_through_the_driver(void **state)
{
    (void)state;
    static const struct {
        const char *name, *points, *precision;
    } shapes[] = {
        {"gpu_general_driver_3d", "grid.points=[41, 29, 23]", "solver.precision=\"float\""},
        {"gpu_general_driver_2d", "grid.points=[67, 45, 1]", "solver.precision=\"double\""},
    };
    int failures = 0;
    for (int i = 0; i < COUNT(shapes); i++) {
        char base[4096], dc[4200], dg[4200], da[4200];
        snprintf(base, sizeof base, "%s", test_scratch_dir(shapes[i].name));
        snprintf(dc, sizeof dc, "%s/cpu", base);
        snprintf(dg, sizeof dg, "%s/cuda", base);
        snprintf(da, sizeof da, "%s/auto", base);
        const char *sc[] = {shapes[i].points, shapes[i].precision, "grid.length=[1.0, 0.7, 0.55]",
                            "solver.backend=\"cpu\"", NULL};
        const char *sg[] = {
            shapes[i].points,          shapes[i].precision,       "grid.length=[1.0, 0.7, 0.55]",
            "solver.backend=\"cuda\"", "solver.temporal_block=3", NULL};
        const char *sa[] = {shapes[i].points,
                            shapes[i].precision,
                            "grid.length=[1.0, 0.7, 0.55]",
                            "solver.backend=\"auto\"",
                            "solver.temporal_block=\"auto\"",
                            NULL};
        heat_case cc, cg, ca;
        void *fc = run_driver(&cc, dc, sc), *fg = run_driver(&cg, dg, sg),
             *fa = run_driver(&ca, da, sa);
        failures += !compare(&cc, fc, fg, "final field, cuda, temporal_block 3");
        failures += !compare(&cc, fc, fa, "final field, auto");
        failures += compare_outputs(&cc, dc, dg) + compare_outputs(&cc, dc, da);
        const char *dirs[] = {dg, da};
        for (int d = 0; d < 2; d++) {
            char *hw = test_csv_without(dc, "history.csv", 3),
                 *hg = test_csv_without(dirs[d], "history.csv", 3);
            char *pw = test_csv_without(dc, "probes.csv", -1),
                 *pg = test_csv_without(dirs[d], "probes.csv", -1);
            if (strcmp(hw, hg) != 0 || strcmp(pw, pg) != 0) {
                print_error("%s: history.csv or probes.csv differ:\ncpu:\n%s%s%s:\n%s%s", dirs[d],
                            hw, pw, dirs[d], hg, pg);
                failures++;
            }
            free(hw);
            free(hg);
            free(pw);
            free(pg);
        }
        free(fc);
        free(fg);
        free(fa);
    }
    assert_int_equal(failures, 0);
}

int main(void)
{
    const int skip = gpu_tests_skip("test_gpu_general");
    if (skip) return skip;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_face_kind),
        cmocka_unit_test(test_temporal_every_face_kind),
        cmocka_unit_test(test_3d_kernels),
        cmocka_unit_test(test_awkward_sizes),
        cmocka_unit_test(test_many_materials),
        cmocka_unit_test(test_nan_reaches_the_residual),
        cmocka_unit_test(test_auto_runs_on_the_gpu),
        cmocka_unit_test(test_general_through_the_driver),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
