// The runner: the whole experiment (DESIGN.md section 4). It plans the sweep
// (runtime/sweep_plan.h), executes each run of this rank's group (runtime/training_loop.h),
// carries finished runs to world rank 0 (runtime/result_codec.h over comm::ResultChannel)
// and hands them to the recorder there.
#pragma once

#include <mpi.h>

#include <string>

#include "runtime/recorder.h"
#include "runtime/spec.h"

namespace wb::rt {

class TimelineWriter;

struct RunOptions {
  std::string output;  // results file (not given -> spec's output or <name>.h5)
  bool output_given = false;
  bool validate_only = false;  // `workbench validate`: every pre-flight check but the output  // -o was given (an empty -o is refused, not a default)
  bool resume = false, force = false, dry_run = false;
  bool quiet = false;  // no progress lines
  bool fail_fast = false;  // a diverged run stops the sweep (exit code 3)
  bool rerun_diverged = false;  // --resume: run again the runs the file holds as diverged
  double max_memory_gb = 0;  // per-rank budget for estimate_memory (sweep_plan.h); 0 = 80% of RAM
  double max_output_gb = 10;  // budget for the results the runs write (estimate_results_bytes)
  // `run --timeline`: the runs this process leads (rank 0 of their communicator) record their
  // simulated-clock events here; nullptr: none. Not owned.
  TimelineWriter* timeline = nullptr;
};

// The whole experiment; returns the process exit code. Collective over `comm`.
int run_experiment(const Experiment& e, const RunOptions& opt, MPI_Comm comm);

}  // namespace wb::rt
