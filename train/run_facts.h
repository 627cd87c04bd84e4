// The run's budget and learning rate (DESIGN.md section 3, "one owner per fact"): the planner
// computes the budget once per run (app/plan/run_plan.h plan_budget) and the training loop
// hands it to the algorithm in StepContext::run. No
// algorithm re-derives them from the config: none builds a schedule, a second algorithm or
// its own epoch arithmetic.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "train/run_config.h"
#include "train/schedule.h"

namespace wb::train {

// The budget in steps: `steps` if > 0, else ceil(epochs x N / samples_per_step), at least 1.
// samples_per_step is the algorithm's (Algorithm::samples_per_step: W x batch_size, or a
// mega-batch for Adaptive/Elastic SGD). Overflow-checked (epochs 1e16
// was cast from double to int64 and gave 1 step): a budget above kMaxSteps is a UserError
// at `w`'s epochs (the run config's JSON path; the planner calls it before any run).
inline int64_t budget_steps(const RunConfig& c, size_t train_size, double samples_per_step,
                            const core::Where& w = core::Where{"", "$"}) {
  if (c.steps > 0) return c.steps;
  const double steps = std::ceil(c.epochs * static_cast<double>(train_size) / samples_per_step);
  if (!(steps <= static_cast<double>(kMaxSteps))) {
    w.key("epochs").fail(
        "epochs x training samples / samples per step = " + core::fmt_number(c.epochs) + " x " +
        std::to_string(train_size) + " / " + core::fmt_number(samples_per_step) + " = " +
        core::fmt_number(steps) + " steps, above the most a budget may have (" +
        std::to_string(kMaxSteps) + " steps): lower epochs or set steps");
  }
  return std::max<int64_t>(1, static_cast<int64_t>(steps));
}

struct RunFacts {
  int64_t total_steps = 1;        // the budget in steps
  double samples_per_step = 1;    // the algorithm's nominal samples per step
  size_t train_size = 1;          // N, training samples (all workers)
  double total_epochs = 1;        // total_steps x samples_per_step / N (the schedules' total)
  double base_lr = 0;             // cfg.lr
  const Schedule* schedule = nullptr;

  RunFacts() = default;
  RunFacts(int64_t total, double per_step, size_t n, double lr, const Schedule* s)
      : total_steps(total), samples_per_step(per_step), train_size(n),
        total_epochs(static_cast<double>(total) * per_step / static_cast<double>(n)),
        base_lr(lr), schedule(s) {}

  // The epoch after `samples` training samples (all workers): THE epoch of the run, for the
  // runner's steps and curves and for lr_at below.
  double epoch_at(double samples) const { return samples / static_cast<double>(train_size); }

  // THE learning rate of the run: the schedule's lr at step s after `samples` training samples
  // (all workers). The runner's per-step lr (StepContext::lr) passes the samples actually
  // processed (Adaptive and elastic SGD's steps have other sizes than samples_per_step).
  double lr_after(int64_t s, double samples) const {
    return schedule->lr(base_lr, Progress{s, total_steps, epoch_at(samples), total_epochs});
  }
  // The lr at step s with s x samples_per_step samples processed before it: the async engine
  // asks for its updaters' local steps, which run ahead of the runner's.
  double lr_at(int64_t s) const { return lr_after(s, static_cast<double>(s) * samples_per_step); }
};

}  // namespace wb::train
