// Per-block sums of n floats with CUB's BlockReduce (from the CUDA toolkit): a heavy, realistic
// compile (hundreds of CCCL headers). out[b] = sum of in[b * 256 .. b * 256 + 255].
#include <cub/block/block_reduce.cuh>

constexpr int k_block = 256;

extern "C" __global__ void block_sum(const float* in, float* out, int n) {
  using BlockReduce = cub::BlockReduce<float, k_block>;
  __shared__ typename BlockReduce::TempStorage storage;
  const int i = blockIdx.x * k_block + threadIdx.x;
  const float sum = BlockReduce(storage).Sum(i < n ? in[i] : 0.0f);
  if (threadIdx.x == 0)
    out[blockIdx.x] = sum;
}
