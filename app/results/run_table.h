// What the CLI prints about runs: the run table (validate, --dry-run) and the one-line
// summary of a finished run (progress output).
#pragma once

#include <string>

#include "app/results/run_result.h"
#include "app/experiment/spec.h"

namespace wb::app {

// %.4g, for messages and tables.
std::string fmt_num(double x);
// Print the run table (validate / dry-run).
void print_run_table(const Experiment& e);
// "id: status, N steps, train loss x[, test acc y][, converged at step k], t s"
std::string run_line(const RunResult& res);

}  // namespace wb::app
