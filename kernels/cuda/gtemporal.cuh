/* `register_tiled` with temporal blocking for the variable-coefficient update
 * (general.cuh): K fused steps per pass, the scheme of k_temporal.cu (its
 * comment describes the windows, the levels and the persistent grid) with
 * the classes travelling with the field. Instantiated per precision and
 * dimension by k_gtemporal_*.cu, so that they compile in parallel. The w
 * table is always staged in shared memory: a case with more materials than
 * fit (HG_W_SHARED_MAX) runs one step per pass (cuda_backend.cu).
 *
 * Classes do not change from step to step, so each plane's classes are read
 * from memory once per pass, beside its values at level 0, and kept for the
 * K + 2 planes that the levels still need (level t of iteration n updates
 * plane n - t from planes n - t - 1 .. n - t + 1) in a ring in shared memory:
 * per plane the window's classes and their materials, one byte each, stored
 * at iteration n (a material lookup per node and pass) and read by every
 * level. A thread writes only its own columns of plane n, which the rows
 * next to it read (as p neighbours) from iteration n + 1 on, after the
 * meeting of neighbouring rows that ends each iteration (tb_rows_sync);
 * plane n - K - 2, whose slot it overwrites, was last read in iteration
 * n - 1. In 2D each warp's row of the ring is its own. The ring starts zeroed,
 * so planes read before their first store in a segment (warm-up values that
 * never reach the output) still index the tables inside their bounds.
 *
 * Faces. Window points beyond a face hold loaded values that are never used
 * by a node of the grid: at a node on a mirrored face (Neumann, flux,
 * convective) the neighbour beyond is replaced by the mirrored one, its
 * value and its material, and the difference takes the ghost's formula
 * (hg_ghost); Dirichlet nodes keep their centre. Windows that meet no x or p
 * face run a specialization without that code; the iterations whose planes
 * meet a w face take a version with the w-face terms, as in k_temporal.cu.
 * The arithmetic is the single sweep's (hg_point), so K fused steps are
 * bit-identical to K sweeps and to the CPU backend.
 */
#ifndef HEAT_CUDA_GTEMPORAL_CUH
#define HEAT_CUDA_GTEMPORAL_CUH

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <type_traits>

#include "general.cuh"
#include "temporal.cuh"

namespace
{

/* Dynamic shared memory of a block: the levels' planes (3D, as
 * k_temporal.cu), the ring of classes and materials, the staged tables. */
template <typename T, bool D3, int K> struct tbg_layout {
    using S = tb_shape<T, D3, K>;
    static constexpr int R = K + 2;                  /* planes in the ring */
    static constexpr int RROWS = D3 ? S::BY : S::TY; /* window rows; 2D: one per warp */
    static constexpr size_t field_bytes = D3 ? (size_t)2 * K * S::BY * S::WX * sizeof(T) : 0;
    static constexpr size_t ring_plane = (size_t)RROWS * S::WX;
    static constexpr size_t ring_bytes = 2 * R * ring_plane; /* materials, then classes */
    static_assert(field_bytes % 16 == 0 && ring_bytes % 16 == 0, "aligned regions");
    static size_t bytes(int nmat, bool wsh)
    {
        return field_bytes + ring_bytes + hg_stage_bytes<T>(nmat, wsh);
    }
};

/* One segment of the general update: the window at (x0, y0) over the planes
 * [w0, w1), K fused steps. XPF: the window meets an x or p face. */
template <typename T, bool D3, bool RES, int K, bool XPF>
__device__ __forceinline__ void tbg_segment(const heat_general_args<T> &a, const hg_tab<T> &tab,
                                            int aligned, int x0, int y0, int w0, int w1, T *sm,
                                            uint8_t *ring, unsigned long long &m)
{
    using S = tb_shape<T, D3, K>;
    using L = tbg_layout<T, D3, K>;
    constexpr int VX = S::VX, WX = S::WX, HX = S::HX, BY = S::BY, RY = S::RY, R = L::R;
    using V = hk_vec<T, VX>;
    const int lane = threadIdx.x, ty = threadIdx.y;
    const int xg = x0 + lane * VX, r0 = D3 ? ty * RY : 0, col = lane * VX;
    const int M = a.nmat;

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
    /* Columns this thread stores, and its x-face nodes as bits per value:
     * mirrored low, mirrored high, Dirichlet. */
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
    /* The w face planes by kind (INT_MIN: none): mirrored, Dirichlet. */
    const int wn_lo = a.bw[0] == HK_NEUMANN ? 0 : INT_MIN;
    const int wn_hi = a.bw[1] == HK_NEUMANN ? a.nw - 1 : INT_MIN;
    const int wd_lo = a.bw[0] == HK_DIRICHLET ? 0 : INT_MIN;
    const int wd_hi = a.bw[1] == HK_DIRICHLET ? a.nw - 1 : INT_MIN;
    /* Shared memory of the values as k_temporal.cu; the ring's rows are the
     * window's (3D) or the warp's (2D). */
    const int ra = r0 > 0 ? r0 - 1 : 0, rb = r0 + RY < BY ? r0 + RY : BY - 1;
    const int off_a = ra * WX + col, off_b = rb * WX + col, off_own = r0 * WX + col;
    const int roff_own = (D3 ? r0 : ty) * WX + col;
    uint8_t *const ringm = ring, *const ringc = ring + R * L::ring_plane;
    auto slot = [&](int s) { return (s < 0 ? s + R : s) * (int)L::ring_plane; };

    auto load0 = [&](int w, int q, V &g, unsigned &gc) {
        const long long off = (long long)tb_map(w, a.nw, a.bw) * a.sw + rowoff[q];
        if (vec) {
            g = vload<T, VX>(a.u + off + xg);
            gc = hg_load_bytes<VX>(a.cls + off + xg);
        } else {
            gc = 0;
#pragma unroll
            for (int e = 0; e < VX; e++) {
                const int i = tb_map(xg + e, a.nx, a.bx);
                g.v[e] = a.u[off + i];
                gc |= (unsigned)a.cls[off + i] << (8 * e);
            }
        }
    };

    /* One fused step of the VX nodes of row q of plane pw: centre c (its
     * materials mc, classes cc), w neighbours zm/zp (mzm/mzp), p neighbours
     * pm/pp (mpm/mpp, 3D). Beyond a mirrored face the neighbour opposite
     * stands in, value and material, with the ghost's difference. */
    auto update = [&](auto wfaces, int q, int pw, const V &c, unsigned mc, unsigned cc, const V &zm,
                      unsigned mzm, const V &zp, unsigned mzp, const V &pm, unsigned mpm,
                      const V &pp, unsigned mpp, V &v) {
        constexpr bool WF = decltype(wfaces)::value;
        const T left = __shfl_up_sync(0xffffffffu, c.v[VX - 1], 1);
        const T right = __shfl_down_sync(0xffffffffu, c.v[0], 1);
        const int mleft = hg_byte(__shfl_up_sync(0xffffffffu, mc, 1), VX - 1);
        const int mright = hg_byte(__shfl_down_sync(0xffffffffu, mc, 1), 0);
        unsigned held = XPF ? xheld : 0u;
        if (D3 && XPF && fy[q].held) held = (1u << VX) - 1;
        const bool wlo = WF && pw == wn_lo, whi = WF && pw == wn_hi;
#pragma unroll
        for (int e = 0; e < VX; e++) {
            const T ce = c.v[e];
            const int am = hg_byte(mc, e);
            const T xm = e > 0 ? c.v[e - 1] : left, xp = e < VX - 1 ? c.v[e + 1] : right;
            int bxm = e > 0 ? hg_byte(mc, e - 1) : mleft;
            int bxp = e < VX - 1 ? hg_byte(mc, e + 1) : mright;
            int bpm = D3 ? hg_byte(mpm, e) : 0, bpp = D3 ? hg_byte(mpp, e) : 0;
            int bwm = hg_byte(mzm, e), bwp = hg_byte(mzp, e);
            T dxm = xm - ce, dxp = xp - ce, dpm = T(0), dpp = T(0);
            T dwm = zm.v[e] - ce, dwp = zp.v[e] - ce;
            if (D3) dpm = pm.v[e] - ce, dpp = pp.v[e] - ce;
            if (XPF) {
                const int bxm0 = bxm, bpm0 = bpm;
                if (xnlo >> e & 1) dxm = hg_ghost(a, HG_FXLO, am, xp, ce), bxm = bxp;
                if (xnhi >> e & 1) dxp = hg_ghost(a, HG_FXHI, am, xm, ce), bxp = bxm0;
                if (D3 && fy[q].nlo) dpm = hg_ghost(a, HG_FPLO, am, pp.v[e], ce), bpm = bpp;
                if (D3 && fy[q].nhi) dpp = hg_ghost(a, HG_FPHI, am, pm.v[e], ce), bpp = bpm0;
            }
            if (WF) {
                const int bwm0 = bwm;
                if (wlo) dwm = hg_ghost(a, HG_FWLO, am, zp.v[e], ce), bwm = bwp;
                if (whi) dwp = hg_ghost(a, HG_FWHI, am, zm.v[e], ce), bwp = bwm0;
            }
            const T r = hg_point<T, D3>(tab.w, M, am, ce, tab.q[hg_byte(cc, e)], dxm, dxp, bxm, bxp,
                                        dpm, dpp, bpm, bpp, dwm, dwp, bwm, bwp);
            v.v[e] = held >> e & 1 ? ce : r;
        }
    };

    /* Values as k_temporal.cu: per level the centre in registers, the plane
     * before it in shared memory (3D) or registers (2D). */
    constexpr int KP = D3 ? 1 : K;
    V prev[KP][RY], own[K][RY];
#pragma unroll
    for (int t = 0; t < K; t++)
#pragma unroll
        for (int q = 0; q < RY; q++)
#pragma unroll
            for (int e = 0; e < VX; e++) own[t][q].v[e] = prev[t < KP ? t : 0][q].v[e] = T(0);

    const int n0 = w0 - K, n1 = w1 + K;
    V next[RY];
    unsigned cnext[RY];
#pragma unroll
    for (int q = 0; q < RY; q++) load0(n0, q, next[q], cnext[q]);
    int sl = 0; /* the ring slot of plane n */

    auto iter = [&](auto wfaces, int n) {
        constexpr bool WF = decltype(wfaces)::value;
        T *const rd = sm + (size_t)((n - n0) & 1) * K * BY * WX;
        T *const wr = sm + (size_t)((n - n0 + 1) & 1) * K * BY * WX;
        V vals[K + 1][RY];
        V ctr[RES ? RY : 1];
        /* Plane n's classes and materials into the ring. */
#pragma unroll
        for (int q = 0; q < RY; q++) {
            const int o = slot(sl) + roff_own + q * WX;
            hg_store_bytes<VX>(ringc + o, cnext[q]);
            hg_store_bytes<VX>(ringm + o, hg_mats<VX>(tab.mat, cnext[q]));
            vals[0][q] = next[q];
        }
        if (n + 1 < n1) {
#pragma unroll
            for (int q = 0; q < RY; q++) load0(n + 1, q, next[q], cnext[q]);
        }
#pragma unroll
        for (int t = 1; t <= K; t++) {
            const int pw = n - t;
            if (!D3 || (r0 + RY > t && r0 < BY - t)) {
                const int s0 = slot(sl - t), sm1 = slot(sl - t - 1), sp1 = slot(sl - t + 1);
                V pv[RY];
                unsigned mc[RY], cc[RY];
#pragma unroll
                for (int q = 0; q < RY; q++) {
                    pv[q] = D3 ? vload<T, VX>(wr + (t - 1) * BY * WX + off_own + q * WX)
                               : prev[D3 ? 0 : t - 1][q];
                    mc[q] = hg_load_bytes<VX>(ringm + s0 + roff_own + q * WX);
                    cc[q] = hg_load_bytes<VX>(ringc + s0 + roff_own + q * WX);
                }
                V pa, pb;
                unsigned mpa = 0, mpb = 0;
                if (D3) {
                    pa = vload<T, VX>(rd + (t - 1) * BY * WX + off_a);
                    pb = vload<T, VX>(rd + (t - 1) * BY * WX + off_b);
                    mpa = hg_load_bytes<VX>(ringm + s0 + ra * WX + col);
                    mpb = hg_load_bytes<VX>(ringm + s0 + rb * WX + col);
                }
#pragma unroll
                for (int q = 0; q < RY; q++) {
                    const V &pm = q > 0 ? own[t - 1][q - 1] : pa;
                    const V &pp = q < RY - 1 ? own[t - 1][q + 1] : pb;
                    const unsigned mzm = hg_load_bytes<VX>(ringm + sm1 + roff_own + q * WX);
                    const unsigned mzp = hg_load_bytes<VX>(ringm + sp1 + roff_own + q * WX);
                    update(wfaces, q, pw, own[t - 1][q], mc[q], cc[q], pv[q], mzm, vals[t - 1][q],
                           mzp, pm, q > 0 ? mc[q - 1] : mpa, pp, q < RY - 1 ? mc[q + 1] : mpb,
                           vals[t][q]);
                }
                /* A Dirichlet w face keeps its plane. */
                if (WF && (pw == wd_lo || pw == wd_hi)) {
#pragma unroll
                    for (int q = 0; q < RY; q++) vals[t][q] = own[t - 1][q];
                }
            } else {
#pragma unroll
                for (int q = 0; q < RY; q++) vals[t][q] = own[t - 1][q];
            }
            if (RES && t == K) {
#pragma unroll
                for (int q = 0; q < RY; q++) ctr[q] = own[K - 1][q];
            }
#pragma unroll
            for (int q = 0; q < RY; q++) {
                if (!D3) prev[D3 ? 0 : t - 1][q] = own[t - 1][q];
                own[t - 1][q] = vals[t - 1][q];
                if (D3) vstore<T, VX>(wr + (t - 1) * BY * WX + off_own + q * WX, vals[t - 1][q]);
            }
        }
        /* Level K's plane n - K, stored where this block owns it. */
        const int wk = n - K;
        if (wk >= w0 && wk != wd_lo && wk != wd_hi) {
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
#pragma unroll
                    for (int e = 0; e < VX; e++)
                        if (keep >> e & 1) {
                            const unsigned long long d =
                                hk_diff_bits(vals[K][q].v[e], ctr[RES ? q : 0].v[e]);
                            m = d > m ? d : m;
                        }
                }
            }
        }
        if constexpr (D3) tb_rows_sync<S::TY>();
        sl = sl + 1 == R ? 0 : sl + 1;
    };
    /* The iterations whose planes n - K .. n - 1 meet a w face take the
     * w-face terms; the others are free of them. */
    const int wf_lo = a.bw[0] != HK_PERIODIC ? 0 : INT_MIN;
    const int wf_hi = a.bw[1] != HK_PERIODIC ? a.nw - 1 : INT_MIN;
    for (int n = n0; n < n1; n++) {
        if ((wf_lo >= n - K && wf_lo < n) || (wf_hi >= n - K && wf_hi < n))
            iter(std::true_type(), n);
        else
            iter(std::false_type(), n);
    }
}

/* The persistent grid (temporal.cuh) over the general segments. */
template <typename T, bool D3, bool RES, int K>
__global__ void __launch_bounds__(tb_shape<T, D3, K>::THREADS, tb_shape<T, D3, K>::MINB)
    gtemporal_kernel(const heat_general_args<T> a, int aligned, int gxw, int gy, tb_costs cw)
{
    using S = tb_shape<T, D3, K>;
    using L = tbg_layout<T, D3, K>;
    extern __shared__ __align__(16) unsigned char hgt_smem[];
    T *const sm = reinterpret_cast<T *>(hgt_smem);
    uint8_t *const ring = hgt_smem + L::field_bytes;
    const hg_tab<T> tab = hg_stage<T, true>(a, ring + L::ring_bytes);
    const int tid = threadIdx.x + 32 * threadIdx.y;
    for (int i = tid; i < (int)(L::ring_bytes / 4); i += S::THREADS)
        reinterpret_cast<unsigned *>(ring)[i] = 0u;
    __syncthreads();
    unsigned long long m = 0;
    tb_schedule<T, D3, K>(
        a, aligned, gxw, gy, cw,
        [&](int kd, int x0, int y0, int w0, int w1, const auto &xface, bool) {
            /* 3D: the block's window; 2D: the warp's own. In 2D at depths up
             * to 4 every window takes the loop with the face code: one copy
             * of the loop in the kernel, 5 to 10% faster at 8192^2 in both
             * precisions (docs/PERFORMANCE.md). */
            constexpr bool one_loop = !D3 && K <= 4;
            if (one_loop || (D3 ? kd != TB_INNER : xface(x0, S::WX)))
                tbg_segment<T, D3, RES, K, true>(a, tab, aligned, x0, y0, w0, w1, sm, ring, m);
            else
                tbg_segment<T, D3, RES, K, false>(a, tab, aligned, x0, y0, w0, w1, sm, ring, m);
        });
    if (RES) hk_warp_max(m, a.resid); /* no block barrier after tb_rows_sync */
}

/* One (precision, dimension, depth): the persistent grid as k_temporal.cu
 * sizes it, with this case's dynamic shared memory (asked again when the
 * material count changes it). */
template <typename T, bool D3, int K>
cudaError_t gtb_run(const heat_general_args<T> &a, cudaStream_t stream)
{
    using S = tb_shape<T, D3, K>;
    const size_t sh = tbg_layout<T, D3, K>::bytes(a.nmat, true);
    static long long res = 0;
    static size_t asked = 0;
    cudaError_t e;
    if (!res || asked != sh) {
        int dev = 0, sms = 1, per_sm = 0;
        if ((e = cudaGetDevice(&dev)) != cudaSuccess) return e;
        if ((e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) != cudaSuccess)
            return e;
        if ((e = cudaFuncSetAttribute(gtemporal_kernel<T, D3, false, K>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sh)) !=
            cudaSuccess)
            return e;
        if ((e = cudaFuncSetAttribute(gtemporal_kernel<T, D3, true, K>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sh)) !=
            cudaSuccess)
            return e;
        if ((e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                 &per_sm, gtemporal_kernel<T, D3, false, K>, S::THREADS, sh)) != cudaSuccess)
            return e;
        res = (long long)sms * (per_sm > 0 ? per_sm : 1);
        asked = sh;
    }
    const tb_plan p = tb_plan_of<T, D3, K>(a);
    const tb_costs cw = tb_costs_or_env({{32, 36, 40}, -1}); /* no narrow windows */
    const long long g = tb_blocks(res, p.planes, K);
    /* Whole groups are loaded as such where rows start on group boundaries:
     * rows of whole groups, or in 2D rows padded to 16 bytes (the one-GPU
     * backend's, whatever nx), where only the row's last group, reaching
     * past nx, is taken a value at a time (8193^2 at k = 4: 16 to 17%
     * faster on the H200). Not in 3D, where the loads a value at a time
     * ran faster (513^3 float k = 2: 0.871 ms against 1.033;
     * docs/PERFORMANCE.md). */
    const int aligned = a.nx % S::VX == 0 || (!D3 && hg_rows16(a));
    const dim3 block(32, S::TY), grid((unsigned)g);
    if (a.resid)
        gtemporal_kernel<T, D3, true, K>
            <<<grid, block, sh, stream>>>(a, aligned, (int)p.gxw, (int)p.gy, cw);
    else
        gtemporal_kernel<T, D3, false, K>
            <<<grid, block, sh, stream>>>(a, aligned, (int)p.gxw, (int)p.gy, cw);
    return cudaGetLastError();
}

} // namespace

/* K = 2 .. 8 fused steps of the general update; the w table must be staged
 * (a.w_shared): larger tables run one step per pass (cuda_backend.cu). */
template <typename T, bool D3>
cudaError_t hg_temporal_depth(const heat_general_args<T> &a, int k, cudaStream_t s)
{
    static_assert(HEAT_CUDA_TEMPORAL_MAX == 8, "one instantiation per depth up to the maximum");
    if (!a.w_shared) return cudaErrorInvalidValue;
    switch (k) {
    case 2:
        return gtb_run<T, D3, 2>(a, s);
    case 3:
        return gtb_run<T, D3, 3>(a, s);
    case 4:
        return gtb_run<T, D3, 4>(a, s);
    case 5:
        return gtb_run<T, D3, 5>(a, s);
    case 6:
        return gtb_run<T, D3, 6>(a, s);
    case 7:
        return gtb_run<T, D3, 7>(a, s);
    case 8:
        return gtb_run<T, D3, 8>(a, s);
    default:
        return cudaErrorInvalidValue;
    }
}

#endif
