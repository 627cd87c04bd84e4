// Diagnostics against closed forms (a wrong implementation must fail these).
#include <doctest/doctest.h>
#include <mpi.h>

#include <cmath>

#include "app/exec/runner.h"
#include "app/exec/training_loop.h"
#include "app/metrics/diagnostics.h"
#include "app/plan/sweep_plan.h"
#include "app/experiment/spec.h"

using namespace wb;

namespace {
struct Fixture {
  models::Task task;
  train::RunConfig cfg;
  sim::SimClock clock;
  std::vector<train::Worker> workers;
  comm::Collectives coll;
  Fixture(const char* model, int W)
      : task(models::model_registry().create(
                 models::model_registry().resolve(json(model), core::Where{}), 0)->make()),
        coll(MPI_COMM_SELF, W) {
    workers.resize(static_cast<size_t>(W));
    for (int k = 0; k < W; ++k) {
      workers[k].id = k;
      workers[k].w.assign(task.model->num_params(), 0.5f);
      workers[k].g.assign(task.model->num_params(), 0.f);
    }
  }
  algo::StepContext ctx() {
    algo::StepContext c{workers, coll, *task.model, *task.train, cfg, clock};
    c.W = static_cast<int>(workers.size());
    c.lr = 0.1;
    return c;
  }
  std::vector<core::Series> measure() {
    train::MetricsParams p;
    parse_value(json::parse(R"({"orthogonality": {"every": 1}, "diversity": {"every": 1}})"), p,
                core::Where{});
    app::Diagnostics d(p, *task.model, static_cast<int>(workers.size()));
    auto c = ctx();
    d.on_gradients(c);
    std::vector<core::Series> out;
    d.append_series(out);
    return out;
  }
};
const core::Series& find(const std::vector<core::Series>& s, const std::string& path) {
  for (auto& x : s)
    if (x.path == path) return x;
  FAIL("no series " << path);
  return s[0];
}
}  // namespace

TEST_CASE("orthogonal gradients: orthogonality 1 and diversity 1") {
  Fixture f("cubic", 3);
  f.workers[0].g = {2.f, 0.f, 0.f};
  f.workers[1].g = {0.f, -1.f, 0.f};
  f.workers[2].g = {0.f, 0.f, 5.f};
  auto s = f.measure();
  const auto& o = find(s, "metrics/orthogonality");
  const auto& d = find(s, "metrics/diversity");
  REQUIRE(o.cols == 2);  // one tensor + mean
  CHECK(o.data[0] == doctest::Approx(1.0));
  CHECK(o.data[1] == doctest::Approx(1.0));
  CHECK(d.data[0] == doctest::Approx(1.0));
  CHECK(d.data[1] == doctest::Approx(1.0));
  CHECK(o.string_list_attrs.at("tensor_names") == std::vector<std::string>{"coeffs", "mean"});
  CHECK(find(s, "metrics/orthogonality_step").data == std::vector<double>{0});
}

TEST_CASE("identical gradients: orthogonality 1/W and diversity 1/W") {
  for (int W : {2, 4, 5}) {
    Fixture f("cubic", W);
    for (auto& w : f.workers) w.g = {1.f, -2.f, 0.5f};
    auto s = f.measure();
    CHECK(find(s, "metrics/orthogonality").data[0] == doctest::Approx(1.0 / W));
    CHECK(find(s, "metrics/diversity").data[0] == doctest::Approx(1.0 / W));
  }
}

namespace {
app::RunResult run_with_metrics(const std::string& model, int W, int steps, double lr,
                               MPI_Comm comm = MPI_COMM_SELF, const std::string& extra = "") {
  auto e = app::parse_experiment(
      R"({"name": "t", "base": {"model": ")" + model + R"(", "workers": )" + std::to_string(W) +
          R"(, "batch_size": 2, "lr": )" + std::to_string(lr) + R"(, "steps": )" +
          std::to_string(steps) + R"(, "algorithm": "adasum", "metrics": {"orthogonality": {"every": 1},
          "diversity": {"every": 2}, "seq_emulation": {"every": 1)" + extra + "}}}}",
      "t.json");
  app::TaskCache cache;
  return app::execute_run(e.runs[0], cache.get(e.runs[0].cfg.model.value()), comm, nullptr);
}
}  // namespace

TEST_CASE("quadratic: the Taylor expansion is exact, so w_emu equals w_seq") {
  auto r = run_with_metrics("quadratic", 4, 5, 0.05);
  const auto& se = find(r.series, "metrics/seq_error");
  REQUIRE(se.cols == 7);
  REQUIRE(se.rows == 5);
  for (size_t i = 0; i < se.rows; ++i) {
    CHECK(se.data[i * 7 + 6] < 1e-10);                               // seq_vs_emu
    CHECK(se.data[i * 7 + 0] == doctest::Approx(se.data[i * 7 + 3]).epsilon(1e-8));  // vs emu == vs seq
  }
  CHECK(find(r.series, "metrics/diversity_step").data == std::vector<double>{0, 2, 4});
}

TEST_CASE("W = 1: every sequential-emulation error is 0") {
  auto r = run_with_metrics("cubic", 1, 3, 0.05);
  const auto& se = find(r.series, "metrics/seq_error");
  for (double v : se.data) CHECK(v == doctest::Approx(0.0));
  for (double v : find(r.series, "metrics/orthogonality").data) CHECK(v == doctest::Approx(1.0));
}

TEST_CASE("W = 2 on the quadratic: errors equal the hand-computed values") {
  // Replay worker k's first batch (same sampler as the run), then compute by hand:
  //   phi = (x, 1); g_k = 2 mean (phi.w - r) phi; H_k = 2 mean phi phi^T
  //   w_emu = w0 - a (g1 + g2 - a H2 g1);  w_seq = (w0 - a g1) - a grad_2(w0 - a g1)
  const double a = 0.05;
  auto r = run_with_metrics("quadratic", 2, 1, a);
  app::TaskCache cache;
  const auto& task = cache.get(models::model_registry().resolve(json("quadratic"), core::Where{}));
  std::vector<double> w0 = {1.0, -1.0};
  double g[2][2], H[2][2][2];
  std::vector<std::vector<double>> x(2), y(2);
  for (int k = 0; k < 2; ++k) {
    train::Sampler s(task.train->size(), 2, k, 1);
    std::vector<uint32_t> idx(2);
    s.next(2, idx);
    models::Batch b;
    task.train->reserve(b, 2);
    task.train->gather(idx, b);
    g[k][0] = g[k][1] = 0;
    H[k][0][0] = H[k][0][1] = H[k][1][0] = H[k][1][1] = 0;
    for (int i = 0; i < 2; ++i) {
      const double xi = b.x[i], ri = static_cast<double>(b.y[i]) - xi * xi;
      x[k].push_back(xi);
      y[k].push_back(ri);
      const double e = w0[0] * xi + w0[1] - ri;
      g[k][0] += e * xi;  // 2 * mean over 2 samples = sum
      g[k][1] += e;
      H[k][0][0] += xi * xi;
      H[k][0][1] += xi;
      H[k][1][0] += xi;
      H[k][1][1] += 1;
    }
  }
  double w_emu[2], w_seq[2], w1[2], g2w1[2] = {0, 0}, w_sum[2], w_avg[2];
  for (int j = 0; j < 2; ++j) {
    const double h2 = g[1][j] - a * (H[1][j][0] * g[0][0] + H[1][j][1] * g[0][1]);
    w_emu[j] = w0[j] - a * (g[0][j] + h2);
    w1[j] = w0[j] - a * g[0][j];
    w_sum[j] = w0[j] - a * (g[0][j] + g[1][j]);
    w_avg[j] = w0[j] - a * (g[0][j] + g[1][j]) / 2;
  }
  for (int i = 0; i < 2; ++i) {
    const double e = w1[0] * x[1][i] + w1[1] - y[1][i];
    g2w1[0] += e * x[1][i];
    g2w1[1] += e;
  }
  for (int j = 0; j < 2; ++j) w_seq[j] = w1[j] - a * g2w1[j];
  // Adasum of two vectors (single tensor).
  const double dot = g[0][0] * g[1][0] + g[0][1] * g[1][1];
  const double aa = g[0][0] * g[0][0] + g[0][1] * g[0][1], bb = g[1][0] * g[1][0] + g[1][1] * g[1][1];
  double w_as[2];
  for (int j = 0; j < 2; ++j)
    w_as[j] = w0[j] - a * ((1 - dot / (2 * aa)) * g[0][j] + (1 - dot / (2 * bb)) * g[1][j]);
  auto d = [](const double* p, const double* q) { return std::hypot(p[0] - q[0], p[1] - q[1]); };
  const double de = d(w_emu, w0.data()), ds = d(w_seq, w0.data());
  const auto& se = find(r.series, "metrics/seq_error");
  CHECK(se.data[0] == doctest::Approx(d(w_as, w_emu) / de).epsilon(1e-9));
  CHECK(se.data[1] == doctest::Approx(d(w_sum, w_emu) / de).epsilon(1e-9));
  CHECK(se.data[2] == doctest::Approx(d(w_avg, w_emu) / de).epsilon(1e-9));
  CHECK(se.data[3] == doctest::Approx(d(w_as, w_seq) / ds).epsilon(1e-9));
  CHECK(se.data[4] == doctest::Approx(d(w_sum, w_seq) / ds).epsilon(1e-9));
  CHECK(se.data[5] == doctest::Approx(d(w_avg, w_seq) / ds).epsilon(1e-9));
}

TEST_CASE("metrics are off by default and bad metric values are rejected") {
  auto e = app::parse_experiment(R"({"name": "t", "base": {}})", "t.json");
  CHECK_FALSE(e.runs[0].cfg.metrics.any());
  CHECK_THROWS_WITH_AS(app::parse_experiment(
                           R"({"name": "t", "base": {"metrics": {"seq_emulation": {"workers": "some"}}}})", "t.json"),
                       doctest::Contains("$.base.metrics.seq_emulation.workers: expected \"all\" or an integer"),
                       UserError);
  CHECK_THROWS_WITH_AS(app::parse_experiment(
                           R"({"name": "t", "base": {"metrics": {"orthogonality": {"every": -1}}}})", "t.json"),
                       doctest::Contains("$.base.metrics.orthogonality.every: must be >= 0"), UserError);
}
