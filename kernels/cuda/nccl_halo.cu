/* Halos between GPUs through NCCL: grouped ncclSend / ncclRecv, queued on
 * the stream that packed the buffers and that unpacks them, so the host
 * never waits for an exchange. NCCL needs every rank on a GPU of its own
 * (cuda_part.cu checks that first); messages between two ranks are matched
 * in the order they are queued, so sends go out in the order of the face
 * they land in and receives are posted in the order of their own faces. */
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "halo_cuda.h"

#ifdef HEAT_HAVE_NCCL
#include <nccl.h>

struct heat_nccl {
    ncclComm_t comm;
};

int heat_nccl_available(void)
{
    return 1;
}

int heat_nccl_create(const heat_halo_comm *comm, int rank, int size, heat_nccl **out,
                     heat_error *err)
{
    *out = NULL;
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    ncclResult_t r = ncclSuccess;
    if (rank == 0) r = ncclGetUniqueId(&id);
    /* Everyone learns whether rank 0 has an id, and takes it. */
    if (!comm->all_ok(comm->ctx, r == ncclSuccess))
        return heat_error_set(err, HEAT_ERUNTIME, "nccl: ncclGetUniqueId failed on rank 0%s%s",
                              rank == 0 ? ": " : "", rank == 0 ? ncclGetErrorString(r) : "");
    if (comm->bcast(comm->ctx, &id, sizeof id) != HEAT_OK)
        return heat_error_set(err, HEAT_ERUNTIME, "nccl: sharing NCCL's id failed");
    heat_nccl *n = (heat_nccl *)calloc(1, sizeof *n);
    if (!n) return heat_error_set(err, HEAT_ERUNTIME, "out of memory");
    r = ncclCommInitRank(&n->comm, size, id, rank);
    const int ok = comm->all_ok(comm->ctx, r == ncclSuccess);
    if (!ok) {
        if (r == ncclSuccess) ncclCommDestroy(n->comm);
        free(n);
        return heat_error_set(err, HEAT_ERUNTIME, "nccl: ncclCommInitRank failed%s%s",
                              r != ncclSuccess ? ": " : " on another rank",
                              r != ncclSuccess ? ncclGetErrorString(r) : "");
    }
    *out = n;
    return HEAT_OK;
}

int heat_nccl_exchange(heat_nccl *n, const heat_halo_msg *recv, int nrecv,
                       const heat_halo_msg *send, int nsend, size_t value_size, cudaStream_t s,
                       heat_error *err)
{
    const ncclDataType_t t = value_size == sizeof(float) ? ncclFloat : ncclDouble;
    /* The tags say the face a message lands in: that order on both sides. */
    std::vector<const heat_halo_msg *> r, q;
    for (int i = 0; i < nrecv; i++) r.push_back(&recv[i]);
    for (int i = 0; i < nsend; i++) q.push_back(&send[i]);
    auto by_tag = [](const heat_halo_msg *a, const heat_halo_msg *b) { return a->tag < b->tag; };
    std::stable_sort(r.begin(), r.end(), by_tag);
    std::stable_sort(q.begin(), q.end(), by_tag);
    ncclResult_t e = ncclGroupStart();
    for (const heat_halo_msg *m : r)
        if (e == ncclSuccess) e = ncclRecv(m->buf, m->count, t, m->peer, n->comm, s);
    for (const heat_halo_msg *m : q)
        if (e == ncclSuccess) e = ncclSend(m->buf, m->count, t, m->peer, n->comm, s);
    ncclResult_t g = ncclGroupEnd();
    if (e == ncclSuccess) e = g;
    if (e != ncclSuccess)
        return heat_error_set(err, HEAT_ERUNTIME, "nccl: halo exchange failed: %s",
                              ncclGetErrorString(e));
    return HEAT_OK;
}

void heat_nccl_destroy(heat_nccl *n)
{
    if (!n) return;
    ncclCommDestroy(n->comm);
    free(n);
}

#else /* built without NCCL */

int heat_nccl_available(void)
{
    return 0;
}

int heat_nccl_create(const heat_halo_comm *comm, int rank, int size, heat_nccl **out,
                     heat_error *err)
{
    (void)comm, (void)rank, (void)size;
    *out = NULL;
    return heat_error_set(err, HEAT_ERUNTIME, "this heat was built without NCCL");
}

int heat_nccl_exchange(heat_nccl *n, const heat_halo_msg *recv, int nrecv,
                       const heat_halo_msg *send, int nsend, size_t value_size, cudaStream_t s,
                       heat_error *err)
{
    (void)n, (void)recv, (void)nrecv, (void)send, (void)nsend, (void)value_size, (void)s;
    return heat_error_set(err, HEAT_ERUNTIME, "this heat was built without NCCL");
}

void heat_nccl_destroy(heat_nccl *n)
{
    (void)n;
}

#endif
