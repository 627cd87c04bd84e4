// log_softmax + NLL on the GPU; CPU twin: models::ref::log_softmax_nll (models/layers.h).
//
// One block. Samples are taken in rounds of kThreads: thread t handles sample r*kThreads + t
// (argmax, log-sum-exp shifted by the max, loss, and the logit gradient, exactly the
// reference's per-sample code); then thread 0 adds the round's losses IN SAMPLE ORDER, so
// the sum is the reference's `total += lse - z[label]` sequence. The work is tiny
// (classes = 10): one block keeps the summation order without any scratch memory.
// Labels must lie in [0, classes): the caller checks (DeviceNet does, on the host).
// Grouped passes: one block per group of n samples (block k: samples k*n .. k*n + n - 1,
// loss_sum[k], correct[k]), each summing exactly as the lone call on its samples.
#include "cuda/common.cuh"
#include "cuda/layers_cuda.h"

namespace wb::cuda {
namespace {

using dev::kThreads;

template <class T>
__global__ void log_softmax_nll_kernel(int n, int classes, const T* logits, const int32_t* label,
                                       T* dlogits, double grad_scale, T* loss_sum,
                                       int64_t* correct) {
  {
    const size_t off = static_cast<size_t>(blockIdx.x) * n;  // this block's group
    logits += off * classes;
    label += off;
    if (dlogits) dlogits += off * classes;
    loss_sum += blockIdx.x;
    if (correct) correct += blockIdx.x;
  }
  __shared__ T loss[kThreads];
  __shared__ int hit[kThreads];
  T total(0);
  int64_t hits = 0;
  for (int r0 = 0; r0 < n; r0 += kThreads) {
    const int s = r0 + static_cast<int>(threadIdx.x);
    if (s < n) {
      const T* z = logits + static_cast<size_t>(s) * classes;
      const int y = label[s];
      int arg = 0;
      for (int c = 1; c < classes; ++c)
        if (dev::value_of(z[c]) > dev::value_of(z[arg])) arg = c;
      const T zmax = z[arg];  // shift for stability; the gradient does not depend on it
      T sum(0);
      for (int c = 0; c < classes; ++c) sum += dev::exp_of(z[c] - zmax);
      const T lse = zmax + dev::log_of(sum);
      loss[threadIdx.x] = lse - z[y];
      hit[threadIdx.x] = arg == y ? 1 : 0;
      if (dlogits)
        for (int c = 0; c < classes; ++c)
          dlogits[static_cast<size_t>(s) * classes + c] =
              (dev::exp_of(z[c] - lse) - T(c == y ? 1.0 : 0.0)) * T(grad_scale);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      const int m = n - r0 < kThreads ? n - r0 : kThreads;
      for (int t = 0; t < m; ++t) {
        total += loss[t];
        hits += hit[t];
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    *loss_sum = total;
    if (correct) *correct = hits;
  }
}

}  // namespace

template <class T>
void log_softmax_nll_async(int n, int classes, const T* logits, const int32_t* label, T* dlogits,
                           double grad_scale, T* loss_sum, int64_t* correct, cudaStream_t stream,
                           int groups) {
  log_softmax_nll_kernel<T><<<groups, kThreads, 0, stream>>>(n, classes, logits, label, dlogits,
                                                             grad_scale, loss_sum, correct);
  WB_CHECK_LAUNCH("log_softmax_nll_kernel");
}

template <class T>
T log_softmax_nll(int n, int classes, const T* logits, const int32_t* label, T* dlogits,
                  double grad_scale, int64_t* correct, cudaStream_t stream) {
  DeviceBuffer<T> sum(1);
  DeviceBuffer<int64_t> hits(1);
  log_softmax_nll_async(n, classes, logits, label, dlogits, grad_scale, sum.data(), hits.data(),
                        stream);
  T total;
  int64_t h = 0;
  WB_CHECK_CUDA(cudaMemcpyAsync(&total, sum.data(), sizeof(T), cudaMemcpyDeviceToHost, stream));
  WB_CHECK_CUDA(cudaMemcpyAsync(&h, hits.data(), sizeof h, cudaMemcpyDeviceToHost, stream));
  WB_CHECK_CUDA(cudaStreamSynchronize(stream));
  if (correct) *correct += h;
  return total;
}

#define WB_INSTANTIATE(T)                                                                    \
  template void log_softmax_nll_async<T>(int, int, const T*, const int32_t*, T*, double, T*, \
                                         int64_t*, cudaStream_t, int);                       \
  template T log_softmax_nll<T>(int, int, const T*, const int32_t*, T*, double, int64_t*,    \
                                cudaStream_t);
WB_INSTANTIATE(float)
WB_INSTANTIATE(double)
WB_INSTANTIATE(DualD)
#undef WB_INSTANTIATE

}  // namespace wb::cuda
