// The CIFAR ResNet family of He et al. 2016 ("Deep Residual Learning for Image Recognition",
// section 4.2): depth 6n+2 = a 3x3 stem convolution, three stages of n basic blocks at
// widths w, 2w, 4w (the first block of stages 2 and 3 halves the feature map by stride 2),
// global average pooling and a linear classifier; log-softmax + NLL (mean).
//
//   basic block:  out = relu(norm2(conv2(relu(norm1(conv1(x))))) + shortcut(x))
//   shortcut:     identity where shapes agree; at a stage change option A (strided
//                 subsampling + zero channels, the paper's CIFAR choice) or B (1x1 conv
//                 with stride 2 + norm)
//   norm:         batch (BatchNorm, running statistics as per-worker state), group (GroupNorm,
//                 `groups` groups), none (the convolutions get a bias)
//
// Tensors follow the common PyTorch CIFAR ResNet module names and order: conv1.weight,
// bn1.weight, bn1.bias, layer1.0.conv1.weight, layer1.0.bn1.weight, ..., layer2.0.shortcut.0
// .weight (option B), layer2.0.shortcut.1.weight/bias, ..., linear.weight, linear.bias
// (gn* for group norm; conv*.bias for norm none). Initialization: He et al. 2015's normal
// (std sqrt(2 / fan_in)) for the convolutions, as the paper's section 3.4 cites; PyTorch's
// default U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for the linear layer; gamma 1, beta 0.
//
// State (Model::state_size): for norm batch, every BatchNorm layer's running mean and
// running variance in tensor order ([mean C, var C] per layer), initially 0 and 1.
//
// Augmentation (augment: crop_flip): the CIFAR recipe of the paper's section 4.2 -- pad 4
// pixels with zeros, take a random crop of the original size, flip horizontally with
// probability 1/2 -- drawn from Rng(noise_seed): a worker's pass number decides it, so it is
// the same at any rank count and the f64 oracle / HVP replay the same crop.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/params.h"
#include "models/model.h"
#include "models/resnet_layers.h"

namespace wb::models {

enum class NormKind { kBatch, kGroup, kNone };

struct ResnetConfig {
  int depth = 20, width = 16;
  NormKind norm = NormKind::kBatch;
  bool shortcut_b = false;
  int groups = 8;  // GroupNorm groups (divides every stage width)
  int c = 3, h = 32, w = 32, classes = 10;
  bool crop_flip = false;
  float fill = 0.f;  // the normalized value of a zero pixel (the crop's padding)
};

class ResnetWorkspace;

class ResnetModel : public Model {
 public:
  explicit ResnetModel(const ResnetConfig& cfg);
  std::string name() const override { return "resnet"; }
  const std::vector<TensorInfo>& tensors() const override { return tensors_; }
  void init_params(std::span<float> w, uint64_t seed) const override;
  std::unique_ptr<Workspace> make_workspace(int max_batch) const override;
  size_t workspace_bytes(int max_batch) const override;
  double loss_grad(std::span<const float> w, const Batch& b, std::span<float> g, Workspace& ws,
                   uint64_t noise_seed) const override;
  // Without running statistics, normalization uses the statistics of the evaluated batch.
  EvalResult evaluate(std::span<const float> w, const Batch& b, Workspace& ws) const override;
  double loss_grad_f64(std::span<const double> w, const Batch& b, std::span<double> g,
                       uint64_t noise_seed) const override;
  void hvp_f64(std::span<const double> w, std::span<const double> v, const Batch& b,
               std::span<double> hv, uint64_t noise_seed) const override;
  double flops_per_sample() const override { return flops_per_sample_; }

  size_t state_size() const override { return state_size_; }
  void init_state(std::span<float> s) const override;
  double loss_grad_state(std::span<const float> w, const Batch& b, std::span<float> g,
                         Workspace& ws, uint64_t noise_seed, std::span<float> state) const override;
  EvalResult evaluate_state(std::span<const float> w, std::span<const float> state, const Batch& b,
                            Workspace& ws) const override;

  // The float reference loops on the same pass (the fast kernels' oracle).
  double reference_loss_grad(std::span<const float> w, const Batch& b, std::span<float> g,
                             uint64_t noise_seed, std::span<float> state = {}) const;
  const ResnetConfig& config() const { return cfg_; }
  // The input the pass sees: b's images, cropped and flipped when augment is crop_flip.
  void augment(const Batch& b, uint64_t noise_seed, std::vector<float>& out) const;

  // The plan (public for the kernels and tests).
  struct ConvL {
    ConvGeom g;
    size_t w_off = 0, b_off = SIZE_MAX;  // b_off: norm none only
  };
  struct NormL {
    int c = 0, hw = 0;
    size_t g_off = 0, b_off = 0, state_off = 0;  // state_off: batch norm only
  };
  struct Block {
    ConvL c1, c2, sc;
    NormL n1, n2, scn;
    int shortcut = 0;  // 0 identity, 1 option A, 2 option B
  };
  ConvL stem_;
  NormL stem_norm_;
  std::vector<Block> blocks_;
  int feat_c_ = 0, feat_hw_ = 0;
  size_t lin_w_ = 0, lin_b_ = 0;

 private:
  template <class T, class K>
  friend struct ResnetPass;
  ResnetConfig cfg_;
  std::vector<TensorInfo> tensors_;
  size_t state_size_ = 0;
  double flops_per_sample_ = 0;
};

// The data configuration (the "model" object of an experiment).
struct ResnetParams {
  int64_t depth = 20;
  int64_t width = 16;
  std::string norm = "batch";
  std::string shortcut = "A";
  int64_t groups = 8;
  std::string dataset = "idx";
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  int64_t pad = 2;
  double normalize_mean = 0.2860;  // Fashion-MNIST's pixel mean and std
  double normalize_std = 0.3530;
  std::string augment = "none";
  int64_t train_limit = 0;
  int64_t test_limit = 0;
  static void describe(core::ParamSet<ResnetParams>& p);
};

// A CIFAR-10 binary directory: data_batch_1..5.bin, test_batch.bin, records of 1 label byte +
// 3,072 pixel bytes (3 x 32 x 32). limit > 0 keeps the first `limit` samples of each split.
// UserError naming the file and byte offset on a wrong length or a label outside [0, 10).
struct ImageData;
struct CifarSplits {
  std::shared_ptr<const ImageData> train, test;
};
CifarSplits load_cifar10_dir(const std::string& dir, uint64_t train_limit, uint64_t test_limit);
// A copy of d with `pad` zero pixels around every image.
std::shared_ptr<const ImageData> pad_images(const ImageData& d, int pad);

Task make_resnet_task(const ResnetParams& p);

}  // namespace wb::models
