/* history.csv's statistics on the GPU (k_stats.cu): each row's minimum,
 * maximum and sum in the order of heat_stats_row (backend_impl.h), then
 * their fold in the order of heat_stats_fold. */
#ifndef HEAT_CUDA_STATS_CUH
#define HEAT_CUDA_STATS_CUH

#include <cuda_runtime.h>

/* Queues on `stream` the minimum, maximum and sum of a box of nx x ny x nz
 * values (float or double) in a larger array, row (y, z) at u + y sy + z sz
 * (values), in backend_impl.h's order (the rows y fastest), and their copy
 * to (*host)[0..2], to be read after the stream's next wait. *work (device)
 * and *host (pinned) are allocated at the first call, for this box's size;
 * the caller frees them (cudaFree, cudaFreeHost). */
cudaError_t heat_cuda_stats_queue(const void *u, bool is_float, long long nx, long long ny,
                                  long long nz, long long sy, long long sz, double **work,
                                  double **host, cudaStream_t stream);

#endif
