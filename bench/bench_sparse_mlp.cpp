// bench_sparse_mlp: training throughput of the sparse MLP (models/sparse_mlp.h, the SLIDE /
// HeteroGPU extreme-classification network of "Adaptive Elastic Training for Sparse Deep
// Learning on Heterogeneous Multi-GPU Servers", Ma et al. 2021, section 5.1) on one thread, beside PyTorch with torch.sparse.mm in the same run
// (bench/torch_sparse_mlp.py: the same layers, loss and plain SGD step, one thread).
//
//   build/bench_sparse_mlp [--batch N] [--large-labels L] [--reps N] [--min-time S] [--smoke]
//
// Two shapes, both F features x 128 hidden x L labels with the paper's sparsity (mean nnz
// and labels per row of the data set, synthetic rows from models/xml_data.h):
//   bibtex      F = 1,836   L = 159      69 nnz, 2.4 labels per row
//   amazon670k  F = 135,909 L = --large-labels, 76 nnz, 5.45 labels per row. The default
//               67,009 is a tenth of Amazon-670k's labels: with all 670,091 (about 1.2 GB of
//               parameters and gradient, fine in memory) one PyTorch step takes over a minute
//               on a busy 2-core machine, so the peer alone would run for ~10 minutes.
// One step = SparseMlp::loss_grad + w -= lr*g over all parameters (what the runner's SGD
// does). Rates are wall-clock, the median over repetitions of >= --min-time seconds.
// Correctness on every run: the float gradient of one batch against the f64 oracle
// (loss_grad_f64, the same loops in double); #wrong counts values off by more than
// 1e-4 * max|ref| + 1e-3 |ref| (and the loss by 1e-4 relative).
//
// Last line, machine-readable:
//   RESULT samples_per_s_bibtex=<x> torch_samples_per_s_bibtex=<x> over_torch_bibtex=<x>
//          samples_per_s_amazon670k=<x> torch_samples_per_s_amazon670k=<x>
//          over_torch_amazon670k=<x> large_labels=<L> wrong=<n>
// (torch 0: the peer was not run: --smoke, or no torch on /usr/bin/python3).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "bench/driver.h"
#include "bench/peak.h"
#include "models/sparse_mlp.h"
#include "models/xml_data.h"

namespace {

using wb::bench::Measured;
using wb::bench::Op;
using wb::models::Batch;
using wb::models::SparseMlp;

struct Shape {
  std::string name;
  int64_t features, hidden, labels;
  double nnz, labels_per_row;
};

// One batch of synthetic rows with the shape's statistics.
Batch make_batch(const Shape& s, int n, uint64_t seed) {
  wb::models::XmlSyntheticParams p;
  p.train_size = n;
  p.test_size = 0;
  p.features = s.features;
  p.labels = s.labels;
  p.nnz = s.nnz;
  p.labels_per_row = s.labels_per_row;
  p.data_seed = static_cast<int64_t>(seed);
  const wb::models::XmlSplits d = wb::models::make_synthetic_xml(p);
  wb::models::XmlDataset ds(d.train);
  Batch b;
  ds.reserve(b, n);
  std::vector<uint32_t> idx(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), 0u);
  ds.gather(idx, b);
  return b;
}

// Float gradient vs the f64 oracle on one batch of n rows.
long check(const SparseMlp& m, const Shape& s, int n) {
  const Batch b = make_batch(s, n, 5);
  std::vector<float> w(m.num_params()), g(w.size());
  m.init_params(w, 3);
  auto ws = m.make_workspace(n);
  const double lf = m.loss_grad(w, b, g, *ws, 0);
  std::vector<double> wd(w.begin(), w.end()), gd(w.size());
  const double ld = m.loss_grad_f64(wd, b, gd, 0);
  double mx = 0;
  for (double v : gd) mx = std::max(mx, std::fabs(v));
  // The loss is a float logsumexp over all L labels: its rounding grows like sqrt(L) x
  // float epsilon (~5e-5 relative at L = 670k), hence 1e-4 relative.
  const double loss_err = std::fabs(lf - ld) / (1e-4 * std::fabs(ld) + 1e-6);
  long wrong = loss_err <= 1.0 ? 0 : 1;
  double worst = 0;
  for (size_t i = 0; i < gd.size(); ++i) {
    const double e = std::fabs(g[i] - gd[i]) / (1e-4 * mx + 1e-3 * std::fabs(gd[i]) + 1e-30);
    worst = std::max(worst, e);
    if (!(e <= 1.0)) ++wrong;
  }
  std::printf("check %s batch %d: float vs f64 oracle worst error ratio %.3g, loss %.3g (<= 1 passes)\n",
              s.name.c_str(), n, worst, loss_err);
  return wrong;
}

struct StepState {
  const SparseMlp& m;
  Batch b;
  std::vector<float> w, g;
  std::unique_ptr<wb::models::Workspace> ws;
  double loss = 0;
  StepState(const SparseMlp& model, const Shape& s, int n)
      : m(model), b(make_batch(s, n, 1)), w(model.num_params()), g(w.size()),
        ws(model.make_workspace(n)) {
    m.init_params(w, 0);
  }
  void step(float lr = 0.1f) {
    loss = m.loss_grad(w, b, g, *ws, 0);
    for (size_t i = 0; i < w.size(); ++i) w[i] -= lr * g[i];
  }
};

struct Outcome {
  double ours = 0, torch = 0;
  long wrong = 0;
};

Outcome run_shape(const wb::bench::Args& args, const Shape& s) {
  const int n = args.integer("batch");
  const SparseMlp m(s.features, {s.hidden}, s.labels, s.nnz);
  std::printf("\n%s: F=%lld h=%lld L=%lld, %zu parameters, batch %d, %.3g MFLOP/sample\n",
              s.name.c_str(), static_cast<long long>(s.features), static_cast<long long>(s.hidden),
              static_cast<long long>(s.labels), m.num_params(), n, m.flops_per_sample() / 1e6);
  Outcome out;
  StepState st(m, s, n);
  std::vector<Op> ops{{.name = s.name + "/" + std::to_string(n),
                       .items = static_cast<double>(n),
                       .run = [&st] { st.step(); },
                       .check = [&] { return check(m, s, std::min(n, 16)); }}};
  wb::bench::Timing t;
  t.reps = args.integer("reps");
  t.min_time_s = args.num("min-time");
  t.warmup = 2;
  t.stat = wb::bench::Stat::kMedian;
  const std::vector<Measured> r = wb::bench::measure(ops, t);
  wb::bench::print_table(ops, r, "samples/s");
  out.ours = r[0].rate(ops[0]);
  out.wrong = wb::bench::total_wrong(r);
  const std::string script = wb::bench::repo_path("bench/torch_sparse_mlp.py");
  if (args.smoke()) {
    std::printf("peer: skipped under --smoke\n");
  } else if (script.empty() || !wb::bench::have_torch()) {
    std::printf("peer: no torch_sparse_mlp.py or no torch on /usr/bin/python3: no torch ratio\n");
  } else {
    // Enough steps for about the same wall time as ours (at least 5).
    const double our_step_s = n / std::max(out.ours, 1e-9);
    const int steps = static_cast<int>(std::clamp(3.0 / our_step_s, 5.0, 300.0));
    char cmd[512];
    std::snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s %lld %lld %lld %d %g %g %d 1",
                  script.c_str(), static_cast<long long>(s.features),
                  static_cast<long long>(s.hidden), static_cast<long long>(s.labels), n, s.nnz,
                  s.labels_per_row, steps);
    out.torch = wb::bench::run_peer(cmd, "samples/s=");
  }
  if (out.torch > 0)
    std::printf("%s: ours %.1f samples/s, torch %.1f samples/s, ratio %.2f\n", s.name.c_str(),
                out.ours, out.torch, out.ours / out.torch);
  return out;
}

int run(const wb::bench::Args& args) {
  const int64_t large_labels = static_cast<int64_t>(args.num("large-labels"));
  const Shape bibtex{"bibtex", 1836, 128, 159, 68.6, 2.4};
  const Shape amazon{"amazon670k", 135909, 128, large_labels, 75.7, 5.45};
  const Outcome a = run_shape(args, bibtex);
  const Outcome b = run_shape(args, amazon);
  auto ratio = [](const Outcome& o) { return o.torch > 0 ? o.ours / o.torch : 0.0; };
  return wb::bench::Result()
      .add("samples_per_s_bibtex", a.ours, 1)
      .add("torch_samples_per_s_bibtex", a.torch, 1)
      .add("over_torch_bibtex", ratio(a), 2)
      .add("samples_per_s_amazon670k", b.ours, 1)
      .add("torch_samples_per_s_amazon670k", b.torch, 1)
      .add("over_torch_amazon670k", ratio(b), 2)
      .add("large_labels", static_cast<long>(large_labels))
      .finish(a.wrong + b.wrong);
}

}  // namespace

int main(int argc, char** argv) {
  return wb::bench::bench_main(
      argc, argv,
      {"bench_sparse_mlp",
       "sparse MLP (Bibtex and Amazon-670k shapes) training samples/s on one thread vs PyTorch",
       {{"batch", 128, 16, "rows per step"},
        {"large-labels", 67009, 2000, "labels of the Amazon-670k-shaped net (670091: all of Amazon-670k's)"},
        {"reps", 3, 1, "repetitions (median of)"},
        {"min-time", 1.0, 0.01, "seconds per repetition at least"}}},
      run);
}
