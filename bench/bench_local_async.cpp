// bench_local_async: the two throughput claims of LAP/LPP-SGD on this machine
// (Chatterjee et al., arXiv:2203.06638 section 3 "Discussion on the Rule", section 4),
// LeNet-5 on Fashion-MNIST, local batch 128, real mode (threads, wall clock), on the
// benchmark driver:
//
//  1. LAP-SGD, one worker, U = 2 updater threads vs U = 1: training samples/s through the
//     whole algorithm (lock-free snapshot, gradient, optimizer, atomic apply, averaging
//     rounds, runner bookkeeping), best of --repeat runs, interleaved. On 2 cores the
//     target is >= 1.6x. Check: the run completes with at least two curve rows.
//  2. LPP-SGD's partial step on the LAST block (the block nearest the output, which the
//     paper's partial backprop makes cheapest) vs a full step: Model::loss_grad_from
//     (backprop stops at the block) vs Model::loss_grad, one thread, median of --reps
//     interleaved repetitions. Target <= 0.75. A model without its own loss_grad_from runs
//     the default (full pass, then zero the prefix): the ratio is then ~1 and the bench
//     says so. Check (nccl-tests style, every run): the partial gradient must equal the
//     full gradient on the block's tensors and be zero before it (#wrong must be 0).
//
// Last line, machine-readable:
//   RESULT lap_u2_over_u1=<x> lpp_partial_over_full=<x> wrong=<n>
// Options: --steps N (LAP steps per measurement, default 200), --reps N (timing
// repetitions of the partial/full comparison, default 40), --repeat N (LAP measurements,
// best of, default 3), --smoke.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/async_common.h"
#include "app/exec/runner.h"
#include "app/exec/training_loop.h"
#include "app/plan/sweep_plan.h"
#include "app/experiment/spec.h"
#include "bench/driver.h"
#include "models/lenet.h"

using namespace wb;
using wb::bench::Measured;
using wb::bench::Op;

namespace {

// LAP (real mode, W = 1) with U updaters, timed between the first and last curve rows so
// that data loading, setup and the final evaluation are excluded: seconds per sample.
Op lap_op(app::TaskCache& cache, int U, int steps) {
  const std::string spec = R"({"name": "bench", "base": {"model": {"name": "lenet5",
      "test_limit": 256}, "batch_size": 128, "lr": 0.01, "workers": 1, "steps": )" +
                           std::to_string(steps) +
                           R"(, "optimizer": {"name": "sgd", "momentum": 0.9},
      "algorithm": {"name": "lap_sgd", "mode": "real", "H": 16, "updaters": )" +
                           std::to_string(U) + "}}}";
  auto e = std::make_shared<app::Experiment>(app::parse_experiment(spec, "bench.json"));
  auto ok = std::make_shared<bool>(false);
  Op op{.name = "LAP U=" + std::to_string(U), .items = 1};
  op.self_timed = [&cache, e, ok] {
    auto r =
        app::execute_run(e->runs[0], cache.get(e->runs[0].cfg.model.value()), MPI_COMM_SELF, nullptr);
    const auto& c = r.curves;
    *ok = r.status == "completed" && c.size() >= 2;
    if (!*ok) {
      std::fprintf(stderr, "bench_local_async: LAP run %s\n", r.status.c_str());
      return 1e30;
    }
    return (c.wall_s.back() - c.wall_s.front()) / (c.samples.back() - c.samples.front());
  };
  op.check = [ok] { return *ok ? 0L : 1L; };
  return op;
}

// The machine's own ceiling for the same work: `threads` independent loss_grad loops (own
// batch, own workspace, nothing shared), thread setup included as before.
Op plain_op(const models::ConvNetModel& pm, int threads, int iters) {
  const int n = 128;
  Op op{.name = std::to_string(threads) + " plain gradient thread(s)",
        .items = static_cast<double>(threads) * iters * n};
  op.run = [&pm, threads, iters] {
    std::vector<std::thread> th;
    for (int k = 0; k < threads; ++k)
      th.emplace_back([&pm, k, iters] {
        const models::Batch b =
            models::random_image_batch(n, 784, 10, static_cast<uint64_t>(k) + 9);
        std::vector<float> w(pm.num_params()), g(pm.num_params());
        pm.init_params(w, 1);
        auto ws = pm.make_workspace(n);
        for (int i = 0; i < iters; ++i) pm.loss_grad(w, b, g, *ws, static_cast<uint64_t>(i));
      });
    for (auto& t : th) t.join();
  };
  return op;
}

double lap_part(const bench::Args& args, long& wrong) {
  app::TaskCache cache;
  const int steps = args.integer("steps");
  std::vector<Op> ops{lap_op(cache, 1, steps), lap_op(cache, 2, steps)};
  bench::Timing t;
  t.reps = args.integer("repeat");
  std::printf("LAP-SGD real mode, lenet5, batch 128, 1 worker, %d steps (best of %d)\n", steps,
              t.reps);
  const std::vector<Measured> m = bench::measure(ops, t);
  std::printf("%10s %14s\n", "updaters", "samples/s");
  for (int U : {1, 2}) std::printf("%10d %14.1f\n", U, m[U - 1].rate(ops[U - 1]));
  const double lap_ratio = m[1].rate(ops[1]) / m[0].rate(ops[0]);

  const models::ConvNetModel pm(models::lenet5_spec());
  const int iters = args.integer("ceiling-iters");
  std::vector<Op> plain{plain_op(pm, 1, iters), plain_op(pm, 2, iters)};
  t.reps = 1;
  const std::vector<Measured> mp = bench::measure(plain, t);
  std::printf(
      "U=2 / U=1: %.2fx (target >= 1.6 on 2 cores); machine ceiling, 2 independent "
      "gradient threads / 1: %.2fx\n\n",
      lap_ratio, mp[1].rate(plain[1]) / mp[0].rate(plain[0]));
  wrong += bench::total_wrong(m);
  return lap_ratio;
}

double lpp_part(const bench::Args& args, long& wrong) {
  models::ConvNetModel m(models::lenet5_spec());
  const int n = 128;
  models::Batch b = models::random_image_batch(n, 784, 10, 5);
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
  bench::Timing timing;
  timing.reps = args.integer("reps");
  timing.stat = bench::Stat::kMedian;
  double ratio_last = 1;
  for (size_t k = 0; k < blocks.size(); ++k) {
    const size_t first = blocks[k].first_tensor;
    uint64_t seed = 0;  // dropout noise seed of the next pass; the checked pass uses 42
    std::vector<Op> ops{{.name = "full",
                         .init = [&] { seed = 42; },
                         .run = [&] { m.loss_grad(w, b, g, *ws, seed++); }},
                        {.name = "partial",
                         .init = [&] { seed = 42; },
                         .run = [&] { m.loss_grad_from(w, b, gp, *ws, seed++, first); },
                         .check =
                             [&] {
                               std::vector<float> full(g.size());
                               m.loss_grad(w, b, full, *ws, 42);
                               long bad = 0;
                               for (size_t i = 0; i < full.size(); ++i) {
                                 const float want = i >= t[first].offset ? full[i] : 0.f;
                                 if (!(std::fabs(gp[i] - want) <= 1e-6f + 1e-5f * std::fabs(want)))
                                   ++bad;
                               }
                               return bad;
                             }}};
    const std::vector<Measured> r = bench::measure(ops, timing);
    const double mf = r[0].seconds, mp = r[1].seconds;
    if (k == 0)
      std::printf("%-28s %12.3f %12.3g %8s %7s\n", "full", mf * 1e3, m.flops_per_sample() * n,
                  "1.00", "-");
    char label[64];
    std::snprintf(label, sizeof label, "partial from block %zu%s", k + 1,
                  k + 1 == blocks.size() ? " (last)" : "");
    std::printf("%-28s %12.3f %12.3g %8.2f %7ld\n", label, mp * 1e3,
                m.flops_per_sample_from(first) * n, mp / mf, r[1].wrong);
    if (r[1].wrong)
      std::fprintf(stderr, "bench_local_async: partial gradient differs from the full one\n");
    wrong += bench::total_wrong(r);
    if (k + 1 == blocks.size()) ratio_last = mp / mf;
  }
  if (ratio_last > 0.9)
    std::printf(
        "note: the partial pass is not cheaper: this model runs Model::loss_grad_from's "
        "default (full backprop, then zero the prefix)\n");
  return ratio_last;
}

int run(const bench::Args& args) {
  long wrong = 0;
  const double lap_ratio = lap_part(args, wrong);
  const double lpp_ratio = lpp_part(args, wrong);
  std::printf("\n");
  return bench::Result()
      .add("lap_u2_over_u1", lap_ratio, 3)
      .add("lpp_partial_over_full", lpp_ratio, 3)
      .finish(wrong);
}

}  // namespace

int main(int argc, char** argv) {
  return bench::bench_main(
      argc, argv,
      {"bench_local_async",
       "LAP U=2 vs U=1 samples/s; LPP partial step vs full step (LeNet-5, batch 128)",
       {{"steps", 200, 32, "LAP steps per measurement"},
        {"reps", 40, 3, "timing repetitions of the partial/full comparison (median of)"},
        {"repeat", 3, 1, "LAP measurements (best of)"},
        {"ceiling-iters", 60, 4, "gradient passes per thread of the machine-ceiling measurement"}}},
      run);
}
