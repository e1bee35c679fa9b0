#include "progress.h"

#include <math.h>
#include <time.h>
#include <unistd.h>

double heat_wall_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void heat_progress_init(heat_progress *p, FILE *out, int quiet)
{
    p->out = out;
    p->mode = quiet ? 0 : (isatty(fileno(out)) ? 1 : 2);
    p->interval = p->mode == 1 ? 0.2 : 5.0;
    p->last = heat_wall_seconds();
    p->dirty = 0;
}

static void fmt_eta(char *buf, size_t n, double s)
{
    if (!(s >= 0) || s > 1e8) {
        snprintf(buf, n, "--");
        return;
    }
    long t = (long)(s + 0.5);
    snprintf(buf, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
}

void heat_progress_update(heat_progress *p, double now, int64_t step, int64_t stop_step, double t,
                          double steps_per_s, double glups, double residual)
{
    if (p->mode == 0 || now - p->last < p->interval) return;
    p->last = now;
    char eta[32], res[32], of[32] = "";
    if (stop_step >= 0) {
        fmt_eta(eta, sizeof eta, (double)(stop_step - step) / steps_per_s);
        snprintf(of, sizeof of, "/%lld", (long long)stop_step);
    } else
        snprintf(eta, sizeof eta, "until steady");
    if (isnan(residual))
        snprintf(res, sizeof res, "--");
    else
        snprintf(res, sizeof res, "%.3e", residual);
    if (p->mode == 1) {
        fprintf(p->out,
                "\r\033[Kstep %lld%s  t %.6g  %.4g steps/s  %.3g GLUP/s  residual %s  ETA %s",
                (long long)step, of, t, steps_per_s, glups, res, eta);
        p->dirty = 1;
    } else {
        fprintf(p->out, "step %lld%s  t %.6g  %.4g steps/s  %.3g GLUP/s  residual %s  ETA %s\n",
                (long long)step, of, t, steps_per_s, glups, res, eta);
    }
    fflush(p->out);
}

void heat_progress_clear(heat_progress *p)
{
    if (p->dirty) {
        fprintf(p->out, "\r\033[K");
        fflush(p->out);
        p->dirty = 0;
    }
}
