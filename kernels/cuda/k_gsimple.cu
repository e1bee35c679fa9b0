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
         w += gridDim.z * blockDim.z) {
        if (!hk_writes<T, D3>(a, i, j, w)) continue;
        const long long row = (long long)w * a.sw + (long long)j * a.sp;
        const long long plane = (long long)w * a.sw + i, col = (long long)j * a.sp + i;
        /* Neighbours: inside, wrapped, or the mirrored node (its material too). */
        const long long oxm = row + hk_map(i - 1, a.nx, a.bx),
                        oxp = row + hk_map(i + 1, a.nx, a.bx);
        const long long opm = D3 ? plane + hk_map(j - 1, a.np, a.bp) * a.sp : row + i;
        const long long opp = D3 ? plane + hk_map(j + 1, a.np, a.bp) * a.sp : row + i;
        const long long owm = col + hk_map(w - 1, a.nw, a.bw) * a.sw;
        const long long owp = col + hk_map(w + 1, a.nw, a.bw) * a.sw;
        const T c = a.u[row + i];
        const int cl = a.cls[row + i], am = __ldg(&a.mat[cl]);
        auto mat = [&](long long o) { return (int)__ldg(&a.mat[a.cls[o]]); };
        auto diff = [&](long long o, bool face, int f) {
            return face ? hg_ghost(a, f, am, a.u[o], c) : a.u[o] - c;
        };
        const T dxm = diff(oxm, i == 0 && a.bx[0] == HK_NEUMANN, HG_FXLO);
        const T dxp = diff(oxp, i == a.nx - 1 && a.bx[1] == HK_NEUMANN, HG_FXHI);
        const T dpm = D3 ? diff(opm, j == 0 && a.bp[0] == HK_NEUMANN, HG_FPLO) : T(0);
        const T dpp = D3 ? diff(opp, j == a.np - 1 && a.bp[1] == HK_NEUMANN, HG_FPHI) : T(0);
        const T dwm = diff(owm, w == 0 && a.bw[0] == HK_NEUMANN, HG_FWLO);
        const T dwp = diff(owp, w == a.nw - 1 && a.bw[1] == HK_NEUMANN, HG_FWHI);
        const T v = hg_point<T, D3>(a.w, a.nmat, am, c, __ldg(&a.q[cl]), dxm, dxp, mat(oxm),
                                    mat(oxp), dpm, dpp, D3 ? mat(opm) : 0, D3 ? mat(opp) : 0, dwm,
                                    dwp, mat(owm), mat(owp));
        a.out[row + i] = v;
        if (RES) {
            const unsigned long long d = hk_diff_bits(v, c);
            m = d > m ? d : m;
        }
    }
    if (RES) hk_block_max(m, a.resid);
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
