/* The initial field on the host, before it is uploaded to a backend. */
#ifndef HEAT_INITIAL_H
#define HEAT_INITIAL_H

#include "heat_case.h"
#include "heat_error.h"

/* Fills `field` (nx*ny*nz values of the case's precision, x fastest) with the
 * initial condition, evaluated in double at the node coordinates
 * x_d = origin_d + i_d h_d and rounded once to the field's precision:
 *   constant: value
 *   gaussian: base + amplitude exp(-|x - center|^2 / (2 width^2)) (over x, y in 2D)
 *   sine:     amplitude prod_d sin(k_d pi (x_d - origin_d) / L_d) (over x, y in 2D)
 * then sets every Dirichlet face to its value, faces in the order x_lo, x_hi,
 * y_lo, y_hi, z_lo, z_hi, so that where two Dirichlet faces meet, the later
 * one holds the edge. The case must have been derived (heat_case_derive).
 * type = "file" is read by io/ and is refused here with HEAT_EINPUT. */
int heat_initial_fill(const heat_case *c, void *field, heat_error *err);

/* Sets the Dirichlet faces of `field` to their values (the second half of
 * heat_initial_fill), for fields that come from elsewhere. */
void heat_initial_apply_dirichlet(const heat_case *c, void *field);

#endif
