// Experiment specs (DESIGN.md section 2): one JSON file with a `base` run config and an
// optional `sweep` (cartesian product over dotted keys). Parsing validates everything up
// front -- every expanded run -- so a bad value fails before any run starts or any file
// is written.
//
//   {
//     "name": "toy_square",
//     "output": "toy_square.h5",                         (optional; -o overrides)
//     "base": { "model": {"name": "quadratic", "x_max": 1}, "workers": 4, "lr": 0.1, ... },
//     "sweep": { "workers": [2, 4, 8], "model.x_max": [1, 2],
//                "algorithm": [{"name": "sync_sgd", "combine": "average"}, "adasum"] }
//   }
//
// A sweep value replaces the value at its key (an object replaces the whole object).
// Run ids are made of the varied keys in sweep order: "workers=4,x_max=2,algorithm=adasum"
// (the last component of a dotted key when that is unambiguous, else the full key).
#pragma once

#include <string>
#include <vector>

#include "runtime/core/params.h"
#include "runtime/core/run_config.h"

namespace wb::rt {

struct RunSpec {
  std::string id;     // from the varied keys ("base" when there is no sweep)
  int index = 0;      // position in the sweep
  RunConfig cfg;
  json resolved;      // every field, defaults included (HDF5 config_json)
};

struct Experiment {
  std::string file;  // the spec's path (for messages)
  std::string name;
  std::string description;
  std::string output;  // from the spec ("" -> <name>.h5)
  json raw;            // the spec as given (HDF5 experiment_json)
  std::vector<RunSpec> runs;
};

// Parse and fully validate a spec file (UserError naming file and JSON path).
Experiment load_experiment(const std::string& path);
Experiment parse_experiment(const std::string& text, const std::string& file);
RunConfig parse_run_config(const json& j, const Where& w, json* resolved = nullptr);

// Budget in steps for a run given the training set size, for planning before the run's
// algorithm exists (runtime/train/run_facts.h: budget_steps is the one formula).
int64_t total_steps(const RunConfig& c, size_t train_size);

}  // namespace wb::rt
