/* The finest multigrid level's stencil passes (the smoother's sweeps, the
 * residual and the norms of a cycle's stop test) when the level has one
 * material, in the register-tiled style of the explicit sweep
 * (k_register.cu):
 *
 * - a block owns a tile of BXT*VX x BP nodes of an x-y plane and streams a
 *   run of planes along z through a ring of D planes in shared memory
 *   (the tile and its halo), filled by asynchronous copies (cp.async) P =
 *   D - 3 planes ahead of the update: several planes' loads in flight per
 *   block without holding them in registers (the registers keep the
 *   conductivities below), one barrier a plane; each thread reads its
 *   group of VX consecutive x nodes and their six neighbours from the ring;
 * - the tile's halo rows and columns are copied by the first 2 BXT + 2 BP
 *   threads; every index is wrapped into the grid (a periodic axis's
 *   neighbour, or a value that a zero conductivity multiplies, as the CPU
 *   reads it);
 * - the face conductivities of a node depend on its column's x and y and on
 *   the plane's z widths only: a thread keeps its columns' six and their
 *   sum, and works them out again only when the plane's z widths change
 *   (the planes of a face), so a node costs its residual and its update;
 *   the z widths of the next plane are read a plane ahead.
 *
 * Values and order are mg_pass_kernel's (k_mg.cu) and the CPU's
 * (cpu/cpu_mg.inc): the operator is kernels/mg_point.inc, the kept sum of
 * the conductivities is the same five additions that every node's diagonal
 * starts with, and the sweep's weight c1 / diag is kept with them where the
 * diagonal has no mass term (a steady solve), so a node costs no division.
 * tests/test_gpu_mg.c compares the fields bit for bit.
 */
#include <cuda_pipeline.h>

#include "k_mg_impl.cuh"
#include "stencil.cuh"

/* a and b the same value to the bit (a conductivity's inputs unchanged) */
static __device__ __forceinline__ bool same_bits(float a, float b)
{
    return __float_as_int(a) == __float_as_int(b);
}
static __device__ __forceinline__ bool same_bits(double a, double b)
{
    return __double_as_longlong(a) == __double_as_longlong(b);
}

template <typename T, int PASS, bool DG, int VX, int BXT, int BP, int D, int MINB>
__global__ void __launch_bounds__(BXT *BP, MINB)
    mg_fine_kernel(const mgd_level<T> L, const mgd_fine<T> F, int sweep, int kchunk,
                   mg_norms *norms)
{
    static_assert(BXT % 32 == 0, "a tile row is whole warps");
    static_assert(BXT * BP >= 2 * BXT + 2 * BP, "one thread per halo copy");
    static_assert(D >= 4, "the ring holds the planes below, at and above the update and one more");
    constexpr int BX = BXT * VX, ROWS = BP + 2, RS = BX + 2 * VX, P = D - 3;
    __shared__ __align__(16) T sm[D][ROWS][RS];

    const int n0 = L.n[0], n1 = L.n[1], n2 = L.n[2];
    const int tx = threadIdx.x, ty = threadIdx.y, tid = tx + BXT * ty;
    const int x0 = blockIdx.x * BX, p0 = blockIdx.y * BP;
    const int ig = x0 + tx * VX, j = p0 + ty;
    const int k0 = blockIdx.z * kchunk, k1 = min(k0 + kchunk, n2);
    const long long sz = (long long)n0 * n1;
    const T *x = PASS == P_SMOOTH && (sweep & 1) ? L.x1 : L.x0;
    T *out = PASS == P_SMOOTH && (sweep & 1) ? L.x0 : L.x1;
    const int col = VX + tx * VX; /* this thread's group in a shared row */

    /* What this thread copies, wrapped into the grid: the node after a
     * row's last is its periodic neighbour (nx is a multiple of VX when
     * VX > 1); and its halo role: a group of the row below or above the
     * tile, or the value left or right of a tile row. */
    const long long own = (long long)(j % n1) * n0 + ig % n0;
    int hrole = 0, hrow = 0, hcol = 0;
    long long hoff = 0;
    if (tid < 2 * BXT) {
        const int r = tid / BXT, g = tid % BXT;
        const int hj = r ? (p0 + BP) % n1 : (p0 == 0 ? n1 - 1 : p0 - 1);
        hrole = 1;
        hrow = r ? ROWS - 1 : 0;
        hcol = VX + g * VX;
        hoff = (long long)hj * n0 + (x0 + g * VX) % n0;
    } else if (tid - 2 * BXT < 2 * BP) {
        const int t = tid - 2 * BXT, r = t / 2, side = t % 2;
        const int hx = side ? (x0 + BX) % n0 : (x0 == 0 ? n0 - 1 : x0 - 1);
        hrole = 2;
        hrow = r + 1;
        hcol = side ? VX + BX : VX - 1;
        hoff = (long long)((p0 + r) % n1) * n0 + hx;
    }
    /* Plane k (k0 - 1 .. k1, wrapped into the grid) into its ring slot. */
    auto slot = [&](int k) { return (k - k0 + 1) % D; };
    auto issue = [&](int k) {
        const T *src = x + (long long)(k < 0 ? k + n2 : k >= n2 ? k - n2 : k) * sz;
        T(*pl)[RS] = sm[slot(k)];
        __pipeline_memcpy_async(&pl[ty + 1][col], src + own, VX * sizeof(T));
        if (hrole == 1)
            __pipeline_memcpy_async(&pl[hrow][hcol], src + hoff, VX * sizeof(T));
        else if (hrole == 2)
            __pipeline_memcpy_async(&pl[hrow][hcol], src + hoff, sizeof(T));
    };

    /* Which of the group's nodes are in the grid and not held (before z). */
    const bool rowin = j < n1, grpin = ig < n0;
    const int jj = rowin ? j : 0;
    const bool rowheld = (jj == 0 && L.held[1][0]) || (jj == n1 - 1 && L.held[1][1]);
    bool act[VX];
    bool allact = rowin && !rowheld;
#pragma unroll
    for (int e = 0; e < VX; e++) {
        const int i = ig + e;
        act[e] = rowin && !rowheld && i < n0 &&
                 !((i == 0 && L.held[0][0]) || (i == n0 - 1 && L.held[0][1]));
        allact = allact && act[e];
    }
    const T kf = F.kf[0];
    const T c0 = L.cheb[sweep][0], c1 = L.cheb[sweep][1];
    const bool up = c0 != T(0);
    const T *bp = L.b, *dgp = DG ? F.dg0 : nullptr; /* DG: F.dg0 not NULL */
    const T rhoc = PASS == P_NORMS ? F.rhoc[0] : T(0);

    /* Per node e of the group, field f: 0 .. 5 the conductivities t, 6 what
     * the pass needs besides: the sweep's weight c1 / diag where diag is
     * their sum (no mass term: dg0 NULL), their sum ts (a sweep with one),
     * or the x width times the y width (the norms' volumes); made for the
     * plane z widths (cvz, cikm, cik). The axes' tables are read again when
     * a plane's widths differ (the z faces' planes). */
    T tc[7][VX];
    T cvz = 0, cikm = 0, cik = 0;
    bool have = false;

    unsigned long long rm = 0, um = 0, lo = ~0ull, hi = 0;
    double ws = 0, sum = 0;
    /* The norms: the largest |r| of each node of the group since the
     * divisor rho c V last changed (its bits), folded into rm as
     * |r| / (rho c V) when it changes and at the end: division rounds
     * monotonically, so this is the largest quotient, without a division
     * per node. */
    unsigned long long rmx[VX];
#pragma unroll
    for (int e = 0; e < VX; e++) rmx[e] = 0;
    auto fold = [&]() {
#pragma unroll
        for (int e = 0; e < VX; e++) {
            const T d = rhoc * (tc[6][e] * cvz);
            rm = max(rm, abs_bits((T)__longlong_as_double((long long)rmx[e]) / d));
            rmx[e] = 0;
        }
    };

    /* planes k0 - 1 .. k0 + P - 1 in flight, one copy group each */
    if (k0 < k1)
        for (int k = k0 - 1; k < k0 + P; k++) {
            if (k <= k1) issue(k);
            __pipeline_commit();
        }

    /* the z widths of the next plane, read a plane ahead */
    T vz_n = 0, ikm_n = 0, ik_n = 0;
    if (k0 < k1) vz_n = L.v[2][k0], ikm_n = L.ih[2][wrapm(k0, n2)], ik_n = L.ih[2][k0];
    for (int k = k0; k < k1; k++) {
        /* plane k + P into the slot of plane k - 3, which no thread reads
         * since the last barrier; then wait for plane k + 1 */
        if (k + P <= k1) issue(k + P);
        __pipeline_commit();
        __pipeline_wait_prior(P - 1);
        const long long p = (long long)k * sz + (long long)j * n0 + ig; /* rowin, grpin */
        const bool zheld = (k == 0 && L.held[2][0]) || (k == n2 - 1 && L.held[2][1]);
        const bool work = rowin && grpin && !zheld;
        hk_vec<T, VX> bv, dv, pv;
#pragma unroll
        for (int e = 0; e < VX; e++) bv.v[e] = dv.v[e] = pv.v[e] = T(0);
        if (work) {
            if (bp) bv = vload<T, VX>(bp + p);
            if (DG) dv = vload<T, VX>(dgp + p);
            if (PASS == P_SMOOTH && up) pv = vload<T, VX>(out + p);
        }
        const T vz = vz_n, ikm = ikm_n, ik = ik_n;
        if (k + 1 < k1) vz_n = L.v[2][k + 1], ikm_n = L.ih[2][k], ik_n = L.ih[2][k + 1];
        if (!have || !same_bits(vz, cvz) || !same_bits(ikm, cikm) || !same_bits(ik, cik)) {
            if (PASS == P_NORMS && have) fold();
            have = true, cvz = vz, cikm = ikm, cik = ik;
            const T vy = L.v[1][jj], ihjm = L.ih[1][wrapm(jj, n1)], ihj = L.ih[1][jj];
#pragma unroll
            for (int e = 0; e < VX; e++) {
                const int ii = ig + e < n0 ? ig + e : 0;
                const T vx = L.v[0][ii], ihm = L.ih[0][wrapm(ii, n0)], ihp = L.ih[0][ii];
                const T t[6] = {face(kf, ihm, vy, vz),  face(kf, ihp, vy, vz),
                                face(kf, ihjm, vx, vz), face(kf, ihj, vx, vz),
                                face(kf, ikm, vx, vy),  face(kf, ik, vx, vy)};
                const T ts = tsum(t);
#pragma unroll
                for (int f = 0; f < 6; f++) tc[f][e] = t[f];
                if (PASS == P_NORMS)
                    tc[6][e] = vx * vy;
                else if (PASS == P_SMOOTH && !DG)
                    tc[6][e] = weight(c1, ts + T(0)); /* diag = ts + dg, dg = 0 */
                else
                    tc[6][e] = ts;
            }
        }
        __syncthreads();
        const T(*pc)[RS] = sm[slot(k)];
        const hk_vec<T, VX> cur = vload<T, VX>(&pc[ty + 1][col]);
        if (PASS == P_NORMS && rowin) {
#pragma unroll
            for (int e = 0; e < VX; e++)
                if (ig + e < n0) {
                    const T c = cur.v[e];
                    um = max(um, abs_bits(c));
                    lo = min(lo, ordered((double)c));
                    hi = max(hi, ordered((double)c));
                    sum += (double)c;
                }
        }
        if (work) {
            const hk_vec<T, VX> ym = vload<T, VX>(&pc[ty][col]);
            const hk_vec<T, VX> yp = vload<T, VX>(&pc[ty + 2][col]);
            const hk_vec<T, VX> zm = vload<T, VX>(&sm[slot(k - 1)][ty + 1][col]);
            const hk_vec<T, VX> zp = vload<T, VX>(&sm[slot(k + 1)][ty + 1][col]);
            const T left = pc[ty + 1][col - 1], right = pc[ty + 1][col + VX];
            hk_vec<T, VX> v;
#pragma unroll
            for (int e = 0; e < VX; e++) {
                const T c = cur.v[e];
                const T nb[6] = {e > 0 ? cur.v[e - 1] : left,
                                 e < VX - 1 ? cur.v[e + 1] : right,
                                 ym.v[e],
                                 yp.v[e],
                                 zm.v[e],
                                 zp.v[e]};
                T diag;
                const T t[6] = {tc[0][e], tc[1][e], tc[2][e], tc[3][e], tc[4][e], tc[5][e]};
                /* diag is read only by a sweep with a mass term, where tc 6 is ts */
                const T r = resid_ts(bv.v[e], dv.v[e], c, nb, t, tc[6][e], &diag);
                if (PASS == P_SMOOTH) {
                    const T w = DG ? weight(c1, diag) : tc[6][e];
                    v.v[e] = sweep_value(up, c, pv.v[e], r, w, c0);
                } else if (PASS == P_RESID) {
                    v.v[e] = r;
                } else if (act[e]) {
                    const T vol = tc[6][e] * vz;
                    rmx[e] = max(rmx[e], abs_bits(r));
                    ws += (double)(rhoc * vol) * (double)c;
                }
            }
            if (PASS != P_NORMS) {
                if (allact) {
                    vstore<T, VX>(out + p, v);
                } else {
#pragma unroll
                    for (int e = 0; e < VX; e++)
                        if (act[e]) out[p + e] = v.v[e];
                }
            }
        }
    }
    if (PASS == P_NORMS) {
        if (have) fold();
        mg_norms_flush(norms, rm, um, ws, sum, lo, hi);
    }
}

template <typename T, int PASS, bool DG, int VX, int BXT, int BP, int D, int MINB>
static cudaError_t launch_dg(const mgd_level<T> &L, const mgd_fine<T> &F, int sweep,
                             mg_norms *norms, cudaStream_t stream)
{
    auto kernel = mg_fine_kernel<T, PASS, DG, VX, BXT, BP, D, MINB>;
    static int blocks_per_sm = 0; /* occupancy of this instantiation, asked once */
    if (!blocks_per_sm) {
        const cudaError_t e =
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, BXT * BP, 0);
        if (e != cudaSuccess) return e;
        if (blocks_per_sm < 1) blocks_per_sm = 1;
    }
    constexpr int BX = BXT * VX;
    const long long gx = (L.n[0] + BX - 1) / BX, gy = (L.n[1] + BP - 1) / BP;
    const int kchunk = heat_cuda_wchunk(gx * gy, L.n[2], blocks_per_sm);
    const dim3 grid((unsigned)gx, (unsigned)gy, (unsigned)((L.n[2] + kchunk - 1) / kchunk));
    kernel<<<grid, dim3(BXT, BP), 0, stream>>>(L, F, sweep, kchunk, norms);
    return cudaGetLastError();
}

/* Tiles of 32 x 8 threads, groups of 16 bytes where rows allow (else one
 * value a thread), a ring of 8 planes, 2 blocks per multiprocessor (what
 * was measured against the alternatives: docs/PERFORMANCE.md); with or
 * without a mass term on the diagonal (implicit steps, steady). */
template <typename T, int PASS>
cudaError_t heat_cuda_mg_fine_pass(const mgd_level<T> &L, const mgd_fine<T> &F, int sweep,
                                   mg_norms *norms, cudaStream_t stream)
{
    constexpr int V = 16 / sizeof(T);
    const bool dg = F.dg0 != nullptr;
    if (L.n[0] % V == 0)
        return dg ? launch_dg<T, PASS, true, V, 32, 8, 8, 2>(L, F, sweep, norms, stream)
                  : launch_dg<T, PASS, false, V, 32, 8, 8, 2>(L, F, sweep, norms, stream);
    return dg ? launch_dg<T, PASS, true, 1, 32, 8, 8, 2>(L, F, sweep, norms, stream)
              : launch_dg<T, PASS, false, 1, 32, 8, 8, 2>(L, F, sweep, norms, stream);
}

#define HEAT_MG_FINE(T, P)                                                                         \
    template cudaError_t heat_cuda_mg_fine_pass<T, P>(const mgd_level<T> &, const mgd_fine<T> &,   \
                                                      int, mg_norms *, cudaStream_t);
HEAT_MG_FINE(float, P_SMOOTH)
HEAT_MG_FINE(float, P_RESID)
HEAT_MG_FINE(float, P_NORMS)
HEAT_MG_FINE(double, P_SMOOTH)
HEAT_MG_FINE(double, P_RESID)
HEAT_MG_FINE(double, P_NORMS)
