// Helpers shared by the CUDA sample kernels (included with #include "cuda_common.cuh", so that
// jitcache keys the header's content).
#pragma once

// Index of this thread in the whole grid, and the grid's thread count, for grid-stride loops.
__device__ inline int global_index() { return blockIdx.x * blockDim.x + threadIdx.x; }
__device__ inline int grid_threads() { return gridDim.x * blockDim.x; }
