/* The GPU's exact sum (xsum.cuh) of an array of doubles, for its test
 * against the CPU's (cuda_backend.h, heat_cuda_xsum). */
#include <cstring>

extern "C" {
#include "backend_impl.h"
#include "xsum.h"
}
#include "cuda_backend.h"
#include "cuda_check.cuh"
#include "xsum.cuh"

/* Thread t adds terms t per .. t per + per - 1, in blocks of 256. */
__global__ void xsum_kernel(const double *v, long long n, int per, heat_gx *g)
{
    heat_gx_begin();
    heat_gx_win w;
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (long long i = t * per; i < n && i < (t + 1) * per; i++) w.add(v[i]);
    heat_gx_flush(w, g);
}

int heat_cuda_xsum(const double *v, int64_t n, int per, heat_xsum *sum, heat_error *err)
{
    if (per < 1) per = 1;
    double *dv = nullptr;
    heat_gx *dg = nullptr;
    heat_gx h;
    const long long threads = (n + per - 1) / per, blocks = (threads + 255) / 256;
    cudaError_t e = cudaMalloc(&dv, (size_t)(n ? n : 1) * sizeof *dv);
    if (e == cudaSuccess) e = cudaMalloc(&dg, sizeof *dg);
    if (e == cudaSuccess) e = cudaMemcpy(dv, v, (size_t)n * sizeof *dv, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaMemset(dg, 0, sizeof *dg);
    if (e == cudaSuccess && blocks > 0) {
        xsum_kernel<<<(unsigned)blocks, 256>>>(dv, n, per, dg);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess) e = cudaMemcpy(&h, dg, sizeof h, cudaMemcpyDeviceToHost);
    cudaFree(dv);
    cudaFree(dg);
    HEAT_CUDA_CHECK(e);
    heat_gx_read(&h, sum);
    return HEAT_OK;
}
