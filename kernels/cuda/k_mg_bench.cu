/* heat bench --multigrid on the GPU: the parts of a V-cycle level by level
 * with CUDA events, the cycle as the solver replays it (one graph), and a
 * device copy of the finest field for the ceiling. */
#include <algorithm>
#include <vector>

#include "k_mg_impl.cuh"

static void ev_mark(void *ctx, int i)
{
    cuda_mg *g = (cuda_mg *)ctx;
    if (!g->ev[i]) cudaEventCreate(&g->ev[i]);
    cudaEventRecord(g->ev[i], g->stream);
}

static int ev_read(void *ctx, int n, double *ms, heat_error *err)
{
    cuda_mg *g = (cuda_mg *)ctx;
    MG_CUDA_CHECK(cudaEventSynchronize(g->ev[n - 1]));
    for (int i = 1; i < n; i++) {
        float t = 0;
        MG_CUDA_CHECK(cudaEventElapsedTime(&t, g->ev[i - 1], g->ev[i]));
        ms[i - 1] = t;
    }
    return heat_cuda_mg_finish(g, err);
}

int heat_cuda_mg_bench(cuda_mg *g, int runs, heat_mg_timing *t, heat_error *err)
{
    const heat_mg_clock clock = {ev_mark, ev_read};
    const size_t vs = g->is_float ? 4 : 8, bytes = (size_t)g->m->lv[0].points * vs;
    /* the field's buffer, padded planes included (mg_plane) */
    const long long plane = g->is_float ? mg_plane(g->lf[0]) : mg_plane(g->ld[0]);
    const size_t held = (size_t)g->m->lv[0].n[2] * (size_t)plane * vs;
    void *field = g->is_float ? (void *)g->lf[0].x0 : (void *)g->ld[0].x0;
    /* the start field, for the mixed-precision solve below */
    void *start = nullptr;
    MG_CUDA_CHECK(cudaMalloc(&start, held));
    cudaError_t e = cudaMemcpy(start, field, held, cudaMemcpyDeviceToDevice);
    int rc = e == cudaSuccess
                 ? heat_mg_time_parts(g->m, &heat_cuda_mg_launch_ops, g, &clock, runs, t, err)
                 : heat_error_set(err, HEAT_ERUNTIME, "cuda multigrid: %s", cudaGetErrorString(e));
    if (!rc) {
        e = cudaMemcpy(field, start, held, cudaMemcpyDeviceToDevice);
        rc = e == cudaSuccess
                 ? heat_cuda_mg_mixed(g, 1e-10, &t->mixed_cycles, &t->mixed_inner, &t->mixed_s,
                                      &t->mixed_reduction, err)
                 : heat_error_set(err, HEAT_ERUNTIME, "cuda multigrid: %s", cudaGetErrorString(e));
    }
    cudaFree(start);
    if (rc) return rc;
    /* The cycle as the solver runs it: the graph, replayed `runs` times. */
    ev_mark(g, 0);
    for (int i = 0; i < runs; i++) MG_CUDA_CHECK(cudaGraphLaunch(g->graph, g->stream));
    ev_mark(g, 1);
    double ms[1];
    if ((rc = ev_read(g, 2, ms, err))) return rc;
    t->cycle_ms = ms[0] / runs;
    /* The copy of the field, the ceiling of a pass that reads and writes it. */
    void *scratch = nullptr;
    MG_CUDA_CHECK(cudaMalloc(&scratch, bytes));
    const void *src = g->is_float ? (const void *)g->lf[0].x0 : (const void *)g->ld[0].x0;
    std::vector<double> cms;
    for (int i = 0; i < 6 && !rc; i++) {
        ev_mark(g, 0);
        cudaMemcpyAsync(scratch, src, bytes, cudaMemcpyDeviceToDevice, g->stream);
        ev_mark(g, 1);
        if (!(rc = ev_read(g, 2, ms, err)) && i > 0) cms.push_back(ms[0]);
    }
    cudaFree(scratch);
    if (rc) return rc;
    std::sort(cms.begin(), cms.end());
    t->copy_ms = cms[cms.size() / 2];
    t->copy_bytes = 2.0 * (double)bytes;
    return HEAT_OK;
}
