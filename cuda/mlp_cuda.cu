// sparse_mlp's dense layers and loss on the GPU; see cuda/mlp_cuda.h.
#include <cfloat>

#include "cuda/common.cuh"
#include "cuda/layers_cuda.h"
#include "cuda/mlp_cuda.h"

namespace wb::cuda {
namespace {

using dev::kThreads;

// Thread (i, o); neighbouring threads take neighbouring o: W row reads are coalesced.
template <class T>
__global__ void dense_rows_forward_kernel(int n, int64_t din, int64_t dout, const T* a,
                                          const T* W, const T* bias, T* out, bool relu) {
  WB_FOR_EACH_INDEX(e, static_cast<size_t>(n) * dout) {
    const int64_t o = static_cast<int64_t>(e % dout);
    const int64_t i = static_cast<int64_t>(e / dout);
    const T* ai = a + i * din;
    T acc = bias[o];
    for (int64_t q = 0; q < din; ++q) acc += ai[q] * W[q * dout + o];
    out[e] = relu && !(acc > T(0)) ? T(0) : acc;
  }
}

// Thread (q, o): dW[q][o] = sum_i a[i][q] dz[i][o].
template <class T>
__global__ void dense_rows_dw_kernel(int n, int64_t din, int64_t dout, const T* a, const T* dz,
                                     T* dW) {
  WB_FOR_EACH_INDEX(e, static_cast<size_t>(din) * dout) {
    const int64_t o = static_cast<int64_t>(e % dout);
    const int64_t q = static_cast<int64_t>(e / dout);
    T acc(0);
    for (int i = 0; i < n; ++i) acc += a[static_cast<int64_t>(i) * din + q] * dz[static_cast<int64_t>(i) * dout + o];
    dW[e] = acc;
  }
}

// Thread (i, q): dprev[i][q] = a[i][q] > 0 ? sum_o dz[i][o] W[q][o] : 0.
template <class T>
__global__ void dense_rows_dprev_kernel(int n, int64_t din, int64_t dout, const T* a, const T* W,
                                        const T* dz, T* dprev) {
  WB_FOR_EACH_INDEX(e, static_cast<size_t>(n) * din) {
    const int64_t q = static_cast<int64_t>(e % din);
    const int64_t i = static_cast<int64_t>(e / din);
    T acc(0);
    if (a[e] != T(0)) {
      const T* d = dz + i * dout;
      const T* w = W + q * dout;
      for (int64_t o = 0; o < dout; ++o) acc += d[o] * w[o];
    }
    dprev[e] = acc;
  }
}

template <class T>
__global__ void csc_dense_dw_kernel(int n_feat, int64_t dout, const int32_t* feat,
                                    const int32_t* col_ptr, const int32_t* row, const float* val,
                                    const T* dz, T* dW) {
  WB_FOR_EACH_INDEX(e, static_cast<size_t>(n_feat) * dout) {
    const int64_t o = static_cast<int64_t>(e % dout);
    const int64_t u = static_cast<int64_t>(e / dout);
    T acc(0);
    for (int32_t k = col_ptr[u]; k < col_ptr[u + 1]; ++k)
      acc += static_cast<T>(val[k]) * dz[static_cast<int64_t>(row[k]) * dout + o];
    dW[static_cast<int64_t>(feat[u]) * dout + o] = acc;
  }
}

// Block i = row i (kThreads threads striding over the L logits).
template <class T>
__global__ void multilabel_xent_kernel(int64_t L, const T* z, const int64_t* y_ptr,
                                       const int32_t* y_idx, T inv_m, T* dz, double* loss_rows) {
  const int64_t i = blockIdx.x;
  const T* zi = z + i * L;
  T mx = -(sizeof(T) == sizeof(float) ? T(FLT_MAX) : T(DBL_MAX));
  for (int64_t l = threadIdx.x; l < L; l += blockDim.x) mx = zi[l] > mx ? zi[l] : mx;
  mx = dev::block_max(mx);
  T se(0);
  for (int64_t l = threadIdx.x; l < L; l += blockDim.x) se += dev::exp_of(zi[l] - mx);
  se = dev::block_sum(se);
  const T lse = mx + dev::log_of(se);
  const int64_t y0 = y_ptr[i], y1 = y_ptr[i + 1];
  if (threadIdx.x == 0) {
    T zy(0);
    for (int64_t p = y0; p < y1; ++p) zy += zi[y_idx[p]];
    loss_rows[i] = y1 > y0 ? static_cast<double>(lse - zy / static_cast<T>(y1 - y0)) : 0.0;
  }
  if (!dz) return;
  T* di = dz + i * L;
  for (int64_t l = threadIdx.x; l < L; l += blockDim.x)
    di[l] = y1 > y0 ? dev::exp_of(zi[l] - lse) * inv_m : T(0);
  __syncthreads();
  if (threadIdx.x == 0 && y1 > y0) {
    const T t = inv_m / static_cast<T>(y1 - y0);
    for (int64_t p = y0; p < y1; ++p) di[y_idx[p]] -= t;
  }
}

}  // namespace

template <class T>
void dense_rows_forward(int n, int64_t din, int64_t dout, const T* a, const T* W, const T* bias,
                        T* out, bool relu, cudaStream_t stream) {
  const size_t total = static_cast<size_t>(n) * static_cast<size_t>(dout);
  if (total == 0) return;
  dense_rows_forward_kernel<T><<<dev::capped_blocks(total), kThreads, 0, stream>>>(
      n, din, dout, a, W, bias, out, relu);
  WB_CHECK_LAUNCH("dense_rows_forward_kernel");
}

template <class T>
void dense_rows_backward(int n, int64_t din, int64_t dout, const T* a, const T* W, const T* dz,
                         T* dW, T* db, T* dprev, cudaStream_t stream) {
  const size_t wsize = static_cast<size_t>(din) * static_cast<size_t>(dout);
  if (wsize > 0) {
    dense_rows_dw_kernel<T>
        <<<dev::capped_blocks(wsize), kThreads, 0, stream>>>(n, din, dout, a, dz, dW);
    WB_CHECK_LAUNCH("dense_rows_dw_kernel");
  }
  column_sum<T>(n, dout, dz, db, stream);
  const size_t psize = static_cast<size_t>(n) * static_cast<size_t>(din);
  if (dprev && psize > 0) {
    dense_rows_dprev_kernel<T>
        <<<dev::capped_blocks(psize), kThreads, 0, stream>>>(n, din, dout, a, W, dz, dprev);
    WB_CHECK_LAUNCH("dense_rows_dprev_kernel");
  }
}

template <class T>
void csc_dense_dw(int64_t features, int64_t dout, int n_feat, const int32_t* feat,
                  const int32_t* col_ptr, const int32_t* row, const float* val, const T* dz, T* dW,
                  cudaStream_t stream) {
  const size_t wsize = static_cast<size_t>(features) * static_cast<size_t>(dout);
  if (wsize > 0) WB_CHECK_CUDA(cudaMemsetAsync(dW, 0, wsize * sizeof(T), stream));
  const size_t total = static_cast<size_t>(n_feat) * static_cast<size_t>(dout);
  if (total == 0) return;
  csc_dense_dw_kernel<T><<<dev::capped_blocks(total), kThreads, 0, stream>>>(
      n_feat, dout, feat, col_ptr, row, val, dz, dW);
  WB_CHECK_LAUNCH("csc_dense_dw_kernel");
}

template <class T>
void multilabel_xent(int n, int64_t L, const T* z, const int64_t* y_ptr, const int32_t* y_idx,
                     T inv_m, T* dz, double* loss_rows, cudaStream_t stream) {
  if (n <= 0) return;
  multilabel_xent_kernel<T>
      <<<static_cast<unsigned>(n), kThreads, 0, stream>>>(L, z, y_ptr, y_idx, inv_m, dz, loss_rows);
  WB_CHECK_LAUNCH("multilabel_xent_kernel");
}

#define WB_INSTANTIATE(T)                                                                       \
  template void dense_rows_forward<T>(int, int64_t, int64_t, const T*, const T*, const T*, T*, \
                                      bool, cudaStream_t);                                      \
  template void dense_rows_backward<T>(int, int64_t, int64_t, const T*, const T*, const T*, T*, \
                                       T*, T*, cudaStream_t);                                   \
  template void csc_dense_dw<T>(int64_t, int64_t, int, const int32_t*, const int32_t*,          \
                                const int32_t*, const float*, const T*, T*, cudaStream_t);      \
  template void multilabel_xent<T>(int, int64_t, const T*, const int64_t*, const int32_t*, T,   \
                                   T*, double*, cudaStream_t);
WB_INSTANTIATE(float)
WB_INSTANTIATE(double)
#undef WB_INSTANTIATE

}  // namespace wb::cuda
