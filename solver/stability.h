/* Derived numbers of a case: spacing, the stability limit, dt and step counts.
 *
 * Forward Euler on the 7-point (5-point in 2D) Laplacian is stable for
 * sum_d r_d <= 1/2 with r_d = alpha * dt / h_d^2 (von Neumann analysis; e.g.
 * LeVeque, "Finite Difference Methods for ODEs and PDEs", 2007, sec. 9.6), so
 * dt_max = 1 / (2 alpha sum_d h_d^-2).
 */
#ifndef HEAT_STABILITY_H
#define HEAT_STABILITY_H

#include "heat_case.h"
#include "heat_error.h"

/* Fills c->d from the validated deck fields:
 *   h_d = L_d / (n_d - 1), or L_d / n_d on a periodic axis;
 *   dt  = time.dt if given, else safety * dt_max; with time.end, shortened
 *         to end / ceil(end / dt) so that the last step lands on end exactly;
 *   end_step, stop_step, check_every, points.
 * Returns HEAT_EINPUT (naming time.dt, dt and dt_max) when a given dt is
 * above dt_max, or when the step count would not fit. */
int heat_case_derive(heat_case *c, heat_error *err);

/* Simulated time at `step`: step * dt, and exactly time.end at end_step. */
double heat_case_time(const heat_case *c, int64_t step);

#endif
