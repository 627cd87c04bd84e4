// Grouped passes seen from the runtime (train::compute_gradients_of, train/worker.h): the
// chunking, the batch draws, the pass counters and noise seeds, without a GPU. A stand-in
// device model offers grouped passes and runs them on the CPU model in REVERSE worker
// order, so a runtime that depended on the order of the passes inside a group, or that drew
// a worker's batch or noise seed differently when grouping, would not match the one pass
// per worker path bit for bit. (The CUDA grouped kernels themselves are compared with lone
// passes in tests/cuda/test_group_cuda.cpp, on a GPU.)
#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "core/rng.h"
#include "models/lenet.h"
#include "train/compute_device.h"
#include "train/worker.h"
#include "tests/indexed_images.h"

using namespace wb;
using wb::test::IndexedImages;

namespace {


struct GroupWs final : models::Workspace {
  GroupWs(std::unique_ptr<models::Workspace> w, int g, int b) : ws(std::move(w)), groups(g), batch(b) {}
  std::unique_ptr<models::Workspace> ws;
  int groups, batch;
};

// Grouped passes on the CPU model, last worker first; counts workspaces and groups.
class ReverseGroups final : public train::DeviceModel {
 public:
  explicit ReverseGroups(const models::Model& cpu) : DeviceModel(cpu) {}
  std::unique_ptr<models::Workspace> make_workspace(int b) const override {
    return cpu().make_workspace(b);
  }
  double loss_grad(std::span<const float> w, const models::Batch& b, std::span<float> g,
                   models::Workspace& ws, uint64_t seed) const override {
    return cpu().loss_grad(w, b, g, ws, seed);
  }
  models::EvalResult evaluate(std::span<const float> w, const models::Batch& b,
                              models::Workspace& ws) const override {
    return cpu().evaluate(w, b, ws);
  }
  std::unique_ptr<models::Workspace> make_group_workspace(int groups,
                                                          int max_batch) const override {
    ++workspaces;
    return std::make_unique<GroupWs>(cpu().make_workspace(max_batch), groups, max_batch);
  }
  void loss_grad_group(std::span<GroupPass> passes, models::Workspace& ws) const override {
    auto& gw = dynamic_cast<GroupWs&>(ws);
    REQUIRE(static_cast<int>(passes.size()) <= gw.groups);
    group_sizes.push_back(static_cast<int>(passes.size()));
    for (size_t k = passes.size(); k-- > 0;) {
      REQUIRE(passes[k].batch->n <= gw.batch);
      passes[k].loss = cpu().loss_grad(passes[k].w, *passes[k].batch, passes[k].g, *gw.ws,
                                       passes[k].noise_seed);
    }
  }
  mutable int workspaces = 0;
  mutable std::vector<int> group_sizes;
};

std::vector<train::Worker> make_workers(const models::Model& m, const models::Dataset& d, int W) {
  std::vector<train::Worker> ws(static_cast<size_t>(W));
  const auto perm = train::Sampler::global_permutation(d.size(), 5);
  for (int k = 0; k < W; ++k) {
    ws[k].id = k;
    ws[k].seed = 5;
    ws[k].w.resize(m.num_params());
    ws[k].g.assign(m.num_params(), 0.f);
    m.init_params(ws[k].w, 30 + static_cast<uint64_t>(k));  // distinct replicas
    ws[k].sampler = train::Sampler(perm, W, k, 5);
  }
  return ws;
}

}  // namespace

TEST_CASE("compute_gradients_of: grouped chunks == one pass per worker, bit for bit") {
  const models::ConvNetModel cpu(models::lenet5_spec());  // dropout: the noise seeds matter
  const ReverseGroups grouped_model(cpu);
  const IndexedImages data(30000);
  constexpr int W = 6;
  // n = kGroupSamples / 4 gives chunks of 4 workers: 6 workers are a chunk of 4 and one of 2.
  constexpr int n = train::kGroupSamples / 4;
  std::vector<train::Worker> grouped = make_workers(cpu, data, W),
                             lone = make_workers(cpu, data, W);
  train::PassScratch sg(grouped_model, data, n), sl(cpu, data, n);
  std::vector<double> fg(W), fl(W);
  for (int step = 0; step < 2; ++step) {
    train::compute_gradients_of(grouped, grouped_model, data, n, sg, fg);
    train::compute_gradients_of(lone, cpu, data, n, sl, fl);  // a CPU model: one pass per worker
    for (int k = 0; k < W; ++k) {
      CAPTURE(step);
      CAPTURE(k);
      CHECK(grouped[k].loss == lone[k].loss);
      CHECK(grouped[k].passes == step + 1);
      CHECK(grouped[k].passes == lone[k].passes);
      CHECK(grouped[k].last_noise == lone[k].last_noise);
      CHECK(grouped[k].idx == lone[k].idx);
      CHECK(fg[k] == fl[k]);
      CHECK(grouped[k].g == lone[k].g);
    }
  }
  CHECK(grouped_model.workspaces == 1);  // made once, reused
  CHECK(grouped_model.group_sizes == std::vector<int>{4, 2, 4, 2});
  CHECK(sl.group_capacity == 0);  // the CPU model was never asked for groups

  // A larger batch than the workspace was made for: a new workspace (1 worker per chunk
  // would not group at all, so W / 2 workers of 2n samples: chunks of 2).
  std::vector<double> f3(W);
  train::compute_gradients_of(grouped, grouped_model, data, 2 * n, sg, f3);
  CHECK(grouped_model.workspaces == 2);
  CHECK(grouped_model.group_sizes.back() == 2);
  CHECK(sg.group_batch == 2 * n);
}

TEST_CASE("compute_gradients_of: one worker, or a model without grouped passes, runs lone passes") {
  const models::ConvNetModel cpu(models::lenet5_spec());
  const ReverseGroups grouped_model(cpu);
  const IndexedImages data(1000);
  std::vector<train::Worker> one = make_workers(cpu, data, 1);
  train::PassScratch s(grouped_model, data, 16);
  std::vector<double> f(1);
  train::compute_gradients_of(one, grouped_model, data, 16, s, f);
  CHECK(grouped_model.workspaces == 0);
  CHECK(one[0].passes == 1);
  CHECK(f[0] == cpu.flops_for_batch(s.batch));
}

TEST_CASE("compute_gradients_of: a chunk holds at most kGroupWorkers workers") {
  const models::ConvNetModel cpu(models::lenet5_spec());
  const ReverseGroups grouped_model(cpu);
  const IndexedImages data(2000);
  const int W = train::kGroupWorkers + 88;  // batch 1: the sample cap alone would allow 8,192
  std::vector<train::Worker> ws = make_workers(cpu, data, W);
  train::PassScratch s(grouped_model, data, 1);
  std::vector<double> f(static_cast<size_t>(W));
  train::compute_gradients_of(ws, grouped_model, data, 1, s, f);
  CHECK(grouped_model.group_sizes == std::vector<int>{train::kGroupWorkers, 88});
  CHECK(ws.back().passes == 1);
}
