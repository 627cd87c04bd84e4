// The sparse-input layer of sparse_mlp (models/sparse_mlp.h) on the GPU: CSR x dense and
// its transpose product. CPU twin: the j == 0 branches of SparseMlp::pass
// (models/sparse_mlp.cpp), whose weight is [features][dout], ONE ROW PER INPUT FEATURE:
//   forward   out[i][:] = bias + sum_{p in row i} x_val[p] * W[x_idx[p]][:]
//   backward  dW[f][:]  = sum_{i, p in row i, x_idx[p] = f} x_val[p] * dz[i][:]   (= X^T dz)
//             db        = sum_i dz[i][:]
// CSR arrays as in models::Batch (x_ptr has n + 1 entries). All pointers are device pointers.
// Scalar types: float and double (explicitly instantiated in sparse_cuda.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace wb::cuda {

// out is n x dout, OVERWRITTEN (bias may be nullptr: zero). One thread per output element,
// the row's non-zeros in CSR order (the reference's axpy order): deterministic.
template <class T>
void csr_dense_forward(int n, int64_t dout, const int64_t* x_ptr, const int32_t* x_idx,
                       const float* x_val, const T* W, const T* bias, T* out,
                       cudaStream_t stream = nullptr);

// dW (features x dout) and db (dout, optional) OVERWRITTEN. dW is zeroed, then every
// non-zero scatters x_val * dz[i][:] into its row with atomicAdd: the summation order of a
// row hit by several samples is not fixed (results vary in the last bits between runs);
// db is a per-column loop over the samples (deterministic).
template <class T>
void csr_dense_backward(int n, int64_t features, int64_t dout, const int64_t* x_ptr,
                        const int32_t* x_idx, const float* x_val, const T* dz, T* dW, T* db,
                        cudaStream_t stream = nullptr);

}  // namespace wb::cuda
