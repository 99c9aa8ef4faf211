// Reductions with local memory: sum, max, and a dot product, one partial result per work-group.
#include "common.h"

__kernel void reduce_sum(__global const float* in, __global float* partial, const int n) {
  __local float scratch[WG_REDUCE];
  int lid = get_local_id(0);
  int gid = get_global_id(0);
  float acc = 0.0f;
  for (int i = gid; i < n; i += get_global_size(0))
    acc += in[i];
  scratch[lid] = acc;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int stride = get_local_size(0) / 2; stride > 0; stride >>= 1) {
    if (lid < stride)
      scratch[lid] += scratch[lid + stride];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0)
    partial[get_group_id(0)] = scratch[0];
}

__kernel void reduce_max(__global const float* in, __global float* partial, const int n) {
  __local float scratch[WG_REDUCE];
  int lid = get_local_id(0);
  int gid = get_global_id(0);
  float acc = -INFINITY;
  for (int i = gid; i < n; i += get_global_size(0))
    acc = fmax(acc, in[i]);
  scratch[lid] = acc;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int stride = get_local_size(0) / 2; stride > 0; stride >>= 1) {
    if (lid < stride)
      scratch[lid] = fmax(scratch[lid], scratch[lid + stride]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0)
    partial[get_group_id(0)] = scratch[0];
}

__kernel void dot_product(__global const float* a, __global const float* b, __global float* partial,
                  const int n) {
  __local float scratch[WG_REDUCE];
  int lid = get_local_id(0);
  float acc = 0.0f;
  for (int i = get_global_id(0); i < n; i += get_global_size(0))
    acc = fma(a[i], b[i], acc);
  scratch[lid] = acc;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int stride = get_local_size(0) / 2; stride > 0; stride >>= 1) {
    if (lid < stride)
      scratch[lid] += scratch[lid + stride];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0)
    partial[get_group_id(0)] = scratch[0];
}

__kernel void histogram256(__global const float* in, __global uint* bins, const int n) {
  __local uint local_bins[256];
  int lid = get_local_id(0);
  for (int b = lid; b < 256; b += get_local_size(0))
    local_bins[b] = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int i = get_global_id(0); i < n; i += get_global_size(0)) {
    int bin = clamp_i((int)(in[i] * 256.0f), 0, 255);
    atomic_inc(&local_bins[bin]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int b = lid; b < 256; b += get_local_size(0))
    atomic_add(&bins[b], local_bins[b]);
}
