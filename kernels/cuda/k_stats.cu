/* history.csv's statistics on the GPU: see stats.cuh. */
#include <cmath>

extern "C" {
#include "backend_impl.h"
}
#include "stats.cuh"

/* One warp per row of a box of nx x ny x nz values (row r: y = r mod ny,
 * z = r / ny, at base + y sy + z sz): lane l sums the values l, l + 32, ...
 * in order, and the lanes' sums are added in lane order (the order of
 * heat_stats_row, backend_impl.h, so that the bits are the CPU's); the
 * row's minimum and maximum skip NaN as there. */
template <typename T>
__global__ void stats_rows_kernel(const T *u, long long nx, long long ny, long long rows,
                                  long long sy, long long sz, double *rmin, double *rmax,
                                  double *rsum)
{
    static_assert(HEAT_STATS_LANES == 32, "a warp's lanes are the partial sums");
    const long long row = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x & 31;
    if (row >= rows) return; /* whole warps: the block is a multiple of 32 */
    const T *v = u + (row % ny) * sy + (row / ny) * sz;
    double part = 0, lo = INFINITY, hi = -INFINITY;
    for (long long i = lane; i < nx; i += 32) {
        const double x = (double)v[i];
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
        part = part + x;
    }
    double s = 0;
    for (int l = 0; l < 32; l++) s = s + __shfl_sync(0xffffffffu, part, l);
    for (int o = 16; o > 0; o >>= 1) {
        const double a = __shfl_down_sync(0xffffffffu, lo, o);
        const double c = __shfl_down_sync(0xffffffffu, hi, o);
        lo = a < lo ? a : lo;
        hi = c > hi ? c : hi;
    }
    if (lane == 0) rmin[row] = lo, rmax[row] = hi, rsum[row] = s;
}

/* The rows of the box into d: minima at d, maxima at d + rows, sums at
 * d + 2 rows. */
static cudaError_t stats_box(const void *u, bool is_float, long long nx, long long ny, long long nz,
                             long long sy, long long sz, double *d, cudaStream_t stream)
{
    const int threads = 256;
    const long long rows = ny * nz;
    const unsigned blocks = (unsigned)((rows * 32 + threads - 1) / threads);
    if (is_float)
        stats_rows_kernel<float><<<blocks, threads, 0, stream>>>((const float *)u, nx, ny, rows, sy,
                                                                 sz, d, d + rows, d + 2 * rows);
    else
        stats_rows_kernel<double><<<blocks, threads, 0, stream>>>(
            (const double *)u, nx, ny, rows, sy, sz, d, d + rows, d + 2 * rows);
    return cudaGetLastError();
}

/* One thread per group of HEAT_STATS_GROUP rows: the group's minimum,
 * maximum and sum (in row order, from 0) into g, g + groups, g + 2 groups. */
__global__ void stats_groups_kernel(const double *d, long long rows, long long groups, double *g)
{
    const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= groups) return;
    const double *rmin = d, *rmax = d + rows, *rsum = d + 2 * rows;
    double lo = INFINITY, hi = -INFINITY, s = 0;
    const long long end = min(rows, (k + 1) * HEAT_STATS_GROUP);
    for (long long r = k * HEAT_STATS_GROUP; r < end; r++) {
        lo = rmin[r] < lo ? rmin[r] : lo;
        hi = rmax[r] > hi ? rmax[r] : hi;
        s = s + rsum[r];
    }
    g[k] = lo, g[groups + k] = hi, g[2 * groups + k] = s;
}

/* The groups in order, by one thread, into out[3] (heat_stats_fold's
 * result from min = +Inf, max = -Inf, sum = 0). */
__global__ void stats_final_kernel(const double *g, long long groups, double *out)
{
    double lo = INFINITY, hi = -INFINITY, s = 0;
    for (long long k = 0; k < groups; k++) {
        lo = g[k] < lo ? g[k] : lo;
        hi = g[groups + k] > hi ? g[groups + k] : hi;
        s = s + g[2 * groups + k];
    }
    out[0] = lo == 0 ? 0.0 : lo, out[1] = hi == 0 ? 0.0 : hi, out[2] = s;
}

/* heat_stats_fold of the rows in d, in its order: the groups in parallel,
 * then the groups by one thread into out[0..2]; work holds 3 groups. */
static cudaError_t stats_fold(const double *d, long long rows, double *work, double *out,
                              cudaStream_t stream)
{
    const long long groups = (rows + HEAT_STATS_GROUP - 1) / HEAT_STATS_GROUP;
    const int threads = 128;
    stats_groups_kernel<<<(unsigned)((groups + threads - 1) / threads), threads, 0, stream>>>(
        d, rows, groups, work);
    stats_final_kernel<<<1, 1, 0, stream>>>(work, groups, out);
    return cudaGetLastError();
}

cudaError_t heat_cuda_stats_queue(const void *u, bool is_float, long long nx, long long ny,
                                  long long nz, long long sy, long long sz, double **work,
                                  double **host, cudaStream_t stream)
{
    const long long rows = ny * nz, groups = (rows + HEAT_STATS_GROUP - 1) / HEAT_STATS_GROUP;
    cudaError_t e = cudaSuccess;
    if (!*work) e = cudaMalloc(work, (size_t)(rows + groups + 1) * 3 * sizeof(double));
    if (e == cudaSuccess && !*host) e = cudaMallocHost(host, 3 * sizeof(double));
    if (e != cudaSuccess) return e;
    double *d = *work, *g = d + 3 * rows, *out = g + 3 * groups;
    e = stats_box(u, is_float, nx, ny, nz, sy, sz, d, stream);
    if (e == cudaSuccess) e = stats_fold(d, rows, g, out, stream);
    if (e == cudaSuccess)
        e = cudaMemcpyAsync(*host, out, 3 * sizeof(double), cudaMemcpyDeviceToHost, stream);
    return e;
}
