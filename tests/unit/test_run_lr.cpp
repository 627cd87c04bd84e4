// The learning rate has one owner (train/run_facts.h RunFacts::lr_after): the runner's per-step
// lr (curves/lr) is that formula at the step and the samples processed before it, for every
// schedule that reads steps or epochs, whatever the algorithm's step size.
#include <doctest/doctest.h>

#include <string>

#include "run_spec.h"
#include "train/run_facts.h"
#include "train/schedule.h"

using namespace wb;

TEST_CASE("run lr: curves/lr is RunFacts::lr_after at each step's samples") {
  const char* schedules[] = {
      R"({"name": "cosine", "warmup_epochs": 0.5, "warmup_start_factor": 0.1, "min_lr": 0.001})",
      R"({"name": "multistep", "milestones": [1.0, 2.0], "gamma": 0.5})",
      R"({"name": "warmup_scaled", "scale": 4.0, "warmup_epochs": 1.0})"};
  const char* algos[] = {R"({"name": "sync_sgd", "combine": "average"})", R"({"name": "local_sgd", "H": 3})"};
  for (const char* sj : schedules)
    for (const char* aj : algos) {
      CAPTURE(sj);
      CAPTURE(aj);
      const app::RunResult r = test::run_spec(std::string(R"("model": "cubic", "workers": 2, "batch_size": 8, "steps": 60, "log_every": 1, "lr": 0.05, "schedule": )") +
                                             sj + R"(, "algorithm": )" + aj);
      REQUIRE(r.status == "completed");
      const auto& c = r.curves;
      REQUIRE(c.size() == 60);
      const double N = c.samples[0] / c.epoch[0];  // training samples: epoch = samples / N
      auto sched = train::schedule_registry().create(train::schedule_registry().resolve(json::parse(sj), core::Where{}));
      const train::RunFacts facts(60, 16, static_cast<size_t>(N + 0.5), 0.05, sched.get());
      for (size_t k = 0; k < c.size(); ++k) {
        const double before = k == 0 ? 0.0 : c.samples[k - 1];
        CHECK(c.lr[k] == facts.lr_after(static_cast<int64_t>(c.step[k]) - 1, before));
      }
    }
}
