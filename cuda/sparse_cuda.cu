// CSR x dense products of sparse_mlp's input layer; see cuda/sparse_cuda.h.
#include "cuda/common.cuh"
#include "cuda/layers_cuda.h"
#include "cuda/sparse_cuda.h"

namespace wb::cuda {
namespace {

using dev::kThreads;

// Thread (i, q): out[i][q] = bias[q] + sum_p x_val[p] W[x_idx[p]][q]. Neighbouring threads
// take neighbouring q: the reads of a W row are coalesced.
template <class T>
__global__ void csr_dense_forward_kernel(int n, int64_t dout, const int64_t* x_ptr,
                                         const int32_t* x_idx, const float* x_val, const T* W,
                                         const T* bias, T* out) {
  WB_FOR_EACH_INDEX(e, static_cast<size_t>(n) * dout) {
    const int64_t q = static_cast<int64_t>(e % dout);
    const int64_t i = static_cast<int64_t>(e / dout);
    T acc = bias ? bias[q] : T(0);
    for (int64_t p = x_ptr[i]; p < x_ptr[i + 1]; ++p)
      acc += static_cast<T>(x_val[p]) * W[static_cast<int64_t>(x_idx[p]) * dout + q];
    out[e] = acc;
  }
}

// Thread (i, q): for each non-zero p of row i, dW[x_idx[p]][q] += x_val[p] dz[i][q].
template <class T>
__global__ void csr_dense_dw_kernel(int n, int64_t dout, const int64_t* x_ptr, const int32_t* x_idx,
                                    const float* x_val, const T* dz, T* dW) {
  WB_FOR_EACH_INDEX(e, static_cast<size_t>(n) * dout) {
    const int64_t q = static_cast<int64_t>(e % dout);
    const int64_t i = static_cast<int64_t>(e / dout);
    const T d = dz[e];
    for (int64_t p = x_ptr[i]; p < x_ptr[i + 1]; ++p)
      atomicAdd(&dW[static_cast<int64_t>(x_idx[p]) * dout + q], static_cast<T>(x_val[p]) * d);
  }
}

}  // namespace

template <class T>
void csr_dense_forward(int n, int64_t dout, const int64_t* x_ptr, const int32_t* x_idx,
                       const float* x_val, const T* W, const T* bias, T* out, cudaStream_t stream) {
  const size_t total = static_cast<size_t>(n) * static_cast<size_t>(dout);
  if (total == 0) return;
  csr_dense_forward_kernel<T><<<dev::capped_blocks(total), kThreads, 0, stream>>>(
      n, dout, x_ptr, x_idx, x_val, W, bias, out);
  WB_CHECK_LAUNCH("csr_dense_forward_kernel");
}

template <class T>
void csr_dense_backward(int n, int64_t features, int64_t dout, const int64_t* x_ptr,
                        const int32_t* x_idx, const float* x_val, const T* dz, T* dW, T* db,
                        cudaStream_t stream) {
  const size_t wsize = static_cast<size_t>(features) * static_cast<size_t>(dout);
  if (wsize > 0) WB_CHECK_CUDA(cudaMemsetAsync(dW, 0, wsize * sizeof(T), stream));
  const size_t total = static_cast<size_t>(n) * static_cast<size_t>(dout);
  if (total > 0) {
    csr_dense_dw_kernel<T>
        <<<dev::capped_blocks(total), kThreads, 0, stream>>>(n, dout, x_ptr, x_idx, x_val, dz, dW);
    WB_CHECK_LAUNCH("csr_dense_dw_kernel");
  }
  if (db) column_sum<T>(n, dout, dz, db, stream);
}

#define WB_INSTANTIATE(T)                                                                        \
  template void csr_dense_forward<T>(int, int64_t, const int64_t*, const int32_t*, const float*, \
                                     const T*, const T*, T*, cudaStream_t);                      \
  template void csr_dense_backward<T>(int, int64_t, int64_t, const int64_t*, const int32_t*,     \
                                      const float*, const T*, T*, T*, cudaStream_t);
WB_INSTANTIATE(float)
WB_INSTANTIATE(double)
#undef WB_INSTANTIATE

}  // namespace wb::cuda
