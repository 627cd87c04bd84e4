// cosine: cosine annealing without restarts (Loshchilov & Hutter 2017, SGDR Eq. 5 with a
// single cycle) after an optional linear warmup -- the LAP-SGD / LPP-SGD schedule
// (Chatterjee et al., arXiv:2203.06638, Appendix: "Cosine annealing starts immediately
// after warm-up, which in each case happens for the first 5 epochs").
// With x = fractional epoch at the start of the step, X = total epochs, E_w = warmup_epochs:
//   x <  E_w: lr(x) = peak * (s + (1 - s) * x / E_w)               (s = warmup_start_factor)
//   x >= E_w: lr(x) = min_lr + (peak - min_lr) * (1 + cos(pi * (x - E_w) / (X - E_w))) / 2
// LPP's "warm up from the single-worker alpha to the scaled alpha" is lr = scaled alpha and
// warmup_start_factor = alpha / scaled alpha. lr reaches min_lr at x = X (after the last step).
#include <algorithm>
#include <cmath>
#include <numbers>

#include "train/schedule.h"

namespace wb::train {
namespace {

struct CosineParams {
  double warmup_epochs = 0.0;
  double warmup_start_factor = 0.0;
  double min_lr = 0.0;
  static void describe(core::ParamSet<CosineParams>& p) {
    p.field("warmup_epochs", &CosineParams::warmup_epochs,
            "linear warmup length in (fractional) epochs (LAP/LPP: 5)")
        .min(0);
    p.field("warmup_start_factor", &CosineParams::warmup_start_factor,
            "lr at epoch 0 = factor x lr (the warmup's start)")
        .min(0);
    p.field("min_lr", &CosineParams::min_lr, "final lr of the annealing (eta_min)").min(0);
  }
};

class Cosine final : public Schedule {
 public:
  explicit Cosine(const CosineParams& p) : p_(p) {}
  double lr(double base_lr, const Progress& p) const override {
    const double x = p.epoch, we = p_.warmup_epochs;
    if (x < we) return base_lr * (p_.warmup_start_factor + (1.0 - p_.warmup_start_factor) * x / we);
    const double span = p.total_epochs - we;
    const double t = span > 0 ? std::clamp((x - we) / span, 0.0, 1.0) : 1.0;
    return p_.min_lr + (base_lr - p_.min_lr) * 0.5 * (1.0 + std::cos(std::numbers::pi * t));
  }
  void check(double base_lr, const core::Where& w) const override {
    // The warm-up rises to lr (Goyal et al. 2017, section 2.2, "gradual warmup"); a start
    // above lr would make it a decay, the reverse of its name (Schedule::check).
    if (p_.warmup_epochs > 0 && p_.warmup_start_factor > 1)
      w.key("warmup_start_factor")
          .fail("must be <= 1, got " + json(p_.warmup_start_factor).dump() +
                ": the warm-up rises from warmup_start_factor x lr to lr");
    if (p_.min_lr > base_lr)
      w.key("min_lr").fail("must be <= lr (" + core::fmt_number(base_lr) + "), got " +
                           json(p_.min_lr).dump() +
                           ": cosine annealing goes from lr down to min_lr");
  }

 private:
  CosineParams p_;
};

}  // namespace

WB_REGISTER_SCHEDULE("cosine", Cosine, CosineParams,
                     "cosine annealing to min_lr after an optional linear warmup (LAP/LPP-SGD)");

}  // namespace wb::train
