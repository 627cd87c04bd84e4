// sparse_mlp (models/sparse_mlp.h): gradients against central finite differences of the
// double-precision oracle, the float path against the oracle, precision@k and the loss on
// a hand-computed example, the nnz-dependent cost, and the registered task.
#include <doctest/doctest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "models/sparse_mlp.h"
#include "models/xml_data.h"
#include "core/rng.h"

using namespace wb;
using models::Batch;
using models::SparseMlp;

namespace {

// CSR batch from (labels, {feature, value}) rows.
Batch make_batch(const std::vector<std::pair<std::vector<int32_t>, std::vector<std::pair<int32_t, float>>>>& rows) {
  Batch b;
  b.n = static_cast<int>(rows.size());
  b.x_ptr = {0};
  b.y_ptr = {0};
  for (const auto& [labels, feats] : rows) {
    for (auto [f, v] : feats) {
      b.x_idx.push_back(f);
      b.x_val.push_back(v);
    }
    b.x_ptr.push_back(static_cast<int64_t>(b.x_idx.size()));
    b.y_idx.insert(b.y_idx.end(), labels.begin(), labels.end());
    b.y_ptr.push_back(static_cast<int64_t>(b.y_idx.size()));
  }
  return b;
}

}  // namespace

TEST_CASE("sparse_mlp: gradient matches central finite differences (f64 oracle)") {
  for (const std::vector<int64_t>& hidden : {std::vector<int64_t>{}, {5}, {6, 4}}) {
    SparseMlp m(7, hidden, 6, 2.0);
    const size_t n = m.num_params();
    std::vector<float> wf(n);
    m.init_params(wf, 3);
    std::vector<double> w(wf.begin(), wf.end());
    core::Rng r(17);
    for (auto& x : w) x += 0.1 * r.normal();  // non-zero biases, away from ReLU kinks
    const Batch b = make_batch({{{1, 4}, {{0, 1.f}, {3, 0.5f}, {6, -2.f}}},
                                {{}, {{2, 1.f}}},  // no labels: no loss, no gradient
                                {{5}, {{1, 1.5f}, {2, -0.7f}, {4, 1.f}}},
                                {{0, 2, 3}, {{5, 2.f}}}});
    std::vector<double> g(n), g2(n);
    const double loss = m.loss_grad_f64(w, b, g, 0);
    CHECK(std::isfinite(loss));
    const double h = 1e-6;
    double worst = 0;
    for (size_t i = 0; i < n; ++i) {
      std::vector<double> wp = w, wm = w;
      wp[i] += h;
      wm[i] -= h;
      const double fd = (m.loss_grad_f64(wp, b, g2, 0) - m.loss_grad_f64(wm, b, g2, 0)) / (2 * h);
      worst = std::max(worst, std::fabs(fd - g[i]) / (1e-6 + std::fabs(g[i])));
      CHECK(std::fabs(fd - g[i]) <= 1e-7 + 1e-5 * std::fabs(g[i]));
    }
    INFO("hidden layers " << hidden.size() << ", worst relative error " << worst);
    // The float hot path agrees with the oracle.
    auto ws = m.make_workspace(b.n);
    std::vector<float> w32(w.begin(), w.end()), g32(n, 123.f);
    const double loss32 = m.loss_grad(w32, b, g32, *ws, 0);
    CHECK(loss32 == doctest::Approx(loss).epsilon(1e-5));
    for (size_t i = 0; i < n; ++i) CHECK(g32[i] == doctest::Approx(g[i]).epsilon(1e-4).scale(1e-5));
  }
}

TEST_CASE("sparse_mlp: precision@1 / @2 and the 1/|y| cross-entropy on a hand example") {
  // Softmax regression (no hidden layer), F = 2, L = 3: logits = x W + bias.
  SparseMlp m(2, {}, 3, 1.0);
  REQUIRE(m.num_params() == 9);
  // out.weight [2][3] then out.bias [3]
  const std::vector<float> w = {0, 2, 1,     // feature 0
                                1, 3, 0.5f,  // feature 1
                                0, 0, 0};
  const Batch b = make_batch({{{1}, {{0, 1.f}}},               // logits (0, 2, 1): top-1 = 1 in y
                              {{0, 2}, {{1, 1.f}}},            // (1, 3, .5): top-1 = 1 not in y
                              {{1}, {{0, 1.f}, {1, 1.f}}},     // (1, 5, 1.5): top-1 = 1 in y
                              {{}, {{0, 1.f}}}});              // no labels: precision 0
  auto ws = m.make_workspace(4);
  const auto ev = m.evaluate(w, b, *ws);
  CHECK(ev.has_accuracy);
  CHECK(ev.count == 4);
  CHECK(ev.correct == doctest::Approx(2.0));  // P@1 = 2/4
  // P@2: top-2 = {1,2}, {1,0}, {1,2}: 1/2 + 1/2 + 1/2 + 0.
  CHECK(m.evaluate_at_k(w, b, *ws, 2).correct == doctest::Approx(1.5));
  auto lse = [](double a, double c, double d) { return std::log(std::exp(a) + std::exp(c) + std::exp(d)); };
  const double want = (lse(0, 2, 1) - 2.0) + (lse(1, 3, 0.5) - 0.5 * (1 + 0.5)) + (lse(1, 5, 1.5) - 5.0);
  CHECK(ev.loss_sum == doctest::Approx(want).epsilon(1e-6));
  std::vector<float> g(9);
  CHECK(m.loss_grad(w, b, g, *ws, 0) == doctest::Approx(want / 3).epsilon(1e-6));  // mean over 3 labelled rows
}

TEST_CASE("sparse_mlp: the cost of a batch grows with its non-zeros") {
  SparseMlp m(100, {16}, 10, 5.0);
  const Batch few = make_batch({{{1}, {{0, 1.f}}}, {{2}, {{1, 1.f}}}});
  const Batch many = make_batch({{{1}, {{0, 1.f}, {1, 1.f}, {2, 1.f}, {3, 1.f}}},
                                 {{2}, {{1, 1.f}, {5, 1.f}, {7, 1.f}, {9, 1.f}}}});
  CHECK(m.flops_for_batch(many) > m.flops_for_batch(few));
  // 4 nnz h1 + 6 n (h1 L) + 5 n L
  CHECK(m.flops_for_batch(few) == doctest::Approx(4.0 * 2 * 16 + 6.0 * 2 * 160 + 5.0 * 2 * 10));
  CHECK(m.flops_per_sample() == doctest::Approx(4.0 * 5 * 16 + 6.0 * 160 + 5.0 * 10));
}

TEST_CASE("sparse_mlp: registered task on the synthetic data trains") {
  const nlohmann::ordered_json cfg = {
      {"name", "sparse_mlp"},
      {"hidden", {32}},
      {"synthetic", {{"train_size", 800}, {"test_size", 200}, {"features", 300}, {"labels", 20},
                     {"nnz", 20.0}}}};
  const auto resolved = models::model_registry().resolve(cfg, core::Where{"t.json", "$.model"});
  auto task = models::model_registry().create(resolved, 0)->make();
  REQUIRE(task.model->name() == "sparse_mlp");
  CHECK(task.train->size() == 800);
  CHECK(task.test->size() == 200);
  const auto& m = *task.model;
  std::vector<float> w(m.num_params()), g(m.num_params());
  m.init_params(w, 1);
  auto ws = m.make_workspace(200);
  Batch tb;
  task.test->reserve(tb, 200);
  std::vector<uint32_t> all(200);
  for (uint32_t i = 0; i < 200; ++i) all[i] = i;
  task.test->gather(all, tb);
  const auto before = m.evaluate(w, tb, *ws);
  Batch b;
  task.train->reserve(b, 50);
  std::vector<uint32_t> idx(50);
  for (int it = 0; it < 160; ++it) {
    for (uint32_t i = 0; i < 50; ++i) idx[i] = static_cast<uint32_t>((it * 50 + i) % 800);
    task.train->gather(idx, b);
    m.loss_grad(w, b, g, *ws, 0);
    for (size_t i = 0; i < w.size(); ++i) w[i] -= 0.5f * g[i];
  }
  const auto after = m.evaluate(w, tb, *ws);
  CHECK(after.loss_sum < before.loss_sum);
  CHECK(after.correct / after.count > before.correct / before.count + 0.2);
}
