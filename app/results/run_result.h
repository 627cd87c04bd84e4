// What one run produced, as the application passes it around: its curves, summary, series
// and provenance (RunResult), what a results file already holds of it (StoredRun), the
// file's own attributes (FileInfo), and the one error of writing results (WriteError). The
// recorder (app/results/recorder.h) writes them; the HDF5 layout they take on disk is
// docs/results.md and app/results/results_layout.h. Types only: every room of the application
// may include this without reaching the writer.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/params.h"
#include "core/series.h"

namespace wb::app {

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
  std::vector<core::Series> series;  // extra datasets (metrics, per-worker series)
  json summary = json::object();     // summary row fields
  // What the run's clock charged for communication (sim/comm_ledger.h, HDF5 comm_json):
  // `workbench bandwidth` re-prices it. Empty for a run that never reached its clock.
  json comm = json::object();
  // Who computed this run (docs/results.md: provenance_json): stamped by the recorder when
  // the run is journaled, so a file that --resume extends says which binary, rank count,
  // devices and host made each run, not only the file's first writer. Empty until then.
  json provenance = json::object();
};

struct FileInfo {
  std::string experiment_json;
  int mpi_ranks = 1;
  // The compute devices the runs used, one per line: "cpu", or the device's line from rank
  // 0 (e.g. "cuda: GPU 0 of 4 (NVIDIA H100 80GB HBM3) for local rank 0 of 4; ...").
  std::string devices = "cpu";
  // Run id -> its position in the spec that writes the file: every run the file holds is
  // given its index in this spec at each fold, so that indices stay unique after a --resume
  // with a reordered or extended sweep (empty: indices are kept as they are).
  std::map<std::string, int> index_of;
};

// What a results file already holds for one run (for --resume).
struct StoredRun {
  std::string status;       // completed | diverged | interrupted | failed
  std::string config_json;  // the resolved config it ran with
  std::string summary_json;  // its summary row's fields
  std::string comm_json;     // what its clock charged for communication ("" in older files)
};

// An I/O failure writing results (disk full, file system gone): not bad input, not a bug.
struct WriteError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace wb::app
