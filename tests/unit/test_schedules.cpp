// Learning-rate schedules (train/schedule_*.cpp) at their boundaries: step 0, the end
// of warmup, milestones and the last step; the linear scaling rule helper; and one run
// through the runner to check the schedule is evaluated at every step.
#include <doctest/doctest.h>
#include <mpi.h>

#include <cmath>
#include <numbers>
#include <string>

#include "app/exec/runner.h"
#include "app/exec/training_loop.h"
#include "app/plan/sweep_plan.h"
#include "app/experiment/spec.h"
#include "train/schedule.h"

using namespace wb;

namespace {

std::unique_ptr<train::Schedule> make_sched(const std::string& spec) {
  auto resolved = train::schedule_registry().resolve(json::parse(spec), core::Where{});
  return train::schedule_registry().create(resolved);
}
// Progress of step s in a run of T steps and E epochs (epoch = s E / T, as the runner).
train::Progress at_step(int64_t s, int64_t T, double E) {
  return {s, T, static_cast<double>(s) * E / static_cast<double>(T), E};
}
train::Progress at_epoch(double x, double E) { return {0, 1, x, E}; }

}  // namespace

TEST_CASE("warmup_linear: zero at step 0, peak at the end of warmup, decays towards zero") {
  // T = 100 steps, warmup 17%: f = s/100; f < .17: lr f/.17; then lr (1 - (f - .17)/.83).
  auto s = make_sched(R"({"name": "warmup_linear", "warmup": 0.17})");
  const double lr = 0.0328;  // Adasum LeNet recipe: max LR
  CHECK(s->lr(lr, at_step(0, 100, 2)) == 0.0);
  CHECK(s->lr(lr, at_step(1, 100, 2)) == doctest::Approx(lr * 0.01 / 0.17));
  CHECK(s->lr(lr, at_step(16, 100, 2)) == doctest::Approx(lr * 16.0 / 17.0));
  CHECK(s->lr(lr, at_step(17, 100, 2)) == doctest::Approx(lr));  // end of warmup: the peak
  CHECK(s->lr(lr, at_step(18, 100, 2)) == doctest::Approx(lr * (1 - 0.01 / 0.83)));
  CHECK(s->lr(lr, at_step(58, 100, 2)) == doctest::Approx(lr * (1 - 0.41 / 0.83)));
  // Last step: f = .99 -> lr * .01/.83 > 0 (zero is reached at f = 1, after the budget).
  CHECK(s->lr(lr, at_step(99, 100, 2)) == doctest::Approx(lr * 0.01 / 0.83));
  CHECK(s->lr(lr, at_step(99, 100, 2)) > 0);
  // Defaults: warmup .17, from 0 to 0.
  auto d = make_sched(R"("warmup_linear")");
  CHECK(d->lr(1.0, at_step(17, 100, 1)) == doctest::Approx(1.0));
  // start/end factors: lr at step 0 = s lr, lr -> e lr at f = 1.
  auto f = make_sched(R"({"name": "warmup_linear", "warmup": 0.25, "start_factor": 0.1, "end_factor": 0.01})");
  CHECK(f->lr(2.0, at_step(0, 8, 1)) == doctest::Approx(0.2));
  CHECK(f->lr(2.0, at_step(1, 8, 1)) == doctest::Approx(2.0 * (0.1 + 0.9 * 0.5)));
  CHECK(f->lr(2.0, at_step(2, 8, 1)) == doctest::Approx(2.0));
  CHECK(f->lr(2.0, at_step(7, 8, 1)) == doctest::Approx(2.0 * (1 - 0.99 * (0.875 - 0.25) / 0.75)));
  // No warmup: the peak at step 0, then decay.
  auto n = make_sched(R"({"name": "warmup_linear", "warmup": 0})");
  CHECK(n->lr(1.0, at_step(0, 10, 1)) == doctest::Approx(1.0));
  CHECK(n->lr(1.0, at_step(9, 10, 1)) == doctest::Approx(0.1));
  CHECK_THROWS_AS(make_sched(R"({"name": "warmup_linear", "warmup": 1.0})"), UserError);
}

TEST_CASE("cosine: linear warmup from a fraction, then cosine annealing to min_lr") {
  // 10 epochs, 2 warmup epochs from .5 lr, min_lr .001, lr .1.
  auto s = make_sched(R"({"name": "cosine", "warmup_epochs": 2, "warmup_start_factor": 0.5, "min_lr": 0.001})");
  CHECK(s->lr(0.1, at_epoch(0, 10)) == doctest::Approx(0.05));
  CHECK(s->lr(0.1, at_epoch(1, 10)) == doctest::Approx(0.075));
  CHECK(s->lr(0.1, at_epoch(2, 10)) == doctest::Approx(0.1));  // end of warmup: the peak
  // Halfway through the annealing: min + (lr - min)/2.
  CHECK(s->lr(0.1, at_epoch(6, 10)) == doctest::Approx(0.001 + 0.099 * 0.5));
  CHECK(s->lr(0.1, at_epoch(4, 10)) ==
        doctest::Approx(0.001 + 0.099 * 0.5 * (1 + std::cos(std::numbers::pi * 0.25))));
  CHECK(s->lr(0.1, at_epoch(10, 10)) == doctest::Approx(0.001));  // the end of the budget
  // No warmup: peak at epoch 0 (Loshchilov & Hutter without restarts).
  auto c = make_sched(R"("cosine")");
  CHECK(c->lr(0.4, at_epoch(0, 5)) == doctest::Approx(0.4));
  CHECK(c->lr(0.4, at_step(99, 100, 5)) ==
        doctest::Approx(0.2 * (1 + std::cos(std::numbers::pi * 0.99))));
}

TEST_CASE("multistep: gamma at each milestone, from the first step at or after it") {
  auto s = make_sched(R"({"name": "multistep", "milestones": [2, 5], "gamma": 0.1})");
  CHECK(s->lr(1.0, at_epoch(0, 8)) == doctest::Approx(1.0));
  CHECK(s->lr(1.0, at_epoch(1.999, 8)) == doctest::Approx(1.0));
  CHECK(s->lr(1.0, at_epoch(2.0, 8)) == doctest::Approx(0.1));
  CHECK(s->lr(1.0, at_epoch(4.99, 8)) == doctest::Approx(0.1));
  CHECK(s->lr(1.0, at_epoch(5.0, 8)) == doctest::Approx(0.01));
  CHECK(s->lr(1.0, at_step(79, 80, 8)) == doctest::Approx(0.01));  // last step
  // Fractional milestones: step-exact in a 40-step, 4-epoch run (10 steps per epoch).
  auto f = make_sched(R"({"name": "multistep", "milestones": [1.5], "gamma": 0.5})");
  CHECK(f->lr(1.0, at_step(14, 40, 4)) == doctest::Approx(1.0));
  CHECK(f->lr(1.0, at_step(15, 40, 4)) == doctest::Approx(0.5));
  CHECK_THROWS_AS(make_sched(R"({"name": "multistep", "milestones": [5, 2]})"), UserError);
  CHECK_THROWS_AS(make_sched(R"({"name": "multistep", "milestones": [-1]})"), UserError);
}

TEST_CASE("warmup_scaled: base lr to lr x scale over E epochs, then constant or multistep") {
  // LPP Table 13, ResNet-20: alpha .1 warmed up over 5 epochs to .2 (B_loc 128, Q = 2),
  // dampened by .1 at epochs 150 and 225 of 300.
  const double scale = train::linear_scaled_lr(1.0, 128 * 2, 128);
  CHECK(scale == 2.0);
  auto s = make_sched(R"({"name": "warmup_scaled", "scale": 2, "warmup_epochs": 5, "milestones": [150, 225], "gamma": 0.1})");
  CHECK(s->lr(0.1, at_epoch(0, 300)) == doctest::Approx(0.1));
  CHECK(s->lr(0.1, at_epoch(2.5, 300)) == doctest::Approx(0.15));
  CHECK(s->lr(0.1, at_epoch(5, 300)) == doctest::Approx(0.2));  // end of warmup
  CHECK(s->lr(0.1, at_epoch(149.9, 300)) == doctest::Approx(0.2));
  CHECK(s->lr(0.1, at_epoch(150, 300)) == doctest::Approx(0.02));
  CHECK(s->lr(0.1, at_epoch(225, 300)) == doctest::Approx(0.002));
  CHECK(s->lr(0.1, at_step(2999, 3000, 300)) == doctest::Approx(0.002));
  // No milestones: constant after the warmup.
  auto c = make_sched(R"({"name": "warmup_scaled", "scale": 8, "warmup_epochs": 1})");
  CHECK(c->lr(0.01, at_epoch(0.5, 3)) == doctest::Approx(0.045));
  CHECK(c->lr(0.01, at_epoch(2.9, 3)) == doctest::Approx(0.08));
}

TEST_CASE("linear scaling rule helper (Goyal et al. 2017)") {
  CHECK(train::linear_scaled_lr(0.1, 1024, 128) == doctest::Approx(0.8));
  CHECK(train::linear_scaled_lr(0.0125, 32 * 8, 32) == doctest::Approx(0.1));  // LPP Table 8 (ImageNet)
  CHECK(train::linear_scaled_lr(0.5, 64, 64) == 0.5);
}

TEST_CASE("the runner evaluates the schedule at the start of every step") {
  auto e = app::parse_experiment(R"({"name": "t", "base": {"model": "quadratic", "workers": 2,
      "batch_size": 2, "lr": 0.05, "steps": 20, "schedule": {"name": "warmup_linear", "warmup": 0.25}}})",
                                "t.json");
  app::TaskCache cache;
  auto res = app::execute_run(e.runs[0], cache.get(e.runs[0].cfg.model.value()), MPI_COMM_SELF, nullptr);
  REQUIRE(res.curves.size() == 20);
  CHECK(res.curves.lr[0] == 0.0);
  CHECK(res.curves.lr[2] == doctest::Approx(0.05 * 0.1 / 0.25));
  CHECK(res.curves.lr[5] == doctest::Approx(0.05));
  CHECK(res.curves.lr[19] == doctest::Approx(0.05 * (1 - 0.7 / 0.75)));
}
