/* Helpers of the CPU backend's tests (test_cpu.c, test_formula.c): cases
 * built from deck text the way the program builds them, fields in either
 * precision, the backend driven step by step, and an independent host
 * reference of the uniform update written from docs/DECK.md. */
#ifndef HEAT_TEST_CPU_HELPERS_H
#define HEAT_TEST_CPU_HELPERS_H

#include <stdint.h>

#include "backend.h"
#include "heat_case.h"
#include "test_util.h"

/* Written from the numerical contract (docs/DECK.md), not from the sweep:
 * a plain loop over nodes in double; h and r are recomputed here from the
 * grid, alpha and the dt the run uses. */
typedef struct ref_case {
    int64_t n[3];
    int dims;
    double h[3], r[3];
    heat_bc bc[HEAT_NFACES];
} ref_case;

typedef struct mixed_config {
    const char *bc;
    int64_t n[3];
    const char *length;
} mixed_config;

extern const char cpu_common_deck[];
extern const heat_precision precisions[2];
extern const char bc_all_dirichlet_zero[];
extern const char bc_all_periodic[];
extern const char bc_all_insulated[];
extern const char bc_mixed[];
extern const char bc_mixed_x_neumann[];
extern const char bc_mixed_z_periodic[];
extern const char bc_dirichlet_edges[];
extern const char bc_six_dirichlet[];
extern const char init_zero[];

const char *prec_name(heat_precision p);

/* Loads cpu_common_deck with the given boundary and initial group bodies and the
 * overrides, and derives it. */
void load_case(heat_case *c, const char *boundary, const char *initial, const test_sets *s);

/* A mixed_config's case from a zero field in precision p, with
 * time.max_steps = max_steps where max_steps > 0. */
void load_mixed(heat_case *c, const mixed_config *mc, heat_precision p, int64_t max_steps);

double fget(const heat_case *c, const void *f, int64_t i);

void fset(const heat_case *c, void *f, int64_t i, double v);

void *field_alloc(const heat_case *c);

/* Uniform random values in [lo, hi), rounded to the case's precision. */
void field_random(const heat_case *c, void *f, uint64_t seed, double lo, double hi);

void index_ijk(const heat_case *c, int64_t at, int64_t ijk[3]);

/* Fails naming the first index where |got - want| > tol, and the largest
 * difference. */
void expect_field_near(const heat_case *c, const void *got, const double *want, double tol,
                       const char *what);

heat_backend *backend_with(const heat_case *c, const void *field);

void advance(heat_backend *b, int64_t steps, double *residual);

void download(heat_backend *b, void *field);

void ref_init(ref_case *rc, const heat_case *c);

/* Whether node p lies on a Dirichlet face. */
int ref_is_dirichlet(const ref_case *rc, const int64_t p[3]);

/* Sets the Dirichlet faces of u in the order x_lo ... z_hi: a later face
 * overwrites an earlier one where they meet. */
void ref_apply_dirichlet(const ref_case *rc, double *u);

void ref_step(const ref_case *rc, const double *u, double *out);

void ref_run(const ref_case *rc, double *u, int64_t steps);

#endif
