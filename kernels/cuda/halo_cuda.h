/* The CUDA side of a rank's part: the box kernels (k_halo.cu) and the NCCL
 * transport (nccl_halo.cu), for cuda_part.cu. Private to kernels/cuda. */
#ifndef HEAT_HALO_CUDA_H
#define HEAT_HALO_CUDA_H

#include <cuda_runtime.h>
#include <stddef.h>

extern "C" {
#include "halo.h"
}

/* A box of local indices, [lo, hi) per axis (halo_plan.h's hbox). */
struct hc_box {
    long long lo[3], hi[3];
};

/* Copies box `b` of a level (strides sy, sz) into the contiguous `buf`
 * (to_buf) or back, on stream `s`. */
template <typename T>
cudaError_t heat_cuda_launch_copy_box(T *field, T *buf, const hc_box &b, long long sy, long long sz,
                                      bool to_buf, cudaStream_t s);

/* Folds max |a - b| over box `box` (as double bits, NaN kept) into *out. */
template <typename T>
cudaError_t heat_cuda_launch_box_residual(const T *a, const T *b, const hc_box &box, long long sy,
                                          long long sz, unsigned long long *out, cudaStream_t s);

/* NCCL (built where NCCL is found): the ranks' communicator, made from
 * rank 0's id shared through `comm` (collective), and one exchange queued
 * on a stream (grouped ncclSend / ncclRecv of device buffers). */
typedef struct heat_nccl heat_nccl;
int heat_nccl_available(void);
int heat_nccl_create(const heat_halo_comm *comm, int rank, int size, heat_nccl **out,
                     heat_error *err);
int heat_nccl_exchange(heat_nccl *n, const heat_halo_msg *recv, int nrecv,
                       const heat_halo_msg *send, int nsend, size_t value_size, cudaStream_t s,
                       heat_error *err);
void heat_nccl_destroy(heat_nccl *n);

#endif
