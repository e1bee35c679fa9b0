/* What the kernels of the variable-coefficient update share (materials,
 * sources, convective and flux faces: heat_case.h, "the variable-coefficient
 * update", gives the formula and its order; kernels/cpu/cpu_general.inc is
 * the reference).
 *
 * Per node the field holds one class byte (laid out as the field, at the
 * same offsets); the properties are small tables: the material and the
 * source term q of each class, and the weights w[axis][a][b] of a face
 * between materials a and b. A warp's nodes index the tables at random, so
 * the tables a node reads every step (mat, q and, where it fits, w) are
 * staged into shared memory once per block: constant memory would
 * serialize a warp's reads of different entries.
 *
 * Axes and faces in kernel order: x, p (y; 3D only), w (z in 3D, y in 2D);
 * faces x lo, x hi, p lo, p hi, w lo, w hi (HG_F*). The host reorders the
 * case's tables into this order (w[2] is the y table in 2D), so one kernel
 * body serves both dimensions.
 *
 * Faces: Neumann, flux and convective faces are all mirrored (HK_NEUMANN in
 * the stencil arguments: the ghost is the inner node's value and material);
 * at a node on such a face the difference ghost - u is the CPU's
 *   (inner + g[f][a]) - u                    Neumann (g = 2 h gradient), flux
 *   (inner - u) - beta[f][a] (u - ambient[f]) convective
 * and everywhere else u_n - u. Dirichlet nodes hold; periodic axes wrap.
 *
 * Numerics: the CPU's order exactly; --fmad=false keeps every product and
 * sum separately rounded, as the C reference (compiled without contraction)
 * does, so the GPU reproduces it bit for bit.
 */
#ifndef HEAT_CUDA_GENERAL_CUH
#define HEAT_CUDA_GENERAL_CUH

#include "stencil.cuh"

#define HG_CLASSES 256

enum { HG_FXLO = 0, HG_FXHI, HG_FPLO, HG_FPHI, HG_FWLO, HG_FWHI, HG_NFACES };

/* The stencil arguments (geometry, faces, levels, residual) and the
 * classes and tables of the variable-coefficient update. */
template <typename T> struct heat_general_args : heat_stencil_args<T> {
    const uint8_t *__restrict__ cls; /* classes at the offsets of u */
    const T *q;                      /* [HG_CLASSES]: dt q_c / (rho c)_a */
    const uint8_t *mat;              /* [HG_CLASSES]: the class's material */
    const T *w;                      /* [3][nmat][nmat] in kernel axis order */
    const T *g, *beta;               /* [HG_NFACES][nmat] */
    const T *amb;                    /* [HG_NFACES] */
    int nmat;
    int conv;     /* bit f: kernel face f is convective */
    int w_shared; /* the w table fits the shared-memory stage (hg_w_shared) */
};

/* Bytes of the w table that a block stages into shared memory; a larger
 * table (many materials) is read through the read-only cache. */
#define HG_W_SHARED_MAX 12288

/* Whether rows start on 16-byte boundaries (hk_rows16) and the classes'
 * rows on group boundaries: groups of values and of classes load whole. */
template <typename T> inline bool hg_rows16(const heat_general_args<T> &a)
{
    return hk_rows16(a) && (uintptr_t)a.cls % (16 / sizeof(T)) == 0;
}

template <typename T> __host__ __device__ inline bool hg_w_shared(int nmat)
{
    return (long long)3 * nmat * nmat * (long long)sizeof(T) <= HG_W_SHARED_MAX;
}

/* The tables as a block reads them. */
template <typename T> struct hg_tab {
    const T *q, *w;
    const uint8_t *mat;
};

/* Bytes of the shared stage: q, then w (when staged), then mat. */
template <typename T> __host__ __device__ inline size_t hg_stage_bytes(int nmat, bool wsh)
{
    return HG_CLASSES * sizeof(T) + (wsh ? (size_t)3 * nmat * nmat * sizeof(T) : 0) + HG_CLASSES;
}

/* Copies the tables into `smem` (16-byte aligned, hg_stage_bytes long) with
 * every thread of the block; the caller synchronizes before the first read. */
template <typename T, bool WSH>
__device__ __forceinline__ hg_tab<T> hg_stage(const heat_general_args<T> &a, unsigned char *smem)
{
    const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const int nt = blockDim.x * blockDim.y * blockDim.z;
    T *q = reinterpret_cast<T *>(smem);
    T *w = q + HG_CLASSES;
    const int nw = WSH ? 3 * a.nmat * a.nmat : 0;
    uint8_t *mat = reinterpret_cast<uint8_t *>(w + nw);
    for (int i = tid; i < HG_CLASSES; i += nt) q[i] = a.q[i], mat[i] = a.mat[i];
    for (int i = tid; i < nw; i += nt) w[i] = a.w[i];
    hg_tab<T> t;
    t.q = q;
    t.w = WSH ? w : a.w;
    t.mat = mat;
    return t;
}

/* Byte e of a packed word (bytes of consecutive x nodes, e = 0 lowest). */
__device__ __forceinline__ int hg_byte(unsigned v, int e)
{
    return (int)((v >> (8 * e)) & 0xffu);
}

/* VX consecutive bytes as one word (one access: p is VX-aligned), and back. */
template <int VX> __device__ __forceinline__ unsigned hg_load_bytes(const uint8_t *p)
{
    static_assert(VX == 1 || VX == 2 || VX == 4, "a group's bytes fit one word");
    if constexpr (VX == 4)
        return *reinterpret_cast<const unsigned *>(p);
    else if constexpr (VX == 2)
        return *reinterpret_cast<const unsigned short *>(p);
    else
        return *p;
}

template <int VX> __device__ __forceinline__ void hg_store_bytes(uint8_t *p, unsigned v)
{
    if constexpr (VX == 4)
        *reinterpret_cast<unsigned *>(p) = v;
    else if constexpr (VX == 2)
        *reinterpret_cast<unsigned short *>(p) = (unsigned short)v;
    else
        *p = (uint8_t)v;
}

/* The materials of VX packed classes. */
template <int VX> __device__ __forceinline__ unsigned hg_mats(const uint8_t *mat, unsigned cls)
{
    unsigned m = 0;
#pragma unroll
    for (int e = 0; e < VX; e++) m |= (unsigned)mat[hg_byte(cls, e)] << (8 * e);
    return m;
}

/* ghost - u for a node of material m on mirrored face f, `inner` the
 * mirrored node's value (heat_case.h). Read only on faces: through the
 * read-only cache. */
template <typename T>
__device__ __forceinline__ T hg_ghost(const heat_general_args<T> &a, int f, int m, T inner, T c)
{
    if (a.conv >> f & 1)
        return (inner - c) - __ldg(&a.beta[f * a.nmat + m]) * (c - __ldg(&a.amb[f]));
    return (inner + __ldg(&a.g[f * a.nmat + m])) - c;
}

/* The update of a node of material a and source term q from its
 * differences d and its neighbours' materials b, in the CPU's order:
 *   s = w_x[a][bxm] dxm + w_x[a][bxp] dxp
 *   s = s + (w_p[a][bpm] dpm + w_p[a][bpp] dpp)      (3D)
 *   s = s + (w_w[a][bwm] dwm + w_w[a][bwp] dwp)
 *   u' = u + (s + q)                                                     */
template <typename T, bool D3>
__device__ __forceinline__ T hg_point(const T *w, int M, int a, T c, T q, T dxm, T dxp, int bxm,
                                      int bxp, T dpm, T dpp, int bpm, int bpp, T dwm, T dwp,
                                      int bwm, int bwp)
{
    const int MM = M * M;
    const T *wa = w + a * M;
    T s = wa[bxm] * dxm + wa[bxp] * dxp;
    if (D3) s = s + (wa[MM + bpm] * dpm + wa[MM + bpp] * dpp);
    s = s + (wa[2 * MM + bwm] * dwm + wa[2 * MM + bwp] * dwp);
    return c + (s + q);
}

/* The update of node (i, j, w), which the sweep writes (hk_writes), one
 * thread's plain reading of the formula: every neighbour and class from
 * global memory (mapped through the faces: a ghost's value and material are
 * the mirrored node's), the tables through the read-only cache, hg_ghost on
 * mirrored faces, hg_point's arithmetic. The value; the centre's in c. */
template <typename T, bool D3>
__device__ __forceinline__ T hg_simple_point(const heat_general_args<T> &a, int i, int j, int w,
                                             T &c)
{
    const long long row = (long long)w * a.sw + (long long)j * a.sp;
    const long long plane = (long long)w * a.sw + i, col = (long long)j * a.sp + i;
    const long long oxm = row + hk_map(i - 1, a.nx, a.bx), oxp = row + hk_map(i + 1, a.nx, a.bx);
    const long long opm = D3 ? plane + hk_map(j - 1, a.np, a.bp) * a.sp : row + i;
    const long long opp = D3 ? plane + hk_map(j + 1, a.np, a.bp) * a.sp : row + i;
    const long long owm = col + hk_map(w - 1, a.nw, a.bw) * a.sw;
    const long long owp = col + hk_map(w + 1, a.nw, a.bw) * a.sw;
    c = a.u[row + i];
    const T cc = c;
    const int cl = a.cls[row + i], am = __ldg(&a.mat[cl]);
    auto mat = [&](long long o) { return (int)__ldg(&a.mat[a.cls[o]]); };
    auto diff = [&](long long o, bool face, int f) {
        return face ? hg_ghost(a, f, am, a.u[o], cc) : a.u[o] - cc;
    };
    const T dxm = diff(oxm, i == 0 && a.bx[0] == HK_NEUMANN, HG_FXLO);
    const T dxp = diff(oxp, i == a.nx - 1 && a.bx[1] == HK_NEUMANN, HG_FXHI);
    const T dpm = D3 ? diff(opm, j == 0 && a.bp[0] == HK_NEUMANN, HG_FPLO) : T(0);
    const T dpp = D3 ? diff(opp, j == a.np - 1 && a.bp[1] == HK_NEUMANN, HG_FPHI) : T(0);
    const T dwm = diff(owm, w == 0 && a.bw[0] == HK_NEUMANN, HG_FWLO);
    const T dwp = diff(owp, w == a.nw - 1 && a.bw[1] == HK_NEUMANN, HG_FWHI);
    return hg_point<T, D3>(a.w, a.nmat, am, cc, __ldg(&a.q[cl]), dxm, dxp, mat(oxm), mat(oxp), dpm,
                           dpp, D3 ? mat(opm) : 0, D3 ? mat(opp) : 0, dwm, dwp, mat(owm), mat(owp));
}

/* hg_simple_point's update of node (i, j, w) into out, the residual folded
 * into m; nothing where the sweep does not write the node (hk_writes): the
 * point of gsimple_kernel and of the strip (hk_strip_kernel, stencil.cuh),
 * beside the uniform update's hk_update_at. */
template <typename T, bool D3, bool RES>
__device__ __forceinline__ void hk_update_at(const heat_general_args<T> &a, int i, int j, int w,
                                             unsigned long long &m)
{
    if (!hk_writes<T, D3>(a, i, j, w)) return;
    T c;
    const T v = hg_simple_point<T, D3>(a, i, j, w, c);
    a.out[(long long)w * a.sw + (long long)j * a.sp + i] = v;
    if (RES) {
        const unsigned long long d = hk_diff_bits(v, c);
        m = d > m ? d : m;
    }
}

/* Launchers (k_gsimple.cu, k_gregister.cu, k_gtemporal_*.cu), float and
 * double: one sweep (or k fused steps) u -> out on `stream`, returning the
 * launch's status. gsimple serves the naive, tiled and sliced kernels;
 * gtemporal with k = 1 is the register-tiled sweep, with k > 1 it needs
 * a.w_shared (cudaErrorInvalidValue otherwise). */
template <typename T>
cudaError_t heat_cuda_launch_gsimple(const heat_general_args<T> &a, bool d3, cudaStream_t stream);
template <typename T>
cudaError_t heat_cuda_launch_gregister(const heat_general_args<T> &a, bool d3, cudaStream_t stream);
template <typename T>
cudaError_t heat_cuda_launch_gtemporal(const heat_general_args<T> &a, bool d3, int k,
                                       cudaStream_t stream);

/* The case's tables (classes' source terms and materials, faces'
 * weights, the mirrored faces' terms) in precision T and kernel order, in
 * one block of device memory at *d_tab (freed first where set), and the
 * argument fields that point into it; ga's geometry and cls are the
 * caller's. cuda_backend.cu; the whole grid's backend and a rank's part
 * (cuda_part.cu) share it. */
struct heat_case;
struct heat_coeffs;
struct heat_error;
template <typename T>
int heat_cuda_general_tables(const heat_case *c, const heat_coeffs *k, void **d_tab,
                             heat_general_args<T> &ga, heat_error *err);

/* 3D: the nodes on the mirrored faces (Neumann, flux, convective; HK_NEUMANN
 * in a.bx, a.bp, a.bw) among `faces` (bit f: kernel face f, HG_F*) that the
 * sweep writes, one thread each, with hg_simple_point (every ghost of the
 * node applied); the residual folded into a.resid. A node on several of
 * these faces is the first one's. For a sweep that leaves those nodes out
 * (the warp-tile kernel, k_gregister.cu, leaves the p and w faces' nodes).
 * Launches nothing where none of them is mirrored. */
template <typename T>
cudaError_t heat_cuda_launch_gfaces(const heat_general_args<T> &a, unsigned faces,
                                    cudaStream_t stream);

/* k = 2 .. 8 fused steps of one precision and dimension (gtemporal.cuh). */
template <typename T, bool D3>
cudaError_t hg_temporal_depth(const heat_general_args<T> &a, int k, cudaStream_t stream);

#endif
