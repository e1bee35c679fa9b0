#include "driver.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend.h"
#include "initial.h"
#include "output.h"
#include "progress.h"
#include "signals.h"
#include "stability.h"

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
    void *host; /* host copy of the field for outputs, when they want one */
    int64_t last_snapshot, last_checkpoint;
} run_state;

static int write_snapshot(run_state *s, int64_t step, heat_error *err)
{
    if (s->last_snapshot == step) return HEAT_OK;
    s->last_snapshot = step;
    int written = 0, rc;
    if (s->host && (rc = heat_backend_download(s->b, s->host, err))) return rc;
    return heat_output_snapshot(s->out, step, heat_case_time(s->c, step), s->host, &written, err);
}

static int write_checkpoint(run_state *s, int64_t step, heat_error *err)
{
    if (s->last_checkpoint == step) return HEAT_OK;
    s->last_checkpoint = step;
    int written = 0, rc;
    if (s->host && (rc = heat_backend_download(s->b, s->host, err))) return rc;
    return heat_output_checkpoint(s->out, step, heat_case_time(s->c, step), s->host, &written, err);
}

/* Where the run starts: step 0 from the initial condition, or a checkpoint. */
static int resolve_restart(const heat_case *c, const heat_run_options *opt, int64_t *start_step,
                           heat_error *err)
{
    *start_step = 0;
    if (!opt->restart) return HEAT_OK;
    if (strcmp(opt->restart, "latest") == 0) {
        /* Checkpoint files come with the HDF5 writer; until then there is
         * never one to find. */
        if (opt->notices)
            fprintf(opt->notices,
                    "notice: --restart latest: no checkpoint in %s: starting from the initial "
                    "condition\n",
                    c->output.dir);
        return HEAT_OK;
    }
    struct stat st;
    if (stat(opt->restart, &st) != 0)
        return heat_error_set(err, HEAT_EINPUT, "--restart %s: no such file", opt->restart);
    return heat_error_set(err, HEAT_EINPUT,
                          "--restart %s: reading checkpoints needs the HDF5 reader, which this "
                          "build does not have yet",
                          opt->restart);
}

int heat_run(const heat_case *c, const char *deck_text, const heat_run_options *opt,
             heat_run_result *res, heat_error *err)
{
    (void)deck_text; /* stored with checkpoints once they are written */
    memset(res, 0, sizeof *res);
    res->last_residual = NAN;
    heat_error_clear(err);

    heat_output_mode mode = opt->restart     ? HEAT_OUTPUT_CONTINUE
                            : opt->overwrite ? HEAT_OUTPUT_OVERWRITE
                                             : HEAT_OUTPUT_NEW;
    int64_t step = 0;
    int rc;
    /* Everything that can be refused is checked before anything is written. */
    if ((rc = heat_output_check_dir(c->output.dir, mode, err))) return rc;
    if ((rc = resolve_restart(c, opt, &step, err))) return rc;

    const size_t bytes = (size_t)c->d.points * heat_case_value_size(c);
    run_state s = {c, opt, NULL, NULL, NULL, -1, -1};
    void *field = malloc(bytes);
    if (!field)
        return heat_error_set(err, HEAT_ERUNTIME, "cannot allocate %.3g GB for the initial field",
                              (double)bytes / 1e9);
    if ((rc = heat_initial_fill(c, field, err))) goto done;
    if ((rc = heat_backend_create(c, opt->notices, &s.b, err))) goto done;
    if ((rc = heat_backend_upload(s.b, field, err))) goto done;
    if ((rc = heat_output_open(c, mode, step, &s.out, err))) goto done;
    if (heat_output_wants_fields(s.out)) s.host = field;

    heat_signals_install();
    heat_progress p;
    heat_progress_init(&p, opt->out, opt->quiet);
    if (!opt->quiet)
        fprintf(opt->out, "heat: %s: %lld x %lld x %lld points, dt %.6g, on %s\n", c->name,
                (long long)c->grid.n[0], (long long)c->grid.n[1], (long long)c->grid.n[2], c->d.dt,
                heat_backend_describe(s.b));

    res->start_step = step;
    const double t0 = heat_wall_seconds();
    double residual = NAN;
    if ((rc = heat_output_history(s.out, step, heat_case_time(c, step), NAN, 0.0, err))) goto done;
    if (step == 0 && (rc = write_snapshot(&s, step, err))) goto done;

    const int64_t stop = c->d.stop_step;
    const int64_t kblock = c->solver.temporal_block;
    int64_t chunk_max = kblock; /* grows to about 0.1 s of work per call */
    int stopped = 0;
    while (!stopped) {
        if (stop >= 0 && step >= stop) {
            res->reason =
                (c->d.end_step >= 0 && step >= c->d.end_step) ? HEAT_STOP_END : HEAT_STOP_MAX_STEPS;
            break;
        }
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
        if (c->output.every > 0 && step % c->output.every == 0 &&
            (rc = write_snapshot(&s, step, err)))
            goto done;
        if (c->output.checkpoint_every > 0 && step % c->output.checkpoint_every == 0 &&
            (rc = write_checkpoint(&s, step, err)))
            goto done;
        if (heat_signals_caught()) {
            res->reason = HEAT_STOP_SIGNAL;
            res->signal = heat_signals_caught();
            stopped = 1;
        }
        const double wall = a1 - t0;
        const double rate = (double)(step - res->start_step) / (wall > 0 ? wall : 1e-9);
        heat_progress_update(&p, a1, step, stop, t, rate, rate * (double)c->d.points / 1e9,
                             residual);
    }
    heat_progress_clear(&p);
    res->wall = heat_wall_seconds() - t0;

    /* The final state: always a snapshot and a checkpoint. */
    if ((rc = write_snapshot(&s, step, err))) goto done;
    if ((rc = write_checkpoint(&s, step, err))) goto done;
    if (opt->field_out && (rc = heat_backend_download(s.b, opt->field_out, err))) goto done;

    res->final_step = step;
    res->final_time = heat_case_time(c, step);
    const double updates = (double)(step - res->start_step) * (double)c->d.points;
    res->glups = res->wall > 0 ? updates / res->wall / 1e9 : 0;
    res->gbps = res->glups * 2.0 * (double)heat_case_value_size(c);
    res->files = heat_output_files_written(s.out);

    if (!opt->quiet) {
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
        fprintf(opt->out, "  files written: %lld in %s (history.csv)\n", (long long)res->files,
                heat_output_dir(s.out));
    }
done:
    heat_output_close(s.out);
    heat_backend_destroy(s.b);
    free(field);
    return rc;
}
