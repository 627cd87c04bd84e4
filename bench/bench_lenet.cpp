// bench_lenet: training throughput of lenet5 on one thread, the number to compare with
// PyTorch (../shared/bench/torch_lenet.py: the same net, forward + backward + SGD momentum
// 0.5, lr 0.01, dropout on, random N(0,1) inputs).
//
// One step = Model::loss_grad (fast path, dropout masks from a fresh noise seed) + the
// momentum update written inline (PyTorch SGD: buf = mu*buf + g; w -= lr*buf).
// The same for the plain reference loops (models/layers.h), and lenet5_classic's fast path.
// Rates are wall-clock, as torch_lenet.py's time.perf_counter: after 30 untimed warm-up
// steps (fast paths, as torch_lenet.py) each repetition starts from fresh parameters and
// steps for >= --min-time seconds; the rate is the median over the repetitions.
// Correctness on every run (nccl-tests style): before timing, the fast gradient is checked
// against the reference at batch 32, 13 (an odd batch) and 64 (lenet5) and 32 (classic);
// #wrong counts gradient values (and the loss) off by more than 1e-4 + 1e-3 |ref|.
//
// Training at batch 8, 32 and 64 and the evaluation path (forward only) at the same
// batches; each rate x FLOP/sample is divided by the core's FMA peak measured in the same
// run (bench/peak.h). PyTorch's rate at batch 32 (torch_lenet.py, one thread) is measured
// in the same run when /usr/bin/python3 has torch.
// Last line, machine-readable:
//   RESULT samples_per_s_b8/b32/b64=<x> fma_peak_gflops=<x> fraction_of_fma_peak_b8/b32/b64
//          eval_fraction_of_fma_peak_b8/b32/b64 fraction_of_fma_peak=<min of those six>
//          cpu_fma_peak_gflops=<x> cpu_fraction_of_fma_peak=<min of the six per CPU-second>
//          torch_samples_per_s_b32=<x> over_torch_b32=<x> reference_samples_per_s_b32=<x>
//          classic_samples_per_s_b128=<x> classic_fraction_of_fma_peak_b128=<x> wrong=<n>
// (the medians over repetitions; torch 0 = peer not run). Options: --reps N (fast lenet5, default
// 5), --other-reps N (reference and classic, default 3), --min-time S (default 0.5), --smoke.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/driver.h"
#include "bench/peak.h"
#include "models/lenet.h"

namespace {

using wb::bench::Measured;
using wb::bench::Op;
using wb::models::Batch;
using wb::models::ConvNetModel;

struct Trainer {
  const ConvNetModel& m;
  std::vector<float> w, g, buf;
  uint64_t seed = 0;
  explicit Trainer(const ConvNetModel& model) : m(model) {
    w.resize(m.num_params());
    g.resize(w.size());
    reset();
  }
  // Fresh parameters and momentum, as every repetition of the PyTorch peer.
  void reset() {
    m.init_params(w, 0);
    buf.assign(w.size(), 0.0f);
    seed = 0;
  }
  void sgd(float lr = 0.01f, float mu = 0.5f) {
    for (size_t i = 0; i < w.size(); ++i) {
      buf[i] = mu * buf[i] + g[i];
      w[i] -= lr * buf[i];
    }
  }
};

// Fast vs reference gradient on one batch: values off by more than 1e-4 + 1e-3 |ref|
// (the loss: 1e-5 + 1e-5 |ref|); prints the worst error ratio (<= 1 passes).
long check(const ConvNetModel& m, int n) {
  Trainer t(m);
  const Batch b = wb::models::random_image_batch(n, 784, 10, 7);
  auto ws = m.make_workspace(n);
  std::vector<float> gr(t.w.size());
  const double lf = m.loss_grad(t.w, b, t.g, *ws, 42);
  const double lr = m.reference_loss_grad(t.w, b, gr, 42);
  double worst = std::fabs(lf - lr) / (1e-5 + 1e-5 * std::fabs(lr));
  long wrong = worst <= 1.0 ? 0 : 1;
  for (size_t i = 0; i < gr.size(); ++i) {
    const double e = std::fabs(t.g[i] - gr[i]) / (1e-4 + 1e-3 * std::fabs(gr[i]));
    worst = std::max(worst, e);
    if (!(e <= 1.0)) ++wrong;
  }
  std::printf("check %s batch %d: fast vs reference worst error ratio %.3g (<= 1 passes)\n",
              m.name().c_str(), n, worst);
  return wrong;
}

// A training step of batch n through the fast path (fast = true) or the reference loops.
// The trainer, batch and workspace live in `state`, which outlives the op.
struct StepState {
  Trainer t;
  Batch b;
  std::unique_ptr<wb::models::Workspace> ws;
  double loss = 0;  // kept, so the pass cannot be optimized away
  StepState(const ConvNetModel& m, int n)
      : t(m), b(wb::models::random_image_batch(n, 784, 10, 1)), ws(m.make_workspace(n)) {}
};

Op step_op(const std::string& name, const ConvNetModel& m, int n, bool fast,
           std::vector<std::unique_ptr<StepState>>& states, std::vector<int> check_batches) {
  states.push_back(std::make_unique<StepState>(m, n));
  StepState& s = *states.back();
  Op op{.name = name + "/" + std::to_string(n), .items = static_cast<double>(n)};
  op.run = [&s, &m, fast] {
    s.loss = fast ? m.loss_grad(s.t.w, s.b, s.t.g, *s.ws, ++s.t.seed)
                  : m.reference_loss_grad(s.t.w, s.b, s.t.g, ++s.t.seed);
    s.t.sgd();
  };
  op.reset = [&s] { s.t.reset(); };
  if (!check_batches.empty())
    op.check = [&m, check_batches] {
      long wrong = 0;
      for (int c : check_batches) wrong += check(m, c);
      return wrong;
    };
  return op;
}

// Forward-only multiply-adds x 2 per sample (the evaluation path's work), counted as
// NetInfo counts flops_per_sample.
double forward_flops_per_sample(const ConvNetModel& m) {
  double macs = 0;
  for (const wb::models::LayerInfo& li : m.net().layers) {
    if (li.spec.kind == wb::models::LayerKind::kConv)
      macs += static_cast<double>(li.out_size()) * li.conv().kdim();
    else if (li.spec.kind == wb::models::LayerKind::kLinear)
      macs += static_cast<double>(li.c) * li.spec.out;
  }
  return 2.0 * macs;
}

// Evaluation (forward only, no dropout) of batch n through the fast path.
Op eval_op(const ConvNetModel& m, int n, std::vector<std::unique_ptr<StepState>>& states) {
  states.push_back(std::make_unique<StepState>(m, n));
  StepState& s = *states.back();
  Op op{.name = "lenet5_fast_eval/" + std::to_string(n), .items = static_cast<double>(n)};
  op.run = [&s, &m] { s.loss = m.evaluate(s.t.w, s.b, *s.ws).loss_sum; };
  return op;
}

int run(const wb::bench::Args& args) {
  static const ConvNetModel lenet(wb::models::lenet5_spec());
  static const ConvNetModel classic(wb::models::lenet5_classic_spec());
  const double fwd_flops = forward_flops_per_sample(lenet);
  std::printf(
      "lenet5: %zu parameters, %.3g MFLOP/sample (fwd+bwd), %.3g forward; "
      "lenet5_classic: %zu, %.3g\n",
      lenet.num_params(), lenet.flops_per_sample() / 1e6, fwd_flops / 1e6, classic.num_params(),
      classic.flops_per_sample() / 1e6);
  std::vector<std::unique_ptr<StepState>> states;
  wb::bench::Timing t;
  t.min_time_s = args.num("min-time");
  t.stat = wb::bench::Stat::kMedian;

  const std::vector<int> batches{8, 32, 64};
  std::vector<Op> fast{step_op("lenet5_fast", lenet, 8, true, states, {8}),
                       step_op("lenet5_fast", lenet, 32, true, states, {32, 13}),
                       step_op("lenet5_fast", lenet, 64, true, states, {64})};
  for (int n : batches) fast.push_back(eval_op(lenet, n, states));
  // The core's FMA peak, timed as one more op: it takes turns with the kernels in every
  // repetition, so load from other processes hits the peak and the kernels alike.
  constexpr long kPeakIters = 1 << 16;
  fast.push_back(Op{.name = "fma_peak (rate = FLOP/s)",
                    .items = wb::bench::fma_chains(kPeakIters),
                    .run = [] { wb::bench::fma_chains(kPeakIters); }});
  t.reps = args.integer("reps");
  t.warmup = 30;  // as torch_lenet.py
  const std::vector<Measured> mf = wb::bench::measure(fast, t);
  const double peak = mf.back().rate(fast.back());

  std::vector<Op> ref{step_op("lenet5_reference", lenet, 32, false, states, {}),
                      step_op("lenet5_reference", lenet, 64, false, states, {})};
  t.reps = args.integer("other-reps");
  t.warmup = 0;
  const std::vector<Measured> mr = wb::bench::measure(ref, t);

  // lenet5_classic at 32 and at 128 (the R7/R8 plateau runs' model and local batch), with the
  // FMA peak again in the same repetitions, for its fraction of the peak.
  std::vector<Op> cl{step_op("lenet5_classic_fast", classic, 32, true, states, {32}),
                     step_op("lenet5_classic_fast", classic, 128, true, states, {}),
                     Op{.name = "fma_peak (rate = FLOP/s)",
                        .items = wb::bench::fma_chains(kPeakIters),
                        .run = [] { wb::bench::fma_chains(kPeakIters); }}};
  t.warmup = 30;
  const std::vector<Measured> mc = wb::bench::measure(cl, t);
  const double classic_frac_b128 =
      mc[1].rate(cl[1]) * classic.flops_per_sample() / mc[2].rate(cl[2]);

  // The PyTorch peer in the same run (same net, step and batch, one thread).
  double torch_b32 = 0;
  const std::string script = wb::bench::repo_path("../shared/bench/torch_lenet.py");
  if (args.smoke())
    std::printf("peer: skipped under --smoke\n");
  else if (script.empty() || !wb::bench::have_torch())
    std::printf("peer: no torch_lenet.py or no torch on /usr/bin/python3: no torch ratio\n");
  else
    torch_b32 = wb::bench::run_peer("/usr/bin/python3 " + script + " 32 1 300", "samples/s=");

  std::printf("\n");
  wb::bench::print_table(fast, mf, "samples/s");
  wb::bench::print_table(ref, mr, "samples/s");
  wb::bench::print_table(cl, mc, "samples/s");
  std::printf("\nFMA peak (one thread, measured): %.1f GFLOP/s\n", peak / 1e9);
  std::printf("%-26s %8.1f GFLOP/s  %.3f of the FMA peak (measured beside it: %.1f GFLOP/s)\n",
              "lenet5_classic_fast/128", mc[1].rate(cl[1]) * classic.flops_per_sample() / 1e9,
              classic_frac_b128, mc[2].rate(cl[2]) / 1e9);
  double frac_min = 1e9;
  for (size_t k = 0; k + 1 < fast.size(); ++k) {
    const bool train = k < batches.size();
    const double f = mf[k].rate(fast[k]) * (train ? lenet.flops_per_sample() : fwd_flops) / peak;
    std::printf("%-26s %8.1f GFLOP/s  %.3f of the FMA peak\n", fast[k].name.c_str(), f * peak / 1e9,
                f);
    frac_min = std::min(frac_min, f);
  }
  auto frac = [&](size_t k) {
    return mf[k].rate(fast[k]) * (k < batches.size() ? lenet.flops_per_sample() : fwd_flops) / peak;
  };
  // The same fractions per CPU-second of this process (the driver's cpu ms/call): on a
  // shared machine the wall-clock rates move with the other jobs' share of the cores, the
  // CPU-time rates only with what they do to the caches and the core's clock.
  auto cpu_rate = [&](size_t k) {
    return mf[k].cpu_seconds > 0 ? fast[k].items / mf[k].cpu_seconds : 0.0;
  };
  const double cpu_peak = cpu_rate(fast.size() - 1);
  double cpu_frac_min = 1e9;
  for (size_t k = 0; k + 1 < fast.size(); ++k)
    cpu_frac_min = std::min(
        cpu_frac_min,
        cpu_peak > 0
            ? cpu_rate(k) * (k < batches.size() ? lenet.flops_per_sample() : fwd_flops) / cpu_peak
            : 0.0);
  const double torch_ratio = torch_b32 > 0 ? mf[1].rate(fast[1]) / torch_b32 : 0;
  const long wrong = wb::bench::total_wrong(mf) + wb::bench::total_wrong(mc);
  return wb::bench::Result()
      .add("samples_per_s_b8", mf[0].rate(fast[0]), 0)
      .add("samples_per_s_b32", mf[1].rate(fast[1]), 0)
      .add("samples_per_s_b64", mf[2].rate(fast[2]), 0)
      .add("fma_peak_gflops", peak / 1e9, 1)
      .add("fraction_of_fma_peak_b8", frac(0), 3)
      .add("fraction_of_fma_peak_b32", frac(1), 3)
      .add("fraction_of_fma_peak_b64", frac(2), 3)
      .add("eval_fraction_of_fma_peak_b8", frac(3), 3)
      .add("eval_fraction_of_fma_peak_b32", frac(4), 3)
      .add("eval_fraction_of_fma_peak_b64", frac(5), 3)
      .add("fraction_of_fma_peak", frac_min, 3)
      .add("cpu_fma_peak_gflops", cpu_peak / 1e9, 1)
      .add("cpu_fraction_of_fma_peak", cpu_frac_min, 3)
      .add("torch_samples_per_s_b32", torch_b32, 0)
      .add("over_torch_b32", torch_ratio, 2)
      .add("reference_samples_per_s_b32", mr[0].rate(ref[0]), 0)
      .add("classic_samples_per_s_b128", mc[1].rate(cl[1]), 0)
      .add("classic_fraction_of_fma_peak_b128", classic_frac_b128, 3)
      .finish(wrong);
}

}  // namespace

int main(int argc, char** argv) {
  return wb::bench::bench_main(
      argc, argv,
      {"bench_lenet",
       "LeNet-5 training samples/s on one thread (fast and reference kernels)",
       {{"reps", 5, 1, "repetitions of the fast lenet5 steps (median of)"},
        {"other-reps", 3, 1, "repetitions of the reference and lenet5_classic steps"},
        {"min-time", 0.5, 0.01, "seconds per repetition at least"}}},
      run);
}
