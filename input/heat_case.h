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

typedef enum {
    HEAT_BC_DIRICHLET,
    HEAT_BC_NEUMANN,
    HEAT_BC_PERIODIC,
    HEAT_BC_CONVECTIVE,
    HEAT_BC_FLUX,
    HEAT_BC_COUNT
} heat_bc_type;

typedef struct heat_bc {
    heat_bc_type type;
    double value;    /* Dirichlet: the held value; flux: heat flux into the domain, W/m^2 */
    double gradient; /* Neumann: du/dn, n the outward normal */
    double h;        /* convective: the heat transfer coefficient, W/(m^2 K) */
    double ambient;  /* convective: the ambient temperature */
} heat_bc;

/* Materials, regions that paint them, heat sources and probes (docs/DECK.md). */
#define HEAT_MATERIALS_MAX    255 /* a node's material is one byte */
#define HEAT_MATERIAL_NAME    32
#define HEAT_REGIONS_MAX      128
#define HEAT_FILE_REGIONS_MAX 4
#define HEAT_SOURCES_MAX      64
#define HEAT_PROBES_MAX       64

typedef struct heat_material {
    char name[HEAT_MATERIAL_NAME];
    double k;   /* conductivity, W/(m K) */
    double rho; /* density, kg/m^3 */
    double cp;  /* specific heat, J/(kg K) */
} heat_material;

typedef enum {
    HEAT_SHAPE_BOX,
    HEAT_SHAPE_SPHERE,
    HEAT_SHAPE_CYLINDER,
    HEAT_SHAPE_FILE
} heat_shape_kind;

/* Where a region or a source lies. A node belongs to it when it lies inside
 * or on it (within 1e-9 of the grid's spacing, so that a box edge drawn on a
 * node takes it). */
typedef struct heat_shape {
    heat_shape_kind kind;
    double min[3], max[3]; /* box */
    double center[3];      /* sphere; cylinder: the two coordinates across its axis */
    double radius;         /* sphere, cylinder */
    int axis;              /* cylinder: 0, 1, 2 for x, y, z */
    double lo, hi;         /* cylinder: its extent along the axis */
    int file;              /* file: index into heat_case.regions.files */
} heat_shape;

typedef struct heat_region {
    int material; /* index into materials; -1 for a file region (the file holds the indices) */
    heat_shape shape;
} heat_region;

typedef struct heat_source {
    heat_shape shape;
    double power; /* W/m^3 */
} heat_source;

typedef struct heat_probe {
    char name[HEAT_MATERIAL_NAME];
    double at[3];
    int64_t node[3]; /* the nearest node (derived) */
} heat_probe;

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

/* time.scheme: forward Euler, or an implicit step solved by multigrid. */
typedef enum {
    HEAT_SCHEME_EXPLICIT,
    HEAT_SCHEME_BACKWARD_EULER,
    HEAT_SCHEME_CRANK_NICOLSON,
    HEAT_SCHEME_COUNT
} heat_scheme;

/* steady.method: march in time to the steady state, or solve it by multigrid. */
typedef enum {
    HEAT_STEADY_EXPLICIT,
    HEAT_STEADY_MULTIGRID,
    HEAT_STEADY_METHOD_COUNT
} heat_steady_method;

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

    double alpha; /* diffusivity: the deck's, or k / (rho c) of a single physical material */

    /* material = { diffusivity } leaves count 0; material = { conductivity,
     * density, specific_heat } gives one, materials = ( ... ) several. */
    struct {
        int count;
        heat_material m[HEAT_MATERIALS_MAX];
    } materials;

    struct {
        int count;
        heat_region r[HEAT_REGIONS_MAX];
        int nfiles;
        struct {
            char path[HEAT_PATH_MAX];
            char dataset[HEAT_NAME_MAX];
        } files[HEAT_FILE_REGIONS_MAX];
    } regions;

    struct {
        int count;
        heat_source s[HEAT_SOURCES_MAX];
    } sources;

    struct {
        int count;
        heat_probe p[HEAT_PROBES_MAX];
    } probes;

    struct {
        int has_end;
        double end;
        int has_max_steps;
        int64_t max_steps;
        int has_dt;
        double dt;                         /* as given in the deck (only when has_dt) */
        char dt_where[HEAT_PATH_MAX + 32]; /* "deck.cfg:7" or "--set", for messages */
        double safety;
        heat_scheme scheme;
        char scheme_where[HEAT_PATH_MAX + 32]; /* as dt_where, where the deck names a scheme */
    } time;

    struct {
        int enabled;
        double tolerance;
        int64_t check_every;
        int64_t
            stall_checks; /* stop when the residual sets no new low in this many checks; 0: never */
        heat_steady_method method;
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
        int temporal_block; /* steps fused per pass (1 to HEAT_TEMPORAL_BLOCK_MAX) */
        int temporal_auto;  /* "auto" in the deck: temporal_block is heat_case_auto_depth's */
        double implicit_tolerance; /* an implicit step's residual relative to its right-hand side */
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
        /* Materials, sources, convective or flux faces: the variable-
         * coefficient update (per-node material index) instead of the
         * uniform one. */
        int general;
        int dt_material; /* the material whose nodes set dt_max (general), or -1 */
        /* Multigrid (heat_case_multigrid): theta of the implicit step (1
         * backward Euler, 1/2 Crank-Nicolson; 1 for the steady solve). A
         * steady multigrid run counts V-cycles as its steps, with dt = 1. */
        double theta;
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
extern const char *const heat_scheme_names[HEAT_SCHEME_COUNT + 1];
extern const char *const heat_steady_method_names[HEAT_STEADY_METHOD_COUNT + 1];

/* The index of `s` in a NULL-terminated table of names, or -1. */
int heat_name_index(const char *const *names, const char *s);

/* A face's condition in words: "dirichlet u = 1", "neumann du/dn = 0.5",
 * "convective h = 25 ambient = 20", "flux 5e+04 W/m^2 in", "periodic";
 * numbers with %.17g when exact, else %g. */
void heat_bc_text(const heat_bc *bc, int exact, char *buf, size_t n);

/* Whether field files carry the material index as point data: with more
 * than one material. */
static inline int heat_case_writes_material(const heat_case *c)
{
    return c->materials.count > 1;
}

/* The smallest and largest conductivity of the case's materials (both 0
 * without materials). */
static inline void heat_case_k_range(const heat_case *c, double *kmin, double *kmax)
{
    *kmin = *kmax = c->materials.count > 0 ? c->materials.m[0].k : 0.0;
    for (int a = 1; a < c->materials.count; a++) {
        if (c->materials.m[a].k < *kmin) *kmin = c->materials.m[a].k;
        if (c->materials.m[a].k > *kmax) *kmax = c->materials.m[a].k;
    }
}

/* Whether two cases have the same materials, regions and sources (what a
 * restart must keep besides the grid, precision and faces); when not, a
 * line per difference is appended to diff. */
int heat_case_same_physics(const heat_case *deck, const heat_case *file, heat_error *diff);

/* A value's name from its table; "?" for a value out of range. */
const char *heat_bc_type_name(heat_bc_type t);
const char *heat_init_type_name(heat_init_type t);
const char *heat_backend_kind_name(heat_backend_kind k);
const char *heat_precision_name(heat_precision p);
const char *heat_kernel_name(heat_kernel k);
const char *heat_face_name(int face);
const char *heat_transport_name(heat_transport t);
const char *heat_pio_name(heat_pio p);
const char *heat_scheme_name(heat_scheme s);

/* Whether the run solves with multigrid: steady.method = "multigrid"
 * (heat_case_steady_multigrid) or an implicit time.scheme. */
static inline int heat_case_steady_multigrid(const heat_case *c)
{
    return c->steady.enabled && c->steady.method == HEAT_STEADY_MULTIGRID;
}
static inline int heat_case_implicit(const heat_case *c)
{
    return c->time.scheme != HEAT_SCHEME_EXPLICIT;
}
static inline int heat_case_multigrid(const heat_case *c)
{
    return heat_case_steady_multigrid(c) || heat_case_implicit(c);
}

/* The deck's words for what makes a multigrid run, for messages:
 * steady.method = "multigrid" or an implicit time.scheme (multigrid). */
static inline const char *heat_case_multigrid_words(const heat_case *c)
{
    return heat_case_steady_multigrid(c) ? "steady.method = \"multigrid\""
                                         : "an implicit time.scheme (multigrid)";
}

/* The default solver.implicit_tolerance of a precision: 1e-10 in double,
 * 1e-5 in float. */
double heat_case_default_implicit_tolerance(heat_precision p);

/* What an implicit step's solve resolves relative to its right-hand side:
 * rounding leaves a residual of about 16 eps |u|max (1 / dt + theta / dt_max)
 * (kernels/mg_solve.c), and max |b| / ((rho c) V) is about |u|max / dt where no
 * source dominates, so 16 eps (1 + theta dt / dt_max). A
 * solver.implicit_tolerance below it ends each step's solve at that floor. */
double heat_case_implicit_floor(const heat_case *c);

/* Whether the steady problem of the case is singular: no Dirichlet face and
 * no convective face with h > 0, so that the steady state is fixed only up
 * to a constant (multigrid keeps the initial mean; docs/DECK.md). */
int heat_case_singular(const heat_case *c);

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

/* solver.temporal_block = "auto": the steps the register_tiled GPU kernel
 * should fuse per pass for this case. The fastest k of `heat bench` on an
 * H100 (docs/PERFORMANCE.md, "Temporal blocking"; 3D at 512^3, 2D at
 * 8192^2): 3D float 3, 3D double 4, 2D float 8, 2D double 4; less where the
 * streaming axis (z in 3D, y in 2D; per rank where parallel.ranks cuts it)
 * has fewer than 8 k points, since a pass of k steps reads 2 k planes beyond
 * its block's own. A general case (materials, sources, convective or flux
 * faces): 4 in 2D (both precisions), 1 in 3D, where its fused kernels are
 * slower than single steps. 1 where nothing fuses: solver.backend = "cpu"
 * or another kernel. A table, not a measurement: it needs no GPU and gives
 * every rank the same answer. heat_case_derive applies it. */
int heat_case_auto_depth(const heat_case *c);

/* The depths a run on one GPU times for "auto" before its loop (the CUDA
 * backend's measure_depth): [*lo, *hi] around k = solver.temporal_block,
 * k - 1 (at least 1) to k + 1, k + 1 only up to HEAT_TEMPORAL_BLOCK_MAX and
 * where the streaming axis has 8 (k + 1) points, the table's own rule.
 * *lo == *hi: nothing to time. */
void heat_case_auto_range(const heat_case *c, int *lo, int *hi);

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
 * changes of single ulps go on for ever. A steady multigrid run evaluates
 * (div k grad u + q) / (rho c) directly, whose rounding is eps umax / dt_max
 * (the stencil's weights sum to about 1 / dt_max). */
double heat_case_residual_floor(const heat_case *c, double umax);

/* What ends a run whose residual stalls above the tolerance, as words that
 * follow "the residual may stall above the tolerance, and then": the stall
 * check's (steady.stall_checks > 0), or, where that is off, the step bound,
 * or none: such a run never ends. */
const char *heat_case_stall_end(const heat_case *c, char *buf, size_t n);

/* ---- the variable-coefficient update (d.general) ------------------------
 *
 * A node's class, one byte, names its material and the summed power of the
 * sources it lies in; the classes of a box are painted by solver/materials.c.
 * The update of node p (class c, material a = mat[c]), in this order in every
 * backend, so that they agree bit for bit:
 *   for each axis d (x, y, z): dm = u_{d-} - u, dp = u_{d+} - u
 *     s_d = w[d][a][m(d-)] dm + w[d][a][m(d+)] dp
 *   s = s_x;  s = s + s_y;  s = s + s_z (3D);  u' = u + (s + q[c])
 * with w[d][a][b] = dt K(a, b) / ((rho c)_a h_d^2) and q[c] = dt q_c / (rho c)_a.
 * A mirrored ghost (Neumann, flux, convective faces) takes the inner node's
 * material and value: dm = (u_1 + g[f][a]) - u for Neumann (g = 2 h gradient)
 * and flux (g = 2 h value / k_a), dm = (u_1 - u) - beta[f][a] (u - ambient)
 * for a convective face (beta = 2 h h_c / k_a). Dirichlet nodes hold their
 * value; a periodic axis wraps. Every table entry is computed in double and
 * rounded once to the run's precision. */
#define HEAT_CLASSES_MAX 256

typedef struct heat_classes {
    int count;
    uint8_t material[HEAT_CLASSES_MAX];
    double power[HEAT_CLASSES_MAX]; /* W/m^3 */
} heat_classes;

typedef struct heat_coeffs {
    int nmat, ncls;
    double *w; /* [3][nmat][nmat], malloc'd */
    double q[HEAT_CLASSES_MAX];
    double power[HEAT_CLASSES_MAX]; /* each class's source power density, W/m^3 (multigrid) */
    uint8_t mat[HEAT_CLASSES_MAX];
    double g[HEAT_NFACES][HEAT_MATERIALS_MAX], beta[HEAT_NFACES][HEAT_MATERIALS_MAX];
    double ambient[HEAT_NFACES];
} heat_coeffs;

/* The tables of the update for the case (derived: its dt) and the classes;
 * HEAT_ERUNTIME when out of memory. Free with heat_coeffs_free. */
int heat_case_coeffs(const heat_case *c, const heat_classes *cls, heat_coeffs *k, heat_error *err);
void heat_coeffs_free(heat_coeffs *k);

/* The conductivity of the face between nodes of materials a and b: the
 * harmonic mean 2 k_a k_b / (k_a + k_b) (exact for layers in series whose
 * interface lies midway between the nodes), k_a itself for a == b. */
double heat_case_face_k(const heat_case *c, int a, int b);

/* Simulated time at `step`: step * dt, and exactly time.end at end_step. */
double heat_case_time(const heat_case *c, int64_t step);

#endif
