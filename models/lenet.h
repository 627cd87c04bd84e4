// LeNet-5 models on MNIST-format images (DESIGN.md section 7).
//
//  lenet5          the 21,840-parameter network of Horovod's PyTorch MNIST example, which
//                  the Adasum paper calls LeNet-5 (Maleki et al., arXiv:2006.02924 3.7, 5.4):
//                  conv1 1->10 k5, max_pool 2, relu, conv2 10->20 k5, dropout2d 0.5,
//                  max_pool 2, relu, fc1 320->50, relu, dropout 0.5, fc2 50->10,
//                  log_softmax + NLL (mean).
//  lenet5_classic  LeCun et al. 1998's shape on 28x28 inputs padded by 2 (as the 32x32
//                  original): conv1 1->6 k5 pad 2, relu, max_pool 2, conv2 6->16 k5, relu,
//                  max_pool 2, fc1 400->120, relu, fc2 120->84, relu, fc3 84->10, 61,706
//                  parameters. ReLU + max-pool replace the paper's scaled tanh + trainable
//                  average subsampling, and a softmax/NLL head replaces the RBF output
//                  layer (the modern reading of "LeNet-5"); no dropout.
//
// Both: PyTorch tensor names/order/shapes (conv1.weight [10,1,5,5], conv1.bias, ...),
// PyTorch default initialization from the seed, the fast CPU path (models/layers_fast.h)
// for loss_grad/evaluate and the reference loops (models/layers.h) for the f64 oracle and
// the exact HVP.
#pragma once

#include <memory>
#include <string>

#include "models/layers.h"
#include "models/layers_fast.h"
#include "models/model.h"
#include "core/params.h"

namespace wb::models {

NetSpec lenet5_spec();
NetSpec lenet5_classic_spec();
// A 133-parameter net with every layer kind (conv with padding, max-pool, ReLU, dropout2d,
// linear, dropout, log-softmax NLL) on 6x6 inputs: small enough for a full Hessian; the
// kernel tests' (CPU and GPU) coverage net.
NetSpec tiny_every_layer_spec();

// Any NetSpec as a Model (lenet5, lenet5_classic, small nets in tests).
class ConvNetModel : public Model {
 public:
  explicit ConvNetModel(const NetSpec& spec);
  std::string name() const override { return net_.spec.name; }
  const std::vector<TensorInfo>& tensors() const override { return net_.tensors; }
  void init_params(std::span<float> w, uint64_t seed) const override;
  std::unique_ptr<Workspace> make_workspace(int max_batch) const override;
  size_t workspace_bytes(int max_batch) const override { return fast_.workspace_bytes(max_batch); }
  double loss_grad(std::span<const float> w, const Batch& b, std::span<float> g, Workspace& ws,
                   uint64_t noise_seed) const override;
  EvalResult evaluate(std::span<const float> w, const Batch& b, Workspace& ws) const override;
  double loss_grad_f64(std::span<const double> w, const Batch& b, std::span<double> g,
                       uint64_t noise_seed) const override;
  void hvp_f64(std::span<const double> w, std::span<const double> v, const Batch& b,
               std::span<double> hv, uint64_t noise_seed) const override;
  double flops_per_sample() const override { return net_.flops_per_sample; }
  // Partial backprop (LPP-SGD): backward stops at the stage owning first_tensor.
  double loss_grad_from(std::span<const float> w, const Batch& b, std::span<float> g,
                        Workspace& ws, uint64_t noise_seed, size_t first_tensor) const override;
  double flops_per_sample_from(size_t first_tensor) const override;

  // The float reference loops (test oracle of the fast path; bench_lenet's baseline).
  double reference_loss_grad(std::span<const float> w, const Batch& b, std::span<float> g,
                             uint64_t noise_seed) const;
  const NetInfo& net() const { return net_; }
  const FastNet& fast() const { return fast_; }

 private:
  void check_batch(const Batch& b, size_t w_size) const;
  NetInfo net_;
  FastNet fast_;
};

// Data configuration of the image models (the "model" object of an experiment).
struct LenetParams {
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  double normalize_mean = 0.1307;  // MNIST's, as Horovod's example (transforms.Normalize)
  double normalize_std = 0.3081;
  int64_t train_limit = 0;  // 0 = all samples
  int64_t test_limit = 0;
  static void describe(core::ParamSet<LenetParams>& p) {
    p.field("data_dir", &LenetParams::data_dir,
            "MNIST-format directory: {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]");
    p.field("normalize_mean", &LenetParams::normalize_mean, "x = (pixel/255 - mean) / std");
    p.field("normalize_std", &LenetParams::normalize_std, "x = (pixel/255 - mean) / std")
        .positive();
    p.field("train_limit", &LenetParams::train_limit,
            "use only the first N training samples (0 = all)")
        .min(0);
    p.field("test_limit", &LenetParams::test_limit, "use only the first N test samples (0 = all)")
        .min(0);
  }
};

// Builds the Task (model + Fashion-MNIST/MNIST train and test sets).
Task make_image_task(const NetSpec& spec, const LenetParams& p);

}  // namespace wb::models
