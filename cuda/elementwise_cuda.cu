// Element-wise layers on the GPU: ReLU forward/backward, dropout with a given keep-mask,
// the float -> T conversion of the input batch, and the column sum of bias gradients. CPU twins: models::ref::relu_*,
// models::ref::dropout_apply (models/layers.h). One thread per element.
#include "cuda/common.cuh"
#include "cuda/layers_cuda.h"

namespace wb::cuda {
namespace {

using dev::kThreads;

template <class T>
__global__ void relu_forward_kernel(size_t count, const T* x, T* y) {
  WB_FOR_EACH_INDEX(i, count) y[i] = dev::value_of(x[i]) > 0 ? x[i] : T(0);
}

template <class T>
__global__ void relu_backward_kernel(size_t count, const T* x, const T* dy, T* dx) {
  WB_FOR_EACH_INDEX(i, count) dx[i] = dev::value_of(x[i]) > 0 ? dy[i] : T(0);
}

template <class T>
__global__ void dropout_apply_kernel(size_t units, size_t unit_size, const uint8_t* keep, T scale,
                                     const T* x, T* y) {
  WB_FOR_EACH_INDEX(i, units * unit_size) y[i] = keep[i / unit_size] ? x[i] * scale : T(0);
}

template <class T>
__global__ void convert_kernel(size_t count, const float* x, T* y) {
  WB_FOR_EACH_INDEX(i, count) y[i] = T(x[i]);
}

template <class T>
__global__ void column_sum_kernel(int n, int64_t out, const T* dy, T* db, Groups gr) {
  WB_FOR_EACH_INDEX(q, static_cast<size_t>(gr.count) * out) {
    const size_t grp = q / out, o = q % out;
    const T* dyg = dy + grp * n * out;
    T acc(0);
    for (int i = 0; i < n; ++i) acc += dyg[static_cast<size_t>(i) * out + o];
    db[grp * gr.stride + o] = acc;
  }
}

}  // namespace

template <class T>
void column_sum(int n, int64_t out, const T* dy, T* db, cudaStream_t stream, Groups gr) {
  if (out <= 0) return;
  column_sum_kernel<T><<<dev::capped_blocks(static_cast<size_t>(gr.count) * out), kThreads, 0,
                         stream>>>(n, out, dy, db, gr);
  WB_CHECK_LAUNCH("column_sum_kernel");
}

template <class T>
void relu_forward(size_t count, const T* x, T* y, cudaStream_t stream) {
  if (count == 0) return;
  relu_forward_kernel<T><<<dev::capped_blocks(count), kThreads, 0, stream>>>(count, x, y);
  WB_CHECK_LAUNCH("relu_forward_kernel");
}

template <class T>
void relu_backward(size_t count, const T* x, const T* dy, T* dx, cudaStream_t stream) {
  if (count == 0) return;
  relu_backward_kernel<T><<<dev::capped_blocks(count), kThreads, 0, stream>>>(count, x, dy, dx);
  WB_CHECK_LAUNCH("relu_backward_kernel");
}

template <class T>
void dropout_apply(size_t units, size_t unit_size, const uint8_t* keep, double p, const T* x, T* y,
                   cudaStream_t stream) {
  const size_t count = units * unit_size;
  if (count == 0) return;
  const T scale(1.0 / (1.0 - p));  // as the reference: computed in double, then T
  dropout_apply_kernel<T>
      <<<dev::capped_blocks(count), kThreads, 0, stream>>>(units, unit_size, keep, scale, x, y);
  WB_CHECK_LAUNCH("dropout_apply_kernel");
}

template <class T>
void convert(size_t count, const float* x, T* y, cudaStream_t stream) {
  if (count == 0) return;
  convert_kernel<T><<<dev::capped_blocks(count), kThreads, 0, stream>>>(count, x, y);
  WB_CHECK_LAUNCH("convert_kernel");
}

#define WB_INSTANTIATE(T)                                                              \
  template void relu_forward<T>(size_t, const T*, T*, cudaStream_t);                   \
  template void relu_backward<T>(size_t, const T*, const T*, T*, cudaStream_t);        \
  template void dropout_apply<T>(size_t, size_t, const uint8_t*, double, const T*, T*, \
                                 cudaStream_t);                                        \
  template void convert<T>(size_t, const float*, T*, cudaStream_t);                     \
  template void column_sum<T>(int, int64_t, const T*, T*, cudaStream_t, Groups);
WB_INSTANTIATE(float)
WB_INSTANTIATE(double)
WB_INSTANTIATE(DualD)
#undef WB_INSTANTIATE

}  // namespace wb::cuda
