#include <stdio.h>
#include <stdlib.h>

#include "backend_impl.h"

#ifdef HEAT_HAVE_CUDA
#include "cuda_backend.h"
#endif

/* Says once, on `notices`, that solver.temporal_block > 1 is not used as fused
 * steps by `who` (the CPU backend, or a CUDA kernel other than register_tiled). */
static void notice_unfused(const heat_case *c, const char *who, FILE *notices)
{
    if (notices && c->solver.temporal_block > 1)
        fprintf(notices,
                "notice: solver.temporal_block = %d: %s runs the steps one at a time (only the "
                "register_tiled GPU kernel fuses steps); results are the same\n",
                c->solver.temporal_block, who);
}

static int create_cpu(const heat_case *c, FILE *notices, heat_backend **out, heat_error *err)
{
    int rc = heat_cpu_backend_create(c, out, err);
    if (rc == HEAT_OK) notice_unfused(c, "the cpu backend", notices);
    return rc;
}

#ifdef HEAT_HAVE_CUDA
static int create_cuda(const heat_case *c, FILE *notices, heat_backend **out, heat_error *err)
{
    int rc = heat_cuda_backend_create(c, out, err);
    if (rc == HEAT_OK && c->solver.kernel != HEAT_KERNEL_REGISTER_TILED) {
        char who[64];
        snprintf(who, sizeof who, "the cuda kernel %s", heat_kernel_name(c->solver.kernel));
        notice_unfused(c, who, notices);
    }
    return rc;
}
#endif

int heat_backend_create(const heat_case *c, FILE *notices, heat_backend **out, heat_error *err)
{
    *out = NULL;
    switch (c->solver.backend) {
    case HEAT_BACKEND_CPU:
        return create_cpu(c, notices, out, err);
    case HEAT_BACKEND_CUDA:
#ifdef HEAT_HAVE_CUDA
        return create_cuda(c, notices, out, err);
#else
        return heat_error_set(err, HEAT_ERUNTIME,
                              "solver.backend = \"cuda\": this heat was built without CUDA "
                              "(see heat --version); use \"cpu\" or \"auto\"");
#endif
    case HEAT_BACKEND_AUTO:
    default: {
#ifdef HEAT_HAVE_CUDA
        char why[256];
        if (heat_cuda_usable(why, sizeof why)) return create_cuda(c, notices, out, err);
        if (notices) fprintf(notices, "notice: no usable GPU (%s): running on the CPU\n", why);
#endif
        return create_cpu(c, notices, out, err);
    }
    }
}

int heat_backend_upload(heat_backend *b, const void *host_field, heat_error *err)
{
    return b->ops->upload(b, host_field, err);
}

int heat_backend_advance(heat_backend *b, int64_t steps, double *residual, heat_error *err)
{
    return b->ops->advance(b, steps, residual, err);
}

int heat_backend_download(heat_backend *b, void *host_field, heat_error *err)
{
    return b->ops->download(b, host_field, err);
}

int heat_backend_download_start(heat_backend *b, void *host_field, heat_error *err)
{
    if (b->ops->download_start) return b->ops->download_start(b, host_field, err);
    return b->ops->download(b, host_field, err);
}

int heat_backend_download_wait(heat_backend *b, heat_error *err)
{
    return b->ops->download_wait ? b->ops->download_wait(b, err) : HEAT_OK;
}

void *heat_backend_host_alloc(heat_backend *b, size_t bytes)
{
    return b->ops->host_alloc ? b->ops->host_alloc(b, bytes) : malloc(bytes);
}

void heat_backend_host_free(heat_backend *b, void *p)
{
    if (b->ops->host_free)
        b->ops->host_free(b, p);
    else
        free(p);
}

const char *heat_backend_describe(const heat_backend *b)
{
    return b->description;
}

void heat_backend_destroy(heat_backend *b)
{
    if (b) b->ops->destroy(b);
}

const char *heat_backend_builtin(void)
{
#ifdef HEAT_HAVE_CUDA
    return "cpu (OpenMP), cuda";
#else
    return "cpu (OpenMP)";
#endif
}
