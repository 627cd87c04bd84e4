// The residual connection of a basic block (He et al. 2016, eq. 1: y = F(x) + x, followed by
// ReLU as in the paper's Figure 2) on the GPU. CPU twins: models::rref::shortcut_a_* and the
// element-wise loops of the CPU pass (models/resnet.cpp).
//
// Option A shortcut (section 3.3 and 4.2: "the shortcut still performs identity mapping, with
// extra zero entries padded for increasing dimensions", stride 2 subsampling):
//   forward  one thread per OUTPUT element: a copy of x at (c - cpad, i*stride, j*stride), or
//            zero in the cpad new channels on either side;
//   backward one thread per INPUT element (a gather, so no atomics): dx[s, c, yy, xx] gets
//            dy[s, c + cpad, yy/stride, xx/stride] when yy and xx are multiples of the
//            stride, nothing otherwise (the subsampling dropped that pixel).
// Worked example (cin 16 -> cout 32, 32x32 -> 16x16, stride 2, cpad 8): output channel 8
// holds input channel 0; output (s, 8, 3, 5) = x(s, 0, 6, 10); input (s, 0, 6, 11) has no
// output (11 is odd) and its dx is left as it was.
//
// add_relu_forward and accumulate are one thread per element, the reference's single
// operation each: the same bits as the CPU.
#include "cuda/common.cuh"
#include "cuda/resnet_layers_cuda.h"

namespace wb::cuda {
namespace {

using dev::kThreads;

template <class T>
__global__ void shortcut_a_forward_kernel(int n, int cin, int h, int w, int stride, int cout,
                                          const T* x, T* y) {
  const int ho = (h - 1) / stride + 1, wo = (w - 1) / stride + 1, cpad = (cout - cin) / 2;
  WB_FOR_EACH_INDEX(q, static_cast<size_t>(n) * cout * ho * wo) {
    const int j = static_cast<int>(q % wo), i = static_cast<int>(q / wo % ho);
    const int c = static_cast<int>(q / (static_cast<size_t>(wo) * ho) % cout) - cpad;
    const size_t s = q / (static_cast<size_t>(wo) * ho * cout);
    y[q] = (c >= 0 && c < cin)
               ? x[((s * cin + c) * h + static_cast<size_t>(i) * stride) * w + j * stride]
               : T(0);
  }
}

template <class T>
__global__ void shortcut_a_backward_kernel(int n, int cin, int h, int w, int stride, int cout,
                                           const T* dy, T* dx) {
  const int ho = (h - 1) / stride + 1, wo = (w - 1) / stride + 1, cpad = (cout - cin) / 2;
  WB_FOR_EACH_INDEX(q, static_cast<size_t>(n) * cin * h * w) {
    const int xx = static_cast<int>(q % w), yy = static_cast<int>(q / w % h);
    if (yy % stride != 0 || xx % stride != 0) continue;
    const int c = static_cast<int>(q / (static_cast<size_t>(w) * h) % cin);
    const size_t s = q / (static_cast<size_t>(w) * h * cin);
    dx[q] += dy[((s * cout + c + cpad) * ho + yy / stride) * wo + xx / stride];
  }
}

template <class T>
__global__ void add_relu_forward_kernel(size_t count, const T* a, const T* b, T* y) {
  WB_FOR_EACH_INDEX(i, count) {
    const T v = a[i] + b[i];
    y[i] = dev::value_of(v) > 0 ? v : T(0);
  }
}

template <class T>
__global__ void accumulate_kernel(size_t count, const T* src, T* dst) {
  WB_FOR_EACH_INDEX(i, count) dst[i] += src[i];
}

}  // namespace

template <class T>
void shortcut_a_forward(int n, int cin, int h, int w, int stride, int cout, const T* x, T* y,
                        cudaStream_t stream) {
  const size_t total =
      static_cast<size_t>(n) * cout * ((h - 1) / stride + 1) * ((w - 1) / stride + 1);
  if (total == 0) return;
  shortcut_a_forward_kernel<T>
      <<<dev::capped_blocks(total), kThreads, 0, stream>>>(n, cin, h, w, stride, cout, x, y);
  WB_CHECK_LAUNCH("shortcut_a_forward_kernel");
}

template <class T>
void shortcut_a_backward(int n, int cin, int h, int w, int stride, int cout, const T* dy, T* dx,
                         cudaStream_t stream) {
  const size_t total = static_cast<size_t>(n) * cin * h * w;
  if (total == 0) return;
  shortcut_a_backward_kernel<T>
      <<<dev::capped_blocks(total), kThreads, 0, stream>>>(n, cin, h, w, stride, cout, dy, dx);
  WB_CHECK_LAUNCH("shortcut_a_backward_kernel");
}

template <class T>
void add_relu_forward(size_t count, const T* a, const T* b, T* y, cudaStream_t stream) {
  if (count == 0) return;
  add_relu_forward_kernel<T><<<dev::capped_blocks(count), kThreads, 0, stream>>>(count, a, b, y);
  WB_CHECK_LAUNCH("add_relu_forward_kernel");
}

template <class T>
void accumulate(size_t count, const T* src, T* dst, cudaStream_t stream) {
  if (count == 0) return;
  accumulate_kernel<T><<<dev::capped_blocks(count), kThreads, 0, stream>>>(count, src, dst);
  WB_CHECK_LAUNCH("accumulate_kernel");
}

#define WB_INSTANTIATE(T)                                                                         \
  template void shortcut_a_forward<T>(int, int, int, int, int, int, const T*, T*, cudaStream_t);  \
  template void shortcut_a_backward<T>(int, int, int, int, int, int, const T*, T*, cudaStream_t); \
  template void add_relu_forward<T>(size_t, const T*, const T*, T*, cudaStream_t);                \
  template void accumulate<T>(size_t, const T*, T*, cudaStream_t);
WB_INSTANTIATE(float)
WB_INSTANTIATE(double)
#undef WB_INSTANTIATE

}  // namespace wb::cuda
