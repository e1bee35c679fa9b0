/* What every CUDA stencil kernel shares: the argument block, the boundary
 * mapping, the point update and the residual reduction.
 *
 * Axes. A 3D grid is swept as planes (x, p = y) streamed along w = z; a 2D
 * grid as rows (x) streamed along w = y, with no p axis. So one kernel body
 * serves both, and "in 2D the same idea streams along y" falls out of it.
 *
 * Numerics (the CPU backend's formula, kernels/cpu/cpu_sweep.inc, bit for bit):
 *   d_a = fma(-2, c, m_a + p_a)                 per axis: (m + p) - 2c, rounded
 *                                               once after the sum
 *   s   = rx d_x
 *   s   = fma(rp, d_p, s)                       (3D only)
 *   s   = fma(rw, d_w, s)
 *   u'  = c + s
 * where m_a, p_a are the neighbours as read plus a = 2 h g on a Neumann
 * ghost. fma is IEEE 754's fused multiply-add, exactly rounded, so C's fma()
 * on the CPU and the GPU's FFMA/DFMA give the same bits. A constant field
 * stays constant exactly: m + p = 2c, d = 0, s = 0, u' = c. The files are
 * still compiled with --fmad=false so that nothing else is contracted: only
 * the multiply-adds written here are fused, as in the C reference.
 * A Dirichlet node is never written: both time levels hold its value.
 */
#ifndef HEAT_CUDA_STENCIL_CUH
#define HEAT_CUDA_STENCIL_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>

/* The bc codes of heat_case.h (heat_bc_type), repeated so that kernels need
 * no C header; cuda_backend.cu checks that they agree. */
enum { HK_DIRICHLET = 0, HK_NEUMANN = 1, HK_PERIODIC = 2 };

template <typename T> struct heat_stencil_args {
    const T *__restrict__ u;   /* current level */
    T *__restrict__ out;       /* next level */
    int nx, np, nw;            /* points along x, p (1 in 2D), w */
    long long sp, sw;          /* strides of p and w, in values */
    T rx, rp, rw;              /* alpha dt / h^2 per axis */
    T gx[2], gp[2], gw[2];     /* Neumann ghost constants 2 h g, low and high face */
    int bx[2], bp[2], bw[2];   /* HK_* per face */
    int wchunk;                /* planes per block along w (streaming kernels) */
    unsigned long long *resid; /* max |u' - u| as double bits, or NULL */
    /* Values after the nx of each row that belong to no node (a padded
     * row's end): a kernel may store into them. 0 where what follows may be
     * another part of the array (a part's view that ends before its row's
     * data does). */
    int xpad;
};

/* Whether every row of the field starts on a 16-byte boundary (both
 * buffers and both strides), so that groups of VX values from a column
 * that is a multiple of VX load and store as one vector: with rows padded
 * to 16 bytes (cuda_backend.cu, row_pitch) whatever nx is. In
 * register_tiled a group that reaches past nx takes the one-value path;
 * the fused passes: temporal.cuh, TB_PADDED. */
template <typename T> __host__ __device__ inline bool hk_rows16(const heat_stencil_args<T> &a)
{
    constexpr long long V = 16 / sizeof(T);
    return a.sp % V == 0 && a.sw % V == 0 && ((uintptr_t)a.u & 15) == 0 &&
           ((uintptr_t)a.out & 15) == 0;
}

/* Index of the neighbour `i` (-1 .. n) on an axis of n points: inside, the
 * periodic wrap, the mirrored Neumann node, or any valid index where the value
 * is never used (a Dirichlet face's ghost, slots beyond the grid). */
__device__ __forceinline__ int hk_map(int i, int n, const int b[2])
{
    if (i < 0) return b[0] == HK_PERIODIC ? n - 1 : (b[0] == HK_NEUMANN ? 1 : 0);
    if (i >= n) {
        if (i == n) return b[1] == HK_PERIODIC ? 0 : (b[1] == HK_NEUMANN ? n - 2 : n - 1);
        return n - 1;
    }
    return i;
}

/* Whether node i of an axis lies on a Dirichlet face (never written). */
__device__ __forceinline__ bool hk_held(int i, int n, const int b[2])
{
    return (i == 0 && b[0] == HK_DIRICHLET) || (i == n - 1 && b[1] == HK_DIRICHLET);
}

/* The ghost constants added to the low and high neighbour of node i. */
template <typename T>
__device__ __forceinline__ void hk_ghost(int i, int n, const int b[2], const T g[2], T &alo, T &ahi)
{
    alo = (i == 0 && b[0] == HK_NEUMANN) ? g[0] : T(0);
    ahi = (i == n - 1 && b[1] == HK_NEUMANN) ? g[1] : T(0);
}

/* The x neighbours of node i with the Neumann ghost applied on an x face. */
template <typename T>
__device__ __forceinline__ void hk_xghost(int i, int n, const int b[2], const T g[2], T &xm, T &xp)
{
    if (i == 0 && b[0] == HK_NEUMANN) xm = xm + g[0];
    if (i == n - 1 && b[1] == HK_NEUMANN) xp = xp + g[1];
}

/* IEEE fused multiply-add a b + c, one rounding (the C reference's fma()). */
__device__ __forceinline__ float hk_fma(float a, float b, float c)
{
    return __fmaf_rn(a, b, c);
}
__device__ __forceinline__ double hk_fma(double a, double b, double c)
{
    return __fma_rn(a, b, c);
}

/* One axis's second difference (m + p) - 2c. */
template <typename T> __device__ __forceinline__ T hk_d2(T c, T m, T p)
{
    return hk_fma(T(-2), c, m + p);
}

template <typename T, bool D3>
__device__ __forceinline__ T hk_point(T c, T xm, T xp, T pm, T pp, T wm, T wp, T rx, T rp, T rw)
{
    T s = rx * hk_d2(c, xm, xp);
    if (D3) s = hk_fma(rp, hk_d2(c, pm, pp), s);
    s = hk_fma(rw, hk_d2(c, wm, wp), s);
    return c + s;
}

/* |u' - u| in double as ordered bits: for values >= 0 (and NaN, whose bits
 * are above those of +Inf once the sign is cleared) the unsigned order of the
 * bits is the numeric order, so max and atomicMax need no float compare and a
 * NaN is never dropped. */
template <typename T> __device__ __forceinline__ unsigned long long hk_diff_bits(T v, T c)
{
    return (unsigned long long)__double_as_longlong(fabs((double)v - (double)c));
}

/* Whether node (i, j, w) is inside the grid and not on a Dirichlet face:
 * a node the sweep writes. */
template <typename T, bool D3>
__device__ __forceinline__ bool hk_writes(const heat_stencil_args<T> &a, int i, int j, int w)
{
    return i < a.nx && j < a.np && w < a.nw && !hk_held(i, a.nx, a.bx) &&
           (!D3 || !hk_held(j, a.np, a.bp)) && !hk_held(w, a.nw, a.bw);
}

/* The update of node (i, j, w) from its centre and its neighbours as read
 * (mapped through the boundaries, before the Neumann ghost constants): adds
 * the ghosts, writes u' and, when RES, folds |u' - u| into m. */
template <typename T, bool D3, bool RES>
__device__ __forceinline__ void hk_update(const heat_stencil_args<T> &a, int i, int j, int w, T c,
                                          T xm, T xp, T pm, T pp, T wm, T wp, unsigned long long &m)
{
    hk_xghost(i, a.nx, a.bx, a.gx, xm, xp);
    T apm = 0, app = 0, awm, awp;
    if (D3) hk_ghost(j, a.np, a.bp, a.gp, apm, app);
    hk_ghost(w, a.nw, a.bw, a.gw, awm, awp);
    const T v =
        hk_point<T, D3>(c, xm, xp, pm + apm, pp + app, wm + awm, wp + awp, a.rx, a.rp, a.rw);
    a.out[(long long)w * a.sw + (long long)j * a.sp + i] = v;
    if (RES) {
        const unsigned long long d = hk_diff_bits(v, c);
        m = d > m ? d : m;
    }
}

/* The update of node (i, j, w) with every neighbour read from memory: the
 * naive kernel's point, and the strip's (hk_strip_kernel). Nothing where the
 * node is outside the grid or held. */
template <typename T, bool D3, bool RES>
__device__ __forceinline__ void hk_update_at(const heat_stencil_args<T> &a, int i, int j, int w,
                                             unsigned long long &m)
{
    if (!hk_writes<T, D3>(a, i, j, w)) return;
    const long long row = (long long)w * a.sw + (long long)j * a.sp;
    const long long plane = (long long)w * a.sw + i, col = (long long)j * a.sp + i;
    const T pm = D3 ? a.u[plane + hk_map(j - 1, a.np, a.bp) * a.sp] : T(0);
    const T pp = D3 ? a.u[plane + hk_map(j + 1, a.np, a.bp) * a.sp] : T(0);
    hk_update<T, D3, RES>(a, i, j, w, a.u[row + i], a.u[row + hk_map(i - 1, a.nx, a.bx)],
                          a.u[row + hk_map(i + 1, a.nx, a.bx)], pm, pp,
                          a.u[col + hk_map(w - 1, a.nw, a.bw) * a.sw],
                          a.u[col + hk_map(w + 1, a.nw, a.bw) * a.sw], m);
}

/* The max of `m` over the lanes of a warp, in every lane. Every lane of the
 * warp must call it. */
__device__ __forceinline__ unsigned long long hk_warp_reduce_max(unsigned long long m)
{
    for (int o = 16; o > 0; o >>= 1) {
        const unsigned long long t = __shfl_xor_sync(0xffffffffu, m, o);
        m = t > m ? t : m;
    }
    return m;
}

/* Block-wide max of `m`, one atomicMax per block. Every thread of the block
 * must call it. */
__device__ __forceinline__ void hk_block_max(unsigned long long m, unsigned long long *out)
{
    __shared__ unsigned long long warp_max[32];
    m = hk_warp_reduce_max(m);
    const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const int nthreads = blockDim.x * blockDim.y * blockDim.z;
    if ((tid & 31) == 0) warp_max[tid >> 5] = m;
    __syncthreads();
    if (tid < 32) {
        m = hk_warp_reduce_max(tid < (nthreads + 31) / 32 ? warp_max[tid] : 0ull);
        if (tid == 0 && m) atomicMax(out, m);
    }
}

/* The max of `m` over a warp, one atomicMax per warp: for kernels that
 * may not use a block-wide barrier (temporal.cuh, tb_rows_sync). Every lane
 * of the warp must call it. */
__device__ __forceinline__ void hk_warp_max(unsigned long long m, unsigned long long *out)
{
    m = hk_warp_reduce_max(m);
    if ((threadIdx.x & 31) == 0 && m) atomicMax(out, m);
}

/* The columns [x0, x0 + r) of every row, a thread a node of a plane
 * (32-bit indices: the launcher keeps r np below 2^31), a run of planes a
 * block row: the end of the rows that the tiles leave (k_register.cu,
 * k_gregister.cu). A node is updated by the hk_update_at of the arguments'
 * kind (the uniform one above, the variable-coefficient one of
 * general.cuh), which reads every neighbour from memory. */
template <typename T, bool D3, bool RES, typename A>
__global__ void __launch_bounds__(256) hk_strip_kernel(const A a, int x0, int r)
{
    const int q = (int)(blockIdx.x * blockDim.x + threadIdx.x), i = x0 + q % r, j = q / r;
    unsigned long long m = 0;
    for (int w = (int)blockIdx.y; w < a.nw; w += (int)gridDim.y)
        hk_update_at<T, D3, RES>(a, i, j, w, m); /* j >= np: nothing */
    if (RES) hk_block_max(m, a.resid);
}

template <typename T, bool D3, typename A>
static cudaError_t hk_launch_strip(const A &a, int x0, cudaStream_t stream)
{
    const int r = a.nx - x0;
    const dim3 grid((unsigned)(((long long)r * a.np + 255) / 256),
                    (unsigned)(a.nw < 65535 ? a.nw : 65535));
    if (a.resid)
        hk_strip_kernel<T, D3, true, A><<<grid, 256, 0, stream>>>(a, x0, r);
    else
        hk_strip_kernel<T, D3, false, A><<<grid, 256, 0, stream>>>(a, x0, r);
    return cudaGetLastError();
}

/* The most columns at the end of a row that a strip takes instead of a tile
 * where rows are groups of vx values: 4 groups, 64 bytes (16 floats, 8
 * doubles; where whole 128-byte lines of every row were the strip's, the
 * tiles' kernel ran a quarter slower, docs/PERFORMANCE.md), or
 * HEAT_CUDA_STRIP (0: none; empty: the default), for
 * measurement. Read at every launch, so that a test can set it between
 * runs. */
static inline int hk_strip_max(int vx)
{
    const char *e = getenv("HEAT_CUDA_STRIP");
    const int s = e && *e ? atoi(e) : 4 * vx;
    return s > 0 ? s : 0;
}

/* Where tiles `bw` columns wide (rows of groups of vx values) end: nx, or
 * the end of the row's last whole tile where the rest of the row, at most
 * hk_strip_max(vx) columns, goes to the strip kernel (a tile that holds a
 * few columns costs the time of a whole one: at 513^3 a fifth column of
 * tiles for one column of nodes, docs/PERFORMANCE.md). The strip's r np
 * stays within 32 bits. */
template <typename A> inline int hk_tiles_end(const A &a, int bw, int vx)
{
    const int rem = a.nx % bw;
    const bool strip =
        rem && a.nx > bw && rem <= hk_strip_max(vx) && (long long)rem * a.np < (1ll << 31) - 256;
    return strip ? a.nx - rem : a.nx;
}

/* VX consecutive x values of one thread; loaded and stored as one 16-byte
 * access when VX * sizeof(T) == 16 (the address must then be 16-byte
 * aligned), else value by value. */
template <typename T, int VX> struct hk_vec {
    T v[VX];
};

template <typename T, int VX> __device__ __forceinline__ hk_vec<T, VX> vload(const T *p)
{
    hk_vec<T, VX> r;
    if constexpr (VX * sizeof(T) == 16 && sizeof(T) == 4) {
        const float4 f = *reinterpret_cast<const float4 *>(p);
        r.v[0] = f.x, r.v[1] = f.y, r.v[2] = f.z, r.v[3] = f.w;
    } else if constexpr (VX * sizeof(T) == 16 && sizeof(T) == 8) {
        const double2 f = *reinterpret_cast<const double2 *>(p);
        r.v[0] = f.x, r.v[1] = f.y;
    } else {
#pragma unroll
        for (int e = 0; e < VX; e++) r.v[e] = p[e];
    }
    return r;
}

template <typename T, int VX> __device__ __forceinline__ void vstore(T *p, const hk_vec<T, VX> &r)
{
    if constexpr (VX * sizeof(T) == 16 && sizeof(T) == 4) {
        *reinterpret_cast<float4 *>(p) = make_float4(r.v[0], r.v[1], r.v[2], r.v[3]);
    } else if constexpr (VX * sizeof(T) == 16 && sizeof(T) == 8) {
        *reinterpret_cast<double2 *>(p) = make_double2(r.v[0], r.v[1]);
    } else {
#pragma unroll
        for (int e = 0; e < VX; e++) p[e] = r.v[e];
    }
}

/* Launchers (one per kernel family, instantiated for float and double). Each
 * launches one sweep u -> out on `stream` and returns the launch's status. */
template <typename T>
cudaError_t heat_cuda_launch_naive(const heat_stencil_args<T> &a, bool d3, cudaStream_t stream);
template <typename T>
cudaError_t heat_cuda_launch_tiled(const heat_stencil_args<T> &a, bool d3, cudaStream_t stream);
template <typename T>
cudaError_t heat_cuda_launch_sliced(const heat_stencil_args<T> &a, bool d3, cudaStream_t stream);
template <typename T>
cudaError_t heat_cuda_launch_register(const heat_stencil_args<T> &a, bool d3, cudaStream_t stream);

/* register_tiled with temporal blocking (k_temporal.cu): k fused steps
 * u -> out in one pass, 1 <= k <= HEAT_CUDA_TEMPORAL_MAX (k = 1 is the
 * register_tiled sweep). With a.resid, the residual of the k-th step. */
#define HEAT_CUDA_TEMPORAL_MAX 8
template <typename T>
cudaError_t heat_cuda_launch_temporal(const heat_stencil_args<T> &a, bool d3, int k,
                                      cudaStream_t stream);

/* The w chunk and grid of the streaming kernels: enough blocks for a few
 * waves of the device (cuda_backend.cu). */
int heat_cuda_wchunk(long long tiles, int nw, int blocks_per_sm);
int heat_cuda_wchunk_fill(long long tiles, int nw, int blocks_per_sm);
int heat_cuda_wchunk_waves(long long tiles, int nw, int blocks_per_sm, int waves, int least);

#endif
