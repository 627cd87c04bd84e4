// The worked examples of docs/extending.md (my_algo.cpp, my_lookahead.cpp: an outer optimizer,
// my_model.cpp, and my_async.cpp: an SSP scheme on the event kernel, in this folder),
// registered into this test binary and run through the real training loop: the docs compile,
// register and train, and each one's result is checked against a property a wrong example
// would break.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "app/exec/training_loop.h"
#include "app/metrics/metric.h"
#include "app/plan/run_plan.h"
#include "app/plan/sweep_plan.h"
#include "app/experiment/spec.h"
#include "comm/collectives.h"
#include "core/progress.h"

using namespace wb;

namespace {

app::RunResult run_one(const std::string& base_json) {
  const app::Experiment e = app::parse_experiment(R"({"name": "ex", "base": )" + base_json + "}", "example.json");
  REQUIRE(e.runs.size() == 1);
  app::TaskCache tasks;
  return app::execute_run(e.runs[0], tasks.get(e.runs[0].cfg.model.value()), MPI_COMM_SELF, nullptr);
}

}  // namespace

TEST_CASE("docs example my_algo: beta = 1 is sync_sgd with averaging, clock included") {
  const std::string common =
      R"("model": {"name": "quadratic", "x_max": 1.0}, "workers": 4, "batch_size": 2, "lr": 0.1, "steps": 30, "seed": 3})";
  const auto mine = run_one(R"({"algorithm": "my_algo", )" + common);
  const auto ref = run_one(R"({"algorithm": {"name": "sync_sgd", "combine": "average"}, )" + common);
  REQUIRE(mine.status == "completed");
  CHECK(mine.curves.train_loss == ref.curves.train_loss);
  // The collective charged the simulated clock by itself (the template writes no clock code).
  CHECK(mine.curves.sim_s == ref.curves.sim_s);
  CHECK(mine.sim_s > 0);
  const auto half = run_one(R"({"algorithm": {"name": "my_algo", "beta": 0.5}, )" + common);
  CHECK(half.curves.train_loss != ref.curves.train_loss);
}

TEST_CASE("docs example my_lookahead: one worker's Lookahead is DiLoCo's outer SGD at lr alpha; alpha 1 is plain training") {
  auto params = [](const app::RunResult& r) {
    for (const auto& s : r.series)
      if (s.path == "final_params") return s.data;
    FAIL("no final_params");
    return std::vector<double>{};
  };
  for (int W : {1, 2}) {
    const std::string common = R"("model": "cubic", "batch_size": 4, "lr": 0.02, "steps": 23, "seed": 5,
        "optimizer": {"name": "adam"}, "workers": )" + std::to_string(W);
    const auto mine = run_one(R"({"algorithm": {"name": "my_lookahead", "k": 5, "alpha": 0.5}, )" + common + "}");
    const auto ref = run_one(R"({"algorithm": {"name": "diloco", "sync_every": 5, "outer": "sgd", "outer_lr": 0.5}, )" +
                             common + "}");
    REQUIRE(mine.status == "completed");
    INFO("W=" << W);
    CHECK(mine.curves.train_loss == ref.curves.train_loss);
    CHECK(mine.curves.sim_s == ref.curves.sim_s);
    CHECK(params(mine) == params(ref));
  }
  // alpha 1: the slow weights jump to the fast ones, so one worker trains as if alone.
  const std::string one = R"("model": "cubic", "batch_size": 4, "lr": 0.02, "steps": 23, "seed": 5,
      "optimizer": {"name": "adam"}, "workers": 1)";
  const auto plain = run_one(R"({"algorithm": "sync_sgd", )" + one + "}");
  const auto full = run_one(R"({"algorithm": {"name": "my_lookahead", "k": 5, "alpha": 1.0}, )" + one + "}");
  const auto half = run_one(R"({"algorithm": {"name": "my_lookahead", "k": 5, "alpha": 0.5}, )" + one + "}");
  CHECK(full.curves.train_loss == plain.curves.train_loss);
  CHECK(half.curves.train_loss != plain.curves.train_loss);
}

TEST_CASE("docs example linreg: sync SGD recovers the true coefficients a_j = j + 1") {
  const auto r = run_one(
      R"({"model": {"name": "linreg", "dim": 4, "train_size": 512, "noise": 0.01},
          "algorithm": "sync_sgd", "workers": 2, "batch_size": 16, "lr": 0.05, "steps": 400, "seed": 1})");
  REQUIRE(r.status == "completed");
  CHECK(r.curves.train_loss.back() < 0.01 * r.curves.train_loss.front());
  const core::Series* fp = nullptr;
  for (const auto& s : r.series)
    if (s.path == "final_params") fp = &s;
  REQUIRE(fp != nullptr);
  REQUIRE(fp->data.size() == 4);
  for (int j = 0; j < 4; ++j) CHECK(fp->data[static_cast<size_t>(j)] == doctest::Approx(j + 1).epsilon(0.02));
}

static const core::Series* series(const app::RunResult& r, const std::string& path) {
  for (const auto& s : r.series)
    if (s.path == path) return &s;
  return nullptr;
}

TEST_CASE("docs example my_ssp: staleness bounded, converges to the least-squares solution") {
  // Four workers, one 4x slower: without the bound the fast ones run far ahead of it.
  const std::string common =
      R"("model": {"name": "linreg", "dim": 4, "train_size": 512, "noise": 0.01}, "workers": 4,
         "batch_size": 16, "lr": 0.05, "steps": 300, "seed": 5,
         "heterogeneity": {"speeds": [1, 1, 1, 0.25]}})";
  for (int s : {0, 1, 3}) {
    CAPTURE(s);
    const auto r = run_one(R"({"algorithm": {"name": "my_ssp", "staleness": )" + std::to_string(s) +
                           "}, " + common);
    REQUIRE(r.status == "completed");
    const double gap = series(r, "workers/max_iteration_gap")->data[0];
    const double stale = series(r, "workers/max_staleness")->data[0];
    CHECK(gap <= s);                          // SSP: never more than s iterations ahead
    CHECK(stale <= 3.0 * (2 * s + 1));        // (W - 1)(2s + 1) server writes
    CHECK(stale >= 3.0);                      // asynchronous: others' pushes do land in between
    // The least-squares optimum of y = a . x + 0.01 N(0, 1) is a_j = j + 1 (to the noise).
    const core::Series* fp = series(r, "final_params");
    REQUIRE(fp != nullptr);
    for (int j = 0; j < 4; ++j) CHECK(fp->data[static_cast<size_t>(j)] == doctest::Approx(j + 1).epsilon(0.02));
  }
  // The bound is what holds the fast workers back: without it (s large) they run ahead of
  // the slow one by far more than 3 iterations, and updates get staler than bulk-synchronous
  // SGD's W - 1 (the bound of s = 0 above).
  const auto free = run_one(R"({"algorithm": {"name": "my_ssp", "staleness": 100000}, )" + common);
  CHECK(series(free, "workers/max_iteration_gap")->data[0] > 3);
  CHECK(series(free, "workers/max_staleness")->data[0] > 3.0);
  // s = 0 is bulk synchronous: the simulated time is the slow worker's, every round.
  const auto bsp = run_one(R"({"algorithm": {"name": "my_ssp", "staleness": 0}, )" + common);
  CHECK(bsp.sim_s > free.sim_s);
}

TEST_CASE("docs example my_metric: the squared norms of known gradients, then a real run") {
  // Three workers with known gradients on the cubic toy (one tensor of 3): squared norms
  // 4, 1 and 25, so mean 10 and max 25 (a wrong sum, divisor or gather breaks these).
  models::Task task = models::model_registry()
                          .create(models::model_registry().resolve(json("cubic"), core::Where{}), 0)
                          ->make();
  std::vector<train::Worker> workers(3);
  for (int k = 0; k < 3; ++k) {
    workers[static_cast<size_t>(k)].id = k;
    workers[static_cast<size_t>(k)].w.assign(3, 0.5f);
  }
  workers[0].g = {2.f, 0.f, 0.f};
  workers[1].g = {0.f, -1.f, 0.f};
  workers[2].g = {0.f, 0.f, 5.f};
  comm::Collectives coll(MPI_COMM_SELF, 3);
  train::RunConfig cfg;
  sim::SimClock clock;
  algo::StepContext ctx{workers, coll, *task.model, *task.train, cfg, clock};
  ctx.W = 3;
  app::GradientCopies copies;
  const auto& entry = app::metric_registry().get("my_metric", core::Where{});
  auto metric = entry.create(entry.resolve(json::parse(R"({"every": 1})"), core::Where{}), *task.model, 3);
  CHECK(metric->measure(ctx, copies) == std::vector<double>{10.0, 25.0});

  // Through the training loop: one row per measured step (0, 4, 8 of 10) and its step index.
  const auto r = run_one(
      R"({"algorithm": "sync_sgd", "model": "quadratic", "workers": 4, "batch_size": 2, "lr": 0.05,
          "steps": 10, "seed": 2, "metrics": {"my_metric": {"every": 4}}})");
  REQUIRE(r.status == "completed");
  const core::Series *rows = nullptr, *steps = nullptr;
  for (const auto& s : r.series) {
    if (s.path == "metrics/my_metric") rows = &s;
    if (s.path == "metrics/my_metric_step") steps = &s;
  }
  REQUIRE(rows != nullptr);
  REQUIRE(steps != nullptr);
  CHECK(steps->data == std::vector<double>{0, 4, 8});
  CHECK(rows->cols == 2);
  CHECK(rows->string_list_attrs.at("columns") == std::vector<std::string>{"mean", "max"});
  for (size_t i = 0; i < rows->rows; ++i) {
    CHECK(rows->data[2 * i] > 0);
    CHECK(rows->data[2 * i] <= rows->data[2 * i + 1]);  // the mean is at most the max
  }
  // An algorithm that does not expose its workers' gradients is refused when the sweep is
  // planned (every run is, before any trains).
  CHECK_THROWS_WITH_AS(app::plan_runs(app::parse_experiment(
                           R"({"name": "t", "base": {"algorithm": "elastic_sgd", "metrics": {"my_metric": {"every": 1}}}})",
                           "t.json")),
                       doctest::Contains("t.json: $.base.metrics.my_metric: elastic_sgd does not support metrics"),
                       wb::UserError);
}
