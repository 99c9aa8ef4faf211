// C = A * B for row-major M x K and K x N matrices, tiled in shared memory: the CUDA twin of
// matmul_tuned.cl, the tuning database's example (examples/cuda_matmul). TILE: the side of a
// block's tile of C; WPT: the columns of C each thread computes (a divisor of TILE). A block is
// (TILE / WPT) x TILE threads; M, N and K are multiples of TILE.
#ifndef TILE
#define TILE 16
#endif
#ifndef WPT
#define WPT 1
#endif
#define RTS (TILE / WPT)

extern "C" __global__ void matmul_tuned(const int M, const int N, const int K,
                                        const float* __restrict__ A,
                                        const float* __restrict__ B, float* __restrict__ C) {
  const int col = threadIdx.x;
  const int row = threadIdx.y;
  const int gcol = TILE * blockIdx.x + col;
  const int grow = TILE * blockIdx.y + row;
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  float acc[WPT];
#pragma unroll
  for (int w = 0; w < WPT; ++w)
    acc[w] = 0.0f;
  for (int t = 0; t < K / TILE; ++t) {
#pragma unroll
    for (int w = 0; w < WPT; ++w) {
      As[row][col + w * RTS] = A[grow * K + t * TILE + col + w * RTS];
      Bs[row][col + w * RTS] = B[(t * TILE + row) * N + gcol + w * RTS];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k)
#pragma unroll
      for (int w = 0; w < WPT; ++w)
        acc[w] = fmaf(As[row][k], Bs[k][col + w * RTS], acc[w]);
    __syncthreads();
  }
#pragma unroll
  for (int w = 0; w < WPT; ++w)
    C[grow * N + gcol + w * RTS] = acc[w];
}
