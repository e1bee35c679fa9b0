/* The backend seam: whatever owns the field on its device (the OpenMP CPU
 * backend, the CUDA backend) behind one interface. The driver, `heat bench`
 * and the tests see only these calls; a backend never reads the deck, only
 * the validated, derived case.
 *
 * The seam has one home, kernels/: this public header, the private table of
 * operations each backend fills (backend_impl.h) and the dispatch
 * (backend.c). Nothing above kernels/ includes a backend's own header.
 */
#ifndef HEAT_BACKEND_H
#define HEAT_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "halo.h"
#include "heat_case.h"
#include "heat_error.h"

typedef struct heat_backend heat_backend;

/* Creates the backend the case asks for (solver.backend): "cpu"; "cuda"
 * (HEAT_ERUNTIME with the reason when this build or machine has no usable
 * GPU); "auto" (CUDA when usable, else the CPU, with a line saying why on
 * `notices` if not NULL). `c` must have been through heat_case_derive() and
 * must outlive the backend. Allocates both time levels of the field; returns
 * HEAT_ERUNTIME naming the bytes needed when memory is short. */
int heat_backend_create(const heat_case *c, FILE *notices, heat_backend **out, heat_error *err);

/* HEAT_EINPUT when solver.backend = "cuda" and this heat was built without
 * CUDA: a deck this program can never run, checked by the run and by
 * `heat check`. */
int heat_backend_check_build(const heat_case *c, heat_error *err);

/* HEAT_EINPUT when parallel.transport = "nccl" and the run is on the CPU
 * (`on_cpu`): a deck error, checked by the run and by `heat check`. */
int heat_backend_check_transport(const heat_case *c, int on_cpu, heat_error *err);

/* As heat_backend_create, for one rank's part of a grid split over ranks
 * (part->size > 1): the backend holds the part's box with `part->depth`
 * ghost layers on each face that has a neighbour, and exchanges them through
 * `comm` (or, for the CUDA backend with parallel.transport = "nccl" or
 * "auto", through NCCL). Collective: every rank of the run calls it, and
 * gets the same status (the message may differ). "auto" takes the GPU only
 * when every rank has a usable one. Each rank's GPU is chosen by its rank on
 * its node; ranks that share a GPU work through host memory, with a notice.
 * Upload and download then move the part's box (part->n[0] * n[1] * n[2]
 * values, x fastest), and upload, advance and bench_halo are collective. */
int heat_backend_create_part(const heat_case *c, const heat_part *part, const heat_halo_comm *comm,
                             FILE *notices, heat_backend **out, heat_error *err);

/* Copies a host field (nx*ny*nz values of the case's precision, x fastest,
 * Dirichlet faces already holding their values) to the backend. */
int heat_backend_upload(heat_backend *b, const void *host_field, heat_error *err);

/* Runs `steps` >= 1 forward Euler steps (boundaries applied in every step,
 * solver.temporal_block steps per pass where the backend fuses steps). When
 * `residual` is not NULL, stores max |u^{n+1} - u^n| / dt of the last step in
 * it (NaN or Inf when the field is no longer finite). */
int heat_backend_advance(heat_backend *b, int64_t steps, double *residual, heat_error *err);

/* heat_backend_advance in two halves, where the backend offers them
 * (heat_backend_queues: the GPU, which runs the steps asynchronously, and
 * the CPU, which runs them in wait; on the whole grid or a rank's part):
 * queue returns once the steps are queued (`residual`: their last step's
 * residual is wanted), wait waits for them and stores that residual.
 * Between the two, the caller
 * may do host work and call heat_backend_field_stats alone, which then gives
 * the statistics of the field before the queued steps, if that field's
 * statistics came with a residual (a check step's advance brings them back
 * with it); nothing else may use the backend. Not offered for multigrid
 * cases. On a rank's part the steps exchange halos: every rank must queue
 * and wait for the same steps. */
int heat_backend_queues(const heat_backend *b);
int heat_backend_queue(heat_backend *b, int64_t steps, int residual, heat_error *err);
int heat_backend_wait(heat_backend *b, double *residual, heat_error *err);

/* Readies what the first steps would otherwise pay for once (the GPU loads a
 * kernel when it first runs it): call after upload, before timing a loop.
 * Leaves the field as it was. */
int heat_backend_warm(heat_backend *b, heat_error *err);

/* Copies the current field to host memory of nx*ny*nz values. */
int heat_backend_download(heat_backend *b, void *host_field, heat_error *err);

/* Host memory suited to downloads (page-locked for the CUDA backend, where
 * it can be had; else plain malloc), and its release. NULL when out of
 * memory. */
void *heat_backend_host_alloc(heat_backend *b, size_t bytes);
void heat_backend_host_free(heat_backend *b, void *p);

/* One line describing the backend ("cpu: OpenMP, 8 threads"). */
const char *heat_backend_describe(const heat_backend *b);

/* Frees everything; NULL is a no-op. */
void heat_backend_destroy(heat_backend *b);

/* The values one time level of c's field takes where c's backend holds it:
 * the whole grid (part NULL) or a rank's part with its ghost layers. With
 * solver.backend = "cuda", rows padded to 16 bytes (planes, for multigrid)
 * as the CUDA backend lays them out; else packed. heat check's figures. */
int64_t heat_backend_held_values(const heat_case *c, const heat_part *part);

/* The backends compiled into this program, for --version: "cpu" or "cpu, cuda". */
const char *heat_backend_builtin(void);

/* Whether this build has a GPU backend (known without looking for a GPU). */
int heat_backend_has_gpu_build(void);

/* Whether its GPU backend runs the variable-coefficient update (materials,
 * sources, convective and flux faces); where not, solver.backend = "auto"
 * runs such cases on the CPU. */
int heat_backend_gpu_general(void);

/* Whether a GPU the CUDA backend can run on is present. When not, writes the
 * reason ("this heat was built without CUDA", "no CUDA device found", the
 * driver's message) into why[n] and returns 0. */
int heat_backend_gpu_usable(char *why, size_t n);

/* Whether the machine has no CUDA device at all, so that GPU tests may skip:
 * where heat_backend_gpu_usable says no but a device is there (a driver too
 * old, no code for its architecture), they fail instead. Always 1 in a
 * build without CUDA, which has no GPU tests. */
int heat_backend_gpu_absent(void);

/* Makes the node_rank-th GPU of the node (modulo their number) the one this
 * process uses, before anything else of CUDA runs: one GPU per rank. A
 * no-op without CUDA. heat_backend_create_part does it itself. */
void heat_backend_select_gpu(int node_rank);

/* The name of the GPU the CUDA backend would use into buf[n] ("" when there
 * is none or the build has no CUDA). */
void heat_backend_gpu_name(char *buf, size_t n);

/* ---- the variable-coefficient update (c->d.general) ----------------------
 * Materials, sources, convective and flux faces: each node has a class (one
 * byte: its material and source, heat_case.h). The caller paints the
 * classes of the box the backend asks for and hands them over with the
 * tables of the update, before the first advance. */

/* The box of grid nodes, in the grid's indices, whose classes the backend
 * holds: its whole array, ghost layers included (lo may be below 0 and
 * lo + n beyond the grid: periodic images, or nodes beyond a face that are
 * never read). */
void heat_backend_class_box(const heat_backend *b, int64_t lo[3], int64_t n[3]);

/* The classes of that box (n[0] * n[1] * n[2] bytes, x fastest) and the
 * tables (copied). HEAT_ERUNTIME when out of memory. */
int heat_backend_set_classes(heat_backend *b, const uint8_t *cls, const heat_coeffs *k,
                             heat_error *err);

/* ---- multigrid (steady.method = "multigrid", implicit time.scheme) ----------
 * For such a case (heat_case_multigrid) advance runs, instead of forward
 * Euler steps, V-cycles of the steady solve (`steps` cycles; the residual is
 * max |du/dt| = |div k grad u + q| / (rho c) of the field after the last
 * cycle) or implicit steps, each one multigrid solve to
 * solver.implicit_tolerance relative to the step's right-hand side (the
 * residual is max |u' - u| / dt of the last step, as for explicit runs).
 * docs/ARCHITECTURE.md, "Multigrid". */

#define HEAT_BACKEND_MG_LEVELS 64

typedef struct heat_mg_info {
    int64_t cycles;       /* steady: cycles run so far; implicit: the last step's solve */
    int64_t total_cycles; /* every V-cycle of the run */
    double reduction;     /* residual over the start's (steady) or the last step's b (implicit) */
    int zero_rhs;         /* implicit: the last step's b was zero, reduction over its first */
    int stalled;          /* the last advance stopped at a step whose solve stalled */
    int diverged;         /* ... whose residual ended above twice its first (growth) */
    double growth;        /* implicit: the last step's final residual over its first */
    int64_t steps_done;   /* cycles or steps the last advance completed */
    int levels;
    char text[256]; /* "V(2,2), Chebyshev smoother, 7 levels 513x513x513 ... 9x9x9 ..." */
} heat_mg_info;

/* Builds the level hierarchy, after heat_backend_set_classes where the case
 * is general, before the first advance. HEAT_EINPUT (a deck error) when the
 * steady problem is singular (no Dirichlet or convective face) and its
 * sources and faces do not put in a net zero heat; HEAT_ERUNTIME when memory
 * is short or the backend does not offer multigrid. */
int heat_backend_mg_setup(heat_backend *b, heat_error *err);

/* heat check: for a steady multigrid case whose problem is singular,
 * HEAT_EINPUT when its heat input does not balance (what mg_setup would
 * refuse); cls and k the grid's classes and tables (NULL when not general). */
int heat_backend_mg_check(const heat_case *c, const uint8_t *cls, const heat_coeffs *k,
                          heat_error *err);

/* What the last advance of a multigrid case did. */
void heat_backend_mg_info(const heat_backend *b, heat_mg_info *info);

/* heat bench --multigrid: one V-cycle's parts per level, timed on the
 * backend's clock (medians of `runs` cycles run kernel by kernel), the whole
 * cycle as the solver runs it, and a copy of the field for the ceiling. */
typedef struct heat_mg_level_timing {
    int64_t n[3];
    double smooth_ms;    /* the level's 2 HEAT_MG_SWEEPS sweeps in one cycle */
    double smooth_bytes; /* the least those sweeps must move through memory */
    double restrict_ms;  /* the residual and its restriction to the next level */
    double prolong_ms;   /* the correction from the next level */
} heat_mg_level_timing;

typedef struct heat_mg_timing {
    int levels;
    heat_mg_level_timing lv[HEAT_BACKEND_MG_LEVELS];
    double coarse_ms; /* the coarsest level's direct solve */
    double norms_ms;  /* max |du/dt| of the field */
    double parts_ms;  /* the sum of the parts above */
    double cycle_ms;  /* one whole cycle as the solver runs it (a CUDA graph on the GPU) */
    double copy_ms, copy_bytes; /* a copy of the field, for the memory ceiling */
    double reduction;           /* the residual's reduction per cycle over the timed cycles */
    /* Mixed precision (filled by the CUDA backend for a double steady case of
     * one material, else mixed_cycles 0): from the start field, corrections
     * (the double residual, mixed_inner float V-cycles on it from zero, the
     * float correction added in double) until the double residual fell by
     * 1e-10; wall seconds, as the double solve is timed. */
    int mixed_cycles, mixed_inner;
    double mixed_s;
    double mixed_reduction; /* the final residual over the first */
} heat_mg_timing;

int heat_backend_mg_bench(heat_backend *b, int runs, heat_mg_timing *t, heat_error *err);

/* ---- what history.csv and probes.csv read ---------------------------------- */

/* The smallest, the largest and the sum of the field's values over the
 * nodes this backend owns (its box of a distributed grid). */
int heat_backend_field_stats(heat_backend *b, double *min, double *max, double *sum,
                             heat_error *err);

/* The values of the field at n nodes this backend owns, given by their index
 * in its owned box (x fastest). */
int heat_backend_sample(heat_backend *b, int n, const int64_t *index, double *values,
                        heat_error *err);

/* ---- optional operations: measurement and tests --------------------------
 * A backend may leave these out; then they return HEAT_EINPUT saying so. */

/* For `heat bench`: `runs` pairs of (a copy of one field into scratch memory
 * of the same size, then `steps` steps in passes of solver.temporal_block
 * fused steps), each timed on the backend's own clock (CUDA events on the
 * GPU, the wall clock around complete calls on the CPU); the medians in
 * milliseconds. The field is untouched apart from the steps. */
int heat_backend_bench_time(heat_backend *b, int steps, int runs, double *copy_ms, double *steps_ms,
                            heat_error *err);

/* What the halo exchange has cost so far (all zero for a whole grid). */
void heat_backend_halo_stats(const heat_backend *b, heat_halo_stats *stats);

/* For `heat bench` on a part: `runs` halo exchanges of the current field,
 * each pack, transfer and unpack timed apart (one after the other, nothing
 * hidden); the medians in milliseconds. Collective. */
int heat_backend_bench_halo(heat_backend *b, int runs, double *pack_ms, double *transfer_ms,
                            double *unpack_ms, heat_error *err);

/* For tests: the exact sum (kernels/xsum.h) of v[0 .. n) as the GPU forms a
 * multigrid sum (kernels/cuda/xsum.cuh), `per` consecutive terms a
 * thread, into *sum (normalised: equal sums, equal digits). HEAT_ERUNTIME
 * where no GPU is usable or the build has no CUDA. */
struct heat_xsum;
int heat_backend_gpu_xsum(const double *v, int64_t n, int per, struct heat_xsum *sum,
                          heat_error *err);

/* For tests: fills every node of the next time level that a sweep must write
 * (all but the Dirichlet faces) with NaN, so that a point a kernel skips
 * shows up in the result. */
int heat_backend_poison_next(heat_backend *b, heat_error *err);

#endif
