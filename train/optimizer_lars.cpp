// LARS (You, Gitman & Ginsburg 2017, "Large Batch Training of Convolutional Networks",
// Algorithm 1): momentum SGD with a layer-wise ("local") learning rate. The LPP paper's
// Table 9 baselines (Chatterjee et al., arXiv:2203.06638) use it with eta = 0.001. For each
// tensor l (OptimizerEnv::tensors; the whole vector when there are none):
//   lambda_l = eta * ||w_l|| / (||g_l|| + wd * ||w_l|| + eps)     (norms in double)
//   v_l <- momentum * v_l + lr * lambda_l * (g_l + wd * w_l)
//   w_l <- w_l - v_l
// with v = 0 initially. As in the paper, the global lr sits inside the momentum
// buffer (a schedule change affects the new contribution only).
// Clamp (documented choice): lambda_l = 1 when ||w_l|| = 0 or ||g_l|| + wd ||w_l|| = 0,
// so a zero-initialized tensor (a bias) gets plain momentum SGD instead of never moving.
// The trust ratio applies to every tensor (no bias/BN exclusion).
//
// state() = v[0..n).
#include <algorithm>
#include <cmath>
#include <vector>

#include "train/optimizer.h"

namespace wb::train {
namespace {

struct LarsParams {
  double momentum = 0.9;
  double trust_coefficient = 0.001;
  double weight_decay = 0.0;
  double eps = 0.0;
  static void describe(core::ParamSet<LarsParams>& p) {
    p.field("momentum", &LarsParams::momentum, "momentum m (Algorithm 1)").min(0).max(1, false);
    p.field("trust_coefficient", &LarsParams::trust_coefficient,
            "eta: local lr = eta ||w|| / (||g|| + wd ||w||) (LPP Table 9: 0.001)")
        .positive();
    p.field("weight_decay", &LarsParams::weight_decay, "beta: L2 term added to the gradient").min(0);
    p.field("eps", &LarsParams::eps, "added to the trust-ratio denominator").min(0);
  }
};

class Lars final : public Optimizer {
 public:
  Lars(const LarsParams& p, const OptimizerEnv& env)
      : p_(p), ranges_(tensor_ranges(env)), v_(env.num_params, 0.f) {}

  void step(std::span<float> w, std::span<const float> g, double lr) override {
    const float mu = static_cast<float>(p_.momentum), wd = static_cast<float>(p_.weight_decay);
    float* v = v_.data();
    for (const TensorRange& r : ranges_) {
      double w2 = 0, g2 = 0;
      for (size_t i = r.offset; i < r.offset + r.size; ++i) {
        w2 += static_cast<double>(w[i]) * w[i];
        g2 += static_cast<double>(g[i]) * g[i];
      }
      const double wn = std::sqrt(w2), den = std::sqrt(g2) + p_.weight_decay * wn + p_.eps;
      const double local = (wn > 0 && den > 0) ? p_.trust_coefficient * wn / den : 1.0;
      const float scale = static_cast<float>(lr * local);
      for (size_t i = r.offset; i < r.offset + r.size; ++i) {
        v[i] = mu * v[i] + scale * (g[i] + wd * w[i]);
        w[i] -= v[i];
      }
    }
  }

  std::vector<float> state() const override { return v_; }
  void set_state(std::span<const float> s) override {
    check_state_size(s, v_.size(), "lars");
    std::copy(s.begin(), s.end(), v_.begin());
  }

 private:
  LarsParams p_;
  std::vector<TensorRange> ranges_;
  std::vector<float> v_;
};

}  // namespace

WB_REGISTER_OPTIMIZER("lars", Lars, LarsParams,
                      "LARS (You et al. 2017): momentum SGD with per-tensor local lr "
                      "eta ||w|| / (||g|| + wd ||w||)");

}  // namespace wb::train
