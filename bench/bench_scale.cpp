// bench_scale: what a logical worker costs, on the benchmark driver.
//  LeNet-5 (Adasum, SGD momentum 0.5) at a fixed --samples samples per step, W in {1, 64,
//  1024} (batch samples / W), and the cubic toy (sync SGD, batch 4) at W in {1, 1024, 65536};
//  one rank. Per case: setup seconds (execute_run up to the first step: workers, shards,
//  scratch; the data set is loaded before), seconds per step, peak RSS, and the ratio of the
//  time per step to W = 1's. With workers that own only their state (DESIGN.md section 3)
//  the time per step at a fixed number of samples does not grow with W, and the memory grows
//  by the state only: 1024 LeNet-5 workers hold w, g and momentum, ~270 MB. (The toy keeps
//  4 samples per worker, so its samples per step, and its step/W=1 column, grow with W.)
//  Peak RSS is per process, so every case runs in a fresh process: this program runs itself
//  with --case K, which prints one "CASE ..." line and exits; ru_maxrss is that process's.
//  Check (#wrong): a case whose process fails or whose run does not complete.
// Last line: RESULT lenet_w1024_over_w1=<x> lenet_w1024_rss_mb=<x> lenet_w1024_setup_s=<x>
//            toy_w65536_step_s=<x> wrong=<n>         (MB = 2^20 bytes, as ru_maxrss / 1024)
#include <mpi.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "app/exec/runner.h"
#include "app/exec/training_loop.h"
#include "app/plan/sweep_plan.h"
#include "app/experiment/spec.h"
#include "bench/driver.h"

using namespace wb;

namespace {

struct Case {
  std::string model;  // "lenet5" | "cubic"
  int workers = 1;
};

std::vector<Case> cases() {
  return {{"lenet5", 1}, {"lenet5", 64}, {"lenet5", 1024},
          {"cubic", 1},  {"cubic", 1024}, {"cubic", 65536}};
}

struct Figures {
  double setup_s = 0, step_s = 0, rss_mb = 0;
  bool ok = false;
};

// In this process: one run of `steps` timed steps (plus a first row that holds the setup and a
// last one that holds the evaluation, both left out of the time per step).
Figures run_case(const Case& k, int samples, int steps) {
  const bool lenet = k.model == "lenet5";
  const int batch = lenet ? std::max(1, samples / k.workers) : 4;
  const std::string spec =
      lenet ? R"({"name": "scale", "base": {"model": "lenet5", "algorithm": "adasum",
                 "optimizer": {"name": "sgd", "momentum": 0.5}, "lr": 0.01, "log_every": 1,
                 "eval_every": 0, "workers": )" +
                  std::to_string(k.workers) + R"(, "batch_size": )" + std::to_string(batch) +
                  R"(, "steps": )" + std::to_string(steps + 2) + "}}"
            : R"({"name": "scale", "base": {"model": "cubic", "algorithm": "sync_sgd",
                 "lr": 0.001, "log_every": 1, "eval_every": 0, "workers": )" +
                  std::to_string(k.workers) + R"(, "batch_size": )" + std::to_string(batch) +
                  R"(, "steps": )" + std::to_string(steps + 2) + "}}";
  const app::Experiment e = app::parse_experiment(spec, "bench_scale");
  app::TaskCache cache;
  const models::Task& task = cache.get(e.runs[0].cfg.model.value());
  const app::RunResult r = app::execute_run(e.runs[0], task, MPI_COMM_SELF, nullptr);
  Figures f;
  const auto& wall = r.curves.wall_s;
  f.ok = r.status == "completed" && wall.size() == static_cast<size_t>(steps) + 2;
  if (f.ok) {
    // Row i ends step i + 1; rows 1..steps are plain steps.
    f.step_s = (wall[static_cast<size_t>(steps)] - wall[0]) / steps;
    f.setup_s = std::max(0.0, wall[0] - f.step_s);
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  f.rss_mb = static_cast<double>(ru.ru_maxrss) / 1024.0;  // KiB on Linux
  return f;
}

// In a fresh process (this program with --case i): its "CASE" line.
Figures run_child(int i, const bench::Args& args) {
  const std::string cmd = "/proc/" + std::to_string(getpid()) + "/exe --case " +
                          std::to_string(i) + " --samples " +
                          std::to_string(args.integer("samples")) + " --steps " +
                          std::to_string(args.integer("steps")) + " 2>&1";
  Figures f;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return f;
  char line[512];
  int ok = 0;
  while (std::fgets(line, sizeof line, p)) {
    if (std::sscanf(line, "CASE ok=%d setup_s=%lf step_s=%lf rss_mb=%lf", &ok, &f.setup_s,
                    &f.step_s, &f.rss_mb) == 4)
      f.ok = ok == 1;
    else
      std::fputs(line, stdout);  // a failing child's message
  }
  f.ok = pclose(p) == 0 && f.ok;
  return f;
}

int run(const bench::Args& args) {
  const auto all = cases();
  const int which = args.integer("case");
  if (which >= 0) {  // the child
    if (which >= static_cast<int>(all.size())) throw std::invalid_argument("--case out of range");
    const Figures f = run_case(all[static_cast<size_t>(which)], args.integer("samples"),
                               args.integer("steps"));
    std::printf("CASE ok=%d setup_s=%.6f step_s=%.6f rss_mb=%.1f\n", f.ok ? 1 : 0, f.setup_s,
                f.step_s, f.rss_mb);
    return f.ok ? 0 : 1;
  }
  std::vector<Figures> fig;
  for (size_t i = 0; i < all.size(); ++i) fig.push_back(run_child(static_cast<int>(i), args));
  std::printf("one rank, fresh process per case; %d timed steps; LeNet-5 adasum at %d samples "
              "per step, cubic toy sync_sgd batch 4 per worker\n",
              args.integer("steps"), args.integer("samples"));
  std::printf("%-8s %7s %7s %10s %12s %13s %10s\n", "model", "W", "batch", "setup(s)",
              "step(s)", "peak RSS(MB)", "step/W=1");
  long wrong = 0;
  double base = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const Case& k = all[i];
    const Figures& f = fig[i];
    if (k.workers == 1) base = f.step_s;
    const int batch = k.model == "lenet5" ? std::max(1, args.integer("samples") / k.workers) : 4;
    wrong += f.ok ? 0 : 1;
    std::printf("%-8s %7d %7d %10.3f %12.6f %13.1f %10.3f%s\n", k.model.c_str(), k.workers, batch,
                f.setup_s, f.step_s, f.rss_mb, base > 0 ? f.step_s / base : 0.0,
                f.ok ? "" : "  FAILED");
  }
  return bench::Result()
      .add("lenet_w1024_over_w1", fig[0].step_s > 0 ? fig[2].step_s / fig[0].step_s : 0.0, 3)
      .add("lenet_w1024_rss_mb", fig[2].rss_mb, 1)
      .add("lenet_w1024_setup_s", fig[2].setup_s, 3)
      .add("toy_w65536_step_s", fig[5].step_s, 5)
      .finish(wrong);
}

}  // namespace

int main(int argc, char** argv) {
  return bench::bench_main(
      argc, argv,
      {"bench_scale",
       "what a logical worker costs: setup, time per step and peak RSS against W",
       {{"samples", 8192, 1024, "LeNet-5 samples per step (batch = samples / W)"},
        {"steps", 5, 2, "timed steps per case"},
        {"case", -1, -1, "internal: run case K in this process and print its CASE line"}}},
      run);
}
