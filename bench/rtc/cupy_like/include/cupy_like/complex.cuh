// A stand-in for CuPy's <cupy/complex.cuh>: a small complex type on libcu++'s traits.
#pragma once

#include <cuda/std/type_traits>

template <typename T> struct complex {
  static_assert(cuda::std::is_floating_point<T>::value, "complex of a floating-point type");
  T re, im;
  __device__ complex operator*(const complex& o) const {
    return {re * o.re - im * o.im, re * o.im + im * o.re};
  }
  __device__ complex operator+(const complex& o) const { return {re + o.re, im + o.im}; }
};
