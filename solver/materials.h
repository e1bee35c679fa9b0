/* Painting the deck's materials and sources onto the nodes: each node's
 * class (one byte: its material and the summed power of the sources it lies
 * in, heat_case.h) for any box of the grid, and what a run or `heat check`
 * says about them.
 *
 * A node belongs to a region or a source when it lies inside or on its
 * shape, within 1e-9 of the spacing. Regions paint in the deck's order (a
 * later one wins); nodes no region paints get the first material. A file
 * region reads one integer per node, an index into the materials. */
#ifndef HEAT_MATERIALS_H
#define HEAT_MATERIALS_H

#include <stdint.h>
#include <stdio.h>

#include "heat_case.h"
#include "heat_error.h"

/* The slots of a `contained` array (HEAT_SHAPES_MAX ints): region r's at
 * r, source i's at HEAT_SOURCE_SLOT(i). */
#define HEAT_SHAPES_MAX     (HEAT_REGIONS_MAX + HEAT_SOURCES_MAX)
#define HEAT_SOURCE_SLOT(i) (HEAT_REGIONS_MAX + (i))

/* Paints the box [lo, lo + n) of the grid (indices outside the grid wrap on
 * a periodic axis and are clamped on others: the ghost layers of a part)
 * into cls (n[0] n[1] n[2] bytes, x fastest), adding the classes it meets
 * to *t (ids stay as they are; start from a zeroed t). When `contained` is
 * not NULL, its slot of each region and source that contains a node of the
 * box is set. HEAT_EINPUT naming the region for a material file of another
 * shape than the grid or with an index out of range, or when more than 256
 * combinations of material and source power occur. */
int heat_materials_paint(const heat_case *c, const int64_t lo[3], const int64_t n[3], uint8_t *cls,
                         heat_classes *t, int *contained, heat_error *err);

/* What `heat check` reports: the nodes of each material, whether each region
 * contains a node, and the power of the sources in W (trapezoid weights on
 * the faces: the power the update injects; per metre of depth in 2D).
 * Paints the grid plane by plane. */
typedef struct heat_materials_survey {
    int64_t nodes[HEAT_MATERIALS_MAX];
    int contained[HEAT_SHAPES_MAX];
    double power;
} heat_materials_survey;

int heat_materials_survey_grid(const heat_case *c, heat_materials_survey *s, heat_error *err);

/* The trapezoid weight of node i of axis a: its share of the domain's
 * length (h, or h / 2 on a face that is not periodic). */
double heat_node_weight(const heat_case *c, int a, int64_t i);

/* Notices for regions and sources that contain no node (their slots of
 * `contained` 0). */
void heat_materials_notice_empty(const heat_case *c, const int *contained, FILE *notices);

#endif
