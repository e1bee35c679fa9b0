/* The initial field on the host, before it is uploaded to a backend. */
#ifndef HEAT_INITIAL_H
#define HEAT_INITIAL_H

#include <stdint.h>
#include <stdio.h>

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
 *   file:     the field of a snapshot or checkpoint (initial.path) with the
 *             same grid.points, node by node, converted to the run's
 *             precision when the file holds the other one
 * A file that is missing, not a heat file, damaged or of another grid is
 * HEAT_EINPUT naming initial.path (and both shapes). */
int heat_initial_fill(const heat_case *c, void *field, heat_error *err);

/* As heat_initial_fill, saying on `notices` (when not NULL) what was
 * adapted: a field converted from the other precision, a file whose grid
 * length or origin differ from the deck's. */
int heat_initial_fill_with_notices(const heat_case *c, void *field, FILE *notices, heat_error *err);

/* As heat_initial_fill_with_notices, for the box [lo, lo + n) of the grid
 * only (one rank's part): `field` holds n[0] * n[1] * n[2] values, x
 * fastest, each exactly the value of that node in the whole field. */
int heat_initial_fill_box(const heat_case *c, const int64_t lo[3], const int64_t n[3], void *field,
                          FILE *notices, heat_error *err);

/* For initial.type = "file": reads only the file's metadata and checks it
 * as heat_initial_fill would (HEAT_EINPUT naming initial.path); HEAT_OK for
 * the other types. For `heat check`. */
int heat_initial_check_file(const heat_case *c, FILE *notices, heat_error *err);

/* max |u| over the n values of `field`; NaN when a value is NaN. */
double heat_field_max_abs(const heat_case *c, const void *field, int64_t n);

/* The grid node "(i, j, k)" of an index into the box [lo, lo + n). */
void heat_node_text(const int64_t lo[3], const int64_t n[3], int64_t index, char *buf, size_t len);

/* Sets the Dirichlet faces of `field` to their values (the second half of
 * heat_initial_fill), for fields that come from elsewhere. */
void heat_initial_apply_dirichlet(const heat_case *c, void *field);

/* The same for the box [lo, lo + n) of the grid held in `field`. */
void heat_initial_apply_dirichlet_box(const heat_case *c, const int64_t lo[3], const int64_t n[3],
                                      void *field);

#endif
