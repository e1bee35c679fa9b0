#include "driver.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "h5file.h"
#include "initial.h"
#include "output.h"
#include "progress.h"
#include "signals.h"
#include "stability.h"

static void *backend_host_alloc(size_t bytes, void *ctx)
{
    return heat_backend_host_alloc(ctx, bytes);
}

static void backend_host_free(void *p, void *ctx)
{
    heat_backend_host_free(ctx, p);
}

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
    }
    return "?";
}

/* The next step > step that is a multiple of every (every > 0). */
static int64_t next_multiple(int64_t step, int64_t every)
{
    return (step / every + 1) * every;
}

typedef struct run_state {
    const heat_case *c;
    const heat_run_options *opt;
    heat_backend *b;
    heat_output *out;
    int64_t last_snapshot, last_checkpoint;
    double last_checkpoint_wall;
} run_state;

/* Hands the field at `step` to the writer as what of `kinds` has not been
 * written at this step yet: one download for a snapshot and a checkpoint. */
static int write_fields(run_state *s, int64_t step, int kinds, heat_error *err)
{
    if (s->last_snapshot == step) kinds &= ~HEAT_OUTPUT_SNAPSHOT;
    if (s->last_checkpoint == step) kinds &= ~HEAT_OUTPUT_CHECKPOINT;
    if (!kinds) return HEAT_OK;
    void *buf;
    int rc;
    if ((rc = heat_output_acquire(s->out, &buf, err))) return rc;
    if ((rc = heat_backend_download(s->b, buf, err))) {
        heat_output_release(s->out, buf);
        return rc;
    }
    if ((rc = heat_output_submit(s->out, buf, step, heat_case_time(s->c, step), kinds, err)))
        return rc;
    if (kinds & HEAT_OUTPUT_SNAPSHOT) s->last_snapshot = step;
    if (kinds & HEAT_OUTPUT_CHECKPOINT) {
        s->last_checkpoint = step;
        s->last_checkpoint_wall = heat_wall_seconds();
    }
    return HEAT_OK;
}

/* ---- restart ------------------------------------------------------------ */

typedef struct restart_file {
    int have;
    char path[HEAT_PATH_MAX + HEAT_NAME_MAX + 64];
    heat_file_meta meta;
} restart_file;

/* Reads the metadata of `path`, checks it against the deck and reads the
 * field into `field`. A deck that does not match is HEAT_EINPUT with
 * *mismatch set (the message names --restart); a file that cannot be used
 * is HEAT_EINPUT or, damaged, HEAT_ERUNTIME, the message starting with the
 * path. */
static int load_restart(const heat_case *c, const char *path, void *field, heat_file_meta *m,
                        int *mismatch, heat_error *err)
{
    *mismatch = 0;
    char what[HEAT_PATH_MAX + 32];
    snprintf(what, sizeof what, "--restart %s", path);
    int rc = heat_file_read_meta(path, m, err);
    if (rc) return rc;
    if ((rc = heat_file_check_case(m, c, what, err)))
        *mismatch = 1;
    else
        rc = heat_file_read_field(path, m, c->solver.precision, field, err);
    if (rc) heat_file_meta_free(m);
    return rc;
}

/* Where the run starts: the initial condition at step 0, or a file. */
static int resolve_restart(const heat_case *c, const heat_run_options *opt, void *field,
                           restart_file *r, heat_error *err)
{
    memset(r, 0, sizeof *r);
    if (!opt->restart) return HEAT_OK;
    int mismatch = 0;
    if (strcmp(opt->restart, "latest") != 0) {
        snprintf(r->path, sizeof r->path, "%s", opt->restart);
        int rc = load_restart(c, r->path, field, &r->meta, &mismatch, err);
        r->have = rc == HEAT_OK;
        if (rc && !mismatch) {
            /* "--restart x: cannot read ...", "--restart: x is corrupt: ..." */
            size_t n = strlen(r->path);
            int named = strncmp(err->msg, r->path, n) == 0 && err->msg[n] == ':';
            heat_error_prefix(err, named ? "--restart " : "--restart: ");
        }
        return rc;
    }
    int64_t *steps;
    size_t n;
    int rc = heat_output_list_checkpoints(c->output.dir, c->name, &steps, &n, err);
    if (rc) return rc;
    if (n == 0) {
        if (opt->notices)
            fprintf(opt->notices,
                    "notice: --restart latest: no checkpoint in %s: starting from the initial "
                    "condition\n",
                    c->output.dir);
        return HEAT_OK;
    }
    heat_error bad;
    heat_error_clear(&bad);
    for (size_t i = 0; i < n; i++) {
        heat_output_checkpoint_path(r->path, sizeof r->path, c->output.dir, c->name, steps[i]);
        rc = load_restart(c, r->path, field, &r->meta, &mismatch, err);
        if (rc == HEAT_OK) {
            r->have = 1;
            break;
        }
        if (mismatch) break; /* the deck is wrong, not the file */
        /* Damaged: say so and fall back to the next older one. */
        heat_error_append(&bad, HEAT_ERUNTIME, "  %s", err->msg);
        if (opt->notices)
            fprintf(opt->notices, "notice: --restart latest: %s%s\n", err->msg,
                    i + 1 < n ? "; trying the next older checkpoint" : "");
    }
    free(steps);
    if (r->have || mismatch) return rc;
    return heat_error_set(err, HEAT_ERUNTIME,
                          "--restart latest: no intact checkpoint in %s (%zu found, all "
                          "damaged):\n%s",
                          c->output.dir, n, bad.msg);
}

/* The restarted run keeps the file's dt, so that it continues bit for bit:
 * r = alpha dt / h^2 as before, the time of step n is n dt, and the end step
 * is recomputed from time.end with that dt. */
static int adopt_restart_dt(heat_case *c, const restart_file *r, FILE *notices, heat_error *err)
{
    const double dt = r->meta.dt, deck_dt = c->d.dt;
    c->d.dt = dt;
    for (int a = 0; a < c->grid.dims; a++) c->d.r[a] = c->alpha * dt / (c->d.h[a] * c->d.h[a]);
    c->d.end_step = -1;
    if (c->time.has_end) {
        double q = c->time.end / dt;
        if (q > 9.0e15)
            return heat_error_set(err, HEAT_EINPUT,
                                  "time.end = %.9g needs %.3g steps of the restart file's dt = "
                                  "%.9g: too many",
                                  c->time.end, q, dt);
        /* As heat_case_derive: within rounding, a step that lands on end. */
        double n = ceil(q);
        if (n > 1 && q - (n - 1) < 1e-9 * q) n -= 1;
        if (n < 1) n = 1;
        c->d.end_step = (int64_t)n;
        if (!(fabs(n * dt - c->time.end) <= 1e-9 * c->time.end)) {
            if (notices)
                fprintf(notices,
                        "notice: --restart: time.end = %.9g is not a whole number of steps of "
                        "dt = %.9g: the run stops at the first step past it, step %lld, t = "
                        "%.9g\n",
                        c->time.end, dt, (long long)c->d.end_step, n * dt);
            c->time.end = n * dt; /* the time of that step, as reported */
        }
    }
    c->d.stop_step = c->d.end_step;
    if (c->time.has_max_steps && (c->d.stop_step < 0 || c->time.max_steps < c->d.stop_step))
        c->d.stop_step = c->time.max_steps;
    if (deck_dt != dt && notices)
        fprintf(notices,
                "notice: --restart: keeping the dt of %s, %.17g (this deck alone would use "
                "%.17g), so that the run continues exactly\n",
                r->path, dt, deck_dt);
    const int64_t start = r->meta.step;
    if (c->d.stop_step >= 0 && c->d.stop_step < start)
        return heat_error_set(err, HEAT_EINPUT,
                              "--restart %s: the file is at step %lld (t = %.9g), past the last "
                              "step of this deck, %lld (%s): raise time.end or time.max_steps",
                              r->path, (long long)start, r->meta.time, (long long)c->d.stop_step,
                              c->d.stop_step == c->d.end_step ? "time.end" : "time.max_steps");
    return HEAT_OK;
}

static heat_stop_reason stop_reason_at(const heat_case *c, int64_t step)
{
    return (c->d.end_step >= 0 && step >= c->d.end_step) ? HEAT_STOP_END : HEAT_STOP_MAX_STEPS;
}

int heat_run(const heat_case *deck_case, const char *deck_text, const heat_run_options *opt,
             heat_run_result *res, heat_error *err)
{
    memset(res, 0, sizeof *res);
    res->last_residual = NAN;
    heat_error_clear(err);

    heat_output_mode mode = opt->restart     ? HEAT_OUTPUT_CONTINUE
                            : opt->overwrite ? HEAT_OUTPUT_OVERWRITE
                                             : HEAT_OUTPUT_NEW;
    int rc;
    /* Everything that can be refused is checked before anything is written. */
    if ((rc = heat_output_check_dir(deck_case->output.dir, mode, err))) return rc;

    /* The run's own copy: a restart changes dt and the step counts. */
    heat_case *c = malloc(sizeof *c);
    const size_t bytes = (size_t)deck_case->d.points * heat_case_value_size(deck_case);
    void *field = malloc(bytes);
    run_state s = {NULL, opt, NULL, NULL, -1, -1, 0};
    restart_file r;
    memset(&r, 0, sizeof r);
    if (!c || !field) {
        rc = heat_error_set(err, HEAT_ERUNTIME, "cannot allocate %.3g GB for the initial field",
                            (double)bytes / 1e9);
        goto done;
    }
    *c = *deck_case;
    s.c = c;
    if ((rc = resolve_restart(c, opt, field, &r, err))) goto done;
    if (r.have && (rc = adopt_restart_dt(c, &r, opt->notices, err))) goto done;
    if (!r.have && (rc = heat_initial_fill_with_notices(c, field, opt->notices, err))) goto done;
    int64_t step = r.have ? r.meta.step : 0;

    if ((rc = heat_backend_create(c, opt->notices, &s.b, err))) goto done;
    if ((rc = heat_backend_upload(s.b, field, err))) goto done;
    free(field);
    field = NULL;
    heat_output_options oo = {0};
    oo.mode = mode;
    oo.start_step = step;
    oo.deck_text = deck_text;
    oo.alloc = opt->host_alloc;
    if (!oo.alloc.alloc) {
        /* The backend's host memory: page-locked for the GPU, so that the
         * copies for outputs run at full speed. */
        oo.alloc.alloc = backend_host_alloc;
        oo.alloc.free = backend_host_free;
        oo.alloc.ctx = s.b;
    }
    oo.notices = opt->notices;
    if ((rc = heat_output_open(c, &oo, &s.out, err))) goto done;
    /* The file restarted from is where it was; no need to write it again
     * when it is one of this run's checkpoints. */
    if (r.have && r.meta.kind == HEAT_FILE_CHECKPOINT) s.last_checkpoint = step;

    heat_signals_install();
    heat_progress p;
    heat_progress_init(&p, opt->out, opt->quiet);
    if (!opt->quiet) {
        fprintf(opt->out, "heat: %s: %lld x %lld x %lld points, dt %.6g, on %s\n", c->name,
                (long long)c->grid.n[0], (long long)c->grid.n[1], (long long)c->grid.n[2], c->d.dt,
                heat_backend_describe(s.b));
        if (r.have)
            fprintf(opt->out, "heat: continuing from %s at step %lld, t = %.9g\n", r.path,
                    (long long)step, r.meta.time);
    }

    res->start_step = step;
    double residual = NAN;
    if ((rc = heat_output_history(s.out, step, heat_case_time(c, step), NAN, 0.0, err))) goto done;
    if (step == 0 && (rc = write_fields(&s, step, HEAT_OUTPUT_SNAPSHOT, err))) goto done;
    /* The loop's clock starts after the first snapshot is handed over (its
     * buffers are allocated then), so that throughput measures the loop. */
    const double t0 = heat_wall_seconds();
    s.last_checkpoint_wall = t0;

    const int64_t stop = c->d.stop_step;
    const int64_t kblock = c->solver.temporal_block;
    int64_t chunk_max = kblock; /* grows to about 0.1 s of work per call */
    if (stop >= 0 && step >= stop) res->reason = stop_reason_at(c, step);
    int stopped = stop >= 0 && step >= stop;
    while (!stopped) {
        /* The next step at which something is due. */
        int64_t due = next_multiple(step, c->d.check_every);
        if (c->output.every > 0) {
            int64_t n = next_multiple(step, c->output.every);
            if (n < due) due = n;
        }
        if (c->output.checkpoint_every > 0) {
            int64_t n = next_multiple(step, c->output.checkpoint_every);
            if (n < due) due = n;
        }
        if (stop >= 0 && stop < due) due = stop;
        int64_t chunk = due - step;
        if (chunk > chunk_max) chunk = chunk_max;
        const int64_t next = step + chunk;
        const int check = next % c->d.check_every == 0 || next == stop;

        const double a0 = heat_wall_seconds();
        if ((rc = heat_backend_advance(s.b, chunk, check ? &residual : NULL, err))) goto done;
        const double a1 = heat_wall_seconds();
        step = next;
        if (a1 - a0 < 0.05 && chunk == chunk_max && chunk_max < (INT64_C(1) << 40))
            chunk_max = 2 * chunk_max;
        else if (a1 - a0 > 0.2 && chunk_max > kblock)
            chunk_max = (chunk_max / 2 + kblock - 1) / kblock * kblock;

        const double t = heat_case_time(c, step);
        if (check) {
            res->last_residual = residual;
            if (!isfinite(residual)) {
                rc = heat_error_set(err, HEAT_ERUNTIME,
                                    "the field is no longer finite at step %lld (t = %.9g): "
                                    "NaN or Inf found in the residual check; no checkpoint of it "
                                    "is written. Look at the initial and boundary values, or use "
                                    "a smaller time.dt",
                                    (long long)step, t);
                goto done;
            }
            if ((rc = heat_output_history(s.out, step, t, residual, a1 - t0, err))) goto done;
            if (c->steady.enabled && step % c->steady.check_every == 0 &&
                residual <= c->steady.tolerance) {
                res->reason = HEAT_STOP_STEADY;
                stopped = 1;
            }
        }
        if (!stopped && heat_signals_caught()) {
            res->reason = HEAT_STOP_SIGNAL;
            res->signal = heat_signals_caught();
            stopped = 1;
        }
        if (!stopped && stop >= 0 && step >= stop) {
            res->reason = stop_reason_at(c, step);
            stopped = 1;
        }
        const double wall = a1 - t0;
        const double rate = (double)(step - res->start_step) / (wall > 0 ? wall : 1e-9);
        heat_progress_update(&p, a1, step, stop, t, rate, rate * (double)c->d.points / 1e9,
                             residual);
        /* The last step's outputs are written below, in one go. */
        if (stopped) break;
        int kinds = 0;
        if (c->output.every > 0 && step % c->output.every == 0) kinds |= HEAT_OUTPUT_SNAPSHOT;
        if (c->output.checkpoint_every > 0 && step % c->output.checkpoint_every == 0)
            kinds |= HEAT_OUTPUT_CHECKPOINT;
        if (c->output.checkpoint_wall > 0 &&
            a1 - s.last_checkpoint_wall >= c->output.checkpoint_wall)
            kinds |= HEAT_OUTPUT_CHECKPOINT;
        if (kinds && (rc = write_fields(&s, step, kinds, err))) goto done;
    }
    heat_progress_clear(&p);
    res->wall = heat_wall_seconds() - t0;

    /* The final state: always a snapshot and a checkpoint, complete on disk
     * before the run reports (a signal included). */
    if ((rc = write_fields(&s, step, HEAT_OUTPUT_SNAPSHOT | HEAT_OUTPUT_CHECKPOINT, err)))
        goto done;
    if ((rc = heat_output_flush(s.out, err))) goto done;
    if (opt->field_out && (rc = heat_backend_download(s.b, opt->field_out, err))) goto done;

    res->final_step = step;
    res->final_time = heat_case_time(c, step);
    const double updates = (double)(step - res->start_step) * (double)c->d.points;
    res->glups = res->wall > 0 ? updates / res->wall / 1e9 : 0;
    res->gbps = res->glups * 2.0 * (double)heat_case_value_size(c);
    res->files = heat_output_files_written(s.out);

    if (!opt->quiet) {
        int64_t snaps, ckpts;
        heat_output_counts(s.out, &snaps, &ckpts);
        fprintf(opt->out, "heat: %s at step %lld, t = %.9g\n", heat_stop_reason_text(res->reason),
                (long long)step, res->final_time);
        fprintf(opt->out,
                "  steps %lld (from %lld), simulated time %.9g, wall %.3f s, %.3f GLUP/s, "
                "%.2f GB/s effective\n",
                (long long)(step - res->start_step), (long long)res->start_step,
                res->final_time - heat_case_time(c, res->start_step), res->wall, res->glups,
                res->gbps);
        if (!isnan(res->last_residual))
            fprintf(opt->out, "  last residual max|du/dt| = %.6e\n", res->last_residual);
        fprintf(opt->out,
                "  files written: %lld in %s (history.csv, %s.xmf, %lld snapshot%s, %lld "
                "checkpoint%s)\n",
                (long long)res->files, heat_output_dir(s.out), c->name, (long long)snaps,
                snaps == 1 ? "" : "s", (long long)ckpts, ckpts == 1 ? "" : "s");
    }
done:
    heat_output_close(s.out);
    heat_backend_destroy(s.b);
    heat_file_meta_free(&r.meta);
    free(field);
    free(c);
    return rc;
}
