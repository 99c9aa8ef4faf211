// y = a * x + y over n floats: the smallest useful HIP kernel (one load/store stream each).
#include <hip/hip_runtime.h>

extern "C" __global__ void saxpy(int n, float a, const float* __restrict__ x,
                                 float* __restrict__ y) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = a * x[i] + y[i];
}
