/* The V-cycle's schedule and the solve loops of multigrid (mg.h), the same
 * for every backend: the backend supplies the level kernels. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "mg.h"

_Static_assert(HEAT_MG_LEVELS_MAX == HEAT_BACKEND_MG_LEVELS, "one bound on the levels");

void heat_mg_vcycle(const heat_mg *m, const heat_mg_ops *ops, void *ctx)
{
    const int last = m->levels - 1;
    for (int l = 0; l < last; l++) {
        /* A coarse level starts from a zero correction. */
        for (int s = 0; s < HEAT_MG_SWEEPS; s++) ops->smooth(ctx, l, s, l > 0 && s < 2);
        ops->restrict_residual(ctx, l);
    }
    ops->coarse_solve(ctx);
    for (int l = last - 1; l >= 0; l--) {
        ops->prolong(ctx, l);
        for (int s = 0; s < HEAT_MG_SWEEPS; s++) ops->smooth(ctx, l, HEAT_MG_SWEEPS + s, 0);
    }
}

static int one_cycle(const heat_mg *m, const heat_mg_ops *ops, void *ctx, heat_mg_state *st,
                     heat_error *err)
{
    st->total_cycles++;
    if (ops->cycle) return ops->cycle(ctx, err);
    heat_mg_vcycle(m, ops, ctx);
    return HEAT_OK;
}

/* The field's norms, and on a singular problem the shift that restores the
 * start's weighted mean (then the norms of the shifted field). */
static int norms_kept_mean(const heat_mg *m, const heat_mg_ops *ops, void *ctx,
                           const heat_mg_state *st, double *rmax, heat_error *err)
{
    double umax, wsum;
    int rc = ops->norms(ctx, rmax, &umax, &wsum, err);
    if (rc || !m->singular || !(m->weight > 0)) return rc;
    if ((rc = ops->shift(ctx, (st->mean0 - wsum) / m->weight, err))) return rc;
    return ops->norms(ctx, rmax, &umax, &wsum, err);
}

int heat_mg_steady(const heat_mg *m, const heat_mg_ops *ops, void *ctx, heat_mg_state *st,
                   int64_t cycles, double *residual, heat_error *err)
{
    int rc = HEAT_OK;
    if (!st->started) {
        double umax;
        if ((rc = ops->norms(ctx, &st->r0, &umax, &st->mean0, err))) return rc;
        st->residual = st->r0;
        st->started = 1;
    }
    st->steps_done = 0;
    for (int64_t n = 0; n < cycles; n++) {
        if ((rc = one_cycle(m, ops, ctx, st, err))) return rc;
        if ((rc = norms_kept_mean(m, ops, ctx, st, &st->residual, err))) return rc;
        st->cycles++;
        st->steps_done++;
    }
    st->reduction = st->r0 > 0 ? st->residual / st->r0 : 0.0;
    if (residual) *residual = st->residual;
    return HEAT_OK;
}

/* One implicit step's solve from the field (the previous level) as first
 * guess, bmax = max |b| / ((rho c) V) of its right-hand side: cycles until
 * the residual is at most m->tolerance bmax (relative to the right-hand
 * side, as hypre and PETSc measure it: a step that changes the field little
 * starts near it and takes few cycles) or at the rounding floor,
 * 16 eps |u|max diag_scale (what evaluating the residual in the precision
 * leaves; the target when b is zero). A run of 3 cycles that each reduce it
 * by less than half ends the solve: at the floor (within
 * 256 eps |u|max diag_scale) it counts as converged, above it as stalled,
 * and as diverged where the residual ended above twice its first (cycles
 * whose coarse correction overshoots: docs/DECK.md, "Multigrid").
 * st->reduction: the final residual over bmax, or over the first residual
 * where b is zero. */
static int step_solve(const heat_mg *m, const heat_mg_ops *ops, void *ctx, double bmax,
                      heat_mg_state *st, heat_error *err)
{
    double r0, umax, wsum;
    int rc = ops->norms(ctx, &r0, &umax, &wsum, err);
    if (rc) return rc;
    /* Values below the precision's smallest normal number keep only its
     * absolute spacing: a field decayed that far is at its floor. */
    const double tiny = m->eps > 0x1p-40 ? FLT_MIN : DBL_MIN;
    const double scale = m->eps * fmax(umax, tiny) * m->diag_scale;
    const double target = fmax(m->tolerance * bmax, 16.0 * scale);
    double r = r0, prev = r0;
    int slow = 0;
    st->cycles = 0;
    st->stalled = st->diverged = 0;
    while (r > target) {
        if ((rc = one_cycle(m, ops, ctx, st, err))) return rc;
        if ((rc = ops->norms(ctx, &r, &umax, &wsum, err))) return rc;
        st->cycles++;
        slow = r > 0.5 * prev ? slow + 1 : 0;
        prev = r;
        if (!isfinite(r)) break;
        if (slow >= 3 || st->cycles >= 200) {
            st->stalled = r > 256.0 * scale;
            st->diverged = st->stalled && r > 2.0 * r0;
            break;
        }
    }
    st->residual = r;
    st->growth = r0 > 0 ? r / r0 : 0.0;
    st->reduction = bmax > 0 ? r / bmax : r0 > 0 ? r / r0 : 0.0;
    st->zero_rhs = !(bmax > 0);
    return HEAT_OK;
}

int heat_mg_implicit(const heat_mg *m, const heat_mg_ops *ops, void *ctx, heat_mg_state *st,
                     int64_t steps, double *residual, heat_error *err)
{
    int rc = HEAT_OK;
    st->steps_done = 0;
    for (int64_t n = 0; n < steps; n++) {
        const int keep = residual != NULL;
        double bmax;
        if ((rc = ops->rhs(ctx, keep, &bmax, err))) return rc;
        if ((rc = step_solve(m, ops, ctx, bmax, st, err))) return rc;
        st->steps_done++;
        if (keep && (n == steps - 1 || st->stalled || !isfinite(st->residual))) {
            if ((rc = ops->dudt(ctx, residual, err))) return rc;
            if (!isfinite(st->residual)) *residual = st->residual;
        }
        if (st->stalled || !isfinite(st->residual)) break;
    }
    return HEAT_OK;
}

void heat_mg_fill_info(const heat_mg *m, const heat_mg_state *st, heat_mg_info *info)
{
    memset(info, 0, sizeof *info);
    info->cycles = st->cycles;
    info->total_cycles = st->total_cycles;
    info->reduction = st->reduction;
    info->zero_rhs = st->zero_rhs;
    info->stalled = st->stalled;
    info->diverged = st->diverged;
    info->growth = st->growth;
    info->steps_done = st->steps_done;
    info->levels = m->levels;
    const heat_mg_level *f = &m->lv[0], *c = &m->lv[m->levels - 1];
    snprintf(info->text, sizeof info->text,
             "V(%d,%d) cycles, Chebyshev smoother, %d level%s from %lldx%lldx%lld to "
             "%lldx%lldx%lld (%lld unknowns, solved directly)",
             HEAT_MG_SWEEPS, HEAT_MG_SWEEPS, m->levels, m->levels == 1 ? "" : "s",
             (long long)f->n[0], (long long)f->n[1], (long long)f->n[2], (long long)c->n[0],
             (long long)c->n[1], (long long)c->n[2], (long long)m->nc);
    if (m->gather > 0) {
        const size_t used = strlen(info->text);
        snprintf(info->text + used, sizeof info->text - used,
                 "; %d split over the ranks, the rest whole on each", m->gather);
    }
}

/* ---- timing ------------------------------------------------------------------------ */

double heat_mg_sweep_bytes(const heat_mg *m, int l, int s, int vs)
{
    const heat_mg_level *L = &m->lv[l];
    const int b = l > 0 || m->implicit || m->b0;
    const int d = l > 0 ? L->dg != NULL : m->dg0 != NULL;
    const double values = 2.0 + (L->cheb[s][0] != 0.0) + b + d + (l > 0 ? 3.0 : 0.0);
    return (double)L->points * (values * vs + (l == 0 && m->cls ? 1.0 : 0.0));
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One V-cycle as heat_mg_vcycle runs it, with a mark after each part:
 * per level (going down) the pre-smoothing and the restriction, the coarse
 * solve, per level (going up) the prolongation and the post-smoothing.
 * Returns the number of marks. */
static int marked_cycle(const heat_mg *m, const heat_mg_ops *ops, void *ctx,
                        const heat_mg_clock *clk)
{
    const int last = m->levels - 1;
    int k = 0;
    clk->mark(ctx, k++);
    for (int l = 0; l < last; l++) {
        for (int s = 0; s < HEAT_MG_SWEEPS; s++) ops->smooth(ctx, l, s, l > 0 && s < 2);
        clk->mark(ctx, k++);
        ops->restrict_residual(ctx, l);
        clk->mark(ctx, k++);
    }
    ops->coarse_solve(ctx);
    clk->mark(ctx, k++);
    for (int l = last - 1; l >= 0; l--) {
        ops->prolong(ctx, l);
        clk->mark(ctx, k++);
        for (int s = 0; s < HEAT_MG_SWEEPS; s++) ops->smooth(ctx, l, HEAT_MG_SWEEPS + s, 0);
        clk->mark(ctx, k++);
    }
    return k;
}

/* The parts of one marked cycle (ms[] its intervals) into the runs' rows. */
static void parts_of(const heat_mg *m, const double *ms, double (*rows)[HEAT_MG_MARKS], int r)
{
    const int last = m->levels - 1;
    int k = 0;
    for (int l = 0; l < last; l++) {
        rows[4 * l][r] = ms[k++];     /* pre-smoothing */
        rows[4 * l + 1][r] = ms[k++]; /* restriction */
    }
    rows[4 * last][r] = ms[k++];
    for (int l = last - 1; l >= 0; l--) {
        rows[4 * l + 2][r] = ms[k++]; /* prolongation */
        rows[4 * l + 3][r] = ms[k++]; /* post-smoothing */
    }
}

int heat_mg_time_parts(const heat_mg *m, const heat_mg_ops *ops, void *ctx,
                       const heat_mg_clock *clock, int runs, heat_mg_timing *t, heat_error *err)
{
    if (runs > HEAT_MG_MARKS) runs = HEAT_MG_MARKS;
    double(*rows)[HEAT_MG_MARKS] = calloc(HEAT_MG_MARKS, sizeof *rows);
    double *norms = calloc((size_t)runs, sizeof *norms);
    double ms[HEAT_MG_MARKS], r0, r = 0, umax, wsum;
    int rc = rows && norms ? ops->norms(ctx, &r0, &umax, &wsum, err)
                           : heat_error_set(err, HEAT_ERUNTIME, "out of memory");
    for (int i = 0; i < runs && !rc; i++) {
        const int n = marked_cycle(m, ops, ctx, clock);
        clock->mark(ctx, n);
        if (!(rc = ops->norms(ctx, &r, &umax, &wsum, err))) clock->mark(ctx, n + 1);
        if (!rc && !(rc = clock->read(ctx, n + 2, ms, err))) {
            parts_of(m, ms, rows, i);
            norms[i] = ms[n];
        }
    }
    if (!rc) {
        t->levels = m->levels;
        for (int l = 0; l < m->levels; l++) {
            heat_mg_level_timing *lt = &t->lv[l];
            for (int d = 0; d < 3; d++) lt->n[d] = m->lv[l].n[d];
            if (l == m->levels - 1) break;
            lt->smooth_ms = median(rows[4 * l], runs) + median(rows[4 * l + 3], runs);
            lt->restrict_ms = median(rows[4 * l + 1], runs);
            lt->prolong_ms = median(rows[4 * l + 2], runs);
            for (int s = 0; s < 2 * HEAT_MG_SWEEPS; s++)
                lt->smooth_bytes += heat_mg_sweep_bytes(m, l, s, m->eps > 1e-10 ? 4 : 8);
            t->parts_ms += lt->smooth_ms + lt->restrict_ms + lt->prolong_ms;
        }
        t->coarse_ms = median(rows[4 * (m->levels - 1)], runs);
        t->norms_ms = median(norms, runs);
        t->parts_ms += t->coarse_ms + t->norms_ms;
        t->reduction = r0 > 0 && r > 0 ? pow(r / r0, 1.0 / runs) : 0.0;
    }
    free(rows);
    free(norms);
    return rc;
}
