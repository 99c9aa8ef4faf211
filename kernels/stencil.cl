// 2D stencils on a width x height grid (row-major), clamped at the borders.
#include "common.h"

__kernel void jacobi5(__global const float* in, __global float* out, const int width,
                      const int height) {
  int x = get_global_id(0) % width;
  int y = get_global_id(0) / width;
  if (y >= height)
    return;
  float c = in[idx2(x, y, width)];
  float l = in[idx2(clamp_i(x - 1, 0, width - 1), y, width)];
  float r = in[idx2(clamp_i(x + 1, 0, width - 1), y, width)];
  float u = in[idx2(x, clamp_i(y - 1, 0, height - 1), width)];
  float d = in[idx2(x, clamp_i(y + 1, 0, height - 1), width)];
  out[idx2(x, y, width)] = 0.2f * (c + l + r + u + d);
}

__kernel void sobel(__global const float* in, __global float* out, const int width,
                    const int height) {
  int x = get_global_id(0) % width;
  int y = get_global_id(0) / width;
  if (y >= height)
    return;
  float p[3][3];
  for (int dy = -1; dy <= 1; ++dy)
    for (int dx = -1; dx <= 1; ++dx)
      p[dy + 1][dx + 1] =
          in[idx2(clamp_i(x + dx, 0, width - 1), clamp_i(y + dy, 0, height - 1), width)];
  float gx = (p[0][2] + 2.0f * p[1][2] + p[2][2]) - (p[0][0] + 2.0f * p[1][0] + p[2][0]);
  float gy = (p[2][0] + 2.0f * p[2][1] + p[2][2]) - (p[0][0] + 2.0f * p[0][1] + p[0][2]);
  out[idx2(x, y, width)] = sqrt(gx * gx + gy * gy);
}

__kernel void gaussian_blur(__global const float* in, __global float* out, const int width,
                            const int height) {
  const float w[5] = {0.0625f, 0.25f, 0.375f, 0.25f, 0.0625f};
  int x = get_global_id(0) % width;
  int y = get_global_id(0) / width;
  if (y >= height)
    return;
  float acc = 0.0f;
  for (int dy = -2; dy <= 2; ++dy)
    for (int dx = -2; dx <= 2; ++dx)
      acc += w[dy + 2] * w[dx + 2] *
             in[idx2(clamp_i(x + dx, 0, width - 1), clamp_i(y + dy, 0, height - 1), width)];
  out[idx2(x, y, width)] = acc;
}
