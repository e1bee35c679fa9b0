/* heat bench for the CPU backend.
 *
 * Method: for each size and precision, first a parallel copy of one field
 * into another of the same size (one read and one write per point: what a
 * single stencil sweep must at least move), then the backend's sweep on
 * random data (never zeros) with all-Dirichlet faces. Warm-up first, then the
 * median of `runs` timed runs of `steps` steps each, timed on the wall clock
 * around complete calls (the CPU backend is synchronous). Copy and sweep runs
 * alternate, so that a busy neighbour on a shared machine slows both alike.
 * GLUP/s counts point updates per step; effective GB/s counts one read and one
 * write per point, 2 * sizeof(value) bytes per update.
 */
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend.h"
#include "deck.h"
#include "progress.h"
#include "stability.h"

#define MAX_SIZES 16

static const char usage_bench[] =
    "usage: heat bench [--size NXxNYxNZ]... [--precision float|double|both] [--runs N]\n"
    "                  [--steps N] [--json FILE]\n"
    "\n"
    "Times the stencil sweep on random data against a copy of the same size (the\n"
    "memory-bandwidth ceiling of a sweep that reads and writes each point once).\n"
    "For each size and precision it prints: backend, kernel, size, precision, ms per\n"
    "step, GLUP/s (1e9 point updates per second), effective GB/s (one read and one\n"
    "write per point), and the percentage of the copy bandwidth.\n"
    "\n"
    "options:\n"
    "  --size NXxNYxNZ   grid size, repeatable (NZ = 1 for 2D); default 256x256x256 and\n"
    "                    4096x4096x1 (larger than the caches)\n"
    "  --precision P     float, double or both (default both)\n"
    "  --runs N          timed runs per row, the median is reported (default 20, >= 3)\n"
    "  --steps N         steps per timed run (default: about 0.05 s of work, >= 1)\n"
    "  --json FILE       also write the table as JSON (with the machine and the ceiling)\n"
    "  --help            this text\n"
    "\n"
    "Backends built in: see heat --version. This build times the CPU backend (OpenMP;\n"
    "set OMP_NUM_THREADS to choose the thread count).\n";

typedef struct bench_row {
    char backend[64], kernel[32], precision[8];
    int64_t n[3];
    int steps, runs;
    double ms_per_step, glups, gbps, copy_gbps, percent;
} bench_row;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Seconds for one parallel copy of `bytes` bytes, in static chunks per thread
 * as the sweep divides its rows. */
static double time_copy(void *dst, const void *src, size_t bytes)
{
    double t0 = heat_wall_seconds();
#pragma omp parallel
    {
        int nt = 1, id = 0;
#ifdef _OPENMP
        nt = omp_get_num_threads();
        id = omp_get_thread_num();
#endif
        size_t chunk = (bytes / (size_t)nt + 63) / 64 * 64;
        size_t lo = (size_t)id * chunk;
        if (lo < bytes) {
            size_t len = lo + chunk > bytes ? bytes - lo : chunk;
            memcpy((char *)dst + lo, (const char *)src + lo, len);
        }
    }
    return heat_wall_seconds() - t0;
}

static int parse_size(const char *s, int64_t n[3])
{
    long long a, b, c;
    char tail;
    if (sscanf(s, "%lldx%lldx%lld%c", &a, &b, &c, &tail) != 3) return -1;
    if (a < 3 || b < 3 || (c < 3 && c != 1)) return -1;
    n[0] = a, n[1] = b, n[2] = c;
    return 0;
}

/* One row: the backend's sweep at this size and precision. */
static int bench_one(const int64_t n[3], const char *precision, int runs, int steps_opt,
                     bench_row *row, heat_error *err)
{
    char deck[1024];
    snprintf(deck, sizeof deck,
             "grid = { points = [%lld, %lld, %lld]; length = [1.0, 1.0, 1.0]; };\n"
             "material = { diffusivity = 1.0; };\n"
             "time = { max_steps = 1; };\n"
             "initial = { type = \"constant\"; value = 0.0; };\n"
             "boundary = {\n"
             "  x_lo = { type = \"dirichlet\"; value = 1.0; }; x_hi = { type = \"dirichlet\"; "
             "value = 0.0; };\n"
             "  y_lo = { type = \"dirichlet\"; value = 0.0; }; y_hi = { type = \"dirichlet\"; "
             "value = 0.0; };\n"
             "  z_lo = { type = \"dirichlet\"; value = 0.0; }; z_hi = { type = \"dirichlet\"; "
             "value = 0.0; };\n"
             "};\n"
             "solver = { backend = \"cpu\"; precision = \"%s\"; };\n",
             (long long)n[0], (long long)n[1], (long long)n[2], precision);
    heat_case c;
    int rc = heat_deck_load_string(deck, "bench", NULL, 0, &c, NULL, NULL, err);
    if (!rc) rc = heat_case_derive(&c, err);
    if (rc) return rc;

    const size_t vs = heat_case_value_size(&c), bytes = (size_t)c.d.points * vs;
    void *a = malloc(bytes), *b = malloc(bytes);
    heat_backend *be = NULL;
    if (!a || !b) {
        rc = heat_error_set(err, HEAT_ERUNTIME, "cannot allocate 2 x %.3g GB", (double)bytes / 1e9);
        goto out;
    }
    /* Random data, never zeros: values in [0, 1). */
    uint64_t state = 0x5eed;
    for (int64_t i = 0; i < c.d.points; i++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        double x = (double)(state >> 11) * 0x1.0p-53;
        if (vs == sizeof(float))
            ((float *)a)[i] = (float)x;
        else
            ((double *)a)[i] = x;
    }
    memcpy(b, a, bytes);

    if ((rc = heat_backend_create(&c, NULL, &be, err))) goto out;
    if ((rc = heat_backend_upload(be, a, err))) goto out;
    /* Warm-up, and the step count per run: about 0.05 s of work. */
    double t0 = heat_wall_seconds();
    if ((rc = heat_backend_advance(be, 2, NULL, err))) goto out;
    double per_step = (heat_wall_seconds() - t0) / 2;
    int steps = steps_opt > 0 ? steps_opt : (int)fmax(1.0, fmin(1000.0, 0.05 / per_step));
    /* Copy and sweep alternate, so that both sample the same state of a
     * machine that may be shared. */
    double *t = malloc(sizeof *t * (size_t)runs), *tc = malloc(sizeof *tc * (size_t)runs);
    time_copy(b, a, bytes); /* warm-up */
    for (int r = 0; r < runs && !rc; r++) {
        tc[r] = time_copy(b, a, bytes);
        t0 = heat_wall_seconds();
        rc = heat_backend_advance(be, steps, NULL, err);
        t[r] = heat_wall_seconds() - t0;
    }
    if (!rc) {
        double s = median(t, runs) / steps;
        snprintf(row->backend, sizeof row->backend, "%s", "cpu");
        snprintf(row->kernel, sizeof row->kernel, "%s", "openmp");
        snprintf(row->precision, sizeof row->precision, "%s", precision);
        memcpy(row->n, n, sizeof row->n);
        row->steps = steps;
        row->runs = runs;
        row->ms_per_step = 1e3 * s;
        row->glups = (double)c.d.points / s / 1e9;
        row->gbps = row->glups * 2.0 * (double)vs;
        row->copy_gbps = 2.0 * (double)bytes / median(tc, runs) / 1e9;
        row->percent = 100.0 * row->gbps / row->copy_gbps;
    }
    free(t);
    free(tc);
out:
    heat_backend_destroy(be);
    free(a);
    free(b);
    return rc;
}

static void cpu_name(char *buf, size_t n)
{
    snprintf(buf, n, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "model name", 10) == 0) {
            char *v = strchr(line, ':');
            if (v) {
                v += 2;
                v[strcspn(v, "\n")] = '\0';
                snprintf(buf, n, "%s", v);
            }
            break;
        }
    fclose(f);
}

int heat_bench_main(int argc, char **argv)
{
    int64_t sizes[MAX_SIZES][3];
    int nsizes = 0, runs = 20, steps = 0, want_f = 1, want_d = 1;
    const char *json = NULL;
    for (int i = 0; i < argc; i++) {
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            fputs(usage_bench, stdout);
            return 0;
        } else if (!strcmp(s, "--size") && v) {
            if (nsizes == MAX_SIZES || parse_size(v, sizes[nsizes])) {
                fprintf(stderr,
                        "heat bench: --size %s: expected NXxNYxNZ with each >= 3 "
                        "(NZ = 1 for 2D), at most %d sizes\n",
                        v, MAX_SIZES);
                return 2;
            }
            nsizes++, i++;
        } else if (!strcmp(s, "--precision") && v) {
            want_f = !strcmp(v, "float") || !strcmp(v, "both");
            want_d = !strcmp(v, "double") || !strcmp(v, "both");
            if (!want_f && !want_d) {
                fprintf(stderr, "heat bench: --precision %s: expected float, double or both\n", v);
                return 2;
            }
            i++;
        } else if (!strcmp(s, "--runs") && v) {
            runs = atoi(v), i++;
            if (runs < 3 || runs > 100000) {
                fprintf(stderr, "heat bench: --runs %s: expected an integer from 3 to 100000\n", v);
                return 2;
            }
        } else if (!strcmp(s, "--steps") && v) {
            steps = atoi(v), i++;
            if (steps < 1) {
                fprintf(stderr, "heat bench: --steps %s: expected an integer >= 1\n", v);
                return 2;
            }
        } else if (!strcmp(s, "--json") && v) {
            json = v, i++;
        } else {
            fprintf(stderr, "heat bench: unknown or incomplete option %s (see heat bench --help)\n",
                    s);
            return 2;
        }
    }
    if (nsizes == 0) {
        int64_t def[2][3] = {{256, 256, 256}, {4096, 4096, 1}};
        memcpy(sizes, def, sizeof def);
        nsizes = 2;
    }
    FILE *jf = NULL;
    if (json && !(jf = fopen(json, "w"))) {
        fprintf(stderr, "heat bench: cannot write %s: %s\n", json, strerror(errno));
        return 1;
    }
    char machine[256];
    cpu_name(machine, sizeof machine);
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    printf("heat bench: %s, %d OpenMP thread%s; median of %d runs\n", machine, threads,
           threads == 1 ? "" : "s", runs);
    printf("%-8s %-8s %-16s %-9s %10s %9s %9s %9s %8s\n", "backend", "kernel", "size", "precision",
           "ms/step", "GLUP/s", "GB/s", "copy GB/s", "% copy");
    if (jf)
        fprintf(jf, "{\n  \"device\": \"%s\",\n  \"threads\": %d,\n  \"runs\": %d,\n  \"rows\": [",
                machine, threads, runs);
    int first = 1, rc = 0;
    for (int s = 0; s < nsizes && !rc; s++) {
        for (int p = 0; p < 2 && !rc; p++) {
            if ((p == 0 && !want_f) || (p == 1 && !want_d)) continue;
            bench_row row;
            heat_error err;
            if ((rc = bench_one(sizes[s], p == 0 ? "float" : "double", runs, steps, &row, &err))) {
                fprintf(stderr, "heat bench: %s\n", err.msg);
                break;
            }
            char size[48];
            snprintf(size, sizeof size, "%lldx%lldx%lld", (long long)row.n[0], (long long)row.n[1],
                     (long long)row.n[2]);
            printf("%-8s %-8s %-16s %-9s %10.3f %9.3f %9.2f %9.2f %7.1f%%\n", row.backend,
                   row.kernel, size, row.precision, row.ms_per_step, row.glups, row.gbps,
                   row.copy_gbps, row.percent);
            fflush(stdout);
            if (jf) {
                fprintf(jf,
                        "%s\n    {\"backend\": \"%s\", \"kernel\": \"%s\", \"size\": [%lld, %lld, "
                        "%lld], \"precision\": \"%s\", \"steps_per_run\": %d, \"ms_per_step\": "
                        "%.6g, \"glups\": %.6g, \"achieved_gbps\": %.6g, \"peak_gbps\": %.6g, "
                        "\"efficiency\": %.4f}",
                        first ? "" : ",", row.backend, row.kernel, (long long)row.n[0],
                        (long long)row.n[1], (long long)row.n[2], row.precision, row.steps,
                        row.ms_per_step, row.glups, row.gbps, row.copy_gbps, row.percent / 100);
                first = 0;
            }
        }
    }
    if (jf) {
        fprintf(jf, "\n  ]\n}\n");
        if (fclose(jf) != 0 && !rc) {
            fprintf(stderr, "heat bench: cannot write %s: %s\n", json, strerror(errno));
            rc = 1;
        }
    }
    return rc;
}
