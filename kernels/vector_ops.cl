// Element-wise vector kernels. Every kernel takes n and guards its index.
#include "common.h"

__kernel void saxpy(__global const float* x, __global float* y, const float a, const int n) {
  int i = get_global_id(0);
  if (i < n)
    y[i] = a * x[i] + y[i];
}

__kernel void vector_add(__global const float* a, __global const float* b, __global float* c,
                         const int n) {
  int i = get_global_id(0);
  if (i < n)
    c[i] = a[i] + b[i];
}

__kernel void scale_clamp(__global float* x, const float s, const int n) {
  int i = get_global_id(0);
  if (i < n)
    x[i] = clamp(x[i] * s, -1.0f, 1.0f);
}

__kernel void gelu_forward(__global const float* x, __global float* y, const int n) {
  int i = get_global_id(0);
  if (i < n)
    y[i] = gelu(x[i]);
}

__kernel void fill_hash(__global float* x, const int n) {
  int i = get_global_id(0);
  if (i < n)
    x[i] = (float)(hash_u32((uint)i) & 0xffff) / 65536.0f;
}

__kernel void polynomial(__global const float* x, __global float* y, const int n) {
  int i = get_global_id(0);
  if (i < n) {
    float v = x[i];
    // Horner form of a degree-8 polynomial: enough arithmetic to vectorise.
    float r = 0.0013f;
    r = r * v + 0.0097f;
    r = r * v - 0.0411f;
    r = r * v + 0.1283f;
    r = r * v - 0.2907f;
    r = r * v + 0.4875f;
    r = r * v - 0.6931f;
    r = r * v + 0.9999f;
    r = r * v + 0.0001f;
    y[i] = r;
  }
}
