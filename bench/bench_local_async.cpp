// bench_local_async: the two throughput claims of LAP/LPP-SGD on this machine
// (papers/lpp-sgd-scaling-the-wild.txt section 3 "Discussion on the Rule", section 4),
// LeNet-5 on Fashion-MNIST, local batch 128, real mode (threads, wall clock):
//
//  1. LAP-SGD, one worker, U = 2 updater threads vs U = 1: training samples/s through the
//     whole algorithm (lock-free snapshot, gradient, optimizer, atomic apply, averaging
//     rounds, runner bookkeeping). On 2 cores the target is >= 1.6x.
//  2. LPP-SGD's partial step on the LAST block (the block nearest the output, which the
//     paper's partial backprop makes cheapest) vs a full step: Model::loss_grad_from
//     (backprop stops at the block) vs Model::loss_grad, one thread, median of interleaved
//     repetitions. Target <= 0.75. A model without its own loss_grad_from runs the default
//     (full pass, then zero the prefix): the ratio is then ~1 and the bench says so.
// Correctness is checked on every run (nccl-tests style): the partial gradient must equal
// the full gradient on the block's tensors and be zero before it (#wrong must be 0).
//
// Last line, machine-readable:
//   RESULT lap_u2_over_u1=<x> lpp_partial_over_full=<x>
// Options: --steps N (LAP steps per measurement, default 200), --reps N (timing
// repetitions of the partial/full comparison, default 40), --repeat N (LAP measurements,
// best of, default 3).
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/async_common.h"
#include "models/lenet.h"
#include "runtime/core/rng.h"
#include "runtime/runner.h"
#include "runtime/training_loop.h"
#include "runtime/sweep_plan.h"
#include "runtime/spec.h"

using namespace wb;

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Samples/s of one LAP run (real mode, W = 1), measured between the first and last curve
// rows so that data loading, setup and the final evaluation are excluded.
double lap_samples_per_s(rt::TaskCache& cache, int U, int steps) {
  const std::string spec = R"({"name": "bench", "base": {"model": {"name": "lenet5",
      "test_limit": 256}, "batch_size": 128, "lr": 0.01, "workers": 1, "steps": )" +
                           std::to_string(steps) +
                           R"(, "optimizer": {"name": "sgd", "momentum": 0.9},
      "algorithm": {"name": "lap_sgd", "mode": "real", "H": 16, "updaters": )" +
                           std::to_string(U) + "}}}";
  auto e = rt::parse_experiment(spec, "bench.json");
  auto r = rt::execute_run(e.runs[0], cache.get(e.runs[0].cfg.model.value), MPI_COMM_SELF, nullptr);
  const auto& c = r.curves;
  if (r.status != "completed" || c.size() < 2) {
    std::fprintf(stderr, "bench_local_async: LAP run %s\n", r.status.c_str());
    std::exit(1);
  }
  return (c.samples.back() - c.samples.front()) / (c.wall_s.back() - c.wall_s.front());
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int steps = 200, reps = 40, repeat = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--repeat")) repeat = std::atoi(argv[i + 1]);
  }

  // ---- 1. LAP U = 2 vs U = 1
  rt::TaskCache cache;
  std::printf("LAP-SGD real mode, lenet5, batch 128, 1 worker, %d steps (best of %d)\n", steps,
              repeat);
  std::printf("%10s %14s\n", "updaters", "samples/s");
  double sps[3] = {0, 0, 0};
  for (int U : {1, 2})
    for (int k = 0; k < repeat; ++k) sps[U] = std::max(sps[U], lap_samples_per_s(cache, U, steps));
  for (int U : {1, 2}) std::printf("%10d %14.1f\n", U, sps[U]);
  const double lap_ratio = sps[2] / sps[1];
  // The machine's own ceiling for the same work: two threads running independent
  // loss_grad loops (own model copy, own workspace, nothing shared) vs one.
  auto plain_rate = [&](int threads) {
    models::ConvNetModel pm(models::lenet5_spec());
    const int n = 128, iters = 60;
    std::vector<std::thread> th;
    const double t0 = now_s();
    for (int k = 0; k < threads; ++k)
      th.emplace_back([&pm, k] {
        models::Batch b;
        b.n = n;
        rt::Rng r(static_cast<uint64_t>(k) + 9);
        b.x.resize(static_cast<size_t>(n) * 784);
        for (auto& v : b.x) v = static_cast<float>(r.normal());
        b.label.assign(n, 3);
        std::vector<float> w(pm.num_params()), g(pm.num_params());
        pm.init_params(w, 1);
        auto ws = pm.make_workspace(n);
        for (int i = 0; i < iters; ++i) pm.loss_grad(w, b, g, *ws, static_cast<uint64_t>(i));
      });
    for (auto& t : th) t.join();
    return threads * iters * n / (now_s() - t0);
  };
  const double p1 = plain_rate(1), p2 = plain_rate(2);
  std::printf("U=2 / U=1: %.2fx (target >= 1.6 on 2 cores); machine ceiling, 2 independent "
              "gradient threads / 1: %.2fx\n\n", lap_ratio, p2 / p1);

  // ---- 2. LPP partial step on the last block vs full step
  models::ConvNetModel m(models::lenet5_spec());
  const int n = 128;
  models::Batch b;
  b.n = n;
  rt::Rng r(5);
  b.x.resize(static_cast<size_t>(n) * 784);
  for (auto& v : b.x) v = static_cast<float>(r.normal());
  b.label.resize(n);
  for (auto& y : b.label) y = static_cast<int32_t>(r.below(10));
  std::vector<float> w(m.num_params()), g(m.num_params()), gp(m.num_params());
  m.init_params(w, 1);
  auto ws = m.make_workspace(n);
  const auto& t = m.tensors();
  const auto blocks = algo::partition_blocks(t, 2);  // LPP with U = 2 (the bench's LAP U)
  std::printf("LPP-SGD blocks (U = 2, balanced by parameter count):\n");
  for (size_t k = 0; k < blocks.size(); ++k)
    std::printf("  block %zu: tensors %s..%s, %zu params\n", k + 1,
                t[blocks[k].first_tensor].name.c_str(), t[blocks[k].end_tensor - 1].name.c_str(),
                blocks[k].size);

  std::printf("\n%-28s %12s %12s %8s %7s\n", "pass (batch 128)", "median ms", "model flops",
              "ratio", "#wrong");
  std::vector<double> tf, tp;
  double ratio_last = 1;
  for (size_t k = 0; k < blocks.size(); ++k) {
    const size_t first = blocks[k].first_tensor;
    // correctness
    m.loss_grad(w, b, g, *ws, 42);
    m.loss_grad_from(w, b, gp, *ws, 42, first);
    int wrong = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      const bool in_block = i >= t[first].offset;
      const float want = in_block ? g[i] : 0.f;
      if (!(std::fabs(gp[i] - want) <= 1e-6f + 1e-5f * std::fabs(want))) ++wrong;
    }
    tf.clear();
    tp.clear();
    for (int i = 0; i < reps; ++i) {  // interleaved, so drift hits both alike
      double t0 = now_s();
      m.loss_grad(w, b, g, *ws, static_cast<uint64_t>(i));
      tf.push_back(now_s() - t0);
      t0 = now_s();
      m.loss_grad_from(w, b, gp, *ws, static_cast<uint64_t>(i), first);
      tp.push_back(now_s() - t0);
    }
    const double mf = median(tf), mp = median(tp);
    if (k == 0)
      std::printf("%-28s %12.3f %12.3g %8s %7s\n", "full", mf * 1e3, m.flops_per_sample() * n, "1.00",
                  "-");
    char label[64];
    std::snprintf(label, sizeof label, "partial from block %zu%s", k + 1,
                  k + 1 == blocks.size() ? " (last)" : "");
    std::printf("%-28s %12.3f %12.3g %8.2f %7d\n", label, mp * 1e3,
                m.flops_per_sample_from(first) * n, mp / mf, wrong);
    if (wrong) {
      std::fprintf(stderr, "bench_local_async: partial gradient differs from the full one\n");
      MPI_Finalize();
      return 1;
    }
    if (k + 1 == blocks.size()) ratio_last = mp / mf;
  }
  if (ratio_last > 0.9)
    std::printf("note: the partial pass is not cheaper: this model runs Model::loss_grad_from's "
                "default (full backprop, then zero the prefix)\n");
  std::printf("\nRESULT lap_u2_over_u1=%.3f lpp_partial_over_full=%.3f\n", lap_ratio, ratio_last);
  MPI_Finalize();
  return 0;
}
