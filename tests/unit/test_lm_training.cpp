// Gradient clipping by global norm (train/grad_clip.h, the run's clip_norm key):
//  - the closed form of torch.nn.utils.clip_grad_norm_: g * max / (||g|| + 1e-6) when that
//    factor is below 1, g untouched (bit for bit) otherwise or when clipping is off;
//  - per worker, before any combination: sync_sgd (average) with W = 2 moves the model by
//    the mean of the two per-worker-clipped gradients -- a reference loop over the same
//    batches, not the clip of the mean (which the test checks is a different model); with
//    gradient accumulation (local_steps k) the mean of the k micro-batch gradients is
//    clipped once, as torch clips .grad after k backward() calls;
//  - the asynchronous updaters' entry (Worker::gradient_at) clips like the synchronous one:
//    simulated LAP-SGD with U = 1 and free communication stays post-local SGD bit for bit
//    with clipping on, and clipping changes both runs;
//  - a threshold no gradient reaches leaves every algorithm's run bit-identical to no
//    clipping, and a threshold every gradient exceeds changes every algorithm's run;
//  - the run summary of a sequence model counts tokens (samples x block) and reports the
//    final test loss in bits (loss / ln 2); other models' summaries have neither key.
#include <doctest/doctest.h>
#include <mpi.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numbers>
#include <string>
#include <vector>

#include "app/exec/runner.h"
#include "app/exec/training_loop.h"
#include "app/plan/sweep_plan.h"
#include "app/experiment/spec.h"
#include "tests/unit/run_spec.h"
#include "train/grad_clip.h"
#include "train/worker.h"

using namespace wb;
using test::run_spec;
using test::find;

namespace {

double norm2(const std::vector<float>& g) {
  double s = 0;
  for (float x : g) s += static_cast<double>(x) * x;
  return std::sqrt(s);
}

// clip_grad_norm_ written out independently of train/grad_clip.cpp.
std::vector<double> torch_clip(const std::vector<float>& g, double max_norm) {
  const double n = norm2(g), coef = max_norm / (n + 1e-6);
  std::vector<double> out(g.begin(), g.end());
  if (coef < 1)
    for (double& x : out) x *= coef;
  return out;
}

double max_rel(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0, s = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    m = std::max(m, std::fabs(a[i] - b[i]));
    s = std::max(s, std::fabs(b[i]));
  }
  return m / s;
}

}  // namespace

TEST_CASE("clip_grad_norm: torch's closed form above the threshold, untouched below it") {
  // ||(3, 4)|| = 5.
  std::vector<float> g = {3.f, 4.f};
  CHECK(train::clip_grad_norm(g, 1.0) == doctest::Approx(5.0).epsilon(1e-15));
  const float c = static_cast<float>(1.0 / (5.0 + 1e-6));
  CHECK(g[0] == 3.f * c);
  CHECK(g[1] == 4.f * c);
  CHECK(std::fabs(norm2(g) - 1.0) < 1e-6);
  // At the threshold itself torch still scales by max / (norm + 1e-6) < 1.
  g = {3.f, 4.f};
  train::clip_grad_norm(g, 5.0);
  CHECK(g[0] == 3.f * static_cast<float>(5.0 / (5.0 + 1e-6)));
  CHECK(g[0] < 3.f);
  // Below the threshold and off: the same floats.
  for (double max_norm : {5.001, 100.0, 0.0, -1.0}) {
    g = {3.f, 4.f};
    train::clip_grad_norm(g, max_norm);
    CHECK(g[0] == 3.f);
    CHECK(g[1] == 4.f);
  }
  CHECK(train::clip_coefficient(5.0, 0.0) == 1.0);
  CHECK(train::clip_coefficient(5.0, 10.0) == 1.0);
  CHECK(train::clip_coefficient(5.0, 2.5) == doctest::Approx(0.5).epsilon(1e-6));
  // Many tensors' worth of floats (awkward length): the norm is over every entry, in double.
  std::vector<float> v(2 * 1000 + 1);
  double ss = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)) * (1 + i % 7));
    ss += static_cast<double>(v[i]) * v[i];
  }
  const std::vector<double> want = torch_clip(v, 0.25);
  CHECK(train::clip_grad_norm(v, 0.25) == doctest::Approx(std::sqrt(ss)).epsilon(1e-12));
  CHECK(max_rel(std::vector<double>(v.begin(), v.end()), want) < 1e-6);
  CHECK(std::fabs(norm2(v) - 0.25) < 1e-6);
}

// The reference of a synchronous run: W workers, k micro-batches each per step (drawn as the
// runtime draws them: Sampler blocks of one seeded permutation, noise seeds by pass), the
// mean of each worker's k unclipped gradients clipped by torch's rule, averaged over the
// workers, one plain SGD step. per_worker = false: the wrong order, the clip of the average.
std::vector<double> reference_sync(const std::string& model_json, int W, int k, int B, double lr,
                                   int steps, int64_t seed, double clip, bool per_worker,
                                   std::vector<double>* norms0 = nullptr) {
  app::TaskCache cache;
  const models::Task& t = cache.get(json::parse(model_json));
  const models::Model& m = *t.model;
  const size_t n = m.num_params();
  std::vector<float> w(n);
  m.init_params(w, static_cast<uint64_t>(seed));
  const auto perm =
      train::Sampler::global_permutation(t.train->size(), static_cast<uint64_t>(seed));
  std::vector<train::Worker> ws(static_cast<size_t>(W));
  for (int j = 0; j < W; ++j) {
    ws[j].id = j;
    ws[j].seed = static_cast<uint64_t>(seed);
    ws[j].g.assign(n, 0.f);
    ws[j].sampler = train::Sampler(perm, W, j, static_cast<uint64_t>(seed));
  }
  train::PassScratch s(m, *t.train, B);
  for (int step = 0; step < steps; ++step) {
    std::vector<double> avg(n, 0.0);
    std::vector<float> mean_all(n, 0.f);
    for (auto& wk : ws) {
      wk.w = w;
      std::vector<float> acc(n, 0.f);
      for (int q = 0; q < k; ++q) {
        wk.compute_gradient(m, *t.train, B, s, /*clip=*/false);
        for (size_t i = 0; i < n; ++i) acc[i] += wk.g[i];
      }
      for (float& x : acc) x /= static_cast<float>(k);
      if (norms0 && step == 0) norms0->push_back(norm2(acc));
      const std::vector<double> c = per_worker ? torch_clip(acc, clip)
                                               : std::vector<double>(acc.begin(), acc.end());
      for (size_t i = 0; i < n; ++i) avg[i] += c[i] / W;
    }
    if (!per_worker) {
      std::vector<float> a(avg.begin(), avg.end());
      avg = torch_clip(a, clip);
    }
    for (size_t i = 0; i < n; ++i) w[i] = static_cast<float>(w[i] - lr * avg[i]);
  }
  return std::vector<double>(w.begin(), w.end());
}

TEST_CASE("sync_sgd with clip_norm: the mean of per-worker clipped gradients, not the clip of the mean") {
  const std::string model = R"({"name": "cubic"})";
  const int B = 2, steps = 4;
  const double lr = 0.05;
  for (int k : {1, 3}) {
    for (int64_t seed : {3, 8}) {
      // A threshold between the two workers' first gradient norms: one is clipped, the other not.
      std::vector<double> n0;
      reference_sync(model, 2, k, B, lr, 1, seed, 0, true, &n0);
      REQUIRE(n0.size() == 2);
      REQUIRE(std::fabs(n0[0] - n0[1]) > 0.05 * std::max(n0[0], n0[1]));
      const double clip = std::sqrt(n0[0] * n0[1]);
      INFO("k " << k << " seed " << seed << " norms " << n0[0] << " " << n0[1] << " clip " << clip);
      const std::string spec =
          R"("model": )" + model + R"(, "workers": 2, "batch_size": 2, "lr": 0.05, "steps": 4,
             "seed": )" + std::to_string(seed) + R"(, "clip_norm": )" + std::to_string(clip) +
          R"(, "algorithm": {"name": "sync_sgd", "combine": "average", "lr_scaling": "none",
             "local_steps": )" + std::to_string(k) + "}";
      auto r = run_spec(spec);
      REQUIRE(r.status == "completed");
      const core::Series* fp = find(r, "final_params");
      REQUIRE(fp);
      const auto want = reference_sync(model, 2, k, B, lr, steps, seed, clip, true);
      const auto wrong = reference_sync(model, 2, k, B, lr, steps, seed, clip, false);
      const auto unclipped = reference_sync(model, 2, k, B, lr, steps, seed, 0, true);
      CHECK(max_rel(fp->data, want) < 1e-5);
      // The test tells the orders apart: the clip of the average, or no clip, is elsewhere.
      CHECK(max_rel(wrong, want) > 1e-3);
      CHECK(max_rel(fp->data, wrong) > 1e-3);
      CHECK(max_rel(fp->data, unclipped) > 1e-3);
    }
  }
}

TEST_CASE("clip_norm reaches the asynchronous updaters: simulated LAP (U = 1) stays post-local SGD") {
  const std::string common = R"("model": "cubic", "batch_size": 4, "lr": 0.02, "steps": 20,
      "workers": 3, "seed": 4, "eval_every": 5, "optimizer": {"name": "sgd", "momentum": 0.9},
      "clock": {"latency_s": 0, "intra_latency_s": 0, "bandwidth_bytes_per_s": 1e30,
                "intra_bandwidth_bytes_per_s": 1e30})";
  const std::string lap = R"(, "algorithm": {"name": "lap_sgd", "updaters": 1, "H": 3, "switch_at": 0.3})";
  const std::string pl = R"(, "algorithm": {"name": "post_local_sgd", "H": 3, "switch_at": 0.3})";
  const auto a = run_spec(common + R"(, "clip_norm": 0.05)" + lap);
  const auto b = run_spec(common + R"(, "clip_norm": 0.05)" + pl);
  const auto a0 = run_spec(common + lap);
  const auto b0 = run_spec(common + pl);
  REQUIRE(a.status == "completed");
  REQUIRE(b.status == "completed");
  CHECK(find(a, "final_params")->data == find(b, "final_params")->data);
  CHECK(a.curves.train_loss == b.curves.train_loss);
  CHECK(find(a, "final_params")->data != find(a0, "final_params")->data);
  CHECK(find(b, "final_params")->data != find(b0, "final_params")->data);
}

TEST_CASE("a clip_norm no gradient reaches changes no algorithm's run") {
  const char* algos[] = {
      R"({"name": "sync_sgd", "combine": "average"})",
      R"({"name": "adasum", "apply": "delta"})",
      R"({"name": "local_sgd", "H": 3})",
      R"({"name": "lap_sgd", "updaters": 2, "H": 3})",
      R"({"name": "lpp_sgd", "updaters": 2, "H": 3})",
      R"({"name": "diloco", "sync_every": 3})",
      R"("elastic_sgd")",
      R"("adaptive_sgd")",
  };
  for (const char* alg : algos) {
    INFO(alg);
    const std::string common = R"("model": "cubic", "batch_size": 4, "lr": 0.02, "steps": 12,
        "workers": 2, "seed": 6, "eval_every": 4, "algorithm": )" + std::string(alg);
    const auto off = run_spec(common);
    const auto big = run_spec(common + R"(, "clip_norm": 1e30)");
    const auto tiny = run_spec(common + R"(, "clip_norm": 1e-4)");
    REQUIRE(off.status == "completed");
    CHECK(find(big, "final_params")->data == find(off, "final_params")->data);
    CHECK(big.curves.train_loss == off.curves.train_loss);
    // ... and one every gradient exceeds changes it (the algorithm's gradients pass the clip).
    CHECK(find(tiny, "final_params")->data != find(off, "final_params")->data);
  }
}

TEST_CASE("the summary of a sequence model: tokens = samples x block, final_test_bpc = loss / ln 2") {
  char dir[] = "/tmp/wb_lm_summary_XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string text = std::string(dir) + "/text.txt";
  {
    std::ofstream f(text);
    for (int i = 0; i < 80; ++i)
      f << "In the beginning was the word " << i << ", and the word was " << (i * 7 % 13) << ".\n";
  }
  const std::string gpt = R"("model": {"name": "gpt", "layers": 1, "heads": 2, "d_model": 16,
      "block": 8, "data_path": ")" + text + R"("}, "lr": 0.01, "optimizer": "adamw", "seed": 2)";
  // Synchronous (W x batch per step) and Adaptive SGD (batches that vary by worker speed).
  for (const char* alg : {R"({"name": "sync_sgd", "combine": "average"})", R"("adaptive_sgd")"}) {
    INFO(alg);
    const auto r = run_spec(gpt + R"(, "workers": 2, "batch_size": 3, "steps": 3, "clip_norm": 1.0,
        "algorithm": )" + alg);
    REQUIRE(r.status == "completed");
    const int64_t samples = r.summary["samples"].get<int64_t>();
    CHECK(samples > 0);
    CHECK(r.summary["tokens"].get<int64_t>() == samples * 8);
    const double loss = r.summary["final_test_loss"].get<double>();
    CHECK(r.summary["final_test_bpc"].get<double>() == loss / std::numbers::ln2);
  }
  const auto s = run_spec(R"("model": {"name": "gpt", "layers": 1, "heads": 2, "d_model": 16,
      "block": 8, "data_path": ")" + text + R"("}, "workers": 2, "batch_size": 3, "steps": 2)");
  CHECK(s.summary["tokens"].get<int64_t>() == 2 * 2 * 3 * 8);
  const auto toy = run_spec(R"("model": "cubic", "workers": 2, "batch_size": 3, "steps": 2)");
  CHECK_FALSE(toy.summary.contains("tokens"));
  CHECK_FALSE(toy.summary.contains("final_test_bpc"));
  std::remove(text.c_str());
  rmdir(dir);
}
