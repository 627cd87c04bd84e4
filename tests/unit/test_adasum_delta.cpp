// adasum apply = "delta" (Horovod's DistributedOptimizer with op=Adasum;
// Maleki et al., arXiv:2006.02924, 4.1 Fig. 3), local_steps (accumulate / optimizer_steps) and sync_sgd with any
// optimizer:
//  - W = 1: Adasum-delta with any optimizer IS the plain optimizer, bit for bit;
//  - W = 2: orthogonal deltas add up, parallel ones average (the combination's algebra);
//  - gradient accumulation over k micro-batches equals one step on the concatenated batch
//    (the toys' loss is a mean over the batch);
//  - "Adam with averaging" vs "Adam with Adasum deltas" is one sweep key.
#include <doctest/doctest.h>
#include <mpi.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "app/exec/runner.h"
#include "app/exec/training_loop.h"
#include "app/plan/sweep_plan.h"
#include "app/experiment/spec.h"
#include "comm/collectives.h"
#include "tests/unit/run_spec.h"

using namespace wb;
using test::run_spec;

namespace wb::algo {
// algorithms/adasum.cpp: delta_k = w_k - start_k, Adasum over the W workers, w_k = start_k + delta.
void apply_adasum_deltas(comm::Collectives& coll, std::span<const std::span<float>> w,
                         std::span<const std::vector<float>> start,
                         std::span<const std::span<float>> delta,
                         std::span<const comm::Segment> segs);
}  // namespace wb::algo

namespace {

const char* kOptimizers[] = {
    R"("sgd")",
    R"({"name": "sgd", "momentum": 0.9, "nesterov": true, "weight_decay": 0.001})",
    R"({"name": "sgd", "momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01, "weight_decay_mode": "decoupled"})",
    R"("adam")",
    R"({"name": "adamw", "weight_decay": 0.05})",
    R"({"name": "lamb", "weight_decay": 0.01})",
    R"({"name": "lars", "trust_coefficient": 0.02})",
};

// Parses and runs a single-run spec on MPI_COMM_SELF.
double rel(double a, double b) {
  const double d = std::fabs(a - b), s = std::max(std::fabs(a), std::fabs(b));
  return s == 0 ? d : d / s;
}

}  // namespace

TEST_CASE("W = 1: adasum delta with any optimizer equals the plain optimizer bit for bit") {
  for (const char* model : {"quadratic", "cubic"}) {
    for (const char* opt : kOptimizers) {
      const std::string common = std::string(R"("model": ")") + model +
                                 R"(", "workers": 1, "batch_size": 4, "lr": 0.01, "optimizer": )" + opt;
      INFO(model << " " << std::string(opt));
      // One local step per step.
      auto plain = run_spec(common + R"(, "steps": 30, "algorithm": "sync_sgd")");
      auto delta = run_spec(common + R"(, "steps": 30, "algorithm": {"name": "adasum", "apply": "delta"})");
      REQUIRE(plain.status == "completed");
      REQUIRE(delta.status == "completed");
      CHECK(delta.curves.train_loss == plain.curves.train_loss);
      CHECK(delta.series[0].data == plain.series[0].data);
      CHECK(delta.summary["final_test_loss"] == plain.summary["final_test_loss"]);
      // accumulate: k micro-batches averaged then one step == sync_sgd with the same k.
      auto plain_acc = run_spec(common + R"(, "steps": 10, "algorithm": {"name": "sync_sgd", "local_steps": 3})");
      auto delta_acc = run_spec(common + R"(, "steps": 10, "algorithm": {"name": "adasum", "apply": "delta",
                                "local_steps": 3, "local_steps_mode": "accumulate"})");
      CHECK(delta_acc.curves.train_loss == plain_acc.curves.train_loss);
      CHECK(delta_acc.series[0].data == plain_acc.series[0].data);
      // optimizer_steps: 10 steps of k = 3 local optimizer steps == 30 plain steps.
      auto delta_k = run_spec(common + R"(, "steps": 10, "algorithm": {"name": "adasum", "apply": "delta",
                              "local_steps": 3, "local_steps_mode": "optimizer_steps"})");
      CHECK(delta_k.series[0].data == plain.series[0].data);
      CHECK(delta_k.summary["samples"] == plain.summary["samples"]);
    }
  }
}

TEST_CASE("W = 2: orthogonal deltas add up, parallel deltas average (per segment)") {
  comm::Collectives coll(MPI_COMM_SELF, 2);
  const std::vector<comm::Segment> segs = {{0, 3}, {3, 2}};
  // Values are small dyadic numbers so w - start and start + delta are exact in float.
  const std::vector<float> start = {1.f, -2.f, 0.5f, 4.f, -0.25f};
  const std::vector<float> d0 = {0.5f, 0.f, -1.f, 0.25f, 0.25f};
  const std::vector<float> d1 = {0.f, 2.f, 0.f, -0.5f, 0.5f};  // orthogonal to d0 on each segment
  std::vector<std::vector<float>> starts = {start, start};
  std::vector<float> w0(5), w1(5), g0(5), g1(5);
  for (size_t i = 0; i < 5; ++i) {
    w0[i] = start[i] + d0[i];  // what each worker's local optimizer step produced
    w1[i] = start[i] + d1[i];
  }
  std::vector<std::span<float>> w = {w0, w1}, g = {g0, g1};
  algo::apply_adasum_deltas(coll, w, starts, g, segs);
  for (size_t i = 0; i < 5; ++i) {
    INFO("i = " << i);
    CHECK(g0[i] == d0[i] + d1[i]);  // the combined delta is the sum
    CHECK(w0[i] == start[i] + d0[i] + d1[i]);
    CHECK(w1[i] == w0[i]);  // every worker ends on the same model
  }
  // Parallel (equal) deltas: AS(d, d) = d (the average), not 2d.
  for (size_t i = 0; i < 5; ++i) {
    w0[i] = start[i] + d0[i];
    w1[i] = start[i] + d0[i];
  }
  algo::apply_adasum_deltas(coll, w, starts, g, segs);
  for (size_t i = 0; i < 5; ++i) {
    CHECK(w0[i] == start[i] + d0[i]);
    CHECK(w1[i] == start[i] + d0[i]);
  }
}

TEST_CASE("gradient accumulation over k micro-batches equals one step on the concatenated batch") {
  // The toys' loss is the mean over the batch, so the mean of k micro-batch gradients of
  // B samples is the gradient of the k B-sample batch (the sampler draws the same samples
  // in the same order). Equal to float rounding (the sums are grouped differently).
  const std::string common =
      R"("model": "cubic", "workers": 3, "lr": 0.01, "steps": 25, "optimizer": {"name": "sgd", "momentum": 0.9})";
  struct Case {
    const char* accumulated;  // local_steps = 4 with batch_size 2
    const char* concatenated; // local_steps = 1 with batch_size 8
  };
  const Case cases[] = {
      {R"({"name": "sync_sgd", "local_steps": 4})", R"("sync_sgd")"},
      {R"({"name": "adasum", "local_steps": 4})", R"("adasum")"},
      {R"({"name": "adasum", "apply": "delta", "local_steps": 4})", R"({"name": "adasum", "apply": "delta"})"},
  };
  for (const auto& c : cases) {
    INFO(std::string(c.accumulated));
    auto acc = run_spec(common + R"(, "batch_size": 2, "algorithm": )" + c.accumulated);
    auto cat = run_spec(common + R"(, "batch_size": 8, "algorithm": )" + c.concatenated);
    REQUIRE(acc.status == "completed");
    REQUIRE(acc.curves.size() == cat.curves.size());
    CHECK(acc.summary["samples"] == cat.summary["samples"]);
    // Step 1 starts from the same model: only the grouping of the float sums differs.
    CHECK(rel(acc.curves.train_loss[0], cat.curves.train_loss[0]) <= 1e-6);
    // Later steps: that rounding compounds through 25 momentum steps on the cubic (~1e-5);
    // a wrong semantics (sum instead of mean, a skipped micro-batch) is off by O(1).
    for (size_t i = 0; i < acc.curves.size(); ++i)
      CHECK(rel(acc.curves.train_loss[i], cat.curves.train_loss[i]) <= 1e-4);
    for (size_t j = 0; j < acc.series[0].data.size(); ++j)
      CHECK(rel(acc.series[0].data[j], cat.series[0].data[j]) <= 1e-4);
    CHECK(acc.series[0].data != std::vector<double>{1.0, -1.0, 1.0});  // it did train
  }
}

TEST_CASE("Adam with averaging vs Adam with Adasum deltas is one sweep key") {
  auto e = app::parse_experiment(R"({"name": "t", "base": {"model": "quadratic", "workers": 4,
      "batch_size": 4, "lr": 0.05, "steps": 150, "optimizer": "adam",
      "schedule": {"name": "warmup_linear", "warmup": 0.1},
      "converge": {"enabled": true, "tol": 1e-6}},
      "sweep": {"algorithm": ["sync_sgd", {"name": "adasum", "apply": "delta"}]}})",
                                "t.json");
  REQUIRE(e.runs.size() == 2);
  CHECK(e.runs[0].id != e.runs[1].id);
  CHECK(e.runs[0].cfg.optimizer.value()["name"] == "adam");
  CHECK(e.runs[1].cfg.algorithm.value()["apply"] == "delta");
  app::TaskCache cache;
  std::vector<double> final_loss;
  for (const auto& rs : e.runs) {
    INFO(rs.id);
    auto res = app::execute_run(rs, cache.get(rs.cfg.model.value()), MPI_COMM_SELF, nullptr);
    // lr = 0 at step 0 (warmup from zero) must not read as divergence or convergence.
    CHECK(res.status == "completed");
    CHECK(res.summary["steps"].get<int64_t>() > 1);
    CHECK(res.curves.train_loss.back() < res.curves.train_loss.front());
    final_loss.push_back(res.curves.train_loss.back());
  }
  CHECK(final_loss[0] != final_loss[1]);  // local Adam states: a different trajectory
}

TEST_CASE("adasum parameters: optimizer_steps needs apply = delta") {
  CHECK_THROWS_AS(app::parse_experiment(R"({"name": "t", "base": {"algorithm": {"name": "adasum",
      "local_steps": 2, "local_steps_mode": "optimizer_steps"}}})",
                                       "t.json"),
                  UserError);
  CHECK_NOTHROW(app::parse_experiment(R"({"name": "t", "base": {"algorithm": {"name": "adasum",
      "apply": "delta", "local_steps": 2, "local_steps_mode": "optimizer_steps"}}})",
                                     "t.json"));
  CHECK_THROWS_AS(app::parse_experiment(R"({"name": "t", "base": {"algorithm": {"name": "sync_sgd",
      "local_steps": 0}}})",
                                       "t.json"),
                  UserError);
}

TEST_CASE("an epochs budget counts every micro-batch of local_steps (sync_sgd, adasum both modes)") {
  // A step of local_steps k processes W x batch_size x k samples; the budget in epochs must
  // divide by that, not by W x batch_size (it did: epochs 0.5 at k = 16 trained 8 epochs).
  const std::string common = R"("model": "quadratic", "workers": 2, "batch_size": 4, "lr": 0.01, "epochs": 2)";
  const auto one = run_spec(common + R"(, "algorithm": "sync_sgd")");
  REQUIRE(one.status == "completed");
  const double samples1 = one.summary["samples"].get<double>();
  const int64_t steps1 = one.summary["steps"].get<int64_t>();
  for (const char* alg : {R"({"name": "sync_sgd", "local_steps": 4})",
                          R"({"name": "adasum", "local_steps": 4})",
                          R"({"name": "adasum", "apply": "delta", "local_steps": 4, "local_steps_mode": "optimizer_steps"})"}) {
    INFO(alg);
    const auto r = run_spec(common + R"(, "algorithm": )" + alg);
    REQUIRE(r.status == "completed");
    const int64_t steps = r.summary["steps"].get<int64_t>();
    CHECK(steps == (steps1 + 3) / 4);  // ceil(2 N / (W B 4)) with steps1 = ceil(2 N / (W B))
    // the same epochs of data, within one step of k micro-batches
    CHECK(std::fabs(r.summary["samples"].get<double>() - samples1) <= 2 * 4 * 4);
    CHECK(r.curves.epoch.back() == doctest::Approx(2.0).epsilon(0.05));
  }
}

TEST_CASE("a profile's elementwise entry prices adasum delta's passes, and only with a profile") {
  // test_const_grad has n = 1000 parameters and costs the profile's 1 ms a batch; the links
  // are free. Adasum delta makes 3 element-wise passes a step (start, w - start, start +
  // delta) over n floats: with 1e-8 s a float a pass, a step costs 1e-3 + 3 x 1000 x 1e-8 s;
  // a gradient step makes none, and without the entry both cost 1 ms.
  auto run = [](const char* apply, bool elementwise) {
    json prof = json::parse(R"({"links": {"intra": {
        "p2p": [{"max_bytes": 1e18, "alpha_s": 0, "beta_s_per_byte": 0}],
        "allreduce": [{"max_bytes": 1e18, "alpha_s": 0, "beta_s_per_byte": 0}],
        "adasum": [{"max_bytes": 1e18, "alpha_s": 0, "beta_s_per_byte": 0}]}},
        "compute": {"test_const_grad": {"fixed_s": 1e-3, "per_sample_s": 0}}})");
    if (elementwise) prof["elementwise"] = {{"s_per_float", 1e-8}};
    // a new name for each profile: a process reads a profile path once (sim/cost_model.h
    // cached_cost_profile), as a sweep must price every run with one profile
    static int calls = 0;
    const std::string path = "/tmp/wb_test_adasum_profile_" + std::to_string(::getpid()) + "_" +
                             std::to_string(++calls) + ".json";
    std::ofstream(path) << prof.dump();
    const auto r = run_spec(std::string(R"("model": "test_const_grad", "batch_size": 4, "lr": 0.01,
        "steps": 20, "workers": 2, "clock": {"profile": ")") + path + R"("},
        "algorithm": {"name": "adasum", "apply": ")" + apply + "\"}");
    std::remove(path.c_str());
    REQUIRE(r.status == "completed");
    return r.sim_s;
  };
  CHECK(run("gradient", false) == doctest::Approx(20 * 1e-3).epsilon(1e-9));
  CHECK(run("delta", false) == doctest::Approx(20 * 1e-3).epsilon(1e-9));
  CHECK(run("gradient", true) == doctest::Approx(20 * 1e-3).epsilon(1e-9));
  CHECK(run("delta", true) == doctest::Approx(20 * (1e-3 + 3 * 1000 * 1e-8)).epsilon(1e-9));
}
