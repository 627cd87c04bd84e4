// gpt: a decoder-only transformer language model over bytes, GPT-2's layout with
// pre-LayerNorm blocks (Radford et al. 2019, "Language Models are Unsupervised Multitask
// Learners", section 2.3; nanoGPT's model.py, github.com/karpathy/nanoGPT):
//
//   x  = wte[token] + wpe[position]
//   x += c_proj(attn(ln_1(x)))            causal multi-head self-attention, `heads` heads
//   x += mlp.c_proj(gelu(c_fc(ln_2(x))))  4 x d_model hidden units, tanh-approximate GELU
//   (`layers` such blocks), logits = ln_f(x) wte^T (the head tied to the token embedding),
//   loss = mean next-token cross-entropy in nats over every position of every window.
//
// A sample is a window of block + 1 tokens: positions 0..block-1 are the input, 1..block the
// targets (Batch::label holds n * (block + 1) token ids). Tensor names, order and shapes are
// nanoGPT's state_dict (without the tied lm_head.weight): transformer.wte.weight [V, C],
// transformer.wpe.weight [block, C], transformer.h.L.{ln_1.weight, ln_1.bias,
// attn.c_attn.weight [3C, C], attn.c_attn.bias, attn.c_proj.weight [C, C], attn.c_proj.bias,
// ln_2.weight, ln_2.bias, mlp.c_fc.weight [4C, C], mlp.c_fc.bias, mlp.c_proj.weight [C, 4C],
// mlp.c_proj.bias}, transformer.ln_f.weight, transformer.ln_f.bias.
//
// Initialization: nanoGPT's GPT._init_weights (after GPT-2): every Linear and Embedding
// weight ~ N(0, 0.02), biases 0, LayerNorm weight 1 and bias 0, and the residual
// projections (attn.c_proj.weight, mlp.c_proj.weight) ~ N(0, 0.02 / sqrt(2 * layers)) (GPT-2
// paper section 2.3: "scale the weights of residual layers at initialization by 1/sqrt(N)").
// Dropout is 0 (nanoGPT's shakespeare-char CPU configuration; the reference has none).
//
// Evaluation sums the loss over every predicted token: EvalResult::count is the number of
// tokens, so the run's test loss is nats per token (bits per character = loss / ln 2).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "models/dual.h"
#include "models/gpt_layout.h"
#include "models/model.h"

namespace wb::models {

// Activations of one pass over n windows (the reference keeps all of them for the backward).
template <class T>
struct GptActs {
  struct Layer {
    std::vector<T> xin, ln1_xhat, ln1_rstd, a, qkv, P, y, xmid, ln2_xhat, ln2_rstd, m, h, gact;
  };
  std::vector<Layer> layer;
  std::vector<T> xL, lnf_xhat, lnf_rstd, xf, logits_row;
  std::vector<T> dx, dxf, dtmp, dqkv, dh, dgact;
  std::vector<int32_t> tgt;
  int n = 0;
  void resize(const GptConfig& c, int n_windows);
};

// Reference pass over n windows of c.block + 1 tokens. Returns the MEAN loss over the
// n * block predictions; if g is not null it receives the gradient (overwritten). eval
// (optional) receives the loss sum and the token count.
template <class T>
T gpt_reference_pass(const GptConfig& c, const std::vector<TensorInfo>& t, const T* w,
                     const int32_t* tokens, int n, T* g, GptActs<T>& acts,
                     EvalResult* eval = nullptr);

class GptFast;  // models/transformer_fast.h

class GptModel final : public Model {
 public:
  explicit GptModel(const GptConfig& c);
  ~GptModel() override;
  std::string name() const override { return "gpt"; }
  const std::vector<TensorInfo>& tensors() const override { return layout_; }
  void init_params(std::span<float> w, uint64_t seed) const override;
  std::unique_ptr<Workspace> make_workspace(int max_batch) const override;
  size_t workspace_bytes(int max_batch) const override;
  double loss_grad(std::span<const float> w, const Batch& b, std::span<float> g, Workspace& ws,
                   uint64_t noise_seed) const override;
  EvalResult evaluate(std::span<const float> w, const Batch& b, Workspace& ws) const override;
  double loss_grad_f64(std::span<const double> w, const Batch& b, std::span<double> g,
                       uint64_t noise_seed) const override;
  void hvp_f64(std::span<const double> w, std::span<const double> v, const Batch& b,
               std::span<double> hv, uint64_t noise_seed) const override;
  // Per window: 2 x (forward + backward multiply-adds), the causal attention counted as
  // the t + 1 keys position t attends to.
  double flops_per_sample() const override;
  int64_t tokens_per_sample() const override { return c_.block; }

  // The float reference loops (the oracle of the fast path; bench_gpt's baseline).
  double reference_loss_grad(std::span<const float> w, const Batch& b, std::span<float> g) const;
  const GptConfig& config() const { return c_; }
  // Whether loss_grad and evaluate run the fast kernels (head_dim a multiple of the vector
  // length) rather than the float reference loops.
  bool has_fast_path() const { return fast_ != nullptr; }

 private:
  void check_batch(const Batch& b, size_t w_size) const;
  GptConfig c_;
  std::vector<TensorInfo> layout_;
  std::unique_ptr<GptFast> fast_;
};

// Data configuration and shape of the `gpt` model (the "model" object of an experiment).
struct GptParams {
  int layers = 4;
  int heads = 4;
  int d_model = 128;
  int block = 64;
  int vocab = 0;              // 0: the distinct bytes of the text; 256: every byte value
  std::string data_path;      // "" = the King James Bible of Debian's bible-kjv
  int64_t eval_windows = 0;   // 0: every validation window; N: the first N
  static void describe(core::ParamSet<GptParams>& p);
};

}  // namespace wb::models
