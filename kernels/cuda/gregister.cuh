/* What the 3D register_tiled kernels of the variable-coefficient update
 * share (k_gregister.cu, k_gring.cu): a thread's place in the tile and its
 * loads, the store of an updated group, and the launcher that sizes the
 * runs of planes by the blocks resident.
 */
#ifndef HEAT_CUDA_GREGISTER_CUH
#define HEAT_CUDA_GREGISTER_CUH

#include "general.cuh"

/* A thread's place in the tile and what it loads, shared by the kernels:
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
    /* Whether the row is updated, its faces, and which of the group's nodes
     * are written, packed into one word made opaque to the compiler (an
     * empty asm), which would otherwise work them out again from the
     * arguments on every plane. Bits 0..VX-1: x lo face; 4..: x hi; 8: p lo;
     * 9: p hi; 12..: node written; 16: all written; 17: row active. */
    __device__ __forceinline__ unsigned flags(const heat_general_args<T> &a) const
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

/* Launches one instantiation (plain, or with the residual): the tile, the
 * runs of planes per block (3D: runs that fill the resident slots,
 * heat_cuda_wchunk_fill; 2D: about one wave, heat_cuda_wchunk), `sh` bytes
 * of staged tables. The occupancy is asked again when the kernel or the
 * stage's size changes. */
template <typename T, bool D3, int VX, int BXT, int BP>
static inline cudaError_t hgr_launch(const heat_general_args<T> &a, size_t sh,
                              void (*plain)(const heat_general_args<T>),
                              void (*res)(const heat_general_args<T>), cudaStream_t stream)
{
    static int blocks_per_sm = 0;
    static size_t asked = 0;
    static void (*of)(const heat_general_args<T>) = nullptr;
    if (!blocks_per_sm || asked != sh || of != plain) {
        cudaError_t e =
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, plain, BXT * BP, sh);
        if (e != cudaSuccess) return e;
        if (blocks_per_sm < 1) blocks_per_sm = 1;
        asked = sh;
        of = plain;
    }
    constexpr int BX = BXT * VX;
    const long long tx = (a.nx + BX - 1) / BX, ty = (a.np + BP - 1) / BP;
    heat_general_args<T> b = a;
    b.wchunk = D3 ? heat_cuda_wchunk_fill(tx * ty, a.nw, blocks_per_sm)
                  : heat_cuda_wchunk(tx * ty, a.nw, blocks_per_sm);
    const dim3 block(BXT, BP), grid((unsigned)tx, (unsigned)ty, (a.nw + b.wchunk - 1) / b.wchunk);
    (a.resid ? res : plain)<<<grid, block, sh, stream>>>(b);
    return cudaGetLastError();
}

#endif
