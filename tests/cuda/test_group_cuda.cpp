// Grouped passes: a rank's logical workers as ONE device computation (cuda::Groups,
// DeviceNet::group_pass, CudaNetModel::loss_grad_group, train::compute_gradients_of).
// The property: a grouped pass is bit-identical to the workers' separate passes (same
// kernels, same summation order per group), so the runtime may group or not without
// changing a single bit of a run. Each level is checked against the level below:
//  - DeviceNet<float>::group_pass over G replicas (their own parameters, batches, dropout
//    masks; an unaligned stride) vs G lone pass() calls, and group 0 vs the CPU reference;
//  - CudaNetModel::loss_grad_group (host staging, a chunk smaller than the workspace) vs
//    loss_grad per worker;
//  - train::compute_gradients_of with the cuda model (several chunks) vs compute_gradient per
//    worker: gradients, losses, sample indices, pass counts and noise seeds.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cuda/model_cuda.h"
#include "cuda/net_cuda.h"
#include "models/lenet.h"
#include "train/worker.h"
#include "tests/indexed_images.h"
#include "tests/cuda/cuda_test_util.h"

using namespace wb;
using wb::test::IndexedImages;
using namespace wb::cuda::test;
using models::Batch;
using models::ConvNetModel;

TEST_CASE("grouped DeviceNet pass == the replicas' lone passes, bit for bit") {
  for (const auto& spec : {models::lenet5_spec(), models::lenet5_classic_spec()}) {
    CAPTURE(spec.name);
    const ConvNetModel cpu(spec);
    const models::NetInfo& net = cpu.net();
    const size_t np = net.num_params, stride = np + 13, in0 = net.layers[0].in_size();
    constexpr int G = 5, n = 7;
    std::vector<float> w(G * stride, 0.f), x;
    std::vector<int32_t> label;
    std::vector<uint64_t> seeds;
    std::vector<Batch> batches;
    for (int k = 0; k < G; ++k) {
      cpu.init_params(std::span<float>(w.data() + k * stride, np), 10 + k);  // distinct replicas
      batches.push_back(random_batch(net, n, 300 + static_cast<uint64_t>(k)));
      x.insert(x.end(), batches[k].x.begin(), batches[k].x.end());
      label.insert(label.end(), batches[k].label.begin(), batches[k].label.end());
      seeds.push_back(77 + 1000 * static_cast<uint64_t>(k));
    }
    REQUIRE(x.size() == G * n * in0);
    auto dw = to_device(w);
    cuda::DeviceBuffer<float> dg(G * stride);
    cuda::DeviceNet<float> group(net, n, nullptr, G);
    group.set_group_batches(x.data(), label.data(), G, n);
    std::vector<float> loss(G);
    group.group_pass(dw.data(), dg.data(), stride, seeds.data(), loss.data());
    const std::vector<float> g_all = dg.to_host();

    cuda::DeviceNet<float> lone(net, n);
    for (int k = 0; k < G; ++k) {
      CAPTURE(k);
      std::vector<float> wk(w.begin() + k * stride, w.begin() + k * stride + np);
      auto dwk = to_device(wk);
      cuda::DeviceBuffer<float> dgk(np);
      lone.set_batch(batches[k].x.data(), batches[k].label.data(), n);
      const float lk = lone.pass(dwk.data(), dgk.data(), true, seeds[k]);
      CHECK(loss[k] == lk);
      check_equal(std::vector<float>(g_all.begin() + k * stride, g_all.begin() + k * stride + np),
                  dgk.to_host(), "group " + std::to_string(k) + " gradient");
      if (k == 0) {  // and the lone pass is the CPU reference's (its own test's tolerance)
        std::vector<float> gr(np);
        const double lr = cpu.reference_loss_grad(wk, batches[k], gr, seeds[k]);
        CHECK(lk == doctest::Approx(lr).epsilon(1e-5));
        check_close(dgk.to_host(), gr, 1e-4, 1e-3, "group 0 vs CPU reference");
      }
    }
  }
}

TEST_CASE("CudaNetModel::loss_grad_group == loss_grad per worker, bit for bit") {
  const ConvNetModel cpu(models::lenet5_spec());
  const cuda::CudaNetModel gpu(cpu);
  const size_t np = cpu.num_params();
  constexpr int G = 6, n = 9;
  auto gws = gpu.make_group_workspace(8, 16);  // a chunk smaller than the workspace
  auto ws = gpu.make_workspace(16);
  std::vector<std::vector<float>> w(G, std::vector<float>(np)), g(G, std::vector<float>(np, 5.f));
  std::vector<Batch> b;
  std::vector<train::DeviceModel::GroupPass> passes;
  for (int k = 0; k < G; ++k) {
    gpu.init_params(w[k], 20 + k);
    b.push_back(random_batch(cpu.net(), n, 400 + static_cast<uint64_t>(k)));
  }
  for (int k = 0; k < G; ++k)
    passes.push_back({.w = w[k], .batch = &b[k], .g = g[k], .noise_seed = 900u + k});
  gpu.loss_grad_group(passes, *gws);
  for (int k = 0; k < G; ++k) {
    CAPTURE(k);
    std::vector<float> gk(np);
    const double lk = gpu.loss_grad(w[k], b[k], gk, *ws, 900u + k);
    CHECK(passes[k].loss == lk);
    check_equal(g[k], gk, "worker " + std::to_string(k) + " gradient");
  }
}

TEST_CASE("compute_gradients_of: grouped chunks == one pass per worker (the runtime's path)") {
  const ConvNetModel cpu(models::lenet5_spec());
  const cuda::CudaNetModel gpu(cpu);
  const IndexedImages data(20000);
  const size_t np = cpu.num_params();
  constexpr int W = 6;
  // n = 2048: kGroupSamples / n = 4 workers per chunk, so 6 workers make two chunks (4 + 2).
  constexpr int n = train::kGroupSamples / 4;
  auto make_workers = [&] {
    std::vector<train::Worker> ws(W);
    const auto perm = train::Sampler::global_permutation(data.size(), 5);
    for (int k = 0; k < W; ++k) {
      ws[k].id = k;
      ws[k].seed = 5;
      ws[k].w.resize(np);
      ws[k].g.assign(np, 0.f);
      gpu.init_params(ws[k].w, 30 + k);
      ws[k].sampler = train::Sampler(perm, W, k, 5);
    }
    return ws;
  };
  std::vector<train::Worker> grouped = make_workers(), lone = make_workers();
  train::PassScratch sg(gpu, data, n), sl(gpu, data, n);
  std::vector<double> fg(W), fl(W);
  for (int step = 0; step < 2; ++step) {
    train::compute_gradients_of(grouped, gpu, data, n, sg, fg);
    for (int k = 0; k < W; ++k) {
      lone[k].compute_gradient(gpu, data, n, sl);
      fl[k] = gpu.flops_for_batch(sl.batch);
    }
    CHECK(sg.group_capacity == 4);  // it did group
    for (int k = 0; k < W; ++k) {
      CAPTURE(step);
      CAPTURE(k);
      CHECK(grouped[k].loss == lone[k].loss);
      CHECK(grouped[k].passes == lone[k].passes);
      CHECK(grouped[k].last_noise == lone[k].last_noise);
      CHECK(grouped[k].idx == lone[k].idx);
      CHECK(fg[k] == fl[k]);
      check_equal(grouped[k].g, lone[k].g, "worker gradient");
    }
  }
}
