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
 * Each thread owns VX columns of RY rows (3D: 2, whose inner p neighbours
 * are its own registers; temporal.cuh) and keeps, per level, the centre
 * plane of them in registers. Shared memory holds each level's planes,
 * double-buffered so that one meeting per iteration separates writes from
 * reads: the current half gives the p neighbours of other threads' rows, and
 * the other half, before this thread overwrites it, the plane before the
 * centre of its own columns (no register ring to rotate for it). Only the
 * warp rows next to each other read each other's rows, so each meets just
 * those two (tb_rows_sync, temporal.cuh), not the whole block. x neighbours
 * come from the neighbouring lane by warp shuffle: a warp spans the window's
 * width, so the lanes at its ends only ever feed the halo. All lanes of a
 * warp share their rows, so at level t the warps whose rows no later level
 * reads (the outer t rows on each side) skip the update. In 2D (rows of x
 * streamed along w = y) each warp is an independent window of WX points,
 * with its planes before the centre in registers, no shared memory and no
 * barrier.
 *
 * The grid is persistent: one block per resident slot, block b taking the
 * b-th of G equal shares of all (window, plane) pairs, windows in order and
 * planes in order within each, a plane weighted by what its window meets.
 * So every multiprocessor gets the same work however many windows there are
 * (at 512^3, k = 3: 100 windows for 132 multiprocessors); a share that runs
 * from one window into the next is two segments, each with 2 K planes of
 * warm-up. At k = 4 the last window of a row of windows is narrow (half the
 * width, half the values a thread) where what it stores fits: at nx = 512
 * it stores 32 of the 120 points a window does in float, 8 of 56 in double.
 * Where rows start on 16-byte boundaries (TB_ENDS, TB_PADDED) every thread
 * loads and stores its VX values as one vector, beyond the x faces too (a
 * column mapped once): the plane loops then have no per-value path, 12%
 * fewer instructions and 12% faster at 512^3, k = 4 (docs/PERFORMANCE.md).
 *
 * Boundaries are applied inside every fused step exactly as in a single
 * sweep: outside a periodic axis the window holds the periodic images
 * (loaded with the index taken modulo n), so they need no special case; on a
 * Dirichlet face the node keeps its value; a Neumann node uses the mirrored
 * neighbour plus 2 h g. Window points beyond a non-periodic face hold
 * whatever was loaded and are never read by a node of the grid. Face code
 * costs instructions on every point it is compiled into, so each segment
 * runs one of three specializations of the plane loop (TB_INNER: no x or p
 * face, the bare update; TB_XSEL: an x face that is the first or last value
 * of a thread (either face of rows of whole groups, the low face of padded
 * rows): selects; TB_GENERAL: a p face or an x face inside a group or on
 * unaligned rows: substitutions in the rows on them), and the iterations
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

#include "temporal.cuh"

namespace
{

/* One segment: the window at (x0, y0) streamed over the planes [w0, w1) of
 * its column, K fused steps, level K stored where this block owns it. XF:
 * the window meets a non-periodic x face. NAR: a narrow window (3D, the last
 * of a row where what it stores fits; temporal.cuh): half the values a
 * thread, half the width, the same halo. */
template <typename T, bool D3, bool RES, int K, int FACES, bool NAR = false, bool ALN = false>
__device__ __forceinline__ void tb_segment(const heat_stencil_args<T> &a, int aligned, int x0,
                                           int y0, int w0, int w1, T *sm, unsigned long long &m)
{
    using S = tb_shape<T, D3, K>;
    static_assert(!NAR || (D3 && S::VX % 2 == 0), "a narrow window halves the values a thread");
    static_assert(!ALN || D3, "whole-vector rows in 3D only");
    constexpr int VX = NAR ? S::VX / 2 : S::VX, WX = 32 * VX, HX = S::HX, BY = S::BY, RY = S::RY;
    using V = hk_vec<T, VX>;
    /* Vector loads and stores: a narrow float window's pairs as one 8-byte
     * access (vload takes 16-byte vectors only). */
    constexpr bool PAIR = NAR && sizeof(T) == 4 && VX == 2;
    auto ldv = [](const T *p) {
        V r;
        if constexpr (PAIR) {
            const float2 f = *reinterpret_cast<const float2 *>(p);
            r.v[0] = f.x, r.v[1] = f.y;
        } else {
            r = vload<T, VX>(p);
        }
        return r;
    };
    auto stv = [](T *p, const V &r) {
        if constexpr (PAIR)
            *reinterpret_cast<float2 *>(p) = make_float2(r.v[0], r.v[1]);
        else
            vstore<T, VX>(p, r);
    };
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
        general_row[q] = fy[q].nlo || fy[q].nhi || fy[q].held || (XF && aligned != TB_ENDS);
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
    /* ALN (3D, rows on 16-byte boundaries, so a thread's VX values are one
     * vector whatever the window): each thread loads its vector from a column
     * mapped once, the periodic image or, beyond a non-periodic face, a column
     * clamped into the grid, the row's last group (values that are loaded but
     * never read by a node of the grid); and it stores all of its values or
     * none. A Dirichlet node among them is stored too: its result is its
     * centre, the same bits as are there. Where nx is no multiple of VX (no
     * periodic x face then: TB_PADDED) the row's last group reaches into the
     * padding of the row, which it loads and stores with it: a value there
     * is never read by a node either (the x face's substitution replaces the
     * last node's neighbour). So the plane loop has no per-value path. */
    const int xlast = (a.nx - 1) / VX * VX;
    const int xmap = !ALN                     ? 0
                     : a.bx[0] == HK_PERIODIC ? tb_map(xg, a.nx, a.bx)
                                              : (xg < 0 ? 0 : (xg > xlast ? xlast : xg));
    const bool store_all = ALN && xg >= x0 + HX && xg + VX <= x0 + WX - HX && xg < a.nx;
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
        if (ALN) {
            g = ldv(row + xmap);
        } else if (vec) {
            g = ldv(row + xg);
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
    /* 3D: the rows of level 0's next plane (n + 1) and of level K's stored
     * plane (n - K), advanced one plane per iteration: a plane inside the
     * grid needs no mapping and no multiply (a plane outside it, past a
     * periodic w face or beyond the grid's last, still maps through
     * load0). At 512^3 this made float k = 3 and 4 8.5% faster, double
     * 7% and 4% (docs/PERFORMANCE.md); in 2D (a row a warp) it was 3 to 5%
     * slower in float, so 2D maps every plane as before. */
    const T *lrow[RY];
    T *orow[RY];
#pragma unroll
    for (int q = 0; q < RY; q++) {
        lrow[q] = a.u + ((long long)(n0 + 1) * a.sw + rowoff[q] + (ALN ? xmap : vec ? xg : 0));
        orow[q] = a.out + ((long long)(n0 - K) * a.sw + (long long)(y0 + r0 + q) * a.sp + xg);
    }

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
            if (D3 && (unsigned)(n + 1) < (unsigned)a.nw) {
#pragma unroll
                for (int q = 0; q < RY; q++) {
                    if (ALN || vec) {
                        next[q] = ldv(lrow[q]);
                    } else {
#pragma unroll
                        for (int e = 0; e < VX; e++)
                            next[q].v[e] = lrow[q][tb_map(xg + e, a.nx, a.bx)];
                    }
                }
            } else {
#pragma unroll
                for (int q = 0; q < RY; q++) load0(n + 1, q, next[q]);
            }
        }
        if (D3) {
#pragma unroll
            for (int q = 0; q < RY; q++) lrow[q] += a.sw;
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
                    pv[q] = D3 ? ldv(wr + (t - 1) * BY * WX + off_own + q * WX)
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
                    pa = ldv(rd + (t - 1) * BY * WX + off_a);
                    pb = ldv(rd + (t - 1) * BY * WX + off_b);
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
                if (D3) stv(wr + (t - 1) * BY * WX + off_own + q * WX, vals[t - 1][q]);
            }
        }
        /* Level K's plane n - K, stored where this block owns it. */
        const int wk = n - K;
        if (wk >= w0 && wk != wd_lo && wk != wd_hi) {
#pragma unroll
            for (int q = 0; q < RY; q++) {
                if (!row_keep[q]) continue;
                /* row q of plane wk, from xg */
                T *out = D3 ? orow[q] : a.out + (long long)wk * a.sw + xg;
                if (ALN) {
                    if (store_all) stv(out, vals[K][q]);
                } else if (vec_store) {
                    stv(out, vals[K][q]);
                } else {
#pragma unroll
                    for (int e = 0; e < VX; e++)
                        if (keep >> e & 1) out[e] = vals[K][q].v[e];
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
        if constexpr (D3) {
#pragma unroll
            for (int q = 0; q < RY; q++) orow[q] += a.sw;
            tb_rows_sync<S::TY>();
        }
    };
    /* The iterations whose planes n - K .. n - 1 meet a w face (at most 2 K
     * per segment) take the fix-ups; the others are free of face code. (In
     * 3D, three loops instead, the middle one testing none of its planes,
     * made ptxas spill inside them: 12% slower at 512^3, k = 4, with the
     * whole-vector rows.) */
    const int wf_lo = a.bw[0] != HK_PERIODIC ? 0 : INT_MIN;
    const int wf_hi = a.bw[1] != HK_PERIODIC ? a.nw - 1 : INT_MIN;
    for (int n = n0; n < n1; n++) {
        if ((wf_lo >= n - K && wf_lo < n) || (wf_hi >= n - K && wf_hi < n))
            iter(std::true_type(), n);
        else
            iter(std::false_type(), n);
    }
}

/* A segment of the persistent grid (temporal.cuh, tb_schedule): the loop
 * for what its window meets. A struct with a forced-inline call rather than
 * a lambda: with five copies of the loop the compiler no longer inlined the
 * lambda, and its call spilled hundreds of bytes. */
template <typename T, bool D3, bool RES, int K> struct tb_uniform_seg {
    using S = tb_shape<T, D3, K>;
    const heat_stencil_args<T> &a;
    int aligned;
    T *sm;
    unsigned long long &m;

    template <typename XF>
    __device__ __forceinline__ void operator()(int kd, int x0, int y0, int w0, int w1,
                                               const XF &xface, bool nar) const
    {
        if constexpr (D3) {
            /* One window per block, so each branch is the whole block's.
             * Rows on 16-byte boundaries (every grid of the one-GPU backend,
             * which pads its rows, but a periodic x axis of an nx that is
             * no multiple of VX: temporal.cuh, TB_PADDED) take the
             * whole-vector loops. A narrow window (only
             * there: tb_schedule) takes the general loop, which is right for
             * every kind: one more copy of the loop, not two (with the x-face
             * one as well, ptxas spilled 36 bytes in float k = 4 against 4).
             * Other rows: the general loop, or the inner one away from the
             * faces. */
            if (aligned) {
                if constexpr (tb_narrow_kernel<T, D3, K>()) {
                    if (nar) {
                        seg<TB_GENERAL, true, true>(x0, y0, w0, w1);
                        return;
                    }
                }
                if (kd == TB_GENERAL)
                    seg<TB_GENERAL, false, true>(x0, y0, w0, w1);
                else if (kd == TB_XSEL)
                    seg<TB_XSEL, false, true>(x0, y0, w0, w1);
                else
                    seg<TB_INNER, false, true>(x0, y0, w0, w1);
            } else if (kd == TB_INNER) {
                seg<TB_INNER, false, false>(x0, y0, w0, w1);
            } else {
                seg<TB_GENERAL, false, false>(x0, y0, w0, w1);
            }
        } else {
            /* The warp's own window decides; in double at depths up to 4
             * every window runs the general loop (one copy of the loop
             * instead of three: 5% faster at 8192^2, k = 4; slower in float
             * and at deeper k, docs/PERFORMANCE.md). */
            constexpr bool one_loop = sizeof(T) == 8 && K <= 4;
            if (one_loop || kd == TB_GENERAL || (aligned != TB_ENDS && xface(x0, S::WX)))
                seg<TB_GENERAL, false, false>(x0, y0, w0, w1);
            else if (kd == TB_XSEL && xface(x0, S::WX))
                seg<TB_XSEL, false, false>(x0, y0, w0, w1);
            else
                seg<TB_INNER, false, false>(x0, y0, w0, w1);
        }
    }

    template <int FACES, bool NAR, bool ALN>
    __device__ __forceinline__ void seg(int x0, int y0, int w0, int w1) const
    {
        tb_segment<T, D3, RES, K, FACES, NAR, ALN>(a, aligned, x0, y0, w0, w1, sm, m);
    }
};

/* The persistent grid (temporal.cuh, tb_schedule) over the uniform segments. */
template <typename T, bool D3, bool RES, int K>
__global__ void __launch_bounds__(tb_shape<T, D3, K>::THREADS, tb_shape<T, D3, K>::MINB)
    temporal_kernel(const heat_stencil_args<T> a, int aligned, int gxw, int gy, tb_costs cw)
{
    using S = tb_shape<T, D3, K>;
    extern __shared__ __align__(16) unsigned char tb_smem[];
    T *const sm = reinterpret_cast<T *>(tb_smem); /* [2][K][BY][WX], 3D only */
    unsigned long long m = 0;
    tb_schedule<T, D3, K, S>(a, aligned, gxw, gy, cw,
                             tb_uniform_seg<T, D3, RES, K>{a, aligned, sm, m});
    if (RES) hk_warp_max(m, a.resid); /* no block barrier after tb_rows_sync */
}

template <typename T, bool D3, int K> struct tb_launch {
    using S = tb_shape<T, D3, K>;
    /* One block per resident slot (asked once per instantiation; temporal.cuh,
     * tb_blocks). */
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
        const tb_plan p = tb_plan_of<T, D3, K, S>(a);
        /* Costs per plane, inner : x face : general (temporal.cuh,
         * tb_uniform_costs): equal weights left the blocks with face windows
         * last, 10% slower in all at 512^3. */
        const tb_costs cw = tb_costs_or_env(tb_uniform_costs<T, D3, K>());
        const long long g = tb_blocks(res, p.planes, K);
        /* TB_PADDED where the row's last group ends in padding, which the
         * whole-vector loops store into (3D), or (2D) where rows start on
         * 16-byte boundaries. */
        const bool rows16 = hk_rows16(a), ends = rows16 && a.nx % S::VX == 0;
        const bool xper = a.bx[0] == HK_PERIODIC || a.bx[1] == HK_PERIODIC;
        const bool padded = rows16 && (!D3 || (!xper && a.xpad >= S::VX - a.nx % S::VX));
        const int aligned = ends ? TB_ENDS : padded ? TB_PADDED : 0;
        const dim3 block(32, S::TY), grid((unsigned)g);
        if (a.resid)
            temporal_kernel<T, D3, true, K>
                <<<grid, block, sh, stream>>>(a, aligned, (int)p.gxw, (int)p.gy, cw);
        else
            temporal_kernel<T, D3, false, K>
                <<<grid, block, sh, stream>>>(a, aligned, (int)p.gxw, (int)p.gy, cw);
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
