// Shared helpers for the OpenCL sample kernels (included through -I kernels).
#ifndef JITCACHE_KERNELS_COMMON_H
#define JITCACHE_KERNELS_COMMON_H

#define TILE 16
#define WG_REDUCE 64

// Index helpers for row-major 2D data.
inline int idx2(int x, int y, int width) {
  return y * width + x;
}

inline int clamp_i(int v, int lo, int hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

// A cheap, deterministic hash used to make test data and histograms.
inline uint hash_u32(uint x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

// Smooth activation used by the "mlp" kernels.
inline float gelu(float x) {
  const float k = 0.7978845608f; // sqrt(2/pi)
  return 0.5f * x * (1.0f + tanh(k * (x + 0.044715f * x * x * x)));
}

#endif
