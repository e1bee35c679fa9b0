/* What memory bandwidth a sweep with materials can reach at best: plain
 * streaming kernels that move exactly the bytes of one sweep (read the
 * field, write the next level) with and without the class byte per node,
 * flat and in the plane-streaming order of the register-tiled kernels
 * (64 x 4 threads, groups of 16 bytes, runs of planes along z), against
 * the device-to-device copy. No stencil arithmetic: a ceiling for the
 * kernels of k_gregister.cu and k_gring.cu, not a kernel of heat.
 *
 *   nvcc -O3 -arch=sm_90 -o stream_probe tools/stream_probe.cu
 *   ./stream_probe [n]        (an n^3 grid, default 512)
 *
 * Prints GB/s counting 2 sizeof(T) (+1 with classes) bytes a node, median
 * of 21 timed runs (CUDA events), and the ratio to the copy.
 */
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

#define PROBE_NAME "stream_probe"
#include "probe.cuh"

template <typename T> struct V16;
template <> struct V16<float> {
    using t = float4;
    static constexpr int n = 4;
};
template <> struct V16<double> {
    using t = double2;
    static constexpr int n = 2;
};

__device__ __forceinline__ float4 addc(float4 v, unsigned c)
{
    return make_float4(v.x + (float)(c & 255u), v.y + (float)(c >> 8 & 255u),
                       v.z + (float)(c >> 16 & 255u), v.w + (float)(c >> 24));
}
__device__ __forceinline__ double2 addc(double2 v, unsigned c)
{
    return make_double2(v.x + (double)(c & 255u), v.y + (double)(c >> 8 & 255u));
}

template <int N> __device__ __forceinline__ unsigned ldc(const uint8_t *p)
{
    if constexpr (N == 4)
        return *reinterpret_cast<const unsigned *>(p);
    else
        return *reinterpret_cast<const unsigned short *>(p);
}

/* Flat: one 16-byte group per thread (and its class word with CLS). */
template <typename T, bool CLS>
__global__ void flat(const T *__restrict__ u, const uint8_t *__restrict__ c, T *__restrict__ o,
                     long long groups)
{
    using V = typename V16<T>::t;
    constexpr int n = V16<T>::n;
    for (long long g = blockIdx.x * (long long)blockDim.x + threadIdx.x; g < groups;
         g += (long long)gridDim.x * blockDim.x) {
        V v = reinterpret_cast<const V *>(u)[g];
        if (CLS) v = addc(v, ldc<n>(c + g * n));
        reinterpret_cast<V *>(o)[g] = v;
    }
}

/* Planes: a 64 x 4 block owns a tile of 64 groups x 4 rows and streams
 * `run` planes of it along z, loading each plane one ahead as the stencil
 * kernels do. */
template <typename T, bool CLS>
__global__ void __launch_bounds__(256)
    planes(const T *__restrict__ u, const uint8_t *__restrict__ c, T *__restrict__ o, int n,
           int run)
{
    using V = typename V16<T>::t;
    constexpr int vn = V16<T>::n;
    const int x = (blockIdx.x * 64 + threadIdx.x) * vn, y = blockIdx.y * 4 + threadIdx.y;
    const int z0 = blockIdx.z * run, z1 = min(z0 + run, n);
    if (x >= n || y >= n) return;
    const long long sp = n, sw = (long long)n * n;
    long long off = z0 * sw + y * sp + x;
    V nx = *reinterpret_cast<const V *>(u + off);
    unsigned cn = CLS ? ldc<vn>(c + off) : 0;
    for (int z = z0; z < z1; z++, off += sw) {
        V v = nx;
        unsigned cv = cn;
        if (z + 1 < z1) {
            nx = *reinterpret_cast<const V *>(u + off + sw);
            if (CLS) cn = ldc<vn>(c + off + sw);
        }
        if (CLS) v = addc(v, cv);
        *reinterpret_cast<V *>(o + off) = v;
    }
}

template <typename T> static void probe(int n, int sms)
{
    const long long N = (long long)n * n * n;
    T *u, *o;
    uint8_t *c;
    CK(cudaMalloc(&u, N * sizeof(T)));
    CK(cudaMalloc(&o, N * sizeof(T)));
    CK(cudaMalloc(&c, N));
    CK(cudaMemset(u, 0, N * sizeof(T)));
    CK(cudaMemset(c, 1, N));
    const char *tn = sizeof(T) == 4 ? "float" : "double";
    const double b2 = 2.0 * sizeof(T) * N, b3 = b2 + N;
    const float cp =
        median_ms([&] { CK(cudaMemcpyAsync(o, u, N * sizeof(T), cudaMemcpyDeviceToDevice)); });
    printf("%-6s %-28s %8.4f ms %8.1f GB/s  %6.1f%%\n", tn, "cudaMemcpy (copy)", cp, b2 / cp / 1e6,
           100.0);
    const long long groups = N / V16<T>::n;
    auto row = [&](const char *what, float ms, double bytes) {
        printf("%-6s %-28s %8.4f ms %8.1f GB/s  %6.1f%%\n", tn, what, ms, bytes / ms / 1e6,
               100.0 * (bytes / ms) / (b2 / cp));
    };
    row("flat, no classes", median_ms([&] { flat<T, false><<<sms * 8, 256>>>(u, c, o, groups); }),
        b2);
    row("flat, with classes", median_ms([&] { flat<T, true><<<sms * 8, 256>>>(u, c, o, groups); }),
        b3);
    const int tx = (n / V16<T>::n + 63) / 64, ty = (n + 3) / 4;
    for (int runs = 1; runs <= 4; runs *= 2) {
        const int run = (n + runs - 1) / runs;
        char what[64];
        snprintf(what, sizeof what, "planes x%d, no classes", runs);
        row(what, median_ms([&] {
                planes<T, false><<<dim3(tx, ty, runs), dim3(64, 4)>>>(u, c, o, n, run);
            }),
            b2);
        snprintf(what, sizeof what, "planes x%d, with classes", runs);
        row(what, median_ms([&] {
                planes<T, true><<<dim3(tx, ty, runs), dim3(64, 4)>>>(u, c, o, n, run);
            }),
            b3);
    }
    CK(cudaFree(u));
    CK(cudaFree(o));
    CK(cudaFree(c));
}

int main(int argc, char **argv)
{
    const int n = argc > 1 ? atoi(argv[1]) : 512;
    if (n < 16 || n % 4) {
        fprintf(stderr, "stream_probe: n = %d: give a multiple of 4, at least 16\n", n);
        return 2;
    }
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("%s, %d SMs, %d^3\n", p.name, p.multiProcessorCount, n);
    probe<float>(n, p.multiProcessorCount);
    probe<double>(n, p.multiProcessorCount);
    return 0;
}
