/* The MPI environment of a run, and the decisions every rank must take
 * alike. MPI is used only when the program was built with it and started by
 * an MPI launcher (mpirun, mpiexec, srun); otherwise heat_par_world() is NULL
 * and everything runs as one process, as without MPI.
 *
 * Under MPI only rank 0 prints: the standard output and error of the other
 * ranks go to /dev/null from the start (their problems reach the user
 * through rank 0, see heat_par_agree, or, as a last resort, through
 * heat_par_abort on the rank's own standard error).
 */
#ifndef HEAT_PARALLEL_H
#define HEAT_PARALLEL_H

#include <stddef.h>
#include <stdio.h>

#include "backend.h"
#include "heat_case.h"
#include "heat_error.h"
#include "heat_split.h"
#include "output.h"

typedef struct heat_par heat_par;

/* Starts MPI when this build has it and an MPI launcher started the process
 * (or HEAT_MPI=1 in the environment; HEAT_MPI=0 never starts it), asking for
 * MPI_THREAD_MULTIPLE (the writer thread writes files collectively while the
 * loop exchanges halos). Returns 0, or the exit status 1 after saying why. */
int heat_par_init(int *argc, char ***argv);

/* Ends MPI (a no-op without it). */
void heat_par_finalize(void);

/* The run's ranks, or NULL when MPI is not in use. */
heat_par *heat_par_world(void);
int heat_par_rank(const heat_par *p);
int heat_par_size(const heat_par *p);

/* Whether a writer thread may use MPI beside the loop (MPI_THREAD_MULTIPLE). */
int heat_par_threads(const heat_par *p);

/* Collective: the status of the lowest rank whose `rc` is not HEAT_OK, with
 * its message in *err (prefixed "rank N: " when N is not 0), on every rank;
 * HEAT_OK when every rank passed HEAT_OK. */
int heat_par_agree(heat_par *p, int rc, heat_error *err);

/* Collective: v[i] becomes the largest v[i] of all ranks (NaN as Inf). */
void heat_par_max(heat_par *p, double *v, int n);

/* Collective: v[i] summed over every rank (in MPI's order: not bit-exact
 * across rank counts, so only for figures that need not be). */
void heat_par_sum(heat_par *p, double *v, int n);

/* Collective: rank 0's bytes at buf on every rank. */
void heat_par_bcast(heat_par *p, void *buf, size_t bytes);

/* The last resort for a rank that cannot reach the next agreement (a
 * failure inside a halo exchange, where its neighbours wait for it): says
 * `msg`, naming the rank, on its own standard error and ends every rank
 * with `status` (MPI_Abort). */
_Noreturn void heat_par_abort(heat_par *p, int status, const char *msg);

/* The decomposition (solver/decomp.c, collective): the split of the case
 * over the ranks (parallel.ranks, or the one with the fewest halo points),
 * the Cartesian communicator and this rank's part. HEAT_EINPUT, the same
 * on every rank, when the split does not fit. */
int heat_par_decompose(heat_par *p, const heat_case *c, heat_part *part, heat_error *err);

/* The split of the case over `nranks` ranks: parallel.ranks (whose product
 * must be nranks, and which must fit), or the fitting one with the fewest
 * halo points; HEAT_EINPUT naming the numbers when there is none. */
int heat_decomp_split(const heat_case *c, int nranks, int ranks[3], heat_error *err);

/* The Cartesian communicator of `ranks` (MPI_Cart_create, periodic where
 * the case is, no reordering), for decomp.c. */
int heat_par_cart(heat_par *p, const heat_case *c, const int ranks[3], heat_error *err);

/* The transport seam for the halos of the decomposed grid (backend.h), over
 * MPI point-to-point messages on the Cartesian communicator. */
void heat_par_halo_comm(heat_par *p, heat_halo_comm *hc);

/* The writer of field files for `part` (io/h5part.h), collective. */
int heat_par_writer(heat_par *p, const heat_case *c, const heat_part *part, heat_h5dist **out,
                    heat_error *err);

/* What `heat check` prints about the split: each rank's box, memory and
 * halo values per exchange. */
void heat_par_print_split(FILE *out, const heat_case *c, const int ranks[3]);

#endif
