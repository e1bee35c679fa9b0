/* The kernels of a rank's part (cuda_part.cu): a box of a level packed into
 * a contiguous buffer and back (the halo messages), and the residual of the
 * owned box from two levels. No arithmetic on values: a copy is exact, and
 * the residual is |u' - u| in double folded with a max, as in the sweeps
 * (stencil.cuh: hk_diff_bits), so it is the same in any order. */
#include <algorithm>

#include "halo_cuda.h"
#include "stencil.cuh"

/* One thread per value of the box, x fastest; a grid-stride loop. */
template <typename T, bool TO_BUF>
__global__ void copy_box_kernel(T *__restrict__ field, T *__restrict__ buf, hc_box b, long long sy,
                                long long sz)
{
    const long long nx = b.hi[0] - b.lo[0], ny = b.hi[1] - b.lo[1], nz = b.hi[2] - b.lo[2];
    const long long n = nx * ny * nz;
    for (long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x; idx < n;
         idx += (long long)gridDim.x * blockDim.x) {
        const long long i = idx % nx, j = (idx / nx) % ny, k = idx / (nx * ny);
        const long long at = (b.lo[2] + k) * sz + (b.lo[1] + j) * sy + b.lo[0] + i;
        if (TO_BUF)
            buf[idx] = field[at];
        else
            field[at] = buf[idx];
    }
}

static dim3 grid_for(long long n)
{
    long long blocks = (n + 255) / 256;
    if (blocks > 65535LL * 8) blocks = 65535LL * 8;
    return dim3((unsigned)(blocks < 1 ? 1 : blocks));
}

template <typename T>
cudaError_t heat_cuda_launch_copy_box(T *field, T *buf, const hc_box &b, long long sy, long long sz,
                                      bool to_buf, cudaStream_t s)
{
    const long long n =
        (b.hi[0] - b.lo[0]) * (long long)(b.hi[1] - b.lo[1]) * (long long)(b.hi[2] - b.lo[2]);
    if (n <= 0) return cudaSuccess;
    if (to_buf)
        copy_box_kernel<T, true><<<grid_for(n), 256, 0, s>>>(field, buf, b, sy, sz);
    else
        copy_box_kernel<T, false><<<grid_for(n), 256, 0, s>>>(field, buf, b, sy, sz);
    return cudaGetLastError();
}

/* Threads of 32 x 8 over x and y, blocks over x, y and z, each thread
 * striding over its nodes: no division per node. (A grid-stride loop over
 * a flat index paid three 64-bit divisions a node; with this kernel and the
 * statistics queued behind it, a check's gap on two H200s went from 1.09 to
 * 0.54 ms at 512^3 a GPU, docs/PERFORMANCE.md.) */
template <typename T>
__global__ void __launch_bounds__(256)
    box_residual_kernel(const T *__restrict__ a, const T *__restrict__ b, hc_box box, long long sy,
                        long long sz, unsigned long long *out)
{
    const long long nx = box.hi[0] - box.lo[0], ny = box.hi[1] - box.lo[1],
                    nz = box.hi[2] - box.lo[2];
    unsigned long long m = 0;
    for (long long k = blockIdx.z; k < nz; k += gridDim.z)
        for (long long j = blockIdx.y * 8LL + threadIdx.y; j < ny; j += gridDim.y * 8LL) {
            const long long row = (box.lo[2] + k) * sz + (box.lo[1] + j) * sy + box.lo[0];
            for (long long i = blockIdx.x * 32LL + threadIdx.x; i < nx; i += gridDim.x * 32LL) {
                const unsigned long long d = hk_diff_bits(a[row + i], b[row + i]);
                m = d > m ? d : m;
            }
        }
    hk_block_max(m, out);
}

template <typename T>
cudaError_t heat_cuda_launch_box_residual(const T *a, const T *b, const hc_box &box, long long sy,
                                          long long sz, unsigned long long *out, cudaStream_t s)
{
    const long long nx = box.hi[0] - box.lo[0], ny = box.hi[1] - box.lo[1],
                    nz = box.hi[2] - box.lo[2];
    if (nx <= 0 || ny <= 0 || nz <= 0) return cudaSuccess;
    /* About 4096 blocks (one atomicMax each), each thread a few nodes of a
     * row apart by 32 x gx. */
    const long long gx = std::min<long long>((nx + 31) / 32, 8);
    const long long gy = std::min<long long>((ny + 7) / 8, 16);
    const long long gz = std::min<long long>(nz, std::max<long long>(1, 4096 / (gx * gy)));
    box_residual_kernel<T><<<dim3((unsigned)gx, (unsigned)gy, (unsigned)gz), dim3(32, 8), 0, s>>>(
        a, b, box, sy, sz, out);
    return cudaGetLastError();
}

template cudaError_t heat_cuda_launch_copy_box<float>(float *, float *, const hc_box &, long long,
                                                      long long, bool, cudaStream_t);
template cudaError_t heat_cuda_launch_copy_box<double>(double *, double *, const hc_box &,
                                                       long long, long long, bool, cudaStream_t);
template cudaError_t heat_cuda_launch_box_residual<float>(const float *, const float *,
                                                          const hc_box &, long long, long long,
                                                          unsigned long long *, cudaStream_t);
template cudaError_t heat_cuda_launch_box_residual<double>(const double *, const double *,
                                                           const hc_box &, long long, long long,
                                                           unsigned long long *, cudaStream_t);
