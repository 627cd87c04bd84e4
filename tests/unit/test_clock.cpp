// The simulated clock: alpha-beta costs, speed factors, deterministic jitter.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "app/exec/runner.h"
#include "app/exec/training_loop.h"
#include "app/plan/sweep_plan.h"
#include "app/experiment/spec.h"
#include "sim/clock.h"

using namespace wb;

TEST_CASE("alpha-beta collective and message costs, in-node vs cross-node") {
  sim::ClockParams p;
  p.latency_s = 1e-5;
  p.bandwidth_bytes_per_s = 1e9;
  p.intra_latency_s = 1e-6;
  p.intra_bandwidth_bytes_per_s = 1e10;
  p.node_size = 4;
  sim::SimClock c(p);
  CHECK(c.collective_s(1, 1e6) == 0.0);
  // 4 workers fit one node: 2*2*1e-6 + 2*3/4*1e6/1e10
  CHECK(c.collective_s(4, 1e6) == doctest::Approx(4e-6 + 1.5e-4));
  // 8 workers cross nodes: 2*3*1e-5 + 2*7/8*1e6/1e9
  CHECK(c.collective_s(8, 1e6) == doctest::Approx(6e-5 + 1.75e-3));
  CHECK(c.message_s(0, 3, 1e3) == doctest::Approx(1e-6 + 1e-7));
  CHECK(c.message_s(3, 4, 1e3) == doctest::Approx(1e-5 + 1e-6));
}

TEST_CASE("speeds cycle over workers; the slowest worker sets a synchronous step") {
  sim::ClockParams p;
  p.flops_per_s = 1e9;
  sim::HeterogeneityParams h;
  h.speeds = {1.0, 0.5};
  sim::SimClock c(p, h, 4, 7);
  CHECK(c.speed(0) == 1.0);
  CHECK(c.speed(3) == 0.5);
  CHECK(c.compute_s(1, 1e9, 0) == doctest::Approx(2.0));
  CHECK(c.slowest_compute_s(1e9, 0) == doctest::Approx(2.0));
}

TEST_CASE("jitter is deterministic, mean ~1, and bounded for uniform") {
  sim::ClockParams p;
  sim::HeterogeneityParams h;
  h.jitter.dist = "lognormal";
  h.jitter.sigma = 0.3;
  sim::SimClock a(p, h, 2, 11), b(p, h, 2, 11), other(p, h, 2, 12);
  double sum = 0;
  for (uint64_t d = 0; d < 20000; ++d) {
    CHECK(a.jitter(1, d) == b.jitter(1, d));
    sum += a.jitter(1, d);
  }
  CHECK(sum / 20000 == doctest::Approx(1.0).epsilon(0.02));
  CHECK(a.jitter(1, 5) != other.jitter(1, 5));
  h.jitter.dist = "uniform";
  h.jitter.sigma = 0.2;
  sim::SimClock u(p, h, 2, 1);
  for (uint64_t d = 0; d < 1000; ++d) {
    CHECK(u.jitter(0, d) >= 0.8);
    CHECK(u.jitter(0, d) <= 1.2);
  }
}

TEST_CASE("a run's sim_s grows when a worker is slower; bad heterogeneity is rejected") {
  auto sim = [](const std::string& het) {
    auto e = app::parse_experiment(R"({"name": "t", "base": {"model": "quadratic", "workers": 2,
        "batch_size": 4, "steps": 10, "clock": {"flops_per_s": 1000}, "heterogeneity": )" + het + "}}", "t.json");
    app::TaskCache cache;
    return app::execute_run(e.runs[0], cache.get(e.runs[0].cfg.model.value()), MPI_COMM_SELF, nullptr).sim_s;
  };
  const double base = sim("{}"), slow = sim(R"({"speeds": [1.0, 0.5]})");
  CHECK(slow > base * 1.5);
  CHECK_THROWS_WITH_AS(app::parse_experiment(R"({"name": "t", "base": {"heterogeneity": {"speeds": [1, 0]}}})", "t.json"),
                       doctest::Contains("$.base.heterogeneity.speeds[1]: must be > 0"), UserError);
  CHECK_THROWS_WITH_AS(app::parse_experiment(R"({"name": "t", "base": {"heterogeneity": {"jitter": {"dist": "gauss"}}}})", "t.json"),
                       doctest::Contains("$.base.heterogeneity.jitter.dist: expected one of none|lognormal|uniform"), UserError);
}

TEST_CASE("a synchronous step costs the slowest worker's OWN batch: sparse batches vary") {
  // compute_gradients prices each worker's batch with Model::flops_for_batch: for the
  // sparse MLP the cost follows the batch's non-zeros, so with a wide nnz spread the
  // per-step sim time varies; for a dense model every step costs the same.
  auto increments = [](const std::string& model) {
    auto e = app::parse_experiment(R"({"name": "t", "base": {"model": )" + model + R"(,
        "workers": 3, "batch_size": 4, "steps": 12, "clock": {"flops_per_s": 1e9}}})", "t.json");
    app::TaskCache cache;
    auto r = app::execute_run(e.runs[0], cache.get(e.runs[0].cfg.model.value()), MPI_COMM_SELF, nullptr);
    std::vector<double> d;
    for (size_t i = 1; i < r.curves.size(); ++i) d.push_back(r.curves.sim_s[i] - r.curves.sim_s[i - 1]);
    return d;
  };
  const auto dense = increments(R"("quadratic")");
  const auto sparse = increments(R"({"name": "sparse_mlp", "hidden": [8], "synthetic": {"train_size": 300,
      "test_size": 50, "features": 100, "labels": 10, "nnz": 10, "nnz_sigma": 1.5}})");
  REQUIRE(dense.size() == 11);
  REQUIRE(sparse.size() == 11);
  for (double x : dense) CHECK(x == doctest::Approx(dense[0]).epsilon(1e-9));
  const auto [lo, hi] = std::minmax_element(sparse.begin(), sparse.end());
  CHECK(*hi > *lo * 1.2);
}
