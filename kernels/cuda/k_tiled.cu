/* `tiled`: each block loads a box of points plus a one-point halo into shared
 * memory, then every thread updates its point from there. The textbook first
 * step beyond `naive`; its halo costs (BX+2)(BP+2)(BW+2) / (BX BP BW) loads
 * per point and it reads each plane once per box it touches. */
#include "stencil.cuh"

template <typename T, bool D3, bool RES, int BX, int BP, int BW>
__global__ void __launch_bounds__(BX *BP *BW) tiled_kernel(const heat_stencil_args<T> a)
{
    constexpr int PH = D3 ? 1 : 0;
    constexpr int SX = BX + 2, SP = BP + 2 * PH, SW = BW + 2;
    __shared__ T tile[SW][SP][SX];

    const int tid = threadIdx.x + BX * (threadIdx.y + BP * threadIdx.z);
    const int x0 = blockIdx.x * BX, p0 = blockIdx.y * BP;
    const int i = x0 + threadIdx.x, j = p0 + threadIdx.y;
    unsigned long long m = 0;

    for (int w0 = blockIdx.z * BW; w0 < a.nw; w0 += gridDim.z * BW) {
        /* The box with its halo, each slot mapped through the boundaries. */
        for (int s = tid; s < SX * SP * SW; s += BX * BP * BW) {
            const int sx = s % SX, sp = (s / SX) % SP, sw = s / (SX * SP);
            const int gi = hk_map(x0 + sx - 1, a.nx, a.bx);
            const int gj = D3 ? hk_map(p0 + sp - PH, a.np, a.bp) : 0;
            const int gw = hk_map(w0 + sw - 1, a.nw, a.bw);
            tile[sw][sp][sx] = a.u[(long long)gw * a.sw + (long long)gj * a.sp + gi];
        }
        __syncthreads();
        const int w = w0 + threadIdx.z;
        if (hk_writes<T, D3>(a, i, j, w)) {
            const int tx = threadIdx.x + 1, tp = threadIdx.y + PH, tw = threadIdx.z + 1;
            hk_update<T, D3, RES>(a, i, j, w, tile[tw][tp][tx], tile[tw][tp][tx - 1],
                                  tile[tw][tp][tx + 1], D3 ? tile[tw][tp - 1][tx] : T(0),
                                  D3 ? tile[tw][tp + 1][tx] : T(0), tile[tw - 1][tp][tx],
                                  tile[tw + 1][tp][tx], m);
        }
        __syncthreads();
    }
    if (RES) hk_block_max(m, a.resid);
}

template <typename T, bool D3, int BX, int BP, int BW>
static cudaError_t launch(const heat_stencil_args<T> &a, cudaStream_t stream)
{
    const dim3 block(BX, BP, BW);
    const long long gz = ((long long)a.nw + BW - 1) / BW;
    const dim3 grid((a.nx + BX - 1) / BX, (a.np + BP - 1) / BP,
                    (unsigned)(gz > 65535 ? 65535 : gz));
    if (a.resid)
        tiled_kernel<T, D3, true, BX, BP, BW><<<grid, block, 0, stream>>>(a);
    else
        tiled_kernel<T, D3, false, BX, BP, BW><<<grid, block, 0, stream>>>(a);
    return cudaGetLastError();
}

template <typename T>
cudaError_t heat_cuda_launch_tiled(const heat_stencil_args<T> &a, bool d3, cudaStream_t stream)
{
    return d3 ? launch<T, true, 32, 4, 4>(a, stream) : launch<T, false, 32, 1, 8>(a, stream);
}

template cudaError_t heat_cuda_launch_tiled<float>(const heat_stencil_args<float> &, bool,
                                                   cudaStream_t);
template cudaError_t heat_cuda_launch_tiled<double>(const heat_stencil_args<double> &, bool,
                                                    cudaStream_t);
