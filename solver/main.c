/* heat: the command line. Parses arguments, calls the modules, and is the
 * only place that turns an error code into an exit status. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "bench.h"
#include "deck.h"
#include "driver.h"
#include "h5file.h"
#include "initial.h"
#include "output.h"
#include "stability.h"

#ifndef HEAT_VERSION
#define HEAT_VERSION "0.0.0"
#endif

#define MAX_SETS 256

static const char usage_main[] =
    "heat " HEAT_VERSION ": explicit heat-diffusion solver (CPU and GPU)\n"
    "\n"
    "usage: heat run [DECK] [--set key=value]... [--restart PATH|latest] [--overwrite] [--quiet]\n"
    "       heat check DECK [--set key=value]...\n"
    "       heat info FILE\n"
    "       heat bench [--size NXxNYxNZ]... [--precision float|double|both] [--json FILE]\n"
    "       heat --help | heat COMMAND --help | heat --version\n"
    "\n"
    "commands:\n"
    "  run     march u_t = alpha * laplacian(u) from a deck (the built-in default deck\n"
    "          when DECK is left out) and write history.csv, snapshots, checkpoints and\n"
    "          an XDMF time series to output.dir\n"
    "  check   validate a deck and print the derived numbers (spacing, r, dt, dt_max,\n"
    "          steps, memory, output volume) without running or writing anything\n"
    "  info    show a snapshot's or checkpoint's metadata and deck, and verify its checksum\n"
    "  bench   time the stencil sweep against a copy of the same size (GLUP/s, GB/s)\n"
    "\n"
    "exit status: 0 done, 1 runtime failure, 2 bad usage or deck,\n"
    "             130 / 143 after SIGINT / SIGTERM (a checkpoint is written first)\n"
    "\n"
    "The deck is libconfig text; docs/DECK.md lists every key. Example:\n"
    "  heat run plate.cfg --set time.end=2.0 --set 'grid.points=[128,128,1]' --set "
    "solver.precision=float\n";

static const char usage_run[] =
    "usage: heat run [DECK] [options]\n"
    "\n"
    "Runs the deck (the built-in default deck when DECK is left out: a 64^3 block\n"
    "that finishes in seconds; `heat check` shows its numbers).\n"
    "\n"
    "options:\n"
    "  --set key=value     override a deck key, checked like the deck itself; repeatable.\n"
    "                      The value is libconfig syntax (2.0, [128,128,1], \"float\") or a\n"
    "                      bare word taken as a string (--set solver.precision=float)\n"
    "  --restart PATH      continue from a checkpoint (or snapshot) file; without DECK,\n"
    "                      with the deck the file holds\n"
    "  --restart latest    continue from the newest intact checkpoint in output.dir, or\n"
    "                      start from the initial condition when there is none\n"
    "                      (grid, precision, boundaries and diffusivity must match the\n"
    "                      file; the run keeps the file's dt, so it continues bit for bit)\n"
    "  --overwrite         replace an earlier run's files in output.dir (refused otherwise)\n"
    "  --quiet, -q         no progress line and no summary\n"
    "  --help, -h          this text\n"
    "\n"
    "Progress: a status line on a terminal, a log line every 5 s otherwise. The run\n"
    "stops at time.end, time.max_steps or steady state (max |du/dt| <= steady.tolerance,\n"
    "checked every steady.check_every steps), whichever comes first; Ctrl-C stops after\n"
    "the current step and writes a checkpoint (a second Ctrl-C ends at once).\n"
    "In output.dir: history.csv (step, time, residual max |du/dt|, wall seconds),\n"
    "NAME_STEP.vtkhdf snapshots, NAME_ckpt_STEP.vtkhdf checkpoints and NAME.xmf, the\n"
    "snapshots as a time series for ParaView (docs/FORMAT.md).\n"
    "\n"
    "exit status: 0 done, 1 runtime failure, 2 bad usage or deck, 130 / 143 after\n"
    "SIGINT / SIGTERM\n";

static const char usage_check[] =
    "usage: heat check DECK [--set key=value]...\n"
    "\n"
    "Validates the deck (every key, with file:line of each problem) and prints what the\n"
    "run would do: grid and spacing, r = alpha*dt/h^2 per axis, dt and the stability\n"
    "limit dt_max, steps to the end, memory on the device, and the output volume.\n"
    "Writes nothing. DECK may be '-' for the built-in default deck.\n"
    "\n"
    "exit status: 0 valid, 2 invalid\n";

static const char usage_info[] =
    "usage: heat info FILE\n"
    "\n"
    "Shows what a snapshot or checkpoint holds: kind, step, time, dt, grid, spacing,\n"
    "precision, boundary conditions, diffusivity, the program and format version that\n"
    "wrote it, and the deck of its run. Reads the whole field to verify every chunk's\n"
    "Fletcher-32 checksum.\n"
    "\n"
    "exit status: 0 intact, 1 damaged or not a heat file, 2 bad usage or no such file\n";

typedef struct args {
    const char *deck;
    const char *sets[MAX_SETS];
    int nsets;
    const char *restart;
    int overwrite, quiet, help;
} args;

/* Parses the options of run and check. Returns 0 or the exit status 2. */
static int parse_args(int argc, char **argv, int allow_run_options, args *a)
{
    memset(a, 0, sizeof *a);
    for (int i = 0; i < argc; i++) {
        const char *s = argv[i];
        const char *val = NULL;
        if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) {
            a->help = 1;
        } else if (strcmp(s, "--set") == 0 || strcmp(s, "-s") == 0 ||
                   strncmp(s, "--set=", 6) == 0) {
            val = s[2] == 's' && s[5] == '=' ? s + 6 : (i + 1 < argc ? argv[++i] : NULL);
            if (!val) {
                fprintf(stderr, "heat: %s needs key=value\n", s);
                return 2;
            }
            if (a->nsets == MAX_SETS) {
                fprintf(stderr, "heat: at most %d --set options\n", MAX_SETS);
                return 2;
            }
            a->sets[a->nsets++] = val;
        } else if (allow_run_options &&
                   (strcmp(s, "--restart") == 0 || strncmp(s, "--restart=", 10) == 0)) {
            val = s[9] == '=' ? s + 10 : (i + 1 < argc ? argv[++i] : NULL);
            if (!val || !*val) {
                fprintf(stderr, "heat: --restart needs a checkpoint path or 'latest'\n");
                return 2;
            }
            a->restart = val;
        } else if (allow_run_options && strcmp(s, "--overwrite") == 0) {
            a->overwrite = 1;
        } else if (allow_run_options && (strcmp(s, "--quiet") == 0 || strcmp(s, "-q") == 0)) {
            a->quiet = 1;
        } else if (s[0] == '-' && s[1] != '\0') {
            fprintf(stderr, "heat: unknown option %s (see heat %s --help)\n", s,
                    allow_run_options ? "run" : "check");
            return 2;
        } else if (!a->deck) {
            a->deck = s;
        } else {
            fprintf(stderr, "heat: one deck at a time (got %s and %s)\n", a->deck, s);
            return 2;
        }
    }
    if (a->restart && a->overwrite) {
        fprintf(stderr, "heat: --restart continues a run and --overwrite replaces it: "
                        "choose one\n");
        return 2;
    }
    return 0;
}

/* `heat run --restart FILE` without a deck: the deck FILE holds. Returns 0,
 * or the exit status after saying why. */
static int load_case_from_file(const args *a, heat_case *c, char **text)
{
    heat_file_meta m;
    heat_error err;
    int rc = heat_file_read_meta(a->restart, &m, &err);
    if (rc) {
        fprintf(stderr, "heat: --restart %s\n", err.msg);
        return rc;
    }
    char origin[HEAT_PATH_MAX + 32];
    snprintf(origin, sizeof origin, "%s (its deck)", a->restart);
    rc = heat_deck_load_string(m.deck, origin, a->sets, a->nsets, c, text, stderr, &err);
    heat_file_meta_free(&m);
    if (rc || heat_case_derive(c, &err)) {
        fprintf(stderr, "heat: invalid deck:\n%s\n", err.msg);
        if (text) free(*text), *text = NULL;
        return 2;
    }
    return 0;
}

/* Loads and derives the case; prints problems; returns 0 or 2. */
static int load_case(const args *a, heat_case *c, char **text)
{
    heat_error err;
    if (!a->deck && a->restart && strcmp(a->restart, "latest") != 0)
        return load_case_from_file(a, c, text);
    const char *path = a->deck && strcmp(a->deck, "-") != 0 ? a->deck : NULL;
    if (heat_deck_load(path, a->sets, a->nsets, c, text, stderr, &err) ||
        heat_case_derive(c, &err)) {
        fprintf(stderr, "heat: invalid deck:\n%s\n", err.msg);
        if (text) free(*text), *text = NULL;
        return 2;
    }
    return 0;
}

static void human_bytes(char *buf, size_t n, double b)
{
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    while (b >= 1024 && u < 5) b /= 1024, u++;
    snprintf(buf, n, u ? "%.3g %s" : "%.0f %s", b, unit[u]);
}

static void print_bc(const heat_bc *bc, char *buf, size_t n)
{
    if (bc->type == HEAT_BC_DIRICHLET)
        snprintf(buf, n, "dirichlet u = %g", bc->value);
    else if (bc->type == HEAT_BC_NEUMANN)
        snprintf(buf, n, "neumann du/dn = %g", bc->gradient);
    else
        snprintf(buf, n, "periodic");
}

/* What solver.temporal_block > 1 will do, for heat check: " (...)", or "" for
 * 1. Decided from the deck and the build alone, without looking for a GPU. */
static void temporal_block_text(const heat_case *c, char *buf, size_t n)
{
    const int k = c->solver.temporal_block;
    const int fused = c->solver.kernel == HEAT_KERNEL_REGISTER_TILED;
    heat_backend_kind be = c->solver.backend;
    if (be == HEAT_BACKEND_AUTO && !strstr(heat_backend_builtin(), "cuda")) be = HEAT_BACKEND_CPU;
    if (k == 1)
        buf[0] = '\0';
    else if (be == HEAT_BACKEND_CPU)
        snprintf(buf, n,
                 " (the CPU runs the steps one by one; only register_tiled on the GPU "
                 "fuses steps)");
    else if (!fused)
        snprintf(buf, n, " (kernel %s runs the steps one by one; only register_tiled fuses steps)",
                 heat_kernel_name(c->solver.kernel));
    else if (be == HEAT_BACKEND_CUDA)
        snprintf(buf, n, " (%d steps fused per pass over GPU memory)", k);
    else
        snprintf(buf, n,
                 " (%d steps fused per pass on the GPU with register_tiled; the CPU runs them one "
                 "by one)",
                 k);
}

static int cmd_check(const args *a)
{
    if (!a->deck) {
        fprintf(stderr, "heat check: which deck? (heat check DECK, or '-' for the built-in "
                        "default deck)\n");
        return 2;
    }
    heat_case c;
    if (load_case(a, &c, NULL)) return 2;
    heat_error ferr;
    if (heat_initial_check_file(&c, stderr, &ferr)) {
        fprintf(stderr, "heat: invalid deck:\n%s\n", ferr.msg);
        return 2;
    }
    const double vs = (double)heat_case_value_size(&c);
    const double field = (double)c.d.points * vs;
    char b1[32], b2[32], b3[32];
    printf("deck %s: valid\n", strcmp(a->deck, "-") ? a->deck : "(built-in default)");
    printf("name            %s\n", c.name);
    printf("grid            %lld x %lld x %lld = %lld points (%dD)\n", (long long)c.grid.n[0],
           (long long)c.grid.n[1], (long long)c.grid.n[2], (long long)c.d.points, c.grid.dims);
    printf("spacing         hx %.9g  hy %.9g", c.d.h[0], c.d.h[1]);
    if (c.grid.dims == 3) printf("  hz %.9g", c.d.h[2]);
    printf("\ndiffusivity     %.9g\n", c.alpha);
    printf("dt              %.9g (%s)\n", c.d.dt,
           c.time.has_dt ? (c.time.has_end ? "time.dt, fitted to end" : "time.dt")
                         : "safety * dt_max, fitted to end");
    printf("dt_max          %.9g (stability: sum of r <= 1/2)\n", c.d.dt_max);
    printf("r = a*dt/h^2    rx %.6g  ry %.6g", c.d.r[0], c.d.r[1]);
    if (c.grid.dims == 3) printf("  rz %.6g", c.d.r[2]);
    printf("  (sum %.6g)\n", c.d.r[0] + c.d.r[1] + c.d.r[2]);
    if (c.time.has_end)
        printf("end             t = %.9g at step %lld\n", c.time.end, (long long)c.d.end_step);
    if (c.time.has_max_steps) printf("max_steps       %lld\n", (long long)c.time.max_steps);
    if (c.steady.enabled)
        printf("steady          stop when max|du/dt| <= %.6g, checked every %lld steps\n",
               c.steady.tolerance, (long long)c.steady.check_every);
    if (c.d.stop_step >= 0)
        printf("stops           at step %lld%s\n", (long long)c.d.stop_step,
               c.steady.enabled ? ", or at steady state if sooner" : "");
    else
        printf("stops           at steady state only (no step bound)\n");
    for (int f = 0; f < 2 * c.grid.dims; f++) {
        char bc[96];
        print_bc(&c.bc[f], bc, sizeof bc);
        printf("boundary %s    %s\n", heat_face_name(f), bc);
    }
    printf("initial         %s\n", heat_init_type_name(c.initial.type));
    char fusion[160];
    temporal_block_text(&c, fusion, sizeof fusion);
    printf("solver          backend %s, precision %s, kernel %s, temporal_block %d%s\n",
           heat_backend_kind_name(c.solver.backend), heat_precision_name(c.solver.precision),
           heat_kernel_name(c.solver.kernel), c.solver.temporal_block, fusion);
    human_bytes(b1, sizeof b1, 2 * field);
    printf("memory          %s on the device (two time levels of %s values)\n", b1,
           heat_precision_name(c.solver.precision));
    human_bytes(b1, sizeof b1, field);
    if (c.d.stop_step >= 0) {
        int64_t snaps = 1 + (c.output.every > 0 ? c.d.stop_step / c.output.every : 0);
        if (c.output.every == 0 || c.d.stop_step % c.output.every) snaps++;
        human_bytes(b2, sizeof b2, (double)snaps * field);
        human_bytes(b3, sizeof b3, (double)c.output.keep_checkpoints * field);
        printf("output          %s: %lld snapshots of %s = %s, up to %lld checkpoints = %s\n",
               c.output.dir, (long long)snaps, b1, b2, (long long)c.output.keep_checkpoints, b3);
    } else {
        printf("output          %s: %s per snapshot (%s), count set by when steady state comes\n",
               c.output.dir, b1, c.output.every ? "every output.every steps" : "initial and final");
    }
    printf("checkpoints     ");
    if (c.output.checkpoint_every > 0)
        printf("every %lld steps, ", (long long)c.output.checkpoint_every);
    if (c.output.checkpoint_wall > 0) printf("every %g s of wall time, ", c.output.checkpoint_wall);
    printf("at the end and on SIGINT/SIGTERM; the newest %lld kept\n",
           (long long)c.output.keep_checkpoints);
    printf("files           %s/%s_STEP.vtkhdf, %s_ckpt_STEP.vtkhdf, %s.xmf; deflate %s\n",
           c.output.dir, c.name, c.name, c.name, c.output.compress ? "on" : "off");
    heat_error err;
    if (heat_output_check_dir(c.output.dir, HEAT_OUTPUT_NEW, &err))
        printf("note            %s\n", err.msg);
    return 0;
}

static int cmd_run(const args *a)
{
    heat_case c;
    char *text = NULL;
    int lrc = load_case(a, &c, &text);
    if (lrc) return lrc;
    heat_run_options opt = {0};
    opt.restart = a->restart;
    opt.overwrite = a->overwrite;
    opt.quiet = a->quiet;
    opt.out = stdout;
    opt.notices = stderr;
    heat_run_result res;
    heat_error err;
    int rc = heat_run(&c, text, &opt, &res, &err);
    free(text);
    if (rc) {
        fprintf(stderr, "heat: %s\n", err.msg);
        return rc;
    }
    if (res.reason == HEAT_STOP_SIGNAL) {
        fprintf(stderr, "heat: stopped by %s at step %lld\n",
                res.signal == SIGINT ? "SIGINT" : "SIGTERM", (long long)res.final_step);
        return 128 + res.signal;
    }
    return 0;
}

static int cmd_info(int argc, char **argv)
{
    const char *path = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage_info, stdout);
            return 0;
        }
        if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "heat: unknown option %s (see heat info --help)\n", argv[i]);
            return 2;
        }
        if (path) {
            fprintf(stderr, "heat info: one file at a time (got %s and %s)\n", path, argv[i]);
            return 2;
        }
        path = argv[i];
    }
    if (!path) {
        fprintf(stderr, "heat info: which file? (heat info FILE)\n");
        return 2;
    }
    heat_file_meta m;
    heat_error err;
    if (access(path, F_OK) != 0) {
        fprintf(stderr, "heat info: %s: %s\n", path, strerror(errno));
        return 2;
    }
    if (heat_file_read_meta(path, &m, &err)) {
        /* The file is there: unreadable, damaged or not ours. */
        fprintf(stderr, "heat info: %s\n", err.msg);
        return access(path, R_OK) != 0 ? 2 : 1;
    }
    printf("file            %s\n", path);
    printf("kind            %s\n", heat_file_kind_name(m.kind));
    printf("format          heat field file format %lld, written by heat %s\n",
           (long long)m.format_version, m.program_version);
    printf("step            %lld\n", (long long)m.step);
    printf("time            %.17g\n", m.time);
    printf("dt              %.17g\n", m.dt);
    printf("grid            %lld x %lld x %lld = %lld points (%dD)\n", (long long)m.n[0],
           (long long)m.n[1], (long long)m.n[2], (long long)(m.n[0] * m.n[1] * m.n[2]), m.dims);
    printf("length          %.17g %.17g %.17g\n", m.length[0], m.length[1], m.length[2]);
    printf("origin          %.17g %.17g %.17g\n", m.origin[0], m.origin[1], m.origin[2]);
    printf("spacing         hx %.17g  hy %.17g", m.spacing[0], m.spacing[1]);
    if (m.dims == 3) printf("  hz %.17g", m.spacing[2]);
    printf("\nprecision       %s\n", heat_precision_name(m.precision));
    printf("diffusivity     %.17g\n", m.alpha);
    for (int f = 0; f < 2 * m.dims; f++) {
        char bc[96];
        print_bc(&m.bc[f], bc, sizeof bc);
        printf("boundary %s    %s\n", heat_face_name(f), bc);
    }
    printf("storage         chunked, %s, deflate %s\n",
           m.has_checksum ? "Fletcher-32 checksums" : "no checksums", m.deflate ? "on" : "off");
    const size_t bytes = (size_t)(m.n[0] * m.n[1] * m.n[2]) * (m.precision == HEAT_FLOAT ? 4 : 8);
    void *field = malloc(bytes ? bytes : 1);
    int rc = 0;
    if (!field) {
        fprintf(stderr, "heat info: cannot allocate %.3g GB to read the field\n",
                (double)bytes / 1e9);
        rc = 1;
    } else if (heat_file_read_field(path, &m, m.precision, field, &err)) {
        printf("checksum        FAILED\n");
        fprintf(stderr, "heat info: %s\n", err.msg);
        rc = 1;
    } else {
        printf("checksum        %s (all %lld values read)\n",
               m.has_checksum ? "verified" : "none stored", (long long)(m.n[0] * m.n[1] * m.n[2]));
    }
    free(field);
    printf("deck:\n");
    for (const char *p = m.deck; *p;) {
        const char *nl = strchr(p, '\n');
        int len = nl ? (int)(nl - p) : (int)strlen(p);
        printf("  %.*s\n", len, p);
        p += len + (nl ? 1 : 0);
    }
    heat_file_meta_free(&m);
    return rc;
}

static int heat_main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage_main, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(usage_main, stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("heat %s\nbackends: %s\n", HEAT_VERSION, heat_backend_builtin());
        return 0;
    }
    args a;
    if (strcmp(cmd, "run") == 0 || strcmp(cmd, "check") == 0) {
        int is_run = cmd[0] == 'r';
        int rc = parse_args(argc - 2, argv + 2, is_run, &a);
        if (rc) return rc;
        if (a.help) {
            fputs(is_run ? usage_run : usage_check, stdout);
            return 0;
        }
        return is_run ? cmd_run(&a) : cmd_check(&a);
    }
    if (strcmp(cmd, "bench") == 0) return heat_bench_main(argc - 2, argv + 2);
    if (strcmp(cmd, "info") == 0) return cmd_info(argc - 2, argv + 2);
    fprintf(stderr,
            "heat: unknown command '%s' (commands: run, check, info, bench; see heat --help)\n",
            cmd);
    return 2;
}

int main(int argc, char **argv)
{
    int rc = heat_main(argc, argv);
    /* A full disk or a closed pipe on stdout is a failure, not a success. */
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "heat: cannot write to standard output: %s\n", strerror(errno));
        if (rc == 0) rc = 1;
    }
    return rc;
}
