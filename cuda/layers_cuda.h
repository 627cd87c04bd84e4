// LeNet-5 layers on the GPU: the device twins of the reference loops in models/layers.h,
// with the same argument lists (device pointers; a stream last) and the same semantics
// (PyTorch 1.13, see the header of models/layers.h). The CPU loops are the oracle:
// tests/cuda/test_layers_cuda.cpp compares every function here with its models::ref twin.
//
// Kernels are the readable baseline: one thread per output element, each running the
// reference's inner loop in the reference's order (so most results match the CPU to the
// last bit or an FMA contraction); reductions over the batch (conv weight/bias gradients)
// use one block per output and a fixed-order tree (deterministic). No atomics.
//
// Scalar types: float (training), double (oracle), DualD (exact HVP, cuda/dual_cuda.h),
// explicitly instantiated in the .cu files. Translation units, one per kernel family:
//   conv2d_cuda.cu        conv2d_forward / conv2d_backward
//   pool_cuda.cu          maxpool2_forward / maxpool2_backward
//   elementwise_cuda.cu   relu_forward / relu_backward / dropout_apply / convert / column_sum
//   linear_cuda.cu        linear_forward / linear_backward
//   softmax_nll_cuda.cu   log_softmax_nll
// (The ResNet's layers -- strided conv, batch/group norm, average pool, shortcut -- are
// declared in cuda/resnet_layers_cuda.h; they reuse Groups and the ReLU here.)
// Every launch is checked (WB_CHECK_LAUNCH); kernels are asynchronous on `stream` except
// log_softmax_nll, which returns the loss to the host.
//
// Grouped passes (`Groups`, last argument): the logical workers of a rank in ONE launch
// sequence (DESIGN.md section 2: a rank's W_r workers are one computation on its device).
// The batch is then gr.count consecutive blocks of n samples (n is the per-group batch);
// block k reads its parameters at w + k * gr.stride (b likewise) and writes its weight and
// bias gradients at dw + k * gr.stride. Each group is summed exactly as a lone call on its
// block would sum it (same order, same tree), so a grouped pass is bit-identical to gr.count
// separate passes: tests/cuda/test_group_cuda.cpp checks it. The per-sample layers (pool,
// ReLU, dropout) need no group argument: they see gr.count * n samples.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "cuda/dual_cuda.h"
#include "models/conv_shape.h"

namespace wb::cuda {

// The CPU layers' shape (models/conv_shape.h: dependency-free, so nvcc units stay light).
using models::ConvShape;

struct Groups {
  int count = 1;      // groups (workers) in the launch
  size_t stride = 0;  // elements between consecutive groups' parameter (and gradient) sets
};

// y[n,o,i,j] = b[o] + sum_{c,u,v} w[o,c,u,v] x[n,c,i+u-pad,j+v-pad] (zero padding).
template <class T>
void conv2d_forward(const ConvShape& s, int n, const T* x, const T* w, const T* b, T* y,
                    cudaStream_t stream = nullptr, Groups gr = {});
// dx (optional: nullptr skips it), dw, db OVERWRITTEN.
template <class T>
void conv2d_backward(const ConvShape& s, int n, const T* x, const T* w, const T* dy, T* dx, T* dw,
                     T* db, cudaStream_t stream = nullptr, Groups gr = {});

// 2x2 max-pool, stride 2, floor mode; idx = flat index of the max inside the input plane,
// the first maximum in row-major window order (PyTorch's `val > maxval` scan).
template <class T>
void maxpool2_forward(int n, int c, int h, int w, const T* x, T* y, int32_t* idx,
                      cudaStream_t stream = nullptr);
// dx OVERWRITTEN (zero except at the argmax of each window).
template <class T>
void maxpool2_backward(int n, int c, int h, int w, const T* dy, const int32_t* idx, T* dx,
                       cudaStream_t stream = nullptr);

template <class T>
void relu_forward(size_t count, const T* x, T* y, cudaStream_t stream = nullptr);
// Uses the layer INPUT x: relu'(x) = [x > 0].
template <class T>
void relu_backward(size_t count, const T* x, const T* dy, T* dx, cudaStream_t stream = nullptr);

// keep[u] (device bytes) for each of `units` units of unit_size consecutive values;
// y = keep ? x / (1 - p) : 0. Forward and backward are the same map. The masks come from
// models::dropout_mask on the host, so the GPU drops exactly what the CPU drops.
template <class T>
void dropout_apply(size_t units, size_t unit_size, const uint8_t* keep, double p, const T* x, T* y,
                   cudaStream_t stream = nullptr);

// y = T(x): the float input batch into the pass's scalar type.
template <class T>
void convert(size_t count, const float* x, T* y, cudaStream_t stream = nullptr);

// db[o] = sum_i dy[i][o], i ascending (dy is n x out, row-major): the bias gradient of a
// dense layer -- linear (here), the sparse MLP's layers (cuda/sparse_cuda.h, mlp_cuda.h).
template <class T>
void column_sum(int n, int64_t out, const T* dy, T* db, cudaStream_t stream = nullptr,
                Groups gr = {});

// y = x W^T + b, W is [out, in].
template <class T>
void linear_forward(int n, int in, int out, const T* x, const T* w, const T* b, T* y,
                    cudaStream_t stream = nullptr, Groups gr = {});
// dx (optional), dw, db OVERWRITTEN.
template <class T>
void linear_backward(int n, int in, int out, const T* x, const T* w, const T* dy, T* dx, T* dw,
                     T* db, cudaStream_t stream = nullptr, Groups gr = {});

// log_softmax + NLL. *loss_sum (device, one T) = the SUM of per-sample losses, summed in
// sample order as the reference does; *correct (device, optional) = argmax hits.
// dlogits (optional) = grad_scale * (softmax - onehot). Asynchronous. groups > 1: `groups`
// blocks of n samples, loss_sum[k] and correct[k] per block (one CUDA block each).
template <class T>
void log_softmax_nll_async(int n, int classes, const T* logits, const int32_t* label, T* dlogits,
                           double grad_scale, T* loss_sum, int64_t* correct,
                           cudaStream_t stream = nullptr, int groups = 1);
// The reference's signature: returns the sum; `correct` is a HOST counter (incremented, as
// the reference does). Synchronizes the stream.
template <class T>
T log_softmax_nll(int n, int classes, const T* logits, const int32_t* label, T* dlogits,
                  double grad_scale, int64_t* correct, cudaStream_t stream = nullptr);

}  // namespace wb::cuda
