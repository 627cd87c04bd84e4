// One run config from its JSON (the schema is train/run_config.h's RunConfig::describe, defined
// in run_config_json.cpp beside the registries that resolve its names).
#pragma once

#include "core/params.h"
#include "train/run_config.h"

namespace wb::app {

// Parse one run config (UserError naming the JSON path w); `resolved`: every field, defaults
// included, as the HDF5 config_json records it.
// run_checks: the rules across fields (check_run_config, run_config_json.cpp; the counts the algorithm
// derives are the planner's, app/plan/run_plan.h check_config);
// false for the base of a sweep, whose values the sweep may replace (a base with workers 1
// and seq_emulation.workers 4 is fine when every run sweeps workers >= 4).
train::RunConfig parse_run_config(const json& j, const core::Where& w, json* resolved = nullptr,
                                  bool run_checks = true);

}  // namespace wb::app
