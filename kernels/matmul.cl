// Dense matrix multiply C = A * B for n x n row-major matrices, naive and tiled.
#include "common.h"

__kernel void matmul_naive(__global const float* a, __global const float* b, __global float* c,
                           const int n) {
  int row = get_global_id(0) / n;
  int col = get_global_id(0) % n;
  if (row >= n)
    return;
  float acc = 0.0f;
  for (int k = 0; k < n; ++k)
    acc = fma(a[row * n + k], b[k * n + col], acc);
  c[row * n + col] = acc;
}

__kernel void matmul_tiled(__global const float* a, __global const float* b, __global float* c,
                           const int n) {
  __local float ta[TILE][TILE];
  __local float tb[TILE][TILE];
  int lx = get_local_id(0) % TILE;
  int ly = get_local_id(0) / TILE;
  int tiles_per_row = n / TILE;
  int tile = get_group_id(0);
  int row = (tile / tiles_per_row) * TILE + ly;
  int col = (tile % tiles_per_row) * TILE + lx;
  float acc = 0.0f;
  for (int t = 0; t < tiles_per_row; ++t) {
    ta[ly][lx] = a[row * n + t * TILE + lx];
    tb[ly][lx] = b[(t * TILE + ly) * n + col];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < TILE; ++k)
      acc = fma(ta[ly][k], tb[k][lx], acc);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  c[row * n + col] = acc;
}

__kernel void transpose(__global const float* in, __global float* out, const int n) {
  int row = get_global_id(0) / n;
  int col = get_global_id(0) % n;
  if (row < n)
    out[col * n + row] = in[row * n + col];
}
