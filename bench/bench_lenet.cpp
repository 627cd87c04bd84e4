// bench_lenet: training throughput of lenet5 on one thread, the number to compare with
// PyTorch (../shared/bench/torch_lenet.py: the same net, forward + backward + SGD momentum
// 0.5, lr 0.01, dropout on, random N(0,1) inputs).
//
// One step = Model::loss_grad (fast path, dropout masks from a fresh noise seed) + the
// momentum update written inline (PyTorch SGD: buf = mu*buf + g; w -= lr*buf).
// The same for the plain reference loops (models/layers.h), and lenet5_classic's fast path.
// Rates are wall-clock (UseRealTime), as torch_lenet.py's time.perf_counter; on a machine
// shared with other jobs compare the CPU column too.
// Before timing, the fast gradient is checked against the reference (nccl-tests style:
// every benchmark run also checks correctness).
//
// Last line, machine-readable:
//   RESULT samples_per_s_b32=<x> samples_per_s_b64=<x> reference_samples_per_s_b32=<x>
// (the median over repetitions). Usual Google Benchmark flags apply
// (--benchmark_repetitions=N, --benchmark_min_time=S, --benchmark_filter=...).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "models/lenet.h"
#include "runtime/core/rng.h"

namespace {

using wb::models::Batch;
using wb::models::ConvNetModel;

struct Trainer {
  const ConvNetModel& m;
  std::vector<float> w, g, buf;
  Trainer(const ConvNetModel& model) : m(model) {
    w.resize(m.num_params());
    g.resize(w.size());
    buf.assign(w.size(), 0.0f);
    m.init_params(w, 0);
  }
  void sgd(float lr = 0.01f, float mu = 0.5f) {
    for (size_t i = 0; i < w.size(); ++i) {
      buf[i] = mu * buf[i] + g[i];
      w[i] -= lr * buf[i];
    }
  }
};

void bm_fast(benchmark::State& state, const ConvNetModel* m) {
  const int n = static_cast<int>(state.range(0));
  Trainer t(*m);
  const Batch b = wb::models::random_image_batch(n, 784, 10, 1);
  auto ws = m->make_workspace(n);
  uint64_t seed = 0;
  for (int i = 0; i < 30; ++i) {  // warm-up, as torch_lenet.py
    m->loss_grad(t.w, b, t.g, *ws, ++seed);
    t.sgd();
  }
  for (auto _ : state) {
    double loss = m->loss_grad(t.w, b, t.g, *ws, ++seed);
    benchmark::DoNotOptimize(loss);
    t.sgd();
  }
  state.counters["samples_per_s"] =
      benchmark::Counter(static_cast<double>(n) * state.iterations(), benchmark::Counter::kIsRate);
}

void bm_reference(benchmark::State& state, const ConvNetModel* m) {
  const int n = static_cast<int>(state.range(0));
  Trainer t(*m);
  const Batch b = wb::models::random_image_batch(n, 784, 10, 1);
  uint64_t seed = 0;
  for (auto _ : state) {
    double loss = m->reference_loss_grad(t.w, b, t.g, ++seed);
    benchmark::DoNotOptimize(loss);
    t.sgd();
  }
  state.counters["samples_per_s"] =
      benchmark::Counter(static_cast<double>(n) * state.iterations(), benchmark::Counter::kIsRate);
}

// Fast vs reference gradient on one batch: max |fast - ref| / (1e-4 + 1e-3 |ref|) <= 1.
bool check(const ConvNetModel& m, int n) {
  Trainer t(m);
  const Batch b = wb::models::random_image_batch(n, 784, 10, 7);
  auto ws = m.make_workspace(n);
  std::vector<float> gr(t.w.size());
  const double lf = m.loss_grad(t.w, b, t.g, *ws, 42);
  const double lr = m.reference_loss_grad(t.w, b, gr, 42);
  double worst = std::fabs(lf - lr) / (1e-5 + 1e-5 * std::fabs(lr));
  for (size_t i = 0; i < gr.size(); ++i)
    worst = std::max(worst, std::fabs(t.g[i] - gr[i]) / (1e-4 + 1e-3 * std::fabs(gr[i])));
  std::printf("check %s batch %d: fast vs reference worst error ratio %.3g (<= 1 passes)\n",
              m.name().c_str(), n, worst);
  return worst <= 1.0;
}

class CaptureReporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, std::vector<double>> rates;
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.run_type != Run::RT_Iteration) continue;
      auto it = r.counters.find("samples_per_s");
      if (it != r.counters.end())
        rates[r.run_name.function_name + "/" + r.run_name.args].push_back(it->second);
    }
    ConsoleReporter::ReportRuns(runs);
  }
  double median(const std::string& key) const {
    auto it = rates.find(key);
    if (it == rates.end() || it->second.empty()) return 0;
    std::vector<double> v = it->second;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  }
};

}  // namespace

int main(int argc, char** argv) {
  static const ConvNetModel lenet(wb::models::lenet5_spec());
  static const ConvNetModel classic(wb::models::lenet5_classic_spec());
  std::printf("lenet5: %zu parameters, %.3g MFLOP/sample (fwd+bwd); lenet5_classic: %zu, %.3g\n",
              lenet.num_params(), lenet.flops_per_sample() / 1e6, classic.num_params(),
              classic.flops_per_sample() / 1e6);
  bool ok = check(lenet, 32) && check(lenet, 13) && check(classic, 32);
  if (!ok) {
    std::printf("RESULT check_failed=1\n");
    return 1;
  }

  benchmark::RegisterBenchmark("lenet5_fast", bm_fast, &lenet)
      ->Arg(32)
      ->Arg(64)
      ->Repetitions(5)
      ->MinTime(0.5)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("lenet5_reference", bm_reference, &lenet)
      ->Arg(32)
      ->Arg(64)
      ->Repetitions(3)
      ->MinTime(0.5)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("lenet5_classic_fast", bm_fast, &classic)
      ->Arg(32)
      ->Repetitions(3)
      ->MinTime(0.5)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  CaptureReporter rep;
  benchmark::RunSpecifiedBenchmarks(&rep);
  benchmark::Shutdown();
  std::printf(
      "RESULT samples_per_s_b32=%.0f samples_per_s_b64=%.0f reference_samples_per_s_b32=%.0f\n",
      rep.median("lenet5_fast/32"), rep.median("lenet5_fast/64"),
      rep.median("lenet5_reference/32"));
  return 0;
}
