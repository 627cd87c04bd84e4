// sparse_mlp: the SLIDE / HeteroGPU extreme-classification network
// (Ma et al., arXiv:2110.07029, section 5.1 "Datasets and Model"; DESIGN.md
// section 7): CSR input -> hidden layers (ReLU) -> softmax over the L labels, cross-entropy
// against the multi-label target distribution t_l = 1/|y| for l in y.
//
//   loss_i = logsumexp(z_i) - (1/|y_i|) sum_{l in y_i} z_il        (z_i: logits of row i)
//   dL/dz_i = (softmax(z_i) - t_i) / m                              (m: labelled rows)
//
// The loss is the mean over the rows that have labels (a row without labels has no target
// distribution: it adds no loss and no gradient). Evaluation: `correct` is precision@k
// summed over rows, sum_i |top_k(z_i) ∩ y_i| / k, with k = `eval_k` (default 1, so the
// runner's test_accuracy is precision@1: the top-1 prediction is in the label set).
// Rows without labels count with precision 0, as in the repository's evaluation code.
// Other k: set model.eval_k (a sweep key) or call SparseMlp::evaluate_at_k.
//
// Tensors (row-major): fc0.weight [F][h1] -- ONE ROW PER INPUT FEATURE, so the sparse
// product x W touches only the rows of the non-zeros (forward: o += v W[f,:]; backward:
// dW[f,:] += v dz) -- then fc0.bias [h1], fc1.weight [h1][h2], ..., out.weight [h][L],
// out.bias [L]. (PyTorch's nn.Linear stores [out][in]; ours is its transpose.)
//
// Cost model: flops_for_batch() counts the batch's non-zeros, so a batch of long rows
// takes longer on the simulated clock (the paper's second source of heterogeneity):
//   4 nnz h1 (forward + weight gradient of the sparse layer)
//   + 6 n sum_j h_j h_{j+1} (dense layers and output: forward, weight and input gradients)
//   + 5 n L (softmax and loss).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "models/model.h"

namespace wb::models {

// |top_k(z) ∩ y| / k for one row's logits z[0..L) and labels y[0..ny); ties go to the lower
// label id; k <= 16. (Shared with the GPU model, cuda/sparse_model_cuda.cpp.)
template <class S>
double precision_at_k(const S* z, int64_t L, const int32_t* y, int64_t ny, int k);

class SparseMlp final : public Model {
 public:
  // features F, hidden sizes (may be empty: softmax regression), labels L; mean_nnz is the
  // training set's (flops_per_sample); eval_k: precision@k reported by evaluate().
  SparseMlp(int64_t features, std::vector<int64_t> hidden, int64_t labels, double mean_nnz,
            int eval_k = 1);
  std::string name() const override { return "sparse_mlp"; }
  const std::vector<TensorInfo>& tensors() const override { return layout_; }
  void init_params(std::span<float> w, uint64_t seed) const override;
  std::unique_ptr<Workspace> make_workspace(int max_batch) const override;
  size_t workspace_bytes(int max_batch) const override;  // what make_workspace allocates
  double loss_grad(std::span<const float> w, const Batch& b, std::span<float> g, Workspace& ws,
                   uint64_t noise_seed) const override;
  EvalResult evaluate(std::span<const float> w, const Batch& b, Workspace& ws) const override;
  // correct = sum over rows of |top_k ∩ y| / k (precision@k x rows).
  EvalResult evaluate_at_k(std::span<const float> w, const Batch& b, Workspace& ws, int k) const;
  double loss_grad_f64(std::span<const double> w, const Batch& b, std::span<double> g,
                       uint64_t noise_seed) const override;
  double flops_per_sample() const override;
  double flops_for_batch(const Batch& b) const override;

  int64_t features() const { return dims_.front(); }
  int eval_k() const { return eval_k_; }
  int64_t labels() const { return dims_.back(); }

  template <class S>
  struct Scratch;  // forward/backward buffers (sparse_mlp.cpp)

 private:
  template <class S>
  double pass(const S* w, const Batch& b, S* g, const Scratch<S>& s, EvalResult* ev,
              int k) const;
  double flops(double nnz, double n) const;

  std::vector<int64_t> dims_;  // F, h1, ..., L
  std::vector<TensorInfo> layout_;
  double mean_nnz_;
  int eval_k_;
};

}  // namespace wb::models
