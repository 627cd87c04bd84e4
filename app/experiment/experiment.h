// An expanded experiment: its runs (RunSpec: id, index, the parsed run config, the resolved
// JSON it records, the keys its sweep set) and the spec's own fields. The types only, so that
// the sweep's expansion (sweep_expansion.h), the planner and the runner share them without
// reaching the parser (spec.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/params.h"
#include "train/run_config.h"

namespace wb::app {

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

struct Experiment {
  std::string file;  // the spec's path (for messages)
  std::string name;
  std::string description;
  std::string output;  // from the spec ("" -> <name>.h5)
  json raw;            // the spec as given (HDF5 experiment_json)
  std::vector<RunSpec> runs;
};

}  // namespace wb::app
