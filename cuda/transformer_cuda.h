// Layers of the char-level GPT (models/gpt.h) on the GPU: the device twins of the reference
// loops in models/transformer_layers.h (namespace models::tref), with the same argument lists
// (device pointers; a stream last) and the same semantics (PyTorch 1.13 / nanoGPT, see the
// header of transformer_layers.h). The CPU loops are the oracle:
// tests/cuda/test_transformer_cuda.cpp compares every function here with its tref twin, in
// double (to ~1e-12: the same algorithm) and in float (llm.c-style atol + rtol*|ref|).
//
// Kernels are the readable baseline (llm.c's "dev/cuda" version 1 spirit): one thread per
// output element or one warp per row, sums in a fixed order (deterministic: no atomics, so
// a GPU run repeats itself bit for bit). The linear layers are cuda/linear_cuda.cu's
// (cuda/layers_cuda.h: linear_forward / linear_backward, dW and db OVERWRITTEN, where the
// reference accumulates: the GPT pass zeroes the gradient once and gives each weight one
// product, so both read the same).
//
// Scalar types: float (training) and double (oracle), instantiated in transformer_cuda.cu.
// No DualD: the exact HVP of a "device": "cuda" run stays on the CPU reference
// (train::DeviceModel::hvp_f64), and leaving it out halves this unit's nvcc time.
//
// Parameter gradients ACCUMULATE (+=) as in the reference; data gradients are overwritten
// unless the name says "add". Token ids must lie in [0, V): the caller checks on the host
// (a kernel cannot report a bad id).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace wb::cuda {

// ---- embedding (token + learned position), GPT-2's wte / wpe ---------------------------
// tokens: n windows of Tn + 1 ids; x[s*Tn + p, :] = wte[tokens[s][p]] + wpe[p] for p < Tn.
// tgt (optional): tgt[s*Tn + p] = tokens[s][p + 1], the next-token targets.
template <class T>
void embedding_forward(int n, int Tn, int C, const int32_t* tokens, const T* wte, const T* wpe,
                       T* x, int32_t* tgt, cudaStream_t stream = nullptr);
// The scatter-add backward: dwte[v] += sum of dx rows whose token is v, dwpe[p] += sum over
// windows of dx at position p, both in row order (the reference's order: bit-identical sums).
template <class T>
void embedding_backward(int n, int Tn, int C, int V, const int32_t* tokens, const T* dx, T* dwte,
                        T* dwpe, cudaStream_t stream = nullptr);

// ---- LayerNorm (eps 1e-5, biased variance) --------------------------------------------
// rows x C: y = xhat * g + b; xhat and rstd kept for the backward.
template <class T>
void layernorm_forward(size_t rows, int C, const T* x, const T* g, const T* b, T* y, T* xhat,
                       T* rstd, cudaStream_t stream = nullptr);
// dx_add += dL/dx; dg, db accumulate.
template <class T>
void layernorm_backward(size_t rows, int C, const T* xhat, const T* rstd, const T* g, const T* dy,
                        T* dx_add, T* dg, T* db, cudaStream_t stream = nullptr);

// ---- GELU, tanh approximation (GPT-2's; Hendrycks & Gimpel arXiv:1606.08415 section 2) --
template <class T>
void gelu_forward(size_t count, const T* x, T* y, cudaStream_t stream = nullptr);
// dx OVERWRITTEN (may alias dy).
template <class T>
void gelu_backward(size_t count, const T* x, const T* dy, T* dx, cudaStream_t stream = nullptr);

// a += b, count elements (the residual connections).
template <class T>
void residual_add(size_t count, T* a, const T* b, cudaStream_t stream = nullptr);

// ---- causal multi-head self-attention (nanoGPT's CausalSelfAttention, no dropout) -------
// qkv [n*Tn, 3C] (q, k, v the three C-wide column blocks, head h the columns
// [h*hd, (h+1)*hd) of each); P [n, H, Tn, Tn] receives the softmax (zero above the diagonal);
// y [n*Tn, C].
template <class T>
void attention_forward(int n, int Tn, int C, int H, const T* qkv, T* P, T* y,
                       cudaStream_t stream = nullptr);
// dqkv OVERWRITTEN. dS [n, H, Tn, Tn] is scratch (the score gradients: written, then read).
template <class T>
void attention_backward(int n, int Tn, int C, int H, const T* qkv, const T* P, const T* dy, T* dqkv,
                        T* dS, cudaStream_t stream = nullptr);

// ---- tied head + mean cross-entropy --------------------------------------------------
// logits [rows, V] = xf wte^T (scratch, then the logit gradient in place when dxf is given);
// *loss_sum (device, one T) = the SUM of the row losses (lse - logit[target]), in row order.
// When dxf is not null: dlogits = grad_scale * (softmax - onehot), dxf = dlogits wte
// (OVERWRITTEN) and dwte += dlogits^T xf. Asynchronous.
template <class T>
void tied_head_ce(size_t rows, int C, int V, const T* xf, const T* wte, const int32_t* target,
                  T* logits, T* dxf, T* dwte, double grad_scale, T* loss_sum,
                  cudaStream_t stream = nullptr);

}  // namespace wb::cuda
