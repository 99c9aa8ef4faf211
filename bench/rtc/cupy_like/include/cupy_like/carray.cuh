// A stand-in for CuPy's <cupy/carray.cuh>, included by every kernel of the CuPy-like workload
// (cupy_like.cu): like CuPy's, it pulls in the toolkit's half type and libcu++ through the
// include path, so that each kernel's key reads the same few hundred toolkit headers.
#pragma once

#include <cuda_fp16.h>
#include <cuda/std/cstdint>
#include <cuda/std/limits>
#include <cuda/std/tuple>
#include <cuda/std/type_traits>
#include <cuda/std/utility>

#include "cupy_like/complex.cuh"

// An n-dimensional array view as CuPy passes one to a kernel (pointer, size, shape, strides).
template <typename T, int ndim> class CArray {
public:
  __device__ T& operator[](cuda::std::ptrdiff_t i) { return m_data[i]; }
  __device__ const T& operator[](cuda::std::ptrdiff_t i) const { return m_data[i]; }
  __device__ cuda::std::ptrdiff_t size() const { return m_size; }

private:
  T* m_data;
  cuda::std::ptrdiff_t m_size;
  cuda::std::ptrdiff_t m_shape[ndim > 0 ? ndim : 1];
  cuda::std::ptrdiff_t m_strides[ndim > 0 ? ndim : 1];
};

// The index loop of an elementwise kernel.
#define CUPY_FOR(i, n)                                                                             \
  for (cuda::std::ptrdiff_t i = blockIdx.x * blockDim.x + threadIdx.x; i < (n);                   \
       i += static_cast<cuda::std::ptrdiff_t>(blockDim.x) * gridDim.x)
