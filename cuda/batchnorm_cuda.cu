// Batch normalization on the GPU (Ioffe & Szegedy 2015, Algorithm 1; the CIFAR ResNet's
// norm, He et al. 2016 section 4.2). CPU twins: models::rref::bn_* (models/resnet_layers.h).
//
// Training forward and backward: ONE block per (group, channel), which owns all n x hw
// values of its channel: it reduces them (fixed partition over the threads, fixed-order tree,
// dev::block_sum) and then writes its own outputs, so the statistics never leave the block
// and no atomics or second launch are needed. Two passes over the data for the variance
// (sum of squared deviations from the mean, as the reference), not E[x^2] - mean^2, which
// cancels catastrophically for activations with |mean| >> std.
//
// Index arithmetic, worked example (n 3, c 16, hw 64, group 1 of 2): block b = 1*16 + 5 is
// channel 5 of group 1; its element e in [0, 192) is sample s = e / 64, position p = e % 64,
// at x[((1*3 + s)*16 + 5)*64 + p]; thread t handles e = t (t < 192; threads 192..255 add
// zero to the tree).
//
// The running statistics and the evaluation forward are element-wise (one thread per
// channel / per element) and follow the reference's double arithmetic.
#include "cuda/common.cuh"
#include "cuda/resnet_layers_cuda.h"

namespace wb::cuda {
namespace {

using dev::kThreads;

// The flat index of element e in [0, n*hw) of channel ch of group grp.
__device__ inline size_t bn_at(size_t grp, int n, int c, int hw, int ch, size_t e) {
  return ((grp * n + e / hw) * c + ch) * hw + e % hw;
}

template <class T>
__global__ void bn_forward_train_kernel(int n, int c, int hw, const T* x, const T* gamma,
                                        const T* beta, T* y, T* mean, T* invstd, Groups gr) {
  const int ch = static_cast<int>(blockIdx.x % c);
  const size_t grp = blockIdx.x / c;
  const size_t m = static_cast<size_t>(n) * hw;
  const T tm = T(static_cast<double>(m));
  T sum(0);
  for (size_t e = threadIdx.x; e < m; e += kThreads) sum += x[bn_at(grp, n, c, hw, ch, e)];
  const T mu = dev::block_sum(sum) / tm;
  T sq(0);
  for (size_t e = threadIdx.x; e < m; e += kThreads) {
    const T d = x[bn_at(grp, n, c, hw, ch, e)] - mu;
    sq += d * d;
  }
  const T var = dev::block_sum(sq) / tm;  // biased: what normalizes in training
  const T is = T(1) / dev::sqrt_of(var + T(kNormEps));
  if (threadIdx.x == 0) {
    mean[grp * c + ch] = mu;
    invstd[grp * c + ch] = is;
  }
  const T g = gamma[grp * gr.stride + ch], b = beta[grp * gr.stride + ch];
  for (size_t e = threadIdx.x; e < m; e += kThreads) {
    const size_t i = bn_at(grp, n, c, hw, ch, e);
    y[i] = g * ((x[i] - mu) * is) + b;
  }
}

template <class T>
__global__ void bn_update_running_kernel(int n, int c, int hw, const T* mean, const T* invstd,
                                         float* run_mean, float* run_var, int groups,
                                         size_t state_stride) {
  const double m = static_cast<double>(n) * hw;
  const double unbias = m > 1 ? m / (m - 1) : 1.0;  // PyTorch: the running var is unbiased
  WB_FOR_EACH_INDEX(q, static_cast<size_t>(groups) * c) {
    const size_t grp = q / c, ch = q % c, s = grp * state_stride + ch;
    const double is = static_cast<double>(invstd[q]);
    const double var = 1.0 / (is * is) - kNormEps;
    run_mean[s] = static_cast<float>((1 - kBnMomentum) * run_mean[s] +
                                     kBnMomentum * static_cast<double>(mean[q]));
    run_var[s] = static_cast<float>((1 - kBnMomentum) * run_var[s] + kBnMomentum * var * unbias);
  }
}

template <class T>
__global__ void bn_forward_eval_kernel(int n, int c, int hw, const T* x, const T* gamma,
                                       const T* beta, const float* run_mean, const float* run_var,
                                       T* y, Groups gr, size_t state_stride) {
  WB_FOR_EACH_INDEX(q, static_cast<size_t>(gr.count) * n * c * hw) {
    const size_t ch = q / hw % c, grp = q / (static_cast<size_t>(hw) * c * n);
    const size_t s = grp * state_stride + ch, p = grp * gr.stride + ch;
    const T is = T(1.0 / sqrt(static_cast<double>(run_var[s]) + kNormEps));
    const T mu = T(static_cast<double>(run_mean[s]));
    y[q] = gamma[p] * ((x[q] - mu) * is) + beta[p];
  }
}

// dxhat = dy * gamma; dx = gamma * invstd / m * (m dy - sum dy - xhat sum(dy xhat)),
// dgamma = sum(dy xhat), dbeta = sum dy (the reference's formula and grouping).
template <class T>
__global__ void bn_backward_kernel(int n, int c, int hw, const T* x, const T* gamma, const T* mean,
                                   const T* invstd, const T* dy, T* dx, T* dgamma, T* dbeta,
                                   Groups gr) {
  const int ch = static_cast<int>(blockIdx.x % c);
  const size_t grp = blockIdx.x / c;
  const size_t m = static_cast<size_t>(n) * hw;
  const T tm = T(static_cast<double>(m));
  const T mu = mean[grp * c + ch], is = invstd[grp * c + ch];
  T sdy(0), sdyx(0);
  for (size_t e = threadIdx.x; e < m; e += kThreads) {
    const size_t i = bn_at(grp, n, c, hw, ch, e);
    const T xh = (x[i] - mu) * is;
    sdy += dy[i];
    sdyx += dy[i] * xh;
  }
  sdy = dev::block_sum(sdy);
  sdyx = dev::block_sum(sdyx);
  if (threadIdx.x == 0) {
    dgamma[grp * gr.stride + ch] = sdyx;
    dbeta[grp * gr.stride + ch] = sdy;
  }
  const T k = gamma[grp * gr.stride + ch] * is / tm;
  for (size_t e = threadIdx.x; e < m; e += kThreads) {
    const size_t i = bn_at(grp, n, c, hw, ch, e);
    const T xh = (x[i] - mu) * is;
    dx[i] = k * (tm * dy[i] - sdy - xh * sdyx);
  }
}

}  // namespace

template <class T>
void bn_forward_train(int n, int c, int hw, const T* x, const T* gamma, const T* beta, T* y,
                      T* mean, T* invstd, cudaStream_t stream, Groups gr) {
  if (gr.count * c == 0) return;
  bn_forward_train_kernel<T>
      <<<gr.count * c, kThreads, 0, stream>>>(n, c, hw, x, gamma, beta, y, mean, invstd, gr);
  WB_CHECK_LAUNCH("bn_forward_train_kernel");
}

template <class T>
void bn_update_running(int n, int c, int hw, const T* mean, const T* invstd, float* run_mean,
                       float* run_var, cudaStream_t stream, int groups, size_t state_stride) {
  const size_t total = static_cast<size_t>(groups) * c;
  if (total == 0) return;
  bn_update_running_kernel<T><<<dev::capped_blocks(total), kThreads, 0, stream>>>(
      n, c, hw, mean, invstd, run_mean, run_var, groups, state_stride);
  WB_CHECK_LAUNCH("bn_update_running_kernel");
}

template <class T>
void bn_forward_eval(int n, int c, int hw, const T* x, const T* gamma, const T* beta,
                     const float* run_mean, const float* run_var, T* y, cudaStream_t stream,
                     Groups gr, size_t state_stride) {
  const size_t total = static_cast<size_t>(gr.count) * n * c * hw;
  if (total == 0) return;
  bn_forward_eval_kernel<T><<<dev::capped_blocks(total), kThreads, 0, stream>>>(
      n, c, hw, x, gamma, beta, run_mean, run_var, y, gr, state_stride);
  WB_CHECK_LAUNCH("bn_forward_eval_kernel");
}

template <class T>
void bn_backward(int n, int c, int hw, const T* x, const T* gamma, const T* mean, const T* invstd,
                 const T* dy, T* dx, T* dgamma, T* dbeta, cudaStream_t stream, Groups gr) {
  if (gr.count * c == 0) return;
  bn_backward_kernel<T><<<gr.count * c, kThreads, 0, stream>>>(n, c, hw, x, gamma, mean, invstd, dy,
                                                               dx, dgamma, dbeta, gr);
  WB_CHECK_LAUNCH("bn_backward_kernel");
}

#define WB_INSTANTIATE(T)                                                                       \
  template void bn_forward_train<T>(int, int, int, const T*, const T*, const T*, T*, T*, T*,    \
                                    cudaStream_t, Groups);                                      \
  template void bn_update_running<T>(int, int, int, const T*, const T*, float*, float*,         \
                                     cudaStream_t, int, size_t);                                \
  template void bn_forward_eval<T>(int, int, int, const T*, const T*, const T*, const float*,   \
                                   const float*, T*, cudaStream_t, Groups, size_t);             \
  template void bn_backward<T>(int, int, int, const T*, const T*, const T*, const T*, const T*, \
                               T*, T*, T*, cudaStream_t, Groups);
WB_INSTANTIATE(float)
WB_INSTANTIATE(double)
#undef WB_INSTANTIATE

}  // namespace wb::cuda
