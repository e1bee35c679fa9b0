/* An exact sum of doubles on the GPU: the long accumulator of kernels/xsum.h
 * with its digits, so that a sum over the grid is the same bits as the CPU
 * backend's, whatever the order in which blocks and threads add their terms.
 *
 * Each thread keeps a window of five 32-bit digits (in 64-bit registers)
 * around its terms' magnitude; a term adds its mantissa's three digits to
 * it, and one out of the window first spills the window into the block's
 * digits in shared memory. At the end of a block (heat_gx_flush) the warps'
 * windows are added there too, and the block's digits, carried, into the
 * device sum `heat_gx`, all with integer atomics: integer additions are
 * exact and associative, so the order does not matter, and a limb of the
 * device sum grows by less than 2^32 a block, so no count of blocks
 * overflows it. The host reads the device sum as a heat_xsum
 * (heat_gx_read). Private to kernels/cuda. */
#ifndef HEAT_CUDA_XSUM_CUH
#define HEAT_CUDA_XSUM_CUH

#include "xsum.h"

/* The device sum: each limb the sum of the digits added to it (two's
 * complement, carried on the host); zero it before a pass. */
struct heat_gx {
    unsigned long long d[HEAT_XSUM_LIMBS];
    unsigned int nonfinite;
};

/* The host's heat_xsum of a device sum copied back. */
static inline void heat_gx_read(const heat_gx *g, heat_xsum *s)
{
    heat_xsum_zero(s);
    for (int i = 0; i < HEAT_XSUM_LIMBS; i++) s->d[i] = (int64_t)g->d[i];
    s->nonfinite = g->nonfinite != 0;
    heat_xsum_normalise(s);
}

#ifdef __CUDACC__

#define HEAT_GX_WIN 5

/* The block's digits (one array a block, whoever asks). */
static __device__ __forceinline__ long long *heat_gx_block()
{
    __shared__ long long bs[HEAT_XSUM_LIMBS];
    return bs;
}

/* Zeroes the block's digits: every thread of the block, before any add. */
static __device__ __forceinline__ void heat_gx_begin()
{
    const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const int nt = blockDim.x * blockDim.y * blockDim.z;
    long long *bs = heat_gx_block();
    for (int i = tid; i < HEAT_XSUM_LIMBS; i += nt) bs[i] = 0;
    __syncthreads();
}

/* A thread's window: digits base .. base + 4 (base < 0: empty). */
struct heat_gx_win {
    int base;
    bool bad; /* a NaN or an infinity was added */
    long long a[HEAT_GX_WIN];

    __device__ __forceinline__ heat_gx_win() : base(-1), bad(false)
    {
#pragma unroll
        for (int q = 0; q < HEAT_GX_WIN; q++) a[q] = 0;
    }

    /* The window into the block's digits (rare: a term outside it). */
    __device__ __forceinline__ void spill()
    {
        long long *bs = heat_gx_block();
#pragma unroll
        for (int q = 0; q < HEAT_GX_WIN; q++) {
            if (a[q] != 0) atomicAdd((unsigned long long *)&bs[base + q], (unsigned long long)a[q]);
            a[q] = 0;
        }
    }

    /* v's mantissa m (|m| < 2^53) at its unit 2^(at - HEAT_XSUM_LOW), as
     * heat_xsum_add places it: three digits from limb at / 32. A subnormal
     * is m 2^-1074 with m below 2^52; any decomposition of a value carries
     * to the same digits. */
    __device__ __forceinline__ void add(double v)
    {
        if (v == 0) return;
        const unsigned long long bits = (unsigned long long)__double_as_longlong(v);
        const int ex = (int)((bits >> 52) & 0x7ff);
        if (ex == 0x7ff) {
            bad = true;
            return;
        }
        const unsigned long long m = (bits & 0xfffffffffffffull) | (ex ? 1ull << 52 : 0ull);
        const int at = (ex ? ex : 1) - 1075 + HEAT_XSUM_LOW;
        const int limb = at >> 5, bit = at & 31;
        const unsigned long long lo = m << bit, hi = bit ? m >> (64 - bit) : 0ull;
        long long d0 = (long long)(lo & 0xffffffffull), d1 = (long long)(lo >> 32),
                  d2 = (long long)hi;
        if (bits >> 63) d0 = -d0, d1 = -d1, d2 = -d2;
        int off = limb - base;
        if (base < 0 || off < 0 || off > HEAT_GX_WIN - 3) {
            if (base >= 0) spill();
            base = limb - 1; /* room for a term a digit lower or higher; limb >= 2 */
            off = 1;
        }
#pragma unroll
        for (int q = 0; q < HEAT_GX_WIN; q++)
            a[q] += q == off ? d0 : q == off + 1 ? d1 : q == off + 2 ? d2 : 0;
    }
};

/* The end of a block's terms (every thread of the block calls it, the
 * whole warps converged; heat_gx_begin before the first): the windows and
 * the block's digits into the device sum. */
static __device__ __forceinline__ void heat_gx_flush(heat_gx_win &w, heat_gx *g)
{
    __shared__ int bad;
    long long *bs = heat_gx_block();
    const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const int nt = blockDim.x * blockDim.y * blockDim.z;
    if (tid == 0) bad = 0;
    __syncthreads();
    /* a warp whose windows share a base adds them by shuffles, one lane
     * writing; else each lane its own */
    int top = w.base;
    for (int o = 16; o > 0; o >>= 1) top = max(top, __shfl_xor_sync(0xffffffffu, top, o));
    const bool same = __all_sync(0xffffffffu, w.base < 0 || w.base == top);
    if (same) {
#pragma unroll
        for (int q = 0; q < HEAT_GX_WIN; q++)
            for (int o = 16; o > 0; o >>= 1) w.a[q] += __shfl_xor_sync(0xffffffffu, w.a[q], o);
    }
    if (top >= 0 && (same ? (tid & 31) == 0 : w.base >= 0)) {
#pragma unroll
        for (int q = 0; q < HEAT_GX_WIN; q++)
            if (w.a[q] != 0)
                atomicAdd((unsigned long long *)&bs[(same ? top : w.base) + q],
                          (unsigned long long)w.a[q]);
    }
    if (__any_sync(0xffffffffu, w.bad) && (tid & 31) == 0) bad = 1;
    __syncthreads();
    if (tid == 0) {
        /* carried: each limb below the last in [0, 2^32) */
        for (int i = 0; i < HEAT_XSUM_LIMBS - 1; i++) {
            const long long c = bs[i] >> 32;
            bs[i] -= c * (1ll << 32);
            bs[i + 1] += c;
        }
        if (bad) atomicOr(&g->nonfinite, 1u);
    }
    __syncthreads();
    for (int i = tid; i < HEAT_XSUM_LIMBS; i += nt)
        if (bs[i] != 0) atomicAdd(&g->d[i], (unsigned long long)bs[i]);
}

#endif
#endif
