// Adaptive SGD (algorithms/adaptive_core.h, adaptive_sgd.cpp, elastic_sgd.cpp):
// Algorithm 1 and Algorithm 2 against hand-computed examples, the Fig. 4 scheduler, and
// whole runs: homogeneous workers keep equal batches and merge exactly like elastic_sgd;
// heterogeneous ones get batch sizes ordered by speed.
#include <doctest/doctest.h>
#include <mpi.h>

#include <cmath>
#include <string>

#include "algorithms/adaptive_core.h"
#include "app/exec/runner.h"
#include "app/exec/training_loop.h"
#include "app/plan/sweep_plan.h"
#include "app/experiment/spec.h"
#include "sim/clock.h"

using namespace wb;
namespace ad = wb::algo::adaptive;

namespace {

app::RunResult run_spec(const std::string& base) {
  auto e = app::parse_experiment(R"({"name": "t", "base": )" + base + "}", "t.json");
  app::TaskCache cache;
  return app::execute_run(e.runs[0], cache.get(e.runs[0].cfg.model.value()), MPI_COMM_SELF, nullptr);
}

const core::Series& series(const app::RunResult& r, const std::string& path) {
  for (const auto& s : r.series)
    if (s.path == path) return s;
  FAIL("no series " << path);
  static core::Series none;
  return none;
}

}  // namespace

TEST_CASE("Algorithm 1: hand-computed scaling, linear LR rule, b_max bound") {
  // beta = 4, b_min = 8, b_max = 64; u = {30, 20} -> mu = 25.
  std::vector<int64_t> b = {64, 64};
  std::vector<double> lr = {0.1, 0.1};
  const std::vector<int64_t> u = {30, 20};
  CHECK(ad::scale_batch_sizes(b, lr, u, 4.0, 8, 64) == 1);
  CHECK(b[0] == 64);  // 64 + 4*5 = 84 > b_max: unchanged (not clamped), line 3
  CHECK(lr[0] == 0.1);
  CHECK(b[1] == 44);  // 64 - 4*5, line 8
  CHECK(lr[1] == doctest::Approx(0.1 * 44 / 64));  // line 7
  // Next round the fast worker may grow again once it has room.
  b = {40, 44};
  lr = {0.1 * 40 / 64, 0.1 * 44 / 64};
  CHECK(ad::scale_batch_sizes(b, lr, u, 4.0, 8, 64) == 2);
  CHECK(b == std::vector<int64_t>{60, 24});
  CHECK(lr[0] == doctest::Approx(0.1 * 60 / 64));
  CHECK(lr[1] == doctest::Approx(0.1 * 24 / 64));
}

TEST_CASE("Algorithm 1: b_min bound, equal updates, three workers with a fractional mean") {
  std::vector<double> lr = {1.0, 1.0};
  std::vector<int64_t> b = {10, 60};
  // mu = 20: w0 10 - 4*10 = -30 < b_min, w1 60 + 4*10 = 100 > b_max: nothing moves.
  CHECK(ad::scale_batch_sizes(b, lr, std::vector<int64_t>{10, 30}, 4.0, 8, 64) == 0);
  CHECK(b == std::vector<int64_t>{10, 60});
  CHECK(lr == std::vector<double>{1.0, 1.0});
  // Exactly at the bound is allowed (<=, >=).
  b = {12, 60};
  CHECK(ad::scale_batch_sizes(b, lr, std::vector<int64_t>{19, 21}, 4.0, 8, 64) == 2);
  CHECK(b == std::vector<int64_t>{8, 64});
  // Equal updates: no change.
  b = {32, 16};
  lr = {0.5, 0.25};
  CHECK(ad::scale_batch_sizes(b, lr, std::vector<int64_t>{7, 7}, 4.0, 8, 64) == 0);
  CHECK(b == std::vector<int64_t>{32, 16});
  // u = {3, 2, 2}: mu = 7/3; beta = 3 -> +2 and -1 (rounded to integers).
  std::vector<int64_t> b3 = {30, 30, 30};
  std::vector<double> lr3 = {0.3, 0.3, 0.3};
  CHECK(ad::scale_batch_sizes(b3, lr3, std::vector<int64_t>{3, 2, 2}, 3.0, 4, 64) == 3);
  CHECK(b3 == std::vector<int64_t>{32, 29, 29});
  CHECK(lr3[0] == doctest::Approx(0.32));
  CHECK(lr3[2] == doctest::Approx(0.29));
}

TEST_CASE("Algorithm 1: the stall at the bounds and the clamp ablation") {
  std::vector<int64_t> b = {46, 22};
  std::vector<double> lr = {0.46, 0.22};
  const std::vector<int64_t> u = {40, 62};  // mu = 51: +-11 updates, beta 4 -> +-44
  CHECK(ad::scale_batch_sizes(b, lr, u, 4.0, 8, 64) == 0);  // paper: 66 > 64, 2 < 8
  CHECK(b == std::vector<int64_t>{46, 22});
  CHECK(ad::scale_batch_sizes(b, lr, u, 4.0, 8, 64, true) == 2);
  CHECK(b == std::vector<int64_t>{8, 64});
  CHECK(lr[0] == doctest::Approx(0.08));
  CHECK(lr[1] == doctest::Approx(0.64));
}

TEST_CASE("Algorithm 2: weights by batch size when updates are equal, else by updates") {
  const std::vector<double> small = {0.01, 0.02}, big = {0.01, 0.5};
  // Equal updates: alpha = b / sum b = {0.75, 0.25}, line 3.
  auto m = ad::merge_weights(std::vector<int64_t>{5, 5}, std::vector<int64_t>{60, 20}, big, 0.1, 0.1);
  CHECK(!m.perturbed);  // replica 1 has ||w||/|w| = 0.5 >= pert_thr
  CHECK(m.alpha[0] == doctest::Approx(0.75));
  CHECK(m.alpha[1] == doctest::Approx(0.25));
  // Same, all replicas regularized: r = the larger batch, s = the smaller (tie on u).
  m = ad::merge_weights(std::vector<int64_t>{5, 5}, std::vector<int64_t>{60, 20}, small, 0.1, 0.1);
  CHECK(m.perturbed);
  CHECK(m.r == 0);
  CHECK(m.s == 1);
  CHECK(m.alpha[0] == doctest::Approx(0.825));  // 0.75 * 1.1, line 9
  CHECK(m.alpha[1] == doctest::Approx(0.225));  // 0.25 * 0.9
  CHECK(m.sum() == doctest::Approx(1.05));      // denormalized on purpose (section 3.3)
  const auto mr = ad::merge_weights(std::vector<int64_t>{5, 5}, std::vector<int64_t>{60, 20},
                                    small, 0.1, 0.1, /*renormalize=*/true);
  CHECK(mr.alpha[0] == doctest::Approx(0.825 / 1.05));
  CHECK(mr.sum() == doctest::Approx(1.0));
  // Unequal updates: alpha = u / sum u, line 5; r = argmax u, s = argmin u.
  const std::vector<double> small3 = {0.01, 0.01, 0.01};
  m = ad::merge_weights(std::vector<int64_t>{6, 3, 3}, std::vector<int64_t>{64, 32, 32}, small3, 0.1, 0.1);
  CHECK(m.perturbed);
  CHECK(m.r == 0);
  CHECK(m.s == 1);  // tie between 1 and 2 (equal u and b): the lower id
  CHECK(m.alpha[0] == doctest::Approx(0.5 * 1.1));
  CHECK(m.alpha[1] == doctest::Approx(0.25 * 0.9));
  CHECK(m.alpha[2] == doctest::Approx(0.25));
  // pert_thr is a strict bound.
  m = ad::merge_weights(std::vector<int64_t>{6, 3}, std::vector<int64_t>{8, 8}, std::vector<double>{0.1, 0.01}, 0.1, 0.1);
  CHECK(!m.perturbed);
  CHECK(m.alpha[0] == doctest::Approx(2.0 / 3));
  // Everything equal: no most-updated replica, no perturbation.
  m = ad::merge_weights(std::vector<int64_t>{4, 4, 4}, std::vector<int64_t>{8, 8, 8}, small3, 0.1, 0.1);
  CHECK(!m.perturbed);
  CHECK(m.alpha[1] == doctest::Approx(1.0 / 3));
}

TEST_CASE("Algorithm 2 line 11: equal weights and gamma = 0 is the plain average; momentum") {
  const std::vector<float> a = {1, 2, 3}, b = {3, 6, -1}, c = {2, 1, 1};
  const std::vector<std::span<const float>> reps = {a, b, c};
  std::vector<float> w = {9, 9, 9}, wp = {7, 7, 7};
  const std::vector<double> third(3, 1.0 / 3);
  ad::merge_models(reps, third, 0.0, w, wp);
  CHECK(w[0] == doctest::Approx(2.0));
  CHECK(w[1] == doctest::Approx(3.0));
  CHECK(w[2] == doctest::Approx(1.0));
  CHECK(wp == std::vector<float>{9, 9, 9});
  // gamma = 0.9: w' = avg + 0.9 (w - w_p); w_p <- w.
  std::vector<float> w2 = {1}, wp2 = {0};
  const std::vector<float> r0 = {2}, r1 = {4};
  const std::vector<std::span<const float>> reps2 = {r0, r1};
  const std::vector<double> half = {0.5, 0.5};
  ad::merge_models(reps2, half, 0.9, w2, wp2);
  CHECK(w2[0] == doctest::Approx(3.9));
  CHECK(wp2[0] == 1.0f);
}

TEST_CASE("scheduler: speeds (1.0, 0.5), equal batches -> the fast worker does ~2x the batches") {
  sim::ClockParams p;
  p.flops_per_s = 1e9;
  sim::HeterogeneityParams h;
  h.speeds = {1.0, 0.5};
  const sim::SimClock clock(p, h, 2, 5);
  std::vector<uint64_t> draws(2, 0);
  const std::vector<int64_t> b = {32, 32};
  auto cost = [&](int k, int64_t n) {
    return clock.compute_s(k, 1e6 * static_cast<double>(n), draws[static_cast<size_t>(k)]++);
  };
  const auto s = ad::schedule_megabatch(2, 100 * 32, b, 0.0, cost);
  CHECK(s.updates[0] + s.updates[1] == 100);
  CHECK(static_cast<double>(s.updates[0]) / static_cast<double>(s.updates[1]) ==
        doctest::Approx(2.0).epsilon(0.05));
  CHECK(s.samples[0] + s.samples[1] == 3200);
  // Dynamic dispatch leaves at most one batch of idle time at the barrier.
  CHECK(s.end - s.busy_s[0] <= clock.compute_s(0, 32e6, 0) + 1e-12);
  CHECK(s.end - s.busy_s[1] <= clock.compute_s(1, 32e6, 0) + 1e-12);
  // The worked example of adaptive_core.h.
  const auto ex = ad::schedule_megabatch(2, 60, std::vector<int64_t>{10, 10}, 0.0,
                                         [](int k, int64_t) { return k == 0 ? 1.0 : 2.0; });
  CHECK(ex.updates == std::vector<int64_t>{4, 2});
  CHECK(ex.end == 4.0);
  // The last batch is cut to the samples left.
  const auto cut = ad::schedule_megabatch(2, 25, std::vector<int64_t>{10, 10}, 0.0,
                                          [](int, int64_t n) { return static_cast<double>(n); });
  CHECK(cut.batches.back().size == 5);
}

TEST_CASE("homogeneous workers: adaptive_sgd keeps equal batches and merges like elastic_sgd") {
  for (const char* gamma : {"0.0", "0.9"}) {
    const std::string common = std::string(R"("model": "quadratic", "workers": 4, "batch_size": 8,
        "lr": 0.05, "steps": 6, "seed": 3, "eval_every": 1)");
    const auto ada = run_spec(std::string("{") + common +
                              R"(, "algorithm": {"name": "adaptive_sgd", "megabatch": 8, "gamma": )" +
                              gamma + "}}");
    const auto ela = run_spec(std::string("{") + common +
                              R"(, "algorithm": {"name": "elastic_sgd", "megabatch": 8, "gamma": )" +
                              gamma + "}}");
    INFO("gamma " << gamma);
    REQUIRE(ada.status == "completed");
    REQUIRE(ela.status == "completed");
    for (double x : series(ada, "workers/batch_size").data) CHECK(x == 8.0);
    for (double x : series(ada, "workers/updates").data) CHECK(x == 2.0);
    for (double x : series(ada, "workers/perturbed").data) CHECK(x == 0.0);
    const auto& fa = series(ada, "final_params").data;
    const auto& fe = series(ela, "final_params").data;
    REQUIRE(fa.size() == fe.size());
    for (size_t i = 0; i < fa.size(); ++i) CHECK(fa[i] == doctest::Approx(fe[i]).epsilon(1e-6));
    REQUIRE(ada.curves.size() == ela.curves.size());
    for (size_t i = 0; i < ada.curves.size(); ++i) {
      CHECK(ada.curves.train_loss[i] == doctest::Approx(ela.curves.train_loss[i]).epsilon(1e-6));
      CHECK(ada.curves.test_loss[i] == doctest::Approx(ela.curves.test_loss[i]).epsilon(1e-6));
      CHECK(ada.curves.sim_s[i] == doctest::Approx(ela.curves.sim_s[i]).epsilon(1e-12));
      CHECK(ada.curves.samples[i] == ela.curves.samples[i]);
    }
  }
}

TEST_CASE("the epoch column counts the samples processed (mega-batches are not W x batch)") {
  // A mega-batch of M = megabatch x batch_size = 64 samples per step (split among the
  // workers), not the W x batch_size = 32 that a synchronous step takes. The runner's epoch (curves and the
  // schedules' input) must follow the samples, as it does for sync_sgd.
  auto e = app::parse_experiment(R"({"name": "t", "base": {"model": "quadratic", "workers": 4,
      "batch_size": 8, "steps": 5, "seed": 3, "algorithm": {"name": "adaptive_sgd",
      "megabatch": 8}}, "sweep": {"algorithm": [{"name": "adaptive_sgd", "megabatch": 8},
      {"name": "elastic_sgd", "megabatch": 8}, "sync_sgd"]}})", "t.json");
  app::TaskCache cache;
  const double N = static_cast<double>(cache.get(e.runs[0].cfg.model.value()).train->size());
  for (const auto& rs : e.runs) {
    const auto r = app::execute_run(rs, cache.get(rs.cfg.model.value()), MPI_COMM_SELF, nullptr);
    INFO(rs.id);
    REQUIRE(r.curves.size() == 5);
    for (size_t i = 0; i < r.curves.size(); ++i) CHECK(r.curves.epoch[i] == r.curves.samples[i] / N);
    const double per_step = r.curves.samples[1] - r.curves.samples[0];
    CHECK(per_step == (rs.id.find("sync") != std::string::npos ? 32.0 : 64.0));
  }
}

TEST_CASE("elastic_sgd with local_steps 1 and split_batch is sync_sgd with batch / W") {
  // The paper's gradient-aggregation baseline: averaging models after one SGD step from a
  // common model = averaging gradients (section 2.2). 3 mega-batches of 5 x 16 samples =
  // 15 sync steps of 4 workers x 4 samples.
  const std::string common = R"("model": "cubic", "workers": 4, "lr": 0.01, "seed": 5)";
  const auto ela = run_spec(std::string("{") + common + R"(, "batch_size": 16, "steps": 3,
      "algorithm": {"name": "elastic_sgd", "megabatch": 5, "local_steps": 1, "split_batch": true}})");
  const auto syn = run_spec(std::string("{") + common + R"(, "batch_size": 4, "steps": 15,
      "algorithm": "sync_sgd"})");
  const auto& fe = series(ela, "final_params").data;
  const auto& fs = series(syn, "final_params").data;
  REQUIRE(fe.size() == fs.size());
  for (size_t i = 0; i < fe.size(); ++i) CHECK(fe[i] == doctest::Approx(fs[i]).epsilon(1e-5));
  CHECK(ela.summary["samples"].get<int64_t>() == syn.summary["samples"].get<int64_t>());
  for (double x : series(ela, "workers/batch_size").data) CHECK(x == 4.0);
  for (double x : series(ela, "workers/updates").data) CHECK(x == 5.0);
}

TEST_CASE("heterogeneous workers: faster workers end with larger batches; elastic waits") {
  const std::string common = R"("model": {"name": "sparse_mlp", "hidden": [16],
      "synthetic": {"train_size": 2000, "test_size": 200, "features": 200, "labels": 20, "nnz": 12}},
      "workers": 4, "batch_size": 32, "lr": 0.5, "steps": 8, "seed": 2,
      "heterogeneity": {"speeds": [1.0, 0.9, 0.82, 0.76]})";
  const auto ada = run_spec(std::string("{") + common +
                            R"(, "algorithm": {"name": "adaptive_sgd", "megabatch": 40}})");
  const auto ela = run_spec(std::string("{") + common +
                            R"(, "algorithm": {"name": "elastic_sgd", "megabatch": 40}})");
  REQUIRE(ada.status == "completed");
  const auto& bs = series(ada, "workers/batch_size");
  REQUIRE(bs.cols == 4);
  const double* last = &bs.data[(bs.rows - 1) * 4];
  CHECK(last[0] >= last[1]);
  CHECK(last[1] >= last[2]);
  CHECK(last[2] >= last[3]);
  CHECK(last[3] < 32);
  const auto& up = series(ada, "workers/updates");
  CHECK(up.data[0] > up.data[3]);  // first mega-batch: equal batches, the fast worker does more
  for (double x : series(ada, "workers/lr").data) CHECK(x <= 0.5 + 1e-12);
  // Same samples per mega-batch; dynamic dispatch does not wait for the straggler.
  CHECK(ada.summary["samples"].get<int64_t>() == ela.summary["samples"].get<int64_t>());
  CHECK(ada.sim_s < ela.sim_s);
}

TEST_CASE("adaptive_sgd mode real: threads, dynamic dispatch, every sample used") {
  const auto r = run_spec(R"({"model": "quadratic", "workers": 3, "batch_size": 8, "lr": 0.05,
      "steps": 3, "heterogeneity": {"speeds": [1.0, 0.5, 0.25]},
      "algorithm": {"name": "adaptive_sgd", "megabatch": 30, "mode": "real"}})");
  REQUIRE(r.status == "completed");
  const auto& s = series(r, "workers/samples");
  for (size_t row = 0; row < s.rows; ++row)
    CHECK(s.data[row * 3] + s.data[row * 3 + 1] + s.data[row * 3 + 2] == 240.0);
  CHECK(r.summary["samples"].get<int64_t>() == 3 * 240);
  CHECK(r.sim_s > 0);
}

TEST_CASE("pert_gate relative_init: the gate in units of the initial weight norm") {
  // ||w||_2 / ||w_0||_2 stays near 1 over 4 mega-batches: a threshold of 0.5 never lets the
  // perturbation fire (the run equals pert_thr 0 under the paper's gate), 1e9 always does
  // (equals the paper's gate, which always fires at this model size, with pert_thr 1e9).
  const std::string common = R"("model": {"name": "sparse_mlp", "hidden": [8],
      "synthetic": {"train_size": 600, "test_size": 100, "features": 60, "labels": 10, "nnz": 6}},
      "workers": 2, "batch_size": 16, "lr": 0.2, "steps": 4, "seed": 4,
      "heterogeneity": {"speeds": [1.0, 0.7]})";
  auto run = [&](const std::string& alg) {
    return run_spec(std::string("{") + common + R"(, "algorithm": )" + alg + "}");
  };
  const auto rel_lo = run(R"({"name": "adaptive_sgd", "megabatch": 10, "pert_gate": "relative_init", "pert_thr": 0.5})");
  const auto never = run(R"({"name": "adaptive_sgd", "megabatch": 10, "pert_thr": 0.0})");
  const auto rel_hi = run(R"({"name": "adaptive_sgd", "megabatch": 10, "pert_gate": "relative_init", "pert_thr": 1e9})");
  const auto always = run(R"({"name": "adaptive_sgd", "megabatch": 10, "pert_thr": 1e9})");
  for (double x : series(rel_lo, "workers/perturbed").data) CHECK(x == 0.0);
  for (double x : series(rel_hi, "workers/perturbed").data) CHECK(x == 1.0);
  CHECK(series(rel_lo, "final_params").data == series(never, "final_params").data);
  CHECK(series(rel_hi, "final_params").data == series(always, "final_params").data);
  CHECK(series(rel_hi, "final_params").data != series(rel_lo, "final_params").data);
  // The recorded statistic is the gate's: ~1 relative to the initial norm.
  for (double x : series(rel_lo, "workers/l2_per_param").data) {
    CHECK(x > 0.5);
    CHECK(x < 2.0);
  }
}
