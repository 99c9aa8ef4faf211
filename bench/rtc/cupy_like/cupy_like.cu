// One kernel of the CuPy-like workload (rtc_bench --many N): the benchmark compiles it N times
// in one process, each time with "@N@" replaced by the kernel's number, so that each is a
// distinct source, as the kernels of a CuPy program are: an elementwise kernel on the shared
// headers, and a reduction template compiled through its name expression ("reduce_@N@<float>").
#include <cupy_like/carray.cuh>

extern "C" __global__ void elementwise_@N@(CArray<float, 1> x, CArray<__half, 1> y,
                                         CArray<float, 1> out, float a) {
  CUPY_FOR(i, out.size()) {
    out[i] = a * x[i] + __half2float(y[i]) + static_cast<float>(@N@);
  }
}

template <typename T>
__global__ void reduce_@N@(CArray<T, 1> in, CArray<T, 1> out) {
  __shared__ T partial[256];
  T sum = cuda::std::numeric_limits<T>::lowest() * T(0);
  CUPY_FOR(i, in.size()) { sum += in[i] * T(@N@ + 1); }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s)
      partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    out[blockIdx.x] = cuda::std::get<0>(cuda::std::make_tuple(partial[0], @N@));
}
