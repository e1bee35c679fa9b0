/* The time loop. heat_run reads as its steps: open the run (a restart or the
 * initial condition, the backend, the output), then chunks of steps that end
 * on every due step, the check on check steps, the outputs due, and the
 * summary. */
#include "driver.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend.h"
#include "deck.h"
#include "h5file.h"
#include "h5part.h"
#include "initial.h"
#include "materials.h"
#include "output.h"
#include "parallel.h"
#include "progress.h"
#include "run_state.h"
#include "signals.h"

const char *heat_stop_reason_text(heat_stop_reason r)
{
    switch (r) {
    case HEAT_STOP_END:
        return "reached time.end";
    case HEAT_STOP_MAX_STEPS:
        return "reached time.max_steps";
    case HEAT_STOP_STEADY:
        return "reached steady state";
    case HEAT_STOP_SIGNAL:
        return "interrupted by a signal";
    case HEAT_STOP_STALLED:
        return "stopped: the residual stalled above steady.tolerance";
    case HEAT_STOP_SOLVE_STALLED:
        return "stopped: an implicit step's solve stalled above solver.implicit_tolerance "
               "(relative to its right-hand side)";
    }
    return "?";
}

/* A steady tolerance below what the precision resolves at the start field's
 * values is said before the run: it may stall instead of stopping. The
 * largest |u| is agreed over the ranks, so that rank 0 says it for all. */
static void notice_floor(const run_state *s, const void *field)
{
    const heat_case *c = s->c;
    if (heat_case_implicit(c) && c->solver.implicit_tolerance < heat_case_implicit_floor(c) &&
        s->opt->notices)
        fprintf(s->opt->notices,
                "notice: solver.implicit_tolerance = %.3g lies below what %s resolves at dt = "
                "%.4g times the explicit limit (about 16 eps (1 + theta dt / dt_max) = %.2g "
                "relative to the right-hand side): each step's solve ends at the rounding floor "
                "instead\n",
                c->solver.implicit_tolerance, heat_precision_name(c->solver.precision),
                c->d.dt / c->d.dt_max, heat_case_implicit_floor(c));
    if (!c->steady.enabled) return;
    double umax = heat_field_max_abs(c, field, field_points(s));
    heat_par_max(s->par, &umax, 1);
    const double floor = heat_case_residual_floor(c, umax);
    char end[160];
    if (s->opt->notices && c->steady.tolerance < floor)
        fprintf(s->opt->notices,
                "notice: steady.tolerance = %.3g lies below what %s resolves here: rounding "
                "alone leaves max |du/dt| near eps |u|max / dt = %.3g (|u|max = %.3g, dt = "
                "%.3g%s); the residual may stall above the tolerance, and then %s. %s a "
                "tolerance of at least %.2g\n",
                c->steady.tolerance, heat_precision_name(c->solver.precision), floor, umax,
                heat_case_steady_multigrid(c) ? c->d.dt_max : c->d.dt,
                heat_case_steady_multigrid(c) ? ", the explicit limit" : "",
                heat_case_stall_end(c, end, sizeof end),
                c->solver.precision == HEAT_FLOAT ? "Use double precision or" : "Use", floor);
}

static void *backend_host_alloc(size_t bytes, void *ctx)
{
    return heat_backend_host_alloc(ctx, bytes);
}

static void backend_host_free(void *p, void *ctx)
{
    heat_backend_host_free(ctx, p);
}

/* The backend holding the field: the whole grid, or this rank's part with
 * its halos moved over MPI (collective). */
static int create_backend(run_state *s, heat_error *err)
{
    if (!s->par) return heat_backend_create(s->c, s->opt->notices, &s->b, err);
    heat_halo_comm hc;
    heat_par_halo_comm(s->par, &hc);
    int rc = heat_backend_create_part(s->c, &s->part, &hc, s->opt->notices, &s->b, err);
    return agree(s, rc, err);
}

/* The material index of the part's nodes (s->part), cut from the classes
 * of the class box [lo, lo + n), for the field files. */
static int keep_material(run_state *s, const uint8_t *cls, const heat_classes *t,
                         const int64_t lo[3], const int64_t n[3], heat_error *err)
{
    const int64_t *pl = s->part.lo, *pn = s->part.n;
    s->material = malloc((size_t)(pn[0] * pn[1] * pn[2]));
    if (!s->material)
        return heat_error_set(err, HEAT_ERUNTIME, "out of memory for the material index");
    uint8_t *m = s->material;
    for (int64_t k = 0; k < pn[2]; k++)
        for (int64_t j = 0; j < pn[1]; j++) {
            const uint8_t *row =
                cls + ((pl[2] - lo[2] + k) * n[1] + (pl[1] - lo[1] + j)) * n[0] + (pl[0] - lo[0]);
            for (int64_t i = 0; i < pn[0]; i++) *m++ = t->material[row[i]];
        }
    return HEAT_OK;
}

/* The variable-coefficient update: the classes of the box the backend
 * holds, painted here, and the tables (collective). Regions that contain no
 * node of the whole grid are said once. */
static int setup_classes(run_state *s, heat_error *err)
{
    const heat_case *c = s->c;
    if (!c->d.general) return HEAT_OK;
    int64_t lo[3], n[3];
    heat_backend_class_box(s->b, lo, n);
    uint8_t *cls = malloc((size_t)(n[0] * n[1] * n[2]));
    heat_classes t = {0};
    heat_coeffs k = {0};
    int contained[HEAT_SHAPES_MAX] = {0};
    int rc = cls ? heat_materials_paint(c, lo, n, cls, &t, contained, err)
                 : heat_error_set(err, HEAT_ERUNTIME, "out of memory for the material classes");
    if (!rc) rc = heat_case_coeffs(c, &t, &k, err);
    if (!rc) rc = heat_backend_set_classes(s->b, cls, &k, err);
    if (!rc && heat_case_writes_material(c)) rc = keep_material(s, cls, &t, lo, n, err);
    heat_coeffs_free(&k);
    free(cls);
    if ((rc = agree(s, rc, err))) return rc;
    double any[HEAT_SHAPES_MAX];
    for (int r = 0; r < HEAT_SHAPES_MAX; r++) any[r] = contained[r];
    heat_par_max(s->par, any, HEAT_SHAPES_MAX);
    for (int r = 0; r < HEAT_SHAPES_MAX; r++) contained[r] = any[r] > 0;
    heat_materials_notice_empty(c, contained, s->opt->notices);
    return HEAT_OK;
}

/* A row of history.csv at s->step: the residual (NaN: none) and the field's
 * minimum, maximum and mean over every rank. */
static int history_row(run_state *s, double residual, double wall, heat_error *err)
{
    const heat_case *c = s->c;
    heat_history_row r = {s->step, heat_case_time(c, s->step), residual, wall, NAN, NAN, NAN, NAN,
                          -1};
    if (heat_case_multigrid(c) && !isnan(residual)) {
        r.reduction = s->mg.reduction;
        r.cycles = s->mg.cycles;
    }
    double mm[2] = {0, 0}, sum = 0;
    int rc = heat_backend_field_stats(s->b, &mm[0], &mm[1], &sum, err);
    rc = agree(s, rc, err);
    if (rc) return rc;
    mm[0] = -mm[0]; /* the minimum as the maximum of the negatives */
    heat_par_max(s->par, mm, 2);
    heat_par_sum(s->par, &sum, 1);
    r.min = -mm[0], r.max = mm[1], r.mean = sum / (double)c->d.points;
    return agree(s, heat_output_history_row(s->out, &r, err), err);
}

/* A row of probes.csv: each probe's node is read by the rank that owns it. */
static int probes_row(run_state *s, heat_error *err)
{
    const heat_case *c = s->c;
    if (c->probes.count == 0) return HEAT_OK;
    double v[HEAT_PROBES_MAX];
    int64_t at[HEAT_PROBES_MAX];
    int mine[HEAT_PROBES_MAX], n = 0;
    for (int i = 0; i < c->probes.count; i++) {
        const int64_t *g = c->probes.p[i].node, *lo = s->part.lo, *pn = s->part.n;
        v[i] = -INFINITY;
        if (g[0] < lo[0] || g[0] >= lo[0] + pn[0] || g[1] < lo[1] || g[1] >= lo[1] + pn[1] ||
            g[2] < lo[2] || g[2] >= lo[2] + pn[2])
            continue;
        at[n] = ((g[2] - lo[2]) * pn[1] + (g[1] - lo[1])) * pn[0] + (g[0] - lo[0]);
        mine[n++] = i;
    }
    double got[HEAT_PROBES_MAX];
    int rc = heat_backend_sample(s->b, n, at, got, err);
    if ((rc = agree(s, rc, err))) return rc;
    for (int i = 0; i < n; i++) v[mine[i]] = got[i];
    heat_par_max(s->par, v, c->probes.count);
    return agree(s, heat_output_probes(s->out, s->step, heat_case_time(c, s->step), v, err), err);
}

/* Work that every rank must finish for its neighbours not to wait forever:
 * a rank that fails in it cannot take part in the next agreement, and ends
 * the run (MPI_Abort) after saying why. */
static int collective_or_abort(run_state *s, int rc, heat_error *err)
{
    if (rc && s->par) heat_par_abort(s->par, 1, err->msg);
    return rc;
}

/* Multigrid: the hierarchy (split over the ranks under MPI, kernels/mg.h),
 * whose build may refuse the deck: alike on every rank, before any
 * exchange, so agreed. Any other failure (memory, the GPU) may leave the
 * other ranks inside the build's exchanges: it ends the run. */
static int setup_multigrid(run_state *s, heat_error *err)
{
    if (!heat_case_multigrid(s->c)) return HEAT_OK;
    const int rc = heat_backend_mg_setup(s->b, err);
    if (rc == HEAT_EINPUT) return agree(s, rc, err);
    return agree(s, collective_or_abort(s, rc, err), err);
}

/* The field files' writer and the output directory (rank 0's). */
static int open_output(run_state *s, const char *deck_text, heat_output_mode mode, heat_error *err)
{
    /* The output buffers are the backend's host memory: page-locked on
     * the GPU, so that the copies for outputs run at full speed. */
    heat_output_options oo = {.mode = mode,
                              .start_step = s->step,
                              .deck_text = deck_text,
                              .alloc = {backend_host_alloc, backend_host_free, s->b},
                              .notices = s->opt->notices,
                              .material = s->material};
    int rc = HEAT_OK;
    if (s->par) {
        rc = agree(s, heat_par_writer(s->par, s->c, &s->part, &s->writer, err), err);
        oo.dist = s->writer;
        oo.field_points = field_points(s);
        oo.inline_writes = !heat_par_threads(s->par);
    }
    if (!rc) rc = agree(s, heat_output_open(s->c, &oo, &s->out, err), err);
    return rc;
}

/* Whether `path` is this run's checkpoint of its step in output.dir (the
 * same file, however the path is written); rank 0 looks, every rank agrees. */
static int is_own_checkpoint(run_state *s, const char *path)
{
    double own = 0;
    if (heat_par_rank(s->par) == 0) {
        char mine[HEAT_PATH_MAX + HEAT_NAME_MAX + 64];
        heat_output_checkpoint_path(mine, sizeof mine, s->c->output.dir, s->c->name, s->step);
        struct stat a, b;
        own = stat(path, &a) == 0 && stat(mine, &b) == 0 && a.st_dev == b.st_dev &&
              a.st_ino == b.st_ino;
    }
    if (s->par) heat_par_bcast(s->par, &own, sizeof own);
    return own != 0;
}

/* The starting field, the backend holding it, and the output directory. */
static int open_run(run_state *s, const char *deck_text, heat_output_mode mode, heat_error *err)
{
    const heat_case *c = s->c;
    const size_t bytes = (size_t)field_points(s) * heat_case_value_size(c);
    void *field = malloc(bytes);
    restart_file r;
    memset(&r, 0, sizeof r);
    int rc =
        field ? HEAT_OK
              : heat_error_set(err, HEAT_ERUNTIME, "cannot allocate %.3g GB for the initial field",
                               (double)bytes / 1e9);
    rc = agree(s, rc, err);
    if (!rc) rc = heat_run_start_field(s, field, &r, err);
    if (!rc) notice_floor(s, field);
    if (!rc) rc = create_backend(s, err);
    if (!rc) rc = setup_classes(s, err);
    if (!rc) rc = heat_restart_check_materials(s, &r, err);
    if (!rc) rc = setup_multigrid(s, err);
    if (!rc) rc = collective_or_abort(s, heat_backend_upload(s->b, field, err), err);
    free(field);
    if (!rc) rc = open_output(s, deck_text, mode, err);
    /* The file restarted from is where it was; no need to write it again
     * when it is one of this run's checkpoints. One elsewhere is not: a later
     * --restart latest in output.dir must find this state there. */
    if (!rc && r.have && r.meta.kind == HEAT_FILE_CHECKPOINT && is_own_checkpoint(s, r.path))
        s->last_checkpoint = s->step;
    if (!rc && !s->opt->quiet) {
        fprintf(s->opt->out, "heat: %s: %lld x %lld x %lld points, dt %.6g, on %s", c->name,
                (long long)c->grid.n[0], (long long)c->grid.n[1], (long long)c->grid.n[2], c->d.dt,
                heat_backend_describe(s->b));
        if (s->par)
            fprintf(s->opt->out, ", %d ranks (%d x %d x %d)", s->part.size, s->part.ranks[0],
                    s->part.ranks[1], s->part.ranks[2]);
        fprintf(s->opt->out, "\n");
        if (r.have)
            fprintf(s->opt->out, "heat: continuing from %s at step %lld, t = %.9g\n", r.path,
                    (long long)s->step, r.meta.time);
    }
    heat_file_meta_free(&r.meta);
    return rc;
}

/* ---- the loop's steps ------------------------------------------------------ */

/* The next step > step that is a multiple of every (every > 0). */
static int64_t next_multiple(int64_t step, int64_t every)
{
    return (step / every + 1) * every;
}

/* The next step after s->step at which something is due: a check, a
 * snapshot, a checkpoint or the end. */
static int64_t next_due_step(const run_state *s)
{
    const heat_case *c = s->c;
    int64_t due = next_multiple(s->step, c->d.check_every);
    if (c->output.every > 0) {
        int64_t n = next_multiple(s->step, c->output.every);
        if (n < due) due = n;
    }
    if (c->output.checkpoint_every > 0) {
        int64_t n = next_multiple(s->step, c->output.checkpoint_every);
        if (n < due) due = n;
    }
    if (c->d.stop_step >= 0 && c->d.stop_step < due) due = c->d.stop_step;
    return due;
}

/* The chunk size for the next call, from how long this one took: about
 * 0.05 to 0.2 s of work per call. */
static void adapt_chunk(run_state *s, int64_t chunk, double seconds)
{
    const int64_t kblock = s->c->solver.temporal_block;
    if (seconds < 0.05 && chunk == s->chunk_max && s->chunk_max < (INT64_C(1) << 40))
        s->chunk_max = 2 * s->chunk_max;
    else if (seconds > 0.2 && s->chunk_max > kblock)
        s->chunk_max = (s->chunk_max / 2 + kblock - 1) / kblock * kblock;
}

/* `steps` steps, with the residual of the last in s->residual when `want`
 * says so. A check's history row left pending is written while the steps
 * run: the backend queues them behind that check's statistics. Returns the
 * backend's outcome, which may be one rank's alone; the row's, agreed over
 * the ranks, goes to *row (its message to err where the steps succeeded),
 * and the steps are waited for either way, so that every rank has run the
 * same steps and their exchanges. */
static int advance(run_state *s, int64_t steps, int want, int *row, heat_error *err)
{
    *row = HEAT_OK;
    double *resid = want ? &s->residual : NULL;
    if (!s->row_pending) return heat_backend_advance(s->b, steps, resid, err);
    s->row_pending = 0;
    int rc = heat_backend_queue(s->b, steps, want, err);
    if (rc) return rc;
    heat_error row_err;
    heat_error_clear(&row_err);
    *row = history_row(s, s->residual, s->row_wall, &row_err);
    rc = heat_backend_wait(s->b, resid, err);
    if (!rc && *row) *err = row_err;
    return rc;
}

/* Advances toward `due` by one chunk (at most chunk_max steps), with the
 * residual when the chunk ends on a check step. Sets *check and *wall (the
 * loop's seconds). With ranks: the residual (a max, exact in any order), the
 * chunk's and the loop's seconds (the slowest rank's) and a signal caught by
 * any rank are agreed, so that every rank takes the same next step. */
static int run_chunk(run_state *s, int64_t due, int *check, double *wall, int *signal,
                     heat_error *err)
{
    const heat_case *c = s->c;
    int64_t chunk = due - s->step;
    if (chunk > s->chunk_max) chunk = s->chunk_max;
    const int64_t next = s->step + chunk;
    *check = next % c->d.check_every == 0 || next == c->d.stop_step;
    const double a0 = heat_wall_seconds();
    /* Implicit steps always say their residual: a step whose solve stalls
     * ends the chunk there and is checked. */
    const int implicit = heat_case_implicit(c);
    int row;
    int rc = advance(s, chunk, *check || implicit, &row, err);
    if (collective_or_abort(s, rc, err)) return rc;
    if (row) return row; /* agreed: every rank ends here, one message */
    const double a1 = heat_wall_seconds();
    s->step = next;
    if (heat_case_multigrid(c)) {
        heat_backend_mg_info(s->b, &s->mg);
        if (s->mg.stalled) {
            s->step = next - chunk + s->mg.steps_done;
            *check = 1;
        }
    }
    double v[4] = {a1 - a0, a1 - s->t0, *check ? s->residual : 0, heat_signals_caught()};
    heat_par_max(s->par, v, 4);
    if (*check) s->residual = v[2];
    *signal = (int)v[3];
    adapt_chunk(s, chunk, v[0]);
    *wall = v[1];
    return HEAT_OK;
}

/* A steady check that misses the tolerance: the residual of forward Euler
 * with r <= 1/2 never grows (max |du/dt| is contracted by each step), so a
 * residual that sets no new low for steady.stall_checks checks has hit what
 * the precision can resolve. Returns 1 then. (The residual is agreed over
 * the ranks, so every rank decides alike.) */
static int stalled(run_state *s)
{
    if (s->residual < s->best_residual) {
        s->best_residual = s->residual;
        s->best_step = s->step;
        s->checks_no_best = 0;
        return 0;
    }
    s->checks_no_best++;
    return s->c->steady.stall_checks > 0 && s->checks_no_best >= s->c->steady.stall_checks;
}

/* " (this deck's conductivities range from A to B W/(m K))" where it has
 * several materials, else "": for the messages of cycles that diverge. */
typedef struct {
    char text[96];
} contrast_text;
static contrast_text contrast_words(const heat_case *c)
{
    contrast_text t = {""};
    double kmin, kmax;
    heat_case_k_range(c, &kmin, &kmax);
    if (c->materials.count > 1)
        snprintf(t.text, sizeof t.text, " (this deck's conductivities range from %g to %g W/(m K))",
                 kmin, kmax);
    return t;
}

/* Steady V-cycles that diverge: the residual HEAT_MG_DIVERGED times its
 * lowest (or the tolerance, if that is larger). The cycles converge
 * (every cycle cuts the residual) where the coarse levels' rediscretised
 * operators stand for the fine one; with a strong contrast of conductivities
 * they may not (docs/DECK.md, "Multigrid"), and a correction that
 * overshoots grows the error by a factor each cycle. A converging run never
 * comes near the factor: near its rounding floor the residual wanders by a
 * few times at most. Returns the error, or HEAT_OK. */
#define HEAT_MG_DIVERGED 1e3
#define MG_DIVERGE_WHY                                                                             \
    "The coarse levels' operators do not represent this deck's conductivities well enough for "    \
    "the cycles to converge"
static int check_diverged(const run_state *s, heat_error *err)
{
    const heat_case *c = s->c;
    if (!heat_case_multigrid(c) || !isfinite(s->best_residual) ||
        s->residual <= HEAT_MG_DIVERGED * fmax(s->best_residual, c->steady.tolerance))
        return HEAT_OK;
    return heat_error_set(
        err, HEAT_ERUNTIME,
        "the multigrid V-cycles diverge: the residual max |du/dt| grew to %.6e at cycle %lld, "
        "more than %.0f times its lowest, %.6e at cycle %lld; the diverged field is not "
        "written. " MG_DIVERGE_WHY "%s: reach the steady state with steady.method = "
        "\"explicit\" (time marching) instead (docs/DECK.md, \"Multigrid\")",
        s->residual, (long long)s->step, HEAT_MG_DIVERGED, s->best_residual,
        (long long)s->best_step, contrast_words(c).text);
}

/* A check step: the residual must be finite; sets *stop to
 * HEAT_STOP_STEADY when the steady tolerance is met, or to
 * HEAT_STOP_STALLED when the residual has stopped falling (else -1).
 * (history.csv's row: check_rows.) */
static int check_step(run_state *s, heat_run_result *res, int *stop, heat_error *err)
{
    const heat_case *c = s->c;
    const double t = heat_case_time(c, s->step);
    res->last_residual = s->residual;
    if (!isfinite(s->residual))
        return heat_error_set(err, HEAT_ERUNTIME,
                              "the field is no longer finite at step %lld (t = %.9g): NaN or Inf "
                              "found in the residual check; no checkpoint of it is written. Look "
                              "at the initial and boundary values, or use a smaller time.dt",
                              (long long)s->step, t);
    *stop = -1;
    if (s->mg.diverged)
        return heat_error_set(
            err, HEAT_ERUNTIME,
            "step %lld's multigrid solve diverges: its residual grew to %.3g times its first "
            "over %lld V-cycles; the step's field is not written. " MG_DIVERGE_WHY
            "%s: take a smaller time.dt (the cycles converge where the heat capacity "
            "term weighs more) or march it with time.scheme = \"explicit\" (docs/DECK.md, "
            "\"Multigrid\")",
            (long long)s->step, s->mg.growth, (long long)s->mg.cycles, contrast_words(c).text);
    if (s->mg.stalled) {
        *stop = HEAT_STOP_SOLVE_STALLED;
        if (s->opt->notices && s->mg.zero_rhs)
            fprintf(s->opt->notices,
                    "notice: step %lld: its multigrid solve stopped improving after %lld V-cycles "
                    "with the residual at %.3g of its first (its right-hand side is zero), above "
                    "what rounding in %s leaves\n",
                    (long long)s->step, (long long)s->mg.cycles, s->mg.reduction,
                    heat_precision_name(c->solver.precision));
        else if (s->opt->notices)
            fprintf(s->opt->notices,
                    "notice: step %lld: its multigrid solve stopped improving after %lld V-cycles "
                    "with the residual at %.3g relative to the right-hand side, not at "
                    "solver.implicit_tolerance = %.3g, and above what rounding in %s leaves\n",
                    (long long)s->step, (long long)s->mg.cycles, s->mg.reduction,
                    c->solver.implicit_tolerance, heat_precision_name(c->solver.precision));
    } else if (c->steady.enabled && s->step % c->d.check_every == 0) {
        if (s->residual <= c->steady.tolerance)
            *stop = HEAT_STOP_STEADY;
        else if (check_diverged(s, err))
            return HEAT_ERUNTIME;
        else if (stalled(s))
            *stop = HEAT_STOP_STALLED;
    }
    return HEAT_OK;
}

/* Hands the field at s->step to the writer as what of `kinds` has not been
 * written at this step yet: one download for a snapshot and a checkpoint.
 * With ranks every rank submits the same files or none (each file is
 * written by all of them together). `now`: the loop's clock. */
static int write_fields(run_state *s, int kinds, double now, heat_error *err)
{
    if (s->last_snapshot == s->step) kinds &= ~HEAT_OUTPUT_SNAPSHOT;
    if (s->last_checkpoint == s->step) kinds &= ~HEAT_OUTPUT_CHECKPOINT;
    if (!kinds) return HEAT_OK;
    void *buf = NULL;
    int rc = heat_output_acquire(s->out, &buf, err);
    if (!rc) rc = heat_backend_download(s->b, buf, err);
    /* A field that blew up between checks is never written. */
    const int64_t bad =
        rc ? -1 : heat_first_nonfinite(buf, field_points(s), s->c->solver.precision);
    if (bad >= 0) {
        char node[96];
        heat_node_text(s->part.lo, s->part.n, bad, node, sizeof node);
        rc = heat_error_set(err, HEAT_ERUNTIME,
                            "the field is no longer finite at step %lld (t = %.9g): NaN or Inf at "
                            "node %s; no file of it is written. Look at the initial and boundary "
                            "values, or use a smaller time.dt",
                            (long long)s->step, heat_case_time(s->c, s->step), node);
    }
    if (agree(s, rc, err)) {
        if (buf) heat_output_release(s->out, buf);
        return err->code;
    }
    /* The stall check's state at this step goes with its checkpoint. */
    const heat_output_steady st = {s->c->steady.enabled && isfinite(s->best_residual),
                                   s->best_residual, s->best_step, s->checks_no_best};
    rc = heat_output_submit(s->out, buf, s->step, heat_case_time(s->c, s->step), kinds, &st, err);
    if (rc) return agree(s, rc, err);
    if (kinds & HEAT_OUTPUT_SNAPSHOT) s->last_snapshot = s->step;
    if (kinds & HEAT_OUTPUT_CHECKPOINT) {
        s->last_checkpoint = s->step;
        s->last_checkpoint_wall = now;
    }
    return agree(s, HEAT_OK, err);
}

/* The snapshot and checkpoint due at s->step (by step count or wall time). */
static int due_outputs(const run_state *s, double now)
{
    const heat_case *c = s->c;
    int kinds = 0;
    if (c->output.every > 0 && s->step % c->output.every == 0) kinds |= HEAT_OUTPUT_SNAPSHOT;
    if (c->output.checkpoint_every > 0 && s->step % c->output.checkpoint_every == 0)
        kinds |= HEAT_OUTPUT_CHECKPOINT;
    if (c->output.checkpoint_wall > 0 && now - s->last_checkpoint_wall >= c->output.checkpoint_wall)
        kinds |= HEAT_OUTPUT_CHECKPOINT;
    return kinds;
}

/* A check's rows (history.csv, probes.csv): now, or, where the backend
 * queues steps and the loop goes on with nothing else at this step (`now`:
 * it stops, or files are due), while the next steps run (advance), so that
 * the GPU does not wait for the host's file writes. The statistics that the
 * row needs came back with the residual; probes read the field itself, so
 * with probes the rows are written now. */
static int check_rows(run_state *s, double wall, int now, heat_error *err)
{
    if (!now && heat_backend_queues(s->b) && s->c->probes.count == 0) {
        s->row_pending = 1;
        s->row_wall = wall;
        return HEAT_OK;
    }
    int rc = history_row(s, s->residual, wall, err);
    return rc ? rc : probes_row(s, err);
}

static heat_stop_reason stop_reason_at(const heat_case *c, int64_t step)
{
    return (c->d.end_step >= 0 && step >= c->d.end_step) ? HEAT_STOP_END : HEAT_STOP_MAX_STEPS;
}

/* Chunks until a stop rule holds; res->reason says which. */
static int time_loop(run_state *s, heat_run_result *res, heat_error *err)
{
    const heat_case *c = s->c;
    const int64_t stop = c->d.stop_step;
    if (stop >= 0 && s->step >= stop) {
        res->reason = stop_reason_at(c, s->step);
        return HEAT_OK;
    }
    double early = heat_signals_caught(); /* before the first step: stop where the run starts */
    heat_par_max(s->par, &early, 1);
    if (early) {
        res->reason = HEAT_STOP_SIGNAL;
        res->signal = (int)early;
        return HEAT_OK;
    }
    for (;;) {
        int check, stopped = 0, signal = 0, rc = HEAT_OK, why = -1;
        double wall;
        if ((rc = run_chunk(s, next_due_step(s), &check, &wall, &signal, err))) return rc;
        if (check && (rc = check_step(s, res, &why, err))) return rc;
        if (why >= 0) {
            res->reason = (heat_stop_reason)why;
            stopped = 1;
        } else if (signal) {
            res->reason = HEAT_STOP_SIGNAL;
            res->signal = signal;
            stopped = 1;
        } else if (stop >= 0 && s->step >= stop) {
            res->reason = stop_reason_at(c, s->step);
            stopped = 1;
        }
        const int kinds = stopped ? 0 : due_outputs(s, s->t0 + wall);
        /* history.csv is rank 0's: its failure stops every rank. */
        if (check && (rc = agree(s, check_rows(s, wall, stopped || kinds, err), err))) return rc;
        /* A signal stops the run off the check steps too: the row of its last
         * step, without a residual (none was computed there). */
        if (!check && stopped && (rc = history_row(s, NAN, wall, err))) return rc;
        const double rate = (double)(s->step - res->start_step) / (wall > 0 ? wall : 1e-9);
        heat_progress_update(&s->progress, s->t0 + wall, s->step, stop, heat_case_time(c, s->step),
                             rate, rate * (double)c->d.points / 1e9, s->residual);
        /* The last step's outputs are written by the caller, in one go. */
        if (stopped) return HEAT_OK;
        if (kinds && (rc = write_fields(s, kinds, s->t0 + wall, err))) return rc;
    }
}

/* With ranks: the split, the transport and the halo exchange's cost (the
 * slowest rank's), agreed. */
static void halo_figures(run_state *s, heat_run_result *res)
{
    if (!s->par) return;
    /* The loop's share: the upload's and the warm-up's exchanges left out. */
    heat_halo_stats st;
    heat_backend_halo_stats(s->b, &st);
    const heat_halo_stats *h0 = &s->halo0;
    double v[5] = {st.exposed - h0->exposed, st.pack - h0->pack, st.transfer - h0->transfer,
                   st.unpack - h0->unpack, (double)(st.exchanges - h0->exchanges)};
    heat_par_max(s->par, v, 5);
    res->ranks = s->part.size;
    memcpy(res->split, s->part.ranks, sizeof res->split);
    res->halo_depth = s->part.depth;
    res->halo_exposed = v[0];
    res->halo_pack = v[1];
    res->halo_transfer = v[2];
    res->halo_unpack = v[3];
    res->halo_exchanges = (int64_t)v[4];
    snprintf(res->transport, sizeof res->transport, "%s", st.transport);
    snprintf(res->writer, sizeof res->writer, "%s", heat_h5dist_method(s->writer));
}

/* The figures of the result and, unless quiet, the summary. */
static void summary(run_state *s, heat_run_result *res)
{
    const heat_case *c = s->c;
    res->final_step = s->step;
    res->final_time = heat_case_time(c, s->step);
    const double updates = (double)(s->step - res->start_step) * (double)c->d.points;
    res->glups = res->wall > 0 ? updates / res->wall / 1e9 : 0;
    res->gbps = res->glups * 2.0 * (double)heat_case_value_size(c);
    res->files = heat_output_files_written(s->out);
    if (heat_case_multigrid(c)) {
        heat_mg_info mi;
        heat_backend_mg_info(s->b, &mi);
        res->mg_cycles = mi.total_cycles;
        res->mg_reduction = mi.reduction;
        res->mg_zero_rhs = mi.zero_rhs;
        snprintf(res->mg_text, sizeof res->mg_text, "%s", mi.text);
    }
    if (s->opt->quiet) return;
    FILE *out = s->opt->out;
    int64_t snaps, ckpts;
    heat_output_counts(s->out, &snaps, &ckpts);
    fprintf(out, "heat: %s at step %lld, t = %.9g\n", heat_stop_reason_text(res->reason),
            (long long)s->step, res->final_time);
    fprintf(out,
            "  steps %lld (from %lld), simulated time %.9g, wall %.3f s, %.3f GLUP/s, "
            "%.2f GB/s effective\n",
            (long long)(s->step - res->start_step), (long long)res->start_step,
            res->final_time - heat_case_time(c, res->start_step), res->wall, res->glups, res->gbps);
    if (!isnan(res->last_residual))
        fprintf(out, "  last residual max|du/dt| = %.6e\n", res->last_residual);
    /* Cycles stopped by time.max_steps before they would count as diverging
     * (check_diverged) but well above their best: say so, the run stands. */
    if (heat_case_steady_multigrid(c) && res->reason == HEAT_STOP_MAX_STEPS &&
        isfinite(s->best_residual) && res->last_residual > 10.0 * s->best_residual)
        fprintf(out,
                "  warning: the residual ended %.3g times above its lowest (%.6e at cycle %lld): "
                "the V-cycles were not converging (docs/DECK.md, \"Multigrid\")\n",
                res->last_residual / s->best_residual, s->best_residual, (long long)s->best_step);
    if (heat_case_multigrid(c))
        fprintf(out, "  multigrid: %lld V-cycles%s; %s\n", (long long)res->mg_cycles,
                heat_case_implicit(c) ? " in all" : "", res->mg_text);
    if (res->ranks > 1) {
        fprintf(out, "  ranks %d, split %d x %d x %d, halos %d deep over %s, files %s\n",
                res->ranks, res->split[0], res->split[1], res->split[2], res->halo_depth,
                res->transport, res->writer);
        fprintf(out,
                "  halo exchange: %lld exchanges; not hidden by compute %.3f s = %.1f%% of the "
                "loop (slowest rank; pack %.3f s, transfer %.3f s, unpack %.3f s)\n",
                (long long)res->halo_exchanges, res->halo_exposed,
                res->wall > 0 ? 100.0 * res->halo_exposed / res->wall : 0.0, res->halo_pack,
                res->halo_transfer, res->halo_unpack);
    }
    fprintf(out,
            "  files written: %lld in %s (history.csv, %s%s.xmf, %lld snapshot%s, %lld "
            "checkpoint%s)\n",
            (long long)res->files, heat_output_dir(s->out),
            c->probes.count > 0 ? "probes.csv, " : "", c->name, (long long)snaps,
            snaps == 1 ? "" : "s", (long long)ckpts, ckpts == 1 ? "" : "s");
}

/* This rank's part: the decomposition when the run has ranks (collective),
 * else the whole grid. */
static int decompose(run_state *s, heat_par *par, heat_error *err)
{
    int rc = HEAT_OK;
    if (par) {
        rc = heat_par_agree(par, heat_par_decompose(par, s->c, &s->part, err), err);
        if (!rc && heat_par_size(par) > 1) s->par = par;
    }
    if (!rc && !s->par) {
        memset(&s->part, 0, sizeof s->part);
        for (int a = 0; a < 3; a++) s->part.n[a] = s->c->grid.n[a], s->part.ranks[a] = 1;
        for (int f = 0; f < HEAT_NFACES; f++) s->part.peer[f] = -1;
        s->part.size = s->part.depth = 1;
    }
    return rc;
}

int heat_run(const heat_case *deck_case, const char *deck_text, const heat_run_options *opt,
             heat_run_result *res, heat_error *err)
{
    memset(res, 0, sizeof *res);
    res->last_residual = NAN;
    res->ranks = 1;
    heat_error_clear(err);
    const heat_output_mode mode = opt->restart     ? HEAT_OUTPUT_CONTINUE
                                  : opt->overwrite ? HEAT_OUTPUT_OVERWRITE
                                                   : HEAT_OUTPUT_NEW;
    heat_par *par = heat_par_world();
    /* Everything that can be refused is checked before anything is written
     * (the directory by rank 0, for every rank). */
    int rc = heat_par_rank(par) == 0
                 ? heat_output_check_dir(deck_case->output.dir, deck_case->name, mode, err)
                 : HEAT_OK;
    if ((rc = heat_par_agree(par, rc, err))) return rc;
    run_state s = {.opt = opt,
                   .last_snapshot = -1,
                   .last_checkpoint = -1,
                   .residual = NAN,
                   .best_residual = INFINITY};
    if (!(s.c = malloc(sizeof *s.c))) return heat_error_set(err, HEAT_ERUNTIME, "out of memory");
    *s.c = *deck_case;
    s.chunk_max = s.c->solver.temporal_block;
    if ((rc = decompose(&s, par, err))) goto done;
    if ((rc = open_run(&s, deck_text, mode, err))) goto done;

    heat_signals_install();
    heat_progress_init(&s.progress, opt->out, opt->quiet);
    /* mpirun gives rank 0 a terminal of its own even when its output goes to
     * a file: log lines, not a status line rewritten in place. */
    if (s.par && s.progress.mode == 1) s.progress.mode = 2, s.progress.interval = 5.0;
    res->start_step = s.step;
    if ((rc = history_row(&s, NAN, 0.0, err))) goto done;
    if (s.step == 0) rc = write_fields(&s, HEAT_OUTPUT_SNAPSHOT, heat_wall_seconds(), err);
    if (rc) goto done;
    /* The loop's clock starts after the first snapshot is handed over (its
     * buffers are allocated then), so that throughput measures the loop. */
    if ((rc = agree(&s, heat_backend_warm(s.b, err), err))) goto done;
    if (s.par) heat_backend_halo_stats(s.b, &s.halo0);
    s.t0 = s.last_checkpoint_wall = heat_wall_seconds();
    if ((rc = time_loop(&s, res, err))) goto done;
    heat_progress_clear(&s.progress);
    res->wall = heat_wall_seconds() - s.t0;

    /* The final state: always a snapshot and a checkpoint, complete on disk
     * before the run reports (a signal included). */
    rc = write_fields(&s, HEAT_OUTPUT_SNAPSHOT | HEAT_OUTPUT_CHECKPOINT, heat_wall_seconds(), err);
    if (!rc) rc = agree(&s, heat_output_flush(s.out, err), err);
    if (!rc && opt->field_out) rc = heat_backend_download(s.b, opt->field_out, err);
    if (!rc) {
        halo_figures(&s, res);
        summary(&s, res);
    }
done:
    heat_output_close(s.out);
    heat_h5dist_destroy(s.writer);
    heat_backend_destroy(s.b);
    free(s.material);
    free(s.c);
    return rc;
}
