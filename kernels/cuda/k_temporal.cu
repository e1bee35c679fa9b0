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
 *   n - t - 1, n - t (the centre) and n - t + 1 (what level t - 1 produced
 *   a moment ago in this iteration, in registers); level K's plane n - K
 *   goes to memory.
 * Each thread owns VX columns of RY = 2 rows (3D; the inner row's p
 * neighbours are its own registers) and keeps, per level, the centre plane
 * of them in registers. Shared memory holds each level's planes,
 * double-buffered so that one barrier per iteration separates writes from
 * reads: the current half gives the p neighbours of other threads' rows,
 * and the other half, before this thread overwrites it, the plane before
 * the centre of its own columns (no register ring to rotate for it). x
 * neighbours come from the neighbouring lane by warp shuffle: a warp spans
 * the window's width, so the lanes at its ends only ever feed the halo. All
 * lanes of a warp share their rows, so at level t the warps whose rows no
 * later level reads (the outer t rows on each side) skip the update. In 2D
 * (rows of x streamed along w = y) each warp is an independent window of WX
 * points, with its planes before the centre in registers, no shared memory
 * and no barrier.
 *
 * The grid is persistent: one block per resident slot, block b taking the
 * b-th of G equal shares of all (window, plane) pairs, windows in order and
 * planes in order within each, a plane weighted by what its window meets.
 * So every multiprocessor gets the same work however many windows there are
 * (at 512^3, k = 3: 100 windows for 132 multiprocessors); a share that runs
 * from one window into the next is two segments, each with 2 K planes of
 * warm-up.
 *
 * Boundaries are applied inside every fused step exactly as in a single
 * sweep: outside a periodic axis the window holds the periodic images
 * (loaded with the index taken modulo n), so they need no special case; on a
 * Dirichlet face the node keeps its value; a Neumann node uses the mirrored
 * neighbour plus 2 h g. Window points beyond a non-periodic face hold
 * whatever was loaded and are never read by a node of the grid. Face code
 * costs instructions on every point it is compiled into, so each segment
 * runs one of three specializations of the plane loop (TB_INNER: no x or p
 * face, the bare update; TB_XSEL: an x face on 16-byte aligned rows, which is
 * the first or last value of a thread: selects; TB_GENERAL: a p face or an
 * unaligned x face: substitutions in the rows on them), and the iterations
 * whose planes meet a w face (2 K per segment at most) take a version of the
 * iteration with the fix-ups: the plane beyond a Neumann face overwritten by
 * the mirrored plane plus 2 h g, a Dirichlet plane's result by its centre.
 *
 * Arithmetic: the formula of a single sweep (stencil.cuh), so K fused steps
 * are bit-identical to K sweeps and to the CPU backend. The Neumann
 * constants are added only on the face (the CPU adds 0 elsewhere: x + 0
 * differs from x only for x = -0, which changes at most the sign of a zero
 * d = fma(-2, c, m + p): with c = -0 every zero d is +0, and with c = +0 the
 * final c + s is +0 whenever s is a zero, so the results are the same bits).
 */
#include <algorithm>
#include <climits>
#include <cstdlib>
#include <type_traits>

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

/* What a segment's window meets, each a specialization of the loop, so that
 * the common one carries no face code: TB_INNER no x or p face; TB_XSEL an
 * x face where rows are 16-byte aligned (so it is the first or last value of
 * a thread: selects); TB_GENERAL a p face, or an x face on unaligned rows
 * (substitutions value by value). w faces are the same in all three: fix-ups
 * of the plane's inputs and result in the iterations whose planes meet one. */
enum { TB_INNER = 0, TB_XSEL = 1, TB_GENERAL = 2 };

/* The tiling of one (precision, dimension, depth). 3D: a window of 32 rows,
 * RY = 2 rows per thread (512 threads of up to 128 registers); 2D: one row,
 * 4 independent warps per block. Values per thread along x: 16 bytes, halved
 * where 2 K x 2 rows of them would pass 64 registers (they were rings in
 * registers; the bound still keeps the per-thread values and the window
 * within the register file and 227 KB of shared memory). The x halo is a
 * multiple of VX, so that windows start on 16-byte boundaries when rows do. */
template <typename T, bool D3, int K> struct tb_shape {
    static constexpr int SZ = (int)sizeof(T);
    static constexpr int RY = D3 ? 2 : 1;
    static constexpr int VMAX = 16 / SZ;
    static constexpr int VX = 2 * K * 2 * VMAX * SZ / 4 <= 64 ? VMAX : VMAX / 2;
    static constexpr int WX = 32 * VX;
    static constexpr int HX = (K + VX - 1) / VX * VX;
    static constexpr int SX = WX - 2 * HX;      /* x points stored per window */
    static constexpr int BY = D3 ? 32 : 1;      /* rows of the window */
    static constexpr int TY = D3 ? BY / RY : 4; /* 3D: rows of threads; 2D: warps per block */
    static constexpr int SY = D3 ? BY - 2 * K : 1;
    static constexpr int THREADS = 32 * TY;
    static constexpr int MINB = D3 ? 1 : 4;
    static_assert(SX > 0 && SY > 0, "the window keeps some points");
    static_assert(VX >= 1 && 2 * K * 2 * VX * SZ / 4 <= 64, "per-thread values fit");
    static size_t smem_bytes()
    {
        return D3 ? (size_t)2 * K * BY * WX * sizeof(T) : 0;
    }
};

/* One segment: the window at (x0, y0) streamed over the planes [w0, w1) of
 * its column, K fused steps, level K stored where this block owns it. XF:
 * the window meets a non-periodic x face. */
template <typename T, bool D3, bool RES, int K, int FACES>
__device__ __forceinline__ void tb_segment(const heat_stencil_args<T> &a, int aligned, int x0,
                                           int y0, int w0, int w1, T *sm, unsigned long long &m)
{
    using S = tb_shape<T, D3, K>;
    constexpr int VX = S::VX, WX = S::WX, HX = S::HX, BY = S::BY, RY = S::RY;
    using V = hk_vec<T, VX>;
    constexpr bool XF = FACES != TB_INNER, GEN = FACES == TB_GENERAL;
    const int lane = threadIdx.x, ty = threadIdx.y;
    const int xg = x0 + lane * VX, r0 = D3 ? ty * RY : 0, col = lane * VX;

    /* Rows: where level 0 is read, their faces, whether they are stored. */
    long long rowoff[RY];
    tb_face fy[RY];
    bool row_keep[RY], general_row[RY];
#pragma unroll
    for (int q = 0; q < RY; q++) {
        const int yg = y0 + r0 + q;
        rowoff[q] = D3 ? (long long)tb_map(yg, a.np, a.bp) * a.sp : 0;
        fy[q] = D3 ? tb_faces(yg, a.np, a.bp) : tb_face{false, false, false};
        row_keep[q] = !D3 || (r0 + q >= K && r0 + q < BY - K && yg < a.np && !fy[q].held);
        /* In a TB_GENERAL window: rows that need the substitutions. */
        general_row[q] = fy[q].nlo || fy[q].nhi || fy[q].held || (XF && !aligned);
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
    /* The w face planes by kind (INT_MIN: none): Neumann low and high,
     * Dirichlet low and high. */
    const int wn_lo = a.bw[0] == HK_NEUMANN ? 0 : INT_MIN;
    const int wn_hi = a.bw[1] == HK_NEUMANN ? a.nw - 1 : INT_MIN;
    const int wd_lo = a.bw[0] == HK_DIRICHLET ? 0 : INT_MIN;
    const int wd_hi = a.bw[1] == HK_DIRICHLET ? a.nw - 1 : INT_MIN;
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

    /* One fused step of the VX nodes of row q: centre c, w neighbours zm/zp
     * (w faces already applied), p neighbours pm/pp (3D). x and p faces
     * substitute the mirrored neighbour plus 2 h g (Neumann) or keep the
     * centre (Dirichlet). */
    auto update = [&](int q, const V &c, const V &zm, const V &zp, const V &pm, const V &pp, V &v) {
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
        if (XF) {
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
#pragma unroll
        for (int e = 0; e < VX; e++) {
            const T r = hk_point<T, D3>(c.v[e], xm.v[e], xp.v[e], ym.v[e], yp.v[e], wm.v[e],
                                        wp.v[e], a.rx, a.rp, a.rw);
            v.v[e] = held >> e & 1 ? c.v[e] : r;
        }
    };

    /* The same step where neither the row nor the plane is on a face. Away
     * from x faces it is the bare update; on one (rows on 16-byte
     * boundaries: an x face is the first or the last value of a thread) the
     * x-face terms are selects on the shuffled neighbours and on the result,
     * with no branch, so the common path carries no merge of substituted
     * inputs. */
    const bool lo_neu = xnlo & 1, hi_neu = xnhi >> (VX - 1) & 1;
    const bool lo_held = xheld & 1, hi_held = xheld >> (VX - 1) & 1;
    auto update_fast = [&](const V &c, const V &zm, const V &zp, const V &pm, const V &pp, V &v) {
        T left = __shfl_up_sync(0xffffffffu, c.v[VX - 1], 1);
        T right = __shfl_down_sync(0xffffffffu, c.v[0], 1);
        if (XF) {
            const T xp0 = VX > 1 ? c.v[1 % VX] : right;            /* right of the first value */
            const T xmL = VX > 1 ? c.v[(VX + VX - 2) % VX] : left; /* left of the last value */
            left = lo_neu ? xp0 + a.gx[0] : left;
            right = hi_neu ? xmL + a.gx[1] : right;
        }
#pragma unroll
        for (int e = 0; e < VX; e++) {
            const T xm = e > 0 ? c.v[e - 1] : left;
            const T xp = e < VX - 1 ? c.v[e + 1] : right;
            v.v[e] = hk_point<T, D3>(c.v[e], xm, xp, D3 ? pm.v[e] : T(0), D3 ? pp.v[e] : T(0),
                                     zm.v[e], zp.v[e], a.rx, a.rp, a.rw);
        }
        if (XF) {
            v.v[0] = lo_held ? c.v[0] : v.v[0];
            v.v[VX - 1] = hi_held ? c.v[VX - 1] : v.v[VX - 1];
        }
    };
    /* Per level t < K and row: the centre, carried in registers from one
     * iteration to the next; and (2D) the plane before it. In 3D the plane
     * before the centre is read back from shared memory, where this thread
     * stored it two iterations ago: the half of the double buffer it is
     * about to overwrite (fewer registers, and no moves to rotate them). */
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
#pragma unroll
    for (int q = 0; q < RY; q++) load0(n0, q, next[q]);

    /* Iteration n: one new plane n of level 0 from memory; level t = 1..K
     * computes its plane n - t; level K's plane n - K goes to memory. */
    auto iter = [&](auto wfaces, int n) {
        constexpr bool WF = decltype(wfaces)::value;
        T *const rd = sm + (size_t)((n - n0) & 1) * K * BY * WX;     /* read: buffer b */
        T *const wr = sm + (size_t)((n - n0 + 1) & 1) * K * BY * WX; /* write: b ^ 1 */
        V vals[K + 1][RY]; /* level t of plane n - t, t = 0 .. K */
        V ctr[RES ? RY : 1];
#pragma unroll
        for (int q = 0; q < RY; q++) vals[0][q] = next[q];
        if (n + 1 < n1) {
#pragma unroll
            for (int q = 0; q < RY; q++) load0(n + 1, q, next[q]);
        }
#pragma unroll
        for (int t = 1; t <= K; t++) {
            const int pw = n - t;
            /* Rows outside [t, BY - t) at level t feed nothing that is kept:
             * those warps skip the update (their values are never read). */
            if (!D3 || (r0 + RY > t && r0 < BY - t)) {
                /* The plane before the centre: level t - 1's plane n - t - 1. */
                V pv[RY];
#pragma unroll
                for (int q = 0; q < RY; q++)
                    pv[q] = D3 ? vload<T, VX>(wr + (t - 1) * BY * WX + off_own + q * WX)
                               : prev[D3 ? 0 : t - 1][q];
                /* A Neumann w face: the plane beyond it is the mirrored plane
                 * plus 2 h g. The slot of the plane beyond is overwritten in
                 * place: below the low face it is spent after this level;
                 * above the high face it is a plane outside the grid, which
                 * only this plane reads. */
                if (WF && (pw == wn_lo || pw == wn_hi)) {
#pragma unroll
                    for (int q = 0; q < RY; q++)
#pragma unroll
                        for (int e = 0; e < VX; e++) {
                            const T m0 = pv[q].v[e], p0 = vals[t - 1][q].v[e];
                            if (pw == wn_lo) pv[q].v[e] = p0 + a.gw[0];
                            if (pw == wn_hi) vals[t - 1][q].v[e] = m0 + a.gw[1];
                        }
                }
                V pa, pb;
                if (D3) {
                    pa = vload<T, VX>(rd + (t - 1) * BY * WX + off_a);
                    pb = vload<T, VX>(rd + (t - 1) * BY * WX + off_b);
                }
#pragma unroll
                for (int q = 0; q < RY; q++) {
                    const V &pm = q > 0 ? own[t - 1][q - 1] : pa;
                    const V &pp = q < RY - 1 ? own[t - 1][q + 1] : pb;
                    if (GEN && general_row[q])
                        update(q, own[t - 1][q], pv[q], vals[t - 1][q], pm, pp, vals[t][q]);
                    else
                        update_fast(own[t - 1][q], pv[q], vals[t - 1][q], pm, pp, vals[t][q]);
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
            /* The centre of level K's update, for the residual. */
            if (RES && t == K) {
#pragma unroll
                for (int q = 0; q < RY; q++) ctr[q] = own[K - 1][q];
            }
#pragma unroll
            for (int q = 0; q < RY; q++) {
                if (!D3) prev[D3 ? 0 : t - 1][q] = own[t - 1][q];
                own[t - 1][q] = vals[t - 1][q];
                /* Level t - 1's plane n - t + 1: a centre of the next iteration. */
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
        if (D3) __syncthreads();
    };
    /* The iterations whose planes n - K .. n - 1 meet a w face (at most 2 K
     * per segment) take the fix-ups; the others are free of face code. */
    const int wf_lo = a.bw[0] != HK_PERIODIC ? 0 : INT_MIN;
    const int wf_hi = a.bw[1] != HK_PERIODIC ? a.nw - 1 : INT_MIN;
    for (int n = n0; n < n1; n++) {
        if ((wf_lo >= n - K && wf_lo < n) || (wf_hi >= n - K && wf_hi < n))
            iter(std::true_type(), n);
        else
            iter(std::false_type(), n);
    }
}

/* Relative cost per plane of a window by what it meets (TB_INNER, TB_XSEL,
 * TB_GENERAL), in units of 1/8 of an inner window's. */
struct tb_costs {
    int c[3];
};

/* The persistent grid: block b of G takes the b-th of G equal shares of the
 * work, the windows in order (rows of windows along p, windows along x) and
 * the planes in order within each, a plane of a window weighing its cost, so
 * that every multiprocessor gets the same work whatever the count and kinds
 * of windows; a share that crosses from one window to the next is two
 * segments, each with its 2 K planes of warm-up. 2D: a "window" is a group
 * of TY windows, one per warp. */
template <typename T, bool D3, bool RES, int K>
__global__ void __launch_bounds__(tb_shape<T, D3, K>::THREADS, tb_shape<T, D3, K>::MINB)
    temporal_kernel(const heat_stencil_args<T> a, int aligned, int gxw, int gy, tb_costs cw)
{
    using S = tb_shape<T, D3, K>;
    extern __shared__ __align__(16) unsigned char tb_smem[];
    T *const sm = reinterpret_cast<T *>(tb_smem); /* [2][K][BY][WX], 3D only */

    /* What window (wx, wy) meets: its kind, and its first x (per warp in 2D). */
    auto x0_of = [&](int wx, int warp) { return (D3 ? wx : wx * S::TY + warp) * S::SX - S::HX; };
    auto xface = [&](int x0, int width) {
        return (a.bx[0] != HK_PERIODIC && x0 <= 0) ||
               (a.bx[1] != HK_PERIODIC && x0 + width >= a.nx);
    };
    auto wxface = [&](int wx) {
        return xface(x0_of(wx, 0), D3 ? S::WX : S::TY * S::SX + 2 * S::HX);
    };
    auto kind_of = [&](bool xf, int wy) {
        const int y0 = wy * S::SY - K;
        const bool pf = D3 && ((a.bp[0] != HK_PERIODIC && y0 <= 0) ||
                               (a.bp[1] != HK_PERIODIC && y0 + S::BY >= a.np));
        return pf || (xf && !aligned) ? TB_GENERAL : (xf ? TB_XSEL : TB_INNER);
    };
    auto kind = [&](int wx, int wy) { return kind_of(wxface(wx), wy); };
    /* (Selects rather than an index: an indexed parameter array would go
     * to local memory.) */
    auto cost = [&](int kd) {
        return (long long)(kd == TB_INNER ? cw.c[0] : kd == TB_XSEL ? cw.c[1] : cw.c[2]);
    };
    /* The windows of a row that meet an x face are a run at each end (one or
     * more: a window whose halo reaches past the face meets it too); those
     * between are alike. */
    auto row_cost = [&](int wy) {
        long long c = 0;
        int lo = 0, hi = gxw;
        for (; lo < gxw && wxface(lo); lo++) c += cost(kind_of(true, wy));
        for (; hi > lo && wxface(hi - 1); hi--) c += cost(kind_of(true, wy));
        c += (long long)(hi - lo) * cost(kind_of(false, wy));
        return c * a.nw;
    };
    /* The block's segment number seg: the window (wx, wy) and its planes
     * [w0, w1), or false past the last. Found afresh for each segment, so
     * that nothing of the search stays live across a segment. */
    auto find = [&](int seg, int &wx, int &wy, int &w0, int &w1) {
        long long total = 0;
        for (int y = 0; y < gy; y++) total += row_cost(y);
        const long long G = gridDim.x, b = blockIdx.x, per = total / G, extra = total % G;
        const long long u0 = b * per + (b < extra ? b : extra), u1 = u0 + per + (b < extra);
        /* The window that holds unit u0, and the units before it (acc). */
        long long acc = 0;
        wy = 0, wx = 0;
        for (; wy < gy - 1; wy++) {
            const long long rc = row_cost(wy);
            if (acc + rc > u0) break;
            acc += rc;
        }
        for (; wx < gxw - 1; wx++) {
            const long long c = cost(kind(wx, wy)) * a.nw;
            if (acc + c > u0) break;
            acc += c;
        }
        /* Plane p of a window of cost c lies in units [acc + p c, acc + (p +
         * 1) c) and belongs to the block whose share holds its first unit. */
        for (int k = 0; wy < gy && acc < u1; k++) {
            const long long c = cost(kind(wx, wy));
            const long long p0 = u0 > acc ? (u0 - acc + c - 1) / c : 0;
            const long long p1 = (u1 - acc + c - 1) / c < a.nw ? (u1 - acc + c - 1) / c : a.nw;
            if (k == seg) {
                w0 = (int)p0, w1 = (int)p1;
                return true;
            }
            acc += c * a.nw;
            if (++wx == gxw) wx = 0, wy++;
        }
        return false;
    };
    unsigned long long m = 0;
    int wx, wy, w0, w1;
    for (int seg = 0; find(seg, wx, wy, w0, w1); seg++) {
        if (w0 >= w1) continue;
        const int kd = kind(wx, wy);
        const int x0 = x0_of(wx, (int)threadIdx.y), y0 = D3 ? wy * S::SY - K : 0;
        /* 3D: one window per block, so this branch is the whole
         * block's. 2D: the warp's own window decides. */
        if (kd == TB_GENERAL || (!D3 && !aligned && xface(x0, S::WX)))
            tb_segment<T, D3, RES, K, TB_GENERAL>(a, aligned, x0, y0, w0, w1, sm, m);
        else if (kd == TB_XSEL && (D3 || xface(x0, S::WX)))
            tb_segment<T, D3, RES, K, TB_XSEL>(a, aligned, x0, y0, w0, w1, sm, m);
        else
            tb_segment<T, D3, RES, K, TB_INNER>(a, aligned, x0, y0, w0, w1, sm, m);
    }
    if (RES) hk_block_max(m, a.resid);
}

template <typename T, bool D3, int K> struct tb_launch {
    using S = tb_shape<T, D3, K>;
    /* One block per resident slot (asked once per instantiation), each with
     * at least 2 K planes of work: a share shorter than its warm-up would
     * cost more than it saves. HEAT_CUDA_TB_BLOCKS sets the count, to test
     * shares that end inside windows. */
    static cudaError_t run(const heat_stencil_args<T> &a, cudaStream_t stream)
    {
        static long long res = 0;
        const size_t sh = S::smem_bytes();
        cudaError_t e;
        if (!res) {
            int dev = 0, sms = 1, per_sm = 0;
            if ((e = cudaGetDevice(&dev)) != cudaSuccess) return e;
            if ((e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) !=
                cudaSuccess)
                return e;
            if ((e = cudaFuncSetAttribute(temporal_kernel<T, D3, false, K>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sh)) !=
                cudaSuccess)
                return e;
            if ((e = cudaFuncSetAttribute(temporal_kernel<T, D3, true, K>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sh)) !=
                cudaSuccess)
                return e;
            if ((e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                     &per_sm, temporal_kernel<T, D3, false, K>, S::THREADS, sh)) != cudaSuccess)
                return e;
            res = (long long)sms * (per_sm > 0 ? per_sm : 1);
        }
        const long long wins = (a.nx + S::SX - 1) / S::SX;
        const long long gxw = D3 ? wins : (wins + S::TY - 1) / S::TY;
        const long long gy = D3 ? (a.np + S::SY - 1) / S::SY : 1;
        const long long planes = gxw * gy * a.nw;
        /* Costs per plane, inner : x face : general = 8 : 9 : 10, as measured
         * on an H100 (docs/PERFORMANCE.md): equal weights left the blocks
         * with face windows last, 10% slower in all at 512^3. */
        const tb_costs cw = {{8, 9, 10}};
        static const long long forced = [] {
            const char *s = getenv("HEAT_CUDA_TB_BLOCKS");
            return s ? atoll(s) : 0ll;
        }();
        long long g = forced > 0 ? forced : std::min(res, std::max(1ll, planes / (2 * K)));
        g = std::min(g, planes);
        const int aligned = a.nx % S::VX == 0;
        const dim3 block(32, S::TY), grid((unsigned)g);
        if (a.resid)
            temporal_kernel<T, D3, true, K>
                <<<grid, block, sh, stream>>>(a, aligned, (int)gxw, (int)gy, cw);
        else
            temporal_kernel<T, D3, false, K>
                <<<grid, block, sh, stream>>>(a, aligned, (int)gxw, (int)gy, cw);
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
