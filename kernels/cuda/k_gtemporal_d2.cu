/* Temporal blocking of the variable-coefficient update (gtemporal.cuh) in double, 2D. */
#include "gtemporal.cuh"

template cudaError_t hg_temporal_depth<double, false>(const heat_general_args<double> &, int,
                                                      cudaStream_t);
