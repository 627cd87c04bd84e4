// The CIFAR ResNet's layers on the GPU (He et al. 2016, section 4.2): the device twins of the
// reference loops in models/resnet_layers.h (namespace models::rref), with their argument
// lists (device pointers; a stream last, then the group description) and their semantics
// (PyTorch 1.13, see that header). The CPU loops are the oracle:
// tests/cuda/test_resnet_layers_cuda.cpp compares every function here with its rref twin and
// checks that grouped launches equal lone ones bit for bit.
//
// Translation units, one per kernel family:
//   conv_strided_cuda.cu  conv_forward / conv_backward (strided, optional bias: ConvGeom)
//   batchnorm_cuda.cu     bn_forward_train / bn_update_running / bn_forward_eval / bn_backward
//   groupnorm_cuda.cu     gn_forward / gn_backward
//   pool_cuda.cu          avgpool_forward / avgpool_backward (beside LeNet's max-pool)
//   residual_cuda.cu      shortcut_a_forward / shortcut_a_backward / add_relu_forward /
//                         accumulate
// The plain ReLU and its backward are LeNet's (cuda/layers_cuda.h): relu'(x) = [x > 0] may be
// read from the layer's OUTPUT as well, as the CPU pass does ([relu(x) > 0] == [x > 0]).
//
// Scalar types: float (training) and double (the oracle's precision, used by the tests to
// check the algorithm apart from rounding). No DualD: the CPU pass differentiates through the
// batch statistics with Dual<double> for the HVP, which stays on the CPU.
//
// Determinism: no atomics. Every reduction (batch and group statistics, their backward sums,
// weight and parameter gradients) is one CUDA block with a fixed partition of its elements
// over the threads and a fixed-order tree (dev::block_sum), so a launch gives the same bits
// on every run. The partition depends only on the layer's shape and the per-group batch, never
// on the number of groups, so a grouped launch equals gr.count lone launches bit for bit.
//
// Grouped passes (`Groups`, as in cuda/layers_cuda.h): the batch is gr.count consecutive
// blocks of n samples; block k reads its parameters (gamma, beta, conv weights) at
// + k * gr.stride and writes its parameter gradients there. Per-channel batch statistics
// (mean, invstd of bn_*) are [gr.count x c]: group k's at + k * c; per-sample group-norm
// statistics are [gr.count * n x groups] (the samples simply continue). The running
// statistics of BatchNorm are per-worker STATE with their own stride (state_stride).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "cuda/layers_cuda.h"
#include "models/resnet_layers.h"

namespace wb::cuda {

using models::ConvGeom;

// PyTorch's defaults, which models/resnet_layers.h uses (BatchNorm2d / GroupNorm eps,
// BatchNorm2d momentum).
inline constexpr double kNormEps = 1e-5;
inline constexpr double kBnMomentum = 0.1;

// ---- strided convolution (conv_strided_cuda.cu); twin of rref::conv_forward / conv_backward.
// y OVERWRITTEN; b may be null (no bias: the ResNet's convolutions before a norm).
template <class T>
void conv_forward(const ConvGeom& g, int n, const T* x, const T* w, const T* b, T* y,
                  cudaStream_t stream = nullptr, Groups gr = {});
// dw OVERWRITTEN; db (optional: null when the layer has no bias) OVERWRITTEN; dx (optional)
// OVERWRITTEN.
template <class T>
void conv_backward(const ConvGeom& g, int n, const T* x, const T* w, const T* dy, T* dx, T* dw,
                   T* db, cudaStream_t stream = nullptr, Groups gr = {});

// ---- batch normalization (batchnorm_cuda.cu), training mode: statistics over (n, hw) per
// channel and group, the biased variance normalizing (Ioffe & Szegedy 2015, Algorithm 1).
// y, mean, invstd OVERWRITTEN.
template <class T>
void bn_forward_train(int n, int c, int hw, const T* x, const T* gamma, const T* beta, T* y,
                      T* mean, T* invstd, cudaStream_t stream = nullptr, Groups gr = {});
// run = (1 - 0.1) run + 0.1 batch, the variance UNBIASED (m / (m - 1)), recovered from
// invstd as the reference does; float state. Group k's running mean/var at
// run_mean/run_var + k * state_stride.
template <class T>
void bn_update_running(int n, int c, int hw, const T* mean, const T* invstd, float* run_mean,
                       float* run_var, cudaStream_t stream = nullptr, int groups = 1,
                       size_t state_stride = 0);
// Evaluation mode: normalizes by the running statistics. y OVERWRITTEN.
template <class T>
void bn_forward_eval(int n, int c, int hw, const T* x, const T* gamma, const T* beta,
                     const float* run_mean, const float* run_var, T* y,
                     cudaStream_t stream = nullptr, Groups gr = {}, size_t state_stride = 0);
// Backward through the batch statistics; dx, dgamma, dbeta OVERWRITTEN.
template <class T>
void bn_backward(int n, int c, int hw, const T* x, const T* gamma, const T* mean, const T* invstd,
                 const T* dy, T* dx, T* dgamma, T* dbeta, cudaStream_t stream = nullptr,
                 Groups gr = {});

// ---- group normalization (groupnorm_cuda.cu; Wu & He 2018): statistics per (sample, group
// of c / groups channels), per-channel affine; the same in training and evaluation.
// mean/invstd [gr.count * n * groups]; y, mean, invstd OVERWRITTEN.
template <class T>
void gn_forward(int n, int c, int hw, int groups, const T* x, const T* gamma, const T* beta, T* y,
                T* mean, T* invstd, cudaStream_t stream = nullptr, Groups gr = {});
// dx, dgamma, dbeta OVERWRITTEN.
template <class T>
void gn_backward(int n, int c, int hw, int groups, const T* x, const T* gamma, const T* mean,
                 const T* invstd, const T* dy, T* dx, T* dgamma, T* dbeta,
                 cudaStream_t stream = nullptr, Groups gr = {});

// ---- global average pool (pool_cuda.cu): y[s, c] = mean over the hw positions. Per sample:
// no group argument (a grouped pass passes gr.count * n samples). y / dx OVERWRITTEN.
template <class T>
void avgpool_forward(int n, int c, int hw, const T* x, T* y, cudaStream_t stream = nullptr);
template <class T>
void avgpool_backward(int n, int c, int hw, const T* dy, T* dx, cudaStream_t stream = nullptr);

// ---- the residual connection (residual_cuda.cu). Per sample, no group argument.
// Option A shortcut: y[s, c + cpad, i, j] = x[s, c, i*stride, j*stride], zero in the cpad =
// (cout - cin) / 2 new channels on each side. y OVERWRITTEN.
template <class T>
void shortcut_a_forward(int n, int cin, int h, int w, int stride, int cout, const T* x, T* y,
                        cudaStream_t stream = nullptr);
// dx += the shortcut's share of dy (ACCUMULATES, as the reference).
template <class T>
void shortcut_a_backward(int n, int cin, int h, int w, int stride, int cout, const T* dy, T* dx,
                         cudaStream_t stream = nullptr);
// The block's output: y = relu(a + b) (y may alias a).
template <class T>
void add_relu_forward(size_t count, const T* a, const T* b, T* y, cudaStream_t stream = nullptr);
// dst += src: the identity shortcut's gradient joining the main path's.
template <class T>
void accumulate(size_t count, const T* src, T* dst, cudaStream_t stream = nullptr);

}  // namespace wb::cuda
