// The comm/kernels.h vector passes on device buffers; see cuda/comm_cuda.h.
#include "cuda/comm_cuda.h"
#include "cuda/common.cuh"

namespace wb::cuda {
namespace {

using dev::kThreads;

// Blocks of the dot3 pass: enough to fill a large GPU, few enough for a one-block finish.
constexpr unsigned kDotBlocks = 1024;

template <class T>
__global__ void dot3_partial_kernel(const T* a, const T* b, size_t n, double* partials) {
  double d = 0, aa = 0, bb = 0;
  WB_FOR_EACH_INDEX(i, n) {
    const double x = a[i], y = b[i];
    d += x * y;
    aa += x * x;
    bb += y * y;
  }
  d = dev::block_sum(d);
  aa = dev::block_sum(aa);
  bb = dev::block_sum(bb);
  if (threadIdx.x == 0) {
    partials[3 * blockIdx.x + 0] = d;
    partials[3 * blockIdx.x + 1] = aa;
    partials[3 * blockIdx.x + 2] = bb;
  }
}

// One block: v[k] += sum over the partials in block order (strided, then the fixed tree).
__global__ void dot3_finish_kernel(const double* partials, unsigned blocks, double* v) {
  for (int k = 0; k < 3; ++k) {
    double s = 0;
    for (unsigned p = threadIdx.x; p < blocks; p += kThreads) s += partials[3 * p + k];
    s = dev::block_sum(s);
    if (threadIdx.x == 0) v[k] += s;
  }
}

template <class T>
__global__ void combine_kernel(T* out, const T* a, const T* b, size_t n, double ca, double cb) {
  WB_FOR_EACH_INDEX(i, n) {
    out[i] = static_cast<T>(
        __fma_rn(ca, static_cast<double>(a[i]), __dmul_rn(cb, static_cast<double>(b[i]))));
  }
}

template <class T>
__global__ void add_kernel(T* a, const T* b, size_t n) {
  WB_FOR_EACH_INDEX(i, n) a[i] = a[i] + b[i];
}

template <class T>
__global__ void axpy_double_kernel(double* acc, const T* x, double w, size_t n) {
  WB_FOR_EACH_INDEX(i, n) acc[i] += w * static_cast<double>(x[i]);
}

}  // namespace

template <class T>
void dot3(const T* a, const T* b, size_t n, double* v, cudaStream_t stream) {
  if (n == 0) return;
  const unsigned blocks = dev::blocks_for(n) < kDotBlocks ? dev::blocks_for(n) : kDotBlocks;
  double* partials = nullptr;
  WB_CHECK_CUDA(
      cudaMallocAsync(reinterpret_cast<void**>(&partials), 3 * sizeof(double) * blocks, stream));
  dot3_partial_kernel<T><<<blocks, kThreads, 0, stream>>>(a, b, n, partials);
  WB_CHECK_LAUNCH("dot3_partial_kernel");
  dot3_finish_kernel<<<1, kThreads, 0, stream>>>(partials, blocks, v);
  WB_CHECK_LAUNCH("dot3_finish_kernel");
  WB_CHECK_CUDA(cudaFreeAsync(partials, stream));
}

template <class T>
void combine(T* out, const T* a, const T* b, size_t n, double ca, double cb, cudaStream_t stream) {
  if (n == 0) return;
  combine_kernel<T><<<dev::capped_blocks(n), kThreads, 0, stream>>>(out, a, b, n, ca, cb);
  WB_CHECK_LAUNCH("combine_kernel");
}

template <class T>
void add(T* a, const T* b, size_t n, cudaStream_t stream) {
  if (n == 0) return;
  add_kernel<T><<<dev::capped_blocks(n), kThreads, 0, stream>>>(a, b, n);
  WB_CHECK_LAUNCH("add_kernel");
}

template <class T>
void axpy_double(double* acc, const T* x, double w, size_t n, cudaStream_t stream) {
  if (n == 0) return;
  axpy_double_kernel<T><<<dev::capped_blocks(n), kThreads, 0, stream>>>(acc, x, w, n);
  WB_CHECK_LAUNCH("axpy_double_kernel");
}

#define WB_INSTANTIATE(T)                                                                 \
  template void dot3<T>(const T*, const T*, size_t, double*, cudaStream_t);               \
  template void combine<T>(T*, const T*, const T*, size_t, double, double, cudaStream_t); \
  template void add<T>(T*, const T*, size_t, cudaStream_t);                               \
  template void axpy_double<T>(double*, const T*, double, size_t, cudaStream_t);
WB_INSTANTIATE(float)
WB_INSTANTIATE(double)
#undef WB_INSTANTIATE

}  // namespace wb::cuda
