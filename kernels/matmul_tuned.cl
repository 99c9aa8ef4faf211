// C = A * B for row-major M x K and K x N matrices, tiled in local memory; the tuning
// database's example (examples/tuned_matmul). TILE: the side of a work-group's tile of C;
// WPT: the columns of C each work-item computes (a divisor of TILE). A work-group is
// (TILE / WPT) x TILE items; M, N and K are multiples of TILE.
#ifndef TILE
#define TILE 8
#endif
#ifndef WPT
#define WPT 1
#endif
#define RTS (TILE / WPT)

__kernel void matmul_tuned(const int M, const int N, const int K, __global const float* A,
                           __global const float* B, __global float* C) {
  const int col = get_local_id(0);
  const int row = get_local_id(1);
  const int gcol = TILE * get_group_id(0) + col;
  const int grow = TILE * get_group_id(1) + row;
  __local float As[TILE][TILE];
  __local float Bs[TILE][TILE];
  float acc[WPT];
  for (int w = 0; w < WPT; ++w)
    acc[w] = 0.0f;
  for (int t = 0; t < K / TILE; ++t) {
    for (int w = 0; w < WPT; ++w) {
      As[row][col + w * RTS] = A[grow * K + t * TILE + col + w * RTS];
      Bs[row][col + w * RTS] = B[(t * TILE + row) * N + gcol + w * RTS];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < TILE; ++k)
      for (int w = 0; w < WPT; ++w)
        acc[w] = fma(As[row][k], Bs[k][col + w * RTS], acc[w]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  for (int w = 0; w < WPT; ++w)
    C[grow * N + gcol + w * RTS] = acc[w];
}
