/* `naive`: one thread per point, every neighbour read from global memory.
 * The baseline the others are measured against. */
#include "stencil.cuh"

template <typename T, bool D3, bool RES>
__global__ void __launch_bounds__(256) naive_kernel(const heat_stencil_args<T> a)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int j = blockIdx.y * blockDim.y + threadIdx.y;
    unsigned long long m = 0;
    for (int w = blockIdx.z * blockDim.z + threadIdx.z; w - (int)threadIdx.z < a.nw;
         w += gridDim.z * blockDim.z)
        hk_update_at<T, D3, RES>(a, i, j, w, m);
    if (RES) hk_block_max(m, a.resid);
}

template <typename T>
cudaError_t heat_cuda_launch_naive(const heat_stencil_args<T> &a, bool d3, cudaStream_t stream)
{
    const dim3 block = d3 ? dim3(32, 4, 2) : dim3(32, 1, 8);
    const unsigned gz = (unsigned)(((long long)a.nw + block.z - 1) / block.z);
    const dim3 grid((a.nx + block.x - 1) / block.x, (a.np + block.y - 1) / block.y,
                    gz > 65535u ? 65535u : gz);
    if (d3 && a.resid)
        naive_kernel<T, true, true><<<grid, block, 0, stream>>>(a);
    else if (d3)
        naive_kernel<T, true, false><<<grid, block, 0, stream>>>(a);
    else if (a.resid)
        naive_kernel<T, false, true><<<grid, block, 0, stream>>>(a);
    else
        naive_kernel<T, false, false><<<grid, block, 0, stream>>>(a);
    return cudaGetLastError();
}

template cudaError_t heat_cuda_launch_naive<float>(const heat_stencil_args<float> &, bool,
                                                   cudaStream_t);
template cudaError_t heat_cuda_launch_naive<double>(const heat_stencil_args<double> &, bool,
                                                    cudaStream_t);
