// bench_gpt: training throughput of the `gpt` model on one thread at nanoGPT's
// shakespeare-char CPU configuration (config/train_shakespeare_char.py's CPU line: 4 layers,
// 4 heads, d_model 128, block 64, batch 12; vocabulary 65), the number to compare with
// PyTorch (bench/torch_gpt.py: the same architecture, forward + backward + AdamW step, one
// thread) measured in the same run.
//
// One step = Model::loss_grad (the fast path, models/transformer_fast.h) + an AdamW update
// written inline (torch.optim.AdamW: lr 1e-3, betas 0.9/0.999, eps 1e-8, weight decay 0.01).
// Correctness on every run (nccl-tests style): before timing, the fast gradient is checked
// against the float reference loops on 2 windows; #wrong counts gradient values (and the
// loss) off by more than 1e-4 + 1e-3 |ref|.
// Rates are wall-clock medians over repetitions; fraction_of_fma_peak divides tokens/s x
// FLOP/token (GptModel::flops_per_sample / block: the causal attention counted, not the
// masked half the kernels multiply) by the core's FMA peak timed in the same repetitions
// (bench/peak.h).
// W = 64 logical workers on one rank (the workbench's way of simulating them: 64 parameter
// and AdamW buffers, one shared workspace, the workers' steps taking turns) against W = 1:
// w64_over_w1 = time per token at W = 64 / time per token at W = 1 (goal <= 1.2).
// Last line, machine-readable:
//   RESULT tokens_per_s=<x> fma_peak_gflops=<x> fraction_of_fma_peak=<x>
//          cpu_tokens_per_s=<x> cpu_fraction_of_fma_peak=<x> (per CPU-second, as bench_lenet)
//          torch_tokens_per_s=<x> over_torch=<x> workers=<W> w64_tokens_per_s=<x>
//          w64_over_w1=<x> cpu_w64_over_w1=<x> reference_tokens_per_s=<x> wrong=<n>
// (torch fields absent when /usr/bin/python3 has no torch or under --smoke).
// Options: --reps N (default 5), --min-time S (default 0.5), --workers W (default 64), --smoke.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/driver.h"
#include "bench/peak.h"
#include "core/rng.h"
#include "models/gpt.h"

namespace {

using wb::bench::Measured;
using wb::bench::Op;
using wb::models::Batch;
using wb::models::GptConfig;
using wb::models::GptModel;

constexpr int kBatch = 12;

GptConfig shakespeare_char() {
  GptConfig c;
  c.layers = 4, c.heads = 4, c.d_model = 128, c.block = 64, c.vocab = 65;
  return c;
}

Batch random_windows(const GptConfig& c, int n, uint64_t seed) {
  Batch b;
  b.n = n;
  wb::core::Rng rng(seed);
  for (int i = 0; i < n * (c.block + 1); ++i)
    b.label.push_back(static_cast<int32_t>(rng.below(static_cast<uint64_t>(c.vocab))));
  return b;
}

// One worker's parameters and AdamW state.
struct Worker {
  std::vector<float> w, g, m, v;
  int t = 0;
  explicit Worker(const GptModel& model) {
    w.resize(model.num_params());
    g.resize(w.size());
    reset(model);
  }
  void reset(const GptModel& model) {
    model.init_params(w, 0);
    m.assign(w.size(), 0.0f);
    v.assign(w.size(), 0.0f);
    t = 0;
  }
  void adamw(float lr = 1e-3f, float b1 = 0.9f, float b2 = 0.999f, float eps = 1e-8f,
             float wd = 0.01f) {
    ++t;
    const float c1 = 1.0f / (1.0f - std::pow(b1, static_cast<float>(t)));
    const float c2 = 1.0f / (1.0f - std::pow(b2, static_cast<float>(t)));
    for (size_t i = 0; i < w.size(); ++i) {
      w[i] -= lr * wd * w[i];
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
      w[i] -= lr * (m[i] * c1) / (std::sqrt(v[i] * c2) + eps);
    }
  }
};

long check(const GptModel& m) {
  Worker wk(m);
  const Batch b = random_windows(m.config(), 2, 7);
  auto ws = m.make_workspace(2);
  std::vector<float> gr(wk.w.size());
  const double lf = m.loss_grad(wk.w, b, wk.g, *ws, 0);
  const double lr = m.reference_loss_grad(wk.w, b, gr);
  double worst = std::fabs(lf - lr) / (1e-5 + 1e-5 * std::fabs(lr));
  long wrong = worst <= 1.0 ? 0 : 1;
  for (size_t i = 0; i < gr.size(); ++i) {
    const double e = std::fabs(wk.g[i] - gr[i]) / (1e-4 + 1e-3 * std::fabs(gr[i]));
    worst = std::max(worst, e);
    if (!(e <= 1.0)) ++wrong;
  }
  std::printf("check gpt 2 windows: fast vs reference worst error ratio %.3g (<= 1 passes)\n", worst);
  return wrong;
}

struct State {
  std::vector<std::unique_ptr<Worker>> workers;
  std::vector<Batch> batches;
  std::unique_ptr<wb::models::Workspace> ws;
  double loss = 0;
};

// W workers, each a training step on its own batch per call, sharing one workspace.
Op steps_op(const std::string& name, const GptModel& m, int W, bool fast,
            std::vector<std::unique_ptr<State>>& states) {
  states.push_back(std::make_unique<State>());
  State& s = *states.back();
  for (int k = 0; k < W; ++k) {
    s.workers.push_back(std::make_unique<Worker>(m));
    s.batches.push_back(random_windows(m.config(), kBatch, 100 + static_cast<uint64_t>(k)));
  }
  s.ws = m.make_workspace(kBatch);
  Op op{.name = name, .items = static_cast<double>(W) * kBatch * m.config().block};
  op.run = [&s, &m, fast] {
    for (size_t k = 0; k < s.workers.size(); ++k) {
      Worker& wk = *s.workers[k];
      s.loss += fast ? m.loss_grad(wk.w, s.batches[k], wk.g, *s.ws, 0)
                     : m.reference_loss_grad(wk.w, s.batches[k], wk.g);
      wk.adamw();
    }
  };
  op.reset = [&s, &m] {
    for (auto& wk : s.workers) wk->reset(m);
  };
  return op;
}

int run(const wb::bench::Args& args) {
  static const GptModel gpt(shakespeare_char());
  const GptConfig& c = gpt.config();
  const double flops_per_token = gpt.flops_per_sample() / c.block;
  std::printf("gpt (layers 4, heads 4, d_model 128, block 64, vocab 65, batch %d): %zu parameters, "
              "%.3g MFLOP/token (fwd+bwd), fast path %s\n",
              kBatch, gpt.num_params(), flops_per_token / 1e6, gpt.has_fast_path() ? "yes" : "NO");
  const int W = args.integer("workers");
  std::vector<std::unique_ptr<State>> states;
  wb::bench::Timing t;
  t.min_time_s = args.num("min-time");
  t.stat = wb::bench::Stat::kMedian;
  t.reps = args.integer("reps");
  t.warmup = 3;
  constexpr long kPeakIters = 1 << 16;
  std::vector<Op> ops{steps_op("gpt_fast/W1", gpt, 1, true, states),
                      steps_op("gpt_fast/W" + std::to_string(W), gpt, W, true, states),
                      Op{.name = "fma_peak (rate = FLOP/s)",
                         .items = wb::bench::fma_chains(kPeakIters),
                         .run = [] { wb::bench::fma_chains(kPeakIters); }}};
  ops[0].check = [] { return check(gpt); };
  const std::vector<Measured> mf = wb::bench::measure(ops, t);
  const double peak = mf[2].rate(ops[2]);

  std::vector<Op> ref{steps_op("gpt_reference/W1", gpt, 1, false, states)};
  wb::bench::Timing tr = t;
  tr.reps = 1, tr.warmup = 0, tr.min_time_s = 0;
  const std::vector<Measured> mr = wb::bench::measure(ref, tr);

  double torch_tps = 0;
  const std::string script = wb::bench::repo_path("bench/torch_gpt.py");
  const bool peer = !args.smoke() && !script.empty() && wb::bench::have_torch();
  if (args.smoke())
    std::printf("peer: skipped under --smoke\n");
  else if (!peer)
    std::printf("peer: no bench/torch_gpt.py or no torch on /usr/bin/python3: no torch ratio\n");
  else
    torch_tps = wb::bench::run_peer("/usr/bin/python3 " + script + " 4 4 128 64 65 " +
                                        std::to_string(kBatch) + " 30 1",
                                    "tokens/s=");

  std::printf("\n");
  wb::bench::print_table(ops, mf, "tokens/s");
  wb::bench::print_table(ref, mr, "tokens/s");
  const double tps = mf[0].rate(ops[0]), tpsW = mf[1].rate(ops[1]);
  const double frac = tps * flops_per_token / peak;
  std::printf("\nFMA peak (one thread, measured): %.1f GFLOP/s; gpt_fast/W1 %.1f GFLOP/s = %.3f "
              "of it\n",
              peak / 1e9, tps * flops_per_token / 1e9, frac);
  std::printf("W=%d vs W=1 time per token: %.3f\n", W, tps / tpsW);
  // The same per CPU-second of this process (the driver's cpu ms/call): on a shared machine
  // the wall-clock rates move with the other jobs' share of the core, these only with what
  // they do to the caches and the clock.
  auto cpu_rate = [&](size_t k) { return mf[k].cpu_seconds > 0 ? ops[k].items / mf[k].cpu_seconds : 0.0; };
  const double cpu_peak = cpu_rate(2);
  const double cpu_frac = cpu_peak > 0 ? cpu_rate(0) * flops_per_token / cpu_peak : 0.0;
  const double cpu_w = cpu_rate(1) > 0 ? cpu_rate(0) / cpu_rate(1) : 0.0;
  wb::bench::Result r;
  r.add("tokens_per_s", tps, 0)
      .add("fma_peak_gflops", peak / 1e9, 1)
      .add("fraction_of_fma_peak", frac, 3)
      .add("cpu_tokens_per_s", cpu_rate(0), 0)
      .add("cpu_fraction_of_fma_peak", cpu_frac, 3);
  if (peer && torch_tps > 0) r.add("torch_tokens_per_s", torch_tps, 0).add("over_torch", tps / torch_tps, 2);
  r.add("workers", static_cast<long>(W))
      .add("w64_tokens_per_s", tpsW, 0)
      .add("w64_over_w1", tps / tpsW, 3)
      .add("cpu_w64_over_w1", cpu_w, 3)
      .add("reference_tokens_per_s", mr[0].rate(ref[0]), 0);
  return r.finish(wb::bench::total_wrong(mf));
}

}  // namespace

int main(int argc, char** argv) {
  return wb::bench::bench_main(
      argc, argv,
      {"bench_gpt",
       "gpt (nanoGPT shakespeare-char CPU shape) training tokens/s on one thread, vs PyTorch",
       {{"reps", 5, 1, "repetitions (median of)"},
        {"min-time", 0.5, 0.01, "seconds per repetition at least"},
        {"workers", 64, 2, "logical workers of the W-vs-1 comparison"}}},
      run);
}
