/* Where a run starts: a restart file (a path, or the newest intact
 * checkpoint) checked against the deck, or the initial condition. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "deck.h"
#include "h5part.h"
#include "initial.h"
#include "run_state.h"

/* What a restart trusts beyond the checksums: a dt within the stability
 * limit of the file's grid and diffusivity (the deck's, once they match),
 * and a step the deck has not passed. (A field that holds NaN or Inf the
 * readers refuse themselves.) */
static int check_restart_state(const heat_case *c, const heat_file_meta *m, int *past,
                               heat_error *err)
{
    *past = 0;
    /* Implicit steps take any dt > 0; a steady multigrid run counts cycles. */
    const int explicit_steps = !heat_case_multigrid(c);
    if (explicit_steps && m->dt > c->d.dt_max * (1 + 1e-12))
        return heat_error_set(err, HEAT_ERUNTIME,
                              "its dt = %.17g is above the stability limit dt_max = %.17g of "
                              "forward Euler on its grid and diffusivity: corrupt, or written by "
                              "an implicit or steady multigrid run (continue it with that "
                              "time.scheme or steady.method, or start from it with "
                              "initial.type = \"file\")",
                              m->dt, c->d.dt_max);
    if (!(m->dt > 0))
        return heat_error_set(err, HEAT_ERUNTIME, "corrupt: its dt = %.17g is not > 0", m->dt);
    heat_case with_dt = *c;
    int moved;
    int rc =
        heat_case_steady_multigrid(c) ? HEAT_OK : heat_case_keep_dt(&with_dt, m->dt, &moved, err);
    if (rc) return rc;
    const int64_t stop = with_dt.d.stop_step;
    *past = stop >= 0 && stop < m->step;
    if (*past)
        return heat_error_set(err, HEAT_EINPUT,
                              "the file is at step %lld (t = %.9g), past the last step of this "
                              "deck, %lld (%s): raise time.end or time.max_steps",
                              (long long)m->step, m->time, (long long)stop,
                              stop == with_dt.d.end_step ? "time.end" : "time.max_steps");
    return HEAT_OK;
}

/* The materials, regions and sources of the file's deck must be the deck's
 * (a diffusivity's too: the file's may be several materials, the first of
 * that diffusivity): a run continues bit for bit only with the same physics. */
static int check_physics(const heat_case *c, const heat_file_meta *m, heat_error *err)
{
    heat_case *fc = malloc(sizeof *fc);
    if (!fc) return heat_error_set(err, HEAT_ERUNTIME, "out of memory");
    heat_error diff;
    heat_error_clear(&diff);
    int rc = heat_deck_load_restart(m->deck, "the file's deck", NULL, 0, fc, NULL, NULL, &diff);
    if (rc)
        heat_error_set(&diff, HEAT_EINPUT, "  its deck does not load: %s", diff.msg);
    else
        heat_case_same_physics(c, fc, &diff);
    free(fc);
    if (diff.code == HEAT_OK) return HEAT_OK;
    return heat_error_set(err, HEAT_EINPUT,
                          "the deck does not match the %s's materials, regions and sources (they "
                          "must stay the same to continue a run):\n%s",
                          heat_file_kind_name(m->kind), diff.msg);
}

/* Reads the metadata of `path`, checks it against the deck and reads the
 * field into `field`. A deck that does not match is HEAT_EINPUT with
 * *mismatch set; a file that cannot be used (damaged, or past the deck's
 * end) is HEAT_EINPUT or HEAT_ERUNTIME. With `past` not NULL a file past
 * the deck's end has its field read too, and *past says whether it is
 * intact but past the end. Every message starts with "PATH: ". */
static int load_restart(const run_state *s, const char *path, void *field, heat_file_meta *m,
                        int *mismatch, int *past, heat_error *err)
{
    const heat_case *c = s->c;
    *mismatch = 0;
    int beyond = 0, damaged = 0;
    heat_error why;
    int rc = heat_file_read_meta(path, m, err);
    if (!rc) {
        if ((rc = heat_file_check_case(m, c, err)) || (rc = check_physics(c, m, err))) {
            *mismatch = 1;
        } else if ((rc = check_restart_state(c, m, &beyond, err)) && !(beyond && past)) {
            ; /* unusable */
        } else {
            /* usable, or (asked) past the end: is its field intact? */
            if (beyond) why = *err;
            rc = s->par ? heat_file_read_box(path, m, c->solver.precision, s->part.lo, s->part.n,
                                             field, err)
                        : heat_file_read_field(path, m, c->solver.precision, field, err);
            damaged = rc != HEAT_OK;
            if (damaged)
                beyond = 0; /* damaged: that is what to say */
            else if (beyond)
                rc = HEAT_EINPUT, *err = why;
        }
    }
    /* Every rank read the same metadata; the boxes may differ in fortune. */
    if (s->par) {
        double mm[2] = {*mismatch, damaged};
        rc = heat_par_agree(s->par, rc, err);
        heat_par_max(s->par, mm, 2);
        *mismatch = rc && mm[0] > 0;
        beyond = rc && beyond && mm[1] == 0; /* a box damaged anywhere: damaged */
    }
    if (past) *past = beyond;
    if (rc) {
        heat_error_prefix(err, "%s: ", path);
        heat_file_meta_free(m);
    }
    return rc;
}

/* The checkpoints of the case in output.dir, newest first: rank 0 looks,
 * and every rank takes its list. */
static int list_checkpoints(const run_state *s, int64_t **steps, size_t *n, heat_error *err)
{
    const heat_case *c = s->c;
    int rc = heat_par_rank(s->par) == 0
                 ? heat_output_list_checkpoints(c->output.dir, c->name, steps, n, err)
                 : HEAT_OK;
    if (!s->par) return rc;
    if ((rc = heat_par_agree(s->par, rc, err))) return rc;
    double count = (double)*n;
    heat_par_bcast(s->par, &count, sizeof count);
    if (heat_par_rank(s->par) != 0) {
        *n = (size_t)count;
        *steps = *n ? malloc(*n * sizeof **steps) : NULL;
        if (*n && !*steps) heat_par_abort(s->par, 1, "out of memory");
    }
    if (*n) heat_par_bcast(s->par, *steps, *n * sizeof **steps);
    return HEAT_OK;
}

/* --restart latest: the newest intact checkpoint of the case, falling back
 * to older ones (saying so) when damaged; none at all: the initial field.
 * The newest intact one past the deck's end is refused (HEAT_EINPUT). */
static int restart_latest(const run_state *s, void *field, restart_file *r, heat_error *err)
{
    const heat_case *c = s->c;
    const heat_run_options *opt = s->opt;
    int64_t *steps = NULL;
    size_t n = 0;
    int rc = list_checkpoints(s, &steps, &n, err);
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
    int mismatch = 0, past = 0;
    for (size_t i = 0; i < n && !r->have && !mismatch && !past; i++) {
        heat_output_checkpoint_path(r->path, sizeof r->path, c->output.dir, c->name, steps[i]);
        rc = load_restart(s, r->path, field, &r->meta, &mismatch, &past, err);
        r->have = rc == HEAT_OK;
        if (rc && !mismatch && !past) {
            /* Damaged or past the end: say so and fall back to the next older one. */
            heat_error_append(&bad, err->code, "  %s", err->msg);
            if (opt->notices)
                fprintf(opt->notices, "notice: --restart latest: %s%s\n", err->msg,
                        i + 1 < n ? "; trying the next older checkpoint" : "");
        }
    }
    free(steps);
    /* An intact checkpoint past the end is not passed over for an older
     * one: the restart would remove it (and lose its steps for good). */
    if (past) {
        heat_error_prefix(err, "--restart latest: the newest intact checkpoint, ");
        heat_error_append(err, HEAT_EINPUT,
                          "  An older checkpoint is not taken instead, as the restart would "
                          "remove this one; to go back to one, name it (--restart FILE: the "
                          "files written after it are then removed).");
        return HEAT_EINPUT;
    }
    if (mismatch) heat_error_prefix(err, "--restart ");
    if (r->have || mismatch) return rc;
    return heat_error_set(err, bad.code,
                          "--restart latest: no intact checkpoint in %s that this deck can "
                          "continue (%zu found, each damaged or unusable):\n%s",
                          c->output.dir, n, bad.msg);
}

/* The restarted run keeps the file's dt, so that it continues bit for bit. */
static int adopt_restart_dt(heat_case *c, const restart_file *r, FILE *notices, heat_error *err)
{
    const double deck_dt = c->d.dt, deck_end = c->time.end;
    int moved;
    int rc = heat_case_keep_dt(c, r->meta.dt, &moved, err);
    if (rc) return rc;
    if (moved && notices)
        fprintf(notices,
                "notice: --restart: time.end = %.9g is not a whole number of steps of dt = %.9g: "
                "the run stops at the first step past it, step %lld, t = %.9g\n",
                deck_end, c->d.dt, (long long)c->d.end_step, c->time.end);
    if (deck_dt != c->d.dt && notices)
        fprintf(notices,
                "notice: --restart: keeping the dt of %s, %.17g (this deck alone would use "
                "%.17g), so that the run continues exactly\n",
                r->path, c->d.dt, deck_dt);
    return HEAT_OK;
}

int heat_run_start_field(run_state *s, void *field, restart_file *r, heat_error *err)
{
    heat_case *c = s->c;
    const heat_run_options *opt = s->opt;
    int rc = HEAT_OK;
    memset(r, 0, sizeof *r);
    if (opt->restart && strcmp(opt->restart, "latest") == 0) {
        rc = restart_latest(s, field, r, err);
    } else if (opt->restart) {
        int mismatch;
        snprintf(r->path, sizeof r->path, "%s", opt->restart);
        rc = load_restart(s, r->path, field, &r->meta, &mismatch, NULL, err);
        r->have = rc == HEAT_OK;
        /* The user named this file: one that is damaged or cannot be read is
         * bad input, as it is for initial.path. */
        if (rc == HEAT_ERUNTIME) rc = err->code = HEAT_EINPUT;
        if (rc) heat_error_prefix(err, "--restart ");
    }
    if (rc) return rc;
    if (r->have) {
        s->step = r->meta.step;
        /* The stall check goes on where the run left it, when its steps are
         * of the same kind (a steady multigrid solve's cycles have dt 1; an
         * explicit run keeps the file's dt). */
        if (r->meta.has_steady && c->steady.enabled &&
            (!heat_case_steady_multigrid(c) || r->meta.dt == 1.0)) {
            s->best_residual = r->meta.steady_best;
            s->best_step = r->meta.steady_best_step;
            s->checks_no_best = r->meta.steady_no_best;
        }
        /* Format 2 came with the fused multiply-add update (docs/FORMAT.md). */
        if (r->meta.format_version < 2 && opt->notices)
            fprintf(opt->notices,
                    "notice: --restart: %s has format version %lld, written by a heat that "
                    "updated with separate multiplies and adds; this one fuses them, so the "
                    "continued run may differ from that heat's in the last bits\n",
                    r->path, (long long)r->meta.format_version);
        /* A steady multigrid run's steps are cycles: nothing to keep. */
        if (!heat_case_steady_multigrid(c)) return adopt_restart_dt(c, r, opt->notices, err);
        /* A steady solve's steps are cycles (dt = 1): say so when the file's were not. */
        if (r->meta.dt != 1.0 && opt->notices)
            fprintf(opt->notices,
                    "notice: --restart: %s is at step %lld, t = %.9g, of time steps of dt = %.9g; "
                    "the steady multigrid solve goes on from its field, and history's step and "
                    "time count V-cycles from %lld\n",
                    r->path, (long long)r->meta.step, r->meta.time, r->meta.dt,
                    (long long)r->meta.step);
        return HEAT_OK;
    }
    s->step = 0;
    rc = heat_initial_fill_box(c, s->part.lo, s->part.n, field, opt->notices, err);
    return agree(s, rc, err);
}

int heat_restart_check_materials(run_state *s, const restart_file *r, heat_error *err)
{
    if (!r->have || !r->meta.has_material || !s->material) return HEAT_OK;
    const int64_t *lo = s->part.lo, *n = s->part.n;
    const size_t count = (size_t)(n[0] * n[1] * n[2]);
    uint8_t *had = malloc(count);
    int rc = had ? heat_file_read_material_box(r->path, &r->meta, lo, n, had, err)
                 : heat_error_set(err, HEAT_ERUNTIME, "out of memory for the material index");
    /* The nodes that differ, and the first of them (the lowest grid index,
     * as -index so that the ranks' maximum finds it), its materials. */
    double v[4] = {0, -INFINITY, 0, 0};
    for (size_t i = 0; !rc && i < count; i++) {
        if (had[i] == s->material[i]) continue;
        const int64_t x = lo[0] + (int64_t)i % n[0], y = lo[1] + (int64_t)(i / n[0]) % n[1],
                      z = lo[2] + (int64_t)(i / n[0] / n[1]);
        const double g = (double)((z * s->c->grid.n[1] + y) * s->c->grid.n[0] + x);
        if (v[0]++ == 0) v[1] = -g, v[2] = s->material[i], v[3] = had[i];
    }
    free(had);
    if ((rc = agree(s, rc, err))) {
        heat_error_prefix(err, "--restart %s: ", r->path);
        return rc;
    }
    double first = v[1];
    if (s->par) {
        heat_par_sum(s->par, v, 1);
        heat_par_max(s->par, &first, 1);
        /* The first node's materials, from the rank that holds it. */
        double w[2] = {v[1] == first ? v[2] : -1, v[1] == first ? v[3] : -1};
        heat_par_max(s->par, w, 2);
        v[2] = w[0], v[3] = w[1];
    }
    if (v[0] == 0) return HEAT_OK;
    const heat_case *c = s->c;
    const int64_t g = (int64_t)-first, gx = g % c->grid.n[0], gy = g / c->grid.n[0] % c->grid.n[1],
                  gz = g / c->grid.n[0] / c->grid.n[1];
    const int dm = (int)v[2], fm = (int)v[3];
    return heat_error_set(err, HEAT_EINPUT,
                          "--restart %s: the deck's regions give %.0f node%s another material "
                          "than the checkpoint's, the first at node (%lld, %lld, %lld): \"%s\" "
                          "from the deck, \"%s\" in the file. A material file of the regions "
                          "changed since the run began? A restart continues the run's materials: "
                          "give the regions as they were",
                          r->path, v[0], v[0] == 1 ? "" : "s", (long long)gx, (long long)gy,
                          (long long)gz, dm < c->materials.count ? c->materials.m[dm].name : "?",
                          fm < c->materials.count ? c->materials.m[fm].name : "?");
}
