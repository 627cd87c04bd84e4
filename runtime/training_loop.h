// The training loop of one run (DESIGN.md section 4): builds the run's workers,
// collectives, algorithm, schedule and clock, owns the run's facts (budget, progress, lr:
// StepContext::run), steps the algorithm to its budget with divergence, convergence and
// interruption checks, evaluates, and returns the run's curves and summary.
#pragma once

#include <mpi.h>

#include "models/model.h"
#include "runtime/recorder.h"
#include "runtime/run_observer.h"
#include "runtime/run_plan.h"
#include "runtime/spec.h"

namespace wb::core {
class ProgressLine;
}  // namespace wb::core

namespace wb::rt {

// Test-set samples per evaluation pass (the evaluation workspace is made for this many).
constexpr int kEvalChunk = 256;
// A run records its final parameters (series final_params) when the model has at most this
// many: the toys' coefficients, not a network's weights. The output estimate counts them.
constexpr size_t kMaxFinalParams = 100000;

// metrics.validation_fraction holds back the tail of the training set (floor(N x fraction)
// samples, 0 when the fraction is 0); the run trains on the rest. The one rule for both,
// used by the loop and by planning (shards, budgets, output size).
size_t validation_count(size_t N, double fraction);
size_t training_samples(const train::RunConfig& c, size_t N);

// Execute one planned run collectively over `comm` (every rank of comm calls it): set up,
// step to the plan's budget, evaluate, summarize. The run takes over the plan's algorithm.
// It reports to `observer` while it runs (runtime/run_observer.h; nullptr: to no one).
RunResult execute_run(RunPlan plan, const models::Task& task, MPI_Comm comm,
                      core::ProgressLine* progress, RunObserver* observer = nullptr);
// A run outside a planned sweep (tests, benchmarks, examples): plan_single, then the above.
RunResult execute_run(const RunSpec& rs, const models::Task& task, MPI_Comm comm,
                      core::ProgressLine* progress, RunObserver* observer = nullptr);

}  // namespace wb::rt
