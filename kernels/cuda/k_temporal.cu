/* `register_tiled` with temporal blocking: K time steps per pass over memory.
 *
 * A block owns a window of WX x BY points of the plane (x, p) and streams a
 * run of planes along w, keeping the K - 1 intermediate time levels on chip.
 * The windows overlap: the points a block stores are the window less a halo
 * of HX >= K points on each x side and K rows on each p side, so that the
 * values it reads from outside its own output region are computed by itself
 * (the overlapped tiles of Holewinski et al., ICS 2012; AN5D, Matsumura et
 * al., CGO 2020). The valid region shrinks by one point per fused step.
 *
 * Streaming (iteration n, one new plane n of level 0 from memory):
 *   level t = 1..K computes its plane n - t from level t - 1's planes
 *   n - t - 1 (own column, a register), n - t (the centre: own value in a
 *   register, in-plane neighbours from shared memory) and n - t + 1 (own
 *   column: what level t - 1 produced a moment ago in this iteration);
 *   level K's plane n - K goes to memory.
 * Each thread keeps, per level, the previous and the current plane of its VX
 * columns in registers, for RY rows (2 in 3D; the inner row's p neighbours
 * are then its own registers); shared memory holds each level's current
 * plane for the neighbours in p, double-buffered so that one barrier per
 * iteration separates its writes from the next reads. x neighbours come from
 * the neighbouring lane by warp shuffle: a warp spans the window's width, so
 * the lanes at its ends only ever feed the halo. All lanes of a warp share
 * their rows, so at level t the warps whose rows no later level reads (the
 * outer t rows on each side) skip the update.
 *
 * Boundaries are applied inside every fused step exactly as in a single
 * sweep: outside a periodic axis the window holds the periodic images
 * (loaded with the index taken modulo n), so they need no special case; on a
 * Dirichlet face the node keeps its value; a Neumann node uses the mirrored
 * neighbour plus 2 h g. Window points beyond a non-periodic face hold
 * whatever was loaded and are never read by a node of the grid. Where rows
 * are 16-byte aligned an x face can only be the first or the last value of a
 * thread, so the common step takes x faces as selects on the two shuffled
 * neighbours and on the result, with no branch (branches that substitute
 * inputs cost the compiler's register moves at every merge: 22% of the
 * instructions, docs/PERFORMANCE.md); rows on a p face, planes on a w face and
 * unaligned rows in a window on an x face take the general step.
 *
 * Arithmetic: the order of a single sweep (stencil.cuh), so K fused steps are
 * bit-identical to K sweeps and to the CPU backend. The Neumann constants are
 * added only on the face (the CPU adds 0 elsewhere: x + 0 differs from x only
 * for x = -0, and a sign of zero that reaches the update is absorbed by the
 * final c + s, so the results are the same bits).
 *
 * In 2D (rows of x streamed along w = y) there is no p axis: each warp is an
 * independent window of WX points, with no shared memory and no barrier.
 */
#include <climits>

#include "stencil.cuh"

namespace
{

/* The periodic index of i on an axis of n points (any i), or i clamped to
 * the axis otherwise (a value that is loaded but never used). */
__device__ __forceinline__ int tb_map(int i, int n, const int b[2])
{
    if (b[0] == HK_PERIODIC) {
        int r = i % n;
        return r < 0 ? r + n : r;
    }
    return i < 0 ? 0 : (i >= n ? n - 1 : i);
}

/* Face flags of node i on an axis: Dirichlet (held), Neumann low and high. */
struct tb_face {
    bool held, nlo, nhi;
};

__device__ __forceinline__ tb_face tb_faces(int i, int n, const int b[2])
{
    tb_face f;
    f.held = (i == 0 && b[0] == HK_DIRICHLET) || (i == n - 1 && b[1] == HK_DIRICHLET);
    f.nlo = i == 0 && b[0] == HK_NEUMANN;
    f.nhi = i == n - 1 && b[1] == HK_NEUMANN;
    return f;
}

/* The tiling of one (precision, dimension, depth). 3D: a window of 32 rows,
 * RY = 2 rows per thread (512 threads of up to 128 registers); 2D: one row,
 * 4 independent warps per block. Values per thread along x: 16 bytes, halved
 * where the rings (2 K RY VX values) would pass 64 registers. The x halo is a
 * multiple of VX, so that windows start on 16-byte boundaries when rows do. */
template <typename T, bool D3, int K> struct tb_shape {
    static constexpr int SZ = (int)sizeof(T);
    static constexpr int RY = D3 ? 2 : 1;
    static constexpr int VMAX = 16 / SZ;
    static constexpr int VX = 2 * K * RY * VMAX * SZ / 4 <= 64 ? VMAX : VMAX / 2;
    static constexpr int WX = 32 * VX;
    static constexpr int HX = (K + VX - 1) / VX * VX;
    static constexpr int SX = WX - 2 * HX;      /* x points stored per window */
    static constexpr int BY = D3 ? 32 : 1;      /* rows of the window */
    static constexpr int TY = D3 ? BY / RY : 4; /* 3D: rows of threads; 2D: warps per block */
    static constexpr int SY = D3 ? BY - 2 * K : 1;
    static constexpr int THREADS = 32 * TY;
    static constexpr int MINB = D3 ? 1 : 4;
    static_assert(SX > 0 && SY > 0, "the window keeps some points");
    static_assert(VX >= 1 && 2 * K * RY * VX * SZ / 4 <= 64, "rings fit in registers");
    static size_t smem_bytes()
    {
        return D3 ? (size_t)2 * K * BY * WX * sizeof(T) : 0;
    }
};

template <typename T, bool D3, bool RES, int K>
__global__ void __launch_bounds__(tb_shape<T, D3, K>::THREADS, tb_shape<T, D3, K>::MINB)
    temporal_kernel(const heat_stencil_args<T> a, int aligned)
{
    using S = tb_shape<T, D3, K>;
    constexpr int VX = S::VX, WX = S::WX, HX = S::HX, BY = S::BY, RY = S::RY;
    using V = hk_vec<T, VX>;
    extern __shared__ __align__(16) unsigned char tb_smem[];
    T *const sm = reinterpret_cast<T *>(tb_smem); /* [2][K][BY][WX], 3D only */

    const int lane = threadIdx.x, ty = threadIdx.y;
    /* 3D: the block's window is WX x BY, this thread's rows r0 .. r0 + RY - 1;
     * 2D: each warp has its own window. */
    const int win = D3 ? blockIdx.x : blockIdx.x * S::TY + ty;
    const int x0 = win * S::SX - HX, xg = x0 + lane * VX;
    const int y0 = D3 ? (int)blockIdx.y * S::SY - K : 0, r0 = D3 ? ty * RY : 0;
    const int w0 = blockIdx.z * a.wchunk, w1 = min(w0 + a.wchunk, a.nw);
    const int col = lane * VX;

    /* Rows: where level 0 is read, their faces, whether they are stored. */
    long long rowoff[RY];
    tb_face fy[RY];
    bool row_keep[RY];
#pragma unroll
    for (int q = 0; q < RY; q++) {
        const int yg = y0 + r0 + q;
        rowoff[q] = D3 ? (long long)tb_map(yg, a.np, a.bp) * a.sp : 0;
        fy[q] = D3 ? tb_faces(yg, a.np, a.bp) : tb_face{false, false, false};
        row_keep[q] = !D3 || (r0 + q >= K && r0 + q < BY - K && yg < a.np && !fy[q].held);
    }
    /* Columns this thread stores (inside the window less its halo, inside
     * the grid, not on a Dirichlet face), and its x-face nodes as bits per
     * value: Neumann low, Neumann high, Dirichlet. */
    unsigned keep = 0, xnlo = 0, xnhi = 0, xheld = 0;
#pragma unroll
    for (int e = 0; e < VX; e++) {
        const int i = xg + e;
        const tb_face f = tb_faces(i, a.nx, a.bx);
        if (i >= x0 + HX && i < x0 + WX - HX && i < a.nx && !f.held) keep |= 1u << e;
        xnlo |= (unsigned)f.nlo << e;
        xnhi |= (unsigned)f.nhi << e;
        xheld |= (unsigned)f.held << e;
    }
    const bool vec = aligned && xg >= 0 && xg + VX <= a.nx;
    const bool vec_store = vec && keep == (1u << VX) - 1;
    /* Whether the window meets a non-periodic x face (the general step then
     * substitutes x neighbours value by value where rows are not aligned). */
    const bool xedge =
        (a.bx[0] != HK_PERIODIC && x0 <= 0) || (a.bx[1] != HK_PERIODIC && x0 + WX >= a.nx);
    /* The planes on a non-periodic w face (or none). */
    const int wlo = a.bw[0] != HK_PERIODIC ? 0 : INT_MIN;
    const int whi = a.bw[1] != HK_PERIODIC ? a.nw - 1 : INT_MIN;
    /* Shared memory: this thread's column in the rows next to its own (clamped
     * at the window's edge, where the result feeds only the halo) and in its
     * own rows; level t of buffer b is at (b K + t) BY WX. */
    const int ra = r0 > 0 ? r0 - 1 : 0, rb = r0 + RY < BY ? r0 + RY : BY - 1;
    const int off_a = ra * WX + col, off_b = rb * WX + col, off_own = r0 * WX + col;

    auto load0 = [&](int w, int q, V &g) {
        const T *row = a.u + (long long)tb_map(w, a.nw, a.bw) * a.sw + rowoff[q];
        if (vec) {
            g = vload<T, VX>(row + xg);
        } else {
#pragma unroll
            for (int e = 0; e < VX; e++) g.v[e] = row[tb_map(xg + e, a.nx, a.bx)];
        }
    };

    /* One fused step of the VX nodes of row q: centre c, w neighbours zm/zp,
     * p neighbours pm/pp (3D). Faces substitute the mirrored neighbour plus
     * 2 h g (Neumann) or keep the centre (Dirichlet); `wf` is the plane's
     * face, when the plane is on one. */
    auto update = [&](int q, const V &c, const V &zm, const V &zp, const V &pm, const V &pp,
                      const tb_face *wf, V &v) {
        T left = __shfl_up_sync(0xffffffffu, c.v[VX - 1], 1);
        T right = __shfl_down_sync(0xffffffffu, c.v[0], 1);
        V xm, xp, ym, yp, wm = zm, wp = zp;
#pragma unroll
        for (int e = 0; e < VX; e++) {
            xm.v[e] = e > 0 ? c.v[e - 1] : left;
            xp.v[e] = e < VX - 1 ? c.v[e + 1] : right;
            ym.v[e] = D3 ? pm.v[e] : T(0);
            yp.v[e] = D3 ? pp.v[e] : T(0);
        }
        unsigned held = 0;
        if (xedge) {
#pragma unroll
            for (int e = 0; e < VX; e++) {
                const T m0 = xm.v[e];
                if (xnlo >> e & 1) xm.v[e] = xp.v[e] + a.gx[0];
                if (xnhi >> e & 1) xp.v[e] = m0 + a.gx[1];
            }
            held = xheld;
        }
        if (D3 && (fy[q].nlo || fy[q].nhi || fy[q].held)) {
#pragma unroll
            for (int e = 0; e < VX; e++) {
                const T m0 = ym.v[e];
                if (fy[q].nlo) ym.v[e] = yp.v[e] + a.gp[0];
                if (fy[q].nhi) yp.v[e] = m0 + a.gp[1];
            }
            if (fy[q].held) held = (1u << VX) - 1;
        }
        if (wf) {
#pragma unroll
            for (int e = 0; e < VX; e++) {
                const T m0 = wm.v[e];
                if (wf->nlo) wm.v[e] = wp.v[e] + a.gw[0];
                if (wf->nhi) wp.v[e] = m0 + a.gw[1];
            }
            if (wf->held) held = (1u << VX) - 1;
        }
#pragma unroll
        for (int e = 0; e < VX; e++) {
            const T r = hk_point<T, D3>(c.v[e], xm.v[e], xp.v[e], ym.v[e], yp.v[e], wm.v[e],
                                        wp.v[e], a.rx, a.rp, a.rw);
            v.v[e] = held >> e & 1 ? c.v[e] : r;
        }
    };

    /* The same step where neither the row nor the plane is on a face and x
     * faces, if any, fall on the first or the last value of a thread (rows
     * on 16-byte boundaries: the window starts on one): the x-face terms are
     * selects on the shuffled neighbours and on the result, with no branch,
     * so the common path carries no merge of substituted inputs. */
    const bool lo_neu = xnlo & 1, hi_neu = xnhi >> (VX - 1) & 1;
    const bool lo_held = xheld & 1, hi_held = xheld >> (VX - 1) & 1;
    auto update_fast = [&](const V &c, const V &zm, const V &zp, const V &pm, const V &pp, V &v) {
        const T left0 = __shfl_up_sync(0xffffffffu, c.v[VX - 1], 1);
        const T right0 = __shfl_down_sync(0xffffffffu, c.v[0], 1);
        const T xp0 = VX > 1 ? c.v[1 % VX] : right0;            /* right of the first value */
        const T xmL = VX > 1 ? c.v[(VX + VX - 2) % VX] : left0; /* left of the last value */
        const T left = lo_neu ? xp0 + a.gx[0] : left0;
        const T right = hi_neu ? xmL + a.gx[1] : right0;
#pragma unroll
        for (int e = 0; e < VX; e++) {
            const T xm = e > 0 ? c.v[e - 1] : left;
            const T xp = e < VX - 1 ? c.v[e + 1] : right;
            v.v[e] = hk_point<T, D3>(c.v[e], xm, xp, D3 ? pm.v[e] : T(0), D3 ? pp.v[e] : T(0),
                                     zm.v[e], zp.v[e], a.rx, a.rp, a.rw);
        }
        v.v[0] = lo_held ? c.v[0] : v.v[0];
        v.v[VX - 1] = hi_held ? c.v[VX - 1] : v.v[VX - 1];
    };
    /* Rows whose faces need the general step. */
    bool general_row[RY];
#pragma unroll
    for (int q = 0; q < RY; q++)
        general_row[q] = (xedge && !aligned) || (D3 && (fy[q].nlo || fy[q].nhi || fy[q].held));

    /* Rings per level and row: the plane before the centre, and the centre. */
    V prev[K][RY], own[K][RY];
#pragma unroll
    for (int t = 0; t < K; t++)
#pragma unroll
        for (int q = 0; q < RY; q++)
#pragma unroll
            for (int e = 0; e < VX; e++) prev[t][q].v[e] = own[t][q].v[e] = T(0);

    unsigned long long m = 0;
    const int n0 = w0 - K, n1 = w1 + K;
    V next[RY];
#pragma unroll
    for (int q = 0; q < RY; q++) load0(n0, q, next[q]);
    for (int n = n0; n < n1; n++) {
        T *const rd = sm + (size_t)((n - n0) & 1) * K * BY * WX;     /* read: buffer b */
        T *const wr = sm + (size_t)((n - n0 + 1) & 1) * K * BY * WX; /* write: b ^ 1 */
        V vals[K + 1][RY]; /* level t of plane n - t, t = 0 .. K */
#pragma unroll
        for (int q = 0; q < RY; q++) vals[0][q] = next[q];
        if (n + 1 < n1) {
#pragma unroll
            for (int q = 0; q < RY; q++) load0(n + 1, q, next[q]);
        }
#pragma unroll
        for (int t = 1; t <= K; t++) {
            const int pw = n - t;
            /* Rows outside [t, BY - t) at level t feed nothing that is kept. */
            if (!D3 || (r0 + RY > t && r0 < BY - t)) {
                V pa, pb;
                if (D3) {
                    pa = vload<T, VX>(rd + (t - 1) * BY * WX + off_a);
                    pb = vload<T, VX>(rd + (t - 1) * BY * WX + off_b);
                }
                const bool on_wface = pw == wlo || pw == whi;
#pragma unroll
                for (int q = 0; q < RY; q++) {
                    const V &pm = q > 0 ? own[t - 1][q - 1] : pa;
                    const V &pp = q < RY - 1 ? own[t - 1][q + 1] : pb;
                    if (on_wface || general_row[q]) {
                        tb_face wf = tb_faces(pw, a.nw, a.bw);
                        update(q, own[t - 1][q], prev[t - 1][q], vals[t - 1][q], pm, pp,
                               on_wface ? &wf : nullptr, vals[t][q]);
                    } else {
                        update_fast(own[t - 1][q], prev[t - 1][q], vals[t - 1][q], pm, pp,
                                    vals[t][q]);
                    }
                }
            } else {
#pragma unroll
                for (int q = 0; q < RY; q++) vals[t][q] = own[t - 1][q];
            }
#pragma unroll
            for (int q = 0; q < RY; q++) {
                prev[t - 1][q] = own[t - 1][q];
                own[t - 1][q] = vals[t - 1][q];
                /* Level t - 1's plane n - t + 1: the centre of the next iteration. */
                if (D3) vstore<T, VX>(wr + (t - 1) * BY * WX + off_own + q * WX, vals[t - 1][q]);
            }
        }
        /* Level K's plane n - K, stored where this block owns it. */
        const int wk = n - K;
        if (wk >= w0 && !tb_faces(wk, a.nw, a.bw).held) {
#pragma unroll
            for (int q = 0; q < RY; q++) {
                if (!row_keep[q]) continue;
                T *out = a.out + (long long)wk * a.sw + (long long)(D3 ? y0 + r0 + q : 0) * a.sp;
                if (vec_store) {
                    vstore<T, VX>(out + xg, vals[K][q]);
                } else {
#pragma unroll
                    for (int e = 0; e < VX; e++)
                        if (keep >> e & 1) out[xg + e] = vals[K][q].v[e];
                }
                if (RES) {
                    /* The centre of level K's update, now in prev. */
#pragma unroll
                    for (int e = 0; e < VX; e++)
                        if (keep >> e & 1) {
                            const unsigned long long d =
                                hk_diff_bits(vals[K][q].v[e], prev[K - 1][q].v[e]);
                            m = d > m ? d : m;
                        }
                }
            }
        }
        if (D3) __syncthreads();
    }
    if (RES) hk_block_max(m, a.resid);
}

template <typename T, bool D3, int K> struct tb_launch {
    using S = tb_shape<T, D3, K>;
    /* Resident blocks per multiprocessor and multiprocessors, asked once. */
    static int resident(cudaError_t &e)
    {
        static int blocks = 0;
        if (!blocks) {
            int dev = 0, sms = 1, per_sm = 0;
            const size_t sh = S::smem_bytes();
            if ((e = cudaGetDevice(&dev)) != cudaSuccess) return 0;
            if ((e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) !=
                cudaSuccess)
                return 0;
            for (int r = 0; r < 2; r++) {
                auto *f = r ? temporal_kernel<T, D3, true, K> : temporal_kernel<T, D3, false, K>;
                if ((e = cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              (int)sh)) != cudaSuccess)
                    return 0;
            }
            if ((e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                     &per_sm, temporal_kernel<T, D3, false, K>, S::THREADS, sh)) != cudaSuccess)
                return 0;
            blocks = sms * (per_sm > 0 ? per_sm : 1);
        }
        e = cudaSuccess;
        return blocks;
    }

    static cudaError_t run(const heat_stencil_args<T> &a, cudaStream_t stream)
    {
        cudaError_t e;
        const long long res = resident(e);
        if (e != cudaSuccess) return e;
        const long long wins = (a.nx + S::SX - 1) / S::SX;
        const long long gx = D3 ? wins : (wins + S::TY - 1) / S::TY;
        const long long gy = D3 ? (a.np + S::SY - 1) / S::SY : 1;
        /* Runs of planes along w: each costs 2 K planes of warm-up, and the
         * last wave of blocks may be partly empty; take the count of runs
         * that minimises waves x (planes per run + 2 K). */
        const long long tiles = gx * gy;
        long long best_runs = 1;
        double best = 0;
        for (long long r = 1; r <= a.nw && r <= 65535; r++) {
            const long long per = (a.nw + r - 1) / r;
            if (r > 1 && (a.nw + per - 1) / per < r) continue; /* same as a smaller r */
            const double cost = (double)((tiles * r + res - 1) / res) * (double)(per + 2 * K);
            if (r == 1 || cost < best) best = cost, best_runs = r;
            if (tiles * r > 64 * res) break;
        }
        heat_stencil_args<T> b = a;
        b.wchunk = (int)((a.nw + best_runs - 1) / best_runs);
        const dim3 block(32, S::TY),
            grid((unsigned)gx, (unsigned)gy, (unsigned)((a.nw + b.wchunk - 1) / b.wchunk));
        constexpr int VX = S::VX;
        const int aligned = a.nx % VX == 0;
        const size_t sh = S::smem_bytes();
        if (a.resid)
            temporal_kernel<T, D3, true, K><<<grid, block, sh, stream>>>(b, aligned);
        else
            temporal_kernel<T, D3, false, K><<<grid, block, sh, stream>>>(b, aligned);
        return cudaGetLastError();
    }
};

template <typename T, bool D3>
cudaError_t launch_depth(const heat_stencil_args<T> &a, int k, cudaStream_t s)
{
    switch (k) {
    case 2:
        return tb_launch<T, D3, 2>::run(a, s);
    case 3:
        return tb_launch<T, D3, 3>::run(a, s);
    case 4:
        return tb_launch<T, D3, 4>::run(a, s);
    case 5:
        return tb_launch<T, D3, 5>::run(a, s);
    case 6:
        return tb_launch<T, D3, 6>::run(a, s);
    case 7:
        return tb_launch<T, D3, 7>::run(a, s);
    case 8:
        return tb_launch<T, D3, 8>::run(a, s);
    default:
        return cudaErrorInvalidValue;
    }
}

} // namespace

static_assert(HEAT_CUDA_TEMPORAL_MAX == 8, "one instantiation per depth up to the maximum");

template <typename T>
cudaError_t heat_cuda_launch_temporal(const heat_stencil_args<T> &a, bool d3, int k,
                                      cudaStream_t stream)
{
    if (k <= 1) return heat_cuda_launch_register<T>(a, d3, stream);
    return d3 ? launch_depth<T, true>(a, k, stream) : launch_depth<T, false>(a, k, stream);
}

template cudaError_t heat_cuda_launch_temporal<float>(const heat_stencil_args<float> &, bool, int,
                                                      cudaStream_t);
template cudaError_t heat_cuda_launch_temporal<double>(const heat_stencil_args<double> &, bool, int,
                                                       cudaStream_t);
