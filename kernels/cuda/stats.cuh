/* history.csv's statistics on the GPU (k_stats.cu): each row's minimum,
 * maximum and sum in the order of heat_stats_row (backend_impl.h). */
#ifndef HEAT_CUDA_STATS_CUH
#define HEAT_CUDA_STATS_CUH

#include <cuda_runtime.h>

/* The `rows` rows of nx values of u (float or double) into d: the minima
 * at d, the maxima at d + rows, the sums at d + 2 rows; on `stream`. */
cudaError_t heat_cuda_stats_rows(const void *u, bool is_float, long long nx, long long rows,
                                 double *d, cudaStream_t stream);

#endif
