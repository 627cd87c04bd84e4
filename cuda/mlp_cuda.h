// The dense layers and the loss of sparse_mlp (models/sparse_mlp.h) on the GPU; the sparse
// input layer is cuda/sparse_cuda.h. CPU twin: SparseMlp::pass (models/sparse_mlp.cpp).
// Weights are stored ONE ROW PER INPUT UNIT, W[din][dout] (the transpose of nn.Linear):
//   forward   out[i][o] = bias[o] + sum_q a[i][q] W[q][o]            (ReLU on hidden layers)
//   backward  dW[q][o]  = sum_i a[i][q] dz[i][o],  db[o] = sum_i dz[i][o]
//             dprev[i][q] = a[i][q] > 0 ? sum_o dz[i][o] W[q][o] : 0   (ReLU of the input)
//   loss      row i with labels y_i: logsumexp(z_i) - mean_{l in y_i} z_il; rows without
//             labels add nothing; dz_i = (softmax(z_i) - t_i) * inv_m, t_il = 1/|y_i| on y_i.
// Every sum runs in a fixed order (no atomics): the same bits on every run.
// All pointers are device pointers; T = float or double (instantiated in mlp_cuda.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace wb::cuda {

// out (n x dout) OVERWRITTEN; relu: clamp at 0 (hidden layers).
template <class T>
void dense_rows_forward(int n, int64_t din, int64_t dout, const T* a, const T* W, const T* bias,
                        T* out, bool relu, cudaStream_t stream = nullptr);

// dW (din x dout), db (dout) OVERWRITTEN; dprev (n x din, optional) OVERWRITTEN.
template <class T>
void dense_rows_backward(int n, int64_t din, int64_t dout, const T* a, const T* W, const T* dz,
                         T* dW, T* db, T* dprev, cudaStream_t stream = nullptr);

// (The bias gradients: column_sum, cuda/layers_cuda.h.)
// The sparse layer's weight gradient without atomics: the batch's CSR transposed on the host
// (models::csr_transpose order: features ascending, rows ascending within a feature), one
// thread per (distinct feature u, column o): dW[feat[u]][o] = sum_e val[e] dz[row[e]][o]
// over e in [col_ptr[u], col_ptr[u+1]). Rows of dW whose feature is absent are zeroed.
template <class T>
void csc_dense_dw(int64_t features, int64_t dout, int n_feat, const int32_t* feat,
                  const int32_t* col_ptr, const int32_t* row, const float* val, const T* dz, T* dW,
                  cudaStream_t stream = nullptr);

// Multi-label softmax cross-entropy over z (n x L), one block per row: loss_rows[i] (the
// row's loss, 0 without labels) and, when dz != nullptr, dz (n x L) OVERWRITTEN.
template <class T>
void multilabel_xent(int n, int64_t L, const T* z, const int64_t* y_ptr, const int32_t* y_idx,
                     T inv_m, T* dz, double* loss_rows, cudaStream_t stream = nullptr);

}  // namespace wb::cuda
