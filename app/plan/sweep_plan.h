// The sweep plan (DESIGN.md section 4): before the first run, on every rank, decide what
// runs where and refuse what cannot work -- output pre-flight (writable, exists without
// --resume/--force, which runs --resume skips), every distinct model and data set loaded,
// every compute device opened, the per-rank memory budget, and the rank groups that run
// different runs of the sweep at the same time. Nothing is written until it all passed.
// A run's own plan (algorithm, budget, footprint, estimates) is app/plan/run_plan.h.
#pragma once

#include <mpi.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "app/plan/run_options.h"
#include "app/plan/run_plan.h"
#include "app/results/run_result.h"
#include "app/experiment/spec.h"
#include "models/model.h"

namespace wb::app {

// Loaded tasks (model + data), shared by the runs of an experiment that use the same
// model config: a sweep loads Fashion-MNIST once.
// With a compute device other than "cpu", the task's model is the device's wrapper of the
// CPU model (train/compute_device.h); the data are shared with the CPU task.
class TaskCache {
 public:
  const models::Task& get(const json& model_cfg, const std::string& device = "cpu");

 private:
  std::map<std::string, models::Task> tasks_;
};

struct SweepPlan {
  std::string out;                        // the results file
  std::string out_where;                  // where its name comes from (-o, $.output, $.name)
  std::vector<RunPlan> runs;              // per run of the experiment, sweep order
  std::vector<char> skip;                 // per run: already in the output (--resume)
  std::vector<size_t> todo;               // indices of the runs to execute, sweep order
  std::vector<std::string> device_lines;  // "cuda: GPU 0 of 4 ..." per opened device
  std::vector<int> first;                 // first world rank of each group (G + 1 entries)
  double output_bytes = 0;                // estimated size of the todo runs' results
  // World rank 0's peak while it folds the journal into the file at the end of the sweep:
  // the program, the largest data set and kFoldCopies x the results written.
  double fold_memory = 0;
  int groups() const { return static_cast<int>(first.size()) - 1; }
  int group_of_rank(int rank) const;
};

// Throws UserError when a run the file holds (--resume) was made with another config than
// the spec gives its id: names the run and the first differing key.
void check_resumable(const Experiment& e, const std::map<std::string, StoredRun>& stored,
                     const std::string& out);

// Planning is collective over comm: every rank gets the same plan, or every rank throws the
// same error. It has no side effect on the output: the runner opens the output (lock,
// journal, --resume's stored runs) between the two steps, since which runs are still to do
// decides what the second plans.
//
// First step, without data: every run's plan from its config (plan_runs: the algorithm
// instantiated, the derived counts checked), the output's name checked (not empty, not an
// input of the runs), and the ranks' layout (every rank has a logical worker to run).
SweepPlan plan_sweep(const Experiment& e, const RunOptions& opt, MPI_Comm comm);
// Second step, for the runs not in p.skip: every distinct model and data set loaded, each
// run's data plan (shards, budget, footprint, output), the compute devices opened, the rank
// groups, and the output and per-rank memory budgets.
void plan_sweep_data(SweepPlan& p, const Experiment& e, const RunOptions& opt, MPI_Comm comm,
                     TaskCache& tasks);

// Rank groups for a sweep whose runs have fewer workers than there are ranks: returns
// the first rank of each group (G+1 entries) and fills group_of_run. Exposed for tests.
std::vector<int> plan_rank_groups(const std::vector<int64_t>& workers,
                                  const std::vector<double>& cost, int ranks,
                                  std::vector<int>& group_of_run);

}  // namespace wb::app
