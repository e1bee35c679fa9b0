/* The variable-coefficient update, one thread per point, every neighbour and
 * class read from global memory, the tables through the read-only cache: the
 * general sweep of the naive, tiled and sliced kernels (general.cuh). Plain
 * on purpose: a second, independent reading of the formula beside the
 * register-tiled kernels, at no attempt at speed. */
#include "general.cuh"

template <typename T, bool D3, bool RES>
__global__ void __launch_bounds__(256) gsimple_kernel(const heat_general_args<T> a)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int j = blockIdx.y * blockDim.y + threadIdx.y;
    unsigned long long m = 0;
    for (int w = blockIdx.z * blockDim.z + threadIdx.z; w - (int)threadIdx.z < a.nw;
         w += gridDim.z * blockDim.z)
        hk_update_at<T, D3, RES>(a, i, j, w, m);
    if (RES) hk_block_max(m, a.resid);
}

/* The nodes of the mirrored faces listed in f (a.bx, a.bp, a.bw order: x
 * lo, x hi, p lo, p hi, w lo, w hi), blockIdx.z the list's entry; a face's
 * nodes spread over x and y of the grid by its two other axes. */
struct hg_face_list {
    int n, f[HG_NFACES];
};

template <typename T, bool RES>
__global__ void __launch_bounds__(256) gfaces_kernel(const heat_general_args<T> a, hg_face_list fs)
{
    const int f = fs.f[blockIdx.z], axis = f / 2;
    const int s = blockIdx.x * blockDim.x + threadIdx.x, t = blockIdx.y * blockDim.y + threadIdx.y;
    const int n[3] = {a.nx, a.np, a.nw};
    /* The face's node: its axis at 0 or n - 1, the other two (in order)
     * from s and t. */
    int ix[3];
    ix[axis] = f % 2 ? n[axis] - 1 : 0;
    ix[axis == 0 ? 1 : 0] = s;
    ix[axis == 2 ? 1 : 2] = t;
    const int i = ix[0], j = ix[1], w = ix[2];
    bool mine = hk_writes<T, true>(a, i, j, w); /* inside the grid too */
    /* Not on an earlier mirrored face of the list. */
    for (int k = 0; k < (int)blockIdx.z; k++) {
        const int g = fs.f[k];
        if (ix[g / 2] == (g % 2 ? n[g / 2] - 1 : 0)) mine = false;
    }
    unsigned long long m = 0;
    if (mine) hk_update_at<T, true, RES>(a, i, j, w, m);
    if (RES) hk_block_max(m, a.resid);
}

template <typename T>
cudaError_t heat_cuda_launch_gfaces(const heat_general_args<T> &a, unsigned faces,
                                    cudaStream_t stream)
{
    hg_face_list fs = {};
    const int *b[3] = {a.bx, a.bp, a.bw};
    for (int f = 0; f < HG_NFACES; f++)
        if ((faces >> f & 1) && b[f / 2][f % 2] == HK_NEUMANN) fs.f[fs.n++] = f;
    if (!fs.n) return cudaSuccess;
    /* The largest face's two extents: x by y covers (np or nx) by (nw or np). */
    const int e0 = a.nx > a.np ? a.nx : a.np, e1 = a.nw > a.np ? a.nw : a.np;
    const dim3 block(32, 8), grid((e0 + 31) / 32, (e1 + 7) / 8, fs.n);
    if (a.resid)
        gfaces_kernel<T, true><<<grid, block, 0, stream>>>(a, fs);
    else
        gfaces_kernel<T, false><<<grid, block, 0, stream>>>(a, fs);
    return cudaGetLastError();
}

template <typename T>
cudaError_t heat_cuda_launch_gsimple(const heat_general_args<T> &a, bool d3, cudaStream_t stream)
{
    const dim3 block = d3 ? dim3(32, 4, 2) : dim3(32, 1, 8);
    const unsigned gz = (unsigned)(((long long)a.nw + block.z - 1) / block.z);
    const dim3 grid((a.nx + block.x - 1) / block.x, (a.np + block.y - 1) / block.y,
                    gz > 65535u ? 65535u : gz);
    if (d3 && a.resid)
        gsimple_kernel<T, true, true><<<grid, block, 0, stream>>>(a);
    else if (d3)
        gsimple_kernel<T, true, false><<<grid, block, 0, stream>>>(a);
    else if (a.resid)
        gsimple_kernel<T, false, true><<<grid, block, 0, stream>>>(a);
    else
        gsimple_kernel<T, false, false><<<grid, block, 0, stream>>>(a);
    return cudaGetLastError();
}

template cudaError_t heat_cuda_launch_gsimple<float>(const heat_general_args<float> &, bool,
                                                     cudaStream_t);
template cudaError_t heat_cuda_launch_gsimple<double>(const heat_general_args<double> &, bool,
                                                      cudaStream_t);
template cudaError_t heat_cuda_launch_gfaces<float>(const heat_general_args<float> &, unsigned,
                                                    cudaStream_t);
template cudaError_t heat_cuda_launch_gfaces<double>(const heat_general_args<double> &, unsigned,
                                                     cudaStream_t);
