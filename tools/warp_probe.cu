/* Whether the materials sweep can stream without a shared plane: a prototype
 * of the 3D variable-coefficient update (the lean kernel's tables and
 * arithmetic, general.cuh's hg_point order) in which each warp owns a tile
 * of LX groups x LY rows and streams its planes along z on its own. The
 * in-plane neighbours come by warp shuffle (x from the next lane, y from the
 * lane LX away), the warp's halo row and side values are loaded by the lanes
 * at its edges from memory (the cache serves what a neighbouring warp read),
 * so there is no shared plane, no block barrier per plane, and no store to
 * shared memory. Periodic in every axis (no faces): a measurement of the
 * streaming scheme, not a kernel of heat. Every run is compared bit for bit
 * with a one-thread-per-node kernel of the same formula.
 *
 *   nvcc -O3 -std=c++17 -arch=sm_90 --fmad=false -o warp_probe tools/warp_probe.cu
 *   ./warp_probe [n ...]      (n^3 grids, default 512 384)
 *
 * Prints ms, GB/s counting 2 sizeof(T) + 1 bytes a node, and the share of the
 * device-to-device copy measured in the same run (median of 21 runs each).
 */
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

#define PROBE_NAME "warp_probe"
#include "probe.cuh"

constexpr int NCLS = 256;
constexpr unsigned AXB = 4096; /* bytes per axis table, as the lean kernel */

template <typename T> struct stage {
    static constexpr unsigned MAT = NCLS * sizeof(T), W = MAT + NCLS, BYTES = W + 3 * AXB;
};

template <typename T> struct vecT;
template <> struct vecT<float> {
    using t = float4;
};
template <> struct vecT<double> {
    using t = double2;
};
template <typename T, int VX> struct grp {
    T v[VX];
};
template <typename T, int VX> __device__ __forceinline__ grp<T, VX> vld(const T *p)
{
    grp<T, VX> g;
    const typename vecT<T>::t x = __ldg(reinterpret_cast<const typename vecT<T>::t *>(p));
    memcpy(&g, &x, sizeof g);
    return g;
}
template <typename T, int VX> __device__ __forceinline__ void vst(T *p, const grp<T, VX> &g)
{
    typename vecT<T>::t x;
    memcpy(&x, &g, sizeof g);
    *reinterpret_cast<typename vecT<T>::t *>(p) = x;
}
template <int VX> __device__ __forceinline__ unsigned cld(const uint8_t *p)
{
    if constexpr (VX == 4)
        return __ldg(reinterpret_cast<const unsigned *>(p));
    else
        return __ldg(reinterpret_cast<const unsigned short *>(p));
}
__device__ __forceinline__ unsigned byte_of(unsigned w, int e)
{
    return (w >> (8 * e)) & 0xffu;
}

template <typename T> struct args {
    const T *u;
    const uint8_t *c;
    T *o;
    const T *q;
    const uint8_t *mat;
    const T *w; /* [3][nmat][nmat] */
    int n, nmat, run;
};

template <typename T>
__device__ __forceinline__ void stage_tables(const args<T> &a, unsigned char *g, int tid, int nt)
{
    using S = stage<T>;
    const int n2 = a.nmat * a.nmat;
    for (int i = tid; i < NCLS; i += nt) {
        reinterpret_cast<T *>(g)[i] = a.q[i];
        g[S::MAT + i] = (uint8_t)(a.mat[i] * sizeof(T));
    }
    for (int i = tid; i < 3 * n2; i += nt) {
        const int k = i / n2;
        reinterpret_cast<T *>(g + S::W + k * AXB)[i - k * n2] = a.w[i];
    }
}

/* The reference: one thread per node, the same formula and order. */
template <typename T> __global__ void ref_kernel(const args<T> a)
{
    using S = stage<T>;
    __shared__ __align__(16) unsigned char g[S::BYTES];
    stage_tables(a, g, threadIdx.x, blockDim.x);
    __syncthreads();
    const long long n = a.n, N = n * n * n;
    const unsigned TS = sizeof(T), nm = a.nmat;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < N;
         i += (long long)gridDim.x * blockDim.x) {
        const int x = (int)(i % n), y = (int)(i / n % n), z = (int)(i / (n * n));
        auto at = [&](int xx, int yy, int zz) {
            return (((long long)((zz + n) % n) * n + (yy + n) % n) * n + (xx + n) % n);
        };
        auto M = [&](long long k) { return (unsigned)g[S::MAT + a.c[k]]; };
        auto W = [&](int k, unsigned off) {
            return *reinterpret_cast<const T *>(g + S::W + k * AXB + off);
        };
        const long long kxm = at(x - 1, y, z), kxp = at(x + 1, y, z), kym = at(x, y - 1, z),
                        kyp = at(x, y + 1, z), kzm = at(x, y, z - 1), kzp = at(x, y, z + 1);
        const T c = a.u[i];
        const unsigned row = M(i) * nm;
        T s = W(0, row + M(kxm)) * (a.u[kxm] - c) + W(0, row + M(kxp)) * (a.u[kxp] - c);
        s = s + (W(1, row + M(kym)) * (a.u[kym] - c) + W(1, row + M(kyp)) * (a.u[kyp] - c));
        s = s + (W(2, row + M(kzm)) * (a.u[kzm] - c) + W(2, row + M(kzp)) * (a.u[kzp] - c));
        const T q = *reinterpret_cast<const T *>(g + a.c[i] * TS);
        a.o[i] = c + (s + q);
    }
}

/* A warp: LX lanes along x (VX values each) by LY rows; a block: WBX x WBY
 * warps. Lanes of row 0 load the row below the warp's tile, lanes of row LY-1
 * the row above; lanes of column 0 the value left of their row, column LX-1
 * the value right of it. */
template <typename T, int LX, int LY, int WBX, int WBY, int MINB>
__global__ void __launch_bounds__(32 * WBX * WBY, MINB) warp_kernel(const args<T> a)
{
    static_assert(LX * LY == 32 && LY >= 2, "a warp is LX x LY lanes, two rows or more");
    constexpr int VX = 16 / sizeof(T);
    constexpr unsigned TS = sizeof(T);
    using S = stage<T>;
    using G = grp<T, VX>;
    __shared__ __align__(16) unsigned char g[S::BYTES];
    stage_tables(a, g, threadIdx.x, blockDim.x);
    const uint8_t *tmat = g + S::MAT;
    auto W = [&](int k, unsigned off) {
        return *reinterpret_cast<const T *>(g + S::W + k * AXB + off);
    };
    auto mats = [&](unsigned cw) {
        unsigned m = 0;
#pragma unroll
        for (int e = 0; e < VX; e++) m |= (unsigned)tmat[byte_of(cw, e)] << (8 * e);
        return m;
    };

    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    const int lx = lane % LX, ly = lane / LX, wx = wid % WBX, wy = wid / WBX;
    const int n = a.n;
    const long long sw = (long long)n * n;
    const int x = ((blockIdx.x * WBX + wx) * LX + lx) * VX;
    const int y = (blockIdx.y * WBY + wy) * LY + ly;
    const bool top = ly == 0, bot = ly == LY - 1, sl = lx == 0, sr = lx == LX - 1;
    const int yh = top ? (y == 0 ? n - 1 : y - 1) : (bot ? (y == n - 1 ? 0 : y + 1) : y);
    const int xs = sl ? (x == 0 ? n - 1 : x - 1) : (sr ? (x + VX == n ? 0 : x + VX) : x);
    const long long own = (long long)y * n + x, hal = (long long)yh * n + x,
                    sid = (long long)y * n + xs;
    const bool hl = top || bot, sd = sl || sr;
    const int z0 = blockIdx.z * a.run, z1 = min(z0 + a.run, n);
    auto pl = [&](int z) { return (long long)((z + n) % n) * sw; };

    __syncthreads(); /* the tables */
    G prev, cur, nxt, nn, hc, hn;
    T sc = 0, sn = 0;
    unsigned mwp, mwc, mwn, cc, cn, cnn = 0, mhc = 0, hcn = 0, msc = 0, scn = 0;
    {
        const long long op = pl(z0 - 1), oc = pl(z0), on = pl(z0 + 1);
        prev = vld<T, VX>(a.u + op + own);
        cur = vld<T, VX>(a.u + oc + own);
        nxt = vld<T, VX>(a.u + on + own);
        mwp = mats(cld<VX>(a.c + op + own));
        cc = cld<VX>(a.c + oc + own);
        mwc = mats(cc);
        cn = cld<VX>(a.c + on + own);
        if (hl) {
            hc = vld<T, VX>(a.u + oc + hal);
            mhc = mats(cld<VX>(a.c + oc + hal));
        }
        if (sd) {
            sc = __ldg(a.u + oc + sid);
            msc = tmat[__ldg(a.c + oc + sid)];
        }
    }
    T *outp = a.o + pl(z0) + own;
    for (int z = z0; z < z1; z++, outp += sw) {
        if (z + 1 < z1) {
            const long long o2 = pl(z + 2), o1 = pl(z + 1);
            nn = vld<T, VX>(a.u + o2 + own);
            cnn = cld<VX>(a.c + o2 + own);
            if (hl) {
                hn = vld<T, VX>(a.u + o1 + hal);
                hcn = cld<VX>(a.c + o1 + hal);
            }
            if (sd) {
                sn = __ldg(a.u + o1 + sid);
                scn = __ldg(a.c + o1 + sid);
            }
        }
        mwn = mats(cn);
        /* Neighbours' materials (scaled bytes) and the x end values. */
        unsigned mym = __shfl_up_sync(0xffffffffu, mwc, LX),
                 myp = __shfl_down_sync(0xffffffffu, mwc, LX);
        if (top) mym = mhc;
        if (bot) myp = mhc;
        unsigned mxl = byte_of(__shfl_up_sync(0xffffffffu, mwc, 1), VX - 1);
        unsigned mxr = byte_of(__shfl_down_sync(0xffffffffu, mwc, 1), 0);
        T xl = __shfl_up_sync(0xffffffffu, cur.v[VX - 1], 1),
          xr = __shfl_down_sync(0xffffffffu, cur.v[0], 1);
        if (sl) xl = sc, mxl = msc;
        if (sr) xr = sc, mxr = msc;
        G v;
        const unsigned nm = (unsigned)a.nmat;
#pragma unroll
        for (int e = 0; e < VX; e++) {
            T ym = __shfl_up_sync(0xffffffffu, cur.v[e], LX),
              yp = __shfl_down_sync(0xffffffffu, cur.v[e], LX);
            if (top) ym = hc.v[e];
            if (bot) yp = hc.v[e];
            const T c = cur.v[e];
            const T xm = e > 0 ? cur.v[e > 0 ? e - 1 : 0] : xl;
            const T xp = e < VX - 1 ? cur.v[e < VX - 1 ? e + 1 : 0] : xr;
            const unsigned row = byte_of(mwc, e) * nm;
            const unsigned bxm = e > 0 ? byte_of(mwc, e > 0 ? e - 1 : 0) : mxl;
            const unsigned bxp = e < VX - 1 ? byte_of(mwc, e < VX - 1 ? e + 1 : 0) : mxr;
            T s = W(0, row + bxm) * (xm - c) + W(0, row + bxp) * (xp - c);
            s = s +
                (W(1, row + byte_of(mym, e)) * (ym - c) + W(1, row + byte_of(myp, e)) * (yp - c));
            s = s + (W(2, row + byte_of(mwp, e)) * (prev.v[e] - c) +
                     W(2, row + byte_of(mwn, e)) * (nxt.v[e] - c));
            const T q = *reinterpret_cast<const T *>(g + byte_of(cc, e) * TS);
            v.v[e] = c + (s + q);
        }
        vst<T, VX>(outp, v);
        prev = cur;
        cur = nxt;
        nxt = nn;
        mwp = mwc;
        mwc = mwn;
        cc = cn;
        cn = cnn;
        if (hl) hc = hn, mhc = mats(hcn);
        if (sd) sc = sn, msc = tmat[scn];
    }
}

/* Runs of planes per tile that fill the resident slots (the rule of
 * heat_cuda_wchunk_fill). */
static int fill_run(long long tiles, int nw, int slots)
{
    double best = -1;
    int chunk = nw;
    for (int r = 1; r <= 16; r++) {
        const int c = (nw + r - 1) / r;
        if (c < 16) break;
        const double runs = (double)((nw + c - 1) / c), waves = (double)tiles * runs / slots;
        const double eff = waves / ceil(waves) * c / (c + 2.0);
        if (eff > best + 1e-9) best = eff, chunk = c;
    }
    return chunk;
}

template <typename T> struct field {
    T *u, *o, *r, *q, *w;
    uint8_t *c, *mat;
    int n, nmat;
    args<T> a() const
    {
        return args<T>{u, c, o, q, mat, w, n, nmat, 0};
    }
};

template <typename T, int LX, int LY, int WBX, int WBY, int MINB>
static void variant(const field<T> &f, double copy_ms, int sms)
{
    constexpr int VX = 16 / sizeof(T);
    const int tx = LX * VX * WBX, ty = LY * WBY, n = f.n;
    if (n % tx || n % ty) {
        printf("  %2dx%d lanes, %dx%d warps: skipped (%d not a multiple of the tile)\n", LX, LY,
               WBX, WBY, n);
        return;
    }
    auto k = warp_kernel<T, LX, LY, WBX, WBY, MINB>;
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, k));
    int bps = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, k, 32 * WBX * WBY, 0));
    const long long tiles = (long long)(n / tx) * (n / ty);
    args<T> a = f.a();
    a.run = fill_run(tiles, n, sms * bps);
    const dim3 grid(n / tx, n / ty, (n + a.run - 1) / a.run);
    const long long N = (long long)n * n * n;
    CK(cudaMemset(a.o, 0xff, N * sizeof(T)));
    k<<<grid, 32 * WBX * WBY>>>(a);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<T> h1(N), h2(N);
    CK(cudaMemcpy(h1.data(), a.o, N * sizeof(T), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(h2.data(), f.r, N * sizeof(T), cudaMemcpyDeviceToHost));
    long long bad = -1;
    for (long long i = 0; i < N && bad < 0; i++)
        if (memcmp(&h1[i], &h2[i], sizeof(T))) bad = i;
    const float ms = median_ms([&] { k<<<grid, 32 * WBX * WBY>>>(a); });
    const double bytes = (2.0 * sizeof(T) + 1) * N;
    printf("  %2dx%d lanes, %dx%d warps, %d blocks/SM, %3d regs, %4d B spill, runs of %3d: %8.4f "
           "ms %7.1f GB/s "
           "%6.1f%% copy  %s\n",
           LX, LY, WBX, WBY, bps, fa.numRegs, (int)fa.localSizeBytes, a.run, ms, bytes / ms / 1e6,
           100.0 * (bytes / ms) / (2.0 * sizeof(T) * N / copy_ms), bad < 0 ? "exact" : "DIFFERS");
    if (bad >= 0)
        printf("    first difference at %lld: %.17g against %.17g\n", bad, (double)h1[bad],
               (double)h2[bad]);
}

template <typename T> static void probe(int n, int sms)
{
    const long long N = (long long)n * n * n;
    field<T> f;
    f.n = n;
    f.nmat = 4;
    CK(cudaMalloc(&f.u, N * sizeof(T)));
    CK(cudaMalloc(&f.o, N * sizeof(T)));
    CK(cudaMalloc(&f.r, N * sizeof(T)));
    CK(cudaMalloc(&f.c, N));
    CK(cudaMalloc(&f.q, NCLS * sizeof(T)));
    CK(cudaMalloc(&f.mat, NCLS));
    CK(cudaMalloc(&f.w, 3 * 16 * sizeof(T)));
    {
        std::vector<T> hu(N), hq(NCLS, T(0)), hw(48);
        std::vector<uint8_t> hc(N), hm(NCLS, 0);
        unsigned long long s = 88172645463325252ull;
        auto rnd = [&] {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            return (double)(s >> 11) / 9007199254740992.0;
        };
        for (long long i = 0; i < N; i++) hu[i] = (T)rnd(), hc[i] = (uint8_t)(rnd() * 8);
        for (int i = 0; i < 8; i++)
            hm[i] = (uint8_t)(i % 4), hq[i] = i >= 4 ? (T)(1e-3 * rnd()) : T(0);
        for (auto &x : hw) x = (T)(0.02 + 0.02 * rnd());
        CK(cudaMemcpy(f.u, hu.data(), N * sizeof(T), cudaMemcpyHostToDevice));
        CK(cudaMemcpy(f.c, hc.data(), N, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(f.q, hq.data(), NCLS * sizeof(T), cudaMemcpyHostToDevice));
        CK(cudaMemcpy(f.mat, hm.data(), NCLS, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(f.w, hw.data(), 48 * sizeof(T), cudaMemcpyHostToDevice));
    }
    args<T> ra = f.a();
    ra.o = f.r;
    ref_kernel<T><<<sms * 8, 256>>>(ra);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    const float cp =
        median_ms([&] { CK(cudaMemcpyAsync(f.o, f.u, N * sizeof(T), cudaMemcpyDeviceToDevice)); });
    printf("%s %d^3: copy %.4f ms, %.1f GB/s\n", sizeof(T) == 4 ? "float" : "double", n, cp,
           2.0 * sizeof(T) * N / cp / 1e6);
    variant<T, 8, 4, 2, 4, 4>(f, cp, sms);
    variant<T, 8, 4, 2, 4, 3>(f, cp, sms);
    variant<T, 8, 4, 1, 4, 8>(f, cp, sms);
    variant<T, 4, 8, 4, 2, 4>(f, cp, sms);
    variant<T, 16, 2, 1, 8, 4>(f, cp, sms);
    variant<T, 16, 2, 2, 4, 3>(f, cp, sms);
    CK(cudaFree(f.u));
    CK(cudaFree(f.o));
    CK(cudaFree(f.r));
    CK(cudaFree(f.c));
    CK(cudaFree(f.q));
    CK(cudaFree(f.mat));
    CK(cudaFree(f.w));
}

int main(int argc, char **argv)
{
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("%s, %d SMs\n", p.name, p.multiProcessorCount);
    std::vector<int> ns;
    for (int i = 1; i < argc; i++) ns.push_back(atoi(argv[i]));
    if (ns.empty()) ns = {512, 384};
    for (int n : ns) {
        if (n < 64 || n % 64) {
            fprintf(stderr, "warp_probe: n = %d: give a multiple of 64\n", n);
            return 2;
        }
        probe<float>(n, p.multiProcessorCount);
        probe<double>(n, p.multiProcessorCount);
    }
    return 0;
}
