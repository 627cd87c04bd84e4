// Group normalization on the GPU (Wu & He 2018, "Group Normalization", eq. 1-3 with
// S_i = the (C/G) x H x W values of one sample's group); the ResNet's batch-independent norm.
// CPU twins: models::rref::gn_forward / gn_backward (models/resnet_layers.h).
//
// Forward and the data gradient: ONE block per (sample, group), which owns the group's
// cg x hw contiguous values: it reduces them (fixed partition, fixed-order tree) and then
// writes its own outputs, so no statistics travel between blocks. Two passes for the
// variance (deviations from the mean), as the reference.
// Parameter gradients: ONE block per (worker group, channel), reducing dy * xhat and dy over
// that worker's n samples x hw positions; each element reads its own (sample, group)
// statistics. No atomics anywhere.
//
// Index arithmetic, worked example (c 32, groups 8 -> cg 4, hw 256, n 3, 2 worker groups):
//   forward block b = q*8 + g, q in [0, 6) the sample in the launch (worker q / 3), owns
//   x[(q*32 + 4g)*256 + e] for e in [0, 1024), element e being channel 4g + e / 256; its
//   gamma is gamma[(q / 3) * stride + 4g + e / 256].
//   dgamma block b = k*32 + ch reads element (s, p) of worker k at ((k*3 + s)*32 + ch)*256 + p
//   with the statistics of (sample k*3 + s, group ch / 4).
#include "cuda/common.cuh"
#include "cuda/resnet_layers_cuda.h"

namespace wb::cuda {
namespace {

using dev::kThreads;

template <class T>
__global__ void gn_forward_kernel(int n, int c, int hw, int groups, const T* x, const T* gamma,
                                  const T* beta, T* y, T* mean, T* invstd, Groups gr) {
  const int cg = c / groups, g = static_cast<int>(blockIdx.x % groups);
  const size_t q = blockIdx.x / groups;  // the sample in the launch
  const size_t len = static_cast<size_t>(cg) * hw, base = (q * c + g * cg) * hw;
  const T tm = T(static_cast<double>(len));
  T sum(0);
  for (size_t e = threadIdx.x; e < len; e += kThreads) sum += x[base + e];
  const T mu = dev::block_sum(sum) / tm;
  T sq(0);
  for (size_t e = threadIdx.x; e < len; e += kThreads) {
    const T d = x[base + e] - mu;
    sq += d * d;
  }
  const T is = T(1) / dev::sqrt_of(dev::block_sum(sq) / tm + T(kNormEps));
  if (threadIdx.x == 0) {
    mean[blockIdx.x] = mu;
    invstd[blockIdx.x] = is;
  }
  const size_t off = q / n * gr.stride + g * cg;  // this worker's gamma/beta of the group
  for (size_t e = threadIdx.x; e < len; e += kThreads) {
    const size_t ch = e / hw;
    y[base + e] = gamma[off + ch] * ((x[base + e] - mu) * is) + beta[off + ch];
  }
}

// dxhat = dy * gamma; dx = invstd / m * (m dxhat - sum dxhat - xhat sum(dxhat xhat)) over the
// (sample, group), m = cg * hw (the reference's formula and grouping).
template <class T>
__global__ void gn_dx_kernel(int n, int c, int hw, int groups, const T* x, const T* gamma,
                             const T* mean, const T* invstd, const T* dy, T* dx, Groups gr) {
  const int cg = c / groups, g = static_cast<int>(blockIdx.x % groups);
  const size_t q = blockIdx.x / groups;
  const size_t len = static_cast<size_t>(cg) * hw, base = (q * c + g * cg) * hw;
  const size_t off = q / n * gr.stride + g * cg;
  const T tm = T(static_cast<double>(len));
  const T mu = mean[blockIdx.x], is = invstd[blockIdx.x];
  T sdxh(0), sdxhx(0);
  for (size_t e = threadIdx.x; e < len; e += kThreads) {
    const T xh = (x[base + e] - mu) * is;
    const T dxh = dy[base + e] * gamma[off + e / hw];
    sdxh += dxh;
    sdxhx += dxh * xh;
  }
  sdxh = dev::block_sum(sdxh);
  sdxhx = dev::block_sum(sdxhx);
  const T k = is / tm;
  for (size_t e = threadIdx.x; e < len; e += kThreads) {
    const T xh = (x[base + e] - mu) * is;
    dx[base + e] = k * (tm * dy[base + e] * gamma[off + e / hw] - sdxh - xh * sdxhx);
  }
}

template <class T>
__global__ void gn_dparam_kernel(int n, int c, int hw, int groups, const T* x, const T* mean,
                                 const T* invstd, const T* dy, T* dgamma, T* dbeta, Groups gr) {
  const int ch = static_cast<int>(blockIdx.x % c), g = ch / (c / groups);
  const size_t grp = blockIdx.x / c;
  const size_t m = static_cast<size_t>(n) * hw;
  T sg(0), sb(0);
  for (size_t e = threadIdx.x; e < m; e += kThreads) {
    const size_t q = grp * n + e / hw;  // the sample in the launch
    const size_t i = (q * c + ch) * hw + e % hw, st = q * groups + g;
    sg += dy[i] * ((x[i] - mean[st]) * invstd[st]);
    sb += dy[i];
  }
  sg = dev::block_sum(sg);
  sb = dev::block_sum(sb);
  if (threadIdx.x == 0) {
    dgamma[grp * gr.stride + ch] = sg;
    dbeta[grp * gr.stride + ch] = sb;
  }
}

}  // namespace

template <class T>
void gn_forward(int n, int c, int hw, int groups, const T* x, const T* gamma, const T* beta, T* y,
                T* mean, T* invstd, cudaStream_t stream, Groups gr) {
  const size_t blocks = static_cast<size_t>(gr.count) * n * groups;
  if (blocks == 0) return;
  gn_forward_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      n, c, hw, groups, x, gamma, beta, y, mean, invstd, gr);
  WB_CHECK_LAUNCH("gn_forward_kernel");
}

template <class T>
void gn_backward(int n, int c, int hw, int groups, const T* x, const T* gamma, const T* mean,
                 const T* invstd, const T* dy, T* dx, T* dgamma, T* dbeta, cudaStream_t stream,
                 Groups gr) {
  const size_t blocks = static_cast<size_t>(gr.count) * n * groups;
  if (blocks == 0) return;
  gn_dx_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      n, c, hw, groups, x, gamma, mean, invstd, dy, dx, gr);
  WB_CHECK_LAUNCH("gn_dx_kernel");
  gn_dparam_kernel<T><<<gr.count * c, kThreads, 0, stream>>>(n, c, hw, groups, x, mean, invstd, dy,
                                                             dgamma, dbeta, gr);
  WB_CHECK_LAUNCH("gn_dparam_kernel");
}

#define WB_INSTANTIATE(T)                                                                   \
  template void gn_forward<T>(int, int, int, int, const T*, const T*, const T*, T*, T*, T*, \
                              cudaStream_t, Groups);                                        \
  template void gn_backward<T>(int, int, int, int, const T*, const T*, const T*, const T*,  \
                               const T*, T*, T*, T*, cudaStream_t, Groups);
WB_INSTANTIATE(float)
WB_INSTANTIATE(double)
#undef WB_INSTANTIATE

}  // namespace wb::cuda
