// out = transpose(in) for a rows x cols row-major float matrix, through a shared-memory tile
// (padded against bank conflicts) so that reads and writes are both coalesced. Launch with
// 32 x 8 threads per block and a grid of ceil(cols / 32) x ceil(rows / 32) blocks.
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

constexpr int k_tile = 32;
constexpr int k_rows_per_pass = 8;

extern "C" __global__ void transpose(const float* in, float* out, int rows, int cols) {
  __shared__ float tile[k_tile][k_tile + 1];
  const cg::thread_block block = cg::this_thread_block();
  int x = blockIdx.x * k_tile + threadIdx.x;
  int y = blockIdx.y * k_tile + threadIdx.y;
  for (int j = 0; j < k_tile; j += k_rows_per_pass)
    if (x < cols && y + j < rows)
      tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
  block.sync();
  x = blockIdx.y * k_tile + threadIdx.x;
  y = blockIdx.x * k_tile + threadIdx.y;
  for (int j = 0; j < k_tile; j += k_rows_per_pass)
    if (x < rows && y + j < cols)
      out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}
