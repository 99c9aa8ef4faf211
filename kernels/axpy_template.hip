// A templated kernel: the host names the instantiations it needs ("axpy<float>",
// "axpy<double>") as hipRTC name expressions and looks them up by their lowered names.
#include <hip/hip_runtime.h>

template <typename T>
__global__ void axpy(int n, T a, const T* __restrict__ x, T* __restrict__ y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] = a * x[i] + y[i];
}

// Instantiated here too, so that a build without name expressions (jitcache build) still
// produces both kernels.
template __global__ void axpy<float>(int, float, const float*, float*);
template __global__ void axpy<double>(int, double, const double*, double*);
