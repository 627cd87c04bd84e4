// 2x2 max-pool (stride 2, floor mode) on the GPU; CPU twin: models::ref::maxpool2_*.
// Forward: one thread per output, scanning its window in row-major order with `>`, so ties
// go to the first maximum exactly as in the reference (and PyTorch). Backward: one thread
// per INPUT element (a gather: no atomics, dx written whole): element q of a plane is the
// argmax of window (yy/2, xx/2) or it gets zero; rows/columns beyond the floor (odd sizes)
// belong to no window and get zero.
//
// Global average pool (the ResNet's head, adaptive_avg_pool2d(1)); CPU twin:
// models::rref::avgpool_*. Forward: one thread per (sample, channel) summing its plane in the
// reference's order, then one IEEE division: the same bits as the CPU. Backward: one thread
// per input element, dx = dy / hw.
#include "cuda/common.cuh"
#include "cuda/layers_cuda.h"
#include "cuda/resnet_layers_cuda.h"

namespace wb::cuda {
namespace {

using dev::kThreads;

template <class T>
__global__ void maxpool2_forward_kernel(int n, int c, int h, int w, const T* x, T* y,
                                        int32_t* idx) {
  const int ph = h / 2, pw = w / 2;
  const size_t total = static_cast<size_t>(n) * c * ph * pw;
  WB_FOR_EACH_INDEX(q, total) {
    const int j = static_cast<int>(q % pw);
    const int i = static_cast<int>(q / pw % ph);
    const size_t plane = q / (static_cast<size_t>(pw) * ph);
    const T* xp = x + plane * h * w;
    int best = (2 * i) * w + 2 * j;
    for (int u = 0; u < 2; ++u)
      for (int v = 0; v < 2; ++v) {
        const int at = (2 * i + u) * w + 2 * j + v;
        if (dev::value_of(xp[at]) > dev::value_of(xp[best])) best = at;
      }
    y[q] = xp[best];
    idx[q] = best;
  }
}

template <class T>
__global__ void maxpool2_backward_kernel(int n, int c, int h, int w, const T* dy,
                                         const int32_t* idx, T* dx) {
  const int ph = h / 2, pw = w / 2;
  const size_t total = static_cast<size_t>(n) * c * h * w;
  WB_FOR_EACH_INDEX(q, total) {
    const int xx = static_cast<int>(q % w);
    const int yy = static_cast<int>(q / w % h);
    const size_t plane = q / (static_cast<size_t>(w) * h);
    const int i = yy / 2, j = xx / 2;
    T g(0);
    if (i < ph && j < pw) {
      const size_t o = plane * ph * pw + static_cast<size_t>(i) * pw + j;
      if (idx[o] == yy * w + xx) g = dy[o];
    }
    dx[q] = g;
  }
}

template <class T>
__global__ void avgpool_forward_kernel(int n, int c, int hw, const T* x, T* y) {
  WB_FOR_EACH_INDEX(sc, static_cast<size_t>(n) * c) {
    const T* xp = x + sc * hw;
    T acc(0);
    for (int p = 0; p < hw; ++p) acc += xp[p];
    y[sc] = acc / T(static_cast<double>(hw));
  }
}

template <class T>
__global__ void avgpool_backward_kernel(int n, int c, int hw, const T* dy, T* dx) {
  WB_FOR_EACH_INDEX(q, static_cast<size_t>(n) * c * hw) {
    dx[q] = dy[q / hw] / T(static_cast<double>(hw));
  }
}

}  // namespace

template <class T>
void avgpool_forward(int n, int c, int hw, const T* x, T* y, cudaStream_t stream) {
  const size_t total = static_cast<size_t>(n) * c;
  if (total == 0) return;
  avgpool_forward_kernel<T><<<dev::capped_blocks(total), kThreads, 0, stream>>>(n, c, hw, x, y);
  WB_CHECK_LAUNCH("avgpool_forward_kernel");
}

template <class T>
void avgpool_backward(int n, int c, int hw, const T* dy, T* dx, cudaStream_t stream) {
  const size_t total = static_cast<size_t>(n) * c * hw;
  if (total == 0) return;
  avgpool_backward_kernel<T><<<dev::capped_blocks(total), kThreads, 0, stream>>>(n, c, hw, dy, dx);
  WB_CHECK_LAUNCH("avgpool_backward_kernel");
}

template <class T>
void maxpool2_forward(int n, int c, int h, int w, const T* x, T* y, int32_t* idx,
                      cudaStream_t stream) {
  const size_t total = static_cast<size_t>(n) * c * (h / 2) * (w / 2);
  if (total == 0) return;
  maxpool2_forward_kernel<T>
      <<<dev::capped_blocks(total), kThreads, 0, stream>>>(n, c, h, w, x, y, idx);
  WB_CHECK_LAUNCH("maxpool2_forward_kernel");
}

template <class T>
void maxpool2_backward(int n, int c, int h, int w, const T* dy, const int32_t* idx, T* dx,
                       cudaStream_t stream) {
  const size_t total = static_cast<size_t>(n) * c * h * w;
  if (total == 0) return;
  maxpool2_backward_kernel<T>
      <<<dev::capped_blocks(total), kThreads, 0, stream>>>(n, c, h, w, dy, idx, dx);
  WB_CHECK_LAUNCH("maxpool2_backward_kernel");
}

#define WB_INSTANTIATE(T)                                                                      \
  template void maxpool2_forward<T>(int, int, int, int, const T*, T*, int32_t*, cudaStream_t); \
  template void maxpool2_backward<T>(int, int, int, int, const T*, const int32_t*, T*,         \
                                     cudaStream_t);
WB_INSTANTIATE(float)
WB_INSTANTIATE(double)
WB_INSTANTIATE(DualD)
#undef WB_INSTANTIATE

#define WB_INSTANTIATE(T)                                                      \
  template void avgpool_forward<T>(int, int, int, const T*, T*, cudaStream_t); \
  template void avgpool_backward<T>(int, int, int, const T*, T*, cudaStream_t);
WB_INSTANTIATE(float)
WB_INSTANTIATE(double)
#undef WB_INSTANTIATE

}  // namespace wb::cuda
