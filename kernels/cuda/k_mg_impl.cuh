/* What k_mg.cu shares with the bench of its cycle (k_mg_bench.cu): the
 * device views of the levels, the state of the hierarchy on the GPU, and
 * the kernels launched one by one. Private to kernels/cuda. */
#ifndef HEAT_K_MG_IMPL_CUH
#define HEAT_K_MG_IMPL_CUH

#include <vector>

#include "cuda_mg.h"
#include "cuda_check.cuh"
#include "stencil.cuh"

extern "C" {
#include "mg.h"
#include "xsum.h"
}
#include "xsum.cuh"

#define MG_CUDA_CHECK(call) HEAT_CUDA_CHECK_AS("cuda multigrid", call)

/* ---- the operator at a node (kernels/mg_point.inc) by precision ------------------- */

#define MG_T   float
#define MG_SFX f
#define MG_FN  static __device__ __forceinline__
#include "mg_point.inc"
#undef MG_T
#undef MG_SFX
#define MG_T   double
#define MG_SFX d
#include "mg_point.inc"
#undef MG_T
#undef MG_SFX
#undef MG_FN

/* The operator's pieces by precision. */
template <typename T> static __device__ __forceinline__ T wq_low(unsigned q);
template <> __device__ __forceinline__ float wq_low<float>(unsigned q)
{
    return heat_mg_wq_low_f(q);
}
template <> __device__ __forceinline__ double wq_low<double>(unsigned q)
{
    return heat_mg_wq_low_d(q);
}
template <typename T> static __device__ __forceinline__ T wq_high(unsigned q);
template <> __device__ __forceinline__ float wq_high<float>(unsigned q)
{
    return heat_mg_wq_high_f(q);
}
template <> __device__ __forceinline__ double wq_high<double>(unsigned q)
{
    return heat_mg_wq_high_d(q);
}
static __device__ __forceinline__ float resid(float b, float dg, float c, const float nb[6],
                                              const float t[6], float *diag)
{
    return heat_mg_resid_f(b, dg, c, nb, t, diag);
}
static __device__ __forceinline__ double resid(double b, double dg, double c, const double nb[6],
                                               const double t[6], double *diag)
{
    return heat_mg_resid_d(b, dg, c, nb, t, diag);
}
static __device__ __forceinline__ float tsum(const float t[6])
{
    return heat_mg_tsum_f(t);
}
static __device__ __forceinline__ double tsum(const double t[6])
{
    return heat_mg_tsum_d(t);
}
static __device__ __forceinline__ float resid_ts(float b, float dg, float c, const float nb[6],
                                                 const float t[6], float ts, float *diag)
{
    return heat_mg_resid_ts_f(b, dg, c, nb, t, ts, diag);
}
static __device__ __forceinline__ double resid_ts(double b, double dg, double c, const double nb[6],
                                                  const double t[6], double ts, double *diag)
{
    return heat_mg_resid_ts_d(b, dg, c, nb, t, ts, diag);
}
static __device__ __forceinline__ float weight(float c1, float diag)
{
    return heat_mg_weight_f(c1, diag);
}
static __device__ __forceinline__ double weight(double c1, double diag)
{
    return heat_mg_weight_d(c1, diag);
}
static __device__ __forceinline__ float sweep_value(int up, float c, float prev, float r, float w,
                                                    float c0)
{
    return heat_mg_sweep_value_f(up, c, prev, r, w, c0);
}
static __device__ __forceinline__ double sweep_value(int up, double c, double prev, double r,
                                                     double w, double c0)
{
    return heat_mg_sweep_value_d(up, c, prev, r, w, c0);
}
static __device__ __forceinline__ float face(float k, float ih, float va, float vb)
{
    return heat_mg_face_f(k, ih, va, vb);
}
static __device__ __forceinline__ double face(double k, double ih, double va, double vb)
{
    return heat_mg_face_d(k, ih, va, vb);
}
static __device__ __forceinline__ float face_geometry(float ih, float va, float vb)
{
    return heat_mg_face_geometry_f(ih, va, vb);
}
static __device__ __forceinline__ double face_geometry(double ih, double va, double vb)
{
    return heat_mg_face_geometry_d(ih, va, vb);
}
static __device__ __forceinline__ float face_k(float k, float g)
{
    return heat_mg_face_k_f(k, g);
}
static __device__ __forceinline__ double face_k(double k, double g)
{
    return heat_mg_face_k_d(k, g);
}
static __device__ __forceinline__ float rhs_value(float c, float ac, float m, float ct, float b0)
{
    return heat_mg_rhs_f(c, ac, m, ct, b0);
}
static __device__ __forceinline__ double rhs_value(double c, double ac, double m, double ct,
                                                   double b0)
{
    return heat_mg_rhs_d(c, ac, m, ct, b0);
}

/* ---- what the stencil passes share ------------------------------------------------ */

/* What a pass of the stencil does at each node. */
enum { P_SMOOTH, P_RESID, P_RHS, P_NORMS };

static __device__ __forceinline__ int wrapm(int i, int n)
{
    return i == 0 ? n - 1 : i - 1;
}
static __device__ __forceinline__ int wrapp(int i, int n)
{
    return i == n - 1 ? 0 : i + 1;
}

template <typename T> __device__ __forceinline__ unsigned long long abs_bits(T v)
{
    return (unsigned long long)__double_as_longlong(fabs((double)v));
}

/* ---- device views ----------------------------------------------------------------- */

template <typename T> struct mgd_level {
    int n[3];
    int rows; /* rows a plane of x0, x1, b: n[1], or more (the finest level's padding) */
    /* values a row of x0, x1, b and the per-node arrays: n[0], or more (the
     * finest level of one process: whole groups, heat_mg_gpu_row_pitch);
     * what lies past n[0] stays finite (zeros, or shifted zeros) */
    int rp;
    T *x0, *x1, *b;           /* b NULL: zero */
    const T *t[3], *dg;       /* coarse levels; dg NULL: zero */
    const T *v[3], *ih[3];    /* axes */
    const int *pp[3], *pr[3]; /* prolongation (this level's nodes) and restriction tables */
    const T *wp[3], *wr[3];
    const unsigned short *wq[3]; /* per node (mg.h); NULL: the tables' weights */
    int held[3][2];
    T cheb[2 * HEAT_MG_SWEEPS][2];
};

/* The distance of L's planes in its arrays, in values. */
template <typename T> __host__ __device__ __forceinline__ long long mg_plane(const mgd_level<T> &L)
{
    return (long long)L.rp * L.rows;
}

/* The finest level's tables and arrays. */
template <typename T> struct mgd_fine {
    const T *kf, *rhoc, *mdt;
    const unsigned char *mtl; /* each node's material, as the field; NULL: material 0 */
    const T *dg0, *b0;
    T *keep;
    T ct;
    int nmat;
    int wsum; /* a singular problem: the norms pass sums (rho c) V x (mg_norms::ws) */
};

struct mg_norms {
    unsigned long long rmax, umax; /* |values| as ordered bits (stencil.cuh's trick) */
    unsigned long long bmax;       /* the implicit right-hand side's, as rmax */
    /* a singular problem's sum of (rho c) V x over the nodes not held,
     * exact (xsum.cuh): the CPU backend's bits, for any split */
    heat_gx ws;
};

/* The end of a norms pass: the block's largest |r| and |u| and, where the
 * pass sums (with_ws, the same for the whole grid), its terms into
 * `norms` (every thread of the block calls it). */
static __device__ __forceinline__ void mg_norms_flush(mg_norms *norms, unsigned long long rm,
                                                      unsigned long long um, heat_gx_win &ws,
                                                      bool with_ws)
{
    hk_block_max(rm, &norms->rmax);
    __syncthreads(); /* hk_block_max's shared slots, used again */
    hk_block_max(um, &norms->umax);
    if (with_ws) heat_gx_flush(ws, &norms->ws);
}

/* ---- the state ------------------------------------------------------------------------- */

struct cuda_mg {
    heat_case c; /* the case it was made for (its arrays borrowed) */
    heat_mg *m;  /* geometry and sizes; its per-node arrays dropped once uploaded */
    bool is_float;
    cudaStream_t stream;
    int sms;
    int rows0; /* rows a plane of the field's buffers (heat_cuda_mg_create) */
    int rp0;   /* values a row of them */
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
    /* HEAT_CUDA_MG_POINT=1: the finest level's passes by the point kernel
     * even where k_mg_fine.cu's serve (for comparing the two) */
    bool point_l0;
    /* HEAT_CUDA_MG_PAIR=1 or 0: every pass of one material on the finest
     * level by the kernel of two planes an iteration, or none (-1: the
     * measured choice; heat_cuda_mg_fine_pass) */
    int pair_l0;
    cudaEvent_t ev[HEAT_MG_MARKS];
    /* A split run (kernels/mg.h, "a hierarchy split over ranks"): m holds
     * this rank's boxes of levels 0 .. m->gather (views lf/ld below
     * m->gather, its own two level-0 buffers, and the box of level
     * m->gather in gf/gd), tail the levels from m->gather on, whole, in
     * lf/ld; halos through host memory. */
    heat_mg *tail;
    mgd_level<float> gf;
    mgd_level<double> gd;
    heat_mg_xchg xchg;
    heat_mg_dist dist;
    std::vector<char> hbox, hfull; /* level m->gather: a box and the whole level, on the host */
    int split_rc;                  /* the first failure of an exchange inside a cycle */
    heat_error split_err;
};

/* The largest number of materials whose face table (nmat^2 values)
 * k_mg_fine.cu stages in shared memory; with more, the point kernel runs
 * the finest level's passes. */
#define MG_FINE_NMAT 16

/* The finest level's sweeps, residual and norms in the register-tiled
 * style (k_mg_fine.cu; several materials: F.nmat <= MG_FINE_NMAT): PASS is
 * P_SMOOTH (sweep `sweep`, not from a zero iterate), P_RESID or P_NORMS;
 * the same nodes, values and order as mg_pass_kernel's. pair: 1 or 0 to
 * force or forbid the kernel of two planes an iteration, -1 for the
 * measured choice (cuda_mg's pair_l0). */
template <typename T, int PASS>
cudaError_t heat_cuda_mg_fine_pass(const mgd_level<T> &L, const mgd_fine<T> &F, int sweep, int pair,
                                   mg_norms *norms, cudaStream_t stream);

/* Waits for the stream; the first failed launch or the wait's error. */
int heat_cuda_mg_finish(cuda_mg *g, heat_error *err);

/* The level kernels one by one (the solver replays them as a graph). */
extern const heat_mg_ops heat_cuda_mg_launch_ops;

/* Mixed precision on a double steady hierarchy g of a case that is not
 * general (one material, no sources, convective or flux faces;
 * heat_mg_timing's mixed_*): from g's field, corrections of the double
 * residual, *inner float V-cycles on it from zero (a float hierarchy of the
 * same case) and the correction added in double, until max |du/dt| fell by
 * `rel` or 200 corrections; *cycles 0 where g is not such a hierarchy. */
int heat_cuda_mg_mixed(cuda_mg *g, double rel, int *cycles, int *inner, double *sec,
                       double *reduction, heat_error *err);

#endif
