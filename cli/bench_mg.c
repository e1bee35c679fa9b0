/* heat bench --multigrid: one V-cycle of the steady solve and its parts per
 * level against the copy bandwidth, and the solves the targets name, on the
 * measure deck (docs/PERFORMANCE.md, "Multigrid"): the unit cube, diffusivity
 * 1, x_lo Dirichlet 1, x_hi, y_lo, z_lo Dirichlet 0, y_hi and z_hi insulated,
 * from 0.
 *
 * Method. The parts are timed kernel by kernel on the backend's clock (CUDA
 * events on the GPU, the wall clock on the CPU), the medians of --runs
 * cycles; the whole cycle as the solver runs it (one CUDA graph per cycle on
 * the GPU), averaged over as many; a copy of the field for the ceiling. A
 * sweep's GB/s counts the least bytes it must move (x, the previous iterate
 * where the sweep reads it, b and D where the level has them, T on coarse
 * levels, one value written). The solves are timed on the wall clock from a
 * fresh field, each cycle's residual read back, setup excluded: to max
 * |du/dt| <= 1e-5, to a relative reduction of 1e-10, and backward Euler
 * steps (V-cycles per step to solver.implicit_tolerance, relative to each
 * step's right-hand side): of dt = 0.5 from the start, and of dt = 100
 * dt_max after 5 steps from the start (a transient that changes the field
 * a little per step). On the GPU in double, also mixed precision: cycles
 * of one float V-cycle on the double residual to the same 1e-10.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "cli.h"
#include "deck.h"
#include "initial.h"
#include "parallel.h"

/* The most V-cycles a timed solve runs: one that has not met its target by
 * then is said not to have reached it. */
#define SOLVE_CAP 200

static const char measure_deck[] =
    "name = \"measure\";\n"
    "grid = { points = [65, 65, 65]; length = [1.0, 1.0, 1.0]; };\n"
    "material = { diffusivity = 1.0; };\n"
    "steady = { tolerance = 1.0e-5; method = \"multigrid\"; };\n"
    "initial = { type = \"constant\"; value = 0.0; };\n"
    "boundary = { x_lo = { type = \"dirichlet\"; value = 1.0; };\n"
    "  x_hi = { type = \"dirichlet\"; value = 0.0; };\n"
    "  y_lo = { type = \"dirichlet\"; value = 0.0; }; y_hi = { type = \"neumann\"; };\n"
    "  z_lo = { type = \"dirichlet\"; value = 0.0; }; z_hi = { type = \"neumann\"; }; };\n";

static const char usage_mg[] =
    "usage: heat bench --multigrid [--backend cpu|cuda] [--size NXxNYxNZ]...\n"
    "                  [--precision float|double|both] [--runs N] [--json FILE]\n"
    "\n"
    "Times one V(2,2) cycle of the steady multigrid solve on the measure deck (the unit\n"
    "cube from 0 between x_lo = 1 and three Dirichlet faces at 0, two insulated ones),\n"
    "part by part and level by level against a copy of the field, and the solves:\n"
    "max |du/dt| <= 1e-5 from the start, a relative reduction of 1e-10, and backward\n"
    "Euler steps of dt = 0.5 from the start and of dt = 100 dt_max after 5 steps;\n"
    "on the GPU in double, also float V-cycles on the double residual to 1e-10.\n"
    "A solve that has not met its target in 200 V-cycles is printed as \"not reached\"\n"
    "(JSON: steady_reached, rel1e10_reached false). --runs: 3 to 200.\n"
    "Defaults: the GPU where usable, 256^3 and 512^3 there (64^3 and 128^3 on the\n"
    "CPU), double, 20 runs.\n";

typedef struct mg_opts {
    const char *backend;
    int64_t sizes[8][3];
    int nsizes, want_f, want_d, runs;
    const char *json;
} mg_opts;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The measure deck at size n and precision p on backend be, with more
 * overrides. */
static int measure_case(const mg_opts *o, const int64_t n[3], const char *prec, const char *extra,
                        const char *extra2, heat_case *c, heat_error *err)
{
    char s1[96], s2[64], s3[64];
    snprintf(s1, sizeof s1, "grid.points=[%lld,%lld,%lld]", (long long)n[0], (long long)n[1],
             (long long)n[2]);
    snprintf(s2, sizeof s2, "solver.precision=\"%s\"", prec);
    snprintf(s3, sizeof s3, "solver.backend=\"%s\"", o->backend);
    const char *sets[] = {s1, s2, s3, extra, extra2};
    int rc = heat_deck_load_string(measure_deck, "measure", sets,
                                   3 + (extra != NULL) + (extra2 != NULL), c, NULL, NULL, err);
    return rc ? rc : heat_case_derive(c, err);
}

/* A backend of the case with its hierarchy and the start field uploaded. */
static int start(const heat_case *c, heat_backend **b, heat_error *err)
{
    void *f = malloc((size_t)c->d.points * heat_case_value_size(c));
    if (!f) return heat_error_set(err, HEAT_ERUNTIME, "out of memory");
    int rc = heat_initial_fill(c, f, err);
    if (!rc) rc = heat_backend_create(c, NULL, b, err);
    if (!rc) rc = heat_backend_mg_setup(*b, err);
    if (!rc) rc = heat_backend_upload(*b, f, err);
    free(f);
    return rc;
}

/* Cycles from the start until max |du/dt| <= tol (rel = 0) or the residual
 * fell by rel; the wall time and cycles. */
static int solve(const heat_case *c, double tol, double rel, double *sec, int *cycles, int *reached,
                 heat_error *err)
{
    heat_backend *b = NULL;
    int rc = start(c, &b, err);
    double r = INFINITY, t0 = now();
    heat_mg_info info = {0};
    *reached = 0;
    for (*cycles = 0; !rc && *cycles < SOLVE_CAP;) {
        rc = heat_backend_advance(b, 1, &r, err);
        ++*cycles;
        heat_backend_mg_info(b, &info);
        if ((*reached = rel > 0 ? info.reduction <= rel : r <= tol)) break;
    }
    *sec = now() - t0;
    heat_backend_destroy(b);
    return rc;
}

/* Backward Euler steps of dt from the start: after `warm` steps (not
 * timed), V-cycles per step and seconds per step (the mean of `steps`). */
static int implicit_steps(const mg_opts *o, const int64_t n[3], const char *prec, double dt,
                          int warm, int steps, double *cycles, double *sec, heat_error *err)
{
    heat_case c;
    char tm[96];
    snprintf(tm, sizeof tm, "time={scheme=\"backward_euler\"; dt=%.17g; max_steps=1000;}", dt);
    int rc = measure_case(o, n, prec, "steady.method=\"explicit\"", tm, &c, err);
    heat_backend *b = NULL;
    if (!rc) rc = start(&c, &b, err);
    double r, t0 = 0;
    heat_mg_info info = {0};
    int64_t before = 0;
    if (!rc && warm > 0) rc = heat_backend_advance(b, warm, &r, err);
    if (!rc) heat_backend_mg_info(b, &info);
    before = info.total_cycles;
    t0 = now();
    if (!rc) rc = heat_backend_advance(b, steps, &r, err);
    *sec = (now() - t0) / steps;
    if (!rc) heat_backend_mg_info(b, &info);
    *cycles = (double)(info.total_cycles - before) / steps;
    heat_backend_destroy(b);
    return rc;
}

static void print_levels(const heat_mg_timing *t, int vs, FILE *jf)
{
    const double copy_gbs = t->copy_bytes / t->copy_ms / 1e6;
    double coarse32 = t->coarse_ms;
    printf("  %-5s %-16s %9s %9s %7s %11s %10s\n", "level", "size", "sweeps ms", "GB/s", "% copy",
           "restrict ms", "prolong ms");
    for (int l = 0; l < t->levels; l++) {
        const heat_mg_level_timing *lt = &t->lv[l];
        char size[48];
        snprintf(size, sizeof size, "%lldx%lldx%lld", (long long)lt->n[0], (long long)lt->n[1],
                 (long long)lt->n[2]);
        if (l == t->levels - 1) {
            printf("  %-5d %-16s direct solve %.4f ms\n", l, size, t->coarse_ms);
            break;
        }
        const double gbs = lt->smooth_bytes / lt->smooth_ms / 1e6;
        printf("  %-5d %-16s %9.4f %9.1f %6.1f%% %11.4f %10.4f\n", l, size, lt->smooth_ms, gbs,
               100.0 * gbs / copy_gbs, lt->restrict_ms, lt->prolong_ms);
        if ((double)lt->n[0] * lt->n[1] * lt->n[2] < 32.0 * 32 * 32)
            coarse32 += lt->smooth_ms + lt->restrict_ms + lt->prolong_ms;
        if (jf)
            fprintf(jf,
                    "%s\n      {\"n\": [%lld, %lld, %lld], \"sweeps_ms\": %.6g, \"gbs\": %.4g, "
                    "\"restrict_ms\": %.6g, \"prolong_ms\": %.6g}",
                    l ? "," : "", (long long)lt->n[0], (long long)lt->n[1], (long long)lt->n[2],
                    lt->smooth_ms, gbs, lt->restrict_ms, lt->prolong_ms);
    }
    printf("  norms (max |du/dt|) %.4f ms; parts %.4f ms; the cycle as run %.4f ms; levels "
           "below 32^3 %.1f%% of the parts; copy %.1f GB/s (%d-byte values)\n",
           t->norms_ms, t->parts_ms, t->cycle_ms, 100.0 * coarse32 / t->parts_ms, copy_gbs, vs);
}

static int bench_size(const mg_opts *o, const int64_t n[3], const char *prec, FILE *jf, int *first)
{
    heat_case c;
    heat_error err;
    heat_backend *b = NULL;
    heat_mg_timing t;
    heat_mg_info info;
    memset(&t, 0, sizeof t);
    int rc = measure_case(o, n, prec, NULL, NULL, &c, &err);
    if (!rc) rc = start(&c, &b, &err);
    if (!rc) rc = heat_backend_mg_bench(b, o->runs, &t, &err);
    if (!rc) heat_backend_mg_info(b, &info);
    heat_backend_destroy(b);
    double s1 = 0, s2 = 0, be_cycles = 0, be_sec = 0, tr_cycles = 0, tr_sec = 0;
    int c1 = 0, c2 = 0;
    int ok1 = 0, ok2 = 0;
    if (!rc) rc = solve(&c, 1e-5, 0, &s1, &c1, &ok1, &err);
    if (!rc) rc = solve(&c, 0, 1e-10, &s2, &c2, &ok2, &err);
    if (!rc) rc = implicit_steps(o, n, prec, 0.5, 0, 3, &be_cycles, &be_sec, &err);
    if (!rc) rc = implicit_steps(o, n, prec, 100.0 * c.d.dt_max, 5, 3, &tr_cycles, &tr_sec, &err);
    if (rc) {
        fprintf(stderr, "heat bench --multigrid: %s\n", err.msg);
        return rc;
    }
    printf("%s, %lldx%lldx%lld, %s: %s\n", o->backend, (long long)n[0], (long long)n[1],
           (long long)n[2], prec, info.text);
    if (jf)
        fprintf(jf,
                "%s\n    {\"backend\": \"%s\", \"n\": [%lld, %lld, %lld], \"precision\": \"%s\", "
                "\"levels\": [",
                *first ? "" : ",", o->backend, (long long)n[0], (long long)n[1], (long long)n[2],
                prec);
    *first = 0;
    print_levels(&t, (int)heat_case_value_size(&c), jf);
    printf("  residual reduction per cycle (geometric mean of %d): %.4f (%.1fx)\n", o->runs,
           t.reduction, 1.0 / t.reduction);
    printf("  solve to max |du/dt| <= 1e-5: %s%d cycles, %.4f s; to a reduction of 1e-10: %s%d "
           "cycles, %.4f s\n",
           ok1 ? "" : "not reached in ", c1, s1, ok2 ? "" : "not reached in ", c2, s2);
    if (t.mixed_cycles)
        printf("  mixed precision (%d float V-cycles on each double residual): to a reduction of "
               "1e-10: %d corrections, %.4f s (reached %.3g)\n",
               t.mixed_inner, t.mixed_cycles, t.mixed_s, t.mixed_reduction);
    printf("  backward Euler, dt = 0.5: %.2f V-cycles per step, %.4f s per step; dt = 100 "
           "dt_max after 5 steps: %.2f, %.4f s\n",
           be_cycles, be_sec, tr_cycles, tr_sec);
    if (jf)
        fprintf(jf,
                "],\n     \"coarse_ms\": %.6g, \"norms_ms\": %.6g, \"parts_ms\": %.6g, "
                "\"cycle_ms\": %.6g, \"copy_gbs\": %.4g, \"reduction\": %.6g, \"steady_cycles\": "
                "%d, \"steady_reached\": %s, \"steady_s\": %.6g, \"rel1e10_cycles\": %d, "
                "\"rel1e10_reached\": %s, \"rel1e10_s\": %.6g, "
                "\"be_cycles_per_step\": %.4g, \"be_s_per_step\": %.6g, "
                "\"be100_cycles_per_step\": %.4g, \"be100_s_per_step\": %.6g, "
                "\"mixed1e10_corrections\": %d, \"mixed_inner_cycles\": %d, \"mixed1e10_s\": %.6g}",
                t.coarse_ms, t.norms_ms, t.parts_ms, t.cycle_ms, t.copy_bytes / t.copy_ms / 1e6,
                t.reduction, c1, ok1 ? "true" : "false", s1, c2, ok2 ? "true" : "false", s2,
                be_cycles, be_sec, tr_cycles, tr_sec, t.mixed_cycles, t.mixed_inner, t.mixed_s);
    return 0;
}

static int parse(mg_opts *o, int argc, char **argv)
{
    for (int i = 0; i < argc; i++) {
        char name[64];
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        const char *joined = heat_cli_split_option(s, name, sizeof name); /* --option=value */
        if (joined) s = name, v = joined;
        if (!strcmp(s, "--multigrid")) continue;
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            fputs(usage_mg, stdout);
            return 0;
        }
        /* An unknown option is named as such, not as one missing its value. */
        if (strcmp(s, "--backend") && strcmp(s, "--size") && strcmp(s, "--precision") &&
            strcmp(s, "--runs") && strcmp(s, "--json")) {
            fprintf(
                stderr,
                "heat bench --multigrid: unknown option %s (see heat bench --multigrid --help)\n",
                s);
            return -1;
        }
        if (!v) {
            fprintf(stderr, "heat bench --multigrid: %s needs a value (see --help)\n", s);
            return -1;
        }
        if (!joined) i++;
        if (!strcmp(s, "--backend") && (!strcmp(v, "cpu") || !strcmp(v, "cuda")))
            o->backend = v;
        else if (!strcmp(s, "--size")) {
            const char *why =
                o->nsizes < 8 ? heat_cli_parse_size(v, o->sizes[o->nsizes]) : "at most 8 sizes";
            if (why) {
                fprintf(stderr, "heat bench --multigrid: --size %s: %s\n", v, why);
                return -1;
            }
            o->nsizes++;
        } else if (!strcmp(s, "--precision") &&
                   (!strcmp(v, "float") || !strcmp(v, "double") || !strcmp(v, "both")))
            o->want_f = strcmp(v, "double") != 0, o->want_d = strcmp(v, "float") != 0;
        else if (!strcmp(s, "--runs") && atoi(v) >= 3 && atoi(v) <= 200)
            o->runs = atoi(v);
        else if (!strcmp(s, "--json"))
            o->json = v;
        else {
            fprintf(stderr,
                    "heat bench --multigrid: %s %s: unknown option or bad value (--backend cpu or "
                    "cuda, --size NXxNYxNZ, --precision float, double or both, --runs 3 to 200, "
                    "--json FILE)\n",
                    s, v);
            return -1;
        }
    }
    return 1;
}

int heat_bench_multigrid(int argc, char **argv)
{
    mg_opts o = {.runs = 20, .want_d = 1};
    const int p = parse(&o, argc, argv);
    if (p <= 0) return p < 0 ? 2 : 0;
    if (heat_par_size(heat_par_world()) > 1) {
        fprintf(stderr, "heat bench --multigrid: one process only (it times one V-cycle's parts "
                        "on the whole grid); time a solve split over ranks with heat run under "
                        "mpirun, whose summary counts the halo exchanges\n");
        return 2;
    }
    char why[256];
    if (!o.backend) o.backend = heat_backend_gpu_usable(why, sizeof why) ? "cuda" : "cpu";
    if (o.nsizes == 0) {
        const int64_t big = strcmp(o.backend, "cuda") ? 64 : 256;
        for (int k = 0; k < 2; k++)
            for (int a = 0; a < 3; a++) o.sizes[k][a] = big << k;
        o.nsizes = 2;
    }
    FILE *jf = o.json ? heat_bench_json_open(o.json) : NULL;
    if (o.json && !jf) return 1;
    char gpu[256] = "";
    if (!strcmp(o.backend, "cuda")) heat_backend_gpu_name(gpu, sizeof gpu);
    printf("heat bench --multigrid: %s%s%s; medians of %d cycles\n", o.backend, gpu[0] ? ", " : "",
           gpu, o.runs);
    if (jf) fprintf(jf, "{\n  \"device\": \"%s\",\n  \"rows\": [", gpu[0] ? gpu : o.backend);
    int rc = 0, first = 1;
    for (int s = 0; s < o.nsizes && !rc; s++)
        for (int q = 0; q < 2 && !rc; q++)
            if (q ? o.want_d : o.want_f)
                rc = bench_size(&o, o.sizes[s], q ? "double" : "float", jf, &first);
    rc = rc ? 1 : 0;
    if (jf) {
        fprintf(jf, "\n  ]\n}\n");
        rc = heat_bench_json_close(jf, o.json, rc);
    }
    return rc;
}
