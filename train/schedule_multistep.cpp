// Step schedules at epoch milestones (Chatterjee et al., arXiv:2203.06638, Table 13:
// "standard multi-step diminishing learning rate scheduler with dampening factor gamma at
// designated epochs" for MB-SGD and PL-SGD).
//   multistep:     lr(x) = lr * gamma^k,  k = number of milestones m with m <= x
//   warmup_scaled: lr(x) = lr * (1 + (scale - 1) * x / E)           for x < E
//                  lr(x) = lr * scale * gamma^k                      for x >= E
// x = fractional epoch at the start of the step, so a milestone takes effect at the first
// step that starts at or after it. warmup_scaled is Table 13's "warm up for the first 5
// epochs to scale from alpha to alpha * B_loc * Q / B_loc_base" followed by the multistep
// dampening (no milestones: constant after the warmup); scale comes from the linear
// scaling rule, linear_scaled_lr(1, W * B, B_base) in train/schedule.h. Milestones count
// from the start of training, as in the table.
#include <cmath>
#include <vector>

#include "train/schedule.h"

namespace wb::train {
namespace {

void check_milestones(const std::vector<double>& ms, const core::Where& w) {
  for (size_t i = 1; i < ms.size(); ++i)
    if (!(ms[i] > ms[i - 1]))
      w.key("milestones").index(i).fail("milestones must be strictly increasing");
}

// A dampening factor above 1 would grow the rate at each milestone (Schedule::check).
void check_gamma(double gamma, const core::Where& w) {
  if (gamma > 1)
    w.key("gamma").fail("must be <= 1, got " + json(gamma).dump() +
                        ": a multistep schedule decays the rate at each milestone");
}

struct MultistepParams {
  std::vector<double> milestones;
  double gamma = 0.1;
  static void describe(core::ParamSet<MultistepParams>& p) {
    p.field("milestones", &MultistepParams::milestones,
            "epochs at which lr is multiplied by gamma (LPP Table 13, e.g. [150, 225])")
        .min(0);
    p.field("gamma", &MultistepParams::gamma, "factor at each milestone").positive();
    p.check(
        [](const MultistepParams& s, const core::Where& w) { check_milestones(s.milestones, w); });
  }
};

class Multistep final : public Schedule {
 public:
  explicit Multistep(const MultistepParams& p) : p_(p) {}
  double lr(double base_lr, const Progress& p) const override {
    return base_lr * std::pow(p_.gamma, milestones_passed(p_.milestones, p.epoch));
  }
  void check(double, const core::Where& w) const override { check_gamma(p_.gamma, w); }

 private:
  MultistepParams p_;
};

struct WarmupScaledParams {
  double scale = 1.0;
  double warmup_epochs = 5.0;
  std::vector<double> milestones;
  double gamma = 0.1;
  static void describe(core::ParamSet<WarmupScaledParams>& p) {
    p.field("scale", &WarmupScaledParams::scale,
            "target = lr x scale (linear scaling rule: W x batch / base batch)")
        .positive();
    p.field("warmup_epochs", &WarmupScaledParams::warmup_epochs,
            "epochs of linear warmup from lr to lr x scale (LPP: 5)")
        .min(0);
    p.field("milestones", &WarmupScaledParams::milestones,
            "epochs at which the scaled lr is multiplied by gamma ([] = constant)")
        .min(0);
    p.field("gamma", &WarmupScaledParams::gamma, "factor at each milestone").positive();
    p.check([](const WarmupScaledParams& s, const core::Where& w) {
      check_milestones(s.milestones, w);
    });
  }
};

class WarmupScaled final : public Schedule {
 public:
  explicit WarmupScaled(const WarmupScaledParams& p) : p_(p) {}
  double lr(double base_lr, const Progress& p) const override {
    const double x = p.epoch;
    if (x < p_.warmup_epochs) return base_lr * (1.0 + (p_.scale - 1.0) * x / p_.warmup_epochs);
    return base_lr * p_.scale * std::pow(p_.gamma, milestones_passed(p_.milestones, x));
  }
  void check(double, const core::Where& w) const override {
    // The warm-up rises from lr to lr x scale (LPP Table 13); scale < 1 would make it a
    // decay, the reverse of its name (Schedule::check). Without a warm-up it is a plain factor.
    if (p_.warmup_epochs > 0 && p_.scale < 1)
      w.key("scale").fail("must be >= 1, got " + json(p_.scale).dump() +
                          ": the warm-up rises from lr to lr x scale");
    check_gamma(p_.gamma, w);
  }

 private:
  WarmupScaledParams p_;
};

}  // namespace

WB_REGISTER_SCHEDULE("multistep", Multistep, MultistepParams,
                     "lr x gamma^(milestones passed), milestones in epochs (MB-SGD / PL-SGD)");
WB_REGISTER_SCHEDULE("warmup_scaled", WarmupScaled, WarmupScaledParams,
                     "linear warmup from lr to lr x scale over warmup_epochs, then multistep "
                     "(LPP Table 13)");

}  // namespace wb::train
