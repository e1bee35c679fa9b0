/* The CUDA backend on one rank's part of a distributed grid.
 *
 * The part (halo_plan.h) lives on the GPU with its ghost layers; every
 * sweep is one of the existing kernels launched on a view of it, a view
 * being the kernel's whole grid: its u/out pointers at the view's first
 * node, its extents, the part's strides, and its faces (the deck's
 * condition on the grid's own boundary, Dirichlet where the view only
 * reads). So the kernels are unchanged and every node gets the arithmetic
 * of a one-process run.
 *
 * A step that ends a pass (the overlapped step):
 *   stream hi (high priority): the shell views, then the halo messages
 *       packed (k_halo.cu) and, staged through the host, copied to pinned
 *       memory; then, when they have arrived, copied back and unpacked;
 *   stream lo: the interior view, at the same time;
 *   host: waits for the packing, runs the MPI exchange (host buffers, or GPU
 *       memory where the MPI library takes it) while the interior runs; with
 *       NCCL the exchange is queued on stream hi and the host waits for
 *       nothing.
 * Both streams are joined at the end of the step. The time the interior
 * finished before the halos were unpacked (CUDA events) is the exchange's
 * share not hidden by compute.
 *
 * Temporal blocking: with the register_tiled kernel and depth k > 1 a pass
 * of d steps is one fused launch over the owned box grown by d layers, then
 * one k-deep exchange (not hidden: the fused kernel writes its whole view,
 * so regions swept apart cannot share one output). A pass that ends on a
 * check step fuses d - 1 steps and runs the last one overlapped, because the
 * residual needs the level before the last step. The other kernels run the
 * steps of a pass one by one over shrinking views, the last one overlapped.
 *
 * Views whose rows start off the 16-byte boundary would trip the kernels'
 * vector loads: where x has ghost layers the plan aligns the owned box and
 * the rows, and a view's first x node is moved down to an aligned one (the
 * nodes it adds are recomputed alike, or are ghosts that the exchange
 * overwrites). There a check step's residual is therefore taken by a kernel
 * of its own over the owned box; where x has no ghost layers no view is
 * moved, the views of the overlapped step cover the owned box exactly, and
 * its sweeps fold the residual as the whole grid's do.
 */
#include <sched.h>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cuda_backend.h"
#include "cuda_check.cuh"
#include "cuda_mg.h"
#include "general.cuh"
#include "halo_cuda.h"
#include "halo_plan.h"
#include "stats.cuh"
#include "stencil.cuh"

enum xport { XP_HOST, XP_DEVICE, XP_NCCL };

/* The step's events (EV_PACKED: the last phase's messages packed, before
 * any staging), then each exchange phase's: packed (start, end), unpacked
 * (start, end). */
enum { EV_BEGIN, EV_INTERIOR, EV_END, EV_PACKED, EV_FIXED };
#define PHASE_EV(ph, i) (EV_FIXED + 4 * (ph) + (i))
#define NEV             (EV_FIXED + 12)
#define NSLOT           32
#define EV(s, i)        ((s)->ev[(s)->slot][i])
enum { SLOT_STEP = 1, SLOT_EXCHANGE = 2 };

struct part_state {
    heat_halo_plan p;
    heat_halo_comm comm;
    const heat_case *c;
    size_t vs;
    int V;     /* values in 16 bytes */
    int fused; /* register_tiled with depth > 1 */
    heat_kernel kernel;
    void *u, *v; /* the levels, ghost layers included */
    void *dsend, *drecv;
    void *hsend, *hrecv; /* pinned host memory (staged transport) */
    void *scratch;       /* bench only */
    /* a check step's residual and the owned box's statistics for
     * history.csv between part_queue and part_wait (stats.cuh), on stream hi */
    heat_cuda_checks q;
    cudaStream_t hi, lo;
    /* The events of the last NSLOT steps or exchanges, read once they are
     * done: the host waits for the GPU only every NSLOT of them. */
    cudaEvent_t ev[NSLOT][NEV];
    unsigned char pending[NSLOT]; /* SLOT_STEP, SLOT_EXCHANGE, or 0: read */
    int slot;
    xport xp;
    heat_nccl *nccl;
    heat_halo_stats st;
    cuda_mg *mg;    /* multigrid (heat_case_multigrid): its own level-0 buffers */
    int halo_first; /* pack before the interior starts (HEAT_CUDA_HALO_FIRST=1 or 0 sets it) */
    int direct;     /* NCCL sends and receives a face that is one run of memory in place
                       (HEAT_CUDA_HALO_DIRECT=0 packs every face, for measuring) */
    /* HEAT_CUDA_HALO_TRACE=PREFIX: every step's event times into
     * PREFIX.RANK.csv, from t0 (recorded at the first step), for measuring */
    FILE *trace;
    cudaEvent_t t0;
    unsigned long long trace_steps; /* the trace's rows: overlapped steps, warm-up included */
    int overlap; /* the interior overlaps the exchange (HEAT_CUDA_HALO_OVERLAP=0: not) */
    /* A check step's residual folded by its sweeps (the shell's and the
     * interior's views, which then cover the owned box exactly) where x has
     * no ghost layers, so that no view is aligned beyond it; else, or with
     * HEAT_CUDA_RESID_INLINE=0 (for measuring), by launch_residual. */
    int resid_inline;
    /* The variable-coefficient update (c->d.general): the classes laid out
     * as the local array (d_cls) and the tables (d_tab; their fields in gf
     * or gd, whose geometry each view fills). With multigrid, the classes on
     * the host until its setup: of its level-0 box (cls0) and of the box
     * one layer wider that its build reads (clsw, clo, cn), and the case's
     * coefficients (k, its w dropped). */
    int general;
    uint8_t *d_cls;
    void *d_tab;
    heat_general_args<float> gf;
    heat_general_args<double> gd;
    uint8_t *cls0, *clsw;
    int64_t clo[3], cn[3];
    heat_coeffs k;
};

template <typename T> static heat_general_args<T> &tables_of(part_state *s);
template <> heat_general_args<float> &tables_of<float>(part_state *s)
{
    return s->gf;
}
template <> heat_general_args<double> &tables_of<double>(part_state *s)
{
    return s->gd;
}

static hc_box to_hc(const hbox &b)
{
    hc_box h;
    for (int a = 0; a < 3; a++) h.lo[a] = b.lo[a], h.hi[a] = b.hi[a];
    return h;
}

/* ------------------------------------------------------------- sweeps */

template <typename T>
static heat_stencil_args<T> view_args(const part_state *s, const hview &v, const void *u, void *out,
                                      unsigned long long *resid)
{
    const heat_case *c = s->c;
    const heat_halo_plan &p = s->p;
    heat_stencil_args<T> a;
    memset(&a, 0, sizeof a);
    const bool d3 = c->grid.dims == 3;
    const int ax_w = d3 ? 2 : 1;
    const long long off = heat_halo_at(&p, v.b.lo[0], v.b.lo[1], v.b.lo[2]);
    a.u = (const T *)u + off;
    a.out = (T *)out + off;
    a.nx = (int)(v.b.hi[0] - v.b.lo[0]);
    a.np = d3 ? (int)(v.b.hi[1] - v.b.lo[1]) : 1;
    a.nw = (int)(v.b.hi[ax_w] - v.b.lo[ax_w]);
    a.sp = p.sy;
    a.sw = d3 ? p.sz : p.sy;
    /* As the whole-grid backend fills them (cuda_backend.cu), with the view's
     * faces in the kernels' codes (a flux or convective face is mirrored). */
    a.rx = (T)c->d.r[0];
    a.rp = d3 ? (T)c->d.r[1] : T(0);
    a.rw = (T)c->d.r[ax_w];
    for (int sd = 0; sd < 2; sd++) {
        a.gx[sd] = (T)(2.0 * c->d.h[0] * c->bc[HEAT_X_LO + sd].gradient);
        a.bx[sd] = heat_cuda_face_code(v.face[HEAT_X_LO + sd]);
        a.gp[sd] = d3 ? (T)(2.0 * c->d.h[1] * c->bc[2 + sd].gradient) : T(0);
        a.bp[sd] = d3 ? heat_cuda_face_code(v.face[2 + sd]) : HK_PERIODIC;
        a.gw[sd] = (T)(2.0 * c->d.h[ax_w] * c->bc[2 * ax_w + sd].gradient);
        a.bw[sd] = heat_cuda_face_code(v.face[2 * ax_w + sd]);
    }
    /* The padding after the view's rows, where they end with the row's data
     * (the owned nodes and the high x ghosts): the fused passes may load and
     * store a whole last group there (TB_PADDED). A view that ends before
     * that is followed by nodes that another view writes: none. */
    const int64_t data_end = p.owned.hi[0] + p.gv[HEAT_X_HI];
    a.xpad = v.b.hi[0] == data_end ? (int)(p.sy - data_end) : 0;
    a.wchunk = a.nw;
    a.resid = resid;
    return a;
}

template <typename T>
static cudaError_t launch_view_t(part_state *s, const hview &v0, int depth, cudaStream_t st,
                                 unsigned long long *resid)
{
    const hview v = heat_halo_align(&s->p, v0, s->V);
    for (int a = 0; a < 3; a++)
        if (v.b.hi[a] <= v.b.lo[a]) return cudaSuccess;
    heat_stencil_args<T> a = view_args<T>(s, v, s->u, s->v, resid);
    const bool d3 = s->c->grid.dims == 3;
    if (s->general) {
        /* the whole grid's general kernels (cuda_backend.cu's choice), the
         * classes at the view's first node as u is */
        heat_general_args<T> g = tables_of<T>(s);
        static_cast<heat_stencil_args<T> &>(g) = a;
        g.cls = s->d_cls + heat_halo_at(&s->p, v.b.lo[0], v.b.lo[1], v.b.lo[2]);
        if (s->kernel == HEAT_KERNEL_REGISTER_TILED)
            return heat_cuda_launch_gtemporal<T>(g, d3, depth, st);
        return heat_cuda_launch_gsimple<T>(g, d3, st);
    }
    switch (s->kernel) {
    case HEAT_KERNEL_NAIVE:
        return heat_cuda_launch_naive<T>(a, d3, st);
    case HEAT_KERNEL_TILED:
        return heat_cuda_launch_tiled<T>(a, d3, st);
    case HEAT_KERNEL_SLICED:
        return heat_cuda_launch_sliced<T>(a, d3, st);
    default:
        return heat_cuda_launch_temporal<T>(a, d3, depth, st);
    }
}

/* `depth` steps u -> v over the view (depth > 1: the fused kernel), folding
 * the last step's max |u' - u| over the nodes it writes into resid unless
 * that is NULL. */
static cudaError_t launch_view(part_state *s, const hview &v, int depth, cudaStream_t st,
                               unsigned long long *resid)
{
    return s->vs == sizeof(float) ? launch_view_t<float>(s, v, depth, st, resid)
                                  : launch_view_t<double>(s, v, depth, st, resid);
}

static void swap_levels(part_state *s)
{
    std::swap(s->u, s->v);
    s->q.fresh = 0;
}

/* --------------------------------------------------------- the exchange */

static cudaError_t copy_box(part_state *s, void *level, const hbox &b, size_t off, bool to_buf,
                            void *buf, cudaStream_t st)
{
    const hc_box h = to_hc(b);
    if (s->vs == sizeof(float))
        return heat_cuda_launch_copy_box<float>((float *)level, (float *)buf + off, h, s->p.sy,
                                                s->p.sz, to_buf, st);
    return heat_cuda_launch_copy_box<double>((double *)level, (double *)buf + off, h, s->p.sy,
                                             s->p.sz, to_buf, st);
}

static size_t phase_values(const heat_halo_plan &p, int ph, size_t *first)
{
    size_t lo = (size_t)-1, hi = 0;
    for (int i = 0; i < p.nmsg[ph]; i++) {
        lo = std::min(lo, p.msg[ph][i].off);
        hi = std::max(hi, p.msg[ph][i].off + p.msg[ph][i].count);
    }
    *first = p.nmsg[ph] ? lo : 0;
    return p.nmsg[ph] ? hi - lo : 0;
}

/* Where a box is one run of the local array (a face of full planes, as a
 * cut along z gives where x and y have no ghost layers): its first value,
 * else -1. Packed, its values would come in the same order. */
static int64_t box_run(const heat_halo_plan &p, const hbox &b)
{
    const int64_t first = heat_halo_at(&p, b.lo[0], b.lo[1], b.lo[2]);
    const int64_t last = heat_halo_at(&p, b.hi[0] - 1, b.hi[1] - 1, b.hi[2] - 1);
    const int64_t n = (b.hi[0] - b.lo[0]) * (b.hi[1] - b.lo[1]) * (b.hi[2] - b.lo[2]);
    return last - first + 1 == n ? first : -1;
}

/* Whether NCCL takes this message's box in place, unpacked. */
static bool in_place(const part_state *s, const hbox &b)
{
    return s->xp == XP_NCCL && s->direct && box_run(s->p, b) >= 0;
}

/* One phase of the exchange of `level`, queued on stream hi, in two halves
 * so that the interior can be launched between them: phase_post packs the
 * messages (and stages them to the host); phase_finish queues NCCL's
 * transfer, or runs MPI's on the host (waiting for the packing first), and
 * queues the unpacking. */
static int phase_post(part_state *s, void *level, int ph, heat_error *err)
{
    const heat_halo_plan &p = s->p;
    size_t first;
    const size_t n = phase_values(p, ph, &first), bytes = n * s->vs, at = first * s->vs;
    HEAT_CUDA_CHECK(cudaEventRecord(EV(s, PHASE_EV(ph, 0)), s->hi));
    for (int i = 0; i < p.nmsg[ph]; i++)
        if (!in_place(s, p.msg[ph][i].send))
            HEAT_CUDA_CHECK(
                copy_box(s, level, p.msg[ph][i].send, p.msg[ph][i].off, true, s->dsend, s->hi));
    HEAT_CUDA_CHECK(cudaEventRecord(EV(s, EV_PACKED), s->hi));
    if (s->xp == XP_HOST)
        HEAT_CUDA_CHECK(cudaMemcpyAsync((char *)s->hsend + at, (char *)s->dsend + at, bytes,
                                        cudaMemcpyDeviceToHost, s->hi));
    HEAT_CUDA_CHECK(cudaEventRecord(EV(s, PHASE_EV(ph, 1)), s->hi));
    return HEAT_OK;
}

static int phase_finish(part_state *s, void *level, int ph, heat_error *err)
{
    const heat_halo_plan &p = s->p;
    size_t first;
    const size_t n = phase_values(p, ph, &first), bytes = n * s->vs, at = first * s->vs;
    heat_halo_msg recv[HEAT_NFACES], send[HEAT_NFACES];
    char *sb = (char *)(s->xp == XP_HOST ? s->hsend : s->dsend);
    char *rb = (char *)(s->xp == XP_HOST ? s->hrecv : s->drecv);
    char *lv = (char *)level;
    for (int i = 0; i < p.nmsg[ph]; i++) {
        const hmsg &m = p.msg[ph][i];
        char *from = in_place(s, m.send) ? lv + box_run(p, m.send) * s->vs : sb + m.off * s->vs;
        char *to = in_place(s, m.recv) ? lv + box_run(p, m.recv) * s->vs : rb + m.off * s->vs;
        send[i] = heat_halo_msg{m.peer, m.send_tag, from, m.count};
        recv[i] = heat_halo_msg{m.peer, m.recv_tag, to, m.count};
    }
    int rc;
    if (s->xp == XP_NCCL) {
        rc = heat_nccl_exchange(s->nccl, recv, p.nmsg[ph], send, p.nmsg[ph], s->vs, s->hi, err);
        if (rc) return rc;
    } else {
        HEAT_CUDA_CHECK(cudaEventSynchronize(EV(s, PHASE_EV(ph, 1))));
        const double t0 = heat_halo_seconds();
        rc = s->comm.start(s->comm.ctx, recv, p.nmsg[ph], send, p.nmsg[ph], s->vs, err);
        if (!rc) rc = s->comm.wait(s->comm.ctx, err);
        if (rc) return rc;
        s->st.transfer += heat_halo_seconds() - t0;
    }
    HEAT_CUDA_CHECK(cudaEventRecord(EV(s, PHASE_EV(ph, 2)), s->hi));
    if (s->xp == XP_HOST)
        HEAT_CUDA_CHECK(cudaMemcpyAsync((char *)s->drecv + at, (char *)s->hrecv + at, bytes,
                                        cudaMemcpyHostToDevice, s->hi));
    for (int i = 0; i < p.nmsg[ph]; i++)
        if (!in_place(s, p.msg[ph][i].recv))
            HEAT_CUDA_CHECK(
                copy_box(s, level, p.msg[ph][i].recv, p.msg[ph][i].off, false, s->drecv, s->hi));
    HEAT_CUDA_CHECK(cudaEventRecord(EV(s, PHASE_EV(ph, 3)), s->hi));
    return HEAT_OK;
}

static int exchange_phase(part_state *s, void *level, int ph, heat_error *err)
{
    int rc = phase_post(s, level, ph, err);
    return rc ? rc : phase_finish(s, level, ph, err);
}

static float elapsed(cudaEvent_t a, cudaEvent_t b)
{
    float ms = 0;
    if (cudaEventElapsedTime(&ms, a, b) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return ms;
}

/* The figures of a done step or exchange from its events: pack and unpack
 * (and NCCL's transfer; MPI's is timed on the host), and the time not
 * hidden by compute: for a step, from when the interior was done until the
 * halos were unpacked; for an exchange that nothing hides, all of it. */
static void account_slot(part_state *s, int k)
{
    cudaEvent_t *e = s->ev[k];
    const int last = s->p.nphase - 1;
    for (int ph = 0; ph <= last; ph++) {
        s->st.pack += 1e-3 * elapsed(e[PHASE_EV(ph, 0)], e[PHASE_EV(ph, 1)]);
        s->st.unpack += 1e-3 * elapsed(e[PHASE_EV(ph, 2)], e[PHASE_EV(ph, 3)]);
        if (s->xp == XP_NCCL)
            s->st.transfer += 1e-3 * elapsed(e[PHASE_EV(ph, 1)], e[PHASE_EV(ph, 2)]);
    }
    /* serial (HEAT_CUDA_HALO_OVERLAP=0): nothing hides the exchange */
    const float wait = s->pending[k] == SLOT_STEP && s->overlap
                           ? elapsed(e[EV_INTERIOR], e[EV_END])
                           : elapsed(e[PHASE_EV(0, 0)], e[PHASE_EV(last, 3)]);
    if (wait > 0) s->st.exposed += 1e-3 * wait;
    s->st.exchanges++;
    if (s->trace && s->pending[k] == SLOT_STEP) {
        /* ms from t0: the step began (the last interior and unpacking
         * done), the shell done, the first phase packed, transferred, the
         * last unpacked, the interior done, the exchange's end (the step's
         * but where serial: there the interior's start) */
        const int ids[] = {EV_BEGIN,          PHASE_EV(0, 0), PHASE_EV(0, 1), PHASE_EV(0, 2),
                           PHASE_EV(last, 3), EV_INTERIOR,    EV_END};
        fprintf(s->trace, "%llu", ++s->trace_steps);
        for (int id : ids) fprintf(s->trace, ",%.4f", elapsed(s->t0, e[id]));
        fputc('\n', s->trace);
    }
    s->pending[k] = 0;
}

/* Reads every pending slot's figures, oldest first; their events must be
 * done. */
static void account_pending(part_state *s)
{
    for (int i = 1; i <= NSLOT; i++) {
        const int k = (s->slot + i) % NSLOT;
        if (s->pending[k]) account_slot(s, k);
    }
}

/* Waits for the GPU and reads every pending slot's figures. */
static int settle(part_state *s, heat_error *err)
{
    HEAT_CUDA_CHECK(cudaStreamSynchronize(s->hi));
    account_pending(s);
    return HEAT_OK;
}

/* The current slot's events are recorded: on to the next one. When that
 * one is still pending (its step NSLOT steps back), the host waits for that
 * step alone and reads its figures: the GPU keeps the NSLOT - 1 steps
 * queued since. (Waiting for all of them, as settle does, left the GPU idle
 * while the host read 32 slots and queued the next step: 0.25 ms every 32
 * steps at 512^3 on two H200s.) */
static int next_slot(part_state *s, int kind, heat_error *err)
{
    s->pending[s->slot] = (unsigned char)kind;
    s->slot = (s->slot + 1) % NSLOT;
    const int k = s->slot;
    if (!s->pending[k]) return HEAT_OK;
    /* a step's last events: the interior's (stream lo) and EV_END, after
     * every other of stream hi; an exchange's: its last unpacking */
    if (s->pending[k] == SLOT_STEP) {
        HEAT_CUDA_CHECK(cudaEventSynchronize(s->ev[k][EV_INTERIOR]));
        HEAT_CUDA_CHECK(cudaEventSynchronize(s->ev[k][EV_END]));
    } else {
        HEAT_CUDA_CHECK(cudaEventSynchronize(s->ev[k][PHASE_EV(s->p.nphase - 1, 3)]));
    }
    account_slot(s, k);
    return HEAT_OK;
}

/* A whole exchange of `level`, nothing else going on (queued: with NCCL the
 * host does not wait for it). */
static int exchange_blocking(part_state *s, void *level, heat_error *err)
{
    if (!heat_halo_any(&s->p)) return HEAT_OK;
    for (int ph = 0; ph < s->p.nphase; ph++) {
        int rc = exchange_phase(s, level, ph, err);
        if (rc) return rc;
    }
    return next_slot(s, SLOT_EXCHANGE, err);
}

/* exchange_blocking, then a wait for the GPU: every launch queued before it
 * (on stream hi) is done and every slot's figures are read. */
static int exchange_settled(part_state *s, void *level, heat_error *err)
{
    int rc = exchange_blocking(s, level, err);
    return rc ? rc : settle(s, err);
}

/* ----------------------------------------------------------- the steps */

/* max |v - u| over the owned box into s->q.d_resid, on stream hi. */
static cudaError_t launch_residual(part_state *s)
{
    const heat_halo_plan &p = s->p;
    const hc_box o = to_hc(p.owned);
    if (s->vs == sizeof(float))
        return heat_cuda_launch_box_residual<float>((const float *)s->v, (const float *)s->u, o,
                                                    p.sy, p.sz, s->q.d_resid, s->hi);
    return heat_cuda_launch_box_residual<double>((const double *)s->v, (const double *)s->u, o,
                                                 p.sy, p.sz, s->q.d_resid, s->hi);
}

/* The last step of a pass: shell on stream hi, interior on stream lo, the
 * exchange of the shell's layers between. With `resid`, max |u' - u| over
 * the owned box into s->q.d_resid. */
static int overlapped_step(part_state *s, bool resid, heat_error *err)
{
    const heat_halo_plan &p = s->p;
    const bool any = heat_halo_any(&p);
    if (s->trace && !s->t0) {
        HEAT_CUDA_CHECK(cudaEventCreate(&s->t0));
        HEAT_CUDA_CHECK(cudaEventRecord(s->t0, s->hi));
    }
    HEAT_CUDA_CHECK(cudaEventRecord(EV(s, EV_BEGIN), s->hi));
    const bool fold = resid && s->resid_inline;
    unsigned long long *into = fold ? s->q.d_resid : nullptr;
    for (int i = 0; i < p.nshell; i++)
        HEAT_CUDA_CHECK(launch_view(s, heat_halo_view(&p, &p.shell[i]), 1, s->hi, into));
    /* With halo_first the first phase's messages are packed (and NCCL's
     * transfer queued) before the interior starts: the interior's blocks
     * then take every SM until it ends, and the packing or NCCL's kernel
     * would wait for them (docs/PERFORMANCE.md, "Several GPUs"). MPI's
     * transfer, on the host, comes after the interior's launch. */
    /* Serial (HEAT_CUDA_HALO_OVERLAP=0, for measuring): the whole exchange,
     * then the interior, which then runs alone. */
    const bool serial = any && !s->overlap;
    const bool early = any && !serial && s->halo_first;
    int rc = early ? phase_post(s, s->v, 0, err) : HEAT_OK;
    if (!rc && early && s->xp == XP_NCCL) rc = phase_finish(s, s->v, 0, err);
    for (int ph = 0; serial && !rc && ph < p.nphase; ph++) rc = exchange_phase(s, s->v, ph, err);
    if (rc) return rc;
    if (serial) HEAT_CUDA_CHECK(cudaEventRecord(EV(s, EV_END), s->hi));
    const int start = serial ? EV_END : early ? EV_PACKED : EV_BEGIN; /* the interior's */
    HEAT_CUDA_CHECK(cudaStreamWaitEvent(s->lo, EV(s, start), 0));
    HEAT_CUDA_CHECK(launch_view(s, heat_halo_view(&p, &p.interior), 1, s->lo, into));
    HEAT_CUDA_CHECK(cudaEventRecord(EV(s, EV_INTERIOR), s->lo));
    if (early && s->xp != XP_NCCL) rc = phase_finish(s, s->v, 0, err);
    for (int ph = early ? 1 : 0; !rc && any && !serial && ph < p.nphase; ph++)
        rc = exchange_phase(s, s->v, ph, err);
    if (rc) return rc;
    if (!serial) HEAT_CUDA_CHECK(cudaEventRecord(EV(s, EV_END), s->hi));
    HEAT_CUDA_CHECK(cudaStreamWaitEvent(s->hi, EV(s, EV_INTERIOR), 0));
    if (resid && !fold) HEAT_CUDA_CHECK(launch_residual(s));
    swap_levels(s);
    return any ? next_slot(s, SLOT_STEP, err) : HEAT_OK;
}

/* The box of multigrid's level 0 (the part and one ghost layer on each face
 * with a neighbour) between a level of the part and a buffer of it. */
static cudaError_t mg_copy(part_state *s, void *level, void *mgbuf, bool to_mg)
{
    void *x0, *x1;
    int64_t bn[3];
    int gl[3];
    heat_cuda_mg_level0(s->mg, &x0, &x1, bn, gl);
    const heat_halo_plan &p = s->p;
    cudaMemcpy3DParms m;
    memset(&m, 0, sizeof m);
    const cudaPitchedPtr a =
        make_cudaPitchedPtr(level, (size_t)p.sy * s->vs, (size_t)p.ext[0], (size_t)p.ext[1]);
    const cudaPitchedPtr q =
        make_cudaPitchedPtr(mgbuf, (size_t)bn[0] * s->vs, (size_t)bn[0], (size_t)bn[1]);
    const cudaPos at =
        make_cudaPos((size_t)(p.owned.lo[0] - gl[0]) * s->vs, (size_t)(p.owned.lo[1] - gl[1]),
                     (size_t)(p.owned.lo[2] - gl[2]));
    if (to_mg)
        m.srcPtr = a, m.srcPos = at, m.dstPtr = q;
    else
        m.srcPtr = q, m.dstPtr = a, m.dstPos = at;
    m.kind = cudaMemcpyDeviceToDevice;
    m.extent = make_cudaExtent((size_t)bn[0] * s->vs, (size_t)bn[1], (size_t)bn[2]);
    return cudaMemcpy3DAsync(&m, s->hi);
}

/* The owned box of u, whose statistics history.csv takes (in backend_impl.h's
 * order: its rows y fastest, as a download of the box folded on the host
 * would give). */
static const void *owned_base(const part_state *s)
{
    const hbox &o = s->p.owned;
    return (const char *)s->u + heat_halo_at(&s->p, o.lo[0], o.lo[1], o.lo[2]) * s->vs;
}

/* Queues `steps` steps and, with `residual`, the copy of the last one's
 * residual and the owned box's statistics after it (a check step's history
 * row wants them), each followed by an event. Returns once they are queued:
 * the host waits only where a slot of the ring comes round (next_slot), and
 * where the transport runs on the host (MPI), in each exchange. */
static int queue_steps(part_state *s, int64_t steps, int residual, heat_error *err)
{
    const int k = s->p.depth;
    if (residual) HEAT_CUDA_CHECK(cudaMemsetAsync(s->q.d_resid, 0, sizeof *s->q.d_resid, s->hi));
    for (int64_t left = steps; left > 0;) {
        const int d = left < k ? (int)left : k;
        left -= d;
        const bool resid = residual && left == 0;
        halo_op ops[HEAT_HALO_MAX_OPS];
        const int n = heat_halo_pass(&s->p, d, s->fused, resid, ops);
        for (int i = 0; i < n; i++) {
            int rc = HEAT_OK;
            if (ops[i].kind == HALO_SWEEP) {
                HEAT_CUDA_CHECK(launch_view(s, ops[i].view, ops[i].steps, s->hi, nullptr));
                swap_levels(s);
            } else if (ops[i].kind == HALO_EXCHANGE) {
                rc = exchange_blocking(s, s->u, err);
            } else {
                rc = overlapped_step(s, resid, err);
            }
            if (rc) return rc;
        }
    }
    if (residual) HEAT_CUDA_CHECK(heat_cuda_checks_queue_resid(&s->q, owned_base(s), s->hi));
    return HEAT_OK;
}

/* Where queuing fails the levels may have swapped and the statistics no
 * longer match: nothing is left queued or fresh, after whatever did queue. */
static void queue_failed(part_state *s)
{
    if (cudaStreamSynchronize(s->lo) != cudaSuccess) cudaGetLastError();
    heat_cuda_checks_failed(&s->q, s->hi);
}

static int part_queue(heat_backend *b, int64_t steps, int residual, heat_error *err)
{
    part_state *s = (part_state *)b->impl;
    heat_cuda_checks_begin(&s->q, residual);
    const int rc = queue_steps(s, steps, residual, err);
    if (rc) queue_failed(s);
    return rc;
}

/* Waits for what part_queue queued (heat_cuda_checks_wait, stats.cuh), on
 * stream hi, which every step joins. The slots stay pending: reading up to
 * NSLOT of them here, with the GPU idle until the next steps are queued,
 * made each check 0.2 ms longer (next_slot or part_halo_stats reads them). */
static int part_wait(heat_backend *b, double *residual, heat_error *err)
{
    part_state *s = (part_state *)b->impl;
    return heat_cuda_checks_wait(&s->q, s->hi, b->c->d.dt, residual, err);
}

static int part_advance(heat_backend *b, int64_t steps, double *residual, heat_error *err)
{
    part_state *s = (part_state *)b->impl;
    if (heat_case_multigrid(b->c)) {
        if (!s->mg) return heat_error_set(err, HEAT_ERUNTIME, "cuda backend: multigrid not set up");
        s->q.fresh = 0;
        int rc = heat_cuda_mg_advance(s->mg, steps, residual, err);
        void *x0, *x1;
        int64_t bn[3];
        int gl[3];
        heat_cuda_mg_level0(s->mg, &x0, &x1, bn, gl);
        HEAT_CUDA_CHECK(mg_copy(s, s->u, x0, false));
        HEAT_CUDA_CHECK(cudaStreamSynchronize(s->hi));
        return rc;
    }
    int rc = part_queue(b, steps, residual != nullptr, err);
    return rc ? rc : part_wait(b, residual, err);
}

/* ------------------------------------------------------ up and down */

/* The owned box between host memory (x fastest, tight) and a level. */
static cudaError_t owned_copy(part_state *s, void *level, void *host, bool to_device)
{
    const heat_halo_plan &p = s->p;
    cudaMemcpy3DParms m;
    memset(&m, 0, sizeof m);
    const size_t row = (size_t)p.part.n[0] * s->vs;
    cudaPitchedPtr h = make_cudaPitchedPtr(host, row, (size_t)p.part.n[0], (size_t)p.part.n[1]);
    cudaPitchedPtr d =
        make_cudaPitchedPtr(level, (size_t)p.sy * s->vs, (size_t)p.ext[0], (size_t)p.ext[1]);
    const cudaPos at =
        make_cudaPos((size_t)p.owned.lo[0] * s->vs, (size_t)p.owned.lo[1], (size_t)p.owned.lo[2]);
    if (to_device) {
        m.srcPtr = h;
        m.dstPtr = d;
        m.dstPos = at;
        m.kind = cudaMemcpyHostToDevice;
    } else {
        m.srcPtr = d;
        m.srcPos = at;
        m.dstPtr = h;
        m.kind = cudaMemcpyDeviceToHost;
    }
    m.extent = make_cudaExtent(row, (size_t)p.part.n[1], (size_t)p.part.n[2]);
    return cudaMemcpy3D(&m);
}

static int part_upload(heat_backend *b, const void *host, heat_error *err)
{
    part_state *s = (part_state *)b->impl;
    const size_t bytes = (size_t)s->p.values * s->vs;
    /* A check's statistics may still read u on stream hi (part_wait waits
     * for the residual alone); the default stream does not wait for it. */
    HEAT_CUDA_CHECK(cudaStreamSynchronize(s->hi));
    s->q.fresh = 0;
    HEAT_CUDA_CHECK(cudaMemset(s->u, 0, bytes));
    HEAT_CUDA_CHECK(owned_copy(s, s->u, (void *)host, true));
    HEAT_CUDA_CHECK(cudaDeviceSynchronize());
    int rc = exchange_settled(s, s->u, err);
    if (rc) return rc;
    /* Both levels, ghosts included: a Dirichlet node is never written. The
     * copy is on the default stream, which our streams do not wait for. */
    HEAT_CUDA_CHECK(cudaMemcpy(s->v, s->u, bytes, cudaMemcpyDeviceToDevice));
    HEAT_CUDA_CHECK(cudaDeviceSynchronize());
    if (s->mg) { /* multigrid's two level-0 buffers: the field and its held nodes */
        void *x0, *x1;
        int64_t bn[3];
        int gl[3];
        heat_cuda_mg_level0(s->mg, &x0, &x1, bn, gl);
        HEAT_CUDA_CHECK(mg_copy(s, s->u, x0, true));
        HEAT_CUDA_CHECK(mg_copy(s, s->u, x1, true));
        HEAT_CUDA_CHECK(cudaStreamSynchronize(s->hi));
    }
    return HEAT_OK;
}

/* The layers beyond the owned box, at the low or high face of axis a, whose
 * classes the part takes: the valid ghost layers (not the alignment's
 * padding, which may lie outside the grid); with multigrid its level-0
 * box's ghost layer and one more on each face with a neighbour, which its
 * build's coarse operator reads (mg.h). */
static int class_layers(const part_state *s, int a, int hi)
{
    const heat_halo_plan &p = s->p;
    if (heat_case_multigrid(s->c)) return p.part.peer[2 * a + hi] >= 0 ? 2 : 0;
    return p.gv[2 * a + hi];
}

static void part_class_box(const heat_backend *b, int64_t lo[3], int64_t n[3])
{
    const part_state *s = (const part_state *)b->impl;
    for (int a = 0; a < 3; a++) {
        lo[a] = s->p.part.lo[a] - class_layers(s, a, 0);
        n[a] = class_layers(s, a, 0) + s->p.part.n[a] + class_layers(s, a, 1);
    }
}

static void free_classes(part_state *s)
{
    free(s->cls0), free(s->clsw);
    s->cls0 = s->clsw = NULL;
}

/* The classes of part_class_box's box (x fastest) and the tables. Explicit
 * steps: the classes into the local array's layout on the GPU (the
 * padding's class 0: those nodes are never read by an owned one). Multigrid:
 * kept on the host for its setup. */
static int part_set_classes(heat_backend *b, const uint8_t *cls, const heat_coeffs *k,
                            heat_error *err)
{
    part_state *s = (part_state *)b->impl;
    const heat_halo_plan &p = s->p;
    int64_t lo[3], n[3];
    part_class_box(b, lo, n);
    free_classes(s);
    if (heat_case_multigrid(b->c)) {
        /* level 0's box: the part and one ghost layer on each face with a
         * neighbour (depth 1), inside the wider box */
        int64_t in[3], bn[3];
        for (int a = 0; a < 3; a++) {
            in[a] = class_layers(s, a, 0) / 2;
            bn[a] = n[a] - in[a] - class_layers(s, a, 1) / 2;
        }
        s->clsw = (uint8_t *)malloc((size_t)(n[0] * n[1] * n[2]));
        s->cls0 = (uint8_t *)malloc((size_t)(bn[0] * bn[1] * bn[2]));
        if (!s->clsw || !s->cls0) {
            free_classes(s);
            return heat_error_set(err, HEAT_ERUNTIME,
                                  "cuda backend: out of memory for the classes");
        }
        memcpy(s->clsw, cls, (size_t)(n[0] * n[1] * n[2]));
        for (int64_t kk = 0; kk < bn[2]; kk++)
            for (int64_t j = 0; j < bn[1]; j++)
                memcpy(s->cls0 + (kk * bn[1] + j) * bn[0],
                       cls + ((kk + in[2]) * n[1] + j + in[1]) * n[0] + in[0], (size_t)bn[0]);
        for (int a = 0; a < 3; a++) s->clo[a] = lo[a], s->cn[a] = n[a];
        s->k = *k;
        s->k.w = NULL;
        s->general = 1;
        return HEAT_OK;
    }
    std::vector<uint8_t> h((size_t)p.values, 0);
    const int64_t x0 = p.owned.lo[0] - p.gv[HEAT_X_LO];
    for (int64_t kk = 0; kk < n[2]; kk++)
        for (int64_t j = 0; j < n[1]; j++)
            memcpy(h.data() + heat_halo_at(&p, x0, j, kk), cls + (kk * n[1] + j) * n[0],
                   (size_t)n[0]);
    if (!s->d_cls) HEAT_CUDA_CHECK(cudaMalloc(&s->d_cls, (size_t)p.values));
    HEAT_CUDA_CHECK(cudaMemcpy(s->d_cls, h.data(), (size_t)p.values, cudaMemcpyHostToDevice));
    int rc;
    bool shared;
    if (s->vs == sizeof(float)) {
        rc = heat_cuda_general_tables<float>(b->c, k, &s->d_tab, s->gf, err);
        shared = s->gf.w_shared;
    } else {
        rc = heat_cuda_general_tables<double>(b->c, k, &s->d_tab, s->gd, err);
        shared = s->gd.w_shared;
    }
    if (rc) return rc;
    if (s->fused && !shared) {
        /* fused passes stage the w table in shared memory: with more
         * materials than that holds, one step per sweep (the same results) */
        s->fused = 0;
        cudaDeviceProp prop;
        int dev = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
            cudaGetLastError();
            snprintf(prop.name, sizeof prop.name, "GPU");
        }
        snprintf(b->description, sizeof b->description,
                 "cuda (%s, %s kernel, one step per sweep: %d materials are more than fused "
                 "passes hold; halos %d layers deep, %s)",
                 prop.name, heat_kernel_name(b->c->solver.kernel), k->nmat, p.depth,
                 heat_precision_name(b->c->solver.precision));
    }
    s->general = 1;
    return HEAT_OK;
}

static int part_mg_setup(heat_backend *b, heat_error *err)
{
    part_state *s = (part_state *)b->impl;
    heat_cuda_mg_destroy(s->mg);
    s->mg = NULL;
    const int gen = b->c->d.general && s->clsw;
    const int rc = heat_cuda_mg_create_part(b->c, &s->p.part, &s->comm, s->hi, gen ? s->cls0 : NULL,
                                            gen ? s->clsw : NULL, s->clo, s->cn, gen ? &s->k : NULL,
                                            &s->mg, err);
    /* the build is done with the classes; level 0's are on the GPU */
    free_classes(s);
    return rc;
}

static void part_mg_info(const heat_backend *b, heat_mg_info *info)
{
    const part_state *s = (const part_state *)b->impl;
    if (s->mg) heat_cuda_mg_info(s->mg, info);
}

static int part_download(heat_backend *b, void *host, heat_error *err)
{
    part_state *s = (part_state *)b->impl;
    HEAT_CUDA_CHECK(cudaStreamSynchronize(s->hi));
    HEAT_CUDA_CHECK(cudaStreamSynchronize(s->lo));
    HEAT_CUDA_CHECK(owned_copy(s, s->u, host, false));
    return HEAT_OK;
}

static void *part_host_alloc(heat_backend *b, size_t bytes)
{
    (void)b;
    void *p = NULL;
    if (cudaMallocHost(&p, bytes) == cudaSuccess) return p;
    cudaGetLastError();
    return malloc(bytes);
}

static void part_host_free(heat_backend *b, void *p)
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

static void part_destroy(heat_backend *b)
{
    if (!b) return;
    part_state *s = (part_state *)b->impl;
    if (s) {
        /* a check's statistics may still be queued (part_wait waits for the
         * residual alone) */
        if (s->hi && cudaStreamSynchronize(s->hi) != cudaSuccess) cudaGetLastError();
        if (s->lo && cudaStreamSynchronize(s->lo) != cudaSuccess) cudaGetLastError();
        heat_cuda_mg_destroy(s->mg);
        heat_nccl_destroy(s->nccl);
        free_classes(s);
        cudaFree(s->d_cls);
        cudaFree(s->d_tab);
        cudaFree(s->u);
        cudaFree(s->v);
        cudaFree(s->dsend);
        cudaFree(s->drecv);
        cudaFree(s->scratch);
        heat_cuda_checks_destroy(&s->q);
        cudaFreeHost(s->hsend);
        cudaFreeHost(s->hrecv);
        for (int k = 0; k < NSLOT; k++)
            for (int i = 0; i < NEV; i++)
                if (s->ev[k][i]) cudaEventDestroy(s->ev[k][i]);
        if (s->t0) cudaEventDestroy(s->t0);
        if (s->trace) fclose(s->trace);
        if (s->hi) cudaStreamDestroy(s->hi);
        if (s->lo) cudaStreamDestroy(s->lo);
        free(s);
    }
    free(b);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(std::vector<double> v)
{
    qsort(v.data(), v.size(), sizeof(double), cmp_double);
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* bench_time (backend.h): a copy of the local level and the steps, each
 * timed on the wall clock around complete, synchronized calls. */
static int part_bench_time(heat_backend *b, int steps, int runs, double *copy_ms, double *steps_ms,
                           heat_error *err)
{
    part_state *s = (part_state *)b->impl;
    const size_t bytes = (size_t)s->p.values * s->vs;
    if (!s->scratch) HEAT_CUDA_CHECK(cudaMalloc(&s->scratch, bytes));
    std::vector<double> tc(runs), ts(runs);
    for (int r = 0; r < runs; r++) {
        double t0 = heat_halo_seconds();
        HEAT_CUDA_CHECK(cudaMemcpy(s->scratch, s->u, bytes, cudaMemcpyDeviceToDevice));
        HEAT_CUDA_CHECK(cudaDeviceSynchronize());
        tc[r] = heat_halo_seconds() - t0;
        t0 = heat_halo_seconds();
        int rc = part_advance(b, steps, NULL, err);
        if (rc) return rc;
        HEAT_CUDA_CHECK(cudaDeviceSynchronize());
        ts[r] = heat_halo_seconds() - t0;
    }
    *copy_ms = 1e3 * median(tc);
    *steps_ms = 1e3 * median(ts);
    return HEAT_OK;
}

static int part_bench_halo(heat_backend *b, int runs, double *pack_ms, double *transfer_ms,
                           double *unpack_ms, heat_error *err)
{
    part_state *s = (part_state *)b->impl;
    std::vector<double> tp(runs), tt(runs), tu(runs);
    int rc0 = settle(s, err); /* the steps' slots read first: not counted below */
    if (rc0) return rc0;
    for (int r = 0; r < runs; r++) {
        const heat_halo_stats before = s->st;
        int rc = exchange_settled(s, s->u, err);
        if (rc) return rc;
        tp[r] = s->st.pack - before.pack;
        tt[r] = s->st.transfer - before.transfer;
        tu[r] = s->st.unpack - before.unpack;
    }
    *pack_ms = 1e3 * median(tp);
    *transfer_ms = 1e3 * median(tt);
    *unpack_ms = 1e3 * median(tu);
    return HEAT_OK;
}

static void part_halo_stats(const heat_backend *b, heat_halo_stats *st)
{
    part_state *s = (part_state *)b->impl;
    if (cudaStreamSynchronize(s->hi) == cudaSuccess)
        account_pending(s);
    else
        cudaGetLastError();
    *st = s->st;
    if (s->mg) heat_cuda_mg_halo_stats(s->mg, st);
}

/* history.csv's statistics of the owned box on the GPU, three values back
 * (heat_cuda_checks_stats, stats.cuh). */
static int part_field_stats(heat_backend *b, double *min, double *max, double *sum, heat_error *err)
{
    part_state *s = (part_state *)b->impl;
    return heat_cuda_checks_stats(&s->q, owned_base(s), s->hi, min, max, sum, err);
}

/* Every launch the loop makes, once, outside its clock: each kernel loads at
 * its first launch (tens of ms for fused ones), and the first exchange sets
 * up NCCL's or MPI's connections to the neighbours. The sweeps write the
 * other level from the current one, which the next pass rewrites; the
 * exchange sends the current level's owned nodes into ghosts that already
 * hold them; the statistics only read. */
static int part_warm(heat_backend *b, heat_error *err)
{
    part_state *s = (part_state *)b->impl;
    if (heat_case_multigrid(b->c)) return HEAT_OK;
    const heat_halo_plan &p = s->p;
    for (int d = 1; d <= p.depth; d++)
        for (int resid = 0; resid < 2; resid++) {
            halo_op ops[HEAT_HALO_MAX_OPS];
            const int n = heat_halo_pass(&p, d, s->fused, resid, ops);
            for (int i = 0; i < n; i++) {
                if (ops[i].kind == HALO_SWEEP)
                    HEAT_CUDA_CHECK(launch_view(s, ops[i].view, ops[i].steps, s->hi, nullptr));
                else if (ops[i].kind == HALO_EXCHANGE)
                    continue; /* below, once */
                else {
                    /* the residual folded where the check step folds it */
                    unsigned long long *into = resid && s->resid_inline ? s->q.d_resid : nullptr;
                    for (int j = 0; j < p.nshell; j++)
                        HEAT_CUDA_CHECK(
                            launch_view(s, heat_halo_view(&p, &p.shell[j]), 1, s->hi, into));
                    HEAT_CUDA_CHECK(
                        launch_view(s, heat_halo_view(&p, &p.interior), 1, s->hi, into));
                }
            }
        }
    HEAT_CUDA_CHECK(launch_residual(s));
    int rc = exchange_settled(s, s->u, err); /* every launch above is done */
    double mn, mx, sum;
    return rc ? rc : part_field_stats(b, &mn, &mx, &sum, err);
}

/* (Positional: C++17 has no designated initializers.) */
static const heat_backend_ops part_ops = {
    part_upload,         part_advance,      part_download,   part_destroy,
    part_host_alloc,     part_host_free,    part_bench_time, NULL /* poison_next */,
    part_halo_stats,     part_bench_halo,   part_class_box,  part_set_classes,
    part_field_stats,    NULL /* sample */, part_mg_setup,   part_mg_info,
    NULL /* mg_bench */, part_warm,         part_queue,      part_wait};

/* ----------------------------------------------------------- creation */

extern "C" void heat_cuda_select_device(int node_rank)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) {
        cudaGetLastError();
        return;
    }
    cudaSetDevice(node_rank % count);
    cudaGetLastError();
}

/* A process that may run on one or two CPUs only (mpirun binds each rank to
 * a core by default) waits for the GPU asleep, not spinning: a spinning wait
 * takes the core from the CUDA driver's and heat's other threads, and cost
 * 2 to 5% of the 512^3 loop on an H100 (docs/PERFORMANCE.md). Elsewhere
 * CUDA's default (spinning while there are CPUs to spare) stays. */
extern "C" void heat_cuda_schedule_for_affinity(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) <= 2 &&
        cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync) != cudaSuccess)
        cudaGetLastError(); /* a device in use with other flags: keep them */
}

/* Whether another rank of this node works on the same GPU (by UUID). */
static int gpu_shared(const heat_halo_comm *comm, int dev, int *sharing)
{
    /* Collective: every rank takes part, whatever its device says. */
    cudaDeviceProp prop;
    memset(&prop, 0, sizeof prop);
    if (cudaGetDeviceProperties(&prop, dev) != cudaSuccess) cudaGetLastError();
    std::vector<char> all((size_t)comm->node_size * sizeof prop.uuid);
    *sharing = 1;
    if (comm->node_allgather(comm->ctx, &prop.uuid, all.data(), sizeof prop.uuid) != HEAT_OK)
        return 0;
    *sharing = 0;
    for (int r = 0; r < comm->node_size; r++)
        *sharing +=
            !memcmp(all.data() + (size_t)r * sizeof prop.uuid, &prop.uuid, sizeof prop.uuid);
    return *sharing > 1;
}

/* The MPI library said that it takes GPU memory: one small exchange of GPU
 * buffers with the neighbours, checked value by value, before relying on it. */
static int verify_gpu_mpi(part_state *s)
{
    const heat_halo_plan &p = s->p;
    heat_halo_msg recv[HEAT_NFACES], send[HEAT_NFACES];
    std::vector<double> out(HEAT_NFACES), in(HEAT_NFACES, -1.0);
    int n = 0;
    for (int i = 0; i < p.nmsg[0]; i++) {
        const hmsg &m = p.msg[0][i];
        out[i] = 1000.0 * p.part.rank + m.face;
        send[n] = heat_halo_msg{m.peer, m.send_tag, (char *)s->dsend + i * sizeof(double), 1};
        recv[n] = heat_halo_msg{m.peer, m.recv_tag, (char *)s->drecv + i * sizeof(double), 1};
        n++;
    }
    int ok =
        cudaMemcpy(s->dsend, out.data(), n * sizeof(double), cudaMemcpyHostToDevice) == cudaSuccess;
    heat_error e;
    if (ok) ok = s->comm.start(s->comm.ctx, recv, n, send, n, sizeof(double), &e) == HEAT_OK;
    if (ok) ok = s->comm.wait(s->comm.ctx, &e) == HEAT_OK;
    if (ok)
        ok = cudaMemcpy(in.data(), s->drecv, n * sizeof(double), cudaMemcpyDeviceToHost) ==
             cudaSuccess;
    for (int i = 0; i < n && ok; i++)
        ok = in[i] == 1000.0 * p.msg[0][i].peer + (p.msg[0][i].face ^ 1);
    cudaGetLastError();
    return s->comm.all_ok(s->comm.ctx, ok);
}

/* The transport (collective): NCCL, MPI on GPU memory, or MPI through the
 * host. */
static int choose_transport(part_state *s, int shared, FILE *notices, heat_error *err)
{
    const heat_transport want = s->c->parallel.transport;
    const heat_halo_plan &p = s->p;
    if (want == HEAT_TRANSPORT_NCCL ||
        (want == HEAT_TRANSPORT_AUTO && heat_nccl_available() && !shared && heat_halo_any(&p))) {
        if (want == HEAT_TRANSPORT_NCCL && !heat_nccl_available())
            return heat_error_set(err, HEAT_ERUNTIME,
                                  "parallel.transport = \"nccl\": this heat was built without "
                                  "NCCL; use \"mpi\" or \"auto\"");
        if (want == HEAT_TRANSPORT_NCCL && shared)
            return heat_error_set(err, HEAT_ERUNTIME,
                                  "parallel.transport = \"nccl\": NCCL cannot run two ranks on "
                                  "one GPU, and on some node more ranks than GPUs share them; "
                                  "use \"mpi\" (or \"auto\"), or one rank per GPU");
        heat_error e;
        int rc = heat_nccl_create(&s->comm, p.part.rank, p.part.size, &s->nccl, &e);
        if (rc == HEAT_OK) {
            s->xp = XP_NCCL;
            snprintf(s->st.transport, sizeof s->st.transport, "nccl");
            return HEAT_OK;
        }
        if (want == HEAT_TRANSPORT_NCCL) {
            *err = e;
            return rc;
        }
        if (notices)
            fprintf(notices, "notice: parallel.transport = \"auto\": %s; halos go over MPI\n",
                    e.msg);
    }
    if (want == HEAT_TRANSPORT_AUTO && !heat_nccl_available() && !shared && heat_halo_any(&p) &&
        notices)
        fprintf(notices,
                "notice: this heat was built without NCCL: halos between the GPUs go over MPI, "
                "which ran 2 to 6 times slower than NCCL on 2 and 4 H200s (docs/PERFORMANCE.md, "
                "\"Several GPUs\"); build with NCCL where every rank has a GPU\n");
    if (s->comm.gpu_aware && !shared && verify_gpu_mpi(s)) {
        s->xp = XP_DEVICE;
        snprintf(s->st.transport, sizeof s->st.transport, "mpi, GPU memory (CUDA-aware MPI)");
        return HEAT_OK;
    }
    s->xp = XP_HOST;
    snprintf(s->st.transport, sizeof s->st.transport, "mpi, host-staged");
    return HEAT_OK;
}

static int allocate(part_state *s, const char *name, heat_error *err)
{
    const size_t bytes = (size_t)s->p.values * s->vs;
    const size_t msgs = (s->p.buf_values + HEAT_NFACES) * std::max(s->vs, sizeof(double));
    /* the explicit general update's classes, a byte per value */
    const size_t cls = s->c->d.general && !heat_case_multigrid(s->c) ? (size_t)s->p.values : 0;
    size_t free_b = 0, total_b = 0;
    HEAT_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    if (2 * bytes + cls + 2 * msgs + (64u << 20) > free_b)
        return heat_error_set(err, HEAT_ERUNTIME,
                              "cuda backend: rank %d's part does not fit on %s: %.3f GB needed "
                              "(two time levels of %lld values with ghost layers%s), %.3f GB free "
                              "of %.3f GB; use more ranks or GPUs, or float precision",
                              s->p.part.rank, name, (2.0 * bytes + cls + 2.0 * msgs) / 1e9,
                              (long long)s->p.values, cls ? ", and their classes" : "",
                              free_b / 1e9, total_b / 1e9);
    heat_cuda_schedule_for_affinity();
    HEAT_CUDA_CHECK(cudaMalloc(&s->u, bytes));
    HEAT_CUDA_CHECK(cudaMalloc(&s->v, bytes));
    HEAT_CUDA_CHECK(cudaMemset(s->u, 0, bytes));
    HEAT_CUDA_CHECK(cudaMemset(s->v, 0, bytes));
    HEAT_CUDA_CHECK(cudaMalloc(&s->dsend, msgs));
    HEAT_CUDA_CHECK(cudaMalloc(&s->drecv, msgs));
    HEAT_CUDA_CHECK(cudaMallocHost(&s->hsend, msgs));
    HEAT_CUDA_CHECK(cudaMallocHost(&s->hrecv, msgs));
    int least = 0, greatest = 0;
    HEAT_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    HEAT_CUDA_CHECK(cudaStreamCreateWithPriority(&s->hi, cudaStreamNonBlocking, greatest));
    HEAT_CUDA_CHECK(cudaStreamCreateWithPriority(&s->lo, cudaStreamNonBlocking, least));
    for (int k = 0; k < NSLOT; k++)
        for (int i = 0; i < NEV; i++) HEAT_CUDA_CHECK(cudaEventCreate(&s->ev[k][i]));
    const hbox &o = s->p.owned;
    HEAT_CUDA_CHECK(heat_cuda_checks_create(&s->q, s->vs == sizeof(float), o.hi[0] - o.lo[0],
                                            o.hi[1] - o.lo[1], o.hi[2] - o.lo[2], s->p.sy,
                                            s->p.sz));
    HEAT_CUDA_CHECK(cudaDeviceSynchronize());
    return HEAT_OK;
}

/* A measuring switch that is on unless the environment sets it to "0". */
static bool env_off(const char *name)
{
    const char *v = getenv(name);
    return v && !strcmp(v, "0");
}

extern "C" int heat_cuda_part_create(const heat_case *c, const heat_part *part,
                                     const heat_halo_comm *comm, FILE *notices, heat_backend **out,
                                     heat_error *err)
{
    *out = NULL;
    char why[512];
    int rc = HEAT_OK;
    if (!heat_cuda_usable(why, sizeof why))
        rc = heat_error_set(err, HEAT_ERUNTIME, "solver.backend = \"cuda\": %s", why);
    const int depth = part->depth;
    const int fused = c->solver.kernel == HEAT_KERNEL_REGISTER_TILED && depth > 1;
    if (!rc && fused && depth > HEAT_CUDA_TEMPORAL_MAX)
        rc = heat_error_set(err, HEAT_EINPUT,
                            "solver.temporal_block = %d: the cuda backend fuses 1 to %d steps "
                            "per pass",
                            depth, HEAT_CUDA_TEMPORAL_MAX);
    heat_backend *b = rc ? NULL : (heat_backend *)calloc(1, sizeof *b);
    part_state *s = rc ? NULL : (part_state *)calloc(1, sizeof *s);
    if (!rc && (!b || !s)) rc = heat_error_set(err, HEAT_ERUNTIME, "cuda backend: out of memory");
    int dev = 0, shared = 0, sharing = 1;
    cudaDeviceProp prop;
    memset(&prop, 0, sizeof prop);
    if (!rc) {
        b->ops = &part_ops;
        b->c = c;
        b->impl = s;
        s->c = c;
        s->comm = *comm;
        s->vs = heat_case_value_size(c);
        s->V = (int)(16 / s->vs);
        s->kernel = c->solver.kernel;
        s->fused = fused;
        const char *hf = getenv("HEAT_CUDA_HALO_FIRST");
        s->halo_first = hf && *hf ? strcmp(hf, "0") != 0 : -1;
        s->direct = !env_off("HEAT_CUDA_HALO_DIRECT");
        s->overlap = !env_off("HEAT_CUDA_HALO_OVERLAP");
        const char *tr = getenv("HEAT_CUDA_HALO_TRACE");
        if (tr && *tr) {
            char name[4096];
            snprintf(name, sizeof name, "%s.%d.csv", tr, part->rank);
            s->trace = fopen(name, "w");
            if (s->trace)
                fputs("step,begin,shell,packed,transferred,unpacked,interior,end\n", s->trace);
            else if (notices)
                fprintf(notices, "notice: HEAT_CUDA_HALO_TRACE: cannot write %s: %s\n", name,
                        strerror(errno));
        }
        heat_halo_plan_init(&s->p, c, part, s->V);
        s->resid_inline =
            !s->p.gv[HEAT_X_LO] && !s->p.gv[HEAT_X_HI] && !env_off("HEAT_CUDA_RESID_INLINE");
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaGetDeviceProperties(&prop, dev) != cudaSuccess)
            rc = heat_error_set(err, HEAT_ERUNTIME, "cuda backend: no device properties");
    }
    if (!rc) rc = allocate(s, prop.name, err);
    /* From here on collective: every rank must have got this far. */
    if (!comm->all_ok(comm->ctx, rc == HEAT_OK)) {
        if (!rc) rc = heat_error_set(err, HEAT_ERUNTIME, "another rank could not create its part");
        part_destroy(b);
        return rc;
    }
    shared = gpu_shared(comm, dev, &sharing);
    const int none_shared = comm->all_ok(comm->ctx, !shared);
    if (!none_shared && notices)
        fprintf(notices,
                "notice: more ranks than GPUs on a node: ranks share GPUs (here %d on %s); halos "
                "go through host memory (one rank per GPU is faster)\n",
                sharing, prop.name);
    rc = choose_transport(s, !none_shared, notices, err);
    /* Measured on 4 H100s (docs/PERFORMANCE.md, "Several GPUs"): packing
     * first gains most through MPI, whose packing the host must wait for. */
    if (s->halo_first < 0) s->halo_first = s->xp != XP_NCCL;
    if (!comm->all_ok(comm->ctx, rc == HEAT_OK)) {
        if (!rc) rc = heat_error_set(err, HEAT_ERUNTIME, "another rank could not set up its halos");
        part_destroy(b);
        return rc;
    }
    if (fused)
        snprintf(
            b->description, sizeof b->description, "cuda (%s, %s kernel, %d steps per pass%s, %s)",
            prop.name, heat_kernel_name(c->solver.kernel), depth,
            c->solver.temporal_auto ? " (auto)" : "", heat_precision_name(c->solver.precision));
    else
        snprintf(b->description, sizeof b->description, "cuda (%s, %s kernel, %s)", prop.name,
                 heat_kernel_name(c->solver.kernel), heat_precision_name(c->solver.precision));
    *out = b;
    return HEAT_OK;
}
