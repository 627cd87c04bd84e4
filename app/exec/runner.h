// The runner: the whole experiment (DESIGN.md section 4). It plans the sweep
// (app/plan/sweep_plan.h), executes each run of this rank's group (app/exec/training_loop.h),
// carries finished runs to world rank 0 (app/results/result_codec.h over comm::ResultChannel)
// and hands them to the recorder there.
#pragma once

#include <mpi.h>

#include <string>

#include "app/plan/run_options.h"
#include "app/results/run_result.h"
#include "app/experiment/spec.h"

namespace wb::app {

// The whole experiment; returns the process exit code. Collective over `comm`.
int run_experiment(const Experiment& e, const RunOptions& opt, MPI_Comm comm);

}  // namespace wb::app
