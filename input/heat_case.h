/* heat_case: one validated run description, plain data.
 *
 * Produced by the deck module (input/deck.h) from a libconfig deck plus
 * --set overrides; every field has been range-checked there. The derived
 * numbers (spacing, dt, step counts) are filled in by heat_case_derive()
 * below, and only there. Backends, the driver and io/ read it; nobody else
 * writes it.
 *
 * Every enum here has one table of names (heat_*_names, in value order,
 * NULL-terminated): the deck's choices, the files' attributes, the messages
 * and `heat bench` all read that table, so a new value is added in one place.
 */
#ifndef HEAT_CASE_H
#define HEAT_CASE_H

#include <stddef.h>
#include <stdint.h>

#include "heat_error.h"

#define HEAT_NAME_MAX 256
#define HEAT_PATH_MAX 4096
/* solver.temporal_block at most: the deepest fusion the register_tiled GPU kernel serves. */
#define HEAT_TEMPORAL_BLOCK_MAX 8

/* Faces in the order they appear in a deck; face = 2*axis + side. */
enum heat_face { HEAT_X_LO, HEAT_X_HI, HEAT_Y_LO, HEAT_Y_HI, HEAT_Z_LO, HEAT_Z_HI, HEAT_NFACES };

typedef enum { HEAT_BC_DIRICHLET, HEAT_BC_NEUMANN, HEAT_BC_PERIODIC, HEAT_BC_COUNT } heat_bc_type;

typedef struct heat_bc {
    heat_bc_type type;
    double value;    /* Dirichlet: the held value */
    double gradient; /* Neumann: du/dn, n the outward normal */
} heat_bc;

typedef enum {
    HEAT_INIT_CONSTANT,
    HEAT_INIT_GAUSSIAN,
    HEAT_INIT_SINE,
    HEAT_INIT_FILE,
    HEAT_INIT_COUNT
} heat_init_type;

typedef enum {
    HEAT_BACKEND_AUTO,
    HEAT_BACKEND_CPU,
    HEAT_BACKEND_CUDA,
    HEAT_BACKEND_COUNT
} heat_backend_kind;
typedef enum { HEAT_DOUBLE, HEAT_FLOAT, HEAT_PRECISION_COUNT } heat_precision;
typedef enum {
    HEAT_KERNEL_NAIVE,
    HEAT_KERNEL_TILED,
    HEAT_KERNEL_SLICED,
    HEAT_KERNEL_REGISTER_TILED,
    HEAT_KERNEL_COUNT
} heat_kernel;

/* parallel.transport: how halos move between ranks (docs/DECK.md). */
typedef enum {
    HEAT_TRANSPORT_AUTO,
    HEAT_TRANSPORT_MPI,
    HEAT_TRANSPORT_NCCL,
    HEAT_TRANSPORT_COUNT
} heat_transport;

/* parallel.io: how the ranks write one file together (docs/FORMAT.md). */
typedef enum { HEAT_PIO_AUTO, HEAT_PIO_COLLECTIVE, HEAT_PIO_AGGREGATED, HEAT_PIO_COUNT } heat_pio;

/* The GPU kernel that fuses solver.temporal_block steps per pass; every other
 * kernel, and the CPU backend, runs the steps one at a time. */
#define HEAT_KERNEL_FUSING HEAT_KERNEL_REGISTER_TILED

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
        int64_t
            stall_checks; /* stop when the residual sets no new low in this many checks; 0: never */
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

    struct {
        int ranks[3]; /* parallel.ranks: ranks per axis; all 0 when the run chooses */
        heat_transport transport;
        heat_pio io;
    } parallel;

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

/* The names of each enum's values, in value order, NULL-terminated. */
extern const char *const heat_bc_type_names[HEAT_BC_COUNT + 1];
extern const char *const heat_init_type_names[HEAT_INIT_COUNT + 1];
extern const char *const heat_backend_kind_names[HEAT_BACKEND_COUNT + 1];
extern const char *const heat_precision_names[HEAT_PRECISION_COUNT + 1];
extern const char *const heat_kernel_names[HEAT_KERNEL_COUNT + 1];
extern const char *const heat_face_names[HEAT_NFACES + 1];
extern const char *const heat_transport_names[HEAT_TRANSPORT_COUNT + 1];
extern const char *const heat_pio_names[HEAT_PIO_COUNT + 1];

/* The index of `s` in a NULL-terminated table of names, or -1. */
int heat_name_index(const char *const *names, const char *s);

/* A value's name from its table; "?" for a value out of range. */
const char *heat_bc_type_name(heat_bc_type t);
const char *heat_init_type_name(heat_init_type t);
const char *heat_backend_kind_name(heat_backend_kind k);
const char *heat_precision_name(heat_precision p);
const char *heat_kernel_name(heat_kernel k);
const char *heat_face_name(int face);
const char *heat_transport_name(heat_transport t);
const char *heat_pio_name(heat_pio p);

/* ---- derived numbers ----------------------------------------------------
 *
 * Forward Euler on the 7-point (5-point in 2D) Laplacian is stable for
 * sum_d r_d <= 1/2 with r_d = alpha * dt / h_d^2 (von Neumann analysis; e.g.
 * LeVeque, "Finite Difference Methods for ODEs and PDEs", 2007, sec. 9.6), so
 * dt_max = 1 / (2 alpha sum_d h_d^-2).
 */

/* Fills c->d from the validated deck fields:
 *   h_d = L_d / (n_d - 1), or L_d / n_d on a periodic axis;
 *   dt  = time.dt if given, else safety * dt_max; with time.end, shortened
 *         to end / ceil(end / dt) so that the last step lands on end exactly;
 *   end_step, stop_step, check_every, points.
 * Returns HEAT_EINPUT (naming time.dt, dt and dt_max) when a given dt is
 * above dt_max, or when the step count would not fit. */
int heat_case_derive(heat_case *c, heat_error *err);

/* Makes a derived case run with exactly `dt` (a restart keeps its file's dt,
 * so that it continues bit for bit): r = alpha dt / h^2 as before; the end
 * step becomes the first n with n dt >= time.end (within 1e-9 relative:
 * then t = time.end exactly), and when time.end is not a whole number of
 * steps, time.end moves to that step's time and *end_moved is set; stop_step
 * follows. HEAT_EINPUT when the step count would not fit. */
int heat_case_keep_dt(heat_case *c, double dt, int *end_moved, heat_error *err);

/* The largest |u| the deck's values suggest (Dirichlet values, the initial
 * condition's constant, base + amplitude or amplitude), for estimates made
 * before the field exists; 0 when nothing is known (initial.type = file). */
double heat_case_value_scale(const heat_case *c);

/* The residual max |du/dt| that rounding alone leaves at values of size
 * `umax`: eps umax / dt, eps the precision's machine epsilon (2^-23 in float,
 * 2^-52 in double). A steady tolerance below it may never be reached: the
 * changes of single ulps go on for ever. */
double heat_case_residual_floor(const heat_case *c, double umax);

/* Simulated time at `step`: step * dt, and exactly time.end at end_step. */
double heat_case_time(const heat_case *c, int64_t step);

#endif
