// Learning-rate schedules, driven by the fractional epoch and the step (updated every
// step). Registered by name like optimizers; each maps (base lr, progress) -> lr.
// base lr is the run's `lr` (cfg.lr): the peak (warmup_linear, cosine) or the base that
// milestones/scales multiply (multistep, warmup_scaled). The runner evaluates the
// schedule at the START of every step (Progress::step, Progress::epoch of that step).
//
// Schedules (train/schedule_*.cpp):
//   constant       lr
//   warmup_linear  fraction f = step / total_steps, warmup fraction wf:
//                  f < wf: lr (s + (1 - s) f / wf); else lr (1 + (e - 1)(f - wf)/(1 - wf))
//                  (s = start_factor, e = end_factor, both 0 by default: the Adasum LeNet
//                  recipe, "linear warmup and decay from zero to zero", wf = 17%)
//   cosine         epochs x: linear warmup from s lr to lr over E_w epochs, then
//                  min_lr + (lr - min_lr)(1 + cos(pi (x - E_w)/(X - E_w)))/2 (LAP/LPP,
//                  Loshchilov & Hutter 2017 without restarts)
//   multistep      lr gamma^(number of milestones <= x)  (MB/PL-SGD, LPP Table 13)
//   warmup_scaled  x < E: lr (1 + (scale - 1) x / E); then lr scale gamma^(#milestones <= x)
//                  (LPP Table 13: "warm up ... from alpha to alpha B_loc Q / B_loc_base")
#pragma once

#include <cstdint>
#include <span>

#include "core/registry.h"

namespace wb::train {

struct Progress {
  int64_t step = 0;         // 0-based global step about to run
  int64_t total_steps = 1;  // the run's budget in steps
  double epoch = 0;         // fractional epoch at the start of this step
  double total_epochs = 1;  // the budget in epochs
};

class Schedule {
 public:
  virtual ~Schedule() = default;
  virtual double lr(double base_lr, const Progress& p) const = 0;
  // The rule across the schedule's parameters and the run's base lr, checked per run before
  // any run starts (`w`: the schedule's JSON path). One rule for every schedule: a value that
  // reverses the direction the schedule is named for is refused (cosine: min_lr > lr would
  // raise the rate; multistep: gamma > 1 would grow it at each milestone). A warm-up's
  // end_factor is its target and may exceed 1 (warming up to k x lr, Goyal et al.,
  // arXiv:1706.02677, section 2.2). Default: no rule.
  virtual void check(double /*base_lr*/, const core::Where& /*w*/) const {}
};

// Linear scaling rule (Goyal et al. 2017, Sec. 2.1: "when the minibatch size is
// multiplied by k, multiply the learning rate by k"): the lr for a total batch of
// `batch` samples given `base_lr` tuned at `base_batch`. LPP Table 13 scales
// alpha -> alpha * (B_loc * Q) / B_loc_base; pass batch = B_loc * Q (workers x batch_size).
// Use it to compute warmup_scaled's `scale` = linear_scaled_lr(1, W * B, B_base), or the
// run's lr directly; sync_sgd/adasum's lr_scaling = "linear" is the special case
// base_batch = batch_size (scale = W).
inline double linear_scaled_lr(double base_lr, double batch, double base_batch) {
  return base_lr * batch / base_batch;
}

// Number of milestones m (epochs, ascending) with m <= epoch: the multistep exponent.
inline int milestones_passed(std::span<const double> milestones, double epoch) {
  int k = 0;
  for (double m : milestones) k += m <= epoch ? 1 : 0;
  return k;
}

using ScheduleRegistry = core::Registry<Schedule>;
ScheduleRegistry& schedule_registry();

}  // namespace wb::train

#define WB_REGISTER_SCHEDULE(NAME, IMPL, PARAMS, DOC) \
  WB_REGISTER(::wb::train::schedule_registry, NAME, IMPL, PARAMS, DOC)
