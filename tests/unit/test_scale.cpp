// Logical workers own only their state (DESIGN.md section 3): the results of a worker
// do not depend on which scratch ran its passes, the shared-permutation Sampler gives the
// shards of the per-worker construction it replaced, and the memory estimate adds up.
#include <doctest/doctest.h>
#include <mpi.h>

#include <numeric>

#include "app/plan/sweep_plan.h"
#include "app/experiment/spec.h"
#include "core/rng.h"
#include "models/layers_fast.h"
#include "models/lenet.h"
#include "train/worker.h"

using namespace wb;

namespace {

// The straightforward Sampler, kept as the reference: every worker shuffles the full
// permutation itself and keeps its block, then reshuffles the block per epoch.
struct ReferenceSampler {
  std::vector<uint32_t> shard;
  size_t pos = 0;
  uint64_t seed = 0, epoch = 0;
  int worker = 0;
  ReferenceSampler(size_t N, int W, int k, uint64_t s) : seed(s), worker(k) {
    std::vector<uint32_t> perm(N);
    std::iota(perm.begin(), perm.end(), 0u);
    core::Rng r = core::Rng::stream({s, 0x5eed5eedULL});
    r.shuffle(std::span<uint32_t>(perm));
    const size_t lo = N * static_cast<size_t>(k) / static_cast<size_t>(W);
    const size_t hi = N * static_cast<size_t>(k + 1) / static_cast<size_t>(W);
    shard.assign(perm.begin() + static_cast<std::ptrdiff_t>(lo),
                 perm.begin() + static_cast<std::ptrdiff_t>(hi));
    reshuffle();
  }
  void reshuffle() {
    core::Rng r = core::Rng::stream({seed, 0xdaa7aULL, static_cast<uint64_t>(worker), epoch});
    r.shuffle(std::span<uint32_t>(shard));
    pos = 0;
  }
  uint32_t next() {
    if (pos == shard.size()) {
      ++epoch;
      reshuffle();
    }
    return shard[pos++];
  }
};

models::Task small_lenet() {
  return models::model_registry()
      .create(models::model_registry().resolve(
                  json::parse(R"({"name": "lenet5", "train_limit": 96, "test_limit": 16})"),
                  core::Where{}),
              0)
      ->make();
}

train::Worker make_worker(const models::Task& t, int id, int B) {
  train::Worker w;
  w.id = id;
  w.seed = 11;
  w.w.resize(t.model->num_params());
  t.model->init_params(w.w, 11);
  w.g.assign(t.model->num_params(), 0.f);
  w.sampler = train::Sampler(t.train->size(), 3, id, 11);
  w.idx.reserve(static_cast<size_t>(B));
  return w;
}

}  // namespace

TEST_CASE("scale: Sampler shards from one shared permutation equal the per-worker construction") {
  for (const size_t N : {size_t{1}, size_t{7}, size_t{103}, size_t{1000}})
    for (const int W : {1, 3, 8, 64})
      for (const uint64_t seed : {uint64_t{0}, uint64_t{42}}) {
        if (static_cast<size_t>(W) > N) continue;
        const auto perm = train::Sampler::global_permutation(N, seed);
        for (int k = 0; k < W; ++k) {
          ReferenceSampler ref(N, W, k, seed);
          train::Sampler shared(perm, W, k, seed), own(N, W, k, seed);
          REQUIRE(shared.shard_size() == ref.shard.size());
          // Three epochs and a bit: the reshuffles must agree too.
          const int n = static_cast<int>(3 * ref.shard.size() + 2);
          std::vector<uint32_t> a(static_cast<size_t>(n)), b(a.size());
          shared.next(n, a);
          own.next(n, b);
          bool same = true;
          for (int i = 0; i < n; ++i) same = same && a[static_cast<size_t>(i)] == ref.next() &&
                                             b[static_cast<size_t>(i)] == a[static_cast<size_t>(i)];
          CHECK_MESSAGE(same, "N=" << N << " W=" << W << " k=" << k << " seed=" << seed);
        }
      }
}

TEST_CASE("scale: a worker's gradients do not depend on which scratch ran its passes") {
  // Two workers (LeNet-5: dropout, so the noise seeds matter) with different batch sizes,
  // three passes each: interleaved on ONE shared scratch vs each on its own scratch.
  const models::Task t = small_lenet();
  const models::Model& m = *t.model;
  const int B = 8;
  train::Worker a1 = make_worker(t, 0, B), b1 = make_worker(t, 1, B);
  train::Worker a2 = make_worker(t, 0, B), b2 = make_worker(t, 1, B);
  train::PassScratch shared(m, *t.train, B), own_a(m, *t.train, B), own_b(m, *t.train, B);
  for (int pass = 0; pass < 3; ++pass) {
    const double la1 = a1.compute_gradient(m, *t.train, B, shared);
    const double lb1 = b1.compute_gradient(m, *t.train, 3, shared);
    const double la2 = a2.compute_gradient(m, *t.train, B, own_a);
    const double lb2 = b2.compute_gradient(m, *t.train, 3, own_b);
    CHECK(la1 == la2);
    CHECK(lb1 == lb2);
    CHECK(a1.g == a2.g);
    CHECK(b1.g == b2.g);
    CHECK(a1.idx == a2.idx);
    CHECK(b1.idx.size() == 3);
    CHECK(a1.last_noise == a2.last_noise);
    CHECK(b1.passes == pass + 1);
    // Let the parameters move, so later passes see different models on the shared scratch.
    for (size_t i = 0; i < a1.w.size(); ++i) {
      a1.w[i] -= 0.01f * a1.g[i];
      a2.w[i] -= 0.01f * a2.g[i];
      b1.w[i] -= 0.01f * b1.g[i];
      b2.w[i] -= 0.01f * b2.g[i];
    }
  }
  // gradient_on with the scheduler's indices (Adaptive SGD) records them as the last batch.
  const std::vector<uint32_t> given = {5, 1, 4};
  a1.gradient_on(m, *t.train, given, shared);
  CHECK(a1.idx == given);
  CHECK(shared.batch.n == 3);
}

TEST_CASE("scale: workspace_bytes is what make_workspace allocates") {
  const models::ConvNetModel m(models::lenet5_spec());
  for (const int b : {1, 7, 8, 256}) {
    auto ws = m.fast().make_workspace(b);
    CHECK(m.workspace_bytes(b) == ws->bytes());
  }
}

TEST_CASE("scale: the memory estimate counts state per worker x workers per rank + data + scratch") {
  const models::Task t = small_lenet();
  const size_t n = t.model->num_params();
  auto cfg_for = [](const std::string& base) {
    return app::parse_experiment(R"({"name": "m", "base": {"model": {"name": "lenet5",
        "train_limit": 96, "test_limit": 16}, "batch_size": 8, "steps": 1, )" + base + "}}",
                                "m.json")
        .runs[0]
        .cfg;
  };
  const train::RunConfig plain = cfg_for(R"("workers": 12, "algorithm": "adasum")");
  const train::RunConfig momentum = cfg_for(
      R"("workers": 12, "algorithm": "adasum", "optimizer": {"name": "sgd", "momentum": 0.5})");
  const train::RunConfig delta = cfg_for(
      R"("workers": 12, "algorithm": {"name": "adasum", "apply": "delta"},
         "optimizer": {"name": "sgd", "momentum": 0.5})");
  const auto e1 = app::estimate_memory(plain, t, 1);
  const auto e2 = app::estimate_memory(momentum, t, 1);
  const auto e3 = app::estimate_memory(delta, t, 1);
  CHECK(e1.workers_per_rank == 12);
  CHECK(app::estimate_memory(plain, t, 5).workers_per_rank == 3);  // 12 over 5 ranks: 3 at most
  CHECK(app::estimate_memory(plain, t, 64).workers_per_rank == 1);
  // w and g, then + momentum (n floats and a first-step flag), then + the delta's start copy.
  CHECK(e2.state_per_worker - e1.state_per_worker >= 4.0 * n);
  CHECK(e2.state_per_worker - e1.state_per_worker <= 4.0 * n + 64);
  CHECK(e3.state_per_worker - e2.state_per_worker == doctest::Approx(4.0 * n));
  CHECK(e1.state_per_worker >= 8.0 * n);
  CHECK(e1.data == static_cast<double>(t.train->bytes() + t.test->bytes()));
  CHECK(e1.data >= (96.0 + 16.0) * 28 * 28);
  CHECK(e1.scratch >= static_cast<double>(t.model->workspace_bytes(8)));
  // The terms add up (whether they match what runs take is cli_test_estimates' job).
  CHECK(e1.total() == doctest::Approx(app::MemoryEstimate::kProgram +
                                      12 * (e1.state_per_worker + app::MemoryEstimate::kWorkerObject) +
                                      e1.data + e1.scratch + e1.algorithm +
                                      app::MemoryEstimate::kResultCopies * e1.results));
  CHECK(app::describe_memory(e1).find("12 workers x") != std::string::npos);
}
