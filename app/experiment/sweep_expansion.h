// The sweep's expansion (DESIGN.md section 2): the `sweep` object of a spec -- ordered axes
// of dotted keys, linked keys moving together -- becomes the runs of the experiment, each
// with its id, its resolved config and the record of which sweep entry set each of its keys,
// so that every message names the JSON path a user changes.
#pragma once

#include <string>

#include "app/experiment/experiment.h"
#include "core/error.h"

namespace wb::app {

// Expands e.raw["sweep"] over the resolved base config into e.runs (every run's config
// parsed and checked; ids unique, configs distinct). UserError names the sweep entry.
void expand_sweep(Experiment& e, const json& base_resolved);

// An error found in run rs's config at a path of the run config ("spec.json: $.batch_size"),
// re-addressed to where the user sets that value: the sweep entry that set it, else
// "$.base..." with " (run <id>)" when the spec sweeps. The parser and the planner both
// report a run's config errors through it.
UserError at_run(const std::string& file, const RunSpec& rs, const UserError& ue);

// The JSON path of run-config key `key` for run r: the sweep entry that set it (or set an
// object holding it), else $.base.<key>; with several runs, "(run <id>)" is appended.
std::string key_path(const Experiment& e, const RunSpec& r, const std::string& key);

}  // namespace wb::app
