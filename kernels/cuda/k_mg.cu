/* Multigrid on the GPU: the level kernels of kernels/mg.h and the state
 * that runs them (cuda_mg.h).
 *
 * Every kernel repeats the CPU backend's arithmetic (cpu/cpu_mg.inc) node by
 * node, in the same order and with the same operator (kernels/mg_point.inc,
 * compiled here with --fmad=false), so the two agree bit for bit; the only
 * sum over nodes, the weighted mean of a singular problem, is exact on both
 * (a long accumulator: xsum.cuh here, xsum.h on the CPU).
 *
 * Stencil passes (sweeps, the residual, the implicit right-hand side, the
 * norms) run one thread per node of a (32 x 8) tile of an x-y plane, marching
 * along z through a run of planes: the centre column's z neighbours stay in
 * registers from one plane to the next, the x and y neighbours come through
 * the L1 cache from the neighbouring threads' loads; the finest level's
 * sweeps, residual and norms run in the register-tiled style instead
 * (k_mg_fine.cu; with several materials, up to MG_FINE_NMAT of them). The
 * transfers march along z one thread per column likewise. Coarse levels are
 * latency-bound, so the whole V-cycle (about 6 launches per level) is
 * captured once as a CUDA graph and replayed.
 */
#include "cuda_mg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <new>
#include <vector>

#include "k_mg_impl.cuh"
#include "stencil.cuh"

extern "C" {
#include "mg.h"
}

/* ---- device views ----------------------------------------------------------------- */

template <typename T>
__device__ __forceinline__ bool held_at(const mgd_level<T> &L, int i, int j, int k)
{
    return (i == 0 && L.held[0][0]) || (i == L.n[0] - 1 && L.held[0][1]) ||
           (j == 0 && L.held[1][0]) || (j == L.n[1] - 1 && L.held[1][1]) ||
           (k == 0 && L.held[2][0]) || (k == L.n[2] - 1 && L.held[2][1]);
}

/* b - A x at node (i, j, k) of level L (L0: the finest, its T from the
 * tables), x's centre and z neighbours given; diag returned. The order is
 * cpu_mg.inc's mg_at. */
template <typename T, bool L0>
__device__ __forceinline__ T point_resid(const mgd_level<T> &L, const mgd_fine<T> &F, const T *x,
                                         bool zero, T b, int i, int j, int k, long long p, T c,
                                         T zm, T zp, T &diag)
{
    const int n0 = L.n[0], n1 = L.n[1], n2 = L.n[2];
    const int im = wrapm(i, n0), ip = wrapp(i, n0), jm = wrapm(j, n1), jp = wrapp(j, n1);
    const int km = wrapm(k, n2);
    const long long sy = L.rp, sz = mg_plane(L);
    const long long q0 = p + (im - i), q1 = p + (ip - i), q2 = p + (jm - j) * sy,
                    q3 = p + (jp - j) * sy, q4 = p + (km - k) * sz;
    T t[6], nb[6];
    if (!L0) {
        t[0] = L.t[0][q0], t[1] = L.t[0][p], t[2] = L.t[1][q2], t[3] = L.t[1][p];
        t[4] = L.t[2][q4], t[5] = L.t[2][p];
    } else {
        const unsigned char *ml = F.mtl;
        const int M = F.nmat;
        const long long q5 = p + (wrapp(k, n2) - k) * sz;
        const int a = ml ? ml[p] : 0;
        const int m0 = ml ? ml[q0] : 0, m1 = ml ? ml[q1] : 0;
        const int m2 = ml ? ml[q2] : 0, m3 = ml ? ml[q3] : 0;
        const int m4 = ml ? ml[q4] : 0, m5 = ml ? ml[q5] : 0;
        const T vx = L.v[0][i], vy = L.v[1][j], vz = L.v[2][k];
        t[0] = face(F.kf[m0 * M + a], L.ih[0][im], vy, vz);
        t[1] = face(F.kf[a * M + m1], L.ih[0][i], vy, vz);
        t[2] = face(F.kf[m2 * M + a], L.ih[1][jm], vx, vz);
        t[3] = face(F.kf[a * M + m3], L.ih[1][j], vx, vz);
        t[4] = face(F.kf[m4 * M + a], L.ih[2][km], vx, vy);
        t[5] = face(F.kf[a * M + m5], L.ih[2][k], vx, vy);
    }
    if (zero) {
        for (int e = 0; e < 6; e++) nb[e] = T(0);
    } else {
        nb[0] = x[q0], nb[1] = x[q1], nb[2] = x[q2], nb[3] = x[q3], nb[4] = zm, nb[5] = zp;
    }
    const T *dgp = L0 ? F.dg0 : L.dg;
    const T dg = dgp ? dgp[p] : T(0);
    return resid(b, dg, zero ? T(0) : c, nb, t, &diag);
}

/* One pass over level L: tiles of (32 x 8) nodes of an x-y plane, each
 * thread marching along z through planes k0 .. k1 - 1 of its column. */
template <typename T, bool L0, int PASS>
__global__ void __launch_bounds__(256)
    mg_pass_kernel(const mgd_level<T> L, const mgd_fine<T> F, int sweep, int zero, int kchunk,
                   mg_norms *norms)
{
    const int i = blockIdx.x * 32 + threadIdx.x, j = blockIdx.y * 8 + threadIdx.y;
    const bool in = i < L.n[0] && j < L.n[1];
    const int n2 = L.n[2], k0 = blockIdx.z * kchunk, k1 = min(k0 + kchunk, n2);
    const long long sz = mg_plane(L);
    const T *x = PASS == P_SMOOTH && sweep % 2 ? L.x1 : L.x0;
    T *out = PASS == P_SMOOTH ? (sweep % 2 ? L.x0 : L.x1) : L.x1;
    const T c0 = L.cheb[sweep][0], c1 = L.cheb[sweep][1];
    const bool z0 = PASS == P_SMOOTH && zero && sweep == 0;
    unsigned long long rm = 0, um = 0, bm = 0;
    heat_gx_win ws;
    if (PASS == P_NORMS && F.wsum) heat_gx_begin();
    if (in && k0 < k1) {
        const long long col = (long long)j * L.rp + i;
        T zm = z0 ? T(0) : x[col + (long long)wrapm(k0, n2) * sz];
        T c = z0 ? T(0) : x[col + (long long)k0 * sz];
        for (int k = k0; k < k1; k++) {
            const long long p = col + (long long)k * sz;
            const T zp = z0 ? T(0) : x[col + (long long)wrapp(k, n2) * sz];
            if (PASS == P_NORMS) um = max(um, abs_bits(c));
            if (PASS == P_RHS && F.keep) F.keep[p] = c;
            if (!held_at(L, i, j, k)) {
                T diag;
                /* the right-hand side's pass evaluates -A c: b taken as 0 */
                const T b = PASS == P_RHS || !L.b ? T(0) : L.b[p];
                const T r = point_resid<T, L0>(L, F, x, z0, b, i, j, k, p, c, zm, zp, diag);
                if (PASS == P_SMOOTH) {
                    const bool up = c0 != T(0);
                    const T prev = !up || zero ? T(0) : out[p];
                    out[p] = sweep_value(up, c, prev, r, weight(c1, diag), c0);
                } else if (PASS == P_RESID) {
                    out[p] = r;
                } else if (PASS == P_RHS) {
                    /* b was zero for this pass: r = -(A c) */
                    const T vol = (L.v[0][i] * L.v[1][j]) * L.v[2][k];
                    const int a = F.mtl ? F.mtl[p] : 0;
                    const T bv = rhs_value(c, -r, F.mdt[a] * vol, F.ct, F.b0 ? F.b0[p] : T(0));
                    L.b[p] = bv;
                    bm = max(bm, abs_bits(bv / (F.rhoc[a] * vol)));
                } else {
                    const T vol = (L.v[0][i] * L.v[1][j]) * L.v[2][k];
                    const T rc = F.rhoc[F.mtl ? F.mtl[p] : 0];
                    rm = max(rm, abs_bits(r / (rc * vol)));
                    if (F.wsum) ws.add((double)(rc * vol) * (double)c);
                }
            }
            zm = c;
            c = zp;
        }
    }
    if (PASS == P_RHS) hk_block_max(bm, &norms->bmax);
    if (PASS == P_NORMS) mg_norms_flush(norms, rm, um, ws, F.wsum);
}

/* The transfers run one thread per column (i, j) of the level they write,
 * marching along z through a run of kchunk planes: the taps' x and y
 * weights multiplied and their offsets in a plane are worked out once per
 * column, so a node costs its taps' z weight, product, test and sum, in
 * cpu_mg.inc's order (w = wz (wy wx), zero weights skipped, summed z, y, x).
 * Blocks of 32 x 8 columns. */

/* The transfer of column (i, j) of the level written where F's weights are
 * per node (wq): cpu_mg.inc's order, the tables' product tested for 0 first,
 * then P's weights at the fine node, w = wz (wy wx). */
template <typename T, int TAPS>
__device__ __forceinline__ void transfer_wq(const mgd_level<T> &F, const mgd_level<T> &C, int i,
                                            int j, int kchunk)
{
    constexpr bool RESTRICT = TAPS == 3;
    const mgd_level<T> &W = RESTRICT ? C : F;
    const long long fsz = mg_plane(F), csz = mg_plane(C);
    const int k0 = blockIdx.z * kchunk, k1 = min(k0 + kchunk, W.n[2]);
    for (int k = k0; k < k1; k++) {
        if ((k == 0 && W.held[2][0]) || (k == W.n[2] - 1 && W.held[2][1])) continue;
        T s = 0;
        if (RESTRICT) {
            for (int tz = 0; tz < 3; tz++)
                for (int ty = 0; ty < 3; ty++)
                    for (int tx = 0; tx < 3; tx++) {
                        T w = C.wr[2][3 * k + tz] * (C.wr[1][3 * j + ty] * C.wr[0][3 * i + tx]);
                        if (w == T(0)) continue;
                        const long long f = C.pr[2][3 * k + tz] * fsz +
                                            (long long)C.pr[1][3 * j + ty] * F.rp +
                                            C.pr[0][3 * i + tx];
                        const T wx = tx ? wq_low<T>(F.wq[0][f]) : wq_high<T>(F.wq[0][f]);
                        const T wy = ty ? wq_low<T>(F.wq[1][f]) : wq_high<T>(F.wq[1][f]);
                        const T wz = tz ? wq_low<T>(F.wq[2][f]) : wq_high<T>(F.wq[2][f]);
                        w = wz * (wy * wx);
                        if (w == T(0)) continue;
                        s = s + w * F.x1[f];
                    }
            C.b[(long long)k * csz + (long long)j * C.rp + i] = s;
        } else {
            const long long p = (long long)k * fsz + (long long)j * F.rp + i;
            T wa[3][2];
            for (int d = 0; d < 3; d++) {
                const unsigned q = F.wq[d][p];
                wa[d][0] = wq_low<T>(q), wa[d][1] = wq_high<T>(q);
            }
            for (int cz = 0; cz < 2; cz++)
                for (int cy = 0; cy < 2; cy++)
                    for (int cx = 0; cx < 2; cx++) {
                        const T w = wa[2][cz] * (wa[1][cy] * wa[0][cx]);
                        if (w == T(0)) continue;
                        const long long c = F.pp[2][2 * k + cz] * csz +
                                            (long long)F.pp[1][2 * j + cy] * C.rp +
                                            F.pp[0][2 * i + cx];
                        s = s + w * C.x0[c];
                    }
            F.x0[p] = F.x0[p] + s;
        }
    }
}

/* A transfer between level F and the next coarser level C: the
 * restriction (TAPS = 3) writes C's b = R r from F's x1 through C's tables
 * (wr, pr), the prolongation (TAPS = 2) adds P e to F's x0 from C's x0
 * through F's tables (wp, pp); one thread per column of the level written. */
template <typename T, int TAPS>
__global__ void __launch_bounds__(256)
    mg_transfer_kernel(const mgd_level<T> F, const mgd_level<T> C, int kchunk)
{
    static_assert(TAPS == 2 || TAPS == 3, "prolongation or restriction");
    constexpr bool RESTRICT = TAPS == 3;
    const mgd_level<T> &W = RESTRICT ? C : F; /* written */
    const mgd_level<T> &S = RESTRICT ? F : C; /* read */
    const T *const *wt = RESTRICT ? C.wr : F.wp;
    const int *const *pt = RESTRICT ? C.pr : F.pp;
    const T *src = RESTRICT ? F.x1 : C.x0;
    const int i = blockIdx.x * 32 + threadIdx.x, j = blockIdx.y * 8 + threadIdx.y;
    if (i >= W.n[0] || j >= W.n[1]) return;
    const bool held_xy = (i == 0 && W.held[0][0]) || (i == W.n[0] - 1 && W.held[0][1]) ||
                         (j == 0 && W.held[1][0]) || (j == W.n[1] - 1 && W.held[1][1]);
    if (held_xy) return;
    if (F.wq[0]) return transfer_wq<T, TAPS>(F, C, i, j, kchunk);
    T wxy[TAPS * TAPS];
    long long oxy[TAPS * TAPS];
#pragma unroll
    for (int ty = 0; ty < TAPS; ty++)
#pragma unroll
        for (int tx = 0; tx < TAPS; tx++) {
            wxy[TAPS * ty + tx] = wt[1][TAPS * j + ty] * wt[0][TAPS * i + tx];
            oxy[TAPS * ty + tx] = (long long)pt[1][TAPS * j + ty] * S.rp + pt[0][TAPS * i + tx];
        }
    const long long ssz = mg_plane(S);
    const int k0 = blockIdx.z * kchunk, k1 = min(k0 + kchunk, W.n[2]);
    for (int k = k0; k < k1; k++) {
        if ((k == 0 && W.held[2][0]) || (k == W.n[2] - 1 && W.held[2][1])) continue;
        T s = 0;
#pragma unroll
        for (int tz = 0; tz < TAPS; tz++) {
            const T wz = wt[2][TAPS * k + tz];
            const T *pl = src + pt[2][TAPS * k + tz] * ssz;
#pragma unroll
            for (int t = 0; t < TAPS * TAPS; t++) {
                const T w = wz * wxy[t];
                if (w == T(0)) continue;
                s = s + w * pl[oxy[t]];
            }
        }
        const long long p = (long long)k * mg_plane(W) + (long long)j * W.rp + i;
        if (RESTRICT)
            C.b[p] = s;
        else
            F.x0[p] = F.x0[p] + s;
    }
}

/* The coarsest level: x = C rhs (add: x += C rhs), the inverse stored by
 * columns so that the threads of a warp read neighbouring values. */
template <typename T>
__global__ void mg_coarse_kernel(T *x, const T *rhs, const T *cinv_t, const int *cidx, int nc,
                                 int add)
{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= nc) return;
    T s = 0;
    for (int q = 0; q < nc; q++) s = s + cinv_t[(long long)q * nc + r] * rhs[cidx[q]];
    x[cidx[r]] = add ? x[cidx[r]] + s : s;
}

/* The finest level's nodes by planes: value i of a plane of pn (blocks
 * along x; rows of rp values of which the first n0 are nodes), planes sz
 * apart (blocks along y, striding by the grid). */
template <typename T>
__global__ void mg_shift_kernel(T *x, long long pn, int n0, int rp, long long sz, int n2, T d)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= pn || i % rp >= n0) return;
    for (int k = blockIdx.y; k < n2; k += gridDim.y) {
        T *q = x + (long long)k * sz + i;
        *q = *q + d;
    }
}

template <typename T>
__global__ void mg_dudt_kernel(const T *x, const T *keep, long long pn, int n0, int rp,
                               long long sz, int n2, unsigned long long *out)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long m = 0;
    if (i < pn && i % rp < n0)
        for (int k = blockIdx.y; k < n2; k += gridDim.y) {
            const long long p = (long long)k * sz + i;
            m = max(m,
                    (unsigned long long)__double_as_longlong(fabs((double)x[p] - (double)keep[p])));
        }
    hk_block_max(m, out);
}

/* ---- the state ------------------------------------------------------------------------- */

static void note_launch(cuda_mg *g)
{
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess && g->launch_err == cudaSuccess) g->launch_err = e;
}

/* A stencil pass over level l: tiles of 32 x 8 columns, the planes cut into
 * runs so that about 8 blocks per multiprocessor are in flight. */
template <typename T, int PASS>
static void launch_pass(cuda_mg *g, const mgd_level<T> &L, const mgd_fine<T> &F, bool l0, int sweep,
                        int zero)
{
    if constexpr (PASS != P_RHS) {
        if (l0 && (!F.mtl || F.nmat <= MG_FINE_NMAT) && !(PASS == P_SMOOTH && zero) &&
            !g->point_l0) {
            const cudaError_t e =
                heat_cuda_mg_fine_pass<T, PASS>(L, F, sweep, g->pair_l0, g->d_norms, g->stream);
            if (e != cudaSuccess && g->launch_err == cudaSuccess) g->launch_err = e;
            return;
        }
    }
    const dim3 block(32, 8, 1);
    const unsigned gx = (unsigned)((L.n[0] + 31) / 32), gy = (unsigned)((L.n[1] + 7) / 8);
    const long long target = 8LL * g->sms;
    long long runs = (target + (long long)gx * gy - 1) / ((long long)gx * gy);
    if (runs < 1) runs = 1;
    if (runs > L.n[2]) runs = L.n[2];
    const int kchunk = (int)((L.n[2] + runs - 1) / runs);
    const dim3 grid(gx, gy, (unsigned)((L.n[2] + kchunk - 1) / kchunk));
    /* the right-hand side and the norms run on level 0 only */
    if constexpr (PASS == P_RHS || PASS == P_NORMS)
        mg_pass_kernel<T, true, PASS>
            <<<grid, block, 0, g->stream>>>(L, F, sweep, zero, kchunk, g->d_norms);
    else if (l0)
        mg_pass_kernel<T, true, PASS>
            <<<grid, block, 0, g->stream>>>(L, F, sweep, zero, kchunk, g->d_norms);
    else
        mg_pass_kernel<T, false, PASS>
            <<<grid, block, 0, g->stream>>>(L, F, sweep, zero, kchunk, g->d_norms);
    note_launch(g);
}

static unsigned blocks_of(long long n, int threads)
{
    return (unsigned)((n + threads - 1) / threads);
}

/* The grid of mg_shift_kernel and mg_dudt_kernel over level L (blocks of
 * 256 threads); its plane's values, rows included. */
template <typename T> static dim3 plane_grid(const mgd_level<T> &L, long long *pn)
{
    *pn = (long long)L.rp * L.n[1];
    return dim3(blocks_of(*pn, 256), (unsigned)std::min(L.n[2], 65535));
}

/* The grid of a transfer over the columns of a level of n nodes: blocks of
 * 32 x 8 columns, the planes cut into runs so that about 8 blocks per
 * multiprocessor are in flight (at most 65535 runs); the run's length. */
static dim3 column_grid(const int64_t n[3], int sms, int *kchunk)
{
    const long long gx = (n[0] + 31) / 32, gy = (n[1] + 7) / 8;
    long long runs = (8LL * sms + gx * gy - 1) / (gx * gy);
    if (runs < 1) runs = 1;
    if (runs > n[2]) runs = n[2];
    if (runs > 65535) runs = 65535;
    *kchunk = (int)((n[2] + runs - 1) / runs);
    return dim3((unsigned)gx, (unsigned)gy, (unsigned)((n[2] + *kchunk - 1) / *kchunk));
}

template <typename T> static mgd_level<T> *levels_of(cuda_mg *g);
template <> mgd_level<float> *levels_of<float>(cuda_mg *g)
{
    return g->lf;
}
template <> mgd_level<double> *levels_of<double>(cuda_mg *g)
{
    return g->ld;
}
template <typename T> static mgd_level<T> &gbox_of(cuda_mg *g);
template <> mgd_level<float> &gbox_of<float>(cuda_mg *g)
{
    return g->gf;
}
template <> mgd_level<double> &gbox_of<double>(cuda_mg *g)
{
    return g->gd;
}
template <typename T> static mgd_fine<T> &fine_of(cuda_mg *g);
template <> mgd_fine<float> &fine_of<float>(cuda_mg *g)
{
    return g->ff;
}
template <> mgd_fine<double> &fine_of<double>(cuda_mg *g)
{
    return g->fd;
}

template <typename T> static void k_smooth(cuda_mg *g, int l, int s, int zero)
{
    launch_pass<T, P_SMOOTH>(g, levels_of<T>(g)[l], fine_of<T>(g), l == 0, s, zero);
}

/* The restriction's and the prolongation's transfer from F to C (the
 * coarse view given: a split level's box or the next level). */
template <typename T, int TAPS>
static void k_transfer(cuda_mg *g, const mgd_level<T> &F, const mgd_level<T> &C)
{
    const mgd_level<T> &W = TAPS == 3 ? C : F;
    const int64_t n[3] = {W.n[0], W.n[1], W.n[2]};
    int kc = 1;
    const dim3 grid = column_grid(n, g->sms, &kc);
    mg_transfer_kernel<T, TAPS><<<grid, dim3(32, 8), 0, g->stream>>>(F, C, kc);
    note_launch(g);
}

template <typename T> static void k_restrict(cuda_mg *g, int l)
{
    mgd_level<T> *L = levels_of<T>(g);
    launch_pass<T, P_RESID>(g, L[l], fine_of<T>(g), l == 0, 0, 0);
    k_transfer<T, 3>(g, L[l], L[l + 1]);
}

template <typename T> static void k_coarse(cuda_mg *g)
{
    const int l = g->m->levels - 1;
    mgd_level<T> *L = levels_of<T>(g);
    const int nc = (int)g->m->nc;
    if (nc == 0) return;
    if (l == 0) launch_pass<T, P_RESID>(g, L[0], fine_of<T>(g), true, 0, 0);
    mg_coarse_kernel<T><<<blocks_of(nc, 128), 128, 0, g->stream>>>(
        L[l].x0, l == 0 ? L[0].x1 : L[l].b, (const T *)g->cinv_t, g->cidx, nc, l == 0);
    note_launch(g);
}

template <typename T> static void k_prolong(cuda_mg *g, int l)
{
    mgd_level<T> *L = levels_of<T>(g);
    k_transfer<T, 2>(g, L[l], L[l + 1]);
}

static void op_smooth(void *ctx, int l, int s, int zero)
{
    cuda_mg *g = (cuda_mg *)ctx;
    g->is_float ? k_smooth<float>(g, l, s, zero) : k_smooth<double>(g, l, s, zero);
}

static void op_restrict(void *ctx, int l)
{
    cuda_mg *g = (cuda_mg *)ctx;
    g->is_float ? k_restrict<float>(g, l) : k_restrict<double>(g, l);
}

static void op_coarse(void *ctx)
{
    cuda_mg *g = (cuda_mg *)ctx;
    g->is_float ? k_coarse<float>(g) : k_coarse<double>(g);
}

static void op_prolong(void *ctx, int l)
{
    cuda_mg *g = (cuda_mg *)ctx;
    g->is_float ? k_prolong<float>(g, l) : k_prolong<double>(g, l);
}

/* Waits for the stream; the first failed launch or the wait's error. */
int heat_cuda_mg_finish(cuda_mg *g, heat_error *err)
{
    MG_CUDA_CHECK(cudaStreamSynchronize(g->stream));
    const cudaError_t e = g->launch_err;
    g->launch_err = cudaSuccess;
    MG_CUDA_CHECK(e);
    return HEAT_OK;
}

static double bits_value(unsigned long long b)
{
    double v;
    memcpy(&v, &b, sizeof v);
    return v != v ? INFINITY : v;
}

/* The norms pass: max |r| / ((rho c) V) and max |x| of level 0 and, for a
 * singular problem, the exact sum of (rho c) V x into *ws. */
static int norms_pass(cuda_mg *g, double *rmax, double *umax, heat_xsum *ws, heat_error *err)
{
    MG_CUDA_CHECK(cudaMemsetAsync(g->d_norms, 0, sizeof *g->d_norms, g->stream));
    if (g->is_float)
        launch_pass<float, P_NORMS>(g, g->lf[0], g->ff, true, 0, 0);
    else
        launch_pass<double, P_NORMS>(g, g->ld[0], g->fd, true, 0, 0);
    MG_CUDA_CHECK(cudaMemcpyAsync(g->h_norms, g->d_norms, sizeof *g->h_norms,
                                  cudaMemcpyDeviceToHost, g->stream));
    int rc = heat_cuda_mg_finish(g, err);
    if (rc) return rc;
    *rmax = bits_value(g->h_norms->rmax);
    *umax = bits_value(g->h_norms->umax);
    heat_gx_read(&g->h_norms->ws, ws);
    return HEAT_OK;
}

static int op_norms(void *ctx, double *rmax, double *umax, double *wsum, heat_error *err)
{
    heat_xsum ws;
    const int rc = norms_pass((cuda_mg *)ctx, rmax, umax, &ws, err);
    if (!rc) *wsum = heat_xsum_value(&ws);
    return rc;
}

static int op_shift(void *ctx, double delta, heat_error *err)
{
    cuda_mg *g = (cuda_mg *)ctx;
    long long pn = 0;
    if (g->is_float) {
        const mgd_level<float> &L = g->lf[0];
        mg_shift_kernel<float><<<plane_grid(L, &pn), 256, 0, g->stream>>>(
            L.x0, pn, L.n[0], L.rp, mg_plane(L), L.n[2], (float)delta);
    } else {
        const mgd_level<double> &L = g->ld[0];
        mg_shift_kernel<double><<<plane_grid(L, &pn), 256, 0, g->stream>>>(
            L.x0, pn, L.n[0], L.rp, mg_plane(L), L.n[2], delta);
    }
    note_launch(g);
    return heat_cuda_mg_finish(g, err);
}

static int op_rhs(void *ctx, int keep, double *bmax, heat_error *err)
{
    cuda_mg *g = (cuda_mg *)ctx;
    MG_CUDA_CHECK(cudaMemsetAsync(&g->d_norms->bmax, 0, sizeof g->d_norms->bmax, g->stream));
    if (g->is_float) {
        mgd_fine<float> f = g->ff;
        if (!keep) f.keep = nullptr;
        launch_pass<float, P_RHS>(g, g->lf[0], f, true, 0, 0);
    } else {
        mgd_fine<double> f = g->fd;
        if (!keep) f.keep = nullptr;
        launch_pass<double, P_RHS>(g, g->ld[0], f, true, 0, 0);
    }
    MG_CUDA_CHECK(cudaMemcpyAsync(&g->h_norms->bmax, &g->d_norms->bmax, sizeof g->h_norms->bmax,
                                  cudaMemcpyDeviceToHost, g->stream));
    const int rc = heat_cuda_mg_finish(g, err);
    if (!rc) *bmax = bits_value(g->h_norms->bmax);
    return rc;
}

static int op_dudt(void *ctx, double *m, heat_error *err)
{
    cuda_mg *g = (cuda_mg *)ctx;
    long long pn = 0;
    MG_CUDA_CHECK(cudaMemsetAsync(g->d_max, 0, sizeof *g->d_max, g->stream));
    if (g->is_float) {
        const mgd_level<float> &L = g->lf[0];
        mg_dudt_kernel<float><<<plane_grid(L, &pn), 256, 0, g->stream>>>(
            L.x0, g->ff.keep, pn, L.n[0], L.rp, mg_plane(L), L.n[2], g->d_max);
    } else {
        const mgd_level<double> &L = g->ld[0];
        mg_dudt_kernel<double><<<plane_grid(L, &pn), 256, 0, g->stream>>>(
            L.x0, g->fd.keep, pn, L.n[0], L.rp, mg_plane(L), L.n[2], g->d_max);
    }
    note_launch(g);
    MG_CUDA_CHECK(
        cudaMemcpyAsync(g->h_max, g->d_max, sizeof *g->h_max, cudaMemcpyDeviceToHost, g->stream));
    int rc = heat_cuda_mg_finish(g, err);
    if (!rc) *m = bits_value(*g->h_max) / g->m->dt;
    return rc;
}

static int op_cycle(void *ctx, heat_error *err)
{
    cuda_mg *g = (cuda_mg *)ctx;
    MG_CUDA_CHECK(cudaGraphLaunch(g->graph, g->stream));
    return HEAT_OK;
}

/* The kernels one by one (captured into the graph, and timed by the bench). */
extern const heat_mg_ops heat_cuda_mg_launch_ops = {
    op_smooth, op_restrict, op_coarse, op_prolong, op_norms, op_shift, op_rhs, op_dudt, nullptr};
static const heat_mg_ops &launch_ops = heat_cuda_mg_launch_ops;
/* The solver's: the V-cycle as one graph. */
static const heat_mg_ops graph_ops = {op_smooth, op_restrict, op_coarse, op_prolong, op_norms,
                                      op_shift,  op_rhs,      op_dudt,   op_cycle};

/* ---- setup --------------------------------------------------------------------------- */

/* Device memory owned by g: n values of the precision T from doubles
 * (NULL stays NULL), ints from int64, zeros. */
template <typename T>
static int dev_values(cuda_mg *g, const double *src, int64_t n, const T **out, heat_error *err)
{
    *out = nullptr;
    if (!src || n == 0) return HEAT_OK;
    std::vector<T> h((size_t)n);
    for (int64_t i = 0; i < n; i++) h[(size_t)i] = (T)src[i];
    void *p = nullptr;
    MG_CUDA_CHECK(cudaMalloc(&p, (size_t)n * sizeof(T)));
    g->owned.push_back(p);
    MG_CUDA_CHECK(cudaMemcpy(p, h.data(), (size_t)n * sizeof(T), cudaMemcpyHostToDevice));
    *out = (const T *)p;
    return HEAT_OK;
}

/* As dev_values for values per node of the level of n nodes whose rows
 * are rp and planes sz apart (the finest: its row pitch and mg_plane),
 * laid out so: zeros between the rows and the planes. D the device's type
 * (the precision, or bytes), S the host's. */
template <typename D, typename S>
static int dev_planes(cuda_mg *g, const int n[3], int rp, long long sz, const S *src, const D **out,
                      heat_error *err)
{
    *out = nullptr;
    if (!src) return HEAT_OK;
    const int64_t count = (int64_t)n[2] * sz;
    std::vector<D> h((size_t)count, D(0));
    for (int64_t k = 0; k < n[2]; k++)
        for (int64_t j = 0; j < n[1]; j++)
            for (int64_t i = 0; i < n[0]; i++)
                h[(size_t)(k * sz + j * rp + i)] = (D)src[(k * n[1] + j) * n[0] + i];
    void *p = nullptr;
    MG_CUDA_CHECK(cudaMalloc(&p, (size_t)count * sizeof(D)));
    g->owned.push_back(p);
    MG_CUDA_CHECK(cudaMemcpy(p, h.data(), (size_t)count * sizeof(D), cudaMemcpyHostToDevice));
    *out = (const D *)p;
    return HEAT_OK;
}

static int dev_ints(cuda_mg *g, const int64_t *src, int64_t n, const int **out, heat_error *err)
{
    std::vector<int> h((size_t)n);
    for (int64_t i = 0; i < n; i++) h[(size_t)i] = (int)src[i];
    void *p = nullptr;
    MG_CUDA_CHECK(cudaMalloc(&p, (size_t)(n > 0 ? n : 1) * sizeof(int)));
    g->owned.push_back(p);
    MG_CUDA_CHECK(cudaMemcpy(p, h.data(), (size_t)n * sizeof(int), cudaMemcpyHostToDevice));
    *out = (const int *)p;
    return HEAT_OK;
}

template <typename T> static int dev_zeros(cuda_mg *g, int64_t n, T **out, heat_error *err)
{
    void *p = nullptr;
    MG_CUDA_CHECK(cudaMalloc(&p, (size_t)n * sizeof(T)));
    g->owned.push_back(p);
    MG_CUDA_CHECK(cudaMemset(p, 0, (size_t)n * sizeof(T)));
    *out = (T *)p;
    return HEAT_OK;
}

/* One level's view: its axes, coefficients and buffers (level 0: the
 * field's two buffers and b). */
template <typename T>
static int upload_level(cuda_mg *g, const heat_mg *m, int l, void *u, void *v, mgd_level<T> &V,
                        heat_error *err)
{
    const heat_mg_level *L = &m->lv[l];
    memset(&V, 0, sizeof V);
    int rc = HEAT_OK;
    for (int a = 0; a < 3 && !rc; a++) {
        /* the axis's tables over the level's box (a split level's: its
         * ghost layers held) */
        const heat_mg_axis *ax = &L->ax[a];
        const int64_t bn = L->bn[a];
        std::vector<double> tv((size_t)bn), tih((size_t)bn), twp(2 * (size_t)bn),
            twr(3 * (size_t)bn);
        std::vector<int64_t> tpp(2 * (size_t)bn), tpr(3 * (size_t)bn);
        heat_mg_box_axis(m, l, a, tv.data(), tih.data(), twp.data(), twr.data(), tpp.data(),
                         tpr.data());
        V.n[a] = (int)bn;
        V.held[a][0] = L->gl[a] || ax->held[0], V.held[a][1] = L->gh[a] || ax->held[1];
        if (!rc) rc = dev_values<T>(g, tv.data(), bn, &V.v[a], err);
        if (!rc) rc = dev_values<T>(g, tih.data(), bn, &V.ih[a], err);
        if (!rc) rc = dev_values<T>(g, twp.data(), 2 * bn, &V.wp[a], err);
        if (!rc) rc = dev_values<T>(g, twr.data(), 3 * bn, &V.wr[a], err);
        if (!rc) rc = dev_ints(g, tpp.data(), 2 * bn, &V.pp[a], err);
        if (!rc) rc = dev_ints(g, tpr.data(), 3 * bn, &V.pr[a], err);
        if (!rc && l > 0) rc = dev_values<T>(g, L->t[a], L->points, &V.t[a], err);
    }
    if (!rc && l > 0) rc = dev_values<T>(g, L->dg, L->points, &V.dg, err);
    for (int s = 0; s < 2 * HEAT_MG_SWEEPS; s++)
        V.cheb[s][0] = (T)L->cheb[s][0], V.cheb[s][1] = (T)L->cheb[s][1];
    V.rows = l == 0 && u ? g->rows0 : V.n[1];
    V.rp = l == 0 && u ? g->rp0 : V.n[0];
    for (int a = 0; a < 3 && !rc; a++)
        rc = dev_planes<unsigned short>(g, V.n, V.rp, mg_plane(V), L->wq[a], &V.wq[a], err);
    if (rc) return rc;
    if (l == 0 && u) {
        V.x0 = (T *)u, V.x1 = (T *)v;
        return HEAT_OK;
    }
    if (!rc) rc = dev_zeros<T>(g, L->points, &V.x0, err);
    if (!rc) rc = dev_zeros<T>(g, L->points, &V.x1, err);
    if (!rc) rc = dev_zeros<T>(g, L->points, &V.b, err);
    return rc;
}

/* The finest level's tables and arrays, the levels, the coarsest inverse. */
template <typename T>
static int upload(cuda_mg *g, void *u, void *v, const uint8_t *cls, heat_error *err)
{
    const heat_mg *m = g->m;
    mgd_fine<T> &F = fine_of<T>(g);
    mgd_level<T> *L = levels_of<T>(g);
    memset(&F, 0, sizeof F);
    /* a split run: levels below m->gather from m (its level 0 in buffers of
     * its own, u NULL), the box of level m->gather, the rest from the tail */
    const heat_mg *src = g->tail ? g->tail : m;
    const int gl = g->tail ? m->gather : 0;
    int rc = HEAT_OK;
    for (int l = 0; l < m->levels && !rc; l++)
        rc = upload_level<T>(g, l < gl ? m : src, l, u, v, L[l], err);
    if (!rc && g->tail) rc = upload_level<T>(g, m, gl, nullptr, nullptr, gbox_of<T>(g), err);
    if (rc) return rc;
    /* the finest level's arrays, laid out as its field (planes mg_plane(L[0]) apart) */
    const int64_t np = (int64_t)L[0].n[2] * mg_plane(L[0]);
    F.nmat = m->nmat;
    F.wsum = m->singular;
    F.ct = (T)((1.0 - m->theta) / m->theta);
    std::vector<double> rhoc(m->rhoc, m->rhoc + m->nmat), mdt(m->nmat);
    for (int a = 0; a < m->nmat; a++) mdt[a] = m->rhoc[a] / m->dt;
    rc = dev_values<T>(g, m->kf, (int64_t)m->nmat * m->nmat, &F.kf, err);
    if (!rc) rc = dev_values<T>(g, rhoc.data(), m->nmat, &F.rhoc, err);
    if (!rc) rc = dev_values<T>(g, mdt.data(), m->nmat, &F.mdt, err);
    if (!rc) rc = dev_planes<T>(g, L[0].n, L[0].rp, mg_plane(L[0]), m->dg0, &F.dg0, err);
    if (!rc) rc = dev_planes<T>(g, L[0].n, L[0].rp, mg_plane(L[0]), m->b0, &F.b0, err);
    if (!rc && m->implicit) rc = dev_zeros<T>(g, np, &F.keep, err);
    if (!rc && m->cls) {
        /* each node's material, looked up here once rather than by every
         * pass through its class */
        const int64_t pts = (int64_t)L[0].n[0] * L[0].n[1] * L[0].n[2];
        std::vector<unsigned char> mtl((size_t)pts);
        for (int64_t i = 0; i < pts; i++) mtl[(size_t)i] = m->mat[cls[i]];
        rc = dev_planes<unsigned char>(g, L[0].n, L[0].rp, mg_plane(L[0]), mtl.data(), &F.mtl, err);
    }
    if (rc) return rc;
    if (m->implicit) {
        rc = dev_zeros<T>(g, np, &L[0].b, err);
    } else {
        L[0].b = (T *)F.b0;
    }
    /* The inverse by columns; its unknowns' nodes (offsets in the coarsest
     * level's arrays, planes apart as they are). */
    const int64_t nc = src->nc;
    std::vector<double> ct((size_t)(nc * nc));
    for (int64_t r = 0; r < nc; r++)
        for (int64_t q = 0; q < nc; q++) ct[(size_t)(q * nc + r)] = src->cinv[r * nc + q];
    const mgd_level<T> &C = L[m->levels - 1];
    const int64_t cpn = (int64_t)C.n[0] * C.n[1];
    std::vector<int64_t> cidx((size_t)nc);
    for (int64_t q = 0; q < nc; q++)
        cidx[(size_t)q] = src->cidx[q] / cpn * mg_plane(C) + src->cidx[q] % cpn / C.n[0] * C.rp +
                          src->cidx[q] % C.n[0];
    const T *cinv = nullptr;
    if (!rc) rc = dev_values<T>(g, ct.data(), nc * nc, &cinv, err);
    g->cinv_t = (void *)cinv;
    if (!rc) rc = dev_ints(g, cidx.data(), nc, (const int **)&g->cidx, err);
    return rc;
}

/* The V-cycle captured once as a graph. */
static int capture(cuda_mg *g, heat_error *err)
{
    cudaGraph_t graph = nullptr;
    MG_CUDA_CHECK(cudaStreamBeginCapture(g->stream, cudaStreamCaptureModeThreadLocal));
    heat_mg_vcycle(g->m, &launch_ops, g);
    MG_CUDA_CHECK(cudaStreamEndCapture(g->stream, &graph));
    const cudaError_t e = g->launch_err;
    g->launch_err = cudaSuccess;
    cudaError_t ei = cudaGraphInstantiate(&g->graph, graph, 0);
    cudaGraphDestroy(graph);
    MG_CUDA_CHECK(e);
    MG_CUDA_CHECK(ei);
    return HEAT_OK;
}

/* Whether the hierarchy fits in the device's free memory. */
static int check_memory(const cuda_mg *g, heat_error *err)
{
    size_t free_b = 0, total_b = 0;
    MG_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    const heat_mg_level *L0 = &g->m->lv[0];
    /* level 0's arrays (and classes) in the field's padded rows and planes;
     * a split run's level 0 is a box of its own, unpadded (rows0, rp0 its
     * box's) */
    const int64_t rows0 = g->rows0, rp0 = g->rp0;
    const double need = heat_mg_bytes_rows(g->m, g->is_float ? 4 : 8, rp0, rows0) +
                        (g->m->cls ? (double)rp0 * (double)rows0 * (double)L0->bn[2] : 0.0);
    if (need + (64 << 20) > (double)free_b)
        return heat_error_set(err, HEAT_ERUNTIME,
                              "cuda backend: the multigrid levels need %.3f GB, %.3f GB free of "
                              "%.3f GB: use a smaller grid, float precision or backend = \"cpu\"",
                              need / 1e9, (double)free_b / 1e9, (double)total_b / 1e9);
    return HEAT_OK;
}

/* A new state for c on `stream`: the device's multiprocessors and
 * HEAT_CUDA_MG_POINT and HEAT_CUDA_MG_PAIR read; NULL when out of memory. */
static cuda_mg *new_cuda_mg(const heat_case *c, cudaStream_t stream)
{
    cuda_mg *g = new (std::nothrow) cuda_mg();
    if (!g) return nullptr;
    g->c = *c;
    g->stream = stream;
    g->is_float = c->solver.precision == HEAT_FLOAT;
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&g->sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
        g->sms = 1;
    const char *pt = getenv("HEAT_CUDA_MG_POINT");
    g->point_l0 = pt && *pt && strcmp(pt, "0") != 0;
    const char *pr = getenv("HEAT_CUDA_MG_PAIR");
    g->pair_l0 = pr && !strcmp(pr, "1") ? 1 : pr && !strcmp(pr, "0") ? 0 : -1;
    return g;
}

/* The norms' device and host slots. */
static int alloc_norms(cuda_mg *g, heat_error *err)
{
    MG_CUDA_CHECK(cudaMalloc(&g->d_norms, sizeof *g->d_norms));
    MG_CUDA_CHECK(cudaMallocHost(&g->h_norms, sizeof *g->h_norms));
    MG_CUDA_CHECK(cudaMalloc(&g->d_max, sizeof *g->d_max));
    MG_CUDA_CHECK(cudaMallocHost(&g->h_max, sizeof *g->h_max));
    return HEAT_OK;
}

int heat_cuda_mg_create(const heat_case *c, void *u, void *v, int64_t rp, int64_t rows,
                        cudaStream_t stream, const uint8_t *cls, const heat_coeffs *k,
                        cuda_mg **out, heat_error *err)
{
    *out = nullptr;
    cuda_mg *g = new_cuda_mg(c, stream);
    if (!g) return heat_error_set(err, HEAT_ERUNTIME, "cuda backend: out of memory");
    g->rows0 = (int)rows, g->rp0 = (int)rp;
    int rc = heat_mg_build(c, cls, k, &g->m, err);
    if (!rc) rc = check_memory(g, err);
    if (!rc)
        rc = g->is_float ? upload<float>(g, u, v, cls, err) : upload<double>(g, u, v, cls, err);
    if (!rc) rc = alloc_norms(g, err);
    if (!rc) {
        heat_mg_drop_arrays(g->m);
        /* the memsets of the setup ran on the default stream */
        const cudaError_t e = cudaDeviceSynchronize();
        rc = e == cudaSuccess ? capture(g, err)
                              : heat_error_set(err, HEAT_ERUNTIME, "cuda multigrid: setup: %s",
                                               cudaGetErrorString(e));
    }
    if (rc) {
        heat_cuda_mg_destroy(g);
        return rc;
    }
    *out = g;
    return HEAT_OK;
}

/* ---- a split run (kernels/mg.h): halos through host memory ------------------------ */

/* heat_mg_copy_fn: box b of a level on the device (plan p's layout) to the
 * host buffer or back, on the stream (a copy to the host waited for). */
static int dev_copy_box(void *ctx, const heat_halo_plan *p, const hbox *b, size_t vs, void *level,
                        void *buf, int to_buf, heat_error *err)
{
    cuda_mg *g = (cuda_mg *)ctx;
    cudaMemcpy3DParms q;
    memset(&q, 0, sizeof q);
    const size_t w = (size_t)(b->hi[0] - b->lo[0]), h = (size_t)(b->hi[1] - b->lo[1]),
                 d = (size_t)(b->hi[2] - b->lo[2]);
    const cudaPitchedPtr dev =
        make_cudaPitchedPtr(level, (size_t)p->sy * vs, (size_t)p->ext[0], (size_t)p->ext[1]);
    const cudaPitchedPtr host = make_cudaPitchedPtr(buf, w * vs, w, h);
    const cudaPos at = make_cudaPos((size_t)b->lo[0] * vs, (size_t)b->lo[1], (size_t)b->lo[2]);
    if (to_buf) {
        q.srcPtr = dev, q.srcPos = at, q.dstPtr = host, q.kind = cudaMemcpyDeviceToHost;
    } else {
        q.srcPtr = host, q.dstPtr = dev, q.dstPos = at, q.kind = cudaMemcpyHostToDevice;
    }
    q.extent = make_cudaExtent(w * vs, h, d);
    MG_CUDA_CHECK(cudaMemcpy3DAsync(&q, g->stream));
    return HEAT_OK; /* a copy to the host is waited for by dev_flush */
}

/* heat_mg_xchg's wait: the phase's copies to the host (and the last
 * exchange's copies from it) done. */
static int dev_flush(void *ctx, heat_error *err)
{
    MG_CUDA_CHECK(cudaStreamSynchronize(((cuda_mg *)ctx)->stream));
    return HEAT_OK;
}

/* heat_mg_xchg's buffers: page-locked, so that the copies run as DMA. */
static void *pinned_alloc(void *actx, size_t bytes)
{
    (void)actx;
    void *p = nullptr;
    return cudaMallocHost(&p, bytes) == cudaSuccess ? p : nullptr;
}

static void pinned_free(void *actx, void *p)
{
    (void)actx;
    cudaFreeHost(p);
}

/* An exchange inside a cycle, whose kernels return nothing: the first
 * failure is kept and ends the cycle's exchanges. */
static void xg(cuda_mg *g, int l, void *a)
{
    if (!g->split_rc)
        g->split_rc = heat_mg_xchg_run(&g->xchg, g->m, l, a, g->is_float ? 4 : 8, dev_copy_box, g,
                                       &g->split_err);
}

static void split_fail(cuda_mg *g, cudaError_t e, const char *what)
{
    if (e != cudaSuccess && !g->split_rc)
        g->split_rc = heat_error_set(&g->split_err, HEAT_ERUNTIME, "cuda multigrid: %s: %s", what,
                                     cudaGetErrorString(e));
}

template <typename T> static T *xbuf(cuda_mg *g, int l, int i)
{
    mgd_level<T> &L = levels_of<T>(g)[l];
    return i ? L.x1 : L.x0;
}

static void sop_smooth(void *ctx, int l, int s, int zero)
{
    cuda_mg *g = (cuda_mg *)ctx;
    if (l < g->m->gather && !(zero && s == 0))
        xg(g, l,
           g->is_float ? (void *)xbuf<float>(g, l, s % 2) : (void *)xbuf<double>(g, l, s % 2));
    op_smooth(ctx, l, s, zero);
}

/* The whole level m->gather on every rank: its box's b gathered from the
 * ranks (restriction), or its x scattered into the box (prolongation). */
template <typename T> static void gather_b(cuda_mg *g)
{
    const int G = g->m->gather;
    const heat_mg_level *lv = &g->m->lv[G];
    const size_t box = (size_t)lv->points * sizeof(T),
                 full = (size_t)(lv->n[0] * lv->n[1] * lv->n[2]) * sizeof(T);
    g->hbox.resize(box), g->hfull.resize(full);
    split_fail(
        g, cudaMemcpyAsync(g->hbox.data(), gbox_of<T>(g).b, box, cudaMemcpyDeviceToHost, g->stream),
        "gathering a level");
    split_fail(g, cudaStreamSynchronize(g->stream), "gathering a level");
    if (!g->split_rc)
        g->split_rc = heat_mg_gather(g->m, &g->dist, G, sizeof(T), g->hbox.data(), g->hfull.data(),
                                     &g->split_err);
    if (!g->split_rc)
        split_fail(g,
                   cudaMemcpyAsync(levels_of<T>(g)[G].b, g->hfull.data(), full,
                                   cudaMemcpyHostToDevice, g->stream),
                   "gathering a level");
}

template <typename T> static void scatter_x(cuda_mg *g)
{
    const int G = g->m->gather;
    const heat_mg_level *lv = &g->m->lv[G];
    const size_t box = (size_t)lv->points * sizeof(T),
                 full = (size_t)(lv->n[0] * lv->n[1] * lv->n[2]) * sizeof(T);
    g->hbox.resize(box), g->hfull.resize(full);
    split_fail(g,
               cudaMemcpyAsync(g->hfull.data(), levels_of<T>(g)[G].x0, full, cudaMemcpyDeviceToHost,
                               g->stream),
               "scattering a level");
    split_fail(g, cudaStreamSynchronize(g->stream), "scattering a level");
    if (g->split_rc) return;
    heat_mg_scatter(g->m, G, sizeof(T), g->hfull.data(), g->hbox.data());
    split_fail(
        g,
        cudaMemcpyAsync(gbox_of<T>(g).x0, g->hbox.data(), box, cudaMemcpyHostToDevice, g->stream),
        "scattering a level");
}

template <typename T> static void s_restrict(cuda_mg *g, int l)
{
    const int G = g->m->gather;
    mgd_level<T> *L = levels_of<T>(g);
    if (l >= G) return k_restrict<T>(g, l);
    xg(g, l, L[l].x0);
    launch_pass<T, P_RESID>(g, L[l], fine_of<T>(g), l == 0, 0, 0);
    xg(g, l, L[l].x1);
    if (l + 1 < G) return k_transfer<T, 3>(g, L[l], L[l + 1]);
    k_transfer<T, 3>(g, L[l], gbox_of<T>(g));
    gather_b<T>(g);
}

template <typename T> static void s_prolong(cuda_mg *g, int l)
{
    const int G = g->m->gather;
    mgd_level<T> *L = levels_of<T>(g);
    if (l >= G) return k_prolong<T>(g, l);
    if (l + 1 < G) {
        xg(g, l + 1, L[l + 1].x0);
        return k_transfer<T, 2>(g, L[l], L[l + 1]);
    }
    scatter_x<T>(g);
    k_transfer<T, 2>(g, L[l], gbox_of<T>(g));
}

static void sop_restrict(void *ctx, int l)
{
    cuda_mg *g = (cuda_mg *)ctx;
    g->is_float ? s_restrict<float>(g, l) : s_restrict<double>(g, l);
}

static void sop_prolong(void *ctx, int l)
{
    cuda_mg *g = (cuda_mg *)ctx;
    g->is_float ? s_prolong<float>(g, l) : s_prolong<double>(g, l);
}

/* Level 0's ghosts made current, for a pass that reads them; its maxima
 * then include the ghosts, copies of the neighbours' own values, so the
 * largest over the ranks is the one-process value. */
static int level0_current(cuda_mg *g, heat_error *err)
{
    xg(g, 0, g->is_float ? (void *)xbuf<float>(g, 0, 0) : (void *)xbuf<double>(g, 0, 0));
    if (g->split_rc) {
        *err = g->split_err;
        const int rc = g->split_rc;
        g->split_rc = HEAT_OK;
        return rc;
    }
    return HEAT_OK;
}

static int sop_norms(void *ctx, double *rmax, double *umax, double *wsum, heat_error *err)
{
    cuda_mg *g = (cuda_mg *)ctx;
    heat_xsum ws;
    int rc = level0_current(g, err);
    if (!rc) rc = norms_pass(g, rmax, umax, &ws, err);
    if (rc) return rc;
    double v[2] = {*rmax, *umax};
    g->xchg.comm.reduce(g->xchg.comm.ctx, v, 2, 0);
    *rmax = v[0], *umax = v[1];
    *wsum = 0;
    if (!g->m->singular) return HEAT_OK;
    /* the ranks' exact sums (their nodes not held: ghosts are held on the
     * GPU's views, as in the CPU's) merged exactly */
    double limbs[HEAT_XSUM_LIMBS + 1];
    heat_xsum_limbs_out(&ws, limbs);
    g->xchg.comm.reduce(g->xchg.comm.ctx, limbs, HEAT_XSUM_LIMBS + 1, 1);
    heat_xsum_limbs_in(&ws, limbs);
    *wsum = heat_xsum_value(&ws);
    return HEAT_OK;
}

static int sop_rhs(void *ctx, int keep, double *bmax, heat_error *err)
{
    cuda_mg *g = (cuda_mg *)ctx;
    int rc = level0_current(g, err);
    if (!rc) rc = op_rhs(ctx, keep, bmax, err);
    if (!rc) g->xchg.comm.reduce(g->xchg.comm.ctx, bmax, 1, 0);
    return rc;
}

static int sop_dudt(void *ctx, double *m, heat_error *err)
{
    cuda_mg *g = (cuda_mg *)ctx;
    int rc = level0_current(g, err);
    if (!rc) rc = op_dudt(ctx, m, err);
    if (!rc) g->xchg.comm.reduce(g->xchg.comm.ctx, m, 1, 0);
    return rc;
}

static int sop_cycle(void *ctx, heat_error *err);

static const heat_mg_ops split_ops = {sop_smooth, sop_restrict, op_coarse, sop_prolong, sop_norms,
                                      op_shift,   sop_rhs,      sop_dudt,  sop_cycle};

/* One V-cycle kernel by kernel with its exchanges (no graph: the halos
 * go through MPI between kernels). */
static int sop_cycle(void *ctx, heat_error *err)
{
    cuda_mg *g = (cuda_mg *)ctx;
    heat_mg_vcycle(g->m, &split_ops, g);
    int rc = heat_cuda_mg_finish(g, err);
    if (!rc && g->split_rc) {
        *err = g->split_err;
        rc = g->split_rc;
        g->split_rc = HEAT_OK;
    }
    return rc;
}

int heat_cuda_mg_create_part(const heat_case *c, const heat_part *part, const heat_halo_comm *comm,
                             cudaStream_t stream, const uint8_t *cls0, const uint8_t *clsw,
                             const int64_t clo[3], const int64_t cn[3], const heat_coeffs *k,
                             cuda_mg **out, heat_error *err)
{
    *out = nullptr;
    cuda_mg *g = new_cuda_mg(c, stream);
    if (!g) return heat_error_set(err, HEAT_ERUNTIME, "cuda backend: out of memory");
    heat_mg_xchg_init(&g->xchg, c, part, comm, &g->dist);
    int rc = heat_mg_build_part(c, &g->dist, clsw, clo, cn, k, &g->m, &g->tail, err);
    if (!rc) /* level 0's own buffers over its box, unpadded */
        g->rows0 = (int)g->m->lv[0].bn[1], g->rp0 = (int)g->m->lv[0].bn[0];
    heat_mg_xchg_clear(&g->xchg);
    /* the cycle's exchanges: GPU memory through page-locked buffers (the
     * build's, of host arrays, ran through plain ones, freed here) */
    heat_mg_xchg_free(&g->xchg);
    g->xchg.alloc = pinned_alloc, g->xchg.release = pinned_free, g->xchg.flush = dev_flush;
    if (!rc) rc = check_memory(g, err);
    if (!rc)
        rc = g->is_float ? upload<float>(g, nullptr, nullptr, g->m->cls ? cls0 : nullptr, err)
                         : upload<double>(g, nullptr, nullptr, g->m->cls ? cls0 : nullptr, err);
    if (!rc) rc = alloc_norms(g, err);
    if (!rc && cudaDeviceSynchronize() != cudaSuccess)
        rc = heat_error_set(err, HEAT_ERUNTIME, "cuda multigrid: setup: %s",
                            cudaGetErrorString(cudaGetLastError()));
    if (rc) {
        heat_cuda_mg_destroy(g);
        return rc;
    }
    heat_mg_drop_arrays(g->m);
    heat_mg_drop_arrays(g->tail);
    *out = g;
    return HEAT_OK;
}

void heat_cuda_mg_halo_stats(const cuda_mg *g, heat_halo_stats *st)
{
    heat_halo_stats_add(st, &g->xchg.st);
}

void heat_cuda_mg_level0(cuda_mg *g, void **x0, void **x1, int64_t bn[3], int gl[3])
{
    const heat_mg_level *L = &g->m->lv[0];
    *x0 = g->is_float ? (void *)g->lf[0].x0 : (void *)g->ld[0].x0;
    *x1 = g->is_float ? (void *)g->lf[0].x1 : (void *)g->ld[0].x1;
    for (int a = 0; a < 3; a++) bn[a] = L->bn[a], gl[a] = L->gl[a];
}

void heat_cuda_mg_destroy(cuda_mg *g)
{
    if (!g) return;
    cudaStreamSynchronize(g->stream);
    if (g->graph) cudaGraphExecDestroy(g->graph);
    for (void *p : g->owned) cudaFree(p);
    cudaFree(g->d_norms);
    cudaFreeHost(g->h_norms);
    cudaFree(g->d_max);
    cudaFreeHost(g->h_max);
    for (int i = 0; i < HEAT_MG_MARKS; i++)
        if (g->ev[i]) cudaEventDestroy(g->ev[i]);
    cudaGetLastError();
    heat_mg_free(g->m);
    heat_mg_free(g->tail);
    heat_mg_xchg_free(&g->xchg);
    delete g;
}

int heat_cuda_mg_advance(cuda_mg *g, int64_t steps, double *residual, heat_error *err)
{
    if (g->tail) {
        if (g->m->implicit)
            return heat_mg_implicit(g->m, &split_ops, g, &g->st, steps, residual, err);
        return heat_mg_steady(g->m, &split_ops, g, &g->st, steps, residual, err);
    }
    if (g->m->implicit) return heat_mg_implicit(g->m, &graph_ops, g, &g->st, steps, residual, err);
    return heat_mg_steady(g->m, &graph_ops, g, &g->st, steps, residual, err);
}

void heat_cuda_mg_info(const cuda_mg *g, heat_mg_info *info)
{
    heat_mg_fill_info(g->m, &g->st, info);
}

/* ---- mixed precision: float cycles on the double residual -------------------------- */

__global__ void mg_narrow_kernel(const double *r, float *b, long long n)
{
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) b[i] = (float)r[i];
}

__global__ void mg_widen_add_kernel(double *x, const float *e, long long n)
{
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] + (double)e[i];
}

int heat_cuda_mg_mixed(cuda_mg *g, double rel, int *cycles, int *inner_out, double *sec,
                       double *reduction, heat_error *err)
{
    *cycles = 0, *inner_out = 0, *sec = 0, *reduction = 0;
    const heat_mg *m = g->m;
    if (g->is_float || g->c.d.general || m->implicit || m->singular || g->point_l0) return HEAT_OK;
    /* the float level 0's buffers are laid out as the double's (the same
     * row and plane strides, in values: heat_mg_gpu_row_pitch makes whole
     * groups of either): narrowed and widened value by value, pads included */
    const long long np = (long long)g->ld[0].n[2] * mg_plane(g->ld[0]);
    heat_case cf = g->c;
    cf.solver.precision = HEAT_FLOAT;
    float *uf = nullptr, *vf = nullptr, *bf = nullptr;
    cuda_mg *gf = nullptr;
    MG_CUDA_CHECK(cudaMalloc(&uf, (size_t)np * sizeof(float)));
    cudaError_t e = cudaMalloc(&vf, (size_t)np * sizeof(float));
    if (e == cudaSuccess) e = cudaMalloc(&bf, (size_t)np * sizeof(float));
    if (e == cudaSuccess) e = cudaMemset(uf, 0, (size_t)np * sizeof(float));
    if (e == cudaSuccess) e = cudaMemset(vf, 0, (size_t)np * sizeof(float));
    int rc = e == cudaSuccess
                 ? HEAT_OK
                 : heat_error_set(err, HEAT_ERUNTIME, "cuda multigrid: %s", cudaGetErrorString(e));
    if (!rc)
        rc = heat_cuda_mg_create(&cf, uf, vf, g->ld[0].rp, g->ld[0].rows, g->stream, nullptr,
                                 nullptr, &gf, err);
    if (!rc) {
        /* the float hierarchy solves A e = r: its finest right-hand side is
         * the narrowed residual (held nodes keep a zero correction) */
        gf->lf[0].b = bf;
        cudaGraphExecDestroy(gf->graph);
        gf->graph = nullptr;
        rc = capture(gf, err);
    }
    double r0 = 0, r = 0, umax, wsum;
    if (!rc) rc = op_norms(g, &r0, &umax, &wsum, err);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    const unsigned blocks = blocks_of(np, 256);
    /* float V-cycles per correction: 2 measured fastest (docs/PERFORMANCE.md);
     * HEAT_CUDA_MG_MIXED_INNER sets it, for comparing */
    const char *in = getenv("HEAT_CUDA_MG_MIXED_INNER");
    const int inner = in && atoi(in) >= 1 ? atoi(in) : 2;
    *inner_out = inner;
    for (int n = 0; !rc && n < 200;) {
        launch_pass<double, P_RESID>(g, g->ld[0], g->fd, true, 0, 0); /* r into x1 */
        mg_narrow_kernel<<<blocks, 256, 0, g->stream>>>(g->ld[0].x1, bf, np);
        note_launch(g);
        e = cudaMemsetAsync(uf, 0, (size_t)np * sizeof(float), g->stream);
        for (int i = 0; i < inner && e == cudaSuccess; i++)
            e = cudaGraphLaunch(gf->graph, g->stream);
        if (e != cudaSuccess) {
            rc = heat_error_set(err, HEAT_ERUNTIME, "cuda multigrid: %s", cudaGetErrorString(e));
            break;
        }
        mg_widen_add_kernel<<<blocks, 256, 0, g->stream>>>(g->ld[0].x0, uf, np);
        note_launch(g);
        rc = op_norms(g, &r, &umax, &wsum, err);
        *cycles = ++n;
        if (!(r > rel * r0)) break;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *sec = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    *reduction = r0 > 0 ? r / r0 : 0;
    heat_cuda_mg_destroy(gf);
    cudaFree(uf);
    cudaFree(vf);
    cudaFree(bf);
    return rc;
}

/* ---- heat bench --multigrid --------------------------------------------------------- */
