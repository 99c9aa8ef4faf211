// Block-wise sum reduction in shared memory, then one atomic add per block.
// Launch with blockDim.x == REDUCE_BLOCK (a power of two).
#include <hip/hip_runtime.h>

#ifndef REDUCE_BLOCK
#define REDUCE_BLOCK 256
#endif

extern "C" __global__ void __launch_bounds__(REDUCE_BLOCK)
    reduce_sum(const float* __restrict__ in, float* __restrict__ out, int n) {
  __shared__ float partial[REDUCE_BLOCK];
  const int tid = threadIdx.x;
  float sum = 0.0f;
  // Grid-stride loop: any grid size covers any n.
  for (int i = blockIdx.x * REDUCE_BLOCK + tid; i < n; i += gridDim.x * REDUCE_BLOCK)
    sum += in[i];
  partial[tid] = sum;
  __syncthreads();
  for (int stride = REDUCE_BLOCK / 2; stride > 0; stride /= 2) {
    if (tid < stride)
      partial[tid] += partial[tid + stride];
    __syncthreads();
  }
  if (tid == 0)
    atomicAdd(out, partial[0]);
}
