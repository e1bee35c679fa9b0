/* heat check: validate a deck and print what the run would do. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cli.h"
#include "initial.h"
#include "io_util.h"
#include "materials.h"
#include "mg.h"
#include "output.h"
#include "parallel.h"

const char heat_usage_check[] =
    "usage: heat check DECK [--set key=value]... [--ranks N]\n"
    "\n"
    "Validates the deck (every key, with file:line of each problem) and prints what the\n"
    "run would do: grid and spacing, r = alpha*dt/h^2 per axis, dt and the stability\n"
    "limit dt_max, steps to the end, memory on the device, and the output volume (with a\n"
    "note where it is more than the free space of output.dir's file system).\n"
    "Under mpirun (or with --ranks N, for N processes) also the split of the grid over\n"
    "the ranks: each rank's box, memory and halo bytes per step; a split that does not\n"
    "fit is a deck error. Writes nothing. DECK may be '-' for the built-in default deck.\n"
    "--set takes the forms of heat run's (-s key=value, --set=key=value); --ranks=N as well.\n"
    "A deck valid for another build (solver.backend = \"cuda\" where this heat has no\n"
    "CUDA) is valid, with a note that this heat would refuse to run it.\n"
    "  --help, -h          this text\n"
    "\n"
    "exit status: 0 valid, 2 invalid\n";

/* What solver.temporal_block > 1 will do: " (...)", or "" for 1. Decided
 * from the deck and the build alone, without looking for a GPU. */
static void temporal_block_text(const heat_case *c, char *buf, size_t n)
{
    const int k = c->solver.temporal_block;
    const int fused = c->solver.kernel == HEAT_KERNEL_FUSING;
    const char *fuser = heat_kernel_name(HEAT_KERNEL_FUSING);
    heat_backend_kind be = c->solver.backend;
    if (be == HEAT_BACKEND_AUTO && !heat_backend_has_gpu_build()) be = HEAT_BACKEND_CPU;
    /* One GPU times the table's k and its neighbours before the loop
     * (kernels/cuda/cuda_backend.cu, measure_depth): the same candidates. */
    int ranks = 1;
    for (int a = 0; a < 3; a++) ranks *= c->parallel.ranks[a] > 1 ? c->parallel.ranks[a] : 1;
    int lo, hi;
    heat_case_auto_range(c, &lo, &hi);
    const int timed =
        ranks == 1 && fused && be != HEAT_BACKEND_CPU && !heat_case_multigrid(c) && hi > lo;
    char times[128] = "";
    if (timed)
        snprintf(times, sizeof times,
                 "; a run on one GPU times k = %d to %d there first and keeps the fastest", lo, hi);
    if (c->solver.temporal_auto && (k > 1 || timed))
        snprintf(buf, n, " (\"auto\": the fastest measured for %dD %s%s on an H100 with %s%s%s)",
                 c->grid.dims, heat_precision_name(c->solver.precision),
                 c->d.general ? " general cases" : "", fuser, times,
                 be == HEAT_BACKEND_CPU
                     ? "; this run is on the CPU, which runs the steps one by one"
                     : "");
    else if (c->solver.temporal_auto)
        snprintf(buf, n, " (\"auto\": nothing to fuse for %dD %s here: backend, kernel or grid)",
                 c->grid.dims, heat_precision_name(c->solver.precision));
    else if (k == 1)
        buf[0] = '\0';
    else if (be == HEAT_BACKEND_CPU)
        snprintf(buf, n, " (the CPU runs the steps one by one; only %s on the GPU fuses steps)",
                 fuser);
    else if (!fused)
        snprintf(buf, n, " (kernel %s runs the steps one by one; only %s fuses steps)",
                 heat_kernel_name(c->solver.kernel), fuser);
    else if (be == HEAT_BACKEND_CUDA)
        snprintf(buf, n, " (%d steps fused per pass over GPU memory)", k);
    else
        snprintf(buf, n,
                 " (%d steps fused per pass on the GPU with %s; the CPU runs them one by one)", k,
                 fuser);
}

/* Grid, spacing, diffusivity, dt, dt_max and r. */
static void print_numbers(const heat_case *c)
{
    printf("name            %s\n", c->name);
    printf("grid            %lld x %lld x %lld = %lld points (%dD)\n", (long long)c->grid.n[0],
           (long long)c->grid.n[1], (long long)c->grid.n[2], (long long)c->d.points, c->grid.dims);
    printf("spacing         hx %.9g  hy %.9g", c->d.h[0], c->d.h[1]);
    if (c->grid.dims == 3) printf("  hz %.9g", c->d.h[2]);
    printf("\n");
    if (c->materials.count == 0) printf("diffusivity     %.9g\n", c->alpha);
    if (heat_case_steady_multigrid(c)) {
        /* No time steps: the V-cycles are the run's steps. */
        printf("dt              none: multigrid solves for the steady state (the explicit limit "
               "would be dt_max = %.9g)\n",
               c->d.dt_max);
        return;
    }
    printf("dt              %.9g (%s)\n", c->d.dt,
           heat_case_implicit(c) ? "time.dt, implicit"
           : c->time.has_dt      ? (c->time.has_end ? "time.dt, fitted to end" : "time.dt")
           : c->time.has_end     ? "safety * dt_max, fitted to end"
                                 : "safety * dt_max");
    /* dt_max in full, as a user copies it into time.dt: with fewer digits it
     * can round up past the limit. */
    if (c->d.general) {
        printf("dt_max          %.17g (stability: set by the nodes of material \"%s\", counting "
               "each face with the largest conductivity it can have)\n",
               c->d.dt_max, c->materials.m[c->d.dt_material].name);
        return;
    }
    if (heat_case_implicit(c))
        printf(
            "dt_max          %.17g (the explicit limit; implicit steps are stable above it: dt is "
            "%.3g times it)\n",
            c->d.dt_max, c->d.dt / c->d.dt_max);
    else
        printf("dt_max          %.17g (stability: sum of r <= 1/2)\n", c->d.dt_max);
    printf("r = a*dt/h^2    rx %.6g  ry %.6g", c->d.r[0], c->d.r[1]);
    if (c->grid.dims == 3) printf("  rz %.6g", c->d.r[2]);
    printf("  (sum %.6g)\n", c->d.r[0] + c->d.r[1] + c->d.r[2]);
}

/* The stop rules, the faces, the initial condition and the solver. */
static void print_run(const heat_case *c)
{
    if (c->time.has_end && !heat_case_steady_multigrid(c))
        printf("end             t = %.9g at step %lld\n", c->time.end, (long long)c->d.end_step);
    if (c->time.has_max_steps) printf("max_steps       %lld\n", (long long)c->time.max_steps);
    if (c->steady.enabled && heat_case_steady_multigrid(c))
        printf("steady          stop when max|du/dt| <= %.6g, checked after every V-cycle\n",
               c->steady.tolerance);
    else if (c->steady.enabled)
        printf("steady          stop when max|du/dt| <= %.6g, checked every %lld steps\n",
               c->steady.tolerance, (long long)c->steady.check_every);
    if (c->d.stop_step >= 0)
        printf("stops           at step %lld%s\n", (long long)c->d.stop_step,
               c->steady.enabled ? ", or at steady state if sooner" : "");
    else
        printf("stops           at steady state only (no step bound)%s\n",
               c->steady.stall_checks == 0
                   ? "; steady.stall_checks = 0: should the residual stall above the tolerance, "
                     "the run never ends"
                   : "");
    for (int f = 0; f < 2 * c->grid.dims; f++) {
        char bc[96];
        heat_bc_text(&c->bc[f], 0, bc, sizeof bc);
        printf("boundary %s    %s\n", heat_face_name(f), bc);
    }
    printf("initial         %s\n", heat_init_type_name(c->initial.type));
    if (heat_case_multigrid(c)) { /* no stencil kernel or fused steps run */
        printf("solver          backend %s, precision %s, multigrid (solver.kernel and "
               "solver.temporal_block do not apply)\n",
               heat_backend_kind_name(c->solver.backend), heat_precision_name(c->solver.precision));
        return;
    }
    char fusion[160];
    temporal_block_text(c, fusion, sizeof fusion);
    printf("solver          backend %s, precision %s, kernel %s, temporal_block %d%s\n",
           heat_backend_kind_name(c->solver.backend), heat_precision_name(c->solver.precision),
           heat_kernel_name(c->solver.kernel), c->solver.temporal_block, fusion);
}

/* Memory, the output volume, checkpoints and the files. */
static void print_output(const heat_case *c)
{
    const double field = (double)c->d.points * (double)heat_case_value_size(c);
    /* one time level as the backend holds it: on the GPU rows padded to 16
     * bytes, or a multigrid case's planes as its finest level's (mg.h) */
    const double held = (double)heat_backend_held_values(c, NULL) * heat_case_value_size(c);
    char b1[32], b2[32], b3[32];
    int levels = 0;
    double mg = 0;
    heat_error err;
    if (heat_case_multigrid(c) && heat_mg_plan(c, &levels, &mg, &err) == HEAT_OK) {
        /* the materials of a case with several: a byte a node as held */
        const double total = 2 * held + mg + (c->d.general ? held / heat_case_value_size(c) : 0.0);
        heat_cli_human_bytes(b1, sizeof b1, total);
        heat_cli_human_bytes(b2, sizeof b2, mg);
        printf("memory          %s on the device (two time levels of %s values, and %s for the "
               "%d multigrid levels' arrays%s)\n",
               b1, heat_precision_name(c->solver.precision), b2, levels,
               c->d.general ? " and the material classes" : "");
    } else {
        /* the variable-coefficient update reads a class byte a node held */
        heat_cli_human_bytes(b1, sizeof b1,
                             2 * held + (c->d.general ? held / heat_case_value_size(c) : 0.0));
        printf("memory          %s on the device (two time levels of %s values%s)\n", b1,
               heat_precision_name(c->solver.precision),
               c->d.general ? ", and the material classes" : "");
    }
    heat_cli_human_bytes(b1, sizeof b1, field);
    if (c->d.stop_step >= 0) {
        int64_t snaps = 1 + (c->output.every > 0 ? c->d.stop_step / c->output.every : 0);
        if (c->output.every == 0 || c->d.stop_step % c->output.every) snaps++;
        heat_cli_human_bytes(b2, sizeof b2, (double)snaps * field);
        heat_cli_human_bytes(b3, sizeof b3, (double)c->output.keep_checkpoints * field);
        printf("output          %s: %lld snapshots of %s = %s, up to %lld checkpoints = %s\n",
               c->output.dir, (long long)snaps, b1, b2, (long long)c->output.keep_checkpoints, b3);
        /* a checkpoint is written before the oldest kept one goes */
        const double total = ((double)snaps + (double)c->output.keep_checkpoints + 1) * field;
        const double free_b = heat_io_free_bytes(c->output.dir);
        if (free_b >= 0 && total > free_b) {
            heat_cli_human_bytes(b2, sizeof b2, total);
            heat_cli_human_bytes(b3, sizeof b3, free_b);
            printf("note            the output, up to %s%s, is more than the %s free where %s "
                   "would lie: the run would fail part-way with a full disk\n",
                   b2, c->output.compress ? " before compression" : "", b3, c->output.dir);
        }
    } else {
        printf("output          %s: %s per snapshot (%s), count set by when steady state comes\n",
               c->output.dir, b1,
               c->output.every ? "every output.every steps" : "initial and final");
    }
    const double limit = heat_io_file_limit();
    if (limit >= 0 && field > limit) {
        heat_cli_human_bytes(b2, sizeof b2, limit);
        printf("note            a snapshot or checkpoint of %s%s is more than the file size limit "
               "of %s (ulimit -f): every write would fail; raise the limit (ulimit -f unlimited) "
               "or write smaller files (output.compress, solver.precision = \"float\")\n",
               b1, c->output.compress ? " before compression" : "", b2);
    }
    printf("checkpoints     ");
    if (c->output.checkpoint_every > 0)
        printf("every %lld steps, ", (long long)c->output.checkpoint_every);
    if (c->output.checkpoint_wall > 0)
        printf("every %g s of wall time, ", c->output.checkpoint_wall);
    printf("at the end and on SIGINT/SIGTERM/SIGHUP; the newest %lld kept\n",
           (long long)c->output.keep_checkpoints);
    char deflate[32] = "off";
    if (c->output.compress) snprintf(deflate, sizeof deflate, "level %d", c->output.compress);
    printf("files           %s/%s_STEP.vtkhdf, %s_ckpt_STEP.vtkhdf, %s.xmf; deflate %s\n",
           c->output.dir, c->name, c->name, c->name, deflate);
}

/* The grid painted plane by plane (materials, regions, sources): 0, or 2
 * after saying what is wrong (a material file that cannot be read, of
 * another shape or with an index out of range), or 1 where this machine
 * could not do it (out of memory). Before the deck is called valid. */
static int survey(const heat_case *c, heat_materials_survey *sv)
{
    memset(sv, 0, sizeof *sv);
    if (c->materials.count == 0) return 0;
    heat_error err;
    if (heat_materials_survey_grid(c, sv, &err)) {
        const int input = err.code == HEAT_EINPUT;
        fprintf(stderr, "heat: %s%s\n", input ? "invalid deck:\n" : "", err.msg);
        return input ? 2 : 1;
    }
    return 0;
}

/* The materials (each with its nodes), the sources' power, the probes
 * (with or without materials) and the regions that paint nothing. */
static void print_materials(const heat_case *c, const heat_materials_survey *sv)
{
    for (int i = 0; i < c->materials.count; i++) {
        const heat_material *m = &c->materials.m[i];
        printf("material        %s (%d): k %g W/(m K), rho %g kg/m^3, c %g J/(kg K), diffusivity "
               "%.4g; %lld nodes (%.3g%%)\n",
               m->name, i, m->k, m->rho, m->cp, m->k / (m->rho * m->cp), (long long)sv->nodes[i],
               100.0 * (double)sv->nodes[i] / (double)c->d.points);
    }
    if (c->sources.count > 0)
        printf("sources         %d, injecting %.6g W%s\n", c->sources.count, sv->power,
               c->grid.dims == 2 ? " per metre of depth" : "");
    for (int i = 0; i < c->probes.count; i++) {
        const heat_probe *p = &c->probes.p[i];
        printf("probe           %s at node (%lld, %lld, %lld)\n", p->name, (long long)p->node[0],
               (long long)p->node[1], (long long)p->node[2]);
    }
    heat_materials_notice_empty(c, sv->contained, stdout);
}

/* A steady tolerance below what the precision resolves at the deck's values. */
static void print_floor(const heat_case *c)
{
    const double umax = heat_case_value_scale(c);
    const double floor = heat_case_residual_floor(c, umax);
    if (!c->steady.enabled || !(c->steady.tolerance < floor)) return;
    char end[160];
    printf("note            steady.tolerance = %.3g lies below what %s resolves here: rounding "
           "alone leaves max |du/dt| near eps |u|max / dt = %.3g (|u| up to %.3g); the residual "
           "may stall above the tolerance, and then %s. %s a tolerance of at least %.2g\n",
           c->steady.tolerance, heat_precision_name(c->solver.precision), floor, umax,
           heat_case_stall_end(c, end, sizeof end),
           c->solver.precision == HEAT_FLOAT ? "Use double precision or" : "Use", floor);
}

/* A singular steady multigrid problem (no Dirichlet or convective face)
 * has a steady state only when its heat input balances: else 2, after
 * saying why, before the deck is called valid. */
static int multigrid_balance(const heat_case *c)
{
    if (!heat_case_steady_multigrid(c) || !heat_case_singular(c)) return 0;
    heat_error err;
    uint8_t *cls = NULL;
    heat_classes t = {0};
    heat_coeffs k = {0};
    int rc = HEAT_OK;
    if (c->d.general) {
        const int64_t lo[3] = {0, 0, 0};
        cls = malloc((size_t)c->d.points);
        rc = cls ? heat_materials_paint(c, lo, c->grid.n, cls, &t, NULL, &err)
                 : heat_error_set(&err, HEAT_ERUNTIME, "out of memory");
        if (!rc) rc = heat_case_coeffs(c, &t, &k, &err);
    }
    if (!rc) rc = heat_backend_mg_check(c, cls, c->d.general ? &k : NULL, &err);
    heat_coeffs_free(&k);
    free(cls);
    if (rc) {
        fprintf(stderr, "heat: invalid deck:\n%s\n", err.msg);
        return 2;
    }
    return 0;
}

/* Multigrid: the method or scheme, dt against the explicit limit, what a
 * float run can reach, and the kept mean of a singular problem. */
static void print_multigrid(const heat_case *c)
{
    if (!heat_case_multigrid(c)) return;
    if (heat_case_steady_multigrid(c))
        printf("multigrid       steady state solved directly: V(2,2) cycles until max|du/dt| <= "
               "%.6g (each cycle a step of history.csv; time.end and time.dt do not apply)\n",
               c->steady.tolerance);
    else
        printf("multigrid       time.scheme %s: each step one multigrid solve to a residual of "
               "%.3g relative to its right-hand side; dt %.6g = %.4g times the explicit limit "
               "%.6g\n",
               heat_scheme_name(c->time.scheme), c->solver.implicit_tolerance, c->d.dt,
               c->d.dt / c->d.dt_max, c->d.dt_max);
    if (heat_mg_opdep(c)) {
        double lo, hi;
        heat_case_k_range(c, &lo, &hi);
        printf("                the coarse levels interpolate by the faces' conductivities (%g "
               "to %g W/(m K) here; docs/DECK.md, \"Multigrid\")\n",
               lo, hi);
    }
    if (heat_case_implicit(c) && c->solver.implicit_tolerance < heat_case_implicit_floor(c))
        printf("note            solver.implicit_tolerance = %.3g lies below what %s resolves at "
               "this dt (about 16 eps (1 + theta dt / dt_max) = %.2g relative to the right-hand "
               "side): each step's solve then ends at the rounding floor\n",
               c->solver.implicit_tolerance, heat_precision_name(c->solver.precision),
               heat_case_implicit_floor(c));
    /* Crank-Nicolson far above the explicit limit: the fastest modes (rate
     * about 2 / dt_max) keep the factor (1 - r) / (1 + r), r = dt / dt_max. */
    const double r = c->d.dt / c->d.dt_max;
    if (c->time.scheme == HEAT_SCHEME_CRANK_NICOLSON && r > 10) {
        const double g = (r - 1) / (r + 1);
        printf("note            time.scheme = \"crank_nicolson\" at dt = %.4g times the explicit "
               "limit: the grid's fastest modes change sign each step and shrink only by a factor "
               "of about %.6f a step (%.0f steps to fall by 1e3), so a rough field rings; "
               "\"backward_euler\" damps them by %.2g a step\n",
               r, g, ceil(log(1e-3) / log(g)), 1.0 / (1.0 + 2.0 * r));
    }
    if (heat_case_steady_multigrid(c) && heat_case_singular(c))
        printf("note            no Dirichlet or convective face: the steady state is fixed up to a "
               "constant; multigrid keeps the initial (rho c)-weighted mean\n");
}

/* The processes the split is for: the run's ranks (under mpirun), --ranks N,
 * or the product of parallel.ranks. */
static int split_ranks(const heat_case *c, int ranks_opt)
{
    int n = ranks_opt > 0 ? ranks_opt : heat_par_size(heat_par_world());
    if (n == 1 && ranks_opt == 0 && c->parallel.ranks[0] > 0)
        n = c->parallel.ranks[0] * c->parallel.ranks[1] * c->parallel.ranks[2];
    return n;
}

/* The split over n ranks (known to fit). */
static void print_split(const heat_case *c, int n, const int ranks[3])
{
    if (n == 1) {
        printf("split           one process (under mpirun -np N the grid is split over N ranks; "
               "heat check --ranks N shows how)\n");
        return;
    }
    heat_par_print_split(stdout, c, ranks);
    if (heat_case_multigrid(c)) {
        printf("                multigrid: each rank holds its box of the fine levels; from the "
               "first level of at most %d nodes (or where a rank would own fewer than 2 nodes "
               "along a cut axis) every rank holds the coarse levels whole\n",
               HEAT_MG_GATHER_POINTS);
        /* the levels' arrays on top of the two time levels above */
        double lo = 0, hi = 0;
        int split = 0, levels = 0, ok = 1;
        double whole;
        heat_error err;
        ok = heat_mg_plan(c, &levels, &whole, &err) == HEAT_OK;
        for (int r = 0; ok && r < n; r++) {
            double b;
            ok = heat_mg_plan_part(c, ranks, r, &b, &split, &err) == HEAT_OK;
            if (r == 0 || b < lo) lo = b;
            if (r == 0 || b > hi) hi = b;
        }
        if (ok) {
            char a[32], b[32];
            heat_cli_human_bytes(a, sizeof a, lo);
            heat_cli_human_bytes(b, sizeof b, hi);
            printf("                per rank: %s to %s more for the multigrid levels' arrays (its "
                   "box of the %d split level%s, the other %d whole)\n",
                   a, b, split, split == 1 ? "" : "s", levels - split);
        }
    }
    if (heat_par_size(heat_par_world()) != n)
        printf("                (for mpirun -np %d; this check runs as %d process%s)\n", n,
               heat_par_size(heat_par_world()), heat_par_size(heat_par_world()) == 1 ? "" : "es");
    printf("transport       %s; files %s\n", heat_transport_name(c->parallel.transport),
           heat_pio_name(c->parallel.io));
}

int heat_cmd_check(const heat_cli_args *a)
{
    if (!a->deck) {
        fprintf(stderr, "heat check: which deck? (heat check DECK, or '-' for the built-in "
                        "default deck)\n");
        return 2;
    }
    heat_case c;
    if (heat_cli_load_case(a, &c, NULL)) return 2;
    heat_error err;
    if (heat_initial_check_file(&c, stderr, &err) || heat_output_check_path(c.output.dir, &err)) {
        fprintf(stderr, "heat: invalid deck:\n%s\n", err.msg);
        return 2;
    }
    /* A split that does not fit the grid is a deck error too. */
    const int n = split_ranks(&c, a->ranks);
    int ranks[3] = {1, 1, 1};
    if (n > 1 && heat_case_multigrid(&c) && heat_mg_split_check(&c, &err)) { /* as heat run */
        fprintf(stderr, "heat: invalid deck:\n%s\n", err.msg);
        return 2;
    }
    if (n > 1 && heat_decomp_split(&c, n, ranks, &err)) {
        fprintf(stderr, "heat: invalid deck:\n%s\n", err.msg);
        return 2;
    }
    /* What heat run refuses when it sets up: a CPU run is known from the deck
     * (or from a build without CUDA); the files' writing only where the run
     * has several processes. */
    const int on_cpu = c.solver.backend == HEAT_BACKEND_CPU ||
                       (c.solver.backend == HEAT_BACKEND_AUTO && !heat_backend_has_gpu_build());
    if (heat_backend_check_transport(&c, on_cpu, &err) ||
        (n > 1 && heat_output_check_parallel_io(&c, &err))) {
        fprintf(stderr, "heat: invalid deck:\n%s\n", err.msg);
        return 2;
    }
    heat_materials_survey sv;
    const int src = survey(&c, &sv);
    if (src || multigrid_balance(&c)) return src ? src : 2;
    printf("deck %s: valid\n", strcmp(a->deck, "-") ? a->deck : "(built-in default)");
    print_numbers(&c);
    print_materials(&c, &sv);
    print_run(&c);
    print_multigrid(&c);
    print_output(&c);
    print_floor(&c);
    print_split(&c, n, ranks);
    if (heat_output_check_dir(c.output.dir, c.name, HEAT_OUTPUT_NEW, &err))
        printf("note            %s\n", err.msg);
    /* a deck for the GPUs checked where heat has no CUDA (a login node):
     * valid, but this heat would refuse to run it */
    if (heat_backend_check_build(&c, &err))
        printf("note            %s: a heat built with CUDA runs this deck, this one refuses it\n",
               err.msg);
    return 0;
}
