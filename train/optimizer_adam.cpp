// Adam (Kingma & Ba 2015, Algorithm 1) with bias correction, and AdamW (decoupled weight
// decay, Loshchilov & Hutter 2019, Algorithm 2), with torch.optim.Adam / AdamW (1.13)
// semantics, evaluated in the same order so the golden test against torch
// (tests/reference/torch_optimizers.py) agrees to float rounding:
//   t <- t + 1
//   g' = g + wd * w                  (weight_decay_mode = coupled: L2, torch Adam)
//   w <- w * (1 - lr * wd)           (weight_decay_mode = decoupled: torch AdamW)
//   m <- beta1 m + (1 - beta1) g'
//   v <- beta2 v + (1 - beta2) g'^2
//   w <- w - (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// The bias corrections 1 - beta^t are computed in double from the integer t.
//
// Registered twice: `adam` (coupled decay, default wd 0, torch.optim.Adam defaults) and
// `adamw` (decoupled decay, default wd 0.01, torch.optim.AdamW defaults). Both accept
// either weight_decay_mode; the names only pick the defaults.
//
// state() = [t, m[0..n), v[0..n)].
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "train/optimizer.h"

namespace wb::train {
namespace {

struct AdamConfig {
  double beta1, beta2, eps, weight_decay;
  bool decoupled;
};

// Two parameter structs that differ only in their defaults (a ParamSet binds member
// pointers of its own struct, so the declaration is shared through a template).
template <bool kDecoupledDefault>
struct AdamParamsT {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = kDecoupledDefault ? 0.01 : 0.0;
  std::string weight_decay_mode = kDecoupledDefault ? "decoupled" : "coupled";
  static void describe(core::ParamSet<AdamParamsT>& p) {
    p.field("beta1", &AdamParamsT::beta1, "first-moment decay (Kingma & Ba, Alg. 1)").min(0).max(1, false);
    p.field("beta2", &AdamParamsT::beta2, "second-moment decay").min(0).max(1, false);
    p.field("eps", &AdamParamsT::eps, "added to sqrt(v_hat) in the denominator").positive();
    p.field("weight_decay", &AdamParamsT::weight_decay, "weight decay factor").min(0);
    p.field("weight_decay_mode", &AdamParamsT::weight_decay_mode,
            "coupled: wd*w added to the gradient (Adam + L2); decoupled: w *= 1 - lr*wd (AdamW)")
        .one_of({"coupled", "decoupled"});
  }
  AdamConfig config() const {
    return {beta1, beta2, eps, weight_decay, weight_decay_mode == "decoupled"};
  }
};
using AdamParams = AdamParamsT<false>;
using AdamWParams = AdamParamsT<true>;

class Adam final : public Optimizer {
 public:
  Adam(const AdamParams& p, const OptimizerEnv& env) : Adam(p.config(), env) {}
  Adam(const AdamWParams& p, const OptimizerEnv& env) : Adam(p.config(), env) {}
  Adam(const AdamConfig& c, const OptimizerEnv& env)
      : c_(c), m_(env.num_params, 0.f), v_(env.num_params, 0.f) {}

  void step(std::span<float> w, std::span<const float> g, double lr) override {
    ++t_;
    const double bc1 = 1.0 - std::pow(c_.beta1, static_cast<double>(t_));
    const double bc2 = 1.0 - std::pow(c_.beta2, static_cast<double>(t_));
    const float b1 = static_cast<float>(c_.beta1), one_b1 = static_cast<float>(1.0 - c_.beta1),
                b2 = static_cast<float>(c_.beta2), one_b2 = static_cast<float>(1.0 - c_.beta2),
                neg_step = static_cast<float>(-lr / bc1),
                bc2_sqrt = static_cast<float>(std::sqrt(bc2)), eps = static_cast<float>(c_.eps);
    const float wd = c_.decoupled ? 0.f : static_cast<float>(c_.weight_decay);
    const float shrink = static_cast<float>(1.0 - lr * c_.weight_decay);
    const bool do_shrink = c_.decoupled && c_.weight_decay != 0;
    float* m = m_.data();
    float* v = v_.data();
    const size_t n = w.size();
    for (size_t i = 0; i < n; ++i) {
      const float gi = wd != 0.f ? g[i] + wd * w[i] : g[i];
      if (do_shrink) w[i] *= shrink;
      m[i] = m[i] * b1 + one_b1 * gi;
      v[i] = v[i] * b2 + one_b2 * gi * gi;
      const float denom = std::sqrt(v[i]) / bc2_sqrt + eps;
      w[i] += neg_step * m[i] / denom;
    }
  }

  std::vector<float> state() const override { return pack_moments(t_, m_, v_); }
  void set_state(std::span<const float> s) override { unpack_moments(s, t_, m_, v_, "adam"); }

 private:
  AdamConfig c_;
  std::vector<float> m_, v_;
  int64_t t_ = 0;
};

}  // namespace

WB_REGISTER_OPTIMIZER("adam", Adam, AdamParams,
                      "Adam with bias correction; weight decay coupled (L2, default) or decoupled "
                      "(torch.optim.Adam semantics)");
WB_REGISTER_OPTIMIZER("adamw", Adam, AdamWParams,
                      "AdamW: Adam with decoupled weight decay w *= 1 - lr*wd (torch.optim.AdamW "
                      "defaults, wd 0.01)");

}  // namespace wb::train
