/* history.csv's statistics on the GPU (k_stats.cu): each row's minimum,
 * maximum and sum in the order of heat_stats_row (backend_impl.h), then
 * their fold in the order of heat_stats_fold. */
#ifndef HEAT_CUDA_STATS_CUH
#define HEAT_CUDA_STATS_CUH

#include <cuda_runtime.h>

/* The `rows` rows of nx values of u (float or double) into d: the minima
 * at d, the maxima at d + rows, the sums at d + 2 rows; on `stream`. */
cudaError_t heat_cuda_stats_rows(const void *u, bool is_float, long long nx, long long rows,
                                 double *d, cudaStream_t stream);

/* The same of a box of nx x ny x nz values in a larger array: row (y, z)
 * at u + y sy + z sz (values), the rows y fastest. */
cudaError_t heat_cuda_stats_box(const void *u, bool is_float, long long nx, long long ny,
                                long long nz, long long sy, long long sz, double *d,
                                cudaStream_t stream);

/* heat_stats_fold (backend_impl.h) of those rows on the GPU, in its order:
 * the field's minimum, maximum and sum into out[0..2]; work holds 3
 * ceil(rows / HEAT_STATS_GROUP) doubles. */
cudaError_t heat_cuda_stats_fold(const double *d, long long rows, double *work, double *out,
                                 cudaStream_t stream);

#endif
