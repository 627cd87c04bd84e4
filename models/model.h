// Models: stateless descriptions of a network + its data. The parameters of a model
// replica live in the logical worker (train/worker.h) as ONE contiguous buffer;
// tensors() names the views into it (name, offset, size, shape) so collectives can
// apply per tensor (Adasum per layer) and HDF5 can label per-tensor metrics.
//
// Contract for implementations:
//  - loss_grad() is the hot path: float, no allocation (scratch lives in the
//    Workspace made by make_workspace(), one per executing thread, shared by the workers
//    whose passes it runs: a pass must not read what an earlier pass left in it).
//  - noise_seed selects the stochastic parts of a training pass (dropout masks); the
//    same seed gives the same masks, so the f64 oracle and HVP can reproduce a pass.
//  - The *_f64 entry points are the precision oracle: double-precision gradient and
//    exact Hessian-vector product (forward-over-reverse). They may allocate.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/params.h"
#include "core/registry.h"

namespace wb::models {

struct TensorInfo {
  std::string name;            // e.g. "conv1.weight"
  size_t offset = 0;           // into the flat parameter buffer
  size_t size = 0;             // number of scalars
  std::vector<int64_t> shape;  // PyTorch order, e.g. {10, 1, 5, 5}
};

// Build tensor infos with consecutive offsets from (name, shape) pairs.
std::vector<TensorInfo> make_layout(
    const std::vector<std::pair<std::string, std::vector<int64_t>>>& tensors);
size_t layout_size(const std::vector<TensorInfo>& t);

// One mini-batch. Which fields are used depends on the model; capacity is reserved
// once (Dataset::reserve) so filling a batch does not allocate.
struct Batch {
  int n = 0;                   // samples in the batch
  std::vector<float> x;        // dense inputs, n x input_dim (images: n x C x H x W)
  std::vector<float> y;        // regression targets (toys), n x target_dim
  std::vector<int32_t> label;  // class labels, n
  // Sparse inputs (CSR) and multi-labels (sparse_mlp).
  std::vector<int64_t> x_ptr;
  std::vector<int32_t> x_idx;
  std::vector<float> x_val;
  std::vector<int64_t> y_ptr;
  std::vector<int32_t> y_idx;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual size_t size() const = 0;
  // Reserve capacity in b for batches of up to max_batch samples.
  virtual void reserve(Batch& b, int max_batch) const = 0;
  // Fill b with samples idx[0..n). No allocation when b was reserved for n.
  virtual void gather(std::span<const uint32_t> idx, Batch& b) const = 0;
  // Host bytes the samples occupy (the memory estimate). Default 0: negligible.
  virtual size_t bytes() const { return 0; }
  // The class of each sample, for the label-aware data partitions (train/partition.h:
  // dirichlet, shards). Empty: the samples have no single class (the toys' regression
  // targets, gpt's text windows, sparse_mlp's multi-labels).
  virtual std::span<const int32_t> class_labels() const { return {}; }
};

class Workspace {
 public:
  virtual ~Workspace() = default;
};

struct EvalResult {
  double loss_sum = 0;   // sum over samples of the loss
  double correct = 0;    // number of correct predictions (classification)
  int64_t count = 0;     // samples evaluated
  bool has_accuracy = false;
  void add(const EvalResult& o) {
    loss_sum += o.loss_sum;
    correct += o.correct;
    count += o.count;
    has_accuracy = has_accuracy || o.has_accuracy;
  }
};

class Model {
 public:
  virtual ~Model() = default;
  virtual std::string name() const = 0;
  virtual const std::vector<TensorInfo>& tensors() const = 0;
  size_t num_params() const { return layout_size(tensors()); }

  // Initial parameters from the seed (same seed -> same model on every worker/rank).
  virtual void init_params(std::span<float> w, uint64_t seed) const = 0;
  virtual std::unique_ptr<Workspace> make_workspace(int max_batch) const = 0;
  // Host bytes make_workspace(max_batch) allocates, without allocating (the memory estimate
  // of `workbench run --dry-run` and --max-memory-gb). Default 0: negligible scratch.
  virtual size_t workspace_bytes(int /*max_batch*/) const { return 0; }

  // Training pass: returns the mean loss over the batch and OVERWRITES g with its
  // gradient w.r.t. w. Hot path: must not allocate.
  virtual double loss_grad(std::span<const float> w, const Batch& b, std::span<float> g,
                           Workspace& ws, uint64_t noise_seed) const = 0;
  // Evaluation pass (no dropout): sums, so shards can be added up.
  virtual EvalResult evaluate(std::span<const float> w, const Batch& b, Workspace& ws) const = 0;

  // Double-precision oracle (tests, diagnostics). Same semantics as loss_grad.
  virtual double loss_grad_f64(std::span<const double> w, const Batch& b, std::span<double> g,
                               uint64_t noise_seed) const;
  // Exact Hessian-vector product of the mean loss at w on batch b: hv = H(w) v.
  virtual void hvp_f64(std::span<const double> w, std::span<const double> v, const Batch& b,
                       std::span<double> hv, uint64_t noise_seed) const;

  // Per-logical-worker state that is not a parameter (BatchNorm's running statistics): the
  // worker owns state_size() floats, set by init_state; training passes that carry it update
  // it (loss_grad_state), evaluation reads it (evaluate_state). Models without state keep
  // the defaults: no state, and the state-carrying calls are loss_grad / evaluate.
  virtual size_t state_size() const { return 0; }
  virtual void init_state(std::span<float> /*state*/) const {}
  virtual double loss_grad_state(std::span<const float> w, const Batch& b, std::span<float> g,
                                 Workspace& ws, uint64_t noise_seed,
                                 std::span<float> /*state*/) const {
    return loss_grad(w, b, g, ws, noise_seed);
  }
  virtual EvalResult evaluate_state(std::span<const float> w, std::span<const float> /*state*/,
                                    const Batch& b, Workspace& ws) const {
    return evaluate(w, b, ws);
  }

  // Forward+backward floating point operations per sample (simulated-clock cost model).
  virtual double flops_per_sample() const = 0;
  // Predicted tokens per sample of a sequence model (gpt: a window of block + 1 tokens
  // predicts block of them), the unit a language model's data is counted in (the run
  // summary's `tokens`); 0: not a sequence model.
  virtual int64_t tokens_per_sample() const { return 0; }
  // Forward+backward FLOPs of one concrete batch. Models whose cost depends on the data
  // override it: sparse inputs cost in proportion to their non-zeros, the Adaptive SGD
  // paper's second source of heterogeneity (Ma et al., arXiv:2110.07029,
  // section 1). Default: a fixed cost per sample.
  virtual double flops_for_batch(const Batch& b) const { return flops_per_sample() * b.n; }

  // Partial backpropagation (LPP-SGD, Chatterjee et al., arXiv:2203.06638 section 3,
  // Algorithm 1 line 5: "compute a partial minibatch stochastic gradient w.r.t. the block"):
  // the same training pass as loss_grad (same loss, same dropout masks for the same
  // noise_seed), but only the gradients of tensors first_tensor.. are needed, so backprop
  // may stop once it has produced them. On return g holds the gradient of tensors
  // >= first_tensor (identical to loss_grad's) and ZERO for the tensors before it.
  // The default runs the full loss_grad and zeroes the prefix (correct, no saving); a
  // model overrides it to stop early (the saving LPP-SGD is about). Hot path: no allocation.
  virtual double loss_grad_from(std::span<const float> w, const Batch& b, std::span<float> g,
                                Workspace& ws, uint64_t noise_seed, size_t first_tensor) const;
  // Cost model of loss_grad_from per sample (simulated clock). The default is a
  // model-agnostic estimate: forward = 1/3 of flops_per_sample(), backward = 2/3 attributed
  // to tensors in proportion to their parameter count; a pass from first_tensor pays the
  // backward share of tensors >= first_tensor. Models that know their per-layer cost
  // override it (first_tensor = 0 must give flops_per_sample()).
  virtual double flops_per_sample_from(size_t first_tensor) const;
};

// Full Hessian (row-major n x n) by n HVPs with unit vectors; refuses models with more
// than max_params parameters (it is O(n^2) memory and O(n) passes).
std::vector<double> hessian_f64(const Model& m, std::span<const double> w, const Batch& b,
                                uint64_t noise_seed, size_t max_params = 4096);

// A model with its data: what a run trains on.
struct Task {
  std::unique_ptr<Model> model;
  std::shared_ptr<const Dataset> train;
  std::shared_ptr<const Dataset> test;  // may be null (no evaluation)
};

// Models register a factory Task(const Params&, uint64_t data_seed) through
// WB_REGISTER_MODEL. The factory loads or generates the data (UserError on bad data).
class TaskMaker {
 public:
  virtual ~TaskMaker() = default;
  virtual Task make() = 0;
};
using ModelRegistry = core::Registry<TaskMaker, uint64_t /*data_seed*/>;
ModelRegistry& model_registry();

}  // namespace wb::models

// WB_REGISTER_MODEL("lenet5", LenetMaker, LenetParams, "doc"): LenetMaker(const LenetParams&,
// uint64_t data_seed) : TaskMaker, its make() builds the Task.
#define WB_REGISTER_MODEL(NAME, MAKER, PARAMS, DOC) \
  WB_REGISTER(::wb::models::model_registry, NAME, MAKER, PARAMS, DOC)
