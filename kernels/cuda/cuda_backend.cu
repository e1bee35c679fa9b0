/* The CUDA backend: two time levels on the GPU, one kernel launch per step
 * on one stream, the residual reduced inside the last sweep of a check step
 * and copied back as one 8-byte scalar, followed by the field's statistics
 * for history.csv (three values). Nothing else crosses to the host in the
 * time loop.
 */
#include "cuda_backend.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <unistd.h>

#include <algorithm>

#include "cuda_check.cuh"
#include "cuda_mg.h"
#include "general.cuh"
#include "stats.cuh"
#include "stencil.cuh"

extern "C" {
#include "halo_plan.h"
#include "mg.h"
}

static_assert(HEAT_CUDA_TEMPORAL_MAX == HEAT_TEMPORAL_BLOCK_MAX,
              "the kernels serve every depth the deck accepts");
static_assert((int)HK_DIRICHLET == (int)HEAT_BC_DIRICHLET &&
                  (int)HK_NEUMANN == (int)HEAT_BC_NEUMANN &&
                  (int)HK_PERIODIC == (int)HEAT_BC_PERIODIC,
              "kernel bc codes follow heat_bc_type");
static_assert(HG_CLASSES == HEAT_CLASSES_MAX, "a class is one byte");

typedef struct cuda_state {
    void *u, *v;   /* current and next time level */
    void *scratch; /* bench only: the copy's target */
    /* a check step's residual and history.csv's statistics between
     * cuda_queue and cuda_wait (stats.cuh) */
    heat_cuda_checks q;
    cudaStream_t stream;
    cudaEvent_t ev[4];
    size_t bytes; /* the field's values */
    /* The buffers' layout: rows of `nx` values `rp` values apart, planes of
     * `plane` = nx ny values `pitch` values apart, `planes` of them, so
     * `held` bytes each. rp rounds nx up to 16 bytes, so that every row
     * starts on a 16-byte boundary and the kernels' vector loads serve every
     * grid (heat_gpu_row_pitch; pitch = rp ny); a multigrid case rounds nx
     * up to 4 values in either precision (heat_mg_gpu_row_pitch, so that
     * mixed precision keeps one layout) and may pad its planes by rows too
     * (heat_mg_gpu_rows: pitch = rp rows). What lies between rows and
     * planes starts as zeros and is never read for a node (the fused passes
     * store a row's last group whole, padding and all). */
    long long nx, rp, plane, pitch, planes;
    size_t held;
    int three_d;
    heat_kernel kernel;
    int depth;           /* steps fused per pass (temporal blocking; 1 without) */
    char auto_note[160]; /* what measure_depth timed, or "" */
    char device[256];
    heat_stencil_args<float> af;
    heat_stencil_args<double> ad;
    /* The variable-coefficient update (c->d.general): the classes, laid out
     * as the field, and the tables, once set_classes has run. */
    uint8_t *d_cls;
    void *d_tab;
    int general;
    heat_general_args<float> gf;
    heat_general_args<double> gd;
    cuda_mg *mg; /* multigrid (heat_case_multigrid), k_mg.cu */
    /* A general multigrid case: the host's classes and tables, which the
     * hierarchy borrows (kernels/mg.h). */
    uint8_t *h_cls;
    heat_coeffs h_k;
} cuda_state;

static int env_int(const char *name, int fallback)
{
    const char *s = getenv(name);
    if (!s || !*s) return fallback;
    int v = atoi(s);
    return v > 0 ? v : fallback;
}

/* What the run rules read once: the multiprocessors, and the overrides
 * HEAT_CUDA_WAVES, HEAT_CUDA_WCHUNK and HEAT_CUDA_FILL. */
static struct {
    int sms, waves, forced, fill;
} wchunk_env;

static void wchunk_init(void)
{
    if (wchunk_env.sms) return;
    int dev = 0, sms = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
        sms = 1;
    wchunk_env.waves = env_int("HEAT_CUDA_WAVES", 1);
    wchunk_env.forced = env_int("HEAT_CUDA_WCHUNK", 0);
    const char *f = getenv("HEAT_CUDA_FILL");
    wchunk_env.fill = !(f && *f && atoi(f) == 0);
    wchunk_env.sms = sms;
}

/* About `waves` waves of resident blocks over the whole grid, at least 16
 * planes per run where the grid has them. */
static int wchunk_waves(long long tiles, int nw, int blocks_per_sm)
{
    long long resident = (long long)wchunk_env.sms * blocks_per_sm * wchunk_env.waves;
    long long runs = resident / (tiles > 0 ? tiles : 1);
    if (runs < 1) runs = 1;
    int chunk = (int)((nw + runs - 1) / runs);
    int floor_ = nw < 16 ? nw : 16;
    return chunk < floor_ ? floor_ : chunk;
}

/* The number of runs r a tile takes (1 to 16, runs of at least 16 planes
 * where the grid has them) that maximizes the share of the slots busy over
 * whole waves, tiles r / slots over its ceiling, times the share of planes
 * loaded that are updated, run / (run + 2). */
static int wchunk_filled(long long tiles, int nw, int blocks_per_sm)
{
    const double slots = (double)wchunk_env.sms * (blocks_per_sm > 0 ? blocks_per_sm : 1);
    const int least = nw < 16 ? nw : 16;
    double best = -1;
    int chunk = nw;
    for (int r = 1; r <= 16; r++) {
        const int c = (nw + r - 1) / r;
        if (c < least) break;
        const double runs = (double)((nw + c - 1) / c);
        const double waves = (double)(tiles > 0 ? tiles : 1) * runs / slots;
        const double eff = waves / ceil(waves) * c / (c + 2.0);
        if (eff > best + 1e-9) best = eff, chunk = c;
    }
    return chunk;
}

/* At most 65535 runs (the grid's z limit), at most the grid. */
static int wchunk_clamp(int chunk, int nw)
{
    int least = (nw + 65534) / 65535;
    if (chunk < least) chunk = least;
    if (chunk > nw) chunk = nw;
    return chunk < 1 ? 1 : chunk;
}

/* Planes per block run for the streaming kernels: about `waves` waves of
 * resident blocks over the whole grid (HEAT_CUDA_WAVES, default 1: every
 * block resident at once, the w halo costing 2 planes per run).
 * HEAT_CUDA_WCHUNK sets the run length directly, for tuning. */
int heat_cuda_wchunk(long long tiles, int nw, int blocks_per_sm)
{
    wchunk_init();
    const int chunk =
        wchunk_env.forced ? wchunk_env.forced : wchunk_waves(tiles, nw, blocks_per_sm);
    return wchunk_clamp(chunk, nw);
}

/* Planes per block run where a tile's runs should fill the resident slots
 * rather than stop at one wave (wchunk_filled). At 512^3 with 256 tiles for
 * 396 slots (a kernel of 64 x 4 tiles at 3 blocks per multiprocessor) this
 * takes 3 runs of 171 planes, 1.94 waves, where heat_cuda_wchunk takes one
 * of 512 and leaves a third of the slots empty. HEAT_CUDA_WCHUNK sets the
 * run length directly; HEAT_CUDA_FILL=0 takes heat_cuda_wchunk's runs, for
 * comparison. */
int heat_cuda_wchunk_fill(long long tiles, int nw, int blocks_per_sm)
{
    wchunk_init();
    const int chunk = wchunk_env.forced ? wchunk_env.forced
                      : wchunk_env.fill ? wchunk_filled(tiles, nw, blocks_per_sm)
                                        : wchunk_waves(tiles, nw, blocks_per_sm);
    return wchunk_clamp(chunk, nw);
}

/* Planes per block run for at least `waves` waves of resident blocks (the
 * runs a tile takes rounded up), at least `least` planes each where the
 * grid has them: for kernels whose blocks take unequal times, where one
 * wave leaves multiprocessors idle at its end. HEAT_CUDA_WCHUNK sets the
 * run length directly. */
int heat_cuda_wchunk_waves(long long tiles, int nw, int blocks_per_sm, int waves, int least)
{
    wchunk_init();
    if (wchunk_env.forced) return wchunk_clamp(wchunk_env.forced, nw);
    const long long slots = (long long)wchunk_env.sms * blocks_per_sm, t = tiles > 0 ? tiles : 1;
    const long long runs = (waves * slots + t - 1) / t;
    const long long c = (nw + runs - 1) / runs;
    return wchunk_clamp((int)(c < least ? least : c > nw ? nw : c), nw);
}

/* A face's code in the kernels: Neumann, flux and convective faces are all
 * mirrored (HK_NEUMANN); the general kernels tell them apart by their
 * tables. */
static int hk_code(heat_bc_type t)
{
    return t == HEAT_BC_DIRICHLET ? HK_DIRICHLET : t == HEAT_BC_PERIODIC ? HK_PERIODIC : HK_NEUMANN;
}

extern "C" int heat_cuda_face_code(int bc_type)
{
    return hk_code((heat_bc_type)bc_type);
}

template <typename T>
static void fill_args(const heat_case *c, long long rp, heat_stencil_args<T> &a)
{
    memset(&a, 0, sizeof a);
    const int d3 = c->grid.dims == 3;
    const int64_t nx = c->grid.n[0], ny = c->grid.n[1], nz = c->grid.n[2];
    /* 3D: p = y, w = z. 2D: no p, w = y. */
    const int ax_p = 1, ax_w = d3 ? 2 : 1;
    a.nx = (int)nx;
    a.np = d3 ? (int)ny : 1;
    a.nw = d3 ? (int)nz : (int)ny;
    a.sp = rp;
    a.sw = d3 ? rp * ny : rp;
    a.xpad = (int)(rp - nx);
    a.rx = (T)c->d.r[0];
    a.rp = d3 ? (T)c->d.r[ax_p] : T(0);
    a.rw = (T)c->d.r[ax_w];
    for (int s = 0; s < 2; s++) {
        a.gx[s] = (T)(2.0 * c->d.h[0] * c->bc[HEAT_X_LO + s].gradient);
        a.bx[s] = hk_code(c->bc[HEAT_X_LO + s].type);
        a.gp[s] = d3 ? (T)(2.0 * c->d.h[ax_p] * c->bc[2 * ax_p + s].gradient) : T(0);
        a.bp[s] = d3 ? hk_code(c->bc[2 * ax_p + s].type) : HK_PERIODIC;
        a.gw[s] = (T)(2.0 * c->d.h[ax_w] * c->bc[2 * ax_w + s].gradient);
        a.bw[s] = hk_code(c->bc[2 * ax_w + s].type);
    }
    a.wchunk = a.nw;
}

template <typename T>
static cudaError_t launch(heat_kernel k, const heat_stencil_args<T> &a, bool d3, int depth,
                          cudaStream_t s)
{
    switch (k) {
    case HEAT_KERNEL_NAIVE:
        return heat_cuda_launch_naive<T>(a, d3, s);
    case HEAT_KERNEL_TILED:
        return heat_cuda_launch_tiled<T>(a, d3, s);
    case HEAT_KERNEL_SLICED:
        return heat_cuda_launch_sliced<T>(a, d3, s);
    case HEAT_KERNEL_REGISTER_TILED:
    default:
        return heat_cuda_launch_temporal<T>(a, d3, depth, s);
    }
}

/* The variable-coefficient update: register_tiled (fusing `depth` steps),
 * or the simple general kernel for the others. */
template <typename T>
static cudaError_t launch_general(heat_kernel k, const heat_general_args<T> &a, bool d3, int depth,
                                  cudaStream_t s)
{
    if (k == HEAT_KERNEL_REGISTER_TILED) return heat_cuda_launch_gtemporal<T>(a, d3, depth, s);
    return heat_cuda_launch_gsimple<T>(a, d3, s);
}

/* One pass u -> v of a general case. */
static cudaError_t sweep_general(cuda_state *s, bool resid, int depth)
{
    cudaError_t e;
    if (s->af.nx) {
        heat_general_args<float> a = s->gf;
        a.u = (const float *)s->u;
        a.out = (float *)s->v;
        a.resid = resid ? s->q.d_resid : nullptr;
        e = launch_general<float>(s->kernel, a, s->three_d, depth, s->stream);
    } else {
        heat_general_args<double> a = s->gd;
        a.u = (const double *)s->u;
        a.out = (double *)s->v;
        a.resid = resid ? s->q.d_resid : nullptr;
        e = launch_general<double>(s->kernel, a, s->three_d, depth, s->stream);
    }
    std::swap(s->u, s->v);
    return e;
}

/* One pass u -> v of `depth` steps (1 for every kernel but register_tiled)
 * of the case's precision, then the levels swap. */
static cudaError_t sweep(cuda_state *s, bool resid, int depth)
{
    s->q.fresh = 0;
    if (s->general) return sweep_general(s, resid, depth);
    cudaError_t e;
    if (s->af.nx) {
        heat_stencil_args<float> a = s->af;
        a.u = (const float *)s->u;
        a.out = (float *)s->v;
        a.resid = resid ? s->q.d_resid : nullptr;
        e = launch<float>(s->kernel, a, s->three_d, depth, s->stream);
    } else {
        heat_stencil_args<double> a = s->ad;
        a.u = (const double *)s->u;
        a.out = (double *)s->v;
        a.resid = resid ? s->q.d_resid : nullptr;
        e = launch<double>(s->kernel, a, s->three_d, depth, s->stream);
    }
    std::swap(s->u, s->v);
    return e;
}

/* solver.temporal_block = "auto" on one GPU: the depth of the table
 * (heat_case_auto_depth, measured on an H100) and the depths next to it are
 * timed on this GPU before the field arrives (the general update once its
 * classes and tables are set): passes from u into v of a zeroed field, which
 * leave u as it is, the depths alternating; each depth's time is the median
 * of 5 rounds of at least 2 ms of passes, and the fastest per step is kept
 * (every depth gives the same bits, so the choice changes only the speed).
 * The table's k stays unless another is more than 0.5% faster, so that
 * noise does not move it. The depths: heat_case_auto_range. What was
 * timed goes to `note`. */
static cudaError_t measure_depth(cuda_state *s, const heat_case *c, char *note, size_t n)
{
    const int kt = s->depth;
    int lo, hi;
    heat_case_auto_range(c, &lo, &hi);
    const int nc = hi - lo + 1;
    if (nc < 2) return cudaSuccess;
    int cand[3];
    for (int i = 0; i < nc; i++) cand[i] = lo + i;
    cudaError_t e = cudaMemsetAsync(s->u, 0, s->held, s->stream);
    /* `count` passes of k steps from u into v (u stays the field); their
     * time in *ms where asked. */
    auto passes = [&](int k, int count, float *ms) {
        cudaError_t r = ms ? cudaEventRecord(s->ev[0], s->stream) : cudaSuccess;
        for (int i = 0; i < count && r == cudaSuccess; i++) {
            r = sweep(s, false, k);
            std::swap(s->u, s->v);
        }
        if (ms && r == cudaSuccess) r = cudaEventRecord(s->ev[1], s->stream);
        if (ms && r == cudaSuccess) r = cudaEventSynchronize(s->ev[1]);
        if (ms && r == cudaSuccess) r = cudaEventElapsedTime(ms, s->ev[0], s->ev[1]);
        return r;
    };
    float ms = 0;
    int reps[3];
    /* One pass each loads the kernel; a second, timed, sizes the rounds. */
    for (int i = 0; i < nc && e == cudaSuccess; i++) {
        e = passes(cand[i], 1, nullptr);
        if (e == cudaSuccess) e = passes(cand[i], 1, &ms);
        reps[i] = ms > 0 ? (int)std::min(1000.0, std::ceil(2.0 / ms)) : 1000;
    }
    double t[3][5];
    for (int r = 0; r < 5 && e == cudaSuccess; r++)
        for (int i = 0; i < nc && e == cudaSuccess; i++) {
            e = passes(cand[i], reps[i], &ms);
            t[i][r] = (double)ms / ((double)reps[i] * cand[i]);
        }
    if (e != cudaSuccess) return e;
    double med[3];
    const int own = kt - lo;
    for (int i = 0; i < nc; i++) {
        std::sort(t[i], t[i] + 5);
        med[i] = t[i][2];
    }
    int best = own;
    for (int i = 0; i < nc; i++)
        if (med[i] < med[best] && med[i] < 0.995 * med[own]) best = i;
    s->depth = cand[best];
    size_t used = (size_t)snprintf(note, n, "auto: measured");
    for (int i = 0; i < nc && used < n; i++)
        used += (size_t)snprintf(note + used, n - used, "%s k = %d %.4g ms", i ? "," : "", cand[i],
                                 med[i]);
    if (used < n) snprintf(note + used, n - used, " a step");
    return cudaSuccess;
}

/* Values of `vs` bytes, one a node (the field, or the classes with vs = 1),
 * between the host's contiguous layout and the device buffers' (cuda_state:
 * rows rp values apart, planes pitch values apart). */
static cudaError_t copy_layout(const cuda_state *s, size_t vs, void *dst, const void *src,
                               cudaMemcpyKind kind)
{
    const bool to_dev = kind == cudaMemcpyHostToDevice;
    const size_t ny = (size_t)(s->plane / s->nx);
    if (s->rp != s->nx && (size_t)s->pitch == (size_t)s->rp * ny) { /* padded rows */
        const size_t hb = (size_t)s->nx * vs, db = (size_t)s->rp * vs;
        const size_t rows = ny * (size_t)s->planes;
        return cudaMemcpy2D(dst, to_dev ? db : hb, src, to_dev ? hb : db, hb, rows, kind);
    }
    if (s->rp != s->nx) { /* padded rows and planes (multigrid) */
        const size_t hb = (size_t)s->nx * vs;
        const cudaPitchedPtr dev =
            make_cudaPitchedPtr(to_dev ? dst : const_cast<void *>(src), (size_t)s->rp * vs, hb,
                                (size_t)(s->pitch / s->rp));
        const cudaPitchedPtr host =
            make_cudaPitchedPtr(to_dev ? const_cast<void *>(src) : dst, hb, hb, ny);
        cudaMemcpy3DParms p = {};
        p.srcPtr = to_dev ? host : dev;
        p.dstPtr = to_dev ? dev : host;
        p.extent = make_cudaExtent(hb, ny, (size_t)s->planes);
        p.kind = kind;
        return cudaMemcpy3D(&p);
    }
    const size_t pb = (size_t)s->plane * vs, db = (size_t)s->pitch * vs;
    if (s->pitch == s->plane) return cudaMemcpy(dst, src, pb * (size_t)s->planes, kind);
    return cudaMemcpy2D(dst, to_dev ? db : pb, src, to_dev ? pb : db, pb, (size_t)s->planes, kind);
}

static cudaError_t copy_field(const cuda_state *s, void *dst, const void *src, cudaMemcpyKind kind)
{
    return copy_layout(s, s->bytes / ((size_t)s->planes * (size_t)s->plane), dst, src, kind);
}

static int cuda_upload(heat_backend *b, const void *host, heat_error *err)
{
    cuda_state *s = (cuda_state *)b->impl;
    s->q.fresh = 0;
    /* Both levels: Dirichlet nodes are never written by a sweep. */
    HEAT_CUDA_CHECK(copy_field(s, s->u, host, cudaMemcpyHostToDevice));
    HEAT_CUDA_CHECK(cudaMemcpy(s->v, s->u, s->held, cudaMemcpyDeviceToDevice));
    return HEAT_OK;
}

static int cuda_download(heat_backend *b, void *host, heat_error *err)
{
    cuda_state *s = (cuda_state *)b->impl;
    HEAT_CUDA_CHECK(cudaStreamSynchronize(s->stream));
    HEAT_CUDA_CHECK(copy_field(s, host, s->u, cudaMemcpyDeviceToHost));
    return HEAT_OK;
}

static void *cuda_host_alloc(heat_backend *b, size_t bytes)
{
    (void)b;
    void *p = NULL;
    if (cudaMallocHost(&p, bytes) == cudaSuccess) return p;
    cudaGetLastError(); /* no page-locked memory to be had: plain memory, copied synchronously */
    return malloc(bytes);
}

static void cuda_host_free(heat_backend *b, void *p)
{
    (void)b;
    if (!p) return;
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) == cudaSuccess && a.type == cudaMemoryTypeHost)
        cudaFreeHost(p);
    else
        free(p);
    cudaGetLastError();
}

/* The passes of `steps` steps and, with `residual`, the copy of the last
 * one's residual and the field's statistics after it (a check step's
 * history row wants them), each followed by an event. Passes of `depth`
 * fused steps; the last pass fuses what remains, so a call never runs past
 * the step the driver asked for. */
static int queue_passes(cuda_state *s, int64_t steps, int residual, heat_error *err)
{
    for (int64_t left = steps; left > 0;) {
        const int k = left < s->depth ? (int)left : s->depth;
        const bool resid = residual && left == k;
        if (resid)
            HEAT_CUDA_CHECK(cudaMemsetAsync(s->q.d_resid, 0, sizeof *s->q.d_resid, s->stream));
        HEAT_CUDA_CHECK(sweep(s, resid, k));
        left -= k;
    }
    if (residual) HEAT_CUDA_CHECK(heat_cuda_checks_queue_resid(&s->q, s->u, s->stream));
    return HEAT_OK;
}

/* Queues the steps (queue_passes); returns without waiting. Where queuing
 * fails nothing is left queued or fresh (heat_cuda_checks_failed). */
static int cuda_queue(heat_backend *b, int64_t steps, int residual, heat_error *err)
{
    cuda_state *s = (cuda_state *)b->impl;
    if (b->c->d.general && !s->general)
        return heat_error_set(err, HEAT_ERUNTIME, "cuda backend: no material classes");
    heat_cuda_checks_begin(&s->q, residual);
    const int rc = queue_passes(s, steps, residual, err);
    if (rc) heat_cuda_checks_failed(&s->q, s->stream);
    return rc;
}

/* Waits for what cuda_queue queued (heat_cuda_checks_wait, stats.cuh).
 * Errors of the sweeps surface here, and the driver's clock measures
 * finished work. */
static int cuda_wait(heat_backend *b, double *residual, heat_error *err)
{
    cuda_state *s = (cuda_state *)b->impl;
    return heat_cuda_checks_wait(&s->q, s->stream, b->c->d.dt, residual, err);
}

static int cuda_advance(heat_backend *b, int64_t steps, double *residual, heat_error *err)
{
    cuda_state *s = (cuda_state *)b->impl;
    if (heat_case_multigrid(b->c)) {
        s->q.fresh = 0;
        if (!s->mg) return heat_error_set(err, HEAT_ERUNTIME, "cuda backend: multigrid not set up");
        return heat_cuda_mg_advance(s->mg, steps, residual, err);
    }
    int rc = cuda_queue(b, steps, residual != nullptr, err);
    return rc ? rc : cuda_wait(b, residual, err);
}

/* Each pass the loop can run (every depth, with and without the residual)
 * once into the other level, which the next pass rewrites: a kernel loads
 * at its first launch (tens of ms for fused ones), outside the loop's clock. */
static int cuda_warm(heat_backend *b, heat_error *err)
{
    cuda_state *s = (cuda_state *)b->impl;
    if (heat_case_multigrid(b->c) || (b->c->d.general && !s->general)) return HEAT_OK;
    for (int k = 1; k <= s->depth; k++)
        for (int r = 0; r < 2; r++) {
            HEAT_CUDA_CHECK(sweep(s, r != 0, k));
            std::swap(s->u, s->v);
        }
    HEAT_CUDA_CHECK(cudaStreamSynchronize(s->stream));
    return HEAT_OK;
}

static void cuda_destroy(heat_backend *b)
{
    if (!b) return;
    cuda_state *s = (cuda_state *)b->impl;
    if (s) {
        heat_cuda_mg_destroy(s->mg);
        cudaFree(s->u);
        cudaFree(s->v);
        cudaFree(s->scratch);
        cudaFree(s->d_cls);
        cudaFree(s->d_tab);
        heat_cuda_checks_destroy(&s->q);
        free(s->h_cls);
        for (int i = 0; i < 4; i++)
            if (s->ev[i]) cudaEventDestroy(s->ev[i]);
        if (s->stream) cudaStreamDestroy(s->stream);
        free(s);
    }
    free(b);
}

static int cuda_bench_time(heat_backend *b, int steps, int runs, double *copy_ms, double *steps_ms,
                           heat_error *err);
static int cuda_poison_next(heat_backend *b, heat_error *err);
static int cuda_set_classes(heat_backend *b, const uint8_t *cls, const heat_coeffs *k,
                            heat_error *err);
static int cuda_field_stats(heat_backend *b, double *min, double *max, double *sum,
                            heat_error *err);
static int cuda_sample(heat_backend *b, int n, const int64_t *index, double *values,
                       heat_error *err);
static int cuda_warm(heat_backend *b, heat_error *err);

/* (Positional: C++17 has no designated initializers. The whole grid is the
 * class box, the dispatch's default.) */
static const heat_backend_ops cuda_ops = {cuda_upload,
                                          cuda_advance,
                                          cuda_download,
                                          cuda_destroy,
                                          cuda_host_alloc,
                                          cuda_host_free,
                                          cuda_bench_time,
                                          cuda_poison_next,
                                          nullptr /* halo_stats */,
                                          nullptr /* bench_halo */,
                                          nullptr /* class_box */,
                                          cuda_set_classes,
                                          cuda_field_stats,
                                          cuda_sample,
                                          nullptr /* mg_setup */,
                                          nullptr /* mg_info */,
                                          nullptr /* mg_bench */,
                                          cuda_warm,
                                          cuda_queue,
                                          cuda_wait};

/* Multigrid (k_mg.cu): the same table with its operations. */
static int cuda_mg_setup(heat_backend *b, heat_error *err)
{
    cuda_state *s = (cuda_state *)b->impl;
    heat_cuda_mg_destroy(s->mg);
    s->mg = nullptr;
    if (b->c->d.general && !s->h_cls)
        return heat_error_set(err, HEAT_ERUNTIME, "cuda backend: no material classes");
    return heat_cuda_mg_create(b->c, s->u, s->v, s->rp, s->pitch / s->rp, s->stream, s->h_cls,
                               s->h_cls ? &s->h_k : nullptr, &s->mg, err);
}

static void cuda_mg_info(const heat_backend *b, heat_mg_info *info)
{
    const cuda_state *s = (const cuda_state *)b->impl;
    if (s->mg) heat_cuda_mg_info(s->mg, info);
}

static int cuda_mg_bench(heat_backend *b, int runs, heat_mg_timing *t, heat_error *err)
{
    cuda_state *s = (cuda_state *)b->impl;
    if (!s->mg) return heat_error_set(err, HEAT_ERUNTIME, "cuda backend: multigrid not set up");
    return heat_cuda_mg_bench(s->mg, runs, t, err);
}

static heat_backend_ops with_multigrid(heat_backend_ops o)
{
    o.mg_setup = cuda_mg_setup;
    o.mg_info = cuda_mg_info;
    o.mg_bench = cuda_mg_bench;
    /* queue and wait: heat_backend_queues says no for multigrid. The
     * cycles leave the field in u, so history.csv's statistics are
     * cuda_field_stats's (cuda_advance marks them stale), in the CPU's order. */
    return o;
}
static const heat_backend_ops cuda_ops_mg = with_multigrid(cuda_ops);

/* A kernel of each family, to ask whether this binary has code for the GPU. */
__global__ void heat_cuda_probe_kernel(int *p)
{
    if (p) *p = 1;
}

extern "C" int heat_cuda_usable(char *why, size_t n)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        snprintf(why, n, "CUDA finds no device: %s", cudaGetErrorString(e));
        return 0;
    }
    if (count < 1) {
        snprintf(why, n, "no CUDA device found");
        return 0;
    }
    cudaFuncAttributes attr;
    e = cudaFuncGetAttributes(&attr, heat_cuda_probe_kernel);
    if (e != cudaSuccess) {
        cudaDeviceProp p;
        int dev = 0;
        cudaGetDevice(&dev);
        cudaGetDeviceProperties(&p, dev);
        if (e == cudaErrorNoKernelImageForDevice || e == cudaErrorInvalidDeviceFunction)
            snprintf(why, n,
                     "this heat has no code for %s (compute capability %d.%d): %s; rebuild with "
                     "-DCMAKE_CUDA_ARCHITECTURES=%d%d",
                     p.name, p.major, p.minor, cudaGetErrorString(e), p.major, p.minor);
        else
            snprintf(why, n, "%s (compute capability %d.%d) cannot run heat's kernels: %s", p.name,
                     p.major, p.minor, cudaGetErrorString(e));
        cudaGetLastError();
        return 0;
    }
    return 1;
}

extern "C" int heat_cuda_no_device(void)
{
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e == cudaSuccess) return count == 0;
    cudaGetLastError();
    if (e == cudaErrorNoDevice) return 1;
    /* Without a driver at all the runtime says "insufficient driver", as it
     * does for one too old: a device is there only where the driver's
     * device nodes are (WSL2's: /dev/dxg). */
    return access("/dev/nvidiactl", F_OK) != 0 && access("/dev/nvidia0", F_OK) != 0 &&
           access("/dev/dxg", F_OK) != 0;
}

/* Whether two time levels of the case fit in the free memory of the current
 * device `prop`, and every axis in 32 bits; HEAT_ERUNTIME saying why not. */
static int check_fits(const heat_case *c, const cudaDeviceProp *prop, size_t bytes, heat_error *err)
{
    size_t free_b = 0, total_b = 0;
    HEAT_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    /* Two time levels (`bytes` each), and a class byte per value held in a
     * general case. */
    const size_t need = 2 * bytes + (c->d.general ? bytes / heat_case_value_size(c) : 0);
    if (need + (64u << 20) > free_b)
        return heat_error_set(err, HEAT_ERUNTIME,
                              "cuda backend: the field does not fit on %s: %.3f GB needed (two "
                              "time levels of %lld points in %s%s), %.3f GB free of %.3f GB; use "
                              "a smaller grid, float precision, or backend = \"cpu\"",
                              prop->name, (double)need / 1e9, (long long)c->d.points,
                              heat_precision_name(c->solver.precision),
                              c->d.general ? ", and their classes" : "", (double)free_b / 1e9,
                              (double)total_b / 1e9);
    if (c->grid.n[0] > INT32_MAX || c->grid.n[1] > INT32_MAX || c->grid.n[2] > INT32_MAX)
        return heat_error_set(err, HEAT_ERUNTIME,
                              "cuda backend: an axis of more than %d points is not supported",
                              INT32_MAX);
    return HEAT_OK;
}

/* A new backend's device memory, stream and events (the caller frees them). */
static int allocate_device(cuda_state *s, bool is_float, const cudaDeviceProp *prop,
                           heat_error *err)
{
    heat_cuda_schedule_for_affinity();
    cudaError_t e = cudaMalloc(&s->u, s->held);
    if (e == cudaSuccess) e = cudaMalloc(&s->v, s->held);
    /* padded rows or planes: what lies between them defined (loaded, never
     * used for a node) */
    if (e == cudaSuccess && s->pitch != s->plane) e = cudaMemset(s->u, 0, s->held);
    if (e == cudaSuccess && s->pitch != s->plane) e = cudaMemset(s->v, 0, s->held);
    if (e != cudaSuccess) {
        size_t free_b = 0, total_b = 0;
        cudaGetLastError();
        cudaMemGetInfo(&free_b, &total_b);
        return heat_error_set(err, HEAT_ERUNTIME,
                              "cuda backend: cannot allocate the field on %s: %.3f GB needed "
                              "(two time levels), %.3f GB free of %.3f GB",
                              prop->name, 2.0 * (double)s->held / 1e9, (double)free_b / 1e9,
                              (double)total_b / 1e9);
    }
    HEAT_CUDA_CHECK(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
    for (int i = 0; i < 4; i++) HEAT_CUDA_CHECK(cudaEventCreate(&s->ev[i]));
    /* Where the process runs on one or two CPUs the device waits asleep
     * (heat_cuda_schedule_for_affinity), and so do the checks' events. (A
     * run bound to one core, mpiexec -n 1 or taskset -c 0, was 8 to 10%
     * slower at 512^3 float k = 3 with spinning events than with the
     * stream's wait before them; docs/PERFORMANCE.md.) */
    HEAT_CUDA_CHECK(heat_cuda_checks_create(&s->q, is_float, s->nx, s->plane / s->nx, s->planes,
                                            s->rp, s->pitch));
    return HEAT_OK;
}

/* "cuda (device, kernel, k steps per pass, precision)": the run's first line
 * ("cuda (device, multigrid, precision)" for a multigrid solve). */
static void describe(heat_backend *b, const cuda_state *s)
{
    const heat_case *c = b->c;
    if (heat_case_multigrid(c)) /* no stencil kernel or fused steps run */
        snprintf(b->description, sizeof b->description, "cuda (%s, multigrid, %s)", s->device,
                 heat_precision_name(c->solver.precision));
    else if (s->auto_note[0])
        snprintf(b->description, sizeof b->description,
                 "cuda (%s, %s kernel, %d step%s per pass (%s), %s)", s->device,
                 heat_kernel_name(c->solver.kernel), s->depth, s->depth > 1 ? "s" : "",
                 s->auto_note, heat_precision_name(c->solver.precision));
    else if (s->depth > 1)
        snprintf(
            b->description, sizeof b->description, "cuda (%s, %s kernel, %d steps per pass%s, %s)",
            s->device, heat_kernel_name(c->solver.kernel), s->depth,
            c->solver.temporal_auto ? " (auto)" : "", heat_precision_name(c->solver.precision));
    else
        snprintf(b->description, sizeof b->description, "cuda (%s, %s kernel, %s)", s->device,
                 heat_kernel_name(c->solver.kernel), heat_precision_name(c->solver.precision));
}

extern "C" int heat_cuda_backend_create(const heat_case *c, heat_backend **out, heat_error *err)
{
    *out = NULL;
    char why[512];
    if (!heat_cuda_usable(why, sizeof why))
        return heat_error_set(err, HEAT_ERUNTIME, "solver.backend = \"cuda\": %s", why);

    const size_t vs = heat_case_value_size(c);
    const size_t bytes = (size_t)c->d.points * vs;
    /* a multigrid case's field is its finest level: its rows and planes
     * padded as the level's (heat_mg_gpu_row_pitch, heat_mg_gpu_rows); the
     * others' rows */
    const long long nx = c->grid.n[0], plane = nx * c->grid.n[1];
    const long long rp =
        heat_case_multigrid(c) ? heat_mg_gpu_row_pitch(c->grid.n) : heat_gpu_row_pitch(nx, vs);
    const long long pitch =
        heat_case_multigrid(c) ? rp * heat_mg_gpu_rows(c->grid.n, vs) : rp * c->grid.n[1];
    const size_t held = (size_t)c->grid.n[2] * (size_t)pitch * vs;
    int dev = 0;
    HEAT_CUDA_CHECK(cudaGetDevice(&dev));
    cudaDeviceProp prop;
    HEAT_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
    int rc = check_fits(c, &prop, held, err);
    if (rc) return rc;

    heat_backend *b = (heat_backend *)calloc(1, sizeof *b);
    cuda_state *s = (cuda_state *)calloc(1, sizeof *s);
    if (!b || !s) {
        free(b);
        free(s);
        return heat_error_set(err, HEAT_ERUNTIME, "cuda backend: out of host memory");
    }
    b->ops = heat_case_multigrid(c) ? &cuda_ops_mg : &cuda_ops;
    b->c = c;
    b->impl = s;
    s->bytes = bytes;
    s->nx = nx, s->rp = rp, s->plane = plane, s->pitch = pitch, s->planes = c->grid.n[2];
    s->held = held;
    s->three_d = c->grid.dims == 3;
    s->kernel = c->solver.kernel;
    /* Only register_tiled fuses steps; every depth the deck accepts is served
     * for every grid (the windows map their halo through the boundaries). */
    s->depth = c->solver.kernel == HEAT_KERNEL_REGISTER_TILED ? c->solver.temporal_block : 1;
    if (s->depth < 1 || s->depth > HEAT_CUDA_TEMPORAL_MAX) {
        const int k = s->depth;
        cuda_destroy(b);
        return heat_error_set(err, HEAT_EINPUT,
                              "solver.temporal_block = %d: the cuda backend fuses 1 to %d steps "
                              "per pass",
                              k, HEAT_CUDA_TEMPORAL_MAX);
    }
    snprintf(s->device, sizeof s->device, "%s", prop.name);
    if (c->solver.precision == HEAT_FLOAT)
        fill_args<float>(c, rp, s->af);
    else
        fill_args<double>(c, rp, s->ad);
    if ((rc = allocate_device(s, c->solver.precision == HEAT_FLOAT, &prop, err))) {
        cuda_destroy(b);
        return rc;
    }
    if (c->solver.temporal_auto && s->kernel == HEAT_KERNEL_REGISTER_TILED &&
        !heat_case_multigrid(c) && !c->d.general) {
        const cudaError_t e = measure_depth(s, c, s->auto_note, sizeof s->auto_note);
        if (e != cudaSuccess) {
            cudaGetLastError();
            cuda_destroy(b);
            return heat_error_set(err, HEAT_ERUNTIME,
                                  "cuda backend: timing the depths for solver.temporal_block = "
                                  "\"auto\": %s",
                                  cudaGetErrorString(e));
        }
    }
    describe(b, s);
    *out = b;
    return HEAT_OK;
}

extern "C" void heat_cuda_current_device(char *buf, size_t n)
{
    int dev = 0;
    cudaDeviceProp p;
    if (n) buf[0] = '\0';
    if (cudaGetDevice(&dev) == cudaSuccess && cudaGetDeviceProperties(&p, dev) == cudaSuccess)
        snprintf(buf, n, "%s", p.name);
    else
        cudaGetLastError();
}

/* The bench_time operation (backend.h): copies and passes timed with CUDA
 * events. */
static int cuda_bench_time(heat_backend *b, int steps, int runs, double *copy_ms, double *steps_ms,
                           heat_error *err)
{
    cuda_state *s = (cuda_state *)b->impl;
    if (!s->scratch) {
        cudaError_t e = cudaMalloc(&s->scratch, s->bytes);
        if (e != cudaSuccess) {
            cudaGetLastError();
            return heat_error_set(err, HEAT_ERUNTIME,
                                  "heat bench: no GPU memory for the copy's %.3f GB target",
                                  (double)s->bytes / 1e9);
        }
    }
    std::vector<double> tc(runs), ts(runs);
    /* Warm-up: one copy and one run of sweeps. */
    HEAT_CUDA_CHECK(
        cudaMemcpyAsync(s->scratch, s->u, s->bytes, cudaMemcpyDeviceToDevice, s->stream));
    auto passes = [&]() -> cudaError_t {
        cudaError_t e = cudaSuccess;
        for (int n = 0; n < steps && e == cudaSuccess; n += s->depth)
            e = sweep(s, false, steps - n < s->depth ? steps - n : s->depth);
        return e;
    };
    HEAT_CUDA_CHECK(passes());
    HEAT_CUDA_CHECK(cudaStreamSynchronize(s->stream));
    for (int r = 0; r < runs; r++) {
        HEAT_CUDA_CHECK(cudaEventRecord(s->ev[0], s->stream));
        HEAT_CUDA_CHECK(
            cudaMemcpyAsync(s->scratch, s->u, s->bytes, cudaMemcpyDeviceToDevice, s->stream));
        HEAT_CUDA_CHECK(cudaEventRecord(s->ev[1], s->stream));
        HEAT_CUDA_CHECK(passes());
        HEAT_CUDA_CHECK(cudaEventRecord(s->ev[2], s->stream));
        HEAT_CUDA_CHECK(cudaEventSynchronize(s->ev[2]));
        float a = 0, c = 0;
        HEAT_CUDA_CHECK(cudaEventElapsedTime(&a, s->ev[0], s->ev[1]));
        HEAT_CUDA_CHECK(cudaEventElapsedTime(&c, s->ev[1], s->ev[2]));
        tc[r] = a;
        ts[r] = c;
    }
    std::sort(tc.begin(), tc.end());
    std::sort(ts.begin(), ts.end());
    auto med = [](const std::vector<double> &v) {
        size_t n = v.size();
        return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    };
    *copy_ms = med(tc);
    *steps_ms = med(ts);
    return HEAT_OK;
}

template <typename T> __global__ void poison_kernel(heat_stencil_args<T> a, T *field)
{
    const long long n = (long long)a.nx * a.np * a.nw;
    for (long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x; idx < n;
         idx += (long long)gridDim.x * blockDim.x) {
        const int i = (int)(idx % a.nx);
        const int j = (int)((idx / a.nx) % a.np);
        const int w = (int)(idx / ((long long)a.nx * a.np));
        const bool d3 = a.np > 1 || a.bp[0] != HK_PERIODIC;
        if (!hk_held(i, a.nx, a.bx) && !(d3 && hk_held(j, a.np, a.bp)) && !hk_held(w, a.nw, a.bw))
            field[w * a.sw + j * a.sp + i] = (T)NAN;
    }
}

/* The poison_next test hook (backend.h). */
static int cuda_poison_next(heat_backend *b, heat_error *err)
{
    cuda_state *s = (cuda_state *)b->impl;
    if (s->af.nx)
        poison_kernel<float><<<1024, 256, 0, s->stream>>>(s->af, (float *)s->v);
    else
        poison_kernel<double><<<1024, 256, 0, s->stream>>>(s->ad, (double *)s->v);
    HEAT_CUDA_CHECK(cudaGetLastError());
    HEAT_CUDA_CHECK(cudaStreamSynchronize(s->stream));
    return HEAT_OK;
}

/* ---- the variable-coefficient update ---------------------------------- */

/* The case's tables in precision T and kernel order (general.cuh), in one
 * block of device memory: q[256], ambient[8], g[6][M], beta[6][M],
 * w[3][M][M], mat[256]; each entry rounded once from the case's double, as
 * the CPU backend rounds them. */
template <typename T>
int heat_cuda_general_tables(const heat_case *c, const heat_coeffs *k, void **d_tab,
                             heat_general_args<T> &ga, heat_error *err)
{
    const int M = k->nmat, d3 = c->grid.dims == 3;
    const size_t MM = (size_t)M * M, nq = HG_CLASSES, na = 8, ng = HG_NFACES * (size_t)M;
    std::vector<T> v(nq + na + 2 * ng + 3 * MM);
    T *q = v.data(), *amb = q + nq, *g = amb + na, *beta = g + ng, *w = beta + ng;
    /* Kernel faces x lo, x hi, p lo, p hi (y), w lo, w hi (z; y in 2D), and
     * axes x, p, w likewise. */
    const int face_of[HG_NFACES] = {HEAT_X_LO,
                                    HEAT_X_HI,
                                    HEAT_Y_LO,
                                    HEAT_Y_HI,
                                    d3 ? HEAT_Z_LO : HEAT_Y_LO,
                                    d3 ? HEAT_Z_HI : HEAT_Y_HI};
    const int axis_of[3] = {0, 1, d3 ? 2 : 1};
    int conv = 0;
    for (size_t i = 0; i < nq; i++) q[i] = (T)k->q[i];
    for (int kf = 0; kf < HG_NFACES; kf++) {
        const int f = face_of[kf];
        amb[kf] = (T)k->ambient[f];
        for (int a = 0; a < M; a++)
            g[kf * M + a] = (T)k->g[f][a], beta[kf * M + a] = (T)k->beta[f][a];
        if (c->bc[f].type == HEAT_BC_CONVECTIVE) conv |= 1 << kf;
    }
    for (int ka = 0; ka < 3; ka++)
        for (size_t i = 0; i < MM; i++) w[ka * MM + i] = (T)k->w[axis_of[ka] * MM + i];
    const size_t vbytes = v.size() * sizeof(T);
    cudaFree(*d_tab);
    *d_tab = nullptr;
    HEAT_CUDA_CHECK(cudaMalloc(d_tab, vbytes + HG_CLASSES));
    HEAT_CUDA_CHECK(cudaMemcpy(*d_tab, v.data(), vbytes, cudaMemcpyHostToDevice));
    uint8_t *mat = (uint8_t *)*d_tab + vbytes;
    HEAT_CUDA_CHECK(cudaMemcpy(mat, k->mat, HG_CLASSES, cudaMemcpyHostToDevice));
    const T *d = (const T *)*d_tab;
    ga.q = d;
    ga.amb = d + nq;
    ga.g = d + nq + na;
    ga.beta = ga.g + ng;
    ga.w = ga.beta + ng;
    ga.mat = mat;
    ga.nmat = M;
    ga.conv = conv;
    ga.w_shared = hg_w_shared<T>(M);
    return HEAT_OK;
}
template int heat_cuda_general_tables<float>(const heat_case *, const heat_coeffs *, void **,
                                             heat_general_args<float> &, heat_error *);
template int heat_cuda_general_tables<double>(const heat_case *, const heat_coeffs *, void **,
                                              heat_general_args<double> &, heat_error *);

/* The tables of the whole grid's general update, over its classes. */
template <typename T>
static int upload_tables(cuda_state *s, const heat_case *c, const heat_coeffs *k,
                         heat_general_args<T> &ga, heat_error *err)
{
    ga.cls = s->d_cls;
    return heat_cuda_general_tables<T>(c, k, &s->d_tab, ga, err);
}

/* The set_classes operation (backend.h): the classes of the whole grid and
 * the tables. Fused passes need the w table in shared memory; with more
 * materials than fit, register_tiled runs one step per pass (the results
 * are the same) and the description says so. */
static int cuda_set_classes(heat_backend *b, const uint8_t *cls, const heat_coeffs *k,
                            heat_error *err)
{
    cuda_state *s = (cuda_state *)b->impl;
    const heat_case *c = b->c;
    const size_t n = (size_t)c->d.points;
    const size_t held = (size_t)s->pitch * (size_t)s->planes; /* laid out as the field */
    if (heat_case_multigrid(c)) {
        /* Multigrid builds its own operator from these (cuda_mg_setup). */
        uint8_t *copy = (uint8_t *)malloc(n);
        if (!copy)
            return heat_error_set(err, HEAT_ERUNTIME,
                                  "cuda backend: out of memory for the classes");
        memcpy(copy, cls, n);
        free(s->h_cls);
        s->h_cls = copy;
        s->h_k = *k;
        s->h_k.w = nullptr;
        s->general = 1;
        return HEAT_OK;
    }
    if (!s->d_cls) {
        cudaError_t e = cudaMalloc(&s->d_cls, held);
        if (e == cudaSuccess && held != n) e = cudaMemset(s->d_cls, 0, held);
        if (e != cudaSuccess) {
            cudaGetLastError();
            cudaFree(s->d_cls);
            s->d_cls = nullptr;
            return heat_error_set(err, HEAT_ERUNTIME,
                                  "cuda backend: no GPU memory for the classes (%.3f GB)",
                                  (double)held / 1e9);
        }
    }
    HEAT_CUDA_CHECK(copy_layout(s, 1, s->d_cls, cls, cudaMemcpyHostToDevice));
    int rc;
    bool shared;
    if (s->af.nx) {
        static_cast<heat_stencil_args<float> &>(s->gf) = s->af;
        rc = upload_tables<float>(s, c, k, s->gf, err);
        shared = s->gf.w_shared;
    } else {
        static_cast<heat_stencil_args<double> &>(s->gd) = s->ad;
        rc = upload_tables<double>(s, c, k, s->gd, err);
        shared = s->gd.w_shared;
    }
    if (rc) return rc;
    if (s->depth > 1 && !shared) {
        s->depth = 1;
        snprintf(b->description, sizeof b->description,
                 "cuda (%s, %s kernel, one step per pass: %d materials are more than fused passes "
                 "hold, %s)",
                 s->device, heat_kernel_name(c->solver.kernel), k->nmat,
                 heat_precision_name(c->solver.precision));
    }
    s->general = 1;
    /* "auto" with the general update: timed now that its tables are here. */
    if (shared && c->solver.temporal_auto && s->kernel == HEAT_KERNEL_REGISTER_TILED &&
        !s->auto_note[0]) {
        HEAT_CUDA_CHECK(measure_depth(s, c, s->auto_note, sizeof s->auto_note));
        describe(b, s);
    }
    return HEAT_OK;
}

extern "C" int heat_cuda_general(void)
{
    return 1;
}

/* ---- history.csv's statistics and probes, without downloading the field ---- */

/* history.csv's statistics (heat_cuda_checks_stats, stats.cuh). */
static int cuda_field_stats(heat_backend *b, double *min, double *max, double *sum, heat_error *err)
{
    cuda_state *s = (cuda_state *)b->impl;
    return heat_cuda_checks_stats(&s->q, s->u, s->stream, min, max, sum, err);
}

/* The values at some nodes: one small copy each. */
static int cuda_sample(heat_backend *b, int n, const int64_t *index, double *values,
                       heat_error *err)
{
    cuda_state *s = (cuda_state *)b->impl;
    HEAT_CUDA_CHECK(cudaStreamSynchronize(s->stream));
    const size_t vs = heat_case_value_size(b->c);
    for (int i = 0; i < n; i++) {
        double v = 0;
        float f = 0;
        void *to = vs == sizeof(float) ? (void *)&f : (void *)&v;
        const int64_t row = index[i] / s->nx, ny = s->plane / s->nx;
        const int64_t at = row / ny * s->pitch + row % ny * s->rp + index[i] % s->nx;
        HEAT_CUDA_CHECK(
            cudaMemcpy(to, (const char *)s->u + (size_t)at * vs, vs, cudaMemcpyDeviceToHost));
        values[i] = vs == sizeof(float) ? (double)f : v;
    }
    return HEAT_OK;
}
