/* Whether a single sweep (k = 1) fed by the bulk copy engine reads closer
 * to the copy's bandwidth than register_tiled (docs/PERFORMANCE.md,
 * "register_tiled: what it does and what limits it": too few loads in flight
 * per multiprocessor). A block of 64 x 4 threads owns a tile of 64 x 16
 * bytes by 4 rows and streams runs of z planes, as register_tiled does; one
 * thread copies each plane's 6 rows (the tile's and the two beside it, 16
 * bytes of x halo on each side) into a ring of R planes in shared memory
 * with cp.async.bulk, R - 2 planes ahead, completed on the slot's mbarrier;
 * every value of the update then comes from shared memory. All faces
 * Dirichlet (held); the update is the formula of stencil.cuh (fused
 * multiply-adds written out), checked bit for bit against a plain kernel.
 * Prints ms per sweep, against a device-to-device copy of the field timed in
 * the same run (both: median of 21).
 *
 *   nvcc -O3 -std=c++17 -arch=sm_90 --fmad=false -o tma_sweep_probe tools/tma_sweep_probe.cu
 *   ./tma_sweep_probe 512 512 512
 */
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

template <typename T> struct vec16;
template <> struct vec16<float> {
    using t = float4;
};
template <> struct vec16<double> {
    using t = double2;
};

template <typename T>
__device__ __forceinline__ T point(T c, T xm, T xp, T ym, T yp, T zm, T zp, T rx, T ry, T rz)
{
    const T dx = fma(T(-2), c, xm + xp), dy = fma(T(-2), c, ym + yp), dz = fma(T(-2), c, zm + zp);
    T s = rx * dx;
    s = fma(ry, dy, s);
    s = fma(rz, dz, s);
    return c + s;
}

struct dims {
    int nx, ny, nz, zrun;
};

/* The plain kernel the probe is checked against: one point a thread. */
template <typename T> __global__ void plain(const T *u, T *out, dims d, T rx, T ry, T rz)
{
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    const long long n = (long long)d.nx * d.ny * d.nz;
    if (i >= n) return;
    const int x = (int)(i % d.nx), y = (int)(i / d.nx % d.ny),
              z = (int)(i / ((long long)d.nx * d.ny));
    const long long sy = d.nx, sz = (long long)d.nx * d.ny;
    if (x == 0 || y == 0 || z == 0 || x == d.nx - 1 || y == d.ny - 1 || z == d.nz - 1) {
        out[i] = u[i];
        return;
    }
    out[i] =
        point<T>(u[i], u[i - 1], u[i + 1], u[i - sy], u[i + sy], u[i - sz], u[i + sz], rx, ry, rz);
}

constexpr int LANES = 64, TY = 4, NROW = TY + 2;

template <typename T, int R>
__global__ void __launch_bounds__(LANES *TY)
    bulk(const T *__restrict__ u, T *__restrict__ out, dims d, T rx, T ry, T rz)
{
    using V = typename vec16<T>::t;
    constexpr int VX = 16 / sizeof(T), TW = LANES * VX, HALO = VX, RW = TW + 2 * HALO;
    extern __shared__ __align__(16) unsigned char smem[];
    T *ring = reinterpret_cast<T *>(smem); /* [R][NROW][RW] */
    unsigned long long *mbar =
        reinterpret_cast<unsigned long long *>(smem + sizeof(T) * R * NROW * RW);
    const int lane = threadIdx.x, ty = threadIdx.y, tid = ty * LANES + lane;
    const int x0 = blockIdx.x * TW, y0 = blockIdx.y * TY;
    const int zb = blockIdx.z * d.zrun, ze = min(d.nz, zb + d.zrun);
    const unsigned mb0 = (unsigned)__cvta_generic_to_shared(mbar);
    const unsigned ring0 = (unsigned)__cvta_generic_to_shared(ring);
    if (tid == 0) {
        for (int s = 0; s < R; s++)
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(mb0 + 8 * s));
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    /* Plane index i is z = zb - 1 + i (clamped into the grid: the faces are held). */
    const int np = ze - zb + 2;
    const int xs = max(0, x0 - HALO), xe = min(d.nx, x0 + TW + HALO);
    const unsigned rowbytes = (unsigned)((xe - xs) * sizeof(T));
    auto issue = [&](int i) {
        const int s = i % R;
        const int z = min(max(zb - 1 + i, 0), d.nz - 1);
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(mb0 + 8 * s),
                     "r"(rowbytes * NROW)
                     : "memory");
        for (int r = 0; r < NROW; r++) {
            const int y = min(max(y0 - 1 + r, 0), d.ny - 1);
            const T *src = u + ((long long)z * d.ny + y) * d.nx + xs;
            const unsigned dst =
                ring0 + (unsigned)(((s * NROW + r) * RW + (xs - (x0 - HALO))) * sizeof(T));
            asm volatile(
                "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, "
                "[%3];" ::"r"(dst),
                "l"(src), "r"(rowbytes), "r"(mb0 + 8 * s)
                : "memory");
        }
    };
    auto wait = [&](int i) {
        const unsigned a = mb0 + 8 * (i % R), par = (i / R) & 1;
        unsigned done;
        do {
            asm volatile(
                "{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                "selp.u32 %0, 1, 0, p;\n\t}"
                : "=r"(done)
                : "r"(a), "r"(par)
                : "memory");
        } while (!done);
    };
    if (tid == 0)
        for (int i = 0; i < R - 1 && i < np; i++) issue(i);
    const int x = x0 + lane * VX, y = y0 + ty;
    const bool yin = y < d.ny;
    wait(0);
    for (int i = 1; i + 1 < np; i++) {
        if (tid == 0 && i + R - 2 < np && i + R - 2 >= R - 1) issue(i + R - 2);
        wait(i);
        wait(i + 1);
        const int z = zb - 1 + i;
        const T *pc = ring + ((i % R) * NROW + ty + 1) * RW + HALO + lane * VX;
        const T *pm = ring + (((i - 1) % R) * NROW + ty + 1) * RW + HALO + lane * VX;
        const T *pp = ring + (((i + 1) % R) * NROW + ty + 1) * RW + HALO + lane * VX;
        const V c = *reinterpret_cast<const V *>(pc), ym = *reinterpret_cast<const V *>(pc - RW),
                yp = *reinterpret_cast<const V *>(pc + RW), zm = *reinterpret_cast<const V *>(pm),
                zp = *reinterpret_cast<const V *>(pp);
        const T left = pc[-1], right = pc[VX];
        const T *cv = reinterpret_cast<const T *>(&c), *ymv = reinterpret_cast<const T *>(&ym),
                *ypv = reinterpret_cast<const T *>(&yp), *zmv = reinterpret_cast<const T *>(&zm),
                *zpv = reinterpret_cast<const T *>(&zp);
        V o;
        T *ov = reinterpret_cast<T *>(&o);
        const bool hold_row = y == 0 || y == d.ny - 1 || z == 0 || z == d.nz - 1;
#pragma unroll
        for (int e = 0; e < VX; e++) {
            const T xm = e ? cv[e - 1] : left, xp = e < VX - 1 ? cv[e + 1] : right;
            const T r = point<T>(cv[e], xm, xp, ymv[e], ypv[e], zmv[e], zpv[e], rx, ry, rz);
            const int xe_ = x + e;
            ov[e] = hold_row || xe_ == 0 || xe_ == d.nx - 1 ? cv[e] : r;
        }
        if (yin && x + VX <= d.nx)
            *reinterpret_cast<V *>(out + ((long long)z * d.ny + y) * d.nx + x) = o;
        __syncthreads();
    }
}

static float median(std::vector<float> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

template <typename T, int R> static void run(dims d)
{
    constexpr int VX = 16 / sizeof(T), TW = LANES * VX, RW = TW + 2 * VX;
    const size_t n = (size_t)d.nx * d.ny * d.nz, bytes = n * sizeof(T);
    T *u, *a, *b;
    cudaMalloc(&u, bytes);
    cudaMalloc(&a, bytes);
    cudaMalloc(&b, bytes);
    std::vector<T> h(n);
    srand(7);
    for (auto &v : h) v = (T)rand() / RAND_MAX;
    cudaMemcpy(u, h.data(), bytes, cudaMemcpyHostToDevice);
    const T rx = T(0.1), ry = T(0.12), rz = T(0.14);
    plain<T><<<(unsigned)((n + 255) / 256), 256>>>(u, a, d, rx, ry, rz);
    const size_t sh = sizeof(T) * R * NROW * RW + 8 * R;
    cudaFuncSetAttribute(bulk<T, R>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sh);
    int per = 0, sms = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, bulk<T, R>, LANES * TY, sh);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    /* Runs of z planes so that the blocks fill the resident slots in one wave. */
    const long long tiles = (long long)((d.nx + TW - 1) / TW) * ((d.ny + TY - 1) / TY);
    int runs = (int)std::max(1ll, (long long)per * sms / tiles);
    runs = std::min(runs, std::max(1, d.nz / 16));
    dims dd = d;
    dd.zrun = (d.nz + runs - 1) / runs;
    const dim3 grid((d.nx + TW - 1) / TW, (d.ny + TY - 1) / TY, (d.nz + dd.zrun - 1) / dd.zrun);
    cudaMemset(b, 0, bytes);
    bulk<T, R><<<grid, dim3(LANES, TY), sh>>>(u, b, dd, rx, ry, rz);
    cudaError_t e = cudaDeviceSynchronize();
    std::vector<T> ha(n), hb(n);
    cudaMemcpy(ha.data(), a, bytes, cudaMemcpyDeviceToHost);
    cudaMemcpy(hb.data(), b, bytes, cudaMemcpyDeviceToHost);
    const bool same = e == cudaSuccess && memcmp(ha.data(), hb.data(), bytes) == 0;
    cudaEvent_t t0, t1;
    cudaEventCreate(&t0);
    cudaEventCreate(&t1);
    std::vector<float> tc, ts;
    for (int r = 0; r < 21; r++) {
        float ms;
        cudaEventRecord(t0);
        cudaMemcpyAsync(a, u, bytes, cudaMemcpyDeviceToDevice);
        cudaEventRecord(t1);
        cudaEventSynchronize(t1);
        cudaEventElapsedTime(&ms, t0, t1);
        tc.push_back(ms);
        cudaEventRecord(t0);
        bulk<T, R><<<grid, dim3(LANES, TY), sh>>>(u, b, dd, rx, ry, rz);
        cudaEventRecord(t1);
        cudaEventSynchronize(t1);
        cudaEventElapsedTime(&ms, t0, t1);
        ts.push_back(ms);
    }
    const float mc = median(tc), msw = median(ts);
    printf(
        "%dx%dx%d %s ring %d: %d blocks/SM, %d runs, sweep %.4f ms (%.1f GB/s), copy %.4f ms (%.1f "
        "GB/s), %.1f%% of copy, %s%s\n",
        d.nx, d.ny, d.nz, sizeof(T) == 4 ? "float " : "double", R, per, runs, msw,
        2e-6 * bytes / msw, mc, 2e-6 * bytes / mc, 100.0 * mc / msw, same ? "exact" : "DIFFERS",
        e == cudaSuccess ? "" : cudaGetErrorString(e));
    cudaFree(u);
    cudaFree(a);
    cudaFree(b);
}

int main(int argc, char **argv)
{
    dims d = {argc > 3 ? atoi(argv[1]) : 512, argc > 3 ? atoi(argv[2]) : 512,
              argc > 3 ? atoi(argv[3]) : 512, 0};
    run<float, 4>(d);
    run<float, 6>(d);
    run<float, 8>(d);
    run<double, 4>(d);
    run<double, 6>(d);
    run<double, 8>(d);
    return 0;
}
