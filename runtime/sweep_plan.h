// The sweep plan (DESIGN.md section 4): before the first run, on every rank, decide what
// runs where and refuse what cannot work -- output pre-flight (writable, exists without
// --resume/--force, which runs --resume skips), every distinct model and data set loaded,
// every compute device opened, the per-rank memory budget, and the rank groups that run
// different runs of the sweep at the same time. Nothing is written until it all passed.
#pragma once

#include <mpi.h>

#include <map>
#include <memory>
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

// A run's memory on its busiest rank (DESIGN.md section 3): a logical worker costs its state,
// the data set is loaded once, and the scratch of a pass belongs to the executing thread.
// One estimate for `workbench run --dry-run` and the --max-memory-gb budget. Device memory is
// not counted.
struct MemoryEstimate {
  // The program itself: code, MPI and HDF5 libraries, allocator (a W = 1 toy run: 32 MB max
  // RSS on Linux x86-64).
  static constexpr double kProgram = 30e6;
  // A logical worker's object beyond its vectors' contents: the Worker, its optimizer and
  // sampler objects and the allocator's headers of their heap blocks (measured: 65,536
  // quadratic workers take ~480 bytes each more than their 2 parameters; tests/cli/
  // test_estimates.sh checks it).
  static constexpr double kWorkerObject = 480;
  // A run's curves and series are held twice at its peak: in the growing vectors the loop
  // appends to (up to 2x their size in capacity) and as the packed journal record.
  static constexpr double kResultCopies = 2;
  // Folding the journal into the file (rank 0, at the end of the sweep) holds, at its peak, the
  // journal read whole, the decoded runs, the HDF5 image being built (with its growth) and the
  // finished image: ~6x the results written (measured on 1-run and 10,000-run toy sweeps).
  static constexpr double kFoldCopies = 6;
  double workers_per_rank = 0;  // the busiest rank's logical workers
  double state_per_worker = 0;  // bytes: w, g, optimizer + algorithm state, shard, indices
  double data = 0;              // bytes: training + test samples, shared by every worker
  double scratch = 0;           // bytes: one training pass + one evaluation pass
  double algorithm = 0;  // bytes: algorithm state not per worker (a simulated schedule of all
                         // W workers, global models), on every rank
  double results = 0;    // bytes: the run's curves and series (estimate_results_bytes)
  std::string dominant = "workers";  // the run-config key that moves the total most
  double total() const {
    return kProgram + workers_per_rank * (state_per_worker + kWorkerObject) + data + scratch +
           algorithm + kResultCopies * results;
  }
};
// Per worker this counts, beyond w, g and the optimizer state, every buffer the algorithm
// allocates per worker and per updater (LAP/LPP: U updaters' snapshots, batches, shards,
// threads; Adaptive SGD: a mega-batch of indices), so a run that cannot fit is refused
// before it starts rather than dying of bad_alloc an hour in.
MemoryEstimate estimate_memory(const RunConfig& c, const models::Task& t, int ranks);
// Bytes of a run's curves and series (held until the run is written, then in the results
// file): curve points x 9 columns + the algorithm's and diagnostics' series + final params.
double estimate_results_bytes(const RunConfig& c, const models::Task& t);
// "~395 MB per rank (1024 workers x 0.262 MB + data 55 MB + scratch 42 MB + program 30 MB)"
std::string describe_memory(const MemoryEstimate& m);

struct SweepPlan {
  std::string out;                        // the results file
  std::shared_ptr<Recorder> recorder;     // world rank 0: the output, locked (recorder.h)
  std::vector<char> skip;                 // per run: already completed (--resume)
  std::vector<size_t> todo;               // indices of the runs to execute, sweep order
  std::vector<std::string> device_lines;  // "cuda: GPU 0 of 4 ..." per opened device
  std::vector<int> group_of;              // per todo entry: its rank group
  std::vector<int> first;                 // first world rank of each group (G + 1 entries)
  std::vector<MemoryEstimate> memory;     // per todo entry, on its busiest rank
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

// Collective over comm: every rank gets the same plan, or every rank throws the same error.
SweepPlan plan_sweep(const Experiment& e, const RunOptions& opt, MPI_Comm comm, TaskCache& tasks);

// Rank groups for a sweep whose runs have fewer workers than there are ranks: returns
// the first rank of each group (G+1 entries) and fills group_of_run. Exposed for tests.
std::vector<int> plan_rank_groups(const std::vector<int64_t>& workers,
                                  const std::vector<double>& cost, int ranks,
                                  std::vector<int>& group_of_run);

}  // namespace wb::rt
