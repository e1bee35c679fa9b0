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
         w += gridDim.z * blockDim.z) {
        if (i < a.nx && j < a.np && w < a.nw && !hk_held(i, a.nx, a.bx) &&
            (!D3 || !hk_held(j, a.np, a.bp)) && !hk_held(w, a.nw, a.bw)) {
            const long long row = (long long)w * a.sw + (long long)j * a.sp;
            const T c = a.u[row + i];
            T xm = a.u[row + hk_map(i - 1, a.nx, a.bx)];
            T xp = a.u[row + hk_map(i + 1, a.nx, a.bx)];
            hk_xghost(i, a.nx, a.bx, a.gx, xm, xp);
            T pm = 0, pp = 0, apm, app, awm, awp;
            if (D3) {
                hk_ghost(j, a.np, a.bp, a.gp, apm, app);
                const long long plane = (long long)w * a.sw + i;
                pm = a.u[plane + hk_map(j - 1, a.np, a.bp) * a.sp] + apm;
                pp = a.u[plane + hk_map(j + 1, a.np, a.bp) * a.sp] + app;
            }
            hk_ghost(w, a.nw, a.bw, a.gw, awm, awp);
            const long long col = (long long)j * a.sp + i;
            const T wm = a.u[col + hk_map(w - 1, a.nw, a.bw) * a.sw] + awm;
            const T wp = a.u[col + hk_map(w + 1, a.nw, a.bw) * a.sw] + awp;
            const T v = hk_point<T, D3>(c, xm, xp, pm, pp, wm, wp, a.rx, a.rp, a.rw);
            a.out[row + i] = v;
            if (RES) {
                unsigned long long d = hk_diff_bits(v, c);
                m = d > m ? d : m;
            }
        }
    }
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
