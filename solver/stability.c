#include "stability.h"

#include <math.h>
#include <string.h>

int heat_case_derive(heat_case *c, heat_error *err)
{
    memset(&c->d, 0, sizeof c->d);
    int dims = c->grid.dims;
    double inv_h2 = 0;
    for (int a = 0; a < 3; a++) {
        int periodic = c->bc[2 * a].type == HEAT_BC_PERIODIC;
        if (a >= dims) {
            c->d.h[a] = 1.0;
            continue;
        }
        c->d.h[a] = c->grid.length[a] / (double)(periodic ? c->grid.n[a] : c->grid.n[a] - 1);
        inv_h2 += 1.0 / (c->d.h[a] * c->d.h[a]);
    }
    c->d.dt_max = 0.5 / (c->alpha * inv_h2);
    c->d.points = c->grid.n[0] * c->grid.n[1] * c->grid.n[2];

    double dt = c->time.has_dt ? c->time.dt : c->time.safety * c->d.dt_max;
    if (c->time.has_dt && dt > c->d.dt_max)
        return heat_error_set(err, HEAT_EINPUT,
                              "%s%stime.dt = %.9g is above the stability limit dt_max = %.9g "
                              "(forward Euler needs sum of alpha*dt/h^2 over the axes <= 1/2; "
                              "here it would be %.6g): use dt <= %.9g or leave dt out",
                              c->time.dt_where, c->time.dt_where[0] ? ": " : "", dt, c->d.dt_max,
                              0.5 * dt / c->d.dt_max, c->d.dt_max);
    c->d.end_step = -1;
    if (c->time.has_end) {
        double q = c->time.end / dt;
        if (q > 9.0e15)
            return heat_error_set(err, HEAT_EINPUT,
                                  "time.end = %.9g needs %.3g steps of dt = %.9g: too many",
                                  c->time.end, q, dt);
        /* A dt that divides end up to rounding must not cost an extra step. */
        double n = ceil(q);
        if (n > 1 && q - (n - 1) < 1e-9 * q) n -= 1;
        if (n < 1) n = 1;
        /* ...unless that would put dt above the stability limit. */
        if (c->time.end / n > c->d.dt_max) n += 1;
        c->d.end_step = (int64_t)n;
        dt = c->time.end / n;
    }
    c->d.dt = dt;
    c->d.stop_step = c->d.end_step;
    if (c->time.has_max_steps && (c->d.stop_step < 0 || c->time.max_steps < c->d.stop_step))
        c->d.stop_step = c->time.max_steps;
    for (int a = 0; a < dims; a++) c->d.r[a] = c->alpha * dt / (c->d.h[a] * c->d.h[a]);
    c->d.check_every = c->steady.check_every > 0 ? c->steady.check_every : 100;
    return HEAT_OK;
}

double heat_case_time(const heat_case *c, int64_t step)
{
    if (c->d.end_step >= 0 && step == c->d.end_step) return c->time.end;
    return (double)step * c->d.dt;
}
