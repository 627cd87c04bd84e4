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

#include <memory>
#include <string>
#include <vector>

#include "core/params.h"
#include "train/run_config.h"

namespace wb::rt {

// Where a swept key of a run got its value: the one record of the sweep's expansion that
// messages use to name the JSON path a user changes (no one re-decodes the run index).
struct SweptKey {
  std::string key;   // dotted run-config key ("model.train_size")
  std::string path;  // the sweep entry that set it ("$.sweep.workers[1]", linked: "...[1][0]")
  bool object = false;  // the value set is an object (keys inside it live in the entry)
};

struct RunSpec {
  std::string id;     // from the varied keys ("base" when there is no sweep)
  int index = 0;      // position in the sweep
  train::RunConfig cfg;
  std::vector<SweptKey> swept;  // the keys the sweep set for this run

  // The resolved config: every field, defaults included (HDF5 config_json). A copy.
  json resolved() const;
  // One top-level field of it ("model", "clock"), without copying the rest; a null json
  // when the config has no such field.
  const json& resolved_at(const std::string& key) const;
  // Sets the resolved config. With `base` (the sweep's resolved base, shared by its runs),
  // only the top-level fields that differ from it are kept: a 100k-run sweep holds each
  // run's few swept fields, not 100k copies of every default (validate stays ~1 KB a run).
  void set_resolved(json full, std::shared_ptr<const json> base = nullptr);
  // Replaces one top-level field of the resolved config.
  void set_resolved_field(const std::string& key, json value);

 private:
  std::shared_ptr<const json> resolved_base_;  // null: resolved_delta_ is the whole config
  json resolved_delta_ = json::object();       // top-level fields that differ from the base
};

struct Experiment;
// The JSON path of run-config key `key` for run r: the sweep entry that set it (or set an
// object holding it), else $.base.<key>; with several runs, "(run <id>)" is appended.
std::string key_path(const Experiment& e, const RunSpec& r, const std::string& key);

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
// The bytes of a spec file: a regular file of at most kMaxSpecBytes (a device such as
// /dev/zero, a FIFO or a huge file is refused before it is read); reading answers a signal
// (throws Interrupted).
constexpr size_t kMaxSpecBytes = 64u << 20;
std::string read_spec_file(const std::string& path);
Experiment parse_experiment(const std::string& text, const std::string& file);
// run_checks: the rules across fields (check_run_config in spec.cpp; the counts the algorithm
// derives are the planner's, runtime/run_plan.h check_config);
// false for the base of a sweep, whose values the sweep may replace (a base with workers 1
// and seq_emulation.workers 4 is fine when every run sweeps workers >= 4).
train::RunConfig parse_run_config(const json& j, const core::Where& w, json* resolved = nullptr,
                                  bool run_checks = true);

}  // namespace wb::rt
