// local_sgd / post_local_sgd (algorithms/local_sgd.cpp, post_local_sgd.cpp):
//  - H = 1 with plain SGD is sync_sgd with combine = average: (1/W) sum (w - lr g_k) =
//    w - lr avg(g), equal up to float rounding;
//  - the averaging schedule (SyncFrequency) switches exactly at round(switch_at x T) and
//    ends with a final round, as recorded in workers/averaged_after_step.
#include <doctest/doctest.h>
#include <mpi.h>

#include <cmath>
#include <string>
#include <vector>

#include "algorithms/async_common.h"
#include "app/exec/runner.h"
#include "app/exec/training_loop.h"
#include "app/plan/sweep_plan.h"
#include "app/experiment/spec.h"
#include "tests/unit/run_spec.h"

using namespace wb;
using test::run_spec;
using test::find;

namespace {

double rel(double a, double b) {
  const double d = std::fabs(a - b), s = std::max(std::fabs(a), std::fabs(b));
  return s == 0 ? d : d / s;
}

}  // namespace

TEST_CASE("local_sgd with H = 1 and plain SGD equals sync_sgd average") {
  for (const char* model : {"quadratic", "cubic"}) {
    for (int W : {1, 2, 3, 4}) {
      const std::string common = std::string(R"("model": ")") + model +
                                 R"(", "batch_size": 3, "lr": 0.03, "steps": 40, "seed": 5, "workers": )" +
                                 std::to_string(W);
      auto sync = run_spec(common + R"(, "algorithm": {"name": "sync_sgd", "combine": "average"})");
      auto local = run_spec(common + R"(, "algorithm": {"name": "local_sgd", "H": 1})");
      INFO(model << " W=" << W);
      REQUIRE(sync.curves.size() == local.curves.size());
      for (size_t i = 0; i < sync.curves.size(); ++i)
        CHECK(rel(sync.curves.train_loss[i], local.curves.train_loss[i]) <= 1e-5);
      const auto* a = find(sync, "final_params");
      const auto* b = find(local, "final_params");
      REQUIRE(a);
      REQUIRE(b);
      for (size_t j = 0; j < a->data.size(); ++j) CHECK(rel(a->data[j], b->data[j]) <= 1e-5);
      // Same simulated time: each step one slowest compute + one collective.
      CHECK(rel(sync.sim_s, local.sim_s) <= 1e-12);
    }
  }
}

TEST_CASE("SyncFrequency: K = 1 up to the switch step, then H, and a final round") {
  algo::SyncFrequency f(20, 0.5, 4);
  CHECK(f.switch_step() == 10);
  std::vector<int64_t> rounds;
  int64_t s_pre = 0;
  for (int64_t s = 1; s <= 20; ++s)
    if (f.due(s, s_pre)) {
      rounds.push_back(s);
      s_pre = s;
    }
  CHECK(rounds == std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 14, 18, 20});
  algo::SyncFrequency local(10, 0.0, 3);  // plain local SGD
  CHECK(local.period(1) == 3);
  CHECK(local.due(3, 0));
  CHECK_FALSE(local.due(2, 0));
  CHECK(local.due(10, 9));  // final round
}

TEST_CASE("post_local_sgd switches exactly at the configured step") {
  for (int W : {2, 3}) {
    for (double at : {0.0, 0.25, 0.5, 1.0}) {
      auto r = run_spec(R"("model": "cubic", "batch_size": 2, "lr": 0.02, "steps": 24, "workers": )" +
                        std::to_string(W) +
                        R"(, "algorithm": {"name": "post_local_sgd", "H": 5, "switch_at": )" +
                        std::to_string(at) + "}");
      const auto* s = find(r, "workers/averaged_after_step");
      REQUIRE(s);
      const int64_t S = std::llround(at * 24);
      std::vector<double> want;
      for (int64_t k = 1; k <= S; ++k) want.push_back(static_cast<double>(k));
      for (int64_t k = S + 5; k <= 24; k += 5) want.push_back(static_cast<double>(k));
      if (want.empty() || want.back() != 24) want.push_back(24);
      INFO("W=" << W << " switch_at=" << at);
      CHECK(s->data == want);
    }
  }
}

TEST_CASE("post_local_sgd with switch_at = 1 equals local_sgd with H = 1") {
  const std::string common =
      R"("model": "cubic", "batch_size": 2, "lr": 0.02, "steps": 30, "workers": 3,
         "optimizer": {"name": "sgd", "momentum": 0.9})";
  auto a = run_spec(common + R"(, "algorithm": {"name": "post_local_sgd", "H": 7, "switch_at": 1})");
  auto b = run_spec(common + R"(, "algorithm": {"name": "local_sgd", "H": 1})");
  REQUIRE(a.curves.size() == b.curves.size());
  for (size_t i = 0; i < a.curves.size(); ++i) CHECK(a.curves.train_loss[i] == b.curves.train_loss[i]);
}

TEST_CASE("max_abs: the largest |x| of the non-NaN elements, as the serial std::max chain gives it") {
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i)) * (1.0f + static_cast<float>(i % 13));
  auto serial = [](std::span<const float> v) {
    double m = 0;
    for (float a : v) m = std::max(m, static_cast<double>(std::fabs(a)));
    return m;
  };
  for (size_t n : {size_t{0}, size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{999}, size_t{1000}}) {
    const std::span<const float> s(x.data(), n);
    CHECK(algo::max_abs(s) == serial(s));
  }
  x[500] = -1e30f;  // in a lane, then in the tail
  CHECK(algo::max_abs(x) == static_cast<double>(1e30f));
  x[500] = 0;
  x[999] = -2e30f;
  CHECK(algo::max_abs(x) == serial(x));
  x[7] = NAN;  // skipped, as std::max(m, NaN) keeps m
  x[998] = NAN;
  CHECK(algo::max_abs(x) == serial(x));
  CHECK(algo::max_abs(x) == static_cast<double>(2e30f));
}
