// bench_resnet: training throughput of the CIFAR ResNet-20 (He et al. 2016 section 4.2: width
// 16, BatchNorm, shortcut A) on 3x32x32 inputs, one thread, the number to compare with
// PyTorch (bench/torch_resnet.py: the same net and step, one thread, measured in this run).
//
// One step = Model::loss_grad_state (fast kernels, models/resnet_fast.h; batch statistics,
// running statistics updated) + SGD momentum 0.9 written inline. Evaluation = evaluate_state
// (running statistics, forward only). Rates are wall-clock medians over repetitions of
// >= --min-time s; each rate x FLOP/sample (Model::flops_per_sample: 6 per forward MAC for
// training, 2 for evaluation) is divided by the core's FMA peak timed in the same
// repetitions (bench/peak.h).
// Correctness on every run: the fast gradient and running statistics against the reference
// loops on ResNet-20 at batch 3 and on a 28x28 ResNet-8 (ragged GEMM panels) at batch 5;
// #wrong counts values off by more than 1e-4 max|ref| + 1e-3 |ref|.
// Last line:
//   RESULT samples_per_s_b32/b128 fraction_of_fma_peak_b32/b128 eval_samples_per_s_b128
//          eval_fraction_of_fma_peak_b128 fma_peak_gflops torch_samples_per_s_b32/b128
//          over_torch_b32/b128, the same per CPU-second (cpu_fraction_of_fma_peak_b32/b128,
//          cpu_eval_fraction_of_fma_peak_b128, cpu_over_torch_b32/b128), wrong
//          (torch 0: peer not run)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/driver.h"
#include "bench/peak.h"
#include "core/rng.h"
#include "models/resnet.h"

namespace {

using wb::bench::Measured;
using wb::bench::Op;
using wb::models::Batch;
using wb::models::ResnetConfig;
using wb::models::ResnetModel;

Batch random_batch(const ResnetConfig& c, int n, uint64_t seed) {
  wb::core::Rng r(seed);
  Batch b;
  b.n = n;
  b.x.resize(static_cast<size_t>(n) * c.c * c.h * c.w);
  for (float& v : b.x) v = static_cast<float>(r.normal());
  for (int i = 0; i < n; ++i) b.label.push_back(static_cast<int32_t>(r.below(10)));
  return b;
}

long check(const ResnetModel& m, int n) {
  const Batch b = random_batch(m.config(), n, 3);
  std::vector<float> w(m.num_params()), gf(w.size()), gr(w.size());
  m.init_params(w, 1);
  std::vector<float> sf(m.state_size()), sr(m.state_size());
  m.init_state(sf);
  m.init_state(sr);
  auto ws = m.make_workspace(n);
  const double lf = m.loss_grad_state(w, b, gf, *ws, 5, sf);
  const double lr = m.reference_loss_grad(w, b, gr, 5, sr);
  double gmax = 0, worst = std::fabs(lf - lr) / (1e-5 + 1e-5 * std::fabs(lr));
  for (float v : gr) gmax = std::max(gmax, static_cast<double>(std::fabs(v)));
  long wrong = worst <= 1.0 ? 0 : 1;
  auto cmp = [&](const std::vector<float>& f, const std::vector<float>& r, double scale) {
    for (size_t i = 0; i < r.size(); ++i) {
      const double e = std::fabs(f[i] - r[i]) / (1e-4 * scale + 1e-3 * std::fabs(r[i]));
      worst = std::max(worst, e);
      if (!(e <= 1.0)) ++wrong;
    }
  };
  cmp(gf, gr, gmax);
  cmp(sf, sr, 1.0);
  std::printf("check resnet depth %d %dx%d batch %d: fast vs reference worst error ratio %.3g "
              "(<= 1 passes)\n",
              m.config().depth, m.config().h, m.config().w, n, worst);
  return wrong;
}

struct StepState {
  const ResnetModel& m;
  std::vector<float> w, g, buf, st;
  Batch b;
  std::unique_ptr<wb::models::Workspace> ws;
  uint64_t seed = 0;
  double loss = 0;
  StepState(const ResnetModel& model, int n)
      : m(model), b(random_batch(model.config(), n, 1)), ws(model.make_workspace(n)) {
    w.resize(m.num_params());
    g.resize(w.size());
    st.resize(m.state_size());
    reset();
  }
  void reset() {
    m.init_params(w, 0);
    m.init_state(st);
    buf.assign(w.size(), 0.f);
    seed = 0;
  }
  void step() {
    loss = m.loss_grad_state(w, b, g, *ws, ++seed, st);
    for (size_t i = 0; i < w.size(); ++i) {  // PyTorch SGD: buf = mu buf + g; w -= lr buf
      buf[i] = 0.9f * buf[i] + g[i];
      w[i] -= 0.01f * buf[i];
    }
  }
};

int run(const wb::bench::Args& args) {
  static const ResnetModel r20{ResnetConfig{}};
  ResnetConfig c8;
  c8.depth = 8;
  c8.width = 8;
  c8.c = 1, c8.h = 28, c8.w = 28;
  static const ResnetModel r8{c8};
  const double train_flops = r20.flops_per_sample(), eval_flops = train_flops / 3;
  std::printf("resnet20: %zu parameters, %.1f MFLOP/sample (fwd+bwd), %.1f forward\n",
              r20.num_params(), train_flops / 1e6, eval_flops / 1e6);
  const bool smoke = args.smoke();
  const int b_small = smoke ? 4 : 32, b_large = smoke ? 8 : 128;
  std::vector<std::unique_ptr<StepState>> states;
  auto step_op = [&](int n, bool chk) {
    states.push_back(std::make_unique<StepState>(r20, n));
    StepState& s = *states.back();
    Op op{.name = "resnet20_train/" + std::to_string(n), .items = static_cast<double>(n)};
    op.run = [&s] { s.step(); };
    op.reset = [&s] { s.reset(); };
    if (chk) op.check = [] { return check(r20, 3) + check(r8, 5); };
    return op;
  };
  std::vector<Op> ops{step_op(b_small, true), step_op(b_large, false)};
  states.push_back(std::make_unique<StepState>(r20, b_large));
  StepState& es = *states.back();
  ops.push_back(Op{.name = "resnet20_eval/" + std::to_string(b_large),
                   .items = static_cast<double>(b_large),
                   .run = [&es] { es.loss = r20.evaluate_state(es.w, es.st, es.b, *es.ws).loss_sum; }});
  constexpr long kPeakIters = 1 << 18;
  ops.push_back(Op{.name = "fma_peak (rate = FLOP/s)",
                   .items = wb::bench::fma_chains(kPeakIters),
                   .run = [] { wb::bench::fma_chains(kPeakIters); }});
  wb::bench::Timing t;
  t.reps = args.integer("reps");
  t.min_time_s = args.num("min-time");
  t.warmup = smoke ? 0 : 2;
  t.stat = wb::bench::Stat::kMedian;
  const std::vector<Measured> m = wb::bench::measure(ops, t);
  const double peak = m.back().rate(ops.back());

  double torch_small = 0, torch_large = 0, torch_cpu_small = 0, torch_cpu_large = 0;
  const std::string script = wb::bench::repo_path("bench/torch_resnet.py");
  if (smoke) {
    std::printf("peer: skipped under --smoke\n");
  } else if (script.empty() || !wb::bench::have_torch()) {
    std::printf("peer: no bench/torch_resnet.py or no torch on /usr/bin/python3: no torch ratio\n");
  } else {
    const std::string mt = std::to_string(args.num("min-time"));
    // Two keys of one line each: the wall-clock rate (the line's last samples/s=) and the
    // rate per CPU-second (cpu_samples/s=), each peer run once per key.
    auto peer = [&](int b, const char* key) {
      return wb::bench::run_peer("/usr/bin/python3 " + script + " " + std::to_string(b) + " 1 " + mt, key);
    };
    torch_small = peer(b_small, " samples/s=");
    torch_large = peer(b_large, " samples/s=");
    torch_cpu_small = peer(b_small, "cpu_samples/s=");
    torch_cpu_large = peer(b_large, "cpu_samples/s=");
  }
  std::printf("\n");
  wb::bench::print_table(ops, m, "samples/s");
  auto frac = [&](size_t k, double flops) { return m[k].rate(ops[k]) * flops / peak; };
  std::printf("\nFMA peak (one thread, measured): %.1f GFLOP/s\n", peak / 1e9);
  for (size_t k = 0; k < 3; ++k) {
    const double f = frac(k, k < 2 ? train_flops : eval_flops);
    std::printf("%-24s %8.1f GFLOP/s  %.3f of the FMA peak\n", ops[k].name.c_str(), f * peak / 1e9, f);
  }
  // The same per CPU-second of this process (the driver's cpu ms/call), for a shared machine.
  auto cpu_rate = [&](size_t k) { return m[k].cpu_seconds > 0 ? ops[k].items / m[k].cpu_seconds : 0.0; };
  const double cpu_peak = cpu_rate(3);
  auto cpu_frac = [&](size_t k, double flops) { return cpu_peak > 0 ? cpu_rate(k) * flops / cpu_peak : 0.0; };
  const std::string s = std::to_string(b_small), l = std::to_string(b_large);
  return wb::bench::Result()
      .add("samples_per_s_b" + s, m[0].rate(ops[0]), 1)
      .add("samples_per_s_b" + l, m[1].rate(ops[1]), 1)
      .add("fraction_of_fma_peak_b" + s, frac(0, train_flops), 3)
      .add("fraction_of_fma_peak_b" + l, frac(1, train_flops), 3)
      .add("eval_samples_per_s_b" + l, m[2].rate(ops[2]), 1)
      .add("eval_fraction_of_fma_peak_b" + l, frac(2, eval_flops), 3)
      .add("fma_peak_gflops", peak / 1e9, 1)
      .add("torch_samples_per_s_b" + s, torch_small, 1)
      .add("torch_samples_per_s_b" + l, torch_large, 1)
      .add("over_torch_b" + s, torch_small > 0 ? m[0].rate(ops[0]) / torch_small : 0.0, 2)
      .add("over_torch_b" + l, torch_large > 0 ? m[1].rate(ops[1]) / torch_large : 0.0, 2)
      .add("cpu_fraction_of_fma_peak_b" + s, cpu_frac(0, train_flops), 3)
      .add("cpu_fraction_of_fma_peak_b" + l, cpu_frac(1, train_flops), 3)
      .add("cpu_eval_fraction_of_fma_peak_b" + l, cpu_frac(2, eval_flops), 3)
      .add("cpu_over_torch_b" + s, torch_cpu_small > 0 ? cpu_rate(0) / torch_cpu_small : 0.0, 2)
      .add("cpu_over_torch_b" + l, torch_cpu_large > 0 ? cpu_rate(1) / torch_cpu_large : 0.0, 2)
      .finish(wb::bench::total_wrong(m));
}

}  // namespace

int main(int argc, char** argv) {
  return wb::bench::bench_main(
      argc, argv,
      {"bench_resnet",
       "ResNet-20 (3x32x32) training and evaluation samples/s on one thread, vs PyTorch",
       {{"reps", 3, 1, "repetitions (median of)"},
        {"min-time", 1.0, 0.01, "seconds per repetition at least"}}},
      run);
}
