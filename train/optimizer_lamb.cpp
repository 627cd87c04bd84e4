// LAMB (You et al. 2019, "Large Batch Optimization for Deep Learning: Training BERT in
// 76 minutes", Algorithm 2): the Adam direction, rescaled per tensor by a trust ratio so
// that every layer moves by about lr x its own weight norm. For each step t and each
// tensor l (OptimizerEnv::tensors; the whole vector when there are none):
//   m <- beta1 m + (1 - beta1) g
//   v <- beta2 v + (1 - beta2) g^2
//   m_hat = m / (1 - beta1^t),  v_hat = v / (1 - beta2^t)     (bias_correction = true)
//   u = m_hat / (sqrt(v_hat) + eps) + wd * w                  (decoupled weight decay)
//   ratio_l = phi(||w_l||) / ||u_l||                           (norms in double)
//   w_l <- w_l - lr * ratio_l * u_l
// Clamps (documented choices; the paper leaves phi open, Sec. 3: phi(z) = min(max(z,
// gamma_l), gamma_u)):
//   - ratio_l = 1 when ||w_l|| = 0 or ||u_l|| = 0 (freshly zero-initialized tensors such
//     as biases move by plain lr * u instead of not at all; as NVIDIA's and TF-Addons'
//     LAMB do);
//   - phi(z) = min(z, weight_norm_max) when weight_norm_max > 0 (gamma_u; gamma_l = 0),
//     phi(z) = z otherwise (the default: the paper's experiments use identity).
// Weight decay and the trust ratio apply to every tensor (no bias/LayerNorm exclusion).
//
// state() = [t, m[0..n), v[0..n)].
#include <algorithm>
#include <cmath>
#include <vector>

#include "train/optimizer.h"

namespace wb::train {
namespace {

struct LambParams {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-6;
  double weight_decay = 0.0;
  bool bias_correction = true;
  double weight_norm_max = 0.0;
  static void describe(core::ParamSet<LambParams>& p) {
    p.field("beta1", &LambParams::beta1, "first-moment decay").min(0).max(1, false);
    p.field("beta2", &LambParams::beta2, "second-moment decay").min(0).max(1, false);
    p.field("eps", &LambParams::eps, "added to sqrt(v_hat) (You et al. 2019 use 1e-6)").positive();
    p.field("weight_decay", &LambParams::weight_decay,
            "decoupled decay: wd*w is added to the Adam direction before the trust ratio")
        .min(0);
    p.field("bias_correction", &LambParams::bias_correction,
            "divide m, v by 1 - beta^t (Algorithm 2; false = the paper's v1 / BERT code)");
    p.field("weight_norm_max", &LambParams::weight_norm_max,
            "upper clamp gamma_u of phi(||w||) in the trust ratio; 0 = no clamp")
        .min(0);
  }
};

class Lamb final : public Optimizer {
 public:
  Lamb(const LambParams& p, const OptimizerEnv& env)
      : p_(p),
        ranges_(tensor_ranges(env)),
        m_(env.num_params, 0.f),
        v_(env.num_params, 0.f),
        u_(env.num_params, 0.f) {}

  void step(std::span<float> w, std::span<const float> g, double lr) override {
    ++t_;
    const double bc1 = p_.bias_correction ? 1.0 - std::pow(p_.beta1, static_cast<double>(t_)) : 1.0;
    const double bc2 = p_.bias_correction ? 1.0 - std::pow(p_.beta2, static_cast<double>(t_)) : 1.0;
    const float b1 = static_cast<float>(p_.beta1), one_b1 = static_cast<float>(1.0 - p_.beta1),
                b2 = static_cast<float>(p_.beta2), one_b2 = static_cast<float>(1.0 - p_.beta2),
                inv_bc1 = static_cast<float>(1.0 / bc1), inv_bc2 = static_cast<float>(1.0 / bc2),
                eps = static_cast<float>(p_.eps), wd = static_cast<float>(p_.weight_decay);
    float* m = m_.data();
    float* v = v_.data();
    float* u = u_.data();
    for (const TensorRange& r : ranges_) {
      double w2 = 0, u2 = 0;
      for (size_t i = r.offset; i < r.offset + r.size; ++i) {
        m[i] = b1 * m[i] + one_b1 * g[i];
        v[i] = b2 * v[i] + one_b2 * g[i] * g[i];
        const float mh = m[i] * inv_bc1, vh = v[i] * inv_bc2;
        u[i] = mh / (std::sqrt(vh) + eps) + wd * w[i];
        w2 += static_cast<double>(w[i]) * w[i];
        u2 += static_cast<double>(u[i]) * u[i];
      }
      double wn = std::sqrt(w2);
      const double un = std::sqrt(u2);
      if (p_.weight_norm_max > 0) wn = std::min(wn, p_.weight_norm_max);
      const double ratio = (wn > 0 && un > 0) ? wn / un : 1.0;
      const float step = static_cast<float>(lr * ratio);
      for (size_t i = r.offset; i < r.offset + r.size; ++i) w[i] -= step * u[i];
    }
  }

  std::vector<float> state() const override { return pack_moments(t_, m_, v_); }
  void set_state(std::span<const float> s) override { unpack_moments(s, t_, m_, v_, "lamb"); }

 private:
  LambParams p_;
  std::vector<TensorRange> ranges_;
  std::vector<float> m_, v_, u_;  // u_: scratch for the update direction (no per-step allocation)
  int64_t t_ = 0;
};

}  // namespace

WB_REGISTER_OPTIMIZER("lamb", Lamb, LambParams,
                      "LAMB (You et al. 2019): Adam direction + decoupled decay, per-tensor trust "
                      "ratio ||w||/||u|| (1 when either norm is 0)");

}  // namespace wb::train
