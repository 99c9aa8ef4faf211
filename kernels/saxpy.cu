// y = a * x + y over n floats, grid-stride.
#include "cuda_common.cuh"

extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  for (int i = global_index(); i < n; i += grid_threads())
    y[i] = a * x[i] + y[i];
}
