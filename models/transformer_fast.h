// Fast CPU path of the char-level GPT (models/gpt.h): what GptModel::loss_grad and evaluate
// run when the head width is a multiple of the vector length (gpt_fast_fits); the reference
// loops (models/transformer_layers.h) stay the oracle and tests/unit/test_gpt.cpp compares
// the two. One thread, float, no allocation per step (one buffer sized by make_workspace).
//
// Design:
//  - Every product is the image models' broadcast GEMM (models/layers_fast.h,
//    fast::gemm_bcast: C rows = A scalars broadcast x B row vectors, register tiles of 6 rows
//    x up to 4 vectors):
//      forward  y = x W^T + b      B = W^T, packed once per step (12 C^2 floats a layer);
//                                  C initialized with the bias (and the residual input, so
//                                  the residual add is free)
//      dgrad    dx = dy W          B = W as stored ([out][in] rows)
//      wgrad    dW += dy^T x       A = dy read transposed through its strides, B = x rows
//  - Attention, per sequence and head: S = Q K^T (K^T packed, rows padded to whole
//    vectors), a causal softmax over each row's first t + 1 entries (vectorized exp, the
//    rest zeroed), Y = P V; backward dP = dY V^T, dS = P (dP - rowsum(P dP)) / sqrt(hd),
//    dQ = dS K, dK = dS^T Q, dV = P^T dY, all gemm_bcast on strided views of qkv (no
//    copies of Q, K, V besides the two packed transposes). The causal zeros of P are
//    multiplied (at T = 64 the attention is ~4% of the multiply-adds).
//  - GELU (tanh form) and the softmaxes use a vectorized exp (Cephes' expf polynomial,
//    relative error ~1e-7): std::tanh per element costs as much as the matrix products at
//    the shakespeare-char shape.
//  - The tied head: logits = x_f wte^T over the vocabulary padded to whole vectors (zero
//    columns), the softmax cross-entropy and its gradient in place, then dx_f = dlogits wte
//    and dwte += dlogits^T x_f.
//  - LayerNorm runs the reference loops in float (a few percent of the step).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "models/gpt_layout.h"
#include "models/layers_fast.h"

namespace wb::models {

// The fast path needs head_dim (hence d_model) to be a multiple of the vector length.
bool gpt_fast_fits(const GptConfig& c);

struct GptFastLayout;  // offsets of every array in the buffer (transformer_fast.cpp)
struct GptFastWorkspace {
  int max_batch = 0;
  fast::Buffer buf;  // every activation, gradient scratch and packed weight, carved by offset
  std::shared_ptr<const GptFastLayout> layout;
};

class GptFast {
 public:
  GptFast(const GptConfig& c, const std::vector<TensorInfo>& t);
  size_t workspace_floats(int max_batch) const;
  std::unique_ptr<GptFastWorkspace> make_workspace(int max_batch) const;
  // Mean loss over the n * block predictions; g (overwritten) when not null. eval
  // (optional): the loss sum and token count.
  double pass(const float* w, const int32_t* tokens, int n, float* g, GptFastWorkspace& ws,
              EvalResult* eval = nullptr) const;

 private:
  GptConfig c_;
  std::vector<TensorInfo> t_;
  int Tp_ = 0, Vp_ = 0;
};

// Vectorized pieces, exposed for the kernel tests.
namespace tfast {
// y[i] = exp(x[i]) for i < n (n any; Cephes expf: relative error ~1e-7 on [-87, 88]).
void exp_inplace(float* x, size_t n);
void gelu_forward(size_t n, const float* x, float* y);
// dx = dy * gelu'(x); dx may alias dy.
void gelu_backward(size_t n, const float* x, const float* dy, float* dx);
}  // namespace tfast

}  // namespace wb::models
