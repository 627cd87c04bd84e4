// The runner: builds each run of an experiment (task, workers, collectives, algorithm,
// schedule, clock), steps it to its budget, and hands results to the recorder on rank 0
// (DESIGN.md section 4).
#pragma once

#include <mpi.h>

#include <map>
#include <memory>
#include <string>

#include "models/model.h"
#include "runtime/recorder.h"
#include "runtime/spec.h"

namespace wb::rt {

struct RunOptions {
  std::string output;  // results file ("" -> spec's output or <name>.h5)
  bool resume = false, force = false, dry_run = false;
  bool quiet = false;  // no progress lines
  bool fail_fast = false;  // a diverged run stops the sweep (exit code 3)
  double max_memory_gb = 0;  // per-rank budget for the workers' buffers; 0 = 80% of RAM
};

// Loaded tasks (model + data), shared by the runs of an experiment that use the same
// model config: a sweep loads Fashion-MNIST once.
// With a compute device other than "cpu", the task's model is the device's wrapper of the
// CPU model (runtime/compute_device.h); the data are shared with the CPU task.
class TaskCache {
 public:
  const models::Task& get(const json& model_cfg, const std::string& device = "cpu");

 private:
  std::map<std::string, models::Task> tasks_;
};

// Execute one run collectively over `comm` (every rank of comm calls it).
RunResult execute_run(const RunSpec& rs, const models::Task& task, MPI_Comm comm,
                      class ProgressLine* progress);

// The whole experiment; returns the process exit code. Collective over `comm`.
int run_experiment(const Experiment& e, const RunOptions& opt, MPI_Comm comm);

// Rank groups for a sweep whose runs have fewer workers than there are ranks: returns
// the first rank of each group (G+1 entries) and fills group_of_run. Exposed for tests.
std::vector<int> plan_rank_groups(const std::vector<int64_t>& workers,
                                  const std::vector<double>& cost, int ranks,
                                  std::vector<int>& group_of_run);

// Print the run table (validate / dry-run).
void print_run_table(const Experiment& e);

}  // namespace wb::rt
