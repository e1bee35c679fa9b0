/* What the temporal-blocking kernels share (k_temporal.cu for the uniform
 * update, k_gtemporal.cu for the variable-coefficient one): the tiling of a
 * depth, the boundary mapping of window loads, and the persistent grid that
 * deals (window, plane) pairs to the blocks. k_temporal.cu describes the
 * scheme. */
#ifndef HEAT_CUDA_TEMPORAL_CUH
#define HEAT_CUDA_TEMPORAL_CUH

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "stencil.cuh"

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
 * x face that is the first or last value of a thread (selects): either face
 * where rows are whole groups, the low one where they are padded (3D); and
 * TB_GENERAL a p face, or an x face inside a group or on unaligned rows
 * (substitutions value by value). w faces are the same in all three: fix-ups
 * of the plane's inputs and result in the iterations whose planes meet one. */
enum { TB_INNER = 0, TB_XSEL = 1, TB_GENERAL = 2 };

/* What a grid's rows allow: the kernels' `aligned` argument. TB_ENDS: rows
 * of whole groups on 16-byte boundaries (nx a multiple of VX), so an x face
 * is a group's first or last value. TB_PADDED: rows on 16-byte boundaries
 * whose last group reaches into the row's padding (hk_rows16; in 3D only
 * without a periodic x face, whose images would not be whole groups, and
 * where the padding, heat_stencil_args::xpad, holds the rest of the group:
 * the one-GPU backend's rows, not a part's view). Any
 * nonzero value: groups inside the grid load as vectors, and in 3D the
 * whole-vector loops of k_temporal.cu run; 0: one value at a time. (A
 * value, not bits: testing a bit for the whole-vector loops made ptxas
 * allocate the kernels' registers differently, spilling 8 to 12 bytes more
 * in float k = 3 and double k = 4.) The general update passes 0 or
 * TB_ENDS. */
enum { TB_ENDS = 1, TB_PADDED = 2 };

/* The tiling of one (precision, dimension, depth). 3D: a window of 32 rows,
 * 2 rows per thread (512 threads of up to 128 registers, 16 warp rows: the
 * ring of tb_rows_sync); 2D: one row, 4 independent warps per block. Values
 * per thread along x: 16 bytes, halved where 2 K x 2 rows of them would
 * pass 64 registers (they were rings in registers; the bound still keeps the
 * per-thread values and the window within the register file and 227 KB of
 * shared memory). The x halo is a multiple of VX, so that windows start on
 * 16-byte boundaries when rows do. */
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

/* The end of an iteration of a 3D window (k_temporal.cu, gtemporal.cuh):
 * what each warp row (threadIdx.y) wrote to shared memory, the next
 * iteration's p neighbours of the rows next to it, is read only by the warp
 * rows next to it. So instead of the whole block it meets those two, each
 * pair on a named barrier of its own (bar.sync with 64 threads): the 16 warp
 * rows as a ring, pair (w, w + 1 mod 16) on barrier w + 1 mod 16, first the
 * pairs from an even row, then those from an odd one, with no branch (rows
 * 15 and 0 meet too, which only ties two rows that never read each other). A
 * row is then at most one iteration ahead of the rows next to it: their
 * writes of iteration n are done before it reads them in n + 1, and their
 * reads of n before it overwrites that half of the double buffer in n + 1.
 * Rows further apart drift freely, so that the block's warps are not all in
 * the same phase of an iteration (loads, arithmetic, stores) at once: at
 * 512^3 on an H100 the best depth ran 5.6% faster in float and 10.6% in
 * double than with __syncthreads (docs/PERFORMANCE.md). All 16 barriers are
 * the ring's, 0 included: a kernel that uses it may not call __syncthreads
 * after its first iteration (a row could meet rows still in the ring);
 * hk_warp_max gathers residuals. */
template <int TY> __device__ __forceinline__ void tb_rows_sync()
{
    static_assert(TY == 16, "a ring of 16 warp rows on the 16 named barriers");
    const int w = (int)threadIdx.y;
    asm volatile("bar.sync %0, 64;" : : "r"(w & 1 ? w : w + 1) : "memory");
    asm volatile("bar.sync %0, 64;" : : "r"(w & 1 ? (w + 1) & 15 : w) : "memory");
}

/* Relative cost per plane of a window by what it meets (TB_INNER, TB_XSEL,
 * TB_GENERAL), in units of 1/32 of an inner window's; and of a narrow window
 * (half the width: the last of a row of windows where what it stores fits;
 * tb_schedule) in 1/32 of a full one of its kind: 0 where none is used, -1
 * where the kernel has none. */
struct tb_costs {
    int c[3];
    int narrow;
};

/* Whether the uniform kernel (k_temporal.cu) has narrow windows: in 3D at
 * k = 4, the depth where they were measured faster (float 4%, double 2% at
 * 512^3 on an H100; at k = 3 they were slower at every weight timed,
 * docs/PERFORMANCE.md). Each is one more copy of the plane loop. */
template <typename T, bool D3, int K> __host__ __device__ constexpr bool tb_narrow_kernel()
{
    return D3 && K == 4 && tb_shape<T, D3, K>::VX % 2 == 0;
}

/* The uniform kernel's costs (k_temporal.cu), from timings on an H100 at
 * 512^3 and 640 x 480 x 400 with the share's ends found once: each kind's
 * time per plane, timed per segment (float k = 4 32 : 36 : 44, double k = 4
 * 32 : 36 : 38), still left the blocks that run general windows finishing
 * last, so their weight was raised until the pass was fastest at both sizes
 * (docs/PERFORMANCE.md): 3D float k = 3 32 : 32 : 37, k = 4 32 : 36 : 46,
 * double k = 3 32 : 35 : 36, k = 4 32 : 38 : 42. Other depths and 2D keep
 * 8 : 9 : 10, as measured before. The narrow windows at k = 4 weigh 24 (of
 * 32) in both precisions: in float the fastest at 512^3 on an H100; in
 * double 24 and 28 timed level there, and 24 was 0.7 to 1.3% faster on an
 * H200 from 640 x 480 x 400 to 1024 x 1024 x 192. Only the division of the
 * work depends on them, never a value. */
template <typename T, bool D3, int K> constexpr tb_costs tb_uniform_costs()
{
    constexpr bool nk = tb_narrow_kernel<T, D3, K>();
    if (D3 && sizeof(T) == 4 && K == 3) return {{32, 32, 37}, -1};
    if (D3 && sizeof(T) == 4 && K == 4) return {{32, 36, 46}, nk ? 24 : -1};
    if (D3 && sizeof(T) == 8 && K == 3) return {{32, 35, 36}, -1};
    if (D3 && sizeof(T) == 8 && K == 4) return {{32, 38, 42}, nk ? 24 : -1};
    return {{32, 36, 40}, -1};
}

/* The persistent grid: block b of G takes the b-th of G equal shares of the
 * work, the windows in order (rows of windows along p, windows along x) and
 * the planes in order within each, a plane of a window weighing its cost, so
 * that every multiprocessor gets the same work whatever the count and kinds
 * of windows; a share that crosses from one window to the next is two
 * segments, each with its 2 K planes of warm-up. 2D: a "window" is a group
 * of TY windows, one per warp. Runs seg(kind, x0, y0, w0, w1, xface, narrow)
 * for each of the block's segments: the window's kind (TB_*), its first x
 * (per warp in 2D) and p, its planes, xface(x0, width), whether a window
 * meets a non-periodic x face, and whether the window is narrow. S: the
 * kernel's tiling.
 *
 * Narrow windows (3D, where cw.narrow > 0 and rows start on 16-byte
 * boundaries): the last window of a row stores what the windows before it
 * leave, at 512 points and 120 a window 32 of its 120; where that fits in a
 * window of half the width (the same halo), it is one, with half the values
 * a thread (k_temporal.cu).
 *
 * The share's ends are found once, before the first segment, and kept in
 * shared memory (so that nothing of the search stays live in registers
 * across a segment), with a block barrier: the kernel may not have used
 * tb_rows_sync yet. The windows that meet a face are a run at each end of a
 * row (x faces) and whole rows at each end of the grid (p faces), so the
 * units before any window have a closed form and each end is two binary
 * searches: a few hundred instructions, where walking the windows from the
 * first took 20 to 80 us a pass at 512^3 (the blocks far along the grid
 * finished last; docs/PERFORMANCE.md). */
template <typename T, bool D3, int K, typename S = tb_shape<T, D3, K>, typename Seg>
__device__ __forceinline__ void tb_schedule(const heat_stencil_args<T> &a, int aligned, int gxw,
                                            int gy, tb_costs cw, Seg &&seg)
{
    /* What window (wx, wy) meets: its kind, and its first x (per warp in 2D). */
    auto x0_of = [&](int wx, int warp) { return (D3 ? wx : wx * S::TY + warp) * S::SX - S::HX; };
    auto xface_lo = [&](int x0) { return a.bx[0] != HK_PERIODIC && x0 <= 0; };
    auto xface_hi = [&](int x0, int width) { return a.bx[1] != HK_PERIODIC && x0 + width >= a.nx; };
    auto xface = [&](int x0, int width) { return xface_lo(x0) || xface_hi(x0, width); };
    constexpr int WW = D3 ? S::WX : S::TY * S::SX + 2 * S::HX; /* a window's width */
    auto wxlo = [&](int wx) { return xface_lo(x0_of(wx, 0)); };
    auto wxhi = [&](int wx) { return xface_hi(x0_of(wx, 0), WW); };
    auto pface = [&](int wy) {
        const int y0 = wy * S::SY - K;
        return D3 && ((a.bp[0] != HK_PERIODIC && y0 <= 0) ||
                      (a.bp[1] != HK_PERIODIC && y0 + S::BY >= a.np));
    };
    /* An x face is the first or last value of a thread (selects, TB_XSEL)
     * where rows are whole groups (TB_ENDS); on padded rows (TB_PADDED, 3D)
     * the low face still is (windows start on groups, and x = 0 starts
     * one), while the high one lies inside the row's last group. */
    const bool sel_lo = aligned == TB_ENDS || (D3 && aligned == TB_PADDED);
    const bool sel_hi = aligned == TB_ENDS;
    auto kind_of = [&](bool xl, bool xh, bool pf) {
        return pf || (xh && !sel_hi) || (xl && !sel_lo) ? TB_GENERAL
                                                        : (xl || xh ? TB_XSEL : TB_INNER);
    };
    auto kind = [&](int wx, int wy) { return kind_of(wxlo(wx), wxhi(wx), pface(wy)); };
    /* Whether the last window of a row is narrow (it then still reaches the
     * face, if any, so its kind is the same). On padded rows too: its last
     * group, half as wide, ends inside the padding that holds a whole one. */
    constexpr int SXN = S::VX % 2 == 0 ? S::WX / 2 - 2 * S::HX : 0;
    auto narrow = [&] {
        return D3 && SXN > 0 && cw.narrow > 0 && aligned != 0 && a.nx - (gxw - 1) * S::SX <= SXN;
    };
    /* (Selects rather than an index: an indexed parameter array would go
     * to local memory.) */
    auto cost = [&](int kd) {
        return (long long)(kd == TB_INNER ? cw.c[0] : kd == TB_XSEL ? cw.c[1] : cw.c[2]);
    };
    /* First window and plane, last window and end plane, whether the last
     * window of a row is narrow, and the runs of face windows and rows
     * below (xl, xh, ylo, yhi), from which the segments take their kinds. */
    __shared__ int ends[9];
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        const int nar = narrow();
        /* Units of a plane of window wx of a row whose kind is kd. A full
         * window weighs 32 only where there is a narrow one, so that without
         * one the division is exactly as it was before there were any. */
        const long long full_w = nar ? 32 : 1;
        auto wcost = [&](int kd, int wx) {
            return cost(kd) * (nar && wx == gxw - 1 ? cw.narrow : full_w);
        };
        /* Windows [0, xl) of a row meet the low x face, [xh, gxw) the high
         * one; rows [0, ylo) and [yhi, gy) a p face (each a short run). */
        int xl = 0, xh = gxw, ylo = 0, yhi = gy;
        while (xl < gxw && wxlo(xl)) xl++;
        while (xh > 0 && wxhi(xh - 1)) xh--;
        while (ylo < gy && pface(ylo)) ylo++;
        while (yhi > ylo && pface(yhi - 1)) yhi--;
        /* How many of the items [lo, hi) come before item i. */
        auto in = [](long long i, long long lo, long long hi) {
            const long long n = (i < hi ? i : hi) - lo;
            return n > 0 ? n : 0ll;
        };
        const long long cg = cost(TB_GENERAL), ci = cost(TB_INNER);
        const long long cl = cost(kind_of(true, false, false)),
                        ch = cost(kind_of(false, true, false));
        /* Units before window wx (<= gxw) of row wy: the full windows, then
         * the narrow one. A window that meets both x faces weighs as a high
         * one (both kinds are TB_GENERAL where the low one is). */
        auto before_win = [&](long long wy, long long wx) {
            const long long full = wx < gxw - nar ? wx : gxw - nar;
            const bool pf = pface((int)wy);
            const long long nh = in(full, xh, gxw), nl = in(full, 0, xl < xh ? xl : xh);
            const long long u = pf ? cg * full : ch * nh + cl * nl + ci * (full - nh - nl);
            return (full_w * u + (wx > full ? wcost(kind((int)gxw - 1, (int)wy), gxw - 1) : 0)) *
                   a.nw;
        };
        /* Units before row wy: all face rows alike, all inner rows alike. */
        const long long face_row = before_win(0, gxw);
        const long long inner_row = ylo < yhi ? before_win(ylo, gxw) : 0;
        auto before_row = [&](long long wy) {
            return face_row * (in(wy, 0, ylo) + in(wy, yhi, gy)) + inner_row * in(wy, ylo, yhi);
        };
        /* The window that holds unit u, and its first plane whose first
         * unit is at or past u (plane p of a window of cost c whose units
         * start at acc lies in units [acc + p c, acc + (p + 1) c) and
         * belongs to the block whose share holds its first unit). */
        auto locate = [&](long long u, int &win, int &plane) {
            int lo = 0, hi = gy - 1;
            while (lo < hi) {
                const int mid = (lo + hi + 1) / 2;
                if (before_row(mid) <= u)
                    lo = mid;
                else
                    hi = mid - 1;
            }
            const int wy = lo;
            const long long r = u - before_row(wy);
            lo = 0, hi = gxw - 1;
            while (lo < hi) {
                const int mid = (lo + hi + 1) / 2;
                if (before_win(wy, mid) <= r)
                    lo = mid;
                else
                    hi = mid - 1;
            }
            const long long c = wcost(kind(lo, wy), lo);
            win = wy * gxw + lo;
            const long long p = (r - before_win(wy, lo) + c - 1) / c;
            plane = (int)(p < a.nw ? p : a.nw);
        };
        const long long total = before_row(gy);
        const long long G = gridDim.x, b = blockIdx.x, per = total / G, extra = total % G;
        const long long u0 = b * per + (b < extra ? b : extra), u1 = u0 + per + (b < extra);
        ends[0] = ends[2] = 0, ends[1] = ends[3] = -1, ends[4] = nar;
        ends[5] = xl, ends[6] = xh, ends[7] = ylo, ends[8] = yhi;
        if (u1 > u0) {
            locate(u0, ends[0], ends[1]);
            /* The last window is the one that holds the share's last unit;
             * the share ends at the first plane starting at or past u1. */
            int w1;
            locate(u1 - 1, ends[2], w1);
            const int wy = ends[2] / gxw, wx = ends[2] % gxw;
            const long long c = wcost(kind(wx, wy), wx);
            const long long acc = before_row(wy) + before_win(wy, wx);
            const long long p = (u1 - acc + c - 1) / c;
            ends[3] = (int)(p < a.nw ? p : a.nw);
        }
    }
    __syncthreads();
    for (int win = ends[0]; win <= ends[2]; win++) {
        const int w0 = win == ends[0] ? ends[1] : 0, w1 = win == ends[2] ? ends[3] : a.nw;
        if (w0 >= w1) continue;
        const int wx = win % gxw, wy = win / gxw;
        /* kind(wx, wy), from the runs */
        const int kd = wy < ends[7] || wy >= ends[8] ? TB_GENERAL
                       : wx >= ends[6]               ? kind_of(false, true, false)
                       : wx < ends[5]                ? kind_of(true, false, false)
                                                     : TB_INNER;
        const int x0 = x0_of(wx, (int)threadIdx.y), y0 = D3 ? wy * S::SY - K : 0;
        seg(kd, x0, y0, w0, w1, xface, ends[4] && wx == gxw - 1);
    }
}

/* The persistent grid over a's grid: windows per row of windows (gxw), rows
 * (gy) and (window, plane) pairs. */
struct tb_plan {
    long long gxw, gy, planes;
};

template <typename T, bool D3, int K, typename S = tb_shape<T, D3, K>>
inline tb_plan tb_plan_of(const heat_stencil_args<T> &a)
{
    const long long wins = (a.nx + S::SX - 1) / S::SX;
    tb_plan p;
    p.gxw = D3 ? wins : (wins + S::TY - 1) / S::TY;
    p.gy = D3 ? (a.np + S::SY - 1) / S::SY : 1;
    p.planes = p.gxw * p.gy * a.nw;
    return p;
}

/* The costs a launch uses: `def`, or HEAT_CUDA_TB_COSTS ("inner,xface,
 * general", each 1 to 1024, optionally ",narrow", 0 to 1024), read once, to
 * time other divisions of the work without building again. A kernel without
 * narrow windows (def.narrow < 0) gets none, whatever the variable says. */
inline tb_costs tb_costs_or_env(tb_costs def)
{
    static const tb_costs forced = [] {
        tb_costs c = {{0, 0, 0}, -1};
        const char *s = getenv("HEAT_CUDA_TB_COSTS");
        const int n = s ? sscanf(s, "%d,%d,%d,%d", &c.c[0], &c.c[1], &c.c[2], &c.narrow) : 0;
        const bool ok = n >= 3 && std::min({c.c[0], c.c[1], c.c[2]}) >= 1 &&
                        std::max({c.c[0], c.c[1], c.c[2], c.narrow}) <= 1024 &&
                        (n == 3 || c.narrow >= 0);
        return ok ? c : tb_costs{{0, 0, 0}, -1};
    }();
    if (!forced.c[0]) return def;
    tb_costs c = forced;
    if (c.narrow < 0 || def.narrow < 0) c.narrow = def.narrow;
    return c;
}

/* The blocks of the persistent grid: one per resident slot (`res`), each
 * with at least 2 K planes of work, since a share shorter than its warm-up
 * would cost more than it saves. HEAT_CUDA_TB_BLOCKS sets the count, to test
 * shares that end inside windows. */
inline long long tb_blocks(long long res, long long planes, int k)
{
    static const long long forced = [] {
        const char *s = getenv("HEAT_CUDA_TB_BLOCKS");
        return s ? atoll(s) : 0ll;
    }();
    long long g = forced > 0 ? forced : std::min(res, std::max(1ll, planes / (2 * k)));
    return std::min(g, planes);
}

#endif
