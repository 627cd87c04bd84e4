// warmup_linear: linear warmup to the peak lr over the first `warmup` fraction of the
// budget, then linear decay to end_factor x peak (0 by default) at the end of the budget.
// The Adasum paper's LeNet-5 recipe (Maleki et al., arXiv:2006.02924 5.4: "a linear warmup and
// decay from zero to zero", 2 epochs, max LR 0.0328, warmup 17%); BERT's schedule too.
//
// With f = step / total_steps (= epoch / total_epochs: the fractional-epoch position in
// the budget, at the start of the step) and wf = warmup:
//   f <  wf: lr(f) = peak * (s + (1 - s) * f / wf)            (s = start_factor)
//   f >= wf: lr(f) = peak * (1 + (e - 1) * (f - wf) / (1 - wf)) (e = end_factor)
// Boundaries: step 0 -> s * peak (0 by default: the first step does not move SGD, it
// only feeds Adam's moments, as in "from zero"); the step at f = wf -> peak; the last
// step (f = 1 - 1/T) -> peak * (e + (1 - e) / (T (1 - wf))), reaching e * peak at f = 1,
// just after the budget, so no step is wasted at lr 0 at the end.
#include <algorithm>

#include "train/schedule.h"

namespace wb::train {
namespace {

struct WarmupLinearParams {
  double warmup = 0.17;
  double start_factor = 0.0;
  double end_factor = 0.0;
  static void describe(core::ParamSet<WarmupLinearParams>& p) {
    p.field("warmup", &WarmupLinearParams::warmup,
            "warmup length as a fraction of the budget (Adasum LeNet recipe: 0.17)")
        .min(0)
        .max(1, false);
    p.field("start_factor", &WarmupLinearParams::start_factor, "lr at step 0 = start_factor x lr")
        .min(0);
    p.field("end_factor", &WarmupLinearParams::end_factor,
            "lr at the end of the budget = end_factor x lr")
        .min(0);
  }
};

class WarmupLinear final : public Schedule {
 public:
  explicit WarmupLinear(const WarmupLinearParams& p) : p_(p) {}
  double lr(double base_lr, const Progress& p) const override {
    const double f = static_cast<double>(p.step) / static_cast<double>(std::max<int64_t>(1, p.total_steps));
    if (f < p_.warmup) return base_lr * (p_.start_factor + (1.0 - p_.start_factor) * f / p_.warmup);
    return base_lr * (1.0 + (p_.end_factor - 1.0) * (f - p_.warmup) / (1.0 - p_.warmup));
  }
  // A warm-up rises to lr: start_factor > 1 would lower the rate during the warm-up, the
  // reverse of what the schedule is named for (Schedule::check; BERT and the Adasum recipe
  // warm up from below). Without a warm-up (warmup 0) start_factor is not used.
  void check(double, const core::Where& w) const override {
    if (p_.warmup > 0 && p_.start_factor > 1)
      w.key("start_factor").fail("must be <= 1, got " + json(p_.start_factor).dump() +
                                 ": the warm-up rises from start_factor x lr to lr");
  }

 private:
  WarmupLinearParams p_;
};

}  // namespace

WB_REGISTER_SCHEDULE("warmup_linear", WarmupLinear, WarmupLinearParams,
                     "linear warmup over a fraction of the budget to lr, then linear decay to "
                     "end_factor x lr (Adasum LeNet recipe: warmup 17%, decay to 0)");

}  // namespace wb::train
