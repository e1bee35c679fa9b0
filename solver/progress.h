/* Progress reporting: on a terminal one status line rewritten in place; in a
 * log (not a terminal) a line every few seconds; nothing when quiet. */
#ifndef HEAT_PROGRESS_H
#define HEAT_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

typedef struct heat_progress {
    FILE *out;
    int mode; /* 0 quiet, 1 terminal, 2 log */
    double last;
    double interval;
    int dirty; /* a status line is on screen and needs clearing */
} heat_progress;

/* mode from quiet and whether `out` is a terminal. */
void heat_progress_init(heat_progress *p, FILE *out, int quiet);

/* Reports the state (rate-limited by wall time `now`); stop_step < 0 means
 * unknown (steady state only), residual NaN means not computed yet. */
void heat_progress_update(heat_progress *p, double now, int64_t step, int64_t stop_step, double t,
                          double steps_per_s, double glups, double residual);

/* Clears the status line, so that the next output starts on a clean line. */
void heat_progress_clear(heat_progress *p);

/* Current wall clock in seconds (monotonic). */
double heat_wall_seconds(void);

#endif
