/* Multigrid for the steady state and for implicit time steps: the level
 * hierarchy, built once on the host in double (mg_build.c), and the V-cycle's
 * schedule and solve loops (mg_solve.c), shared by the CPU and CUDA
 * backends, which run the level kernels (cpu/cpu_mg.c, cuda/k_mg.cu). Private
 * to kernels/.
 *
 * The operator. Every level holds the same finite-volume form of
 * div(k grad u) on a node-centred grid (each node the centre of its dual
 * cell, half cells on faces that are not periodic):
 *   (A x)_p = sum over the faces f = (p, q) of T_f (x_p - x_q) + D_p x_p
 * T_f = theta K_f a_f / l_f: the face conductivity K_f (the harmonic mean of
 * the two nodes' materials, heat_case_face_k), the area a_f of the dual cell's
 * face (the product of the other axes' dual widths) and the distance l_f of
 * the two nodes; D_p = (rho c)_p V_p / dt (implicit steps) + theta times the
 * convective faces' h_c K_f / k_p a_f. The right-hand side of the steady
 * problem, b, is V_p q_p plus the heat the Neumann, flux and convective faces
 * put in. On the finest level this is the explicit update's operator (the
 * mirrored ghosts of heat_case.h are the half cells) multiplied by the dual
 * volume V_p: L u + q = (b - A u) / V_p, and the explicit run's steady state
 * solves A u = b. max |du/dt| = max |b - A u| / ((rho c)_p V_p).
 * Dirichlet nodes are held: never written, their values enter their
 * neighbours' rows (on coarse levels they hold a zero correction).
 *
 * Faces are numbered by their low node: face i of an axis joins node i to
 * node i + 1, wrapping to node 0 from node n - 1; on an axis that is not
 * periodic that last face has T = 0. So every level reads its neighbours
 * with the same wrap and no branch on the boundary.
 *
 * The finest level computes T from the nodes' materials (a table of theta K
 * per pair of materials, times ih_d times the two other axes' dual widths);
 * coarse levels store T per face and D per node.
 *
 * Coarsening (any grid size): along an axis of m intervals, the intervals
 * pair up; with m odd one stays single (at the end whose interval is the
 * longer, so that short intervals merge; between equal ones at a held end,
 * else at the low end). So coarse grids may be graded.
 * An axis coarsens while it has at least 2 intervals and its longest is at
 * most twice the shortest longest-interval of the axes that can coarsen
 * (semi-coarsening keeps the cells near isotropic). Coarsening stops at a
 * level of at most HEAT_MG_DIRECT_MAX unknowns, which is solved directly (a
 * dense inverse computed at setup). Interpolation P is a product of weights
 * along each axis: a fine node between two coarse nodes of an axis takes
 * them in proportion to the conductivities of its own two faces along it,
 * T_low / (T_low + T_high) from the low one (operator-dependent
 * interpolation: Alcouffe, Brandt, Dendy and Painter, SIAM J. Sci. Stat.
 * Comput. 2, 1981; de Zeeuw, J. Comput. Appl. Math. 33, 1990). With one
 * material these are the weights by distance, which the axis tables hold
 * (wp, wr); with several they are stored per node (wq). Restriction is P^T,
 * and the coarse operator is rediscretised: a coarse face's conductivity is
 * the P^T-weighted sum over the fine lines it spans (across) of the fine
 * faces in series (along); D is restricted as P^T D. For one material on a
 * uniform grid this is exactly the coarse grid's own finite-volume
 * operator; across a jump of conductivity the series along and the weights
 * of P agree (in one dimension P^T A P is then exactly the series), which
 * linear weights do not: with them a 500 : 1 jump let the cycles diverge
 * (docs/PERFORMANCE.md, "Multigrid across materials"). (Briggs, Henson and
 * McCormick, "A Multigrid Tutorial", 2nd ed., 2000, ch. 3 and 7;
 * Trottenberg, Oosterlee and Schueller, "Multigrid", 2001, ch. 5.7 and 7.)
 *
 * Smoother: the Chebyshev polynomial of degree 2 HEAT_MG_SWEEPS on D^-1 A
 * over [lmax / ratio, lmax] (HEAT_MG_CHEB_RATIO_2D, _3D), lmax the
 * Gershgorin bound of each level (Adams, Brezina, Hu and Tuminaro, J.
 * Comput. Phys. 188, 2003), split between the sweeps before and after the
 * coarse correction as Richardson steps at its roots (mg_build.c). Each
 * sweep is x' = x + c0 (x - x_prev) + (c1 / diag) (b - A x) (c0 = 0 for
 * these roots; the kernels keep the general form), a point update of the stencil:
 * no sums, so the backends agree bit for bit.
 */
#ifndef HEAT_MG_H
#define HEAT_MG_H

#include <stdint.h>

#include "heat_case.h"
#include "heat_error.h"
#include "halo.h"
#include "halo_plan.h"
#include "heat_split.h"

#define HEAT_MG_LEVELS_MAX 64
#define HEAT_MG_DIRECT_MAX 512 /* unknowns of the coarsest level, solved by a dense inverse */
#define HEAT_MG_SWEEPS     2   /* smoothing sweeps before and after the coarse correction */
/* The Chebyshev interval is [lmax / ratio, lmax]: the ratios that cut the
 * residual most per V(2,2) cycle on the measure deck (docs/PERFORMANCE.md). */
#define HEAT_MG_CHEB_RATIO_2D 7.0
#define HEAT_MG_CHEB_RATIO_3D 9.0

#define HEAT_MG_WQ_ONE 32768 /* a weight of 1 in heat_mg_level.wq */

/* One axis of one level. */
typedef struct heat_mg_axis {
    int64_t n;
    int periodic;
    int held[2];  /* a Dirichlet face at the low / high end: its nodes are held */
    int64_t *pos; /* n + 1 positions in finest spacings; pos[n]: the period, or pos[n - 1] */
    double *v;    /* n dual widths */
    double *ih;   /* n: 1 / the length of face i, 0 for the last face of an axis not periodic */
    /* Prolongation from the next coarser level: node i takes
     * wp[2i] e[pp[2i]] + wp[2i+1] e[pp[2i+1]] (the second weight 0 where i
     * lies on a coarse node). */
    int64_t *pp;
    double *wp;
    /* Restriction from the next finer level (this level the coarse one):
     * node J gathers sum_t wr[3J+t] r[pr[3J+t]], t = 0, 1, 2 (left, centre,
     * right; weight 0 where there is none). */
    int64_t *pr;
    double *wr;
} heat_mg_axis;

typedef struct heat_mg_level {
    heat_mg_axis ax[3];
    int64_t n[3];
    /* The box of the level that its arrays (t, dg, a backend's x and b)
     * cover: array node (i, j, k) is level node lo + (i, j, k), wrapped
     * (lo[d] may be -1 on a periodic axis). In one process, and on the
     * levels every rank holds whole, the whole level (lo 0, bn = n); on a
     * rank's share of a split level, the nodes it owns with gl[d] and gh[d]
     * (0 or 1) ghost layers at the low and high face of axis d, where a
     * neighbour rank lies. points: the box's nodes. */
    int64_t lo[3], bn[3], points;
    int gl[3], gh[3];
    double *t[3]; /* coarse levels: T of face i along each axis, per node; NULL on level 0 */
    double *dg;   /* coarse levels: D per node (NULL when zero everywhere) */
    double lmax;  /* Gershgorin bound of the eigenvalues of D^-1 A */
    /* Operator-dependent interpolation (heat_mg.opdep), on every level but
     * the coarsest: per node of the box, along axis d, its weight toward the
     * low coarse neighbour times 2^15 (heat_mg_wq_low), the high one's 1
     * minus that, exactly; HEAT_MG_WQ_ONE where the node lies on a coarse
     * node. NULL otherwise: the axis tables' weights. */
    uint16_t *wq[3];
    /* Sweep s (0 .. HEAT_MG_SWEEPS - 1 before the coarse correction, then
     * HEAT_MG_SWEEPS .. 2 HEAT_MG_SWEEPS - 1 after it):
     * x' = x + cheb[s][0] (x - x_prev) + (cheb[s][1] / diag) (b - A x); with
     * cheb[s][0] = 0, x_prev is not read. */
    double cheb[2 * HEAT_MG_SWEEPS][2];
} heat_mg_level;

typedef struct heat_mg {
    int levels;
    heat_mg_level lv[HEAT_MG_LEVELS_MAX];
    /* The finest level's operator: the node's material (mat[cls[p]], or 0
     * where cls is NULL: one material), T_d = kf[a][b] ih_d v_d1 v_d2. */
    int nmat;
    double *kf; /* nmat x nmat: theta K(a, b) */
    double rhoc[HEAT_MATERIALS_MAX];
    uint8_t mat[HEAT_CLASSES_MAX];
    const uint8_t *cls;    /* borrowed from the backend; NULL: material 0 everywhere */
    int opdep;             /* interpolation by the levels' wq: more than one material */
    int64_t clo[3], cn[3]; /* the grid box cls covers (wrapped as a level's box) */
    double *dg0;           /* D of the finest level per node, or NULL when zero */
    double *b0;            /* b of the steady problem per node, or NULL when zero */
    /* The coarsest level's unknowns (node indices) and the inverse of its
     * matrix, row-major. */
    int64_t nc;
    int64_t *cidx;
    double *cinv;
    /* The solve. */
    int implicit;      /* steps of (M / dt + theta A) u' = M / dt u - (1 - theta) A u + b */
    int singular;      /* a steady problem with no Dirichlet or convective face */
    double theta, dt;  /* dt of implicit steps */
    double diag_scale; /* about the largest diag / ((rho c) V) of the finest level */
    double eps;        /* the precision's machine epsilon */
    double tolerance;  /* an implicit step's solve: its residual over its right-hand side's */
    double weight;     /* the sum of (rho c) V over the nodes not held */
    /* A hierarchy split over ranks (heat_mg_build_part): levels 0 .. gather
     * - 1 are split, each rank holding its box; from level `gather` on,
     * every rank holds every level whole (the `tail` hierarchy). 0 in one
     * process. */
    int gather;
} heat_mg;

/* Builds the hierarchy of the case (derived; heat_case_multigrid) with the
 * classes of the grid and their tables (cls and k NULL for a case that is
 * not general). cls is borrowed and must outlive the hierarchy.
 * HEAT_EINPUT when the steady problem is singular and the heat put in by
 * sources and faces does not sum to zero; HEAT_ERUNTIME when out of memory.
 */
int heat_mg_build(const heat_case *c, const uint8_t *cls, const heat_coeffs *k, heat_mg **out,
                  heat_error *err);

/* ---- a hierarchy split over ranks ------------------------------------------
 * Under MPI each rank holds its box of the fine levels: the nodes whose
 * position on the finest grid lies in its part, with one ghost layer on each
 * face with a neighbour (edges and corners included). Every node's
 * arithmetic is the one-process run's, so the results do not depend on the
 * split. Once a level gets small (HEAT_MG_GATHER_POINTS, or a rank would
 * own fewer than 2 nodes along a cut axis), it is gathered onto every rank,
 * and every rank runs the coarse levels below it whole, alike. */

#define HEAT_MG_GATHER_POINTS 32768

/* What the split build needs from the ranks (kernels/ knows no MPI). */
typedef struct heat_mg_dist {
    const heat_case *c;
    heat_part part; /* this rank's part of the finest level (depth 1) */
    void *ctx;
    /* Fills the ghost layers of `a` (values of `vs` bytes over level l's
     * box) from the ranks that own them. */
    int (*exchange)(void *ctx, const heat_mg *m, int l, void *a, size_t vs, heat_error *err);
    /* Collective: v[i] becomes the largest (sum 0; NaN as Inf) or the sum
     * (in MPI's order) over every rank. */
    void (*reduce)(void *ctx, double *v, int n, int sum);
    /* Collective: each rank's `bytes[r]` bytes at `mine`, in rank order,
     * into all on every rank. */
    int (*allgatherv)(void *ctx, const void *mine, void *all, const size_t *bytes, heat_error *err);
} heat_mg_dist;

/* Whether c's multigrid can be split over ranks: HEAT_EINPUT saying why not
 * for a grid small enough to be the coarsest level (one level, solved
 * directly in one process). A singular problem's kept mean is an exact sum
 * (xsum.h), the same bits for every split. */
int heat_mg_split_check(const heat_case *c, heat_error *err);

/* The split hierarchy of c: *out the split levels (this rank's boxes; the
 * axes of every level), *tail the levels from out->gather on, whole. cls
 * (NULL for a case that is not general) covers the grid box clo, cn, which
 * must reach 2 layers beyond the part on each face with a neighbour.
 * HEAT_EINPUT (the same on every rank) as heat_mg_split_check. */
int heat_mg_build_part(const heat_case *c, const heat_mg_dist *dist, const uint8_t *cls,
                       const int64_t clo[3], const int64_t cn[3], const heat_coeffs *k,
                       heat_mg **out, heat_mg **tail, heat_error *err);

/* Level l's box of `a` (values of vs bytes): this rank's owned nodes from
 * every rank into `full` (the whole level, x fastest), on every rank;
 * and back: the box's nodes, ghosts included, from `full`. */
int heat_mg_gather(const heat_mg *m, const heat_mg_dist *dist, int l, size_t vs, const void *a,
                   void *full, heat_error *err);
void heat_mg_scatter(const heat_mg *m, int l, size_t vs, const void *full, void *a);

/* Axis a's tables of level l over its box (mg_part.c; for a whole level
 * the axis's own): v, ih (bn values; 0 for the face beyond a high ghost
 * layer), wp, pp (2 bn: the prolongation from level l + 1, in its box's
 * indices), wr, pr (3 bn: the restriction from level l - 1, in its box's). */
void heat_mg_box_axis(const heat_mg *m, int l, int a, double *v, double *ih, double *wp, double *wr,
                      int64_t *pp, int64_t *pr);

/* The exchange of a split level's ghost layers (mg_part.c), one level's
 * plan made on first use. A backend copies boxes between its array (plan
 * p's layout) and a host buffer through `copy`. */
typedef int (*heat_mg_copy_fn)(void *ctx, const heat_halo_plan *p, const hbox *b, size_t vs,
                               void *level, void *buf, int to_buf, heat_error *err);
typedef struct heat_mg_xchg {
    const heat_case *c;
    heat_part part;
    heat_halo_comm comm;
    heat_halo_plan *plan[HEAT_MG_LEVELS_MAX];
    void *sendbuf, *recvbuf;
    size_t bytes;
    heat_halo_stats st; /* the exchanges since heat_mg_xchg_clear */
    /* Optional, the backend's (NULL: malloc and free, nothing to wait
     * for): its host memory for the buffers, and a wait for the copies to
     * the host that `copy` may have queued, once a phase is packed. */
    void *(*alloc)(void *actx, size_t bytes);
    void (*release)(void *actx, void *p);
    void *actx;
    int (*flush)(void *cctx, heat_error *err);
} heat_mg_xchg;

/* Readies x for c's part over comm, and d (the build's callbacks, host
 * arrays) over x. */
void heat_mg_xchg_init(heat_mg_xchg *x, const heat_case *c, const heat_part *part,
                       const heat_halo_comm *comm, heat_mg_dist *d);
/* Fills the ghost layers of `a` (values of vs bytes over level l's box),
 * counted and timed in x->st (all of it exposed: nothing runs beside). */
int heat_mg_xchg_run(heat_mg_xchg *x, const heat_mg *m, int l, void *a, size_t vs,
                     heat_mg_copy_fn copy, void *cctx, heat_error *err);
/* The copy of host arrays. */
int heat_mg_copy_host(void *ctx, const heat_halo_plan *p, const hbox *b, size_t vs, void *level,
                      void *buf, int to_buf, heat_error *err);
/* Zeroes x->st's counts and times (after the build: the loop's alone). */
void heat_mg_xchg_clear(heat_mg_xchg *x);
void heat_mg_xchg_free(heat_mg_xchg *x);

/* The index in level L's box of level node (i, j, k). */
int64_t heat_mg_box_node(const heat_mg_level *L, int64_t i, int64_t j, int64_t k);

/* For a steady multigrid case whose problem is singular (no Dirichlet or
 * convective face): HEAT_EINPUT when the heat its sources and faces put in
 * does not sum to zero (as heat_mg_build refuses it), else HEAT_OK; what
 * `heat check` says before a run. */
int heat_mg_check_balance(const heat_case *c, const uint8_t *cls, const heat_coeffs *k,
                          heat_error *err);

/* Frees the per-node coefficient arrays (dg0, b0, every level's t, dg and
 * wq) once a backend has its own copies. */
void heat_mg_drop_arrays(heat_mg *m);

/* Frees everything; NULL is a no-op. */
void heat_mg_free(heat_mg *m);

/* Bytes the hierarchy's arrays take in a backend of value size vs (the
 * finest level's two fields excluded): for memory checks and notices. */
double heat_mg_bytes(const heat_mg *m, int vs);

/* As heat_mg_bytes with the finest level's arrays in rows of rp0 values
 * and planes of rows0 rows (heat_mg_gpu_row_pitch, heat_mg_gpu_rows; its
 * box's n[0] and n[1] for none). */
double heat_mg_bytes_rows(const heat_mg *m, int vs, int64_t rp0, int64_t rows0);

/* The rows a plane of the finest level's arrays holds on the GPU (the CUDA
 * backend's field buffers of a multigrid case, which are that level,
 * included) for a grid of n points and values of vs bytes: n[1], and where
 * a plane of rows heat_mg_gpu_row_pitch apart is 2 MiB (512 x 512 doubles,
 * 511 x 512 too, 256 x 1024, 1024 x 512 floats...), n[1] / 64 more,
 * rounded up (3D only), so that planes lie the row pitch times that many
 * values apart. With planes 2 MiB apart the ring of the finest sweeps
 * reads 3.5% more from DRAM per node and the double sweeps take up to 3.6%
 * longer; padded planes of 1 or 4 MiB were slower (docs/PERFORMANCE.md,
 * "padded planes"). HEAT_CUDA_MG_PAD=r pads r rows in every 3D grid
 * instead (0: none), for comparing and for the tests. */
int64_t heat_mg_gpu_rows(const int64_t n[3], size_t vs);

/* The values a row of the finest level's arrays holds on the GPU (as
 * heat_mg_gpu_rows): n[0] rounded up to a multiple of 4, so that the finest
 * sweeps take their rows in 16-byte groups in float and in double (a row
 * of single values costs up to 30% of a cycle, docs/PERFORMANCE.md);
 * HEAT_CUDA_MG_ROWS=packed keeps n[0], for comparing and for the tests. */
int64_t heat_mg_gpu_row_pitch(const int64_t n[3]);

/* Whether c's hierarchy interpolates by the conductivities, weights per node
 * (heat_mg.opdep): where its materials' conductivities differ (else the
 * distance weights of the axis tables are the same), unless the environment's
 * HEAT_MG_INTERP=linear asks for the weights by distance (for comparing the
 * two, and for the test of a diverging solve). */
int heat_mg_opdep(const heat_case *c);

/* The hierarchy heat_mg_build would make for c, from its axes alone (no
 * per-node array, so cheap for any grid): its levels and its bytes as
 * heat_mg_bytes counts them (sources counted as present when the case has
 * any; on the CUDA backend, the finest level's arrays with its padded
 * planes, heat_mg_gpu_rows); what `heat check` says. */
int heat_mg_plan(const heat_case *c, int *levels, double *bytes, heat_error *err);

/* The same for rank `rank` of the split `ranks` (heat_mg_build_part): the
 * bytes of its boxes of the split levels (with their ghost layers) and of
 * the levels every rank holds whole, and how many levels are split (the
 * gather level). */
int heat_mg_plan_part(const heat_case *c, const int ranks[3], int rank, double *bytes, int *split,
                      heat_error *err);

/* ---- the cycle: kernels a backend runs, in this order ---------------------- */

/* A backend's level kernels. Level 0 is the field itself (x[0] the field, x[1]
 * the other time level); each level has two x buffers and b. Sweeps read the
 * current buffer, write the other, and swap; HEAT_MG_SWEEPS is even, so that
 * after a smoothing x is back in buffer 0. */
typedef struct heat_mg_ops {
    /* Sweep `sweep` of level l (mg_level.cheb); zero: the level's x was 0
     * before the smoothing (a coarse level's correction): sweep 0 reads no x,
     * sweep 1 no x_prev. */
    void (*smooth)(void *ctx, int level, int sweep, int zero);
    /* b of level l + 1 = R (b - A x) of level l (the residual in level l's
     * spare buffer on the way). */
    void (*restrict_residual)(void *ctx, int level);
    /* x of the coarsest level = its inverse times b. */
    void (*coarse_solve)(void *ctx);
    /* x of level l += P x of level l + 1 (nodes not held). */
    void (*prolong)(void *ctx, int level);
    /* Level 0: max |b - A x| / ((rho c) V) over the nodes not held, max |x|,
     * and the sum of (rho c) V x (singular problems: the mean kept). */
    int (*norms)(void *ctx, double *rmax, double *umax, double *wsum, heat_error *err);
    /* Level 0: x += delta at every node (singular problems). */
    int (*shift)(void *ctx, double delta, heat_error *err);
    /* Implicit steps: b of level 0 = the step's right-hand side from x; when
     * keep, x is also kept for dudt. *bmax: max |b| / ((rho c) V) over the
     * nodes not held, from the same pass and weighted as norms weights the
     * residual (a maximum: the same bits on every backend). */
    int (*rhs)(void *ctx, int keep, double *bmax, heat_error *err);
    /* max |x - x kept| / dt over the nodes not held. */
    int (*dudt)(void *ctx, double *m, heat_error *err);
    /* Optional: one whole V-cycle at once (the GPU replays a graph of the
     * kernels above); NULL: heat_mg_vcycle calls them one by one. */
    int (*cycle)(void *ctx, heat_error *err);
} heat_mg_ops;

/* One V(HEAT_MG_SWEEPS, HEAT_MG_SWEEPS) cycle on level 0's x and b, through
 * the ops' kernels (never ops->cycle). */
void heat_mg_vcycle(const heat_mg *m, const heat_mg_ops *ops, void *ctx);

/* What the solves report (backend.h's heat_mg_info mirrors it). */
typedef struct heat_mg_state {
    int started;            /* steady: r0 and the mean known */
    double r0, mean0, wsum; /* steady: the start's residual, weighted mean and weight */
    int64_t cycles;         /* steady: cycles run; implicit: the last step's */
    int64_t total_cycles;   /* every cycle of this backend */
    double reduction;       /* residual over the start's (steady) or the step's b (implicit) */
    int zero_rhs;           /* implicit: the step's b was zero (reduction over its first) */
    double residual;        /* the last max |b - A x| / ((rho c) V) */
    int stalled;            /* an implicit step's solve stopped above its tolerance */
    int diverged;           /* ... and above twice its first residual (growth) */
    double growth;          /* implicit: the last step's final residual over its first */
    int64_t steps_done;     /* steps (implicit) or cycles (steady) of the last advance */
} heat_mg_state;

/* The backend's view of a solve's state. */
struct heat_mg_info;
void heat_mg_fill_info(const heat_mg *m, const heat_mg_state *st, struct heat_mg_info *info);

/* ---- timing (heat bench --multigrid) ---------------------------------------------- */

#define HEAT_MG_MARKS (4 * HEAT_MG_LEVELS_MAX + 8)

/* A backend's clock: mark i records a time stamp in the order of its
 * kernels (the GPU: an event on its stream); read gives the n - 1 intervals
 * between marks 0 .. n - 1 in milliseconds, once the work is done. */
typedef struct heat_mg_clock {
    void (*mark)(void *ctx, int i);
    int (*read)(void *ctx, int n, double *ms, heat_error *err);
} heat_mg_clock;

/* The least bytes sweep s of level l moves (value size vs): x, the previous
 * iterate (s > 0), b, D, T (coarse levels) and the classes read, one value
 * written. */
double heat_mg_sweep_bytes(const heat_mg *m, int l, int s, int vs);

/* Runs `runs` V-cycles kernel by kernel with marks between the parts and
 * fills t's parts with their medians (t's cycle and copy times are the
 * backend's to fill), and the mean reduction of the residual per cycle.
 * Steady problems only: the field changes. */
struct heat_mg_timing;
int heat_mg_time_parts(const heat_mg *m, const heat_mg_ops *ops, void *ctx,
                       const heat_mg_clock *clock, int runs, struct heat_mg_timing *t,
                       heat_error *err);

/* The steady solve: `cycles` V-cycles on the field, keeping the start's
 * weighted mean where the problem is singular; *residual (if not NULL):
 * max |du/dt| of the field after the last cycle. */
int heat_mg_steady(const heat_mg *m, const heat_mg_ops *ops, void *ctx, heat_mg_state *st,
                   int64_t cycles, double *residual, heat_error *err);

/* `steps` implicit steps, each solved until its residual is at most
 * m->tolerance times its right-hand side (max |b - A x| <= tolerance max |b|,
 * both over (rho c) V and the nodes not held) or at the rounding floor of the
 * precision; *residual (if not NULL): max |u' - u| / dt of the last step. A
 * step whose solve stops improving first ends the call (st->stalled,
 * st->steps_done). */
int heat_mg_implicit(const heat_mg *m, const heat_mg_ops *ops, void *ctx, heat_mg_state *st,
                     int64_t steps, double *residual, heat_error *err);

#endif
