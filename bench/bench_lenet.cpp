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
// Last line, machine-readable:
//   RESULT samples_per_s_b32=<x> samples_per_s_b64=<x> reference_samples_per_s_b32=<x> wrong=<n>
// (the medians over repetitions). Options: --reps N (fast lenet5, default 5), --other-reps N
// (reference and classic, default 3), --min-time S (default 0.5), --smoke.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/driver.h"
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

int run(const wb::bench::Args& args) {
  static const ConvNetModel lenet(wb::models::lenet5_spec());
  static const ConvNetModel classic(wb::models::lenet5_classic_spec());
  std::printf("lenet5: %zu parameters, %.3g MFLOP/sample (fwd+bwd); lenet5_classic: %zu, %.3g\n",
              lenet.num_params(), lenet.flops_per_sample() / 1e6, classic.num_params(),
              classic.flops_per_sample() / 1e6);
  std::vector<std::unique_ptr<StepState>> states;
  wb::bench::Timing t;
  t.min_time_s = args.num("min-time");
  t.stat = wb::bench::Stat::kMedian;

  std::vector<Op> fast{step_op("lenet5_fast", lenet, 32, true, states, {32, 13}),
                       step_op("lenet5_fast", lenet, 64, true, states, {64})};
  t.reps = args.integer("reps");
  t.warmup = 30;  // as torch_lenet.py
  const std::vector<Measured> mf = wb::bench::measure(fast, t);

  std::vector<Op> ref{step_op("lenet5_reference", lenet, 32, false, states, {}),
                      step_op("lenet5_reference", lenet, 64, false, states, {})};
  t.reps = args.integer("other-reps");
  t.warmup = 0;
  const std::vector<Measured> mr = wb::bench::measure(ref, t);

  std::vector<Op> cl{step_op("lenet5_classic_fast", classic, 32, true, states, {32})};
  t.warmup = 30;
  const std::vector<Measured> mc = wb::bench::measure(cl, t);

  std::printf("\n");
  wb::bench::print_table(fast, mf, "samples/s");
  wb::bench::print_table(ref, mr, "samples/s");
  wb::bench::print_table(cl, mc, "samples/s");
  const long wrong = wb::bench::total_wrong(mf) + wb::bench::total_wrong(mc);
  return wb::bench::Result()
      .add("samples_per_s_b32", mf[0].rate(fast[0]), 0)
      .add("samples_per_s_b64", mf[1].rate(fast[1]), 0)
      .add("reference_samples_per_s_b32", mr[0].rate(ref[0]), 0)
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
