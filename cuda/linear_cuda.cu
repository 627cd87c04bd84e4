// Linear layer (y = x W^T + b, W is [out, in]) on the GPU; CPU twin: models::ref::linear_*.
// Every output is one thread running the reference's inner loop in the reference's order:
//   forward  y[s,o]  = b[o] + sum_i w[o,i] x[s,i]
//   dw[o,i] = sum_s dy[s,o] x[s,i]      db[o] = sum_s dy[s,o]      dx[s,i] = sum_o dy[s,o] w[o,i]
// (sequential sums over the batch: at batch 1024 that is 1024 multiply-adds per thread,
// still far below the convolutions' work; no atomics, deterministic.)
#include "cuda/common.cuh"
#include "cuda/layers_cuda.h"

namespace wb::cuda {
namespace {

using dev::kThreads;

template <class T>
__global__ void linear_forward_kernel(int n, int in, int out, const T* x, const T* w0, const T* b,
                                      T* y, Groups gr) {
  WB_FOR_EACH_INDEX(q, static_cast<size_t>(gr.count) * n * out) {
    const int o = static_cast<int>(q % out);
    const size_t s = q / out;
    const size_t off = s / n * gr.stride;  // the sample's group's parameters
    const T* w = w0 + off;
    T acc = b[off + o];
    for (int i = 0; i < in; ++i) acc += w[static_cast<size_t>(o) * in + i] * x[s * in + i];
    y[q] = acc;
  }
}

// Group g's dw[o,i] sums over its own n samples only.
template <class T>
__global__ void linear_dw_kernel(int n, int in, int out, const T* x, const T* dy, T* dw,
                                 Groups gr) {
  const size_t wsize = static_cast<size_t>(out) * in;
  WB_FOR_EACH_INDEX(qq, static_cast<size_t>(gr.count) * wsize) {
    const size_t grp = qq / wsize, q = qq % wsize;
    const int i = static_cast<int>(q % in);
    const int o = static_cast<int>(q / in);
    const T* xg = x + grp * n * in;
    const T* dyg = dy + grp * n * out;
    T acc(0);
    for (int s = 0; s < n; ++s)
      acc += dyg[static_cast<size_t>(s) * out + o] * xg[static_cast<size_t>(s) * in + i];
    dw[grp * gr.stride + q] = acc;
  }
}

template <class T>
__global__ void linear_dx_kernel(int n, int in, int out, const T* w0, const T* dy, T* dx,
                                 Groups gr) {
  WB_FOR_EACH_INDEX(q, static_cast<size_t>(gr.count) * n * in) {
    const int i = static_cast<int>(q % in);
    const size_t s = q / in;
    const T* w = w0 + s / n * gr.stride;
    T acc(0);
    for (int o = 0; o < out; ++o) acc += dy[s * out + o] * w[static_cast<size_t>(o) * in + i];
    dx[q] = acc;
  }
}

}  // namespace

template <class T>
void linear_forward(int n, int in, int out, const T* x, const T* w, const T* b, T* y,
                    cudaStream_t stream, Groups gr) {
  const size_t total = static_cast<size_t>(gr.count) * n * out;
  if (total == 0) return;
  linear_forward_kernel<T>
      <<<dev::capped_blocks(total), kThreads, 0, stream>>>(n, in, out, x, w, b, y, gr);
  WB_CHECK_LAUNCH("linear_forward_kernel");
}

template <class T>
void linear_backward(int n, int in, int out, const T* x, const T* w, const T* dy, T* dx, T* dw,
                     T* db, cudaStream_t stream, Groups gr) {
  const size_t wsize = static_cast<size_t>(gr.count) * out * in;
  if (wsize > 0) {
    linear_dw_kernel<T>
        <<<dev::capped_blocks(wsize), kThreads, 0, stream>>>(n, in, out, x, dy, dw, gr);
    WB_CHECK_LAUNCH("linear_dw_kernel");
  }
  column_sum<T>(n, out, dy, db, stream, gr);
  const size_t xsize = static_cast<size_t>(gr.count) * n * in;
  if (dx && xsize > 0) {
    linear_dx_kernel<T>
        <<<dev::capped_blocks(xsize), kThreads, 0, stream>>>(n, in, out, w, dy, dx, gr);
    WB_CHECK_LAUNCH("linear_dx_kernel");
  }
}

#define WB_INSTANTIATE(T)                                                                         \
  template void linear_forward<T>(int, int, int, const T*, const T*, const T*, T*, cudaStream_t, \
                                  Groups);                                                       \
  template void linear_backward<T>(int, int, int, const T*, const T*, const T*, T*, T*, T*,       \
                                   cudaStream_t, Groups);
WB_INSTANTIATE(float)
WB_INSTANTIATE(double)
WB_INSTANTIATE(DualD)
#undef WB_INSTANTIATE

}  // namespace wb::cuda
