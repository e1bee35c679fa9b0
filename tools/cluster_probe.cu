/* What a barrier across a thread block cluster costs next to a block's own
 * barrier, per iteration of a streaming loop (docs/PERFORMANCE.md, temporal
 * blocking, "halos shared between windows"). One block of 512 threads per
 * multiprocessor (120 KB of shared memory each); each iteration does `work`
 * dependent multiply-adds, a shared-memory load and store, then a barrier:
 * __syncthreads, cluster.sync, cluster.sync with lanes 0 and 31 reading one
 * value from the neighbouring block's shared memory (the x halo of a window),
 * or the same with the barrier split (arrive after the stores, wait after the
 * next iteration's arithmetic). Prints nanoseconds per iteration.
 *
 *   nvcc -O3 -arch=sm_90 -o cluster_probe tools/cluster_probe.cu && ./cluster_probe
 */
#include <cooperative_groups.h>
#include <cstdio>
#include <cstdlib>
namespace cg = cooperative_groups;

/* MODE 0: __syncthreads; 1: cluster.sync; 2: cluster.sync and remote reads;
 * 3: split arrive and wait, and remote reads. */
template <int MODE> __global__ void __launch_bounds__(512, 1) probe(float *out, int iters, int work)
{
    extern __shared__ float sm[]; // [2][512]
    float x = threadIdx.x * 1e-3f, acc = 0.f;
    cg::cluster_group cl = cg::this_cluster();
    const unsigned rank = MODE ? cl.block_rank() : 0, nb = MODE ? cl.num_blocks() : 1;
    const float *left = MODE >= 2 ? cl.map_shared_rank(sm, (rank + nb - 1) % nb) : sm;
    const int lane = threadIdx.x & 31;
    if (MODE == 3) {
        asm volatile("barrier.cluster.arrive.release.aligned;\n" ::);
    }
    for (int n = 0; n < iters; n++) {
        float *rd = sm + (n & 1) * 512, *wr = sm + ((n + 1) & 1) * 512;
        for (int i = 0; i < work; i++) x = fmaf(x, 0.999f, 1e-3f);
        if (MODE == 3) {
            asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::);
        }
        float v = rd[(threadIdx.x + 1) & 511];
        if (MODE >= 2 && (lane == 0 || lane == 31)) v += left[(n & 1) * 512 + threadIdx.x];
        acc += v;
        wr[threadIdx.x] = x + acc;
        if (MODE == 0)
            __syncthreads();
        else if (MODE == 3)
            asm volatile("barrier.cluster.arrive.release.aligned;\n" ::);
        else
            cl.sync();
    }
    if (MODE == 3) {
        asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::);
    }
    out[blockIdx.x * 512 + threadIdx.x] = acc + x;
}

/* A launch of `blocks` blocks of 512 threads in clusters of `cluster` along
 * x, with `smem` bytes of shared memory each (at must outlive cfg). */
static cudaLaunchConfig_t config(int cluster, int blocks, size_t smem, cudaLaunchAttribute *at)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(blocks);
    cfg.blockDim = dim3(512);
    cfg.dynamicSmemBytes = smem;
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = cluster;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    return cfg;
}

template <int MODE> float run(int cluster, int blocks, float *out, int iters, int work, size_t smem)
{
    cudaLaunchAttribute at[1];
    cudaLaunchConfig_t cfg = config(cluster, blocks, smem, at);
    cudaFuncSetAttribute(probe<MODE>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    cudaFuncSetAttribute(probe<MODE>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    float best = 1e30f;
    for (int r = 0; r < 5; r++) {
        cudaEventRecord(a);
        cudaError_t e = cudaLaunchKernelEx(&cfg, probe<MODE>, out, iters, work);
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        if (e != cudaSuccess || cudaGetLastError() != cudaSuccess) {
            printf("launch failed: %s\n", cudaGetErrorString(e));
            return -1;
        }
        float ms;
        cudaEventElapsedTime(&ms, a, b);
        if (ms < best) best = ms;
    }
    return best;
}

int main()
{
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    const size_t smem = 120 * 1024; /* one block a multiprocessor */
    float *out;
    cudaMalloc(&out, (size_t)sms * 512 * sizeof(float) * 2);
    const int iters = 20000;
    printf("multiprocessors %d, %d iterations, ns per iteration\n", sms, iters);
    printf("%6s %8s %12s %12s %12s %12s\n", "work", "cluster", "syncthreads", "cluster.sync",
           "+remote", "split+remote");
    for (int work : {0, 64, 256, 1024}) {
        for (int c : {2, 4, 8}) {
            int blocks = sms / c * c;
            { /* as many whole clusters as fit, one block a multiprocessor */
                int n = 0;
                cudaLaunchAttribute at[1];
                cudaLaunchConfig_t cfg = config(c, blocks, smem, at);
                cudaFuncSetAttribute(probe<1>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     (int)smem);
                cudaOccupancyMaxActiveClusters(&n, probe<1>, &cfg);
                blocks = n * c;
            }
            float t0 = run<0>(1, blocks, out, iters, work, smem);
            float t1 = run<1>(c, blocks, out, iters, work, smem);
            float t2 = run<2>(c, blocks, out, iters, work, smem);
            float t3 = run<3>(c, blocks, out, iters, work, smem);
            printf("%6d %4d(%3d) %12.1f %12.1f %12.1f %12.1f\n", work, c, blocks, t0 * 1e6f / iters,
                   t1 * 1e6f / iters, t2 * 1e6f / iters, t3 * 1e6f / iters);
        }
    }
    return 0;
}
