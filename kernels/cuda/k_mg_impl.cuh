/* What k_mg.cu shares with the bench of its cycle (k_mg_bench.cu): the
 * device views of the levels, the state of the hierarchy on the GPU, and
 * the kernels launched one by one. Private to kernels/cuda. */
#ifndef HEAT_K_MG_IMPL_CUH
#define HEAT_K_MG_IMPL_CUH

#include <vector>

#include "cuda_mg.h"

extern "C" {
#include "mg.h"
}

#define MG_CUDA_CHECK(call)                                                                        \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess)                                                                     \
            return heat_error_set(err, HEAT_ERUNTIME, "cuda multigrid: %s failed (%s:%d): %s: %s", \
                                  #call, __FILE__, __LINE__, cudaGetErrorName(e_),                 \
                                  cudaGetErrorString(e_));                                         \
    } while (0)

/* ---- device views ----------------------------------------------------------------- */

template <typename T> struct mgd_level {
    int n[3];
    T *x0, *x1, *b;           /* b NULL: zero */
    const T *t[3], *dg;       /* coarse levels; dg NULL: zero */
    const T *v[3], *ih[3];    /* axes */
    const int *pp[3], *pr[3]; /* prolongation (this level's nodes) and restriction tables */
    const T *wp[3], *wr[3];
    int held[3][2];
    T cheb[2 * HEAT_MG_SWEEPS][2];
};

/* The finest level's tables and arrays. */
template <typename T> struct mgd_fine {
    const T *kf, *rhoc, *mdt;
    const unsigned char *cls, *mat; /* cls NULL: material 0 */
    const T *dg0, *b0;
    T *keep;
    T ct;
    int nmat;
};

struct mg_norms {
    unsigned long long rmax, umax; /* |values| as ordered bits (stencil.cuh's trick) */
    unsigned long long bmax;       /* the implicit right-hand side's, as rmax */
    double wsum;
    /* The field's smallest and largest value as ordered bits of any sign
     * (ordered()), and its sum: history.csv's columns without a download. */
    unsigned long long lo, hi;
    double sum;
};

/* ---- the state ------------------------------------------------------------------------- */

struct cuda_mg {
    heat_mg *m; /* geometry and sizes; its per-node arrays dropped once uploaded */
    bool is_float;
    cudaStream_t stream;
    int sms;
    mgd_level<float> lf[HEAT_MG_LEVELS_MAX];
    mgd_level<double> ld[HEAT_MG_LEVELS_MAX];
    mgd_fine<float> ff;
    mgd_fine<double> fd;
    void *cinv_t; /* the coarsest inverse by columns */
    int *cidx;
    std::vector<void *> owned; /* device memory */
    mg_norms *d_norms, *h_norms;
    unsigned long long *d_max, *h_max;
    heat_mg_state st;
    cudaGraphExec_t graph;
    cudaError_t launch_err; /* the first failed launch of the kernels below */
    cudaEvent_t ev[HEAT_MG_MARKS];
};

/* Waits for the stream; the first failed launch or the wait's error. */
int heat_cuda_mg_finish(cuda_mg *g, heat_error *err);

/* The level kernels one by one (the solver replays them as a graph). */
extern const heat_mg_ops heat_cuda_mg_launch_ops;

#endif
