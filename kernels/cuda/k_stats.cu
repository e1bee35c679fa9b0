/* history.csv's statistics on the GPU: see stats.cuh. */
#include <cmath>
#include <cstring>

extern "C" {
#include "backend_impl.h"
}
#include "cuda_check.cuh"
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

/* One block per group of HEAT_STATS_GROUP rows: the group's minima, maxima
 * and sums are staged in shared memory by its threads, then one thread
 * folds them in row order, from 0, into g[k], g[groups + k],
 * g[2 groups + k]. (One thread per group reading its rows from memory in
 * turn waited on each load: that and a one-thread final fold took 0.18 ms
 * at 512^3 on an H100, as long as the rows' pass; now 0.04 ms, Nsight
 * Compute, docs/PERFORMANCE.md.) */
__global__ void stats_groups_kernel(const double *d, long long rows, long long groups, double *g)
{
    __shared__ double smin[HEAT_STATS_GROUP], smax[HEAT_STATS_GROUP], ssum[HEAT_STATS_GROUP];
    const long long k = blockIdx.x, r0 = k * HEAT_STATS_GROUP;
    const int n = (int)min((long long)HEAT_STATS_GROUP, rows - r0), t = threadIdx.x;
    if (t < n) smin[t] = d[r0 + t], smax[t] = d[rows + r0 + t], ssum[t] = d[2 * rows + r0 + t];
    __syncthreads();
    if (t != 0) return;
    double lo = INFINITY, hi = -INFINITY, s = 0;
    for (int i = 0; i < n; i++) {
        lo = smin[i] < lo ? smin[i] : lo;
        hi = smax[i] > hi ? smax[i] : hi;
        s = s + ssum[i];
    }
    g[k] = lo, g[groups + k] = hi, g[2 * groups + k] = s;
}

/* The groups in order into out[3] (heat_stats_fold's result from min =
 * +Inf, max = -Inf, sum = 0): one block stages STATS_TILE groups at a time
 * in shared memory, and its first thread folds them. */
#define STATS_TILE 1024
__global__ void stats_final_kernel(const double *g, long long groups, double *out)
{
    __shared__ double smin[STATS_TILE], smax[STATS_TILE], ssum[STATS_TILE];
    const int t = threadIdx.x;
    double lo = INFINITY, hi = -INFINITY, s = 0;
    for (long long base = 0; base < groups; base += STATS_TILE) {
        const int n = (int)min((long long)STATS_TILE, groups - base);
        if (t < n)
            smin[t] = g[base + t], smax[t] = g[groups + base + t],
            ssum[t] = g[2 * groups + base + t];
        __syncthreads();
        if (t == 0)
            for (int i = 0; i < n; i++) {
                lo = smin[i] < lo ? smin[i] : lo;
                hi = smax[i] > hi ? smax[i] : hi;
                s = s + ssum[i];
            }
        __syncthreads();
    }
    if (t == 0) out[0] = lo == 0 ? 0.0 : lo, out[1] = hi == 0 ? 0.0 : hi, out[2] = s;
}

/* heat_stats_fold of the rows in d, in its order: the groups in parallel,
 * then the groups by one thread into out[0..2]; work holds 3 groups. */
static cudaError_t stats_fold(const double *d, long long rows, double *work, double *out,
                              cudaStream_t stream)
{
    const long long groups = (rows + HEAT_STATS_GROUP - 1) / HEAT_STATS_GROUP;
    stats_groups_kernel<<<(unsigned)groups, HEAT_STATS_GROUP, 0, stream>>>(d, rows, groups, work);
    stats_final_kernel<<<1, STATS_TILE, 0, stream>>>(work, groups, out);
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

/* ---- a check step's residual and statistics, between queue and wait ---- */

cudaError_t heat_cuda_checks_create(heat_cuda_checks *q, bool is_float, long long nx, long long ny,
                                    long long nz, long long sy, long long sz)
{
    q->is_float = is_float;
    q->nx = nx, q->ny = ny, q->nz = nz, q->sy = sy, q->sz = sz;
    unsigned dflags = 0;
    if (cudaGetDeviceFlags(&dflags) != cudaSuccess) cudaGetLastError();
    q->blocking = (dflags & cudaDeviceScheduleMask) == cudaDeviceScheduleBlockingSync;
    const unsigned eflags = cudaEventDisableTiming | (q->blocking ? cudaEventBlockingSync : 0u);
    cudaError_t e = cudaMalloc(&q->d_resid, sizeof *q->d_resid);
    if (e == cudaSuccess) e = cudaMallocHost(&q->h_resid, sizeof *q->h_resid);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&q->ev_resid, eflags);
    for (int i = 0; i < 2 && e == cudaSuccess; i++) {
        e = cudaEventCreateWithFlags(&q->ev_stats[i], eflags);
        if (e == cudaSuccess) e = cudaMallocHost(&q->h_stats[i], 3 * sizeof(double));
    }
    return e;
}

void heat_cuda_checks_destroy(heat_cuda_checks *q)
{
    cudaFree(q->d_resid);
    cudaFreeHost(q->h_resid);
    if (q->ev_resid) cudaEventDestroy(q->ev_resid);
    cudaFree(q->d_work);
    for (int i = 0; i < 2; i++) {
        cudaFreeHost(q->h_stats[i]);
        if (q->ev_stats[i]) cudaEventDestroy(q->ev_stats[i]);
    }
    *q = heat_cuda_checks{};
}

void heat_cuda_checks_begin(heat_cuda_checks *q, int residual)
{
    q->before = q->fresh ? q->slot : -1;
    q->queued = 1;
    q->resid_queued = residual != 0;
}

cudaError_t heat_cuda_checks_queue_stats(heat_cuda_checks *q, const void *base, cudaStream_t stream)
{
    /* the slot a history row may still read stays as it is */
    cudaError_t e = heat_cuda_stats_queue(base, q->is_float, q->nx, q->ny, q->nz, q->sy, q->sz,
                                          &q->d_work, &q->h_stats[q->slot ^ 1], stream);
    if (e != cudaSuccess) return e;
    q->slot ^= 1;
    return cudaEventRecord(q->ev_stats[q->slot], stream);
}

cudaError_t heat_cuda_checks_queue_resid(heat_cuda_checks *q, const void *base, cudaStream_t stream)
{
    cudaError_t e =
        cudaMemcpyAsync(q->h_resid, q->d_resid, sizeof *q->h_resid, cudaMemcpyDeviceToHost, stream);
    if (e == cudaSuccess) e = cudaEventRecord(q->ev_resid, stream);
    return e == cudaSuccess ? heat_cuda_checks_queue_stats(q, base, stream) : e;
}

void heat_cuda_checks_failed(heat_cuda_checks *q, cudaStream_t stream)
{
    if (cudaStreamSynchronize(stream) != cudaSuccess) cudaGetLastError();
    q->queued = 0;
    q->fresh = 0;
}

int heat_cuda_checks_wait(heat_cuda_checks *q, cudaStream_t stream, double dt, double *residual,
                          heat_error *err)
{
    if (!q->queued || (residual && !q->resid_queued)) {
        const int none = !q->queued;
        heat_cuda_checks_failed(q, stream);
        return heat_error_set(err, HEAT_ERUNTIME, "cuda backend: no %s queued",
                              none ? "steps" : "residual");
    }
    q->queued = 0;
    if (q->resid_queued && !q->blocking)
        HEAT_CUDA_CHECK(cudaEventSynchronize(q->ev_resid));
    else
        HEAT_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (q->resid_queued) q->fresh = 1;
    if (residual) {
        double m;
        memcpy(&m, q->h_resid, sizeof m); /* the bits of a double (|du| >= 0 orders as integers) */
        if (m != m) m = INFINITY;
        *residual = m / dt;
    }
    return HEAT_OK;
}

int heat_cuda_checks_stats(heat_cuda_checks *q, const void *base, cudaStream_t stream, double *min,
                           double *max, double *sum, heat_error *err)
{
    if (q->queued && q->before < 0)
        return heat_error_set(err, HEAT_ERUNTIME,
                              "cuda backend: the statistics of the field before queued steps "
                              "were not computed");
    if (!q->queued && !q->fresh) {
        HEAT_CUDA_CHECK(heat_cuda_checks_queue_stats(q, base, stream));
        q->fresh = 1;
    }
    const int at = q->queued ? q->before : q->slot;
    HEAT_CUDA_CHECK(cudaEventSynchronize(q->ev_stats[at]));
    *min = q->h_stats[at][0], *max = q->h_stats[at][1], *sum = q->h_stats[at][2];
    return HEAT_OK;
}
