/* `register_tiled` for the variable-coefficient update (general.cuh): the
 * streaming scheme of k_register.cu with each node's class travelling with
 * its value. Two kernels:
 *
 * gregister_kernel (2D, and 3D where the weight table is too large to stage
 * in shared memory). A block owns a tile of BXT*VX x BP points of the plane
 * and streams a run of planes along w. Each thread holds VX consecutive
 * values of the current and next plane in registers (the plane after next
 * in flight), and beside them the planes' classes as one packed word of VX
 * bytes, loaded in the same access pattern (one 4- or 2-byte load per
 * group). A class becomes a material (one shared-memory lookup) once, when
 * its plane is next, kept as the byte offset of its column in the weight
 * table; the current plane's values and materials go through shared memory
 * for the in-plane neighbours of other threads, x neighbours come by warp
 * shuffle, one block barrier per plane. The plane before the centre is read
 * back from the other half of the shared double buffer. So a node costs one
 * class byte of memory traffic and, per update, the lookups of q and of its
 * six face weights in the staged tables. It needs about 113 registers in
 * 3D: 16 warps a multiprocessor.
 *
 * gwarp_kernel (3D with the weights staged, the common case): the same
 * tables and arithmetic with no shared plane and no barrier per plane; each
 * warp streams its own tile, the in-plane neighbours by shuffle (below). 64
 * registers, 32 warps a multiprocessor. At 512^3 on the H100 it takes 14%
 * less time than the best shared-plane kernel measured in float and 7% in
 * double (docs/PERFORMANCE.md, "The warp-tile kernel"). Where a row starts
 * on 16 bytes but ends inside a group (odd nx on the backend's padded
 * rows), it takes the row's whole groups and the strip kernel
 * (hk_strip_kernel, stencil.cuh) the 1 to 3 columns left: twice as fast
 * as single values over the whole row in float at 513^3 on the H200.
 *
 * Boundaries as in k_register.cu: loads map indices through the faces
 * (periodic wrap, mirrored node on a Neumann, flux or convective face), so
 * a ghost's value and material arrive as the mirrored node's; at a face node
 * the difference is then the ghost's formula (hg_ghost), in a branch taken
 * only by the threads whose group lies on a face.
 * Literature: Micikevicius (GPGPU-2, 2009) for the z-sliced register scheme.
 */
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "general.cuh"

template <typename T, int VX> using hg_vec = hk_vec<T, VX>;

/* Materials travel as byte offsets m * sizeof(T) (a column of the weight
 * table), classes as offsets c * sizeof(T) into the class tables, so that
 * every lookup is one add and one load. The weight table keeps the case's
 * layout w[axis][a][b] (row stride nmat): a stride padded to a power of two
 * would put every row of a small table on the same shared-memory banks, and
 * a warp's random lookups would conflict (measured: double 15% slower). */

/* The shared stage: q[class], the class's material offset at the same
 * stride (an int in a slot of sizeof(T)), then (WSH) w[3][nmat][nmat]. */
template <typename T> __host__ __device__ inline size_t hgr_stage_bytes(int nmat, bool wsh)
{
    return 2 * HG_CLASSES * sizeof(T) + (wsh ? (size_t)3 * nmat * nmat * sizeof(T) : 0);
}

template <typename T, bool WSH>
__device__ __forceinline__ void hgr_stage(const heat_general_args<T> &a, unsigned char *smem)
{
    const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const int nt = blockDim.x * blockDim.y * blockDim.z;
    T *q = reinterpret_cast<T *>(smem);
    int *ms = reinterpret_cast<int *>(smem + HG_CLASSES * sizeof(T));
    for (int i = tid; i < HG_CLASSES; i += nt) {
        q[i] = a.q[i];
        ms[i * (int)(sizeof(T) / sizeof(int))] = (int)a.mat[i] * (int)sizeof(T);
    }
    if (WSH) {
        T *w = reinterpret_cast<T *>(smem + 2 * HG_CLASSES * sizeof(T));
        for (int i = tid; i < 3 * a.nmat * a.nmat; i += nt) w[i] = a.w[i];
    }
}

/* The offset of class byte e of a packed word, scaled by sizeof(T). */
template <typename T> __device__ __forceinline__ unsigned hgr_cls(unsigned word, int e)
{
    return ((word >> (8 * e)) & 0xffu) * (unsigned)sizeof(T);
}

/* VX ints to and from shared memory in one access where they fill 8 or 16
 * bytes (p is VX-aligned). */
template <int VX> __device__ __forceinline__ void hgr_store_ints(int *p, const int (&m)[VX])
{
    if constexpr (VX == 4)
        *reinterpret_cast<int4 *>(p) = make_int4(m[0], m[1], m[2], m[3]);
    else if constexpr (VX == 2)
        *reinterpret_cast<int2 *>(p) = make_int2(m[0], m[1]);
    else
        p[0] = m[0];
}

template <int VX> __device__ __forceinline__ void hgr_load_ints(const int *p, int (&m)[VX])
{
    if constexpr (VX == 4) {
        const int4 v = *reinterpret_cast<const int4 *>(p);
        m[0] = v.x, m[1] = v.y, m[2] = v.z, m[3] = v.w;
    } else if constexpr (VX == 2) {
        const int2 v = *reinterpret_cast<const int2 *>(p);
        m[0] = v.x, m[1] = v.y;
    } else {
        m[0] = p[0];
    }
}

/* Whether row j is updated, its faces, and which of the group's VX nodes
 * from x = ig are written, packed into one word made opaque to the compiler
 * (an empty asm), which would otherwise work them out again from the
 * arguments on every plane. Bits 0..VX-1: x lo face; 4..: x hi; 8: p lo;
 * 9: p hi; 12..: node written; 16: all written (and the group whole in
 * the grid: `full`); 17: row active. */
template <typename T, bool D3, int VX>
__device__ __forceinline__ unsigned hgr_flags(const heat_general_args<T> &a, int ig, int j,
                                              bool full)
{
    const bool row_active = j < a.np && (!D3 || !hk_held(j, a.np, a.bp));
    unsigned fl = 0;
#pragma unroll
    for (int e = 0; e < VX; e++) {
        const int i = ig + e;
        fl |= (unsigned)(i == 0 && a.bx[0] == HK_NEUMANN) << e;
        fl |= (unsigned)(i == a.nx - 1 && a.bx[1] == HK_NEUMANN) << (4 + e);
        fl |= (unsigned)(i < a.nx && !hk_held(i, a.nx, a.bx)) << (12 + e);
    }
    fl |= (unsigned)(D3 && j == 0 && a.bp[0] == HK_NEUMANN) << 8;
    fl |= (unsigned)(D3 && j == a.np - 1 && a.bp[1] == HK_NEUMANN) << 9;
    fl |= (unsigned)(full && (fl >> 12 & ((1u << VX) - 1)) == (1u << VX) - 1) << 16;
    fl |= (unsigned)row_active << 17;
    asm volatile("" : "+r"(fl));
    return fl;
}

/* A thread's place in gregister_kernel's tile and what it loads:
 * its group of VX values (x from ig, row j of the plane) and, for the
 * first threads, a halo role as in k_register.cu (a group of the row below
 * or above the tile in 3D, or one value left or right of a tile row). */
template <typename T, bool D3, int VX, int BXT, int BP> struct hgr_tile {
    static constexpr int BX = BXT * VX, PH = D3 ? 1 : 0, ROWS = BP + 2 * PH;
    int tp, lane, ig, j, col, w0, w1;
    long long rowoff;
    bool full;
    int hrole, hrow, hcol, hx;
    long long hoff;
    bool hfull;

    __device__ __forceinline__ hgr_tile(const heat_general_args<T> &a)
    {
        const int tx = threadIdx.x, tid = tx + BXT * threadIdx.y;
        tp = threadIdx.y;
        lane = tid & 31;
        const int x0 = blockIdx.x * BX, p0 = blockIdx.y * BP;
        ig = x0 + tx * VX;
        j = p0 + tp;
        rowoff = D3 ? (long long)hk_map(j, a.np, a.bp) * a.sp : 0;
        w0 = blockIdx.z * a.wchunk;
        w1 = min(w0 + a.wchunk, a.nw);
        full = ig + VX <= a.nx;
        col = VX + tx * VX;
        hrole = hrow = hcol = hx = 0;
        hoff = 0;
        hfull = false;
        if (D3 && tid < 2 * BXT) {
            const int r = tid / BXT, g = tid % BXT;
            hrole = 1;
            hrow = r ? ROWS - 1 : 0;
            hcol = VX + g * VX;
            hoff = (long long)hk_map(r ? p0 + BP : p0 - 1, a.np, a.bp) * a.sp;
            hx = x0 + g * VX;
            hfull = hx + VX <= a.nx;
        } else {
            const int t = tid - (D3 ? 2 * BXT : 0);
            if (t >= 0 && t < 2 * BP) {
                const int r = t / 2, side = t % 2;
                hrole = 2;
                hrow = r + PH;
                hcol = side ? VX + BX : VX - 1;
                hoff = D3 ? (long long)hk_map(p0 + r, a.np, a.bp) * a.sp : 0;
                hx = hk_map(side ? x0 + BX : x0 - 1, a.nx, a.bx);
            }
        }
    }
    /* VX values and their classes (packed) from x, at plane offset `off`. */
    __device__ __forceinline__ void load_at(const heat_general_args<T> &a, long long off, int x,
                                            bool vec, hk_vec<T, VX> &g, unsigned &gc) const
    {
        if (vec) {
            g = vload<T, VX>(a.u + off + x);
            gc = hg_load_bytes<VX>(a.cls + off + x);
        } else {
            gc = 0;
#pragma unroll
            for (int e = 0; e < VX; e++) {
                const int i = hk_map(x + e, a.nx, a.bx);
                g.v[e] = a.u[off + i];
                gc |= (unsigned)a.cls[off + i] << (8 * e);
            }
        }
    }
    /* The thread's group of the plane at offset woff. */
    __device__ __forceinline__ void group_at(const heat_general_args<T> &a, long long woff,
                                             hk_vec<T, VX> &g, unsigned &gc) const
    {
        load_at(a, woff + rowoff, ig, full, g, gc);
    }
    __device__ __forceinline__ void group(const heat_general_args<T> &a, int w, hk_vec<T, VX> &g,
                                          unsigned &gc) const
    {
        group_at(a, (long long)hk_map(w, a.nw, a.bw) * a.sw, g, gc);
    }
    /* The thread's halo values of the plane at offset woff (none without a
     * role). */
    __device__ __forceinline__ void halo_at(const heat_general_args<T> &a, long long woff,
                                            hk_vec<T, VX> &h, unsigned &hc) const
    {
        const long long off = woff + hoff;
        if (hrole == 1) {
            load_at(a, off, hx, hfull, h, hc);
        } else if (hrole == 2) {
            h.v[0] = a.u[off + hx];
            hc = a.cls[off + hx];
        }
    }
    __device__ __forceinline__ void halo(const heat_general_args<T> &a, int w, hk_vec<T, VX> &h,
                                         unsigned &hc) const
    {
        halo_at(a, (long long)hk_map(w, a.nw, a.bw) * a.sw, h, hc);
    }
    __device__ __forceinline__ unsigned flags(const heat_general_args<T> &a) const
    {
        return hgr_flags<T, D3, VX>(a, ig, j, full);
    }
};

/* The updated group to memory (the nodes fl says are written) and, with RES,
 * the largest change into m. */
template <typename T, bool RES, int VX>
__device__ __forceinline__ void hgr_store(T *outp, const hk_vec<T, VX> &v, const hk_vec<T, VX> &c,
                                          unsigned fl, unsigned long long &m)
{
    if (fl >> 16 & 1) {
        vstore<T, VX>(outp, v);
        if (RES) {
#pragma unroll
            for (int e = 0; e < VX; e++) {
                unsigned long long d = hk_diff_bits(v.v[e], c.v[e]);
                m = d > m ? d : m;
            }
        }
    } else {
#pragma unroll
        for (int e = 0; e < VX; e++) {
            if (fl >> (12 + e) & 1) {
                outp[e] = v.v[e];
                if (RES) {
                    unsigned long long d = hk_diff_bits(v.v[e], c.v[e]);
                    m = d > m ? d : m;
                }
            }
        }
    }
}

template <typename T, bool D3, bool RES, int VX, int BXT, int BP, int MINB, bool WSH>
__global__ void __launch_bounds__(BXT *BP, MINB) gregister_kernel(const heat_general_args<T> a)
{
    static_assert(BXT % 32 == 0, "a tile row is whole warps");
    static_assert(BXT * BP >= (D3 ? 2 * BXT : 0) + 2 * BP, "one thread per halo load");
    constexpr int BX = BXT * VX, PH = D3 ? 1 : 0, ROWS = BP + 2 * PH, RS = BX + 2 * VX;
    constexpr unsigned TS = sizeof(T);
    __shared__ __align__(16) T sm[2][ROWS][RS];
    __shared__ __align__(16) int smm[2][ROWS][RS]; /* the plane's material offsets */
    extern __shared__ __align__(16) unsigned char hg_smem[];
    hgr_stage<T, WSH>(a, hg_smem);
    /* The tables by byte offset: q and the material at a class offset; a
     * weight at (row of a) + (column of b) + axis * (bytes of one axis). */
    const unsigned char *tq = hg_smem, *tm = hg_smem + HG_CLASSES * TS;
    const unsigned char *tw =
        WSH ? hg_smem + 2 * HG_CLASSES * TS : reinterpret_cast<const unsigned char *>(a.w);
    const unsigned stride = (unsigned)a.nmat, axis = stride * stride * TS;
    auto W = [&](unsigned off) -> T {
        if (WSH) return *reinterpret_cast<const T *>(tw + off);
        return __ldg(reinterpret_cast<const T *>(tw + off));
    };
    auto mat_of = [&](unsigned cs) { return *reinterpret_cast<const int *>(tm + cs); };

    const hgr_tile<T, D3, VX, BXT, BP> t(a);
    const int tp = t.tp, lane = t.lane, col = t.col, ig = t.ig, j = t.j, w0 = t.w0, w1 = t.w1;
    const int hrole = t.hrole, hrow = t.hrow, hcol = t.hcol;
    auto load_group_at = [&](long long woff, hg_vec<T, VX> &g, unsigned &gc) {
        t.group_at(a, woff, g, gc);
    };
    auto mats = [&](unsigned gc, int(&m)[VX]) {
#pragma unroll
        for (int e = 0; e < VX; e++) m[e] = mat_of(hgr_cls<T>(gc, e));
    };
    auto load_group = [&](int w, hg_vec<T, VX> &g, unsigned &gc) { t.group(a, w, g, gc); };
    auto load_halo_at = [&](long long woff, hg_vec<T, VX> &h, unsigned &hc) {
        t.halo_at(a, woff, h, hc);
    };
    auto load_halo = [&](int w, hg_vec<T, VX> &h, unsigned &hc) { t.halo(a, w, h, hc); };
    /* A plane's values and material offsets into shared half b. */
    auto store_plane = [&](int b, const hg_vec<T, VX> &g, const int(&gm)[VX],
                           const hg_vec<T, VX> &h, unsigned hc) {
        vstore<T, VX>(&sm[b][tp + PH][col], g);
        hgr_store_ints<VX>(&smm[b][tp + PH][col], gm);
        if (hrole == 1) {
            int hm[VX];
            mats(hc, hm);
            vstore<T, VX>(&sm[b][hrow][hcol], h);
            hgr_store_ints<VX>(&smm[b][hrow][hcol], hm);
        } else if (hrole == 2) {
            sm[b][hrow][hcol] = h.v[0];
            smm[b][hrow][hcol] = mat_of(hgr_cls<T>(hc, 0));
        }
    };

    const unsigned fl = t.flags(a); /* faces, nodes written, row active */

    __syncthreads(); /* the staged tables */
    unsigned long long m = 0;
    /* Centres: cur and nxt in use, nn in flight, with their classes (packed).
     * The plane before the centre is read back from the other half of the
     * shared double buffer (values and materials of the thread's own group),
     * which holds it until this plane's end overwrites it with the next. */
    hg_vec<T, VX> cur, nxt, nn, hcur, hnext, hnn;
    unsigned ccur, cnxt, cnn = 0, hccur, hcnext = 0, hcnn = 0;
    int mcur[VX];
    {
        hg_vec<T, VX> prev;
        unsigned cprev;
        int mprev[VX];
        load_group(w0 - 1, prev, cprev);
        load_group(w0, cur, ccur);
        load_group(w0 + 1, nxt, cnxt);
        load_halo(w0, hcur, hccur);
        if (w0 + 1 < w1) load_halo(w0 + 1, hnext, hcnext);
        mats(cprev, mprev);
        mats(ccur, mcur);
        vstore<T, VX>(&sm[1][tp + PH][col], prev);
        hgr_store_ints<VX>(&smm[1][tp + PH][col], mprev);
        store_plane(0, cur, mcur, hcur, hccur);
    }
    __syncthreads();

    /* The plane after next: its offset advances by one plane per iteration;
     * only the plane past the last (w + 2 == nw) maps through the face. */
    long long noff = (long long)(w0 + 2) * a.sw;
    T *outp = a.out + (long long)w0 * a.sw + (long long)j * a.sp + ig;
    for (int w = w0; w < w1; w++, outp += a.sw, noff += a.sw) {
        const int b = (w - w0) & 1;
        if (w + 1 < w1) {
            const long long off = w + 2 < a.nw ? noff : (long long)hk_map(w + 2, a.nw, a.bw) * a.sw;
            load_group_at(off, nn, cnn);
            if (w + 2 < w1) load_halo_at(off, hnn, hcnn);
        }
        int mnxt[VX];
        mats(cnxt, mnxt);

        /* x neighbours at the group's ends: the neighbouring lane, or the
         * shared row at a warp's edge. */
        T left = __shfl_up_sync(0xffffffffu, cur.v[VX - 1], 1);
        T right = __shfl_down_sync(0xffffffffu, cur.v[0], 1);
        if (lane == 0) left = sm[b][tp + PH][col - 1];
        if (lane == 31) right = sm[b][tp + PH][col + VX];

        /* Only the first and the last plane can be held or on a face. */
        const bool wedge = (unsigned)(w - 1) >= (unsigned)(a.nw - 2);
        if ((fl >> 17 & 1) && !(wedge && hk_held(w, a.nw, a.bw))) {
            hg_vec<T, VX> pm, pp, v;
            const hg_vec<T, VX> prev = vload<T, VX>(&sm[b ^ 1][tp + PH][col]);
            int mpm[VX], mpp[VX], mprev[VX];
            hgr_load_ints<VX>(&smm[b ^ 1][tp + PH][col], mprev);
            int mleft = __shfl_up_sync(0xffffffffu, mcur[VX - 1], 1);
            int mright = __shfl_down_sync(0xffffffffu, mcur[0], 1);
            if (lane == 0) mleft = smm[b][tp + PH][col - 1];
            if (lane == 31) mright = smm[b][tp + PH][col + VX];
            if (D3) {
                pm = vload<T, VX>(&sm[b][tp][col]);
                pp = vload<T, VX>(&sm[b][tp + 2][col]);
                hgr_load_ints<VX>(&smm[b][tp][col], mpm);
                hgr_load_ints<VX>(&smm[b][tp + 2][col], mpp);
            }
            const bool wglo = wedge && w == 0 && a.bw[0] == HK_NEUMANN;
            const bool wghi = wedge && w == a.nw - 1 && a.bw[1] == HK_NEUMANN;
            const bool face = (fl & (0xffu | 0x300u)) || wglo || wghi;
            /* The differences u_n - u of every node, then (one branch for
             * the group) the ghosts' formulas where the group lies on a
             * mirrored face, then hg_point's arithmetic in its order. */
            T dxm[VX], dxp[VX], dpm[VX], dpp[VX], dwm[VX], dwp[VX];
#pragma unroll
            for (int e = 0; e < VX; e++) {
                const T c = cur.v[e];
                dxm[e] = (e > 0 ? cur.v[e - 1] : left) - c;
                dxp[e] = (e < VX - 1 ? cur.v[e + 1] : right) - c;
                dpm[e] = D3 ? pm.v[e] - c : T(0);
                dpp[e] = D3 ? pp.v[e] - c : T(0);
                dwm[e] = prev.v[e] - c;
                dwp[e] = nxt.v[e] - c;
            }
            if (face) {
#pragma unroll
                for (int e = 0; e < VX; e++) {
                    const T c = cur.v[e];
                    const int mi = mcur[e] / (int)TS;
                    const T xm = e > 0 ? cur.v[e - 1] : left;
                    const T xp = e < VX - 1 ? cur.v[e + 1] : right;
                    if (fl >> e & 1) dxm[e] = hg_ghost(a, HG_FXLO, mi, xm, c);
                    if (fl >> (4 + e) & 1) dxp[e] = hg_ghost(a, HG_FXHI, mi, xp, c);
                    if (fl >> 8 & 1) dpm[e] = hg_ghost(a, HG_FPLO, mi, pm.v[e], c);
                    if (fl >> 9 & 1) dpp[e] = hg_ghost(a, HG_FPHI, mi, pp.v[e], c);
                    if (wglo) dwm[e] = hg_ghost(a, HG_FWLO, mi, prev.v[e], c);
                    if (wghi) dwp[e] = hg_ghost(a, HG_FWHI, mi, nxt.v[e], c);
                }
            }
#pragma unroll
            for (int e = 0; e < VX; e++) {
                const unsigned row = (unsigned)mcur[e] * stride, rowp = row + axis,
                               roww = row + 2 * axis;
                const unsigned bxm = e > 0 ? mcur[e - 1] : mleft;
                const unsigned bxp = e < VX - 1 ? mcur[e + 1] : mright;
                T s = W(row + bxm) * dxm[e] + W(row + bxp) * dxp[e];
                if (D3)
                    s = s +
                        (W(rowp + (unsigned)mpm[e]) * dpm[e] + W(rowp + (unsigned)mpp[e]) * dpp[e]);
                s = s +
                    (W(roww + (unsigned)mprev[e]) * dwm[e] + W(roww + (unsigned)mnxt[e]) * dwp[e]);
                const T q = *reinterpret_cast<const T *>(tq + hgr_cls<T>(ccur, e));
                v.v[e] = cur.v[e] + (s + q);
            }
            hgr_store<T, RES, VX>(outp, v, cur, fl, m);
        }
        if (w + 1 < w1) store_plane(b ^ 1, nxt, mnxt, hnext, hcnext);
        __syncthreads();
        cur = nxt;
        nxt = nn;
        hnext = hnn;
        ccur = cnxt;
        cnxt = cnn;
        hcnext = hcnn;
#pragma unroll
        for (int e = 0; e < VX; e++) mcur[e] = mnxt[e];
    }
    if (RES) hk_block_max(m, a.resid);
}

/* The warp-tile kernel's staged tables, all in static shared memory: q[class],
 * the class's material times sizeof(T), then w[axis][a][b] with each axis
 * at a fixed offset (one third of HG_W_SHARED_MAX: a staged axis table
 * fits it). */
constexpr unsigned GL_AXB = HG_W_SHARED_MAX / 3;
template <typename T> struct gl_stage {
    static constexpr unsigned MAT = HG_CLASSES * sizeof(T), W = MAT + HG_CLASSES,
                              BYTES = W + 3 * GL_AXB;
    static_assert(W % 16 == 0, "the weights stay aligned");
};

/* Copies the tables into the stage gst (gl_stage's layout) with the
 * block's nt threads, this one being tid; the caller synchronizes. */
template <typename T>
__device__ __forceinline__ void gl_stage_tables(const heat_general_args<T> &a, unsigned char *gst,
                                                int tid, int nt)
{
    using G = gl_stage<T>;
    const int n2 = a.nmat * a.nmat;
    for (int i = tid; i < HG_CLASSES; i += nt) {
        reinterpret_cast<T *>(gst)[i] = a.q[i];
        gst[G::MAT + i] = (uint8_t)(a.mat[i] * sizeof(T));
    }
    for (int i = tid; i < 3 * n2; i += nt) {
        const int k = i / n2;
        reinterpret_cast<T *>(gst + G::W + k * GL_AXB)[i - k * n2] = a.w[i];
    }
}

/* Byte e of a packed word, zero-extended, in one byte permute (hg_byte
 * compiles to a shift and a mask). */
__device__ __forceinline__ unsigned gw_byte(unsigned v, int e)
{
    return __byte_perm(v, 0u, 0x4440u | (unsigned)e);
}

/* The warp-tile 3D kernel, the default where the weights are staged: the
 * tables and arithmetic of gregister_kernel, node for node (materials as
 * bytes scaled by sizeof(T), the axes' weight tables at fixed offsets of
 * the stage), with no shared plane and no barrier per plane. Each warp owns
 * LX groups of VX values by LY = 32 / LX rows of the block's tile and
 * streams its planes along w on its own (register caching: Falch and
 * Elster, "Register caching for stencil computations on GPUs", SYNASC
 * 2014; Chen et al., "A versatile software systolic execution model for
 * GPU memory-bound kernels", SC19):
 * - in-plane neighbours come by warp shuffle, x from the next lane, p from
 *   the lane LX away (with two rows a warp, one exchange between them);
 * - what lies beyond the warp is loaded by the lanes at its edges: the
 *   lanes of row 0 the row before the warp's first, those of row LY - 1 the
 *   row after its last (one group each, mapped through the faces), the
 *   lanes of column 0 and LX - 1 the value left or right of their row; the
 *   caches serve most of it from a neighbouring warp's loads (the DRAM
 *   traffic stays about a read and a write of the field);
 * - the next plane and the one in flight stay in registers; the plane
 *   before the centre too in float, in double in the thread's own slot of
 *   shared memory (no other thread reads it: no barrier).
 * A lane beyond the grid's last column loads the last group, and the node
 * at its column mapped through the face as its first value: where it
 * borders the grid that is the ghost its left neighbour's shuffle takes
 * (rows beyond the grid load their mapped row likewise). Every lane takes
 * part in every shuffle; only the nodes the flags mark written are stored.
 * Faces: a node on a mirrored x face is a group's first or last node, and
 * takes hg_ghost's formula in its lane (the faces' g and beta staged per
 * material; compiled in, XF, only where an x face is mirrored); the nodes on mirrored p and w faces
 * (whole rows and planes, which the common loop would carry as branches and registers) are left to
 * gfaces_kernel, launched after it (k_gsimple.cu).
 * 64 registers, no spill with 32-bit offsets: 32 warps a multiprocessor,
 * where the shared-plane kernels held 16 or 24 and a barrier per plane
 * (docs/PERFORMANCE.md, "The warp-tile kernel"). */
template <typename T, bool RES, int VX, int LX, int WBX, int WBY, int MINB, bool I32, bool XF>
__global__ void __launch_bounds__(32 * WBX * WBY, MINB)
    gwarp_kernel(const heat_general_args<T> a, int xend)
{
    /* Offsets into the field: 32-bit where it has fewer than 2^31 nodes
     * (four registers fewer). */
    using O = std::conditional_t<I32, int, long long>;
    constexpr int LY = 32 / LX;
    static_assert(LX * LY == 32 && LY >= 2, "a warp is LX x LY lanes, two rows or more");
    constexpr unsigned TS = sizeof(T), ALL = 0xffffffffu;
    using G = gl_stage<T>;
    using V = hk_vec<T, VX>;
    __shared__ __align__(16) unsigned char gst[G::BYTES];
    /* The plane before the centre, in double (float keeps it in registers). */
    __shared__ __align__(16) T pslot[32 * WBX * WBY][VX];
    /* The x faces' ghost tables by scaled material: g (Neumann, flux) and
     * beta (convective) of x lo and x hi (nmat <= 32 where the weights are
     * staged). */
    __shared__ __align__(16) T xgb[4][32];
    gl_stage_tables<T>(a, gst, threadIdx.x, 32 * WBX * WBY);
    for (int k = threadIdx.x; XF && k < 2 * a.nmat; k += 32 * WBX * WBY) {
        const int f = k / a.nmat, mi = k - f * a.nmat;
        xgb[f][mi] = a.g[f * a.nmat + mi];
        xgb[2 + f][mi] = a.beta[f * a.nmat + mi];
    }
    /* ghost - u on x face f (0 lo, 1 hi) of a node of scaled material ms,
     * `inner` the mirrored node: hg_ghost's formula. */
    auto xghost = [&](int f, unsigned ms, T inner, T c) -> T {
        const unsigned char *t = reinterpret_cast<const unsigned char *>(xgb[0]) + ms;
        if (a.conv >> f & 1)
            return (inner - c) -
                   *reinterpret_cast<const T *>(t + (2 + f) * 32 * TS) * (c - __ldg(&a.amb[f]));
        return (inner + *reinterpret_cast<const T *>(t + f * 32 * TS)) - c;
    };
    const uint8_t *const tmat = gst + G::MAT;
    const unsigned nmat = (unsigned)a.nmat;
    /* Weight of axis k at byte offset off (row + scaled column). */
    auto W = [&](int k, unsigned off) -> T {
        return *reinterpret_cast<const T *>(gst + G::W + k * GL_AXB + off);
    };

    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    const int lx = lane % LX, ly = lane / LX;
    const int ig = ((blockIdx.x * WBX + wid % WBX) * LX + lx) * VX;
    const int j = (blockIdx.y * WBY + wid / WBX) * LY + ly;
    const bool top = ly == 0, bot = ly == LY - 1;
    /* The kernel takes the columns [0, xend): xend = nx, or the whole groups
     * of a row that does not end on one (the strip takes the rest; VX > 1,
     * rows on 16-byte boundaries), so its groups lie inside the grid. A
     * lane beyond xend loads the last group instead, and as its edge value
     * the node at ig mapped through the face, which becomes its first value:
     * where ig == xend that is the right neighbour its left neighbour's
     * shuffle takes (the ghost where xend == nx). The lanes of columns 0 and
     * LX - 1 load the value left or right of their row. (min(xend, nx),
     * the same as xend, gives ptxas a form with which it allocates the
     * double kernels without the spills that xend alone brought.) */
    const bool beyond = ig >= min(xend, a.nx), sl = lx == 0 && !beyond,
               sr = lx == LX - 1 && !beyond;
    const bool edge_row = top || bot, edge_col = sl || sr || beyond;
    /* The group's offset in a plane, the edge row's (rows 0 and LY - 1) and
     * the edge value's, mapped through the faces. */
    const int gx = beyond ? xend - VX : ig;
    const O sp = (O)a.sp, sw = (O)a.sw, rowoff = (O)hk_map(j, a.np, a.bp) * sp;
    const O gofs = rowoff + gx;
    const O hofs = (O)hk_map(top ? j - 1 : j + 1, a.np, a.bp) * sp + gx;
    const O sofs = rowoff + hk_map(sl ? ig - 1 : sr ? ig + VX : ig, a.nx, a.bx);
    const int w0 = blockIdx.z * a.wchunk, w1 = min(w0 + a.wchunk, a.nw);
    /* The group (values, packed classes) at offset off. */
    auto load = [&](O off, V &g, unsigned &gc) {
        g = vload<T, VX>(a.u + off);
        gc = hg_load_bytes<VX>(a.cls + off);
    };
    auto plane = [&](int w) { return (O)hk_map(w, a.nw, a.bw) * sw; };

    /* The nodes written: not the rows on a mirrored p face (gfaces_kernel's),
     * none of a lane beyond xend (flags as for a lane at nx). Groups start
     * at multiples of VX and end by xend, so a mirrored x face meets a
     * group's first node (lo) or, where xend == nx, last (hi): bit 0 and
     * bit 4 + VX - 1 of the flags. */
    unsigned fl = hgr_flags<T, true, VX>(a, beyond ? a.nx : ig, j, !beyond);
    if (fl & 0x300u) fl &= ~(1u << 17);
    asm volatile("" : "+r"(fl));
    __syncthreads(); /* the staged tables */
    unsigned long long m = 0;
    /* The centre and the next plane, the one after in flight (the plane
     * before the centre below); the centre's edge row and edge value, the
     * next plane's in flight. The plane in flight (nn, cnn) is loaded before
     * any use; a run of one plane copies it once unread. It stays without an
     * initial value on purpose: initialising cnn to 0 made ptxas schedule the
     * double loop 9% slower at 512^3 (0.920 against 0.842 ms a step, same
     * H100; docs/PERFORMANCE.md). */
    V cur, nxt, nn, hc, hn;
    T sc = 0, sn = 0;
    unsigned cc, cn, cnn, mwp, mwc, mwn, mhc = 0, hcn = 0, msc = 0, scn = 0;
    /* The plane before the centre: in registers in float, in the thread's
     * slot of shared memory in double (four registers more would spill). */
    constexpr bool PREG = sizeof(T) == 4;
    T *const ps = pslot[threadIdx.x];
    V preg;
    {
        const O pc = plane(w0);
        unsigned cp;
        V prev;
        load(plane(w0 - 1) + gofs, prev, cp);
        if (PREG)
            preg = prev;
        else
            vstore<T, VX>(ps, prev);
        load(pc + gofs, cur, cc);
        load(plane(w0 + 1) + gofs, nxt, cn);
        mwp = hg_mats<VX>(tmat, cp);
        mwc = hg_mats<VX>(tmat, cc);
        if (edge_row) {
            unsigned hcc;
            load(pc + hofs, hc, hcc);
            mhc = hg_mats<VX>(tmat, hcc);
        }
        if (edge_col) sc = a.u[pc + sofs], msc = tmat[a.cls[pc + sofs]];
    }
    /* The values of the rows before and after a lane's (pm, pp) from v, the
     * lane's own, and h, its edge row's: by shuffle from the lanes LX away,
     * the edge row at the warp's first and last row. With two rows a warp
     * (every lane a top or a bottom lane) one exchange between the rows:
     * half the shuffles, which take the bandwidth of the pipe the table
     * lookups use (docs/PERFORMANCE.md). */
    auto ynb = [&](auto v, auto h, auto &pm, auto &pp) {
        if constexpr (LY == 2) {
            const auto o = __shfl_xor_sync(ALL, v, LX);
            pm = top ? h : o;
            pp = top ? o : h;
        } else {
            pm = top ? h : __shfl_up_sync(ALL, v, LX);
            pp = bot ? h : __shfl_down_sync(ALL, v, LX);
        }
    };
    /* The first value of a lane beyond the grid: its edge value. */
    auto ghost_first = [&] {
        if (beyond) cur.v[0] = sc, mwc = msc;
    };
    ghost_first();

    O noff = (O)(w0 + 2) * sw; /* plane w + 2, advanced */
    for (int w = w0; w < w1; w++, noff += sw) {
        if (w + 1 < w1) {
            load((w + 2 < a.nw ? noff : plane(w + 2)) + gofs, nn, cnn);
            const O o1 = noff - sw; /* w + 1 < nw: inside */
            if (edge_row) load(o1 + hofs, hn, hcn);
            if (edge_col) sn = a.u[o1 + sofs], scn = a.cls[o1 + sofs];
        }
        mwn = hg_mats<VX>(tmat, cn);

        /* The neighbours' materials and the x ends, from the lanes around
         * or the edge loads. */
        unsigned mym, myp;
        ynb(mwc, mhc, mym, myp);
        unsigned mxl = gw_byte(__shfl_up_sync(ALL, mwc, 1), VX - 1);
        unsigned mxr = gw_byte(__shfl_down_sync(ALL, mwc, 1), 0);
        T xl = __shfl_up_sync(ALL, cur.v[VX - 1], 1), xr = __shfl_down_sync(ALL, cur.v[0], 1);
        if (sl) xl = sc, mxl = msc;
        if (sr) xr = sc, mxr = msc;

        /* The first and the last plane when held or mirrored (the same for
         * the whole block): nothing to compute. */
        const bool wedge = (unsigned)(w - 1) >= (unsigned)(a.nw - 2);
        if (!(wedge &&
              ((w == 0 && a.bw[0] != HK_PERIODIC) || (w == a.nw - 1 && a.bw[1] != HK_PERIODIC)))) {
            const V prev = PREG ? preg : vload<T, VX>(ps);
            V v;
#pragma unroll
            for (int e = 0; e < VX; e++) {
                T pm, pp;
                ynb(cur.v[e], hc.v[e], pm, pp);
                const T c = cur.v[e];
                const T xm = e > 0 ? cur.v[e > 0 ? e - 1 : 0] : xl;
                const T xp = e < VX - 1 ? cur.v[e < VX - 1 ? e + 1 : 0] : xr;
                const unsigned row = gw_byte(mwc, e) * nmat;
                const unsigned bxm = e > 0 ? gw_byte(mwc, e > 0 ? e - 1 : 0) : mxl;
                const unsigned bxp = e < VX - 1 ? gw_byte(mwc, e < VX - 1 ? e + 1 : 0) : mxr;
                T dxm = xm - c, dxp = xp - c;
                if (XF && e == 0 && (fl & 1)) dxm = xghost(0, gw_byte(mwc, 0), xm, c);
                if (XF && e == VX - 1 && (fl >> (3 + VX) & 1))
                    dxp = xghost(1, gw_byte(mwc, e), xp, c);
                T s = W(0, row + bxm) * dxm + W(0, row + bxp) * dxp;
                s = s + (W(1, row + gw_byte(mym, e)) * (pm - c) +
                         W(1, row + gw_byte(myp, e)) * (pp - c));
                s = s + (W(2, row + gw_byte(mwp, e)) * (prev.v[e] - c) +
                         W(2, row + gw_byte(mwn, e)) * (nxt.v[e] - c));
                const T q = *reinterpret_cast<const T *>(gst + gw_byte(cc, e) * TS);
                v.v[e] = c + (s + q);
            }
            /* (Written nodes lie inside the grid: there gofs is j sp + ig.) */
            if (fl >> 17 & 1) hgr_store<T, RES, VX>(a.out + (noff - 2 * sw + gofs), v, cur, fl, m);
        }
        if (PREG)
            preg = cur;
        else
            vstore<T, VX>(ps, cur);
        cur = nxt;
        nxt = nn;
        mwp = mwc;
        mwc = mwn;
        cc = cn;
        cn = cnn;
        if (edge_row) hc = hn, mhc = hg_mats<VX>(tmat, hcn);
        if (edge_col) sc = sn, msc = tmat[scn];
        ghost_first();
    }
    if (RES) hk_block_max(m, a.resid);
}

/* Launches one instantiation (plain, or with the residual) over the columns
 * [0, xend): the tile, the runs of planes per block (3D: runs that fill the
 * resident slots, heat_cuda_wchunk_fill; 2D: about one wave,
 * heat_cuda_wchunk), `sh` bytes of staged tables, the kernel's arguments
 * after the first (x). The occupancy is asked again when the kernel or the
 * stage's size changes. */
template <typename T, bool D3, typename... X>
static cudaError_t hgr_launch_tile(const heat_general_args<T> &a, size_t sh,
                                   void (*plain)(const heat_general_args<T>, X...),
                                   void (*res)(const heat_general_args<T>, X...), dim3 block,
                                   int bx, int bp, int xend, cudaStream_t stream, X... x)
{
    static int blocks_per_sm = 0;
    static size_t asked = 0;
    static void (*of)(const heat_general_args<T>, X...) = nullptr;
    if (!blocks_per_sm || asked != sh || of != plain) {
        cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &blocks_per_sm, plain, (int)(block.x * block.y * block.z), sh);
        if (e != cudaSuccess) return e;
        if (blocks_per_sm < 1) blocks_per_sm = 1;
        asked = sh;
        of = plain;
    }
    const long long tx = (xend + bx - 1) / bx, ty = (a.np + bp - 1) / bp;
    heat_general_args<T> b = a;
    b.wchunk = D3 ? heat_cuda_wchunk_fill(tx * ty, a.nw, blocks_per_sm)
                  : heat_cuda_wchunk(tx * ty, a.nw, blocks_per_sm);
    const dim3 grid((unsigned)tx, (unsigned)ty, (a.nw + b.wchunk - 1) / b.wchunk);
    (a.resid ? res : plain)<<<grid, block, sh, stream>>>(b, x...);
    return cudaGetLastError();
}

/* The same for a kernel of BXT x BP threads, each a group of VX values. */
template <typename T, bool D3, int VX, int BXT, int BP>
static cudaError_t
hgr_launch(const heat_general_args<T> &a, size_t sh, void (*plain)(const heat_general_args<T>),
           void (*res)(const heat_general_args<T>), int xend, cudaStream_t stream)
{
    return hgr_launch_tile<T, D3>(a, sh, plain, res, dim3(BXT, BP), BXT * VX, BP, xend, stream);
}

/* Launches the warp-tile kernel over the columns [0, xend): blocks of
 * WBX x WBY warps, a tile of WBX LX VX columns by WBY (32 / LX) rows, runs
 * of planes that fill the resident blocks. Its tables are static shared
 * memory. */
template <typename T, int VX, int LX, int WBX, int WBY, int MINB, bool I32, bool XF>
static cudaError_t gwarp_launch_one(const heat_general_args<T> &a, int xend, cudaStream_t stream)
{
    return hgr_launch_tile<T, true>(a, 0, gwarp_kernel<T, false, VX, LX, WBX, WBY, MINB, I32, XF>,
                                    gwarp_kernel<T, true, VX, LX, WBX, WBY, MINB, I32, XF>,
                                    dim3(32 * WBX * WBY), WBX * LX * VX, WBY * (32 / LX), xend,
                                    stream, xend);
}

/* The warp-tile kernel over [0, xend), the strip kernel over the rest of
 * each row, then the nodes on mirrored p and w faces. */
template <typename T, int VX, int LX, int WBX, int WBY, int MINB>
static cudaError_t gwarp_launch(const heat_general_args<T> &a, int xend, cudaStream_t stream)
{
    /* 32-bit offsets where every plane offset the kernel forms, up to
     * nw + 1 planes, stays below 2^31; the x faces' ghosts compiled in only
     * where an x face is mirrored (their check costs about 1.5% a step). */
    const char *wide = getenv("HEAT_CUDA_GR_OFF64"); /* the 64-bit path, for the tests */
    const bool i32 = (long long)(a.nw + 2) * a.sw < (1ll << 31) && !(wide && atoi(wide));
    const bool xf = a.bx[0] == HK_NEUMANN || a.bx[1] == HK_NEUMANN;
    cudaError_t e =
        i32 ? (xf ? gwarp_launch_one<T, VX, LX, WBX, WBY, MINB, true, true>(a, xend, stream)
                  : gwarp_launch_one<T, VX, LX, WBX, WBY, MINB, true, false>(a, xend, stream))
            : (xf ? gwarp_launch_one<T, VX, LX, WBX, WBY, MINB, false, true>(a, xend, stream)
                  : gwarp_launch_one<T, VX, LX, WBX, WBY, MINB, false, false>(a, xend, stream));
    if (e == cudaSuccess && xend < a.nx) e = hk_launch_strip<T, true>(a, xend, stream);
    constexpr unsigned pw = 1u << HG_FPLO | 1u << HG_FPHI | 1u << HG_FWLO | 1u << HG_FWHI;
    return e != cudaSuccess ? e : heat_cuda_launch_gfaces<T>(a, pw, stream);
}

/* Launches one instantiation of gregister_kernel (hgr_launch) over the
 * columns [0, xend) (xend a multiple of its tile's width, or nx). */
template <typename T, bool D3, int VX, int BXT, int BP, int MINB, bool WSH>
static cudaError_t glaunch(const heat_general_args<T> &a, cudaStream_t stream, int xend)
{
    return hgr_launch<T, D3, VX, BXT, BP>(
        a, hgr_stage_bytes<T>(a.nmat, WSH), gregister_kernel<T, D3, false, VX, BXT, BP, MINB, WSH>,
        gregister_kernel<T, D3, true, VX, BXT, BP, MINB, WSH>, xend, stream);
}

/* Whether 3D with staged weights runs the warp-tile kernel (the default) or,
 * for comparison and so that the tests cover it, gregister_kernel
 * (HEAT_CUDA_GR_KERNEL=plain). Read on every launch. */
static bool gr_plain(void)
{
    const char *s = getenv("HEAT_CUDA_GR_KERNEL");
    return s && !strcmp(s, "plain");
}

/* The warp-tile kernel's shape, measured (docs/PERFORMANCE.md): groups of
 * 16 bytes in warps of 16 x 2 lanes, 8 warps stacked along y (a tile of 64
 * floats or 32 doubles by 16 rows); single values in warps of 16 x 2 lanes,
 * 2 x 4 warps (32 x 8). 4 blocks of 256 threads a multiprocessor. */
template <typename T, int VX>
static cudaError_t gwarp_dims(const heat_general_args<T> &a, int xend, cudaStream_t stream)
{
    if constexpr (VX > 1)
        return gwarp_launch<T, VX, 16, 1, 8, 4>(a, xend, stream);
    else
        return gwarp_launch<T, VX, 16, 2, 4, 4>(a, xend, stream);
}

/* 3D with the weights staged: the warp-tile kernel (above). Otherwise
 * (weights read through the cache) gregister_kernel, 64 x 4 threads at 2
 * blocks per multiprocessor (128 registers; 3 blocks of it spilled and ran
 * at 48% of copy instead of 71%; the other shapes measured are in
 * docs/PERFORMANCE.md). 2D: rows of 128 threads. */
template <typename T, int VX, bool WSH>
static cudaError_t glaunch_dims(const heat_general_args<T> &a, bool d3, cudaStream_t stream)
{
    if (d3) {
        if constexpr (WSH)
            if (!gr_plain()) return gwarp_dims<T, VX>(a, a.nx, stream);
        return glaunch<T, true, VX, 64, 4, 2, WSH>(a, stream, a.nx);
    }
    /* 2D float on padded rows of odd nx (VX > 1): the strip kernel takes a
     * row's end of a few columns past its last whole tile (hk_tiles_end), as
     * in k_register.cu's 3D sweep (8193^2: 23% faster on the H200). Not in
     * double, where the strip was 2 to 4% slower. */
    const bool odd = sizeof(T) == 4 && VX > 1 && a.nx % VX;
    const int xend = odd ? hk_tiles_end(a, 128 * VX, VX) : a.nx;
    const cudaError_t e = glaunch<T, false, VX, 128, 1, 6, WSH>(a, stream, xend);
    return e != cudaSuccess || xend >= a.nx ? e : hk_launch_strip<T, false>(a, xend, stream);
}

template <typename T>
cudaError_t heat_cuda_launch_gregister(const heat_general_args<T> &a, bool d3, cudaStream_t stream)
{
    constexpr int V = 16 / sizeof(T);
    /* 3D, staged weights, rows that start on 16-byte boundaries but do not
     * end on a whole group (the one-GPU backend pads rows of odd nx): the
     * warp-tile kernel on groups up to the row's last whole group, the strip
     * the 1 to V - 1 columns left, instead of single values over the whole
     * row (HEAT_CUDA_STRIP=0 keeps those, for measurement). */
    const bool rows = hg_rows16(a), whole = a.nx % V == 0;
    if (d3 && a.w_shared && !gr_plain() && !whole && rows) {
        const int xend = hk_tiles_end(a, V, V);
        if (xend < a.nx) return gwarp_dims<T, V>(a, xend, stream);
    }
    /* 2D on such rows: gregister_kernel's groups, the row's last group a
     * value at a time (its loads mapped through the face). */
    const bool vec = whole || (!d3 && rows);
    if (a.w_shared)
        return vec ? glaunch_dims<T, V, true>(a, d3, stream)
                   : glaunch_dims<T, 1, true>(a, d3, stream);
    return vec ? glaunch_dims<T, V, false>(a, d3, stream)
               : glaunch_dims<T, 1, false>(a, d3, stream);
}

template <typename T>
cudaError_t heat_cuda_launch_gtemporal(const heat_general_args<T> &a, bool d3, int k,
                                       cudaStream_t stream)
{
    if (k <= 1) return heat_cuda_launch_gregister<T>(a, d3, stream);
    return d3 ? hg_temporal_depth<T, true>(a, k, stream)
              : hg_temporal_depth<T, false>(a, k, stream);
}

template cudaError_t heat_cuda_launch_gregister<float>(const heat_general_args<float> &, bool,
                                                       cudaStream_t);
template cudaError_t heat_cuda_launch_gregister<double>(const heat_general_args<double> &, bool,
                                                        cudaStream_t);
template cudaError_t heat_cuda_launch_gtemporal<float>(const heat_general_args<float> &, bool, int,
                                                       cudaStream_t);
template cudaError_t heat_cuda_launch_gtemporal<double>(const heat_general_args<double> &, bool,
                                                        int, cudaStream_t);
