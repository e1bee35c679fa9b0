/* `register_tiled` for the variable-coefficient update in 3D with the
 * weights staged, its planes fed through a ring in shared memory by
 * asynchronous copies (cp.async) several planes ahead.
 *
 * Why: the streaming kernels of k_gregister.cu keep the plane in flight in
 * registers, one plane ahead, so the bytes a multiprocessor has in flight
 * grow only with the warps resident, and the materials kernel's registers
 * allow 24 warps where the uniform kernel has 32 (docs/PERFORMANCE.md:
 * held to 16 warps the uniform kernel falls from 92% of copy to 78%). An
 * asynchronous copy lands in shared memory without a register, so here a
 * block has D planes in flight whatever its warps.
 *
 * The tile, the loads (the same indices, mapped through the faces), the
 * face flags and each node's arithmetic in its order are glean_kernel's
 * (k_gregister.cu), so results are bit-identical. The ring holds S = D + 2
 * planes of values and class bytes with their halos: at the step of plane w
 * the block reads planes w - 1, w, w + 1, each thread turns its own copies
 * of plane w + 2 (waited for) into materials, and planes w + 3 .. w + D are
 * in flight; the copy of plane w + D reuses the slot of plane w - 2, last
 * read before the previous step's barrier. Materials live in four slots
 * (planes w - 1 .. w + 2), packed bytes as in glean_kernel.
 *
 * Each thread copies what it later converts: its group of values (16 bytes)
 * and a 4-byte word of classes (in double, the even threads, for their group
 * and the next), a halo group or a halo column value with the aligned
 * class word that holds its byte. So it waits only for its own copies, and
 * the step's barrier publishes them. Groups beyond nx copy value by value
 * (mapped through the face) and the class word of their first node's mapped
 * index (see `beyond`). Requires rows of 16-byte values and 4-byte class words
 * (hg_ring_fits); other grids run glean_kernel.
 *
 * Literature: the asynchronous copy to shared memory is CUDA's cp.async
 * (PTX ISA, "Data movement: cp.async"); the multi-stage ring follows the
 * software pipelining of CUTLASS's multistage GEMM mainloops.
 */
#include <cstdint>
#include <type_traits>

#include "gregister.cuh"

/* One asynchronous copy of N bytes global -> shared (16: through L2 only). */
template <int N> __device__ __forceinline__ void hq_cp(void *dst, const void *src)
{
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    if constexpr (N == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src) : "memory");
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(d), "l"(src), "n"(N)
                     : "memory");
}

__device__ __forceinline__ void hq_commit()
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

/* Until at most N of this thread's latest groups are in flight. */
template <int N> __device__ __forceinline__ void hq_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

/* The dynamic shared memory of a block: S slots of values (rows of RS, the
 * group of thread tx at column VX + tx VX as in glean_kernel), S slots of
 * class bytes and 4 of materials (rows of BRS, the group at 4 + tx VX so
 * that a double pair's word is 4-byte aligned), the halo columns' class
 * words, then the staged tables. */
template <typename T, int VX, int BXT, int BP, int D> struct hq_layout {
    static constexpr int BX = BXT * VX, ROWS = BP + 2, RS = BX + 2 * VX, BRS = BX + 8, S = D + 2,
                         NH = 2 * BP;
    static constexpr size_t VB = (size_t)ROWS * RS * sizeof(T), CB = (size_t)ROWS * BRS;
    static constexpr size_t OFF_C = S * VB, OFF_H = OFF_C + S * CB, OFF_M = OFF_H + S * NH * 4,
                            OFF_T = (OFF_M + 4 * CB + 15) / 16 * 16;
    static_assert(VB % 16 == 0 && CB % 16 == 0, "slots keep 16-byte alignment");
    static size_t bytes(int nmat) { return OFF_T + hg_stage_bytes<T>(nmat, true); }
};

template <typename T, bool RES, int VX, int BXT, int BP, int MINB, int D>
__global__ void __launch_bounds__(BXT *BP, MINB) gring_kernel(const heat_general_args<T> a)
{
    static_assert(BXT % 32 == 0, "a tile row is whole warps");
    static_assert(BXT * BP >= 2 * BXT + 2 * BP, "one thread per halo load");
    static_assert(VX * sizeof(T) == 16, "rows of 16-byte groups");
    static_assert(D >= 2, "plane w + 2 is converted at the step of plane w");
    using L = hq_layout<T, VX, BXT, BP, D>;
    constexpr int BX = L::BX, RS = L::RS, BRS = L::BRS, S = L::S, NH = L::NH;
    constexpr unsigned TS = sizeof(T);
    constexpr bool PAIR = VX == 2; /* a class word holds two groups */
    extern __shared__ __align__(16) unsigned char hq_smem[];
    T *const ring = reinterpret_cast<T *>(hq_smem);
    uint8_t *const cring = hq_smem + L::OFF_C;
    unsigned *const hcw = reinterpret_cast<unsigned *>(hq_smem + L::OFF_H);
    uint8_t *const smb = hq_smem + L::OFF_M;
    const hg_tab<T> tab = hg_stage<T, true>(a, hq_smem + L::OFF_T);
    const uint8_t *const tmat = tab.mat;
    const unsigned char *const tq = reinterpret_cast<const unsigned char *>(tab.q);
    const unsigned char *const tw = reinterpret_cast<const unsigned char *>(tab.w);
    const unsigned R = (unsigned)a.nmat * TS, A = (unsigned)a.nmat * R;

    const hgr_tile<T, true, VX, BXT, BP> t(a);
    const int tx = threadIdx.x, tp = t.tp, col = t.col, ig = t.ig, j = t.j, w0 = t.w0, w1 = t.w1;
    const int tid = tx + BXT * tp, hrole = t.hrole, hrow = t.hrow;
    const int bcol = 4 + tx * VX;
    /* The halo's place in the byte rows: a group of row 0 or ROWS - 1, or
     * the byte left or right of a row; role 2's index among the columns. */
    const int hbcol = t.hrole == 1 ? 4 + (tid % BXT) * VX : (t.hcol == VX - 1 ? 3 : 4 + BX);
    const int hi = tid - 2 * BXT;
    const bool cown = !PAIR || (tx & 1) == 0, chalo = !PAIR || (tid & 1) == 0;

    /* This thread's copies of the plane at offset woff into slot s. */
    auto issue = [&](long long woff, int s) {
        {
            const long long off = woff + t.rowoff;
            T *dst = ring + (size_t)s * (L::VB / TS) + (tp + 1) * RS + col;
            if (t.full) {
                hq_cp<16>(dst, a.u + off + ig);
            } else {
#pragma unroll
                for (int e = 0; e < VX; e++) hq_cp<TS>(dst + e, a.u + off + hk_map(ig + e, a.nx, a.bx));
            }
            if (cown) {
                uint8_t *cd = cring + (size_t)s * L::CB + (tp + 1) * BRS + bcol;
                hq_cp<4>(cd, a.cls + off + (t.full ? ig : hk_map(ig, a.nx, a.bx) & ~3));
            }
        }
        const long long off = woff + t.hoff;
        if (hrole == 1) {
            T *dst = ring + (size_t)s * (L::VB / TS) + hrow * RS + t.hcol;
            if (t.hfull) {
                hq_cp<16>(dst, a.u + off + t.hx);
            } else {
#pragma unroll
                for (int e = 0; e < VX; e++)
                    hq_cp<TS>(dst + e, a.u + off + hk_map(t.hx + e, a.nx, a.bx));
            }
            if (chalo) {
                uint8_t *cd = cring + (size_t)s * L::CB + hrow * BRS + hbcol;
                hq_cp<4>(cd, a.cls + off + (t.hfull ? t.hx : hk_map(t.hx, a.nx, a.bx) & ~3));
            }
        } else if (hrole == 2) {
            hq_cp<TS>(ring + (size_t)s * (L::VB / TS) + hrow * RS + t.hcol, a.u + off + t.hx);
            hq_cp<4>(hcw + s * NH + hi, a.cls + off + (t.hx & ~3));
        }
    };
    /* The plane at offset-index p (w0 - 1 .. w1) into its slot. */
    auto issue_plane = [&](int p) {
        issue((long long)hk_map(p, a.nw, a.bw) * a.sw, (p - w0 + 1) % S);
    };
    /* A word of groups beyond nx (nx is a multiple of 4: a word lies all
     * inside or all beyond): only its first node is ever a neighbour of a
     * node updated (the ghost at nx), so every byte gets the material of
     * the node its index maps to, whose aligned word was copied. */
    auto beyond = [&](unsigned wd, int x) {
        return 0x01010101u * tmat[(wd >> (8 * (hk_map(x, a.nx, a.bx) & 3))) & 0xffu];
    };
    /* This thread's class bytes of the plane in slot s into materials
     * (slot ms). */
    auto convert = [&](int s, int ms) {
        if (cown) {
            const int o = (tp + 1) * BRS + bcol;
            const unsigned wd = *reinterpret_cast<const unsigned *>(cring + (size_t)s * L::CB + o);
            *reinterpret_cast<unsigned *>(smb + (size_t)ms * L::CB + o) =
                t.full ? hg_mats<4>(tmat, wd) : beyond(wd, ig);
        }
        if (hrole == 1) {
            if (chalo) {
                const int o = hrow * BRS + hbcol;
                const unsigned wd =
                    *reinterpret_cast<const unsigned *>(cring + (size_t)s * L::CB + o);
                *reinterpret_cast<unsigned *>(smb + (size_t)ms * L::CB + o) =
                    t.hfull ? hg_mats<4>(tmat, wd) : beyond(wd, t.hx);
            }
        } else if (hrole == 2) {
            const unsigned wd = hcw[s * NH + hi];
            smb[(size_t)ms * L::CB + hrow * BRS + hbcol] = tmat[(wd >> (8 * (t.hx & 3))) & 0xffu];
        }
    };

    const unsigned fl = t.flags(a); /* faces, nodes written, row active */

    /* Planes w0 - 1 .. w0 + D - 1 in flight, one group each. */
#pragma unroll
    for (int p = 0; p <= D; p++) {
        if (w0 - 1 + p <= w1) issue_plane(w0 - 1 + p);
        hq_commit();
    }
    __syncthreads(); /* the staged tables */
    hq_wait<D - 2>(); /* planes w0 - 1 .. w0 + 1 */
#pragma unroll
    for (int p = 0; p < 3; p++) convert(p, p);
    __syncthreads();

    unsigned long long m = 0;
    T *outp = a.out + (long long)w0 * a.sw + (long long)j * a.sp + ig;
    for (int w = w0; w < w1; w++, outp += a.sw) {
        const int k = w - w0;
        if (w + D <= w1) issue_plane(w + D);
        hq_commit();
        hq_wait<D - 2>(); /* this thread's copies of plane w + 2 */
        if (w + 2 <= w1) convert((k + 3) % S, (k + 3) & 3);

        const bool wedge = (unsigned)(w - 1) >= (unsigned)(a.nw - 2);
        if ((fl >> 17 & 1) && !(wedge && hk_held(w, a.nw, a.bw))) {
            const T *rc = ring + (size_t)((k + 1) % S) * (L::VB / TS) + (tp + 1) * RS + col;
            const T *rp = ring + (size_t)(k % S) * (L::VB / TS) + (tp + 1) * RS + col;
            const T *rn = ring + (size_t)((k + 2) % S) * (L::VB / TS) + (tp + 1) * RS + col;
            const uint8_t *mc = smb + (size_t)((k + 1) & 3) * L::CB + (tp + 1) * BRS + bcol;
            const uint8_t *mp = smb + (size_t)(k & 3) * L::CB + (tp + 1) * BRS + bcol;
            const uint8_t *mn = smb + (size_t)((k + 2) & 3) * L::CB + (tp + 1) * BRS + bcol;
            const hk_vec<T, VX> cur = vload<T, VX>(rc), prev = vload<T, VX>(rp),
                                nxt = vload<T, VX>(rn), pm = vload<T, VX>(rc - RS),
                                pp = vload<T, VX>(rc + RS);
            const T left = rc[-1], right = rc[VX];
            const unsigned mwc = hg_load_bytes<VX>(mc), mwp = hg_load_bytes<VX>(mp),
                           mwn = hg_load_bytes<VX>(mn), mpm = hg_load_bytes<VX>(mc - BRS),
                           mpp = hg_load_bytes<VX>(mc + BRS);
            const unsigned mleft = mc[-1], mright = mc[VX];
            const unsigned ccur = hg_load_bytes<VX>(cring + (size_t)((k + 1) % S) * L::CB +
                                                    (tp + 1) * BRS + bcol);
            const bool wglo = wedge && w == 0 && a.bw[0] == HK_NEUMANN;
            const bool wghi = wedge && w == a.nw - 1 && a.bw[1] == HK_NEUMANN;
            const bool face = (fl & (0xffu | 0x300u)) || wglo || wghi;
            hk_vec<T, VX> v;
            /* One node whole, as glean_kernel's. */
            auto node = [&](auto onface, int e) {
                constexpr bool F = decltype(onface)::value;
                const T c = cur.v[e];
                const T xm = e > 0 ? cur.v[e > 0 ? e - 1 : 0] : left;
                const T xp = e < VX - 1 ? cur.v[e < VX - 1 ? e + 1 : 0] : right;
                T dxm = xm - c, dxp = xp - c, dpm = pm.v[e] - c, dpp = pp.v[e] - c;
                T dwm = prev.v[e] - c, dwp = nxt.v[e] - c;
                const unsigned mcc = (unsigned)hg_byte(mwc, e);
                if (F) {
                    if (fl >> e & 1) dxm = hg_ghost(a, HG_FXLO, (int)mcc, xm, c);
                    if (fl >> (4 + e) & 1) dxp = hg_ghost(a, HG_FXHI, (int)mcc, xp, c);
                    if (fl >> 8 & 1) dpm = hg_ghost(a, HG_FPLO, (int)mcc, pm.v[e], c);
                    if (fl >> 9 & 1) dpp = hg_ghost(a, HG_FPHI, (int)mcc, pp.v[e], c);
                    if (wglo) dwm = hg_ghost(a, HG_FWLO, (int)mcc, prev.v[e], c);
                    if (wghi) dwp = hg_ghost(a, HG_FWHI, (int)mcc, nxt.v[e], c);
                }
                const unsigned char *wx = tw + mcc * R, *wpl = wx + A, *ww = wpl + A;
                const unsigned bxm = e > 0 ? (unsigned)hg_byte(mwc, e > 0 ? e - 1 : 0) : mleft;
                const unsigned bxp =
                    e < VX - 1 ? (unsigned)hg_byte(mwc, e < VX - 1 ? e + 1 : 0) : mright;
                auto W = [](const unsigned char *p) { return *reinterpret_cast<const T *>(p); };
                T s = W(wx + bxm * TS) * dxm + W(wx + bxp * TS) * dxp;
                s = s + (W(wpl + (unsigned)hg_byte(mpm, e) * TS) * dpm +
                         W(wpl + (unsigned)hg_byte(mpp, e) * TS) * dpp);
                s = s + (W(ww + (unsigned)hg_byte(mwp, e) * TS) * dwm +
                         W(ww + (unsigned)hg_byte(mwn, e) * TS) * dwp);
                const T q = *reinterpret_cast<const T *>(tq + (unsigned)hg_byte(ccur, e) * TS);
                v.v[e] = c + (s + q);
            };
            if (face) {
#pragma unroll
                for (int e = 0; e < VX; e++) node(std::true_type(), e);
            } else {
#pragma unroll
                for (int e = 0; e < VX; e++) node(std::false_type(), e);
            }
            hgr_store<T, RES, VX>(outp, v, cur, fl, m);
        }
        __syncthreads();
    }
    hq_wait<0>();
    if (RES) hk_block_max(m, a.resid);
}

template <typename T, int VX, int MINB, int D>
static cudaError_t hq_launch(const heat_general_args<T> &a, cudaStream_t stream)
{
    using L = hq_layout<T, VX, 64, 4, D>;
    auto plain = gring_kernel<T, false, VX, 64, 4, MINB, D>;
    auto res = gring_kernel<T, true, VX, 64, 4, MINB, D>;
    const size_t sh = L::bytes(a.nmat);
    static size_t allowed = 0;
    if (sh > allowed) {
        cudaError_t e =
            cudaFuncSetAttribute(plain, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sh);
        if (e == cudaSuccess)
            e = cudaFuncSetAttribute(res, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sh);
        if (e != cudaSuccess) return e;
        allowed = sh;
    }
    return hgr_launch<T, true, VX, 64, 4>(a, sh, plain, res, stream);
}

template <typename T> bool hg_ring_fits(const heat_general_args<T> &a)
{
    constexpr int V = 16 / sizeof(T);
    return a.w_shared && a.nx % 4 == 0 && a.nx % V == 0 && a.sp % 4 == 0 && a.sw % 4 == 0 &&
           a.sp % V == 0 && a.sw % V == 0 && (uintptr_t)a.u % 16 == 0 &&
           (uintptr_t)a.cls % 4 == 0 && a.np > 1;
}

/* The depth of the ring: HEAT_CUDA_RING_DEPTH (4 or 6), read once. */
static int ring_depth(void)
{
    static int d = 0;
    if (!d) {
        const char *s = getenv("HEAT_CUDA_RING_DEPTH");
        d = s && atoi(s) == 6 ? 6 : 4;
    }
    return d;
}

/* 64 x 4 threads (glean_kernel's tile) at 3 blocks per multiprocessor. */
template <typename T> cudaError_t hg_ring_launch(const heat_general_args<T> &a, cudaStream_t stream)
{
    constexpr int V = 16 / sizeof(T);
    return ring_depth() == 6 ? hq_launch<T, V, 3, 6>(a, stream) : hq_launch<T, V, 3, 4>(a, stream);
}

template bool hg_ring_fits<float>(const heat_general_args<float> &);
template bool hg_ring_fits<double>(const heat_general_args<double> &);
template cudaError_t hg_ring_launch<float>(const heat_general_args<float> &, cudaStream_t);
template cudaError_t hg_ring_launch<double>(const heat_general_args<double> &, cudaStream_t);
