/* Temporal blocking of the variable-coefficient update (gtemporal.cuh) in float, 3D. */
#include "gtemporal.cuh"

template cudaError_t hg_temporal_depth<float, true>(const heat_general_args<float> &, int,
                                                    cudaStream_t);
