// The training loop of one run (DESIGN.md section 4): builds the run's workers,
// collectives, algorithm, schedule and clock, owns the run's facts (budget, progress, lr:
// StepContext::run), steps the algorithm to its budget with divergence, convergence and
// interruption checks, evaluates, and returns the run's curves and summary.
#pragma once

#include <mpi.h>

#include "app/exec/run_observer.h"
#include "app/plan/run_plan.h"
#include "app/results/run_result.h"
#include "app/experiment/spec.h"
#include "models/model.h"

namespace wb::core {
class ProgressLine;
}  // namespace wb::core

namespace wb::app {

// Execute one planned run collectively over `comm` (every rank of comm calls it): set up,
// step to the plan's budget, evaluate, summarize. The run takes over the plan's algorithm.
// It reports to `observer` while it runs (app/exec/run_observer.h; nullptr: to no one).
RunResult execute_run(RunPlan plan, const models::Task& task, MPI_Comm comm,
                      core::ProgressLine* progress, RunObserver* observer = nullptr);
// A run outside a planned sweep (tests, benchmarks, examples): plan_single, then the above.
RunResult execute_run(const RunSpec& rs, const models::Task& task, MPI_Comm comm,
                      core::ProgressLine* progress, RunObserver* observer = nullptr);

}  // namespace wb::app
