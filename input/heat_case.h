/* heat_case: one validated run description, plain data.
 *
 * Produced by the deck module (input/deck.h) from a libconfig deck plus
 * --set overrides; every field has been range-checked there. The derived
 * numbers (spacing, dt, step counts) are filled in by heat_case_derive()
 * in solver/stability.h. Backends, the driver and io/ read it; nobody else
 * writes it.
 */
#ifndef HEAT_CASE_H
#define HEAT_CASE_H

#include <stddef.h>
#include <stdint.h>

#define HEAT_NAME_MAX 256
#define HEAT_PATH_MAX 4096
/* solver.temporal_block at most: the deepest fusion the register_tiled GPU kernel serves. */
#define HEAT_TEMPORAL_BLOCK_MAX 8

/* Faces in the order they appear in a deck; face = 2*axis + side. */
enum heat_face { HEAT_X_LO, HEAT_X_HI, HEAT_Y_LO, HEAT_Y_HI, HEAT_Z_LO, HEAT_Z_HI, HEAT_NFACES };

typedef enum { HEAT_BC_DIRICHLET, HEAT_BC_NEUMANN, HEAT_BC_PERIODIC } heat_bc_type;

typedef struct heat_bc {
    heat_bc_type type;
    double value;    /* Dirichlet: the held value */
    double gradient; /* Neumann: du/dn, n the outward normal */
} heat_bc;

typedef enum {
    HEAT_INIT_CONSTANT,
    HEAT_INIT_GAUSSIAN,
    HEAT_INIT_SINE,
    HEAT_INIT_FILE
} heat_init_type;

typedef enum { HEAT_BACKEND_AUTO, HEAT_BACKEND_CPU, HEAT_BACKEND_CUDA } heat_backend_kind;
typedef enum { HEAT_DOUBLE, HEAT_FLOAT } heat_precision;
typedef enum {
    HEAT_KERNEL_NAIVE,
    HEAT_KERNEL_TILED,
    HEAT_KERNEL_SLICED,
    HEAT_KERNEL_REGISTER_TILED
} heat_kernel;

typedef struct heat_case {
    char name[HEAT_NAME_MAX];

    struct {
        int64_t n[3];     /* points per axis, boundary nodes included; n[2] == 1 in 2D */
        double length[3]; /* physical extent per axis */
        double origin[3];
        int dims; /* 2 or 3 */
    } grid;

    double alpha; /* diffusivity */

    struct {
        int has_end;
        double end;
        int has_max_steps;
        int64_t max_steps;
        int has_dt;
        double dt;                         /* as given in the deck (only when has_dt) */
        char dt_where[HEAT_PATH_MAX + 32]; /* "deck.cfg:7" or "--set", for messages */
        double safety;
    } time;

    struct {
        int enabled;
        double tolerance;
        int64_t check_every;
    } steady;

    struct {
        heat_init_type type;
        double value;     /* constant */
        double center[3]; /* gaussian */
        double width, amplitude, base;
        double modes[3]; /* sine: wave numbers in units of pi / L */
        char path[HEAT_PATH_MAX];
    } initial;

    heat_bc bc[HEAT_NFACES];

    struct {
        char dir[HEAT_PATH_MAX];
        int64_t every;            /* 0: initial and final snapshots only */
        int64_t checkpoint_every; /* 0: only at the end and on signals */
        int64_t keep_checkpoints;
        double checkpoint_wall; /* seconds of wall time between checkpoints; 0: off */
        int compress;           /* deflate level of field files, 0 (off) to 9 */
    } output;

    struct {
        heat_backend_kind backend;
        heat_precision precision;
        heat_kernel kernel;
        int temporal_block;
    } solver;

    /* Derived by heat_case_derive(); zero until then. */
    struct {
        double h[3];         /* spacing per axis (h[2] = 1 in 2D, unused) */
        double r[3];         /* alpha * dt / h^2 per axis (0 for an unused axis) */
        double dt_max;       /* largest stable dt: sum r = 1/2 */
        double dt;           /* the dt the run uses */
        int64_t end_step;    /* step at which t = time.end, or -1 */
        int64_t stop_step;   /* min(end_step, max_steps), or -1 when only steady stops */
        int64_t check_every; /* residual / NaN check interval */
        int64_t points;      /* nx * ny * nz */
    } d;
} heat_case;

/* Bytes per field value for the case's precision. */
static inline size_t heat_case_value_size(const heat_case *c)
{
    return c->solver.precision == HEAT_FLOAT ? sizeof(float) : sizeof(double);
}

const char *heat_bc_type_name(heat_bc_type t);
const char *heat_init_type_name(heat_init_type t);
const char *heat_backend_kind_name(heat_backend_kind k);
const char *heat_precision_name(heat_precision p);
const char *heat_kernel_name(heat_kernel k);
const char *heat_face_name(int face);

#endif
