/* The MPI environment: see parallel.h. Without MPI (HEAT_HAVE_MPI unset)
 * every function here is the one-process version. */
#include "parallel.h"

#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef HEAT_HAVE_MPI
#include <mpi.h>

#include "io_util.h"
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h> /* Open MPI: MPIX_Query_cuda_support */
#endif

struct heat_par {
    int rank, size;
    int thread_level;
    MPI_Comm ctl;  /* agreements of the loop (the main thread) */
    MPI_Comm node; /* the ranks of this node */
    MPI_Comm cart; /* the Cartesian grid of the halos */
    int node_rank, node_size;
    MPI_Request req[2 * HEAT_NFACES];
    int nreq;
};

static heat_par world;
static int started;
static int real_stderr = -1; /* this rank's own standard error */

/* Started by an MPI launcher: the variables that Open MPI, MPICH's Hydra,
 * Slurm's PMI/PMIx and MVAPICH set for the processes they start. */
static int launched(void)
{
    const char *force = getenv("HEAT_MPI");
    if (force && *force) return strcmp(force, "0") != 0;
    static const char *const vars[] = {
        "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",        "PMI_RANK", "PMIX_RANK",
        "MV2_COMM_WORLD_SIZE",  "MPI_LOCALNRANKS", NULL};
    for (int i = 0; vars[i]; i++)
        if (getenv(vars[i])) return 1;
    return 0;
}

static void silence(void)
{
    fflush(stdout);
    fflush(stderr);
    real_stderr = dup(STDERR_FILENO);
    int fd = open("/dev/null", O_WRONLY);
    if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        close(fd);
    }
}

int heat_par_init(int *argc, char ***argv)
{
    if (!launched()) return 0;
    /* HEAT_MPI_THREADS=funneled asks for less, for MPI libraries whose
     * thread support is broken: files are then written in the loop's thread. */
    const char *level = getenv("HEAT_MPI_THREADS");
    const int want =
        level && strcmp(level, "funneled") == 0 ? MPI_THREAD_FUNNELED : MPI_THREAD_MULTIPLE;
    int provided = 0;
    heat_io_h5_start(); /* before MPI: see io_util.h */
    if (MPI_Init_thread(argc, argv, want, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "heat: MPI_Init_thread failed\n");
        return 1;
    }
    started = 1;
    heat_par *p = &world;
    p->thread_level = provided;
    MPI_Comm_rank(MPI_COMM_WORLD, &p->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p->size);
    MPI_Comm_dup(MPI_COMM_WORLD, &p->ctl);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, p->rank, MPI_INFO_NULL, &p->node);
    MPI_Comm_rank(p->node, &p->node_rank);
    MPI_Comm_size(p->node, &p->node_size);
    MPI_Comm_set_errhandler(p->ctl, MPI_ERRORS_RETURN);
    p->cart = MPI_COMM_NULL;
    if (p->rank != 0) silence();
    return 0;
}

void heat_par_finalize(void)
{
    if (!started) return;
    heat_par *p = &world;
    if (p->cart != MPI_COMM_NULL) MPI_Comm_free(&p->cart);
    MPI_Comm_free(&p->node);
    MPI_Comm_free(&p->ctl);
    MPI_Finalize();
    started = 0;
}

heat_par *heat_par_world(void)
{
    return started ? &world : NULL;
}

int heat_par_rank(const heat_par *p)
{
    return p ? p->rank : 0;
}

int heat_par_size(const heat_par *p)
{
    return p ? p->size : 1;
}

int heat_par_threads(const heat_par *p)
{
    return !p || p->thread_level >= MPI_THREAD_MULTIPLE;
}

int heat_par_agree(heat_par *p, int rc, heat_error *err)
{
    if (!p) return rc;
    int lowest = rc != HEAT_OK ? p->size - p->rank : 0;
    MPI_Allreduce(MPI_IN_PLACE, &lowest, 1, MPI_INT, MPI_MAX, p->ctl);
    if (lowest == 0) return HEAT_OK;
    const int root = p->size - lowest;
    heat_error e;
    if (p->rank == root) e = *err;
    MPI_Bcast(&e, (int)sizeof e, MPI_BYTE, root, p->ctl);
    *err = e;
    if (root != 0) heat_error_prefix(err, "rank %d: ", root);
    return err->code;
}

void heat_par_max(heat_par *p, double *v, int n)
{
    if (!p) return;
    for (int i = 0; i < n; i++)
        if (v[i] != v[i]) v[i] = (double)INFINITY;
    MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_MAX, p->ctl);
}

void heat_par_sum(heat_par *p, double *v, int n)
{
    if (p) MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM, p->ctl);
}

void heat_par_bcast(heat_par *p, void *buf, size_t bytes)
{
    if (p) MPI_Bcast(buf, (int)bytes, MPI_BYTE, 0, p->ctl);
}

_Noreturn void heat_par_abort(heat_par *p, int status, const char *msg)
{
    char line[HEAT_ERROR_MSG_MAX + 128];
    int n = snprintf(line, sizeof line, "heat: rank %d: %s (ending every rank)\n", p ? p->rank : 0,
                     msg);
    int fd = real_stderr >= 0 ? real_stderr : STDERR_FILENO;
    if (n > 0 && write(fd, line, (size_t)n) < 0) { /* nothing more to try */
    }
    if (p) MPI_Abort(MPI_COMM_WORLD, status);
    _exit(status);
}

/* ---------------------------------------------------------------- halos */

static int mpi_error(int e, const char *what, heat_error *err)
{
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(e, text, &len);
    return heat_error_set(err, HEAT_ERUNTIME, "halo exchange: %s failed: %s", what, text);
}

static int h_start(void *ctx, const heat_halo_msg *recv, int nrecv, const heat_halo_msg *send,
                   int nsend, size_t value_size, heat_error *err)
{
    heat_par *p = ctx;
    /* values of the run's precision, or multigrid's 16-bit weights (any
     * other size as bytes) */
    const MPI_Datatype t = value_size == sizeof(float)    ? MPI_FLOAT
                           : value_size == sizeof(double) ? MPI_DOUBLE
                           : value_size == 2              ? MPI_UINT16_T
                                                          : MPI_BYTE;
    const size_t per = t == MPI_BYTE ? value_size : 1;
    p->nreq = 0;
    for (int i = 0; i < nrecv + nsend; i++) {
        const heat_halo_msg *m = i < nrecv ? &recv[i] : &send[i - nrecv];
        if (m->count > INT_MAX / per)
            return heat_error_set(err, HEAT_ERUNTIME,
                                  "halo exchange: a face of %zu values is more than one MPI "
                                  "message holds (%d)",
                                  m->count, (int)(INT_MAX / per));
        int e = i < nrecv ? MPI_Irecv(m->buf, (int)(m->count * per), t, m->peer, m->tag, p->cart,
                                      &p->req[p->nreq])
                          : MPI_Isend(m->buf, (int)(m->count * per), t, m->peer, m->tag, p->cart,
                                      &p->req[p->nreq]);
        if (e != MPI_SUCCESS) return mpi_error(e, i < nrecv ? "MPI_Irecv" : "MPI_Isend", err);
        p->nreq++;
    }
    return HEAT_OK;
}

static int h_test(void *ctx, int *done, heat_error *err)
{
    heat_par *p = ctx;
    int e = MPI_Testall(p->nreq, p->req, done, MPI_STATUSES_IGNORE);
    return e == MPI_SUCCESS ? HEAT_OK : mpi_error(e, "MPI_Testall", err);
}

static int h_wait(void *ctx, heat_error *err)
{
    heat_par *p = ctx;
    int e = MPI_Waitall(p->nreq, p->req, MPI_STATUSES_IGNORE);
    p->nreq = 0;
    return e == MPI_SUCCESS ? HEAT_OK : mpi_error(e, "MPI_Waitall", err);
}

static int h_all_ok(void *ctx, int ok)
{
    heat_par *p = ctx;
    int all = ok != 0;
    MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_LAND, p->ctl);
    return all;
}

static int h_bcast(void *ctx, void *buf, size_t bytes)
{
    heat_par *p = ctx;
    return MPI_Bcast(buf, (int)bytes, MPI_BYTE, 0, p->ctl) == MPI_SUCCESS ? HEAT_OK : HEAT_ERUNTIME;
}

static int h_node_allgather(void *ctx, const void *mine, void *all, size_t bytes)
{
    heat_par *p = ctx;
    return MPI_Allgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, p->node) ==
                   MPI_SUCCESS
               ? HEAT_OK
               : HEAT_ERUNTIME;
}

static void h_reduce(void *ctx, double *v, int n, int sum)
{
    if (sum)
        heat_par_sum(ctx, v, n);
    else
        heat_par_max(ctx, v, n);
}

static int h_allgatherv(void *ctx, const void *mine, void *all, const size_t *bytes,
                        heat_error *err)
{
    heat_par *p = ctx;
    int *cnt = malloc(sizeof *cnt * (size_t)p->size), *off = malloc(sizeof *off * (size_t)p->size);
    size_t total = 0;
    int rc = cnt && off ? HEAT_OK : heat_error_set(err, HEAT_ERUNTIME, "out of memory");
    for (int r = 0; !rc && r < p->size; r++) {
        if (total + bytes[r] > INT_MAX) {
            rc = heat_error_set(err, HEAT_ERUNTIME,
                                "gathering %zu bytes onto every rank: more than one MPI call "
                                "moves (%d)",
                                total + bytes[r], INT_MAX);
            break;
        }
        cnt[r] = (int)bytes[r], off[r] = (int)total;
        total += bytes[r];
    }
    if (!rc) {
        const int e = MPI_Allgatherv(mine, cnt[p->rank], MPI_BYTE, all, cnt, off, MPI_BYTE, p->ctl);
        if (e != MPI_SUCCESS) rc = mpi_error(e, "MPI_Allgatherv", err);
    }
    free(cnt), free(off);
    return rc;
}

/* Whether the MPI library takes GPU memory: asked of the library at run time
 * (Open MPI's MPIX_Query_cuda_support, MPICH's MPIX_GPU_query_support), never
 * assumed; HEAT_MPI_GPU_AWARE=0 says no whatever the library says. The CUDA
 * backend then checks it with one exchange of GPU memory before it relies
 * on it. */
static int gpu_aware(void)
{
    const char *force = getenv("HEAT_MPI_GPU_AWARE");
    if (force && strcmp(force, "0") == 0) return 0;
    int aware = 0;
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
    aware = MPIX_Query_cuda_support();
#elif defined(MPIX_GPU_SUPPORT_CUDA)
    if (MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &aware) != MPI_SUCCESS) aware = 0;
#endif
    return aware != 0;
}

void heat_par_halo_comm(heat_par *p, heat_halo_comm *hc)
{
    memset(hc, 0, sizeof *hc);
    hc->ctx = p;
    hc->start = h_start;
    hc->test = h_test;
    hc->wait = h_wait;
    hc->all_ok = h_all_ok;
    hc->bcast = h_bcast;
    hc->node_allgather = h_node_allgather;
    hc->reduce = h_reduce;
    hc->allgatherv = h_allgatherv;
    hc->node_rank = p->node_rank;
    hc->node_size = p->node_size;
    hc->gpu_aware = h_all_ok(p, gpu_aware());
}

int heat_par_writer(heat_par *p, const heat_case *c, const heat_part *part, heat_h5dist **out,
                    heat_error *err)
{
    return heat_h5dist_create(c, part, p->ctl, out, err);
}

/* The Cartesian communicator of the split; its ranks are MPI_COMM_WORLD's
 * (no reordering), in the row-major order heat_split_coord follows. */
int heat_par_cart(heat_par *p, const heat_case *c, const int ranks[3], heat_error *err)
{
    int periods[3];
    for (int a = 0; a < 3; a++) periods[a] = c->bc[2 * a].type == HEAT_BC_PERIODIC;
    if (p->cart != MPI_COMM_NULL) MPI_Comm_free(&p->cart);
    int e = MPI_Cart_create(MPI_COMM_WORLD, 3, ranks, periods, 0, &p->cart);
    if (e != MPI_SUCCESS || p->cart == MPI_COMM_NULL)
        return heat_error_set(err, HEAT_ERUNTIME, "MPI_Cart_create failed");
    MPI_Comm_set_errhandler(p->cart, MPI_ERRORS_RETURN);
    int coord[3], mine[3];
    MPI_Cart_coords(p->cart, p->rank, 3, coord);
    heat_split_coord(ranks, p->rank, mine);
    if (coord[0] != mine[0] || coord[1] != mine[1] || coord[2] != mine[2])
        return heat_error_set(err, HEAT_ERUNTIME,
                              "MPI_Cart_create placed rank %d at (%d, %d, %d), not at (%d, %d, "
                              "%d) as expected",
                              p->rank, coord[0], coord[1], coord[2], mine[0], mine[1], mine[2]);
    return HEAT_OK;
}

#else /* no MPI */

int heat_par_init(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

void heat_par_finalize(void) {}

heat_par *heat_par_world(void)
{
    return NULL;
}

int heat_par_rank(const heat_par *p)
{
    (void)p;
    return 0;
}

int heat_par_size(const heat_par *p)
{
    (void)p;
    return 1;
}

int heat_par_threads(const heat_par *p)
{
    (void)p;
    return 1;
}

int heat_par_agree(heat_par *p, int rc, heat_error *err)
{
    (void)p;
    (void)err;
    return rc;
}

void heat_par_max(heat_par *p, double *v, int n)
{
    (void)p;
    (void)v;
    (void)n;
}

void heat_par_sum(heat_par *p, double *v, int n)
{
    (void)p;
    (void)v;
    (void)n;
}

void heat_par_bcast(heat_par *p, void *buf, size_t bytes)
{
    (void)p;
    (void)buf;
    (void)bytes;
}

_Noreturn void heat_par_abort(heat_par *p, int status, const char *msg)
{
    (void)p;
    fprintf(stderr, "heat: %s\n", msg);
    _exit(status);
}

void heat_par_halo_comm(heat_par *p, heat_halo_comm *hc)
{
    (void)p;
    memset(hc, 0, sizeof *hc);
}

int heat_par_writer(heat_par *p, const heat_case *c, const heat_part *part, heat_h5dist **out,
                    heat_error *err)
{
    (void)p;
    (void)c;
    (void)part;
    *out = NULL;
    return heat_error_set(err, HEAT_ERUNTIME, "this heat was built without MPI");
}

int heat_par_cart(heat_par *p, const heat_case *c, const int ranks[3], heat_error *err)
{
    (void)p;
    (void)c;
    (void)ranks;
    (void)err;
    return HEAT_OK;
}

#endif
