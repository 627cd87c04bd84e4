// bench_diagnostics: what the diagnostics cost, on the benchmark driver.
//  1. diag_overhead_ratio: LeNet-5, 16 logical workers x 32, Adasum, one rank: step time
//     with orthogonality + diversity logged EVERY step divided by the step time without
//     metrics, minus 1 (0.05 = 5% overhead). Both measured in this run, interleaved, best
//     of --reps whole runs of --steps steps (the machine is shared and noisy).
//     Check: the metrics only observe, so the run with them must train exactly as the run
//     without (#wrong = training-loss values that differ).
//  2. seq_emulation_grad_evals_per_worker: the emulation does, per worker and logged
//     step, one gradient at w0, one exact HVP and one gradient at the sequential model,
//     all in double. Expressed in gradient evaluations: 2 + t(HVP) / t(gradient), with
//     both timed here in double on a LeNet-5 batch of 32 (best of 5, interleaved).
//     Check: the HVP against central differences of the gradient along v
//     (#wrong = values off by more than 1e-3 max|Hv| + 1e-2 |Hv|).
// Last line: RESULT diag_overhead_ratio=<x> seq_emulation_grad_evals_per_worker=<x> wrong=<n>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "app/exec/runner.h"
#include "app/exec/training_loop.h"
#include "app/plan/sweep_plan.h"
#include "app/experiment/spec.h"
#include "bench/driver.h"
#include "core/error.h"

using namespace wb;
using wb::bench::Measured;
using wb::bench::Op;

namespace {

// A whole training run (setup and data loading excluded: the task comes from the cache)
// with the given metrics; its curves are kept for the check.
struct TrainingRun {
  app::Experiment e;
  const models::Task* task = nullptr;
  app::RunResult result;
};

Op training_op(const std::string& name, const std::string& metrics, int steps, app::TaskCache& cache,
               TrainingRun& r) {
  Op op{.name = name, .items = static_cast<double>(steps)};
  op.init = [&r, &cache, metrics, steps] {
    r.e = app::parse_experiment(
        R"({"name": "b", "base": {"model": "lenet5", "workers": 16, "batch_size": 32, "lr": 0.01,
          "steps": )" +
            std::to_string(steps) + R"(, "algorithm": "adasum", "log_every": 1000, "metrics": )" +
            metrics + "}}",
        "bench");
    r.task = &cache.get(r.e.runs[0].cfg.model.value());
  };
  op.run = [&r] { r.result = app::execute_run(r.e.runs[0], *r.task, MPI_COMM_SELF, nullptr); };
  return op;
}

// Training-loss values of b that differ from a's (and a missing or failed run).
long curves_differ(const app::RunResult& a, const app::RunResult& b) {
  const auto &x = a.curves.train_loss, &y = b.curves.train_loss;
  long wrong = (a.status != "completed") + (b.status != "completed") +
               static_cast<long>(std::max(x.size(), y.size()) - std::min(x.size(), y.size()));
  for (size_t i = 0; i < std::min(x.size(), y.size()); ++i)
    if (!(x[i] == y[i])) ++wrong;
  return wrong;
}

// Hv against (g(w + eps v) - g(w - eps v)) / 2 eps, all in double. eps is small because
// the loss is only piecewise smooth (ReLU, max-pool): with this w, v and batch, eps = 1e-4
// already crosses kinks (errors ~100x max|Hv| on ~50 values) while 1e-5..1e-7 agree to
// ~1e-9 relative.
long hvp_wrong(const models::Model& m, const std::vector<double>& w, const std::vector<double>& v,
               const models::Batch& b, const std::vector<double>& hv) {
  const double eps = 1e-6;
  const size_t n = w.size();
  std::vector<double> wp(n), wm(n), gp(n), gm(n);
  for (size_t i = 0; i < n; ++i) {
    wp[i] = w[i] + eps * v[i];
    wm[i] = w[i] - eps * v[i];
  }
  m.loss_grad_f64(wp, b, gp, 42);
  m.loss_grad_f64(wm, b, gm, 42);
  double mx = 0;
  for (double x : hv) mx = std::max(mx, std::fabs(x));
  long wrong = 0;
  for (size_t i = 0; i < n; ++i) {
    const double fd = (gp[i] - gm[i]) / (2 * eps);
    if (!(std::fabs(fd - hv[i]) <= 1e-3 * mx + 1e-2 * std::fabs(hv[i]))) ++wrong;
  }
  return wrong;
}

int run(const bench::Args& args) {
  app::TaskCache cache;
  const int steps = args.integer("steps");
  TrainingRun off, on;
  std::vector<Op> runs{training_op("no metrics", "{}", steps, cache, off),
                       training_op("orthogonality+diversity every step",
                                   R"({"orthogonality": {"every": 1}, "diversity": {"every": 1}})",
                                   steps, cache, on)};
  runs[1].check = [&] { return curves_differ(off.result, on.result); };
  bench::Timing t;
  t.reps = args.integer("reps");
  const std::vector<Measured> mr = bench::measure(runs, t);
  const double overhead = mr[1].seconds / mr[0].seconds - 1.0;
  std::printf("LeNet-5, 16 workers x 32, %d steps, best of %d:\n", steps, t.reps);
  std::printf("  no metrics                         %8.2f ms/step\n", mr[0].seconds / steps * 1e3);
  std::printf("  orthogonality+diversity every step %8.2f ms/step  overhead %.1f%%  #wrong %ld\n",
              mr[1].seconds / steps * 1e3, overhead * 100, mr[1].wrong);

  const auto& task = cache.get(models::model_registry().resolve(json("lenet5"), core::Where{}));
  const auto& m = *task.model;
  const size_t n = m.num_params();
  std::vector<float> wf(n);
  m.init_params(wf, 1);
  std::vector<double> w(wf.begin(), wf.end()), v(n), g(n), hv(n);
  for (size_t i = 0; i < n; ++i) v[i] = 1e-3 * static_cast<double>((i * 7919) % 13) - 6e-3;
  models::Batch b;
  task.train->reserve(b, 32);
  std::vector<uint32_t> idx(32);
  std::iota(idx.begin(), idx.end(), 0u);
  task.train->gather(idx, b);
  std::vector<Op> passes{
      {.name = "gradient (double, batch 32)", .run = [&] { m.loss_grad_f64(w, b, g, 42); }},
      {.name = "HVP (double, batch 32)",
       .run = [&] { m.hvp_f64(w, v, b, hv, 42); },
       .check = [&] { return hvp_wrong(m, w, v, b, hv); }}};
  t.reps = args.integer("hvp-reps");
  const std::vector<Measured> mp = bench::measure(passes, t);
  const double evals = 2.0 + mp[1].seconds / mp[0].seconds;
  std::printf("seq_emulation per worker per logged step: 2 gradients + 1 HVP (double)\n");
  std::printf(
      "  gradient %.2f ms, HVP %.2f ms (batch 32) -> %.2f gradient evaluations  #wrong %ld\n",
      mp[0].seconds * 1e3, mp[1].seconds * 1e3, evals, mp[1].wrong);
  const long wrong = bench::total_wrong(mr) + bench::total_wrong(mp);
  return bench::Result()
      .add("diag_overhead_ratio", overhead, 4)
      .add("seq_emulation_grad_evals_per_worker", evals, 2)
      .finish(wrong);
}

}  // namespace

int main(int argc, char** argv) {
  return bench::bench_main(argc, argv,
                           {"bench_diagnostics",
                            "what the diagnostics cost: metrics overhead, seq-emulation passes",
                            {{"steps", 40, 3, "training steps per run"},
                             {"reps", 3, 1, "runs with and without metrics (best of)"},
                             {"hvp-reps", 5, 1, "gradient and HVP timings (best of)"}}},
                           run);
}
