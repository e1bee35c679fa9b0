/* `register_tiled`: the kernel the solver runs.
 *
 * A block owns a tile of NC*BXT*VX x BP points of the plane and streams a run
 * of `wchunk` planes along w. Each thread holds NC groups of VX consecutive x
 * values (group c at x0 + (c BXT + tx) VX, so that each of a warp's loads is
 * one contiguous segment) of the previous, current and next plane in
 * registers (and the plane after next in flight), so only the current plane
 * goes through shared memory, for the in-plane neighbours of other threads.
 * With VX*sizeof(T) = 16 every global access of the centre is one 16-byte
 * load or store where rows start on 16-byte boundaries (hk_rows16: the
 * backend pads its rows to 16 bytes), but for the group that reaches past
 * nx, taken one value at a time; otherwise VX = 1.
 *
 * What keeps it at the bandwidth ceiling (docs/PERFORMANCE.md):
 * - loads run two planes ahead of the update (one plane of the centre in
 *   registers, one in flight), halos one plane ahead too, so every thread has
 *   several independent 16-byte loads outstanding; with two groups a thread
 *   (the 3D default since the H200: its bandwidth needs more bytes in flight
 *   than 4 blocks of one group keep; in 2D too) twice as many, at 2 blocks
 *   of 8 warps (3D);
 * - with two groups a thread, each thread also asks L2 for its groups 4
 *   planes ahead (prefetch.global.L2: no register, no wait), so that the
 *   loads two planes ahead find them there instead of in DRAM: 4 to 13%
 *   faster on the H200 in short passes, 5% in float over 3000 steps, none
 *   in double, where the card's power cap holds a long run (3 or 5 planes
 *   ahead gain less, 2 or 6 about nothing; one-group tiles lose with it);
 * - x neighbours come from the neighbouring lane by warp shuffle, shared
 *   memory only at warp edges; y neighbours are 16-byte shared loads; the
 *   shared plane is double-buffered: one barrier per plane;
 * - the halo of a tile (two rows of groups and two columns) is loaded by the
 *   first 2 NC BXT + 2 BP threads, one value or group each, alongside their
 *   own;
 * - in 3D, where a row ends at most 4 groups past its last whole warp, the
 *   tiles take the whole warps and a strip kernel the rest (hk_tiles_end): a
 *   tile of a few columns costs a whole tile's time;
 * - runs of planes sized so that the blocks fill the resident slots over
 *   whole waves (heat_cuda_wchunk_fill in 3D: 13 to 19% faster than one run
 *   per tile at 384^3 and 640 x 480 x 400): the w halo costs 2 planes per
 *   run.
 * Literature: the z-sliced register scheme of Micikevicius (GPGPU-2, 2009);
 * Rawat et al., "Register optimizations for stencils on GPUs" (PPoPP 2018).
 */
#include <cstdlib>
#include <cstring>

#include "stencil.cuh"

template <typename T, bool D3, bool RES, int VX, int BXT, int BP, int MINB, int NC, int PF>
__global__ void __launch_bounds__(BXT *BP, RES ? (MINB * 3 + 3) / 4 : MINB)
    register_kernel(const heat_stencil_args<T> a)
{
    static_assert(BXT % 32 == 0, "a tile row is whole warps");
    static_assert(BXT * BP >= (D3 ? 2 * NC * BXT : 0) + 2 * BP, "one thread per halo load");
    constexpr int BX = NC * BXT * VX, PH = D3 ? 1 : 0, ROWS = BP + 2 * PH, RS = BX + 2 * VX;
    __shared__ __align__(16) T sm[2][ROWS][RS];

    const int tx = threadIdx.x, tp = threadIdx.y, tid = tx + BXT * tp, lane = tid & 31;
    const int x0 = blockIdx.x * BX, p0 = blockIdx.y * BP;
    const int j = p0 + tp;
    const long long rowoff = D3 ? (long long)hk_map(j, a.np, a.bp) * a.sp : 0;
    const int w0 = blockIdx.z * a.wchunk, w1 = min(w0 + a.wchunk, a.nw);
    /* Group c of this thread: x = x0 + (c BXT + tx) VX, so that each of a
     * warp's NC loads of a plane is one contiguous row segment. */
    auto gx = [&](int c) { return x0 + (c * BXT + tx) * VX; };
    auto gcol = [&](int c) { return VX + (c * BXT + tx) * VX; }; /* in a shared row */

    /* This thread's row of plane w. */
    auto row_at = [&](int w) { return a.u + (long long)hk_map(w, a.nw, a.bw) * a.sw + rowoff; };

    auto load_group = [&](int w, hk_vec<T, VX>(&g)[NC]) {
        const T *row = row_at(w);
#pragma unroll
        for (int c = 0; c < NC; c++) {
            const int ig = gx(c);
            if (ig + VX <= a.nx) {
                g[c] = vload<T, VX>(row + ig);
            } else {
#pragma unroll
                for (int e = 0; e < VX; e++) g[c].v[e] = row[hk_map(ig + e, a.nx, a.bx)];
            }
        }
    };

    /* PF > 0: this thread's groups of plane w + PF asked into L2. */
    auto prefetch = [&](int w) {
        const T *row = row_at(w);
#pragma unroll
        for (int c = 0; c < NC; c++) {
            const int ig = gx(c);
            if (ig < a.nx) asm volatile("prefetch.global.L2 [%0];" ::"l"(row + ig));
        }
    };

    /* Halo roles: a group of the row below or above the tile (3D), or one
     * value left or right of a tile row. */
    int hrole = 0, hrow = 0, hcol = 0, hx = 0;
    long long hoff = 0;
    bool hfull = false;
    if (D3 && tid < 2 * NC * BXT) {
        const int r = tid / (NC * BXT), g = tid % (NC * BXT);
        hrole = 1;
        hrow = r ? ROWS - 1 : 0;
        hcol = VX + g * VX;
        hoff = (long long)hk_map(r ? p0 + BP : p0 - 1, a.np, a.bp) * a.sp;
        hx = x0 + g * VX;
        hfull = hx + VX <= a.nx;
    } else {
        const int t = tid - (D3 ? 2 * NC * BXT : 0);
        if (t >= 0 && t < 2 * BP) {
            const int r = t / 2, side = t % 2;
            hrole = 2;
            hrow = r + PH;
            hcol = side ? VX + BX : VX - 1;
            hoff = D3 ? (long long)hk_map(p0 + r, a.np, a.bp) * a.sp : 0;
            hx = hk_map(side ? x0 + BX : x0 - 1, a.nx, a.bx);
        }
    }
    auto load_halo = [&](int w, hk_vec<T, VX> &h) {
        const T *row = a.u + (long long)hk_map(w, a.nw, a.bw) * a.sw + hoff;
        if (hrole == 1) {
            if (hfull) {
                h = vload<T, VX>(row + hx);
            } else {
#pragma unroll
                for (int e = 0; e < VX; e++) h.v[e] = row[hk_map(hx + e, a.nx, a.bx)];
            }
        } else if (hrole == 2) {
            h.v[0] = row[hx];
        }
    };
    auto store_plane = [&](int b, const hk_vec<T, VX>(&g)[NC], const hk_vec<T, VX> &h) {
#pragma unroll
        for (int c = 0; c < NC; c++) vstore<T, VX>(&sm[b][tp + PH][gcol(c)], g[c]);
        if (hrole == 1)
            vstore<T, VX>(&sm[b][hrow][hcol], h);
        else if (hrole == 2)
            sm[b][hrow][hcol] = h.v[0];
    };

    /* Per-thread constants of the update. */
    const bool row_active = j < a.np && (!D3 || !hk_held(j, a.np, a.bp));
    T apm = 0, app = 0;
    if (D3) hk_ghost(j, a.np, a.bp, a.gp, apm, app);

    unsigned long long m = 0;
    /* Centres: prev, cur, nxt in use, nn in flight. */
    hk_vec<T, VX> prev[NC], cur[NC], nxt[NC], nn[NC], hcur, hnext, hnn;
    load_group(w0 - 1, prev);
    load_group(w0, cur);
    load_group(w0 + 1, nxt);
    load_halo(w0, hcur);
    if (w0 + 1 < w1) load_halo(w0 + 1, hnext);
    store_plane(0, cur, hcur);
    __syncthreads();

    for (int w = w0; w < w1; w++) {
        const int b = (w - w0) & 1;
        if (w + 1 < w1) load_group(w + 2, nn);
        if (w + 2 < w1) load_halo(w + 2, hnn);
        if (PF > 0 && w + PF <= w1) prefetch(w + PF);

        /* x neighbours at the groups' ends: the neighbouring lane, or the
         * shared row at a warp's edge (the tile's halo, or another warp). */
        T left[NC], right[NC];
#pragma unroll
        for (int c = 0; c < NC; c++) {
            left[c] = __shfl_up_sync(0xffffffffu, cur[c].v[VX - 1], 1);
            right[c] = __shfl_down_sync(0xffffffffu, cur[c].v[0], 1);
            if (lane == 0) left[c] = sm[b][tp + PH][gcol(c) - 1];
            if (lane == 31) right[c] = sm[b][tp + PH][gcol(c) + VX];
        }

        if (row_active && !hk_held(w, a.nw, a.bw)) {
            T awm, awp;
            hk_ghost(w, a.nw, a.bw, a.gw, awm, awp);
            T *out = a.out + (long long)w * a.sw + (long long)j * a.sp;
#pragma unroll
            for (int c = 0; c < NC; c++) {
                const int ig = gx(c), col = gcol(c);
                hk_vec<T, VX> pm, pp, v;
                if (D3) {
                    pm = vload<T, VX>(&sm[b][tp][col]);
                    pp = vload<T, VX>(&sm[b][tp + 2][col]);
                }
                bool all = ig + VX <= a.nx;
#pragma unroll
                for (int e = 0; e < VX; e++) {
                    const int i = ig + e;
                    const T ce = cur[c].v[e];
                    T xm = e > 0 ? cur[c].v[e - 1] : left[c];
                    T xp = e < VX - 1 ? cur[c].v[e + 1] : right[c];
                    hk_xghost(i, a.nx, a.bx, a.gx, xm, xp);
                    v.v[e] = hk_point<T, D3>(ce, xm, xp, D3 ? pm.v[e] + apm : T(0),
                                             D3 ? pp.v[e] + app : T(0), prev[c].v[e] + awm,
                                             nxt[c].v[e] + awp, a.rx, a.rp, a.rw);
                    if (i >= a.nx || hk_held(i, a.nx, a.bx)) all = false;
                }
                if (all) {
                    vstore<T, VX>(out + ig, v);
                    if (RES) {
#pragma unroll
                        for (int e = 0; e < VX; e++) {
                            unsigned long long d = hk_diff_bits(v.v[e], cur[c].v[e]);
                            m = d > m ? d : m;
                        }
                    }
                } else {
#pragma unroll
                    for (int e = 0; e < VX; e++) {
                        const int i = ig + e;
                        if (i < a.nx && !hk_held(i, a.nx, a.bx)) {
                            out[i] = v.v[e];
                            if (RES) {
                                unsigned long long d = hk_diff_bits(v.v[e], cur[c].v[e]);
                                m = d > m ? d : m;
                            }
                        }
                    }
                }
            }
        }
        if (w + 1 < w1) store_plane(b ^ 1, nxt, hnext);
        __syncthreads();
#pragma unroll
        for (int c = 0; c < NC; c++) {
            prev[c] = cur[c];
            cur[c] = nxt[c];
            nxt[c] = nn[c];
        }
        hnext = hnn;
    }
    if (RES) hk_block_max(m, a.resid);
}

/* The tiles over the columns [0, nxt) of every row (nxt <= nx: the strip
 * kernel takes the rest). */
template <typename T, bool D3, int VX, int BXT, int BP, int NC = 1,
          int MINB = 2048 / (BXT * BP) / 2, int PF = 0>
static cudaError_t launch(const heat_stencil_args<T> &a, cudaStream_t stream, int nxt)
{
    static int blocks_per_sm = 0; /* occupancy of this instantiation, asked once */
    if (!blocks_per_sm) {
        cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &blocks_per_sm, register_kernel<T, D3, false, VX, BXT, BP, MINB, NC, PF>, BXT * BP, 0);
        if (e != cudaSuccess) return e;
        if (blocks_per_sm < 1) blocks_per_sm = 1;
    }
    constexpr int BX = NC * BXT * VX;
    const long long tx = (nxt + BX - 1) / BX, ty = (a.np + BP - 1) / BP;
    heat_stencil_args<T> b = a;
    /* 3D: runs that fill the resident slots (heat_cuda_wchunk_fill). */
    b.wchunk = D3 ? heat_cuda_wchunk_fill(tx * ty, a.nw, blocks_per_sm)
                  : heat_cuda_wchunk(tx * ty, a.nw, blocks_per_sm);
    const dim3 block(BXT, BP), grid((unsigned)tx, (unsigned)ty, (a.nw + b.wchunk - 1) / b.wchunk);
    if (a.resid)
        register_kernel<T, D3, true, VX, BXT, BP, MINB, NC, PF><<<grid, block, 0, stream>>>(b);
    else
        register_kernel<T, D3, false, VX, BXT, BP, MINB, NC, PF><<<grid, block, 0, stream>>>(b);
    const cudaError_t e = cudaGetLastError();
    return e != cudaSuccess || nxt >= a.nx ? e : hk_launch_strip<T, D3>(a, nxt, stream);
}

/* The 3D tile. Where rows are whole groups (VX > 1), by default "2x32x8":
 * two groups a thread, 32 x 8 threads, registers for 2 blocks a
 * multiprocessor, each thread's groups asked into L2 4 planes ahead. Where a
 * row is an odd number of 32-group warps, so that its last two-group tile is
 * half idle, "32x8" (one group a thread, 4 blocks a multiprocessor) instead:
 * in float always (10 to 21% faster at 3 and 5 warps on the H200), in double
 * up to 3 warps (5% faster at 3; from 5 warps on, the two-group tile is 2 to
 * 5% faster). Where rows are not whole groups (VX = 1): "64x4" (one group a
 * thread, 4 blocks a multiprocessor). HEAT_CUDA_TILE picks one for
 * measurement: those three, "2x32x8np" (the two-group tile without the L2
 * requests ahead), and "32x16", "64x8", "128x4", one-group tiles measured and
 * not kept (docs/PERFORMANCE.md). */
enum {
    TILE_DEFAULT,
    TILE_2X32X8,
    TILE_2X32X8NP,
    TILE_32X8,
    TILE_64X4,
    TILE_32X16,
    TILE_64X8,
    TILE_128X4
};
static int tile_choice(void)
{
    static const char *const names[] = {"",     "2x32x8", "2x32x8np", "32x8",
                                        "64x4", "32x16",  "64x8",     "128x4"};
    static int t = -1;
    if (t < 0) {
        const char *s = getenv("HEAT_CUDA_TILE");
        t = TILE_DEFAULT;
        static_assert(sizeof names / sizeof *names == TILE_128X4 + 1, "a name for every tile");
        for (int i = 1; s && i < (int)(sizeof names / sizeof *names); i++)
            if (!strcmp(s, names[i])) t = i;
    }
    return t;
}

template <typename T, int VX>
static cudaError_t launch3(const heat_stencil_args<T> &a, cudaStream_t stream)
{
    /* Columns the tiles take: where rows are groups, the strip kernel takes
     * a row's end of a few columns past its last whole 32-group warp. */
    const int gw = 32 * VX, nxt = VX > 1 ? hk_tiles_end(a, gw, VX) : a.nx;
    int t = tile_choice();
    if (t == TILE_DEFAULT) {
        const int warps = (nxt + gw - 1) / gw; /* 32-group warps a row */
        const bool one = warps % 2 == 1 && (sizeof(T) == 4 || warps <= 3);
        t = VX == 1 ? TILE_64X4 : one ? TILE_32X8 : TILE_2X32X8;
    }
    switch (t) {
    case TILE_2X32X8:
        return launch<T, true, VX, 32, 8, 2, 2, 4>(a, stream, nxt);
    case TILE_2X32X8NP:
        return launch<T, true, VX, 32, 8, 2, 2>(a, stream, nxt);
    case TILE_32X8:
        return launch<T, true, VX, 32, 8>(a, stream, nxt);
    case TILE_32X16:
        return launch<T, true, VX, 32, 16>(a, stream, nxt);
    case TILE_64X8:
        return launch<T, true, VX, 64, 8>(a, stream, nxt);
    case TILE_128X4:
        return launch<T, true, VX, 128, 4>(a, stream, nxt);
    case TILE_64X4:
    default:
        return launch<T, true, VX, 64, 4>(a, stream, nxt);
    }
}

template <typename T>
cudaError_t heat_cuda_launch_register(const heat_stencil_args<T> &a, bool d3, cudaStream_t stream)
{
    constexpr int V = 16 / sizeof(T);
    const bool vec = hk_rows16(a);
    if (d3) return vec ? launch3<T, V>(a, stream) : launch3<T, 1>(a, stream);
    if (!vec) return launch<T, false, 1, 128, 1>(a, stream, a.nx);
    /* 2D, rows of groups: tiles of 128 threads, two groups a thread, each
     * thread's groups asked into L2 4 rows ahead: 1 to 10% faster than one
     * group a thread on the H200 (without the requests no faster), at odd
     * counts of one-group tiles a row too. HEAT_CUDA_TILE2D=1x128 takes one
     * group, for measurement. */
    const char *e = getenv("HEAT_CUDA_TILE2D");
    if (e && !strcmp(e, "1x128")) return launch<T, false, V, 128, 1>(a, stream, a.nx);
    return launch<T, false, V, 128, 1, 2, 4, 4>(a, stream, a.nx);
}

template cudaError_t heat_cuda_launch_register<float>(const heat_stencil_args<float> &, bool,
                                                      cudaStream_t);
template cudaError_t heat_cuda_launch_register<double>(const heat_stencil_args<double> &, bool,
                                                       cudaStream_t);
