// SGD with optional momentum (dampening, Nesterov) and weight decay, with PyTorch's
// torch.optim.SGD semantics (the papers' baselines are PyTorch code):
//   g' = g + wd * w                                   (weight_decay_mode = coupled, L2)
//   g' = g                                            (weight_decay_mode = decoupled)
//   buf = g' (first step), else buf = momentum * buf + (1 - dampening) * g'
//   d = nesterov ? g' + momentum * buf : buf          (d = g' when momentum == 0)
//   w <- w * (1 - lr * wd)                            (decoupled only: SGDW)
//   w <- w - lr * d
// Decoupled weight decay is SGDW (Loshchilov & Hutter 2019, Algorithm 1, line 9): the
// decay does not pass through the momentum buffer. As in torch.optim.AdamW the decay is
// scaled by the scheduled lr (their eta_t * lambda with eta_t = lr), so warmup/decay
// schedules also schedule the decay.
//
// state() = [initialized, buf...] when momentum > 0 (the flag matters: the first step
// copies g' into buf instead of dampening it), empty otherwise.
#include <algorithm>
#include <string>
#include <vector>

#include "train/optimizer.h"

namespace wb::train {
namespace {

struct SgdParams {
  double momentum = 0.0;
  double dampening = 0.0;
  bool nesterov = false;
  double weight_decay = 0.0;
  std::string weight_decay_mode = "coupled";
  static void describe(core::ParamSet<SgdParams>& p) {
    p.field("momentum", &SgdParams::momentum, "momentum factor").min(0).max(1, false);
    p.field("dampening", &SgdParams::dampening, "dampening for momentum").min(0).max(1);
    p.field("nesterov", &SgdParams::nesterov, "Nesterov momentum (needs momentum > 0, dampening 0)");
    p.field("weight_decay", &SgdParams::weight_decay, "weight decay factor").min(0);
    p.field("weight_decay_mode", &SgdParams::weight_decay_mode,
            "coupled: L2 term wd*w added to the gradient (torch SGD); decoupled: "
            "w *= 1 - lr*wd outside the momentum (SGDW, Loshchilov & Hutter 2019)")
        .one_of({"coupled", "decoupled"});
    p.check([](const SgdParams& s, const core::Where& w) {
      if (s.nesterov && (s.momentum <= 0 || s.dampening != 0))
        w.key("nesterov").fail("Nesterov momentum requires momentum > 0 and dampening = 0");
    });
  }
};

class Sgd final : public Optimizer {
 public:
  Sgd(const SgdParams& p, const OptimizerEnv& env)
      : p_(p), decoupled_(p.weight_decay_mode == "decoupled") {
    if (p_.momentum > 0) buf_.assign(env.num_params, 0.f);
  }
  void step(std::span<float> w, std::span<const float> g, double lr) override {
    // Coupled decay enters g'; decoupled decay is a separate shrink of w.
    const float wd = decoupled_ ? 0.f : static_cast<float>(p_.weight_decay),
                mu = static_cast<float>(p_.momentum), damp = static_cast<float>(1.0 - p_.dampening),
                flr = static_cast<float>(lr);
    const size_t n = w.size();
    if (decoupled_ && p_.weight_decay != 0) {
      const float shrink = static_cast<float>(1.0 - lr * p_.weight_decay);
      for (size_t i = 0; i < n; ++i) w[i] *= shrink;
    }
    if (p_.momentum == 0) {
      for (size_t i = 0; i < n; ++i) w[i] -= flr * (g[i] + wd * w[i]);
      return;
    }
    float* buf = buf_.data();
    if (first_) {
      for (size_t i = 0; i < n; ++i) buf[i] = g[i] + wd * w[i];
      first_ = false;
    } else {
      for (size_t i = 0; i < n; ++i) buf[i] = mu * buf[i] + damp * (g[i] + wd * w[i]);
    }
    if (p_.nesterov) {
      for (size_t i = 0; i < n; ++i) w[i] -= flr * ((g[i] + wd * w[i]) + mu * buf[i]);
    } else {
      for (size_t i = 0; i < n; ++i) w[i] -= flr * buf[i];
    }
  }
  std::vector<float> state() const override {
    if (buf_.empty()) return {};
    std::vector<float> s;
    s.reserve(buf_.size() + 1);
    s.push_back(first_ ? 0.f : 1.f);
    s.insert(s.end(), buf_.begin(), buf_.end());
    return s;
  }
  void set_state(std::span<const float> s) override {
    if (buf_.empty()) return Optimizer::set_state(s);
    check_state_size(s, buf_.size() + 1, "sgd");
    first_ = s[0] == 0.f;
    std::copy(s.begin() + 1, s.end(), buf_.begin());
  }

 private:
  SgdParams p_;
  bool decoupled_;
  std::vector<float> buf_;
  bool first_ = true;
};

}  // namespace

OptimizerRegistry& optimizer_registry() {
  static OptimizerRegistry r("optimizer");
  return r;
}

WB_REGISTER_OPTIMIZER("sgd", Sgd, SgdParams,
                      "SGD with optional momentum/Nesterov and coupled (L2) or decoupled (SGDW) "
                      "weight decay (torch.optim.SGD semantics)");

}  // namespace wb::train
