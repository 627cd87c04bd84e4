// bench_diagnostics: what the diagnostics cost (issue #5).
//  1. diag_overhead_ratio: LeNet-5, 16 logical workers x 32, sync_sgd, one rank: step
//     time with orthogonality + diversity logged EVERY step divided by the step time
//     without metrics, minus 1 (0.05 = 5% overhead). Both measured in this run,
//     interleaved, best of several repetitions (the machine is shared and noisy).
//  2. seq_emulation_grad_evals_per_worker: the emulation does, per worker and logged
//     step, one gradient at w0, one exact HVP and one gradient at the sequential model,
//     all in double. Expressed in gradient evaluations: 2 + t(HVP) / t(gradient), with
//     both timed here in double on a LeNet-5 batch of 32.
// Last line: RESULT diag_overhead_ratio=<x> seq_emulation_grad_evals_per_worker=<x>
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <numeric>

#include "runtime/core/error.h"
#include "runtime/runner.h"
#include "runtime/training_loop.h"
#include "runtime/sweep_plan.h"
#include "runtime/spec.h"

using namespace wb;
using Clock = std::chrono::steady_clock;

static double run_seconds(const std::string& metrics, rt::TaskCache& cache, int steps) {
  auto e = rt::parse_experiment(
      R"({"name": "b", "base": {"model": "lenet5", "workers": 16, "batch_size": 32, "lr": 0.01,
          "steps": )" + std::to_string(steps) + R"(, "algorithm": "adasum", "log_every": 1000,
          "metrics": )" + metrics + "}}",
      "bench");
  const auto& task = cache.get(e.runs[0].cfg.model.value);
  auto t0 = Clock::now();
  rt::execute_run(e.runs[0], task, MPI_COMM_SELF, nullptr);
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  try {
    rt::TaskCache cache;
    const int steps = 40, reps = 3;
    double best_off = 1e30, best_on = 1e30;
    for (int r = 0; r < reps; ++r) {
      best_off = std::min(best_off, run_seconds("{}", cache, steps));
      best_on = std::min(best_on, run_seconds(
          R"({"orthogonality": {"every": 1}, "diversity": {"every": 1}})", cache, steps));
    }
    const double overhead = best_on / best_off - 1.0;
    std::printf("LeNet-5, 16 workers x 32, %d steps, best of %d:\n", steps, reps);
    std::printf("  no metrics                         %8.2f ms/step\n", best_off / steps * 1e3);
    std::printf("  orthogonality+diversity every step %8.2f ms/step  overhead %.1f%%\n",
                best_on / steps * 1e3, overhead * 100);

    const auto& task = cache.get(models::model_registry().resolve(rt::json("lenet5"), rt::Where{}));
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
    double t_grad = 1e30, t_hvp = 1e30;
    for (int r = 0; r < 5; ++r) {
      auto t0 = Clock::now();
      m.loss_grad_f64(w, b, g, 42);
      auto t1 = Clock::now();
      m.hvp_f64(w, v, b, hv, 42);
      auto t2 = Clock::now();
      t_grad = std::min(t_grad, std::chrono::duration<double>(t1 - t0).count());
      t_hvp = std::min(t_hvp, std::chrono::duration<double>(t2 - t1).count());
    }
    const double evals = 2.0 + t_hvp / t_grad;
    std::printf("seq_emulation per worker per logged step: 2 gradients + 1 HVP (double)\n");
    std::printf("  gradient %.2f ms, HVP %.2f ms (batch 32) -> %.2f gradient evaluations\n",
                t_grad * 1e3, t_hvp * 1e3, evals);
    std::printf("RESULT diag_overhead_ratio=%.4f seq_emulation_grad_evals_per_worker=%.2f\n",
                overhead, evals);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_diagnostics: %s\n", e.what());
    MPI_Finalize();
    return 2;
  }
  MPI_Finalize();
  return 0;
}
