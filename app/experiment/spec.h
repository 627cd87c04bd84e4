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

#include "app/experiment/experiment.h"
#include "app/experiment/run_config_json.h"
#include "app/experiment/spec_text.h"
#include "app/experiment/sweep_expansion.h"

namespace wb::app {

// Parse and fully validate a spec file (UserError naming file and JSON path).
Experiment load_experiment(const std::string& path);
Experiment parse_experiment(const std::string& text, const std::string& file);

}  // namespace wb::app
