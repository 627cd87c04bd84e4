// HDF5 results (DESIGN.md section 9, the contract with notebooks):
//
//   /                      attrs: workbench_version, git_commit, experiment_json,
//                                 created_utc, mpi_ranks, host
//   /runs/<run_id>/        attrs: config_json, status, error, wall_s, sim_s, index,
//                                 summary_json
//   /runs/<run_id>/curves/ 1-D, same length: step, epoch, samples, wall_s, sim_s, lr,
//                          train_loss, [test_loss, test_accuracy] (NaN where not evaluated)
//   /runs/<run_id>/metrics/, /workers/  2-D / 1-D series added by diagnostics/algorithms
//   /summary               one row per run (compound): id, index, status, steps, samples,
//                          wall_s, sim_s, final/min train loss, final test loss,
//                          final/best test accuracy, converged_step
//
// Crash safety: only rank 0 writes, and never in place. Each finished run is added to a
// copy of the file (or a fresh file), which is closed, fsync'ed and atomically renamed
// over the results file: a kill -9 at any moment leaves the previous complete file, so a
// run group is complete or absent. --resume skips runs whose group says "completed".
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "runtime/core/params.h"
#include "runtime/core/series.h"

namespace wb::rt {

struct Curves {
  std::vector<double> step, epoch, samples, wall_s, sim_s, lr, train_loss, test_loss,
      test_accuracy;
  void push(double st, double ep, double sa, double wa, double si, double l, double tr,
            double te, double acc) {
    step.push_back(st);
    epoch.push_back(ep);
    samples.push_back(sa);
    wall_s.push_back(wa);
    sim_s.push_back(si);
    lr.push_back(l);
    train_loss.push_back(tr);
    test_loss.push_back(te);
    test_accuracy.push_back(acc);
  }
  size_t size() const { return step.size(); }
};

struct RunResult {
  std::string id;
  int index = 0;
  json config;                    // resolved run config
  std::string status = "completed";  // completed | diverged | failed
  std::string error;
  double wall_s = 0, sim_s = 0;
  Curves curves;
  bool has_test = false, has_accuracy = false;
  std::vector<Series> series;     // extra datasets (metrics, per-worker series)
  json summary = json::object();  // summary row fields
};

struct FileInfo {
  std::string experiment_json;
  int mpi_ranks = 1;
  // The compute devices the runs used, one per line: "cpu", or the device's line from rank
  // 0 (e.g. "cuda: GPU 0 of 4 (NVIDIA H100 80GB HBM3) for local rank 0 of 4; ...").
  std::string devices = "cpu";
};

class Recorder {
 public:
  // fresh = true: the first write starts a new file (replacing any old one at rename
  // time); otherwise runs are added to the existing file.
  Recorder(std::string path, FileInfo info, bool fresh);
  // Queue a finished run; the file is rewritten (copy, add, fsync, rename) at most every
  // `flush_interval_s` seconds, so a sweep of thousands of tiny runs does not copy a
  // growing file per run. A crash loses at most that interval of finished runs.
  void write_run(const RunResult& r);
  // Write every queued run now (end of the sweep, interruption).
  void flush();
  ~Recorder();
  const std::string& path() const { return path_; }
  double flush_interval_s = 2.0;

 private:
  void write_batch(const std::vector<RunResult>& runs);
  std::vector<RunResult> pending_;
  double last_flush_ = 0;
  std::string path_;
  FileInfo info_;
  bool fresh_;
};

// Runs already in a results file: id -> status. Empty if the file does not exist.
std::map<std::string, std::string> existing_runs(const std::string& path);
// Throws UserError if the directory of `path` is missing or not writable (no file left).
void check_output_writable(const std::string& path, const std::string& where);

}  // namespace wb::rt
