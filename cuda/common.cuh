// Device-side helpers shared by the kernel translation units (nvcc only).
//  - value_of / exp_of / log_of: the spellings of models/dual.h for float, double and DualD
//    (sqrt_of: float and double), so kernel bodies read like the reference loops in
//    models/layers.h and models/resnet_layers.h;
//  - launch geometry: one thread per output element, kThreads per block;
//  - block_sum: a fixed-order shared-memory tree, so every reduction is deterministic
//    (the same bits on every run with the same launch geometry).
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda/check.h"
#include "cuda/dual_cuda.h"

namespace wb::cuda::dev {

inline constexpr int kThreads = 256;  // block size of every kernel here (a power of two)

inline unsigned blocks_for(size_t count) {
  const size_t b = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b == 0 ? 1 : b);
}

// Grid-stride index for element-wise kernels: i in [0, count).
#define WB_FOR_EACH_INDEX(i, count)                                                        \
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < (count); \
       i += static_cast<size_t>(gridDim.x) * blockDim.x)

// Element-wise launches are capped at this many blocks (each thread then strides).
inline unsigned capped_blocks(size_t count) {
  const unsigned b = blocks_for(count);
  return b < 65535u ? b : 65535u;
}

__device__ inline float value_of(float x) {
  return x;
}
__device__ inline double value_of(double x) {
  return x;
}
__device__ inline double value_of(const DualD& x) {
  return x.v;
}

__device__ inline float exp_of(float x) {
  return expf(x);
}
__device__ inline double exp_of(double x) {
  return exp(x);
}
__device__ inline DualD exp_of(const DualD& x) {
  const double e = exp(x.v);
  return {e, e * x.d};
}
__device__ inline float log_of(float x) {
  return logf(x);
}
__device__ inline double log_of(double x) {
  return log(x);
}
__device__ inline DualD log_of(const DualD& x) {
  return {log(x.v), x.d / x.v};
}
__device__ inline float sqrt_of(float x) {
  return sqrtf(x);
}
__device__ inline double sqrt_of(double x) {
  return sqrt(x);
}

// Reduction of `v` over the block (blockDim.x == kThreads) with op(a, b), returned to every
// thread. Fixed pairing order: deterministic. Every thread of the block must call it.
template <class T, class Op>
__device__ T block_reduce(T v, Op op) {
  __shared__ T sh[kThreads];
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (static_cast<int>(threadIdx.x) < s) sh[threadIdx.x] = op(sh[threadIdx.x], sh[threadIdx.x + s]);
    __syncthreads();
  }
  const T r = sh[0];
  __syncthreads();  // sh may be reused by the next call
  return r;
}

template <class T>
__device__ T block_sum(T v) {
  return block_reduce(v, [](T a, T b) { return a + b; });
}

template <class T>
__device__ T block_max(T v) {
  return block_reduce(v, [](T a, T b) { return b > a ? b : a; });
}

}  // namespace wb::cuda::dev
