// The Horovod toy models: gradients against finite differences, the exact Hessian
// against its closed form, and end-to-end training that recovers the true coefficients.
#include <doctest/doctest.h>
#include <mpi.h>

#include <cmath>
#include <numeric>
#include <set>

#include "app/exec/runner.h"
#include "app/exec/training_loop.h"
#include "app/plan/sweep_plan.h"
#include "app/experiment/spec.h"
#include "core/progress.h"
#include "models/model.h"
#include "train/worker.h"

using namespace wb;

namespace {
models::Task make_task(const char* name, double x_max) {
  json cfg = {{"name", name}, {"x_max", x_max}};
  auto resolved = models::model_registry().resolve(cfg, core::Where{});
  return models::model_registry().create(resolved, 0)->make();
}
models::Batch first_batch(const models::Task& t, int n) {
  models::Batch b;
  std::vector<uint32_t> idx(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), 0u);
  t.train->reserve(b, n);
  t.train->gather(idx, b);
  return b;
}
}  // namespace

TEST_CASE("toy gradients match central finite differences (double)") {
  for (const char* name : {"quadratic", "cubic"}) {
    auto t = make_task(name, 2.0);
    auto b = first_batch(t, 7);
    const size_t n = t.model->num_params();
    std::vector<double> w = {0.3, -1.7, 2.2}, g(n), gp(n);
    w.resize(n);
    t.model->loss_grad_f64(w, b, g, 0);
    for (size_t j = 0; j < n; ++j) {
      const double h = 1e-5;
      auto wp = w, wm = w;
      wp[j] += h;
      wm[j] -= h;
      const double fd = (t.model->loss_grad_f64(wp, b, gp, 0) - t.model->loss_grad_f64(wm, b, gp, 0)) / (2 * h);
      CHECK(g[j] == doctest::Approx(fd).epsilon(1e-7));
    }
  }
}

TEST_CASE("toy Hessian equals 2 mean(phi phi^T) and hvp is H v") {
  auto t = make_task("quadratic", 1.5);
  auto b = first_batch(t, 5);
  std::vector<double> w = {0.1, 0.2};
  auto H = models::hessian_f64(*t.model, w, b, 0);
  double hxx = 0, hx1 = 0, h11 = 0;
  for (int i = 0; i < b.n; ++i) {
    const double x = b.x[i];
    hxx += 2 * x * x / b.n;
    hx1 += 2 * x / b.n;
    h11 += 2.0 / b.n;
  }
  CHECK(H[0] == doctest::Approx(hxx));
  CHECK(H[1] == doctest::Approx(hx1));
  CHECK(H[2] == doctest::Approx(hx1));
  CHECK(H[3] == doctest::Approx(h11));
  CHECK_THROWS_AS(models::hessian_f64(*t.model, w, b, 0, 1), UserError);
}

TEST_CASE("float training gradient agrees with the double oracle") {
  auto t = make_task("cubic", 1.0);
  auto b = first_batch(t, 16);
  std::vector<float> w = {0.5f, -0.25f, 1.f}, g(3);
  std::vector<double> wd(w.begin(), w.end()), gd(3);
  auto ws = t.model->make_workspace(16);
  const double l = t.model->loss_grad(w, b, g, *ws, 0);
  const double ld = t.model->loss_grad_f64(wd, b, gd, 0);
  CHECK(l == doctest::Approx(ld).epsilon(1e-5));
  for (int j = 0; j < 3; ++j) CHECK(g[j] == doctest::Approx(gd[j]).epsilon(1e-4));
}

TEST_CASE("worker shards are disjoint, cover the data set and reshuffle per epoch") {
  const size_t N = 103;
  const int W = 4;
  std::set<uint32_t> all;
  size_t total = 0;
  for (int k = 0; k < W; ++k) {
    train::Sampler s(N, W, k, 7);
    std::vector<uint32_t> ep1(s.shard_size()), ep2(s.shard_size());
    s.next(static_cast<int>(ep1.size()), ep1);
    s.next(static_cast<int>(ep2.size()), ep2);
    total += ep1.size();
    all.insert(ep1.begin(), ep1.end());
    CHECK(std::multiset<uint32_t>(ep1.begin(), ep1.end()) ==
          std::multiset<uint32_t>(ep2.begin(), ep2.end()));
    if (ep1.size() > 3) CHECK(ep1 != ep2);
    train::Sampler again(N, W, k, 7);
    std::vector<uint32_t> rep(ep1.size());
    again.next(static_cast<int>(rep.size()), rep);
    CHECK(rep == ep1);  // same seed, same order
  }
  CHECK(total == N);
  CHECK(all.size() == N);
}

TEST_CASE("toy training recovers the true coefficients (sync_sgd and adasum, W=4)") {
  for (const char* algo : {"sync_sgd", "adasum"}) {
    auto e = app::parse_experiment(std::string(R"({"name": "t", "base": {"model": "quadratic",
        "workers": 4, "batch_size": 1, "lr": 0.1, "steps": 400, "algorithm": ")") + algo + "\"}}",
                                  "t.json");
    app::TaskCache cache;
    const auto& rs = e.runs[0];
    auto res = app::execute_run(rs, cache.get(rs.cfg.model.value()), MPI_COMM_SELF, nullptr);
    CHECK(res.status == "completed");
    REQUIRE(res.series.size() == 1);
    INFO(algo);
    CHECK(res.series[0].data[0] == doctest::Approx(-20.0).epsilon(1e-3));
    CHECK(res.series[0].data[1] == doctest::Approx(50.0).epsilon(1e-3));
    CHECK(res.curves.train_loss.back() < 1e-6);
    CHECK(res.curves.train_loss.front() > 100.0);
  }
}

TEST_CASE("a diverging run is a result with status=diverged, not a crash") {
  auto e = app::parse_experiment(R"({"name": "t", "base": {"model": {"name": "cubic", "x_max": 2},
      "workers": 2, "batch_size": 1, "lr": 5.0, "steps": 500}})",
                                "t.json");
  app::TaskCache cache;
  auto res = app::execute_run(e.runs[0], cache.get(e.runs[0].cfg.model.value()), MPI_COMM_SELF, nullptr);
  CHECK(res.status == "diverged");
  CHECK(res.error.find("non-finite") != std::string::npos);
  CHECK(res.summary["steps"].get<int64_t>() < 500);
}
