// x *= a over n elements, each thread handling UNROLL consecutive elements per step. A template:
// callers name the instances they want through NVRTC name expressions, e.g. "scale<float, 4>".
#include "cuda_common.cuh"

template <typename T, int UNROLL> __global__ void scale(T* x, T a, int n) {
  for (int base = global_index() * UNROLL; base < n; base += grid_threads() * UNROLL) {
#pragma unroll
    for (int k = 0; k < UNROLL; ++k)
      if (base + k < n)
        x[base + k] *= a;
  }
}
