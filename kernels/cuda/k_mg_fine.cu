/* The finest multigrid level's stencil passes (the smoother's sweeps, the
 * residual and the norms of a cycle's stop test) in the register-tiled
 * style of the explicit sweep (k_register.cu):
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
 *   the z widths of the next plane are read a plane ahead;
 * - mg_fine_pair_kernel, the same with two planes an iteration (two nodes'
 *   chains of operations side by side, a barrier for two planes): the
 *   double sweeps' kernel of one material (launch_vx says which runs where);
 * - several materials (up to MG_FINE_NMAT): the level holds each node's
 *   material as a byte (k_mg.cu maps the classes once). The column's
 *   materials in planes k - 1, k and k + 1 ride along z in registers, and
 *   those of its row's neighbours are read a plane ahead; blocks run fewer
 *   planes (mt_chunk). A thread's conductivities are kept as above, for
 *   the materials of its group and of their six neighbours as well, made
 *   again from a table of the pairs' conductivities staged in shared
 *   memory only where those materials change along z (MG_KEPT: a node
 *   costs what it costs with one material, but at interfaces); or, for
 *   double on one value a thread, where those materials' registers spill,
 *   the faces' geometry is kept and each node looks its conductivities up
 *   in the table (MG_LOOKUP).
 *
 * Values and order are mg_pass_kernel's (k_mg.cu) and the CPU's
 * (cpu/cpu_mg.inc): the operator is kernels/mg_point.inc, the kept sum of
 * the conductivities is the same five additions that every node's diagonal
 * starts with, and the sweep's weight c1 / diag is kept with them where the
 * diagonal has no mass term (a steady solve) and one material, so a node
 * costs no division. tests/test_gpu_mg.c compares the fields bit for bit.
 */
#include <cuda_pipeline.h>
#include <stdlib.h>
#include <string.h>

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

/* Plane k held (a Dirichlet face along z). */
template <typename T> static __device__ __forceinline__ bool zheld(const mgd_level<T> &L, int k)
{
    const bool h0 = L.held[2][0], h1 = L.held[2][1]; /* read unconditionally: no branches */
    return (k == 0 && h0) || (k == L.n[2] - 1 && h1);
}

/* What a thread copies into a ring plane (its row ty + 1, its group at
 * column col of the shared row), wrapped into the grid: where rows are
 * packed (rp = n0, a multiple of VX when VX > 1) the node after a row's
 * last is its periodic neighbour; past the nodes of a padded row (rp > n0)
 * the pads, or any values of the row (none is a node's input); and its
 * halo role: a group of the row below or above the tile, or the value left
 * or right of a tile row, the right one of a row's last tile its node 0
 * (the x+ neighbour of node n0 - 1, as cpu_mg.inc wraps on every face; see
 * mg_fine_group::rows). */
template <typename T, int VX, int BXT, int BP> struct mg_fine_copy {
    static constexpr int BX = BXT * VX, ROWS = BP + 2, RS = BX + 2 * VX;
    long long own, hoff;
    int ty, col, hrole, hrow, hcol;

    __device__ __forceinline__ mg_fine_copy(int n0, int n1, int rp, int x0, int p0, int ig, int j)
    {
        const int tx = threadIdx.x, tid = tx + BXT * threadIdx.y;
        ty = threadIdx.y;
        col = VX + tx * VX;
        own = (long long)(j % n1) * rp + ig % rp;
        hrole = hrow = hcol = 0;
        hoff = 0;
        if (tid < 2 * BXT) {
            const int r = tid / BXT, g = tid % BXT;
            const int hj = r ? (p0 + BP) % n1 : (p0 == 0 ? n1 - 1 : p0 - 1);
            hrole = 1;
            hrow = r ? ROWS - 1 : 0;
            hcol = VX + g * VX;
            hoff = (long long)hj * rp + (x0 + g * VX) % rp;
        } else if (tid - 2 * BXT < 2 * BP) {
            const int t = tid - 2 * BXT, r = t / 2, side = t % 2;
            const int hx = side ? (x0 + BX < n0 ? x0 + BX : 0) : (x0 == 0 ? n0 - 1 : x0 - 1);
            hrole = 2;
            hrow = r + 1;
            hcol = side ? VX + BX : VX - 1;
            hoff = (long long)((p0 + r) % n1) * rp + hx;
        }
    }
    /* this thread's part of the plane at src into the ring plane pl */
    __device__ __forceinline__ void issue(T (*pl)[RS], const T *src) const
    {
        __pipeline_memcpy_async(&pl[ty + 1][col], src + own, VX * sizeof(T));
        if (hrole == 1)
            __pipeline_memcpy_async(&pl[hrow][hcol], src + hoff, VX * sizeof(T));
        else if (hrole == 2)
            __pipeline_memcpy_async(&pl[hrow][hcol], src + hoff, sizeof(T));
    }
};

/* A group's values at one plane: the pass's inputs besides the field
 * (zeros where it reads none), the field at the group's nodes and their
 * neighbours (left of the first node, right of the last, the groups of the
 * rows and planes beside). */
template <typename T, int VX> struct mg_fine_in {
    hk_vec<T, VX> b, d, p;
    hk_vec<T, VX> w; /* a sweep's weights c1 / diag, where worked out before nodes() */
    hk_vec<T, VX> cur, ym, yp, zm, zp;
    T left, right;
    /* several materials (MT): the materials of the group's nodes and of
     * their neighbours as the field's above, VX bytes packed in a word (byte
     * e: node e), the row's left and right neighbours' alone */
    unsigned kc, kym, kyp, kzm, kzp, kl, kr;

    /* node e's neighbours in mg_point.inc's order: x-, x+, y-, y+, z-, z+ */
    __device__ __forceinline__ void around(int e, T nb[6]) const
    {
        nb[0] = e > 0 ? cur.v[e - 1] : left, nb[1] = e < VX - 1 ? cur.v[e + 1] : right;
        nb[2] = ym.v[e], nb[3] = yp.v[e], nb[4] = zm.v[e], nb[5] = zp.v[e];
    }
};

/* VX material bytes from q (q's offset a multiple of VX: rows and planes
 * of a multiple of VX nodes, the array at the start of an allocation). */
template <int VX> static __device__ __forceinline__ unsigned mtl_word(const unsigned char *q)
{
    if constexpr (VX == 4)
        return __ldg(reinterpret_cast<const unsigned *>(q));
    else if constexpr (VX == 2)
        return __ldg(reinterpret_cast<const unsigned short *>(q));
    else
        return __ldg(q);
}

/* byte e of a packed word */
static __device__ __forceinline__ int mtl_byte(unsigned w, int e)
{
    return (int)((w >> (8 * e)) & 0xffu);
}

/* How a group's conductivities come about: one material (MG_ONE), several
 * with each node's looked up in every pass (MG_LOOKUP), or several kept
 * while the materials around the group stay the same (MG_KEPT). */
enum { MG_ONE = 0, MG_LOOKUP = 1, MG_KEPT = 2 };

/* A thread's part of a pass, what both kernels below share: its group of
 * VX nodes (x ig .. ig + VX - 1 of row j), which of them the pass writes,
 * the conductivities kept for the z widths (cvz, cikm, cik) and the norms
 * so far. */
template <typename T, int PASS, bool DG, int VX, int MT = MG_ONE> struct mg_fine_group {
    int n0, ig, jj, ty, col;
    bool rowin, grpin, allact, act[VX]; /* in the grid and not held (before z) */
    T c0, c1;
    bool up;
    /* Per node e of the group, field f: 0 .. 5 the conductivities t, 6 what
     * the pass needs besides: the sweep's weight c1 / diag where diag is
     * their sum (no mass term: dg0 NULL), their sum ts (a sweep with one),
     * or rho c ((x width * y width) * z width), the norms' rho c V; made
     * for the plane z widths (cvz, cikm, cik). The axes' tables are read
     * again when a plane's widths differ (the z faces' planes), or
     * (MG_KEPT) when the materials around the group differ from those of
     * kk. MG_LOOKUP keeps the faces' geometry in 0 .. 5 (mg_point.inc's
     * heat_mg_face_geometry), which a node multiplies by its pair's
     * conductivity (heat_mg_face_k), and the volume (x width * y width) *
     * z width in 6. */
    T tc[7][VX];
    T cvz, cikm, cik;
    bool have;
    unsigned long long rm, um;
    /* a singular problem's sum of (rho c) V x (wsum) */
    bool wsum;
    heat_gx_win ws;
    /* The norms: the largest |r| of each node of the group since the
     * divisor rho c V last changed (its bits), folded into rm as
     * |r| / (rho c V) when it changes and at the end: division rounds
     * monotonically, so this is the largest quotient, without a division
     * per node. */
    unsigned long long rmx[VX];
    /* MT: the staged face conductivities kf[a * nm + b], rho c by
     * material; the materials of the group's column in planes k - 1, k,
     * k + 1 (zw), carried along z, and of its neighbours in the rows beside
     * and left and right in the next plane (nw), read a plane ahead; the
     * offsets of those neighbours */
    const T *kfs, *rhoc;
    int nm;
    unsigned zw[3], nw[4], kk[7]; /* kk: the materials of the kept conductivities (keep) */
    long long dym, dyp;
    int dl, dr;
    /* On a padded row (rp > n0), the group of node n0 - 1: that node's x+
     * neighbour is node 0 (cpu_mg.inc wraps on every face; where x is not
     * periodic the face's conductivity is 0, and only node 0's value gives
     * the CPU's bits), not the pad after it (rows(), materials()). */
    bool wrapfix;

    __device__ __forceinline__ mg_fine_group(const mgd_level<T> &L, const mgd_fine<T> &F, int sweep,
                                             int ig_, int j)
    {
        n0 = L.n[0];
        const int n1 = L.n[1];
        ig = ig_, ty = threadIdx.y, col = VX + threadIdx.x * VX;
        rowin = j < n1, grpin = ig < n0;
        jj = rowin ? j : 0;
        const bool yh0 = L.held[1][0], yh1 = L.held[1][1], xh0 = L.held[0][0], xh1 = L.held[0][1];
        const bool rowheld = (jj == 0 && yh0) || (jj == n1 - 1 && yh1);
        allact = rowin && !rowheld;
#pragma unroll
        for (int e = 0; e < VX; e++) {
            const int i = ig + e;
            act[e] = rowin && !rowheld && i < n0 && !((i == 0 && xh0) || (i == n0 - 1 && xh1));
            allact = allact && act[e];
        }
        c0 = L.cheb[sweep][0], c1 = L.cheb[sweep][1];
        up = c0 != T(0);
        cvz = cikm = cik = 0;
        have = false;
        rm = um = 0;
        wsum = PASS == P_NORMS && F.wsum;
        if (wsum) heat_gx_begin(); /* every thread, F.wsum the same for all */
#pragma unroll
        for (int e = 0; e < VX; e++) rmx[e] = 0;
        kfs = rhoc = nullptr, nm = 0;
        zw[0] = zw[1] = zw[2] = 0;
        nw[0] = nw[1] = nw[2] = nw[3] = 0;
#pragma unroll
        for (int q = 0; q < 7; q++) kk[q] = 0;
        dym = (long long)(wrapm(jj, n1) - jj) * L.rp, dyp = (long long)(wrapp(jj, n1) - jj) * L.rp;
        wrapfix = L.rp != n0 && ig < n0 && n0 <= ig + VX;
        dl = ig == 0 ? n0 - 1 : -1;
        dr = ig + VX >= n0 ? -(ig + VX - 1) : 1;
    }

    /* MT: the materials of the group's column in planes k0 - 1, k0, k0 + 1
     * (wrapped into the grid; colp the column's offset in a plane) */
    __device__ __forceinline__ void zstart(const mgd_fine<T> &F, int k0, int n2, long long sz,
                                           long long colp)
    {
        if (!MT || !(rowin && grpin)) return;
        zw[0] = mtl_word<VX>(F.mtl + (long long)wrapm(k0, n2) * sz + colp);
        zw[1] = mtl_word<VX>(F.mtl + (long long)k0 * sz + colp);
        zw[2] = mtl_word<VX>(F.mtl + (long long)wrapp(k0, n2) * sz + colp);
        beside(F, (long long)k0 * sz + colp);
    }

    /* MT: the materials beside the group's nodes of offset p into nw */
    __device__ __forceinline__ void beside(const mgd_fine<T> &F, long long p)
    {
        nw[0] = mtl_word<VX>(F.mtl + p + dym);
        nw[1] = mtl_word<VX>(F.mtl + p + dyp);
        nw[2] = __ldg(F.mtl + p + dl);
        nw[3] = __ldg(F.mtl + p + (VX - 1) + dr);
    }

    /* MT: plane k's materials into in, and on to plane k + 1: its
     * neighbours' and plane k + 2's read (k1: the run's end) */
    __device__ __forceinline__ void materials(mg_fine_in<T, VX> &in, const mgd_fine<T> &F, int k,
                                              int k1, int n2, long long sz, long long colp)
    {
        in.kzm = zw[0], in.kc = zw[1], in.kzp = zw[2];
        in.kym = nw[0], in.kyp = nw[1], in.kl = nw[2], in.kr = nw[3];
        if (wrapfix && n0 < ig + VX) { /* node n0 - 1's right: node 0's material (kr) */
            const int sh = 8 * (n0 - ig);
            in.kc = (in.kc & ~(0xffu << sh)) | (in.kr << sh);
        }
        zw[0] = zw[1], zw[1] = zw[2];
        if (rowin && grpin && k + 1 < k1) {
            zw[2] = mtl_word<VX>(F.mtl + (long long)wrapp(k + 1, n2) * sz + colp);
            beside(F, (long long)(k + 1) * sz + colp);
        }
    }

    __device__ __forceinline__ bool kept(T vz, T ikm, T ik) const
    {
        return have && same_bits(vz, cvz) && same_bits(ikm, cikm) && same_bits(ik, cik);
    }

    __device__ __forceinline__ void fold()
    {
        if constexpr (MT != MG_LOOKUP) { /* MG_LOOKUP: nodes() divides by each rho c V */
#pragma unroll
            for (int e = 0; e < VX; e++) {
                rm = max(rm, abs_bits((T)__longlong_as_double((long long)rmx[e]) / tc[6][e]));
                rmx[e] = 0;
            }
        }
    }

    /* MT: the materials in `in` those the conductivities were made for */
    __device__ __forceinline__ bool same_materials(const mg_fine_in<T, VX> &in) const
    {
        return in.kc == kk[0] && in.kym == kk[1] && in.kyp == kk[2] && in.kzm == kk[3] &&
               in.kzp == kk[4] && in.kl == kk[5] && in.kr == kk[6];
    }

    /* The conductivities for a plane of z widths vz, ikm (below), ik
     * (above), from the axes' tables unless they are the kept ones; MT:
     * and for the materials of the group and its neighbours in `in`, the
     * face conductivities from the staged table, unless those are the kept
     * ones too (so that a node costs what it costs with one material, but
     * where the materials around its column change along z). */
    __device__ __forceinline__ void keep(const mgd_level<T> &L, const mgd_fine<T> &F,
                                         const mg_fine_in<T, VX> &in, T vz, T ikm, T ik)
    {
        if (kept(vz, ikm, ik) && (MT != MG_KEPT || same_materials(in))) return;
        const T kf = MT ? T(0) : F.kf[0]; /* read here: a register less to keep */
        if (PASS == P_NORMS && have) fold();
        have = true, cvz = vz, cikm = ikm, cik = ik;
        if (MT == MG_KEPT)
            kk[0] = in.kc, kk[1] = in.kym, kk[2] = in.kyp, kk[3] = in.kzm, kk[4] = in.kzp,
            kk[5] = in.kl, kk[6] = in.kr;
        const T vy = L.v[1][jj], ihjm = L.ih[1][wrapm(jj, L.n[1])], ihj = L.ih[1][jj];
#pragma unroll
        for (int e = 0; e < VX; e++) {
            const int ii = ig + e < n0 ? ig + e : 0;
            const T vx = L.v[0][ii], ihm = L.ih[0][wrapm(ii, n0)], ihp = L.ih[0][ii];
            T kq[6] = {kf, kf, kf, kf, kf, kf}; /* the faces' conductivities */
            int a = 0;
            if (MT == MG_KEPT) {
                a = mtl_byte(in.kc, e);
                const int ml = e > 0 ? mtl_byte(in.kc, e - 1) : (int)in.kl;
                const int mr = e < VX - 1 ? mtl_byte(in.kc, e + 1) : (int)in.kr;
                kq[0] = kfs[ml * nm + a], kq[1] = kfs[a * nm + mr];
                kq[2] = kfs[mtl_byte(in.kym, e) * nm + a],
                kq[3] = kfs[a * nm + mtl_byte(in.kyp, e)];
                kq[4] = kfs[mtl_byte(in.kzm, e) * nm + a],
                kq[5] = kfs[a * nm + mtl_byte(in.kzp, e)];
            }
            if (MT == MG_LOOKUP) {
                tc[0][e] = face_geometry(ihm, vy, vz), tc[1][e] = face_geometry(ihp, vy, vz);
                tc[2][e] = face_geometry(ihjm, vx, vz), tc[3][e] = face_geometry(ihj, vx, vz);
                tc[4][e] = face_geometry(ikm, vx, vy), tc[5][e] = face_geometry(ik, vx, vy);
                tc[6][e] = (vx * vy) * vz;
                continue;
            }
            const T t[6] = {face(kq[0], ihm, vy, vz),  face(kq[1], ihp, vy, vz),
                            face(kq[2], ihjm, vx, vz), face(kq[3], ihj, vx, vz),
                            face(kq[4], ikm, vx, vy),  face(kq[5], ik, vx, vy)};
#pragma unroll
            for (int f = 0; f < 6; f++) tc[f][e] = t[f];
            const T ts = tsum(t);
            if (PASS == P_NORMS)
                tc[6][e] = (MT ? rhoc[a] : F.rhoc[0]) * ((vx * vy) * vz); /* rho c V */
            else if (PASS == P_SMOOTH && !DG)
                tc[6][e] = weight(c1, ts + T(0)); /* diag = ts + dg, dg = 0 */
            else
                tc[6][e] = ts;
        }
    }

    /* The pass's inputs besides the field at the group's nodes of offset p
     * (out: the sweep's previous iterate), where the group is worked. */
    __device__ __forceinline__ void inputs(mg_fine_in<T, VX> &in, const mgd_level<T> &L,
                                           const mgd_fine<T> &F, const T *out, long long p,
                                           bool work) const
    {
#pragma unroll
        for (int e = 0; e < VX; e++) in.b.v[e] = in.d.v[e] = in.p.v[e] = T(0);
        if (work) {
            if (L.b) in.b = vload<T, VX>(L.b + p);
            if (DG) in.d = vload<T, VX>(F.dg0 + p); /* DG: F.dg0 not NULL */
            if (PASS == P_SMOOTH && up) in.p = vload<T, VX>(out + p);
        }
    }

    /* The norms' largest |u| over a plane's group (a row in the grid). */
    __device__ __forceinline__ void field(const hk_vec<T, VX> &cur)
    {
#pragma unroll
        for (int e = 0; e < VX; e++)
            if (ig + e < n0) um = max(um, abs_bits(cur.v[e]));
    }

    /* A sweep's weights c1 / diag with a mass term, diag = ts + dg as
     * resid_ts makes it, into in.w ahead of nodes<true>: the division's
     * slow path is a call, cheaper where fewer values are live. */
    __device__ __forceinline__ void weights(mg_fine_in<T, VX> &in) const
    {
#pragma unroll
        for (int e = 0; e < VX; e++) in.w.v[e] = weight(c1, tc[6][e] + in.d.v[e]);
    }

    /* The group's new values (a sweep) or residuals, or the norms' node
     * terms, with the kept conductivities: mg_point.inc's order. W: a
     * sweep with a mass term takes its weights from in.w (weights()). */
    template <bool W = false>
    __device__ __forceinline__ hk_vec<T, VX> nodes(const mg_fine_in<T, VX> &in)
    {
        if constexpr (MT == MG_LOOKUP)
            return nodes_mt(in);
        else
            return nodes_kept<W>(in);
    }

    template <bool W>
    __device__ __forceinline__ hk_vec<T, VX> nodes_kept(const mg_fine_in<T, VX> &in)
    {
        hk_vec<T, VX> v;
#pragma unroll
        for (int e = 0; e < VX; e++) {
            const T c = in.cur.v[e];
            T nb[6];
            in.around(e, nb);
            T diag;
            const T t[6] = {tc[0][e], tc[1][e], tc[2][e], tc[3][e], tc[4][e], tc[5][e]};
            /* diag is read only by a sweep with a mass term, where tc 6 is ts */
            const T r = resid_ts(in.b.v[e], in.d.v[e], c, nb, t, tc[6][e], &diag);
            if (PASS == P_SMOOTH) {
                const T w = !DG ? tc[6][e] : W ? in.w.v[e] : weight(c1, diag);
                v.v[e] = sweep_value(up, c, in.p.v[e], r, w, c0);
            } else {
                v.v[e] = r;
                if (PASS == P_NORMS && act[e]) {
                    rmx[e] = max(rmx[e], abs_bits(r));
                    if (wsum) ws.add((double)tc[6][e] * (double)c);
                }
            }
        }
        return v;
    }

    /* nodes() with several materials: each node's conductivities from its
     * and its neighbours' materials and the kept geometry, in
     * mg_point.inc's order; a node's x- face is the node before's x+ face
     * (the same pair and geometry: the same value). */
    __device__ __forceinline__ hk_vec<T, VX> nodes_mt(const mg_fine_in<T, VX> &in)
    {
        hk_vec<T, VX> v;
        int mx[VX + 2]; /* the row's materials: left, the group's, right */
        mx[0] = (int)in.kl, mx[VX + 1] = (int)in.kr;
#pragma unroll
        for (int e = 0; e < VX; e++) mx[e + 1] = mtl_byte(in.kc, e);
        T tx = face_k(kfs[mx[0] * nm + mx[1]], tc[0][0]); /* node 0's x- face */
#pragma unroll
        for (int e = 0; e < VX; e++) {
            const int a = mx[e + 1];
            const T c = in.cur.v[e];
            T nb[6];
            in.around(e, nb);
            const T t[6] = {tx,
                            face_k(kfs[a * nm + mx[e + 2]], tc[1][e]),
                            face_k(kfs[mtl_byte(in.kym, e) * nm + a], tc[2][e]),
                            face_k(kfs[a * nm + mtl_byte(in.kyp, e)], tc[3][e]),
                            face_k(kfs[mtl_byte(in.kzm, e) * nm + a], tc[4][e]),
                            face_k(kfs[a * nm + mtl_byte(in.kzp, e)], tc[5][e])};
            tx = t[1];
            T diag;
            const T r = resid_ts(in.b.v[e], in.d.v[e], c, nb, t, tsum(t), &diag);
            if (PASS == P_SMOOTH) {
                v.v[e] = sweep_value(up, c, in.p.v[e], r, weight(c1, diag), c0);
            } else {
                v.v[e] = r;
                if (PASS == P_NORMS && act[e]) {
                    const T rcv = rhoc[a] * tc[6][e]; /* rho c V */
                    rm = max(rm, abs_bits(r / rcv));
                    if (wsum) ws.add((double)rcv * (double)c);
                }
            }
        }
        return v;
    }

    __device__ __forceinline__ void store(T *q, const hk_vec<T, VX> &v) const
    {
        if (allact) {
            vstore<T, VX>(q, v);
        } else {
#pragma unroll
            for (int e = 0; e < VX; e++)
                if (act[e]) q[e] = v.v[e];
        }
    }

    /* The pass at the group's nodes of one plane, read from the ring planes
     * pm, pc, pp (the plane below, the plane, above) after the barrier;
     * in holds the inputs; q the group's place in the output. */
    template <int RS>
    __device__ __forceinline__ void plane(mg_fine_in<T, VX> &in, const T (*pm)[RS],
                                          const T (*pc)[RS], const T (*pp)[RS], bool work, T *q)
    {
        in.cur = vload<T, VX>(&pc[ty + 1][col]);
        if (PASS == P_NORMS && rowin) field(in.cur);
        if (work) {
            rows(in, pc);
            in.zm = vload<T, VX>(&pm[ty + 1][col]);
            in.zp = vload<T, VX>(&pp[ty + 1][col]);
            const hk_vec<T, VX> v = nodes(in);
            if (PASS != P_NORMS) store(q, v);
        }
    }

    /* the group's neighbours in x and y from its ring plane pc */
    template <int RS>
    __device__ __forceinline__ void rows(mg_fine_in<T, VX> &in, const T (*pc)[RS]) const
    {
        in.ym = vload<T, VX>(&pc[ty][col]);
        in.yp = vload<T, VX>(&pc[ty + 2][col]);
        in.left = pc[ty + 1][col - 1], in.right = pc[ty + 1][col + VX];
        if (wrapfix) { /* node 0: the right halo of the row's last tile (mg_fine_copy) */
            const T w0 = pc[ty + 1][RS - VX];
#pragma unroll
            for (int e = 1; e < VX; e++)
                if (ig + e == n0) in.cur.v[e] = w0; /* a pad's place: never stored */
            if (ig + VX == n0) in.right = w0;
        }
    }

    /* the end of a norms pass (every thread of the block) */
    __device__ __forceinline__ void flush(mg_norms *norms)
    {
        if (have) fold();
        mg_norms_flush(norms, rm, um, ws, wsum);
    }
};

template <typename T, int PASS, bool DG, int VX, int BXT, int BP, int D, int MINB, int MT>
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
    const int x0 = blockIdx.x * BX, p0 = blockIdx.y * BP;
    const int ig = x0 + threadIdx.x * VX, j = p0 + threadIdx.y;
    const int k0 = blockIdx.z * kchunk, k1 = min(k0 + kchunk, n2);
    const long long sz = (long long)L.rp * L.rows; /* mg_plane(L) */
    const T *x = PASS == P_SMOOTH && (sweep & 1) ? L.x1 : L.x0;
    T *out = PASS == P_SMOOTH && (sweep & 1) ? L.x0 : L.x1;

    const mg_fine_copy<T, VX, BXT, BP> cp(n0, n1, L.rp, x0, p0, ig, j);
    /* Plane k (k0 - 1 .. k1, wrapped into the grid) into its ring slot. */
    auto slot = [&](int k) { return (k - k0 + 1) % D; };
    auto issue = [&](int k) {
        cp.issue(sm[slot(k)], x + (long long)(k < 0 ? k + n2 : k >= n2 ? k - n2 : k) * sz);
    };
    mg_fine_group<T, PASS, DG, VX, MT> g(L, F, sweep, ig, j);
    /* MT: the face conductivities staged (a barrier before the first
     * keep reads them) */
    __shared__ T skf[MT ? MG_FINE_NMAT * MG_FINE_NMAT : 1];
    const long long colp = (long long)j * L.rp + ig; /* rowin, grpin */
    if (MT) {
        const int tid = threadIdx.x + BXT * threadIdx.y;
        for (int q = tid; q < F.nmat * F.nmat; q += BXT * BP) skf[q] = F.kf[q];
        g.kfs = skf, g.rhoc = F.rhoc, g.nm = F.nmat;
        __syncthreads();
        if (k0 < k1) g.zstart(F, k0, n2, sz, colp);
    }

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
        const long long p = (long long)k * sz + (long long)j * L.rp + ig; /* rowin, grpin */
        const bool work = g.rowin && g.grpin && !zheld(L, k);
        mg_fine_in<T, VX> in;
        g.inputs(in, L, F, out, p, work);
        if (MT) g.materials(in, F, k, k1, n2, sz, colp);
        const T vz = vz_n, ikm = ikm_n, ik = ik_n;
        if (k + 1 < k1) vz_n = L.v[2][k + 1], ikm_n = L.ih[2][k], ik_n = L.ih[2][k + 1];
        g.keep(L, F, in, vz, ikm, ik);
        __syncthreads();
        g.plane(in, sm[slot(k - 1)], sm[slot(k)], sm[slot(k + 1)], work, out + p);
    }
    if (PASS == P_NORMS) g.flush(norms);
}

/* The same pass two planes an iteration, k and k + 1: where plane k + 1's
 * z widths are those kept for plane k, bit for bit (every plane but the z
 * faces' on a uniform z axis), and neither plane is held, a thread has the
 * two planes' nodes side by side between barriers, independent chains that
 * fill each other's latencies, and a barrier costs two planes. Else the
 * planes are done one after the other as in mg_fine_kernel (a run's odd
 * last plane too). Every node's operations and every sum's order are
 * mg_fine_kernel's: the norms' sums take plane k's terms before plane
 * k + 1's, and their maxima do not depend on order.
 *
 * The copies come in groups, one a pair: the pair at m reads planes
 * m - 1 .. m + 2; the first group holds planes k0 - 1 .. k0 + 2, the group
 * of a later pair m its planes m + 1 and m + 2 (those up to k1, the last
 * plane read). The pair at k issues, after its barrier, the group of the
 * pair at k + G, planes k + G + 1 and k + G + 2, into the slots of planes
 * k - 3 and k - 2: every thread has reached this barrier, so has finished
 * the pair at k - 2 (planes k - 3 .. k), and from here on no thread reads
 * a plane below k - 1. The ring then holds planes k - 1 .. k + G + 2:
 * D = G + 4, and the 8 planes of mg_fine_kernel's ring put a group two
 * pairs (four planes) ahead of its reader, as mg_fine_kernel's P = 5
 * copies issued before the barrier put a plane four planes ahead. (Issued
 * before the barrier, the copies could reuse only the slots of planes
 * k - 5 and k - 4: D = G + 6.) */
template <typename T, int PASS, bool DG, int VX, int BXT, int BP, int D, int MINB>
__global__ void __launch_bounds__(BXT *BP, MINB)
    mg_fine_pair_kernel(const mgd_level<T> L, const mgd_fine<T> F, int sweep, int kchunk,
                        mg_norms *norms)
{
    static_assert(BXT % 32 == 0, "a tile row is whole warps");
    static_assert(BXT * BP >= 2 * BXT + 2 * BP, "one thread per halo copy");
    static_assert(D >= 6 && D % 2 == 0, "the ring holds two pairs' planes and the planes beside");
    constexpr int BX = BXT * VX, ROWS = BP + 2, RS = BX + 2 * VX, G = D - 4;
    __shared__ __align__(16) T sm[D][ROWS][RS];

    const int n0 = L.n[0], n1 = L.n[1], n2 = L.n[2];
    const int x0 = blockIdx.x * BX, p0 = blockIdx.y * BP;
    const int ig = x0 + threadIdx.x * VX, j = p0 + threadIdx.y;
    const int k0 = blockIdx.z * kchunk, k1 = min(k0 + kchunk, n2);
    const long long sz = (long long)L.rp * L.rows; /* mg_plane(L) */
    const T *x = PASS == P_SMOOTH && (sweep & 1) ? L.x1 : L.x0;
    T *out = PASS == P_SMOOTH && (sweep & 1) ? L.x0 : L.x1;

    const mg_fine_copy<T, VX, BXT, BP> cp(n0, n1, L.rp, x0, p0, ig, j);
    auto slot = [&](int k) { return (k - k0 + 1) % D; };
    auto issue = [&](int k) {
        cp.issue(sm[slot(k)], x + (long long)(k < 0 ? k + n2 : k >= n2 ? k - n2 : k) * sz);
    };
    /* planes a .. b (those up to k1) as one copy group */
    auto group = [&](int a, int b) {
        for (int q = a; q <= b && q <= k1; q++) issue(q);
        __pipeline_commit();
    };
    mg_fine_group<T, PASS, DG, VX> g(L, F, sweep, ig, j);

    /* the groups of the pairs at k0 .. k0 + G - 2 in flight */
    if (k0 < k1) {
        group(k0 - 1, k0 + 2);
        for (int m = k0 + 2; m < k0 + G; m += 2) group(m + 1, m + 2);
    }

    for (int k = k0; k < k1; k += 2) {
        const bool two = k + 1 < k1;
        const long long p = (long long)k * sz + (long long)j * L.rp + ig; /* rowin, grpin */
        const bool zh0 = zheld(L, k), zh1 = two && zheld(L, k + 1);
        const bool work0 = g.rowin && g.grpin && !zh0, work1 = g.rowin && g.grpin && two && !zh1;
        mg_fine_in<T, VX> a, b; /* planes k, k + 1 */
        g.inputs(a, L, F, out, p, work0);
        g.inputs(b, L, F, out, p + sz, work1);
        /* both planes' z widths, first used after the barrier */
        const T vz0 = L.v[2][k], ikm0 = L.ih[2][wrapm(k, n2)], ik0 = L.ih[2][k];
        const T vz1 = two ? L.v[2][k + 1] : T(0), ik1 = two ? L.ih[2][k + 1] : T(0);
        /* this pair's group; the next one's may still be in flight */
        __pipeline_wait_prior(G / 2 - 1);
        __syncthreads();
        group(k + G + 1, k + G + 2);
        g.keep(L, F, a, vz0, ikm0, ik0);
        const T(*pm)[RS] = sm[slot(k - 1)];
        const T(*pa)[RS] = sm[slot(k)];
        const T(*pb)[RS] = sm[slot(k + 1)];
        if (two && !zh0 && !zh1 && g.kept(vz1, ik0, ik1)) {
            a.cur = vload<T, VX>(&pa[g.ty + 1][g.col]);
            b.cur = vload<T, VX>(&pb[g.ty + 1][g.col]);
            if (PASS == P_NORMS && g.rowin) {
                g.field(a.cur);
                g.field(b.cur);
            }
            if (work0) {
                if (PASS == P_SMOOTH && DG) g.weights(a), g.weights(b);
                g.rows(a, pa);
                g.rows(b, pb);
                a.zm = vload<T, VX>(&pm[g.ty + 1][g.col]), a.zp = b.cur;
                b.zm = a.cur, b.zp = vload<T, VX>(&sm[slot(k + 2)][g.ty + 1][g.col]);
                const hk_vec<T, VX> va = g.template nodes<true>(a), vb = g.template nodes<true>(b);
                if (PASS != P_NORMS) {
                    g.store(out + p, va);
                    g.store(out + p + sz, vb);
                }
            }
        } else {
            /* One plane after the other, as mg_fine_kernel. Plane k + 1's
             * widths and inputs are read again (the same values): held
             * across plane k's update they cost the registers that the
             * pair needs (ptxas spilled). */
            g.plane(a, pm, pa, pb, work0, out + p);
            if (two) {
                g.keep(L, F, b, L.v[2][k + 1], L.ih[2][k], L.ih[2][k + 1]);
                g.inputs(b, L, F, out, p + sz, work1);
                g.plane(b, pa, pb, sm[slot(k + 2)], work1, out + p + sz);
            }
        }
    }
    if (PASS == P_NORMS) g.flush(norms);
}

/* Planes per block run of the kernel of several materials: runs for about
 * 8 waves of resident blocks, at least 12 planes each. Its blocks take
 * longer on nodes of more materials than on others, so that a grid of
 * about one wave (heat_cuda_wchunk's choice for the kernel of one
 * material) left multiprocessors idle at its end: on the chip at 401 x 401
 * x 81 (663 tiles, 396 resident blocks), 81 planes a run took 2.42 ms a
 * cycle in double, 14 planes 2.27 ms (docs/PERFORMANCE.md).
 * HEAT_CUDA_WCHUNK sets the run length, as for the other kernels. */
static int mt_chunk(long long tiles, int n2, int blocks_per_sm)
{
    return heat_cuda_wchunk_waves(tiles, n2, blocks_per_sm, 8, 12);
}

template <typename T, int PASS, bool DG, int VX, int BXT, int BP, int D, int MINB, bool PAIR,
          int MT>
static cudaError_t launch_dg(const mgd_level<T> &L, const mgd_fine<T> &F, int sweep,
                             mg_norms *norms, cudaStream_t stream)
{
    static_assert(!(PAIR && MT), "the pair kernel serves one material");
    void (*kernel)(const mgd_level<T>, const mgd_fine<T>, int, int, mg_norms *);
    if constexpr (PAIR)
        kernel = mg_fine_pair_kernel<T, PASS, DG, VX, BXT, BP, D, MINB>;
    else
        kernel = mg_fine_kernel<T, PASS, DG, VX, BXT, BP, D, MINB, MT>;
    static int blocks_per_sm = 0; /* occupancy of this instantiation, asked once */
    if (!blocks_per_sm) {
        const cudaError_t e =
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, BXT * BP, 0);
        if (e != cudaSuccess) return e;
        if (blocks_per_sm < 1) blocks_per_sm = 1;
    }
    constexpr int BX = BXT * VX;
    const long long gx = (L.n[0] + BX - 1) / BX, gy = (L.n[1] + BP - 1) / BP;
    const int kchunk = MT ? mt_chunk(gx * gy, L.n[2], blocks_per_sm)
                          : heat_cuda_wchunk(gx * gy, L.n[2], blocks_per_sm);
    const dim3 grid((unsigned)gx, (unsigned)gy, (unsigned)((L.n[2] + kchunk - 1) / kchunk));
    kernel<<<grid, dim3(BXT, BP), 0, stream>>>(L, F, sweep, kchunk, norms);
    return cudaGetLastError();
}

/* Which kernel runs a pass of one material: two planes an iteration
 * (mg_fine_pair_kernel) for the double sweeps, one plane for the rest, as
 * measured at 512^3 (docs/PERFORMANCE.md: the pair gained 1.2% on the
 * double sweeps and lost 2% on the float ones and 1.5% on the double
 * residual); pair = 1 or 0 (HEAT_CUDA_MG_PAIR) makes every pass use the one
 * or the other, for comparing them. */
template <typename T, int PASS, int VX, bool MT>
static cudaError_t launch_vx(const mgd_level<T> &L, const mgd_fine<T> &F, int sweep, int pair,
                             mg_norms *norms, cudaStream_t stream)
{
    const bool dg = F.dg0 != nullptr;
    if constexpr (!MT) {
        if (pair == 1 || (pair < 0 && sizeof(T) == 8 && PASS == P_SMOOTH))
            return dg ? launch_dg<T, PASS, true, VX, 32, 8, 8, 2, true, false>(L, F, sweep, norms,
                                                                               stream)
                      : launch_dg<T, PASS, false, VX, 32, 8, 8, 2, true, false>(L, F, sweep, norms,
                                                                                stream);
    }
    /* several materials: the conductivities kept per column (MG_KEPT) but
     * for double on one value a thread (MG_LOOKUP, there 8% faster: the
     * kept ones' materials cost registers that it spills); 3 blocks a
     * multiprocessor for one value a thread, else 2 (docs/PERFORMANCE.md) */
    constexpr int MODE = !MT ? MG_ONE : sizeof(T) == 8 && VX == 1 ? MG_LOOKUP : MG_KEPT;
    constexpr int MINB = MT && VX == 1 ? 3 : 2;
    return dg ? launch_dg<T, PASS, true, VX, 32, 8, 8, MINB, false, MODE>(L, F, sweep, norms,
                                                                          stream)
              : launch_dg<T, PASS, false, VX, 32, 8, 8, MINB, false, MODE>(L, F, sweep, norms,
                                                                           stream);
}

/* Tiles of 32 x 8 threads, groups of 16 bytes where rows allow (else one
 * value a thread), a ring of 8 planes, 2 blocks per multiprocessor (what
 * was measured against the alternatives: docs/PERFORMANCE.md; 3 with
 * several materials, launch_vx); with or without a mass term on the
 * diagonal (implicit steps, steady). */
template <typename T, int PASS>
cudaError_t heat_cuda_mg_fine_pass(const mgd_level<T> &L, const mgd_fine<T> &F, int sweep, int pair,
                                   mg_norms *norms, cudaStream_t stream)
{
    constexpr int V = 16 / sizeof(T);
    if (F.mtl) {
        if (F.nmat > MG_FINE_NMAT) return cudaErrorInvalidValue; /* launch_pass's point kernel */
        if (L.rp % V == 0) return launch_vx<T, PASS, V, true>(L, F, sweep, pair, norms, stream);
        return launch_vx<T, PASS, 1, true>(L, F, sweep, pair, norms, stream);
    }
    if (L.rp % V == 0) return launch_vx<T, PASS, V, false>(L, F, sweep, pair, norms, stream);
    return launch_vx<T, PASS, 1, false>(L, F, sweep, pair, norms, stream);
}

#define HEAT_MG_FINE(T, P)                                                                         \
    template cudaError_t heat_cuda_mg_fine_pass<T, P>(const mgd_level<T> &, const mgd_fine<T> &,   \
                                                      int, int, mg_norms *, cudaStream_t);
HEAT_MG_FINE(float, P_SMOOTH)
HEAT_MG_FINE(float, P_RESID)
HEAT_MG_FINE(float, P_NORMS)
HEAT_MG_FINE(double, P_SMOOTH)
HEAT_MG_FINE(double, P_RESID)
HEAT_MG_FINE(double, P_NORMS)
