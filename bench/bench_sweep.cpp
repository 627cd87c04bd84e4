// bench_sweep: what a user waits for, as one number per kind of sweep. Runs the workbench
// CLI (the binary next to this one) exactly as a user does, output file and all:
//   toy        a 10,000-run sweep of one-step runs of the quadratic toy (seeds 0..9999):
//              runs per second, the per-run overhead of the whole pipeline (spec, plan,
//              workers, the results journal and the HDF5 fold);
//   quickstart examples/quickstart.json (LeNet-5, 3 runs x 300 steps x 8 workers x 16):
//              training samples per second, end to end (data loading and evaluation in).
//
//   build/bench_sweep [--runs N] [--ranks R] [--reps N] [--smoke]
//
// --ranks R > 1 launches the CLI under `mpirun -n R` (never more ranks than cores).
// Check (#wrong): a CLI run that fails or leaves no output file.
// Last line: RESULT toy_runs_per_s=<x> toy_runs=<n> quickstart_samples_per_s=<x>
//            quickstart_s=<x> ranks=<R> wrong=<n>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "app/experiment/spec.h"
#include "bench/driver.h"
#include "bench/peak.h"

namespace {

namespace fs = std::filesystem;

std::string self_dir() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : p.parent_path().string();
}

// Seconds of one CLI call (best of reps), or -1 when it failed or wrote no output.
double time_cli(const std::string& cmd, const std::string& out, int reps, long& wrong) {
  double best = -1;
  for (int r = 0; r < reps; ++r) {
    fs::remove(out);
    const double t0 = wb::bench::now_s();
    const int rc = std::system((cmd + " > /dev/null 2>&1").c_str());
    const double dt = wb::bench::now_s() - t0;
    if (rc != 0 || !fs::exists(out)) {
      std::printf("FAILED (exit %d): %s\n", rc, cmd.c_str());
      ++wrong;
      return -1;
    }
    if (best < 0 || dt < best) best = dt;
  }
  return best;
}

int run(const wb::bench::Args& args) {
  const int runs = args.integer("runs");
  const int ranks = args.integer("ranks");
  const int reps = args.integer("reps");
  const std::string wb_bin = self_dir() + "/workbench";
  const std::string launch = ranks > 1 ? "mpirun -n " + std::to_string(ranks) + " " : "";
  const fs::path tmp = fs::temp_directory_path() / ("bench_sweep." + std::to_string(getpid()));
  fs::create_directories(tmp);
  long wrong = 0;

  // The toy sweep: one-step quadratic runs over `runs` seeds.
  std::string seeds;
  for (int s = 0; s < runs; ++s) {
    if (s) seeds += ',';
    seeds += std::to_string(s);
  }
  const std::string toy_spec = (tmp / "toy.json").string();
  std::ofstream(toy_spec) << R"({"name": "bench_sweep_toy", "base": {"model": "quadratic",
    "algorithm": "sync_sgd", "workers": 2, "batch_size": 1, "lr": 0.1, "steps": 1,
    "log_every": 1, "eval_every": 0}, "sweep": {"seed": [)" << seeds << "]}}\n";
  const std::string toy_out = (tmp / "toy.h5").string();
  const double toy_s =
      time_cli(launch + wb_bin + " run " + toy_spec + " -o " + toy_out + " --force", toy_out, reps, wrong);

  // The quickstart, end to end; samples from its spec (runs x steps x workers x batch).
  const std::string qs = wb::bench::repo_path("examples/quickstart.json");
  double qs_s = -1, samples = 0;
  if (qs.empty()) {
    std::printf("FAILED: examples/quickstart.json not found\n");
    ++wrong;
  } else {
    std::ifstream f(qs);
    const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const auto e = wb::app::parse_experiment(text, qs);
    for (const auto& r : e.runs)
      samples += static_cast<double>(r.cfg.steps) * r.cfg.workers * r.cfg.batch_size;
    const std::string qs_out = (tmp / "quickstart.h5").string();
    if (!args.smoke())
      qs_s = time_cli(launch + wb_bin + " run " + qs + " -o " + qs_out + " --force", qs_out, 1, wrong);
  }
  fs::remove_all(tmp);
  std::printf("toy sweep: %d runs in %.2f s (best of %d): %.0f runs/s\n", runs, toy_s, reps,
              toy_s > 0 ? runs / toy_s : 0.0);
  if (qs_s > 0)
    std::printf("quickstart: %.0f samples in %.2f s: %.0f samples/s\n", samples, qs_s, samples / qs_s);
  else
    std::printf("quickstart: not run (--smoke) or failed\n");
  return wb::bench::Result()
      .add("toy_runs_per_s", toy_s > 0 ? runs / toy_s : 0.0, 1)
      .add("toy_runs", static_cast<long>(runs))
      .add("quickstart_samples_per_s", qs_s > 0 ? samples / qs_s : 0.0, 0)
      .add("quickstart_s", qs_s > 0 ? qs_s : 0.0, 2)
      .add("ranks", static_cast<long>(ranks))
      .finish(wrong);
}

}  // namespace

int main(int argc, char** argv) {
  return wb::bench::bench_main(
      argc, argv,
      {"bench_sweep",
       "sweep throughput through the CLI: runs/s of a one-step toy sweep, samples/s of the quickstart",
       {{"runs", 10000, 200, "runs of the toy sweep"},
        {"ranks", 1, 1, "MPI ranks of the CLI (mpirun -n R when > 1)"},
        {"reps", 1, 1, "repetitions of the toy sweep (best of)"}}},
      run);
}
