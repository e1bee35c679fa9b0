/* `sliced`: thread coarsening along w (z in 3D, y in 2D). A block owns a
 * tile of the plane and walks a run of planes, keeping three planes (previous,
 * current, next) with their halos in shared memory; each step loads one new
 * plane. The "2.5D" blocking of the literature (Micikevicius, "3D finite
 * difference computation on GPUs using CUDA", GPGPU-2, 2009), in its shared
 * memory form. */
#include "stencil.cuh"

template <typename T, bool D3, bool RES, int BX, int BP>
__global__ void __launch_bounds__(BX *BP) sliced_kernel(const heat_stencil_args<T> a)
{
    constexpr int PH = D3 ? 1 : 0;
    constexpr int SX = BX + 2, SP = BP + 2 * PH;
    __shared__ T planes[3][SP][SX];

    const int tid = threadIdx.x + BX * threadIdx.y;
    const int x0 = blockIdx.x * BX, p0 = blockIdx.y * BP;
    const int i = x0 + threadIdx.x, j = p0 + threadIdx.y;
    const int w0 = blockIdx.z * a.wchunk;
    const int w1 = min(w0 + a.wchunk, a.nw);

    auto load = [&](int slot, int w) {
        const long long base = (long long)hk_map(w, a.nw, a.bw) * a.sw;
        for (int s = tid; s < SX * SP; s += BX * BP) {
            const int sx = s % SX, sp = s / SX;
            const int gi = hk_map(x0 + sx - 1, a.nx, a.bx);
            const int gj = D3 ? hk_map(p0 + sp - PH, a.np, a.bp) : 0;
            planes[slot][sp][sx] = a.u[base + (long long)gj * a.sp + gi];
        }
    };

    unsigned long long m = 0;
    load(0, w0 - 1);
    load(1, w0);
    for (int w = w0; w < w1; w++) {
        const int k = w - w0;
        const int sm = k % 3, sc = (k + 1) % 3, sn = (k + 2) % 3;
        load(sn, w + 1);
        __syncthreads();
        if (hk_writes<T, D3>(a, i, j, w)) {
            const int tx = threadIdx.x + 1, tp = threadIdx.y + PH;
            hk_update<T, D3, RES>(a, i, j, w, planes[sc][tp][tx], planes[sc][tp][tx - 1],
                                  planes[sc][tp][tx + 1], D3 ? planes[sc][tp - 1][tx] : T(0),
                                  D3 ? planes[sc][tp + 1][tx] : T(0), planes[sm][tp][tx],
                                  planes[sn][tp][tx], m);
        }
        __syncthreads();
    }
    if (RES) hk_block_max(m, a.resid);
}

template <typename T, bool D3, int BX, int BP>
static cudaError_t launch(const heat_stencil_args<T> &a, cudaStream_t stream)
{
    const dim3 block(BX, BP);
    const dim3 grid((a.nx + BX - 1) / BX, (a.np + BP - 1) / BP,
                    (unsigned)((a.nw + a.wchunk - 1) / a.wchunk));
    if (a.resid)
        sliced_kernel<T, D3, true, BX, BP><<<grid, block, 0, stream>>>(a);
    else
        sliced_kernel<T, D3, false, BX, BP><<<grid, block, 0, stream>>>(a);
    return cudaGetLastError();
}

template <typename T>
cudaError_t heat_cuda_launch_sliced(const heat_stencil_args<T> &a, bool d3, cudaStream_t stream)
{
    heat_stencil_args<T> b = a;
    const long long tiles =
        d3 ? (long long)((a.nx + 31) / 32) * ((a.np + 7) / 8) : (long long)((a.nx + 255) / 256);
    b.wchunk = heat_cuda_wchunk(tiles, a.nw, 4);
    return d3 ? launch<T, true, 32, 8>(b, stream) : launch<T, false, 256, 1>(b, stream);
}

template cudaError_t heat_cuda_launch_sliced<float>(const heat_stencil_args<float> &, bool,
                                                    cudaStream_t);
template cudaError_t heat_cuda_launch_sliced<double>(const heat_stencil_args<double> &, bool,
                                                     cudaStream_t);
