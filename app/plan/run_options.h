// How the command line asks a sweep to run (`workbench run` / `validate` options): what the
// planner's pre-flight checks (app/plan/sweep_plan.h) and the runner (app/exec/runner.h) both
// read. Its own header so that the plan does not reach up into the runner for it.
#pragma once

#include <string>

namespace wb::app {

class TimelineWriter;

struct RunOptions {
  std::string output;  // results file (not given -> spec's output or <name>.h5)
  bool output_given = false;  // -o was given (an empty -o is refused, not a default)
  bool validate_only = false;  // `workbench validate`: every pre-flight check but the output
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

}  // namespace wb::app
