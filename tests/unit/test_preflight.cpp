// Pre-flight (app/plan/sweep_plan.h): the memory estimate counts every per-worker
// and per-updater buffer, the results estimate grows with the curve length,
// key_path names the JSON path a user changes, and the Sampler answers a signal.
#include <doctest/doctest.h>

#include "app/plan/sweep_plan.h"
#include "app/experiment/spec.h"
#include "core/interrupt.h"
#include "models/model.h"
#include "train/worker.h"

using namespace wb;

namespace {

models::Task task_of(const char* model) {
  auto& reg = models::model_registry();
  return reg.create(reg.resolve(json::parse(model), core::Where{}), 0)->make();
}

app::Experiment exp_of(const std::string& text) { return app::parse_experiment(text, "p.json"); }

}  // namespace

TEST_CASE("preflight: LAP/LPP memory grows with the updaters, not only the workers") {
  const models::Task t = task_of(R"({"name": "quadratic", "train_size": 4096})");
  auto est = [&](int U, const char* mode) {
    const auto e = exp_of(std::string(R"({"name": "m", "base": {"steps": 1, "workers": 4,
        "algorithm": {"name": "lap_sgd", "mode": ")") + mode + R"(", "updaters": )" +
                          std::to_string(U) + "}}}");
    return app::estimate_memory(e.runs[0].cfg, t, 1);
  };
  const auto u1 = est(1, "simulated"), u64 = est(64, "simulated"), r64 = est(64, "real");
  // Every updater: its batch buffer (batch_size samples) at least, besides v, v2, g.
  const double per_updater = (u64.state_per_worker - u1.state_per_worker) / 63.0;
  CHECK(per_updater >= 32.0 * 4.0);
  // Real mode: a thread per updater (its stack) and a workspace.
  CHECK(r64.state_per_worker - u64.state_per_worker >= 64 * 64e3);
  // The simulated schedule of every worker's updaters is on every rank.
  CHECK(u64.algorithm > u1.algorithm);
  CHECK(app::describe_memory(u64).find("4 workers x") != std::string::npos);
}

TEST_CASE("preflight: adaptive_sgd's mega-batch is in the estimate and names megabatch") {
  const models::Task t = task_of(R"({"name": "quadratic", "train_size": 4096})");
  const auto e = exp_of(R"({"name": "m", "base": {"steps": 1, "workers": 8,
      "batch_size": 4096, "algorithm": {"name": "adaptive_sgd", "megabatch": 262144}}})");
  const auto m = app::estimate_memory(e.runs[0].cfg, t, 1);
  CHECK(m.total() > 3e10);  // 8 workers x 2^18 batches x 4096 indices of 4 bytes
  CHECK(m.dominant == "algorithm.megabatch");
  CHECK(app::key_path(e, e.runs[0], m.dominant) == "$.base.algorithm.megabatch");
}

TEST_CASE("preflight: the results estimate follows steps / log_every") {
  const models::Task t = task_of(R"({"name": "quadratic", "train_size": 64})");
  auto bytes = [&](const std::string& base) {
    return app::estimate_results_bytes(exp_of(R"({"name": "m", "base": {)" + base + "}}").runs[0].cfg, t);
  };
  const double a = bytes(R"("steps": 1000, "log_every": 1)");
  const double b = bytes(R"("steps": 1000, "log_every": 10)");
  CHECK(a - b == doctest::Approx(8.0 * 9.0 * 900.0).epsilon(0.01));
  CHECK(bytes(R"("steps": 1000000000000, "log_every": 1)") > 7e13);  // 1e12 points x 9 curves x 8 B
}

TEST_CASE("preflight: key_path names the base key or the sweep entry of the run") {
  const auto e = exp_of(R"({"name": "m", "base": {"steps": 1},
      "sweep": {"workers": [2, 8], "model+lr": [[{"name": "quadratic", "train_size": 5}, 0.1],
                                                ["quadratic", 0.2]]}})");
  REQUIRE(e.runs.size() == 4);
  CHECK(app::key_path(e, e.runs[0], "steps") == "$.base.steps (run " + e.runs[0].id + ")");
  CHECK(app::key_path(e, e.runs[2], "workers") == "$.sweep.workers[1] (run " + e.runs[2].id + ")");
  CHECK(app::key_path(e, e.runs[0], "model.train_size") ==
        "$.sweep[\"model+lr\"][0][0].train_size (run " + e.runs[0].id + ")");
  CHECK(app::key_path(e, e.runs[1], "model.train_size") ==
        "$.sweep[\"model+lr\"][1][0] (run " + e.runs[1].id + ")");
  const auto one = exp_of(R"({"name": "m", "base": {"steps": 1}})");
  CHECK(app::key_path(one, one.runs[0], "algorithm.updaters") == "$.base.algorithm.updaters");
}

TEST_CASE("preflight: sampler construction answers a signal and keeps its permutation") {
  // The interruptible shuffle draws exactly what Rng::shuffle draws (curves unchanged).
  std::vector<uint32_t> ref(3000);
  for (size_t i = 0; i < ref.size(); ++i) ref[i] = static_cast<uint32_t>(i);
  core::Rng r = core::Rng::stream({7, 0x5eed5eedULL});
  r.shuffle(std::span<uint32_t>(ref));
  CHECK(train::Sampler::global_permutation(3000, 7) == ref);
  core::request_interrupt_for_test(15);
  CHECK_THROWS_AS(train::Sampler::global_permutation(3000, 7), core::Interrupted);
  CHECK_THROWS_AS(train::Sampler(3000, 2, 0, 7), core::Interrupted);
  core::request_interrupt_for_test(0);
  CHECK(train::Sampler(3000, 2, 0, 7).shard_size() == 1500);
}
