// The sweep plan (DESIGN.md section 4): before the first run, on every rank, decide what
// runs where and refuse what cannot work -- output pre-flight (writable, exists without
// --resume/--force, which runs --resume skips), every distinct model and data set loaded,
// every compute device opened, the per-rank memory budget, and the rank groups that run
// different runs of the sweep at the same time. Nothing is written until it all passed.
#pragma once

#include <mpi.h>

#include <map>
#include <string>
#include <vector>

#include "models/model.h"
#include "runtime/runner.h"
#include "runtime/spec.h"

namespace wb::rt {

// Loaded tasks (model + data), shared by the runs of an experiment that use the same
// model config: a sweep loads Fashion-MNIST once.
// With a compute device other than "cpu", the task's model is the device's wrapper of the
// CPU model (runtime/train/compute_device.h); the data are shared with the CPU task.
class TaskCache {
 public:
  const models::Task& get(const json& model_cfg, const std::string& device = "cpu");

 private:
  std::map<std::string, models::Task> tasks_;
};

struct SweepPlan {
  std::string out;                        // the results file
  std::vector<char> skip;                 // per run: already completed (--resume)
  std::vector<size_t> todo;               // indices of the runs to execute, sweep order
  std::vector<std::string> device_lines;  // "cuda: GPU 0 of 4 ..." per opened device
  std::vector<int> group_of;              // per todo entry: its rank group
  std::vector<int> first;                 // first world rank of each group (G + 1 entries)
  int groups() const { return static_cast<int>(first.size()) - 1; }
  int group_of_rank(int rank) const;
};

// Collective over comm: every rank gets the same plan, or every rank throws the same error.
SweepPlan plan_sweep(const Experiment& e, const RunOptions& opt, MPI_Comm comm, TaskCache& tasks);

// Rank groups for a sweep whose runs have fewer workers than there are ranks: returns
// the first rank of each group (G+1 entries) and fills group_of_run. Exposed for tests.
std::vector<int> plan_rank_groups(const std::vector<int64_t>& workers,
                                  const std::vector<double>& cost, int ranks,
                                  std::vector<int>& group_of_run);

}  // namespace wb::rt
