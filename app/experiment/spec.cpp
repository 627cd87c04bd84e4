#include "app/experiment/spec.h"

#include <set>

#include "sim/cost_model.h"

namespace wb::app {

Experiment parse_experiment(const std::string& text, const std::string& file) {
  Experiment e;
  e.file = file;
  json raw = parse_spec_text(text, file);  // app/experiment/spec_text.cpp: the text's hygiene
  const core::Where root{file, "$"};
  if (!raw.is_object()) root.fail("expected an object with \"name\" and \"base\"");
  static const std::set<std::string> kTop = {"name", "description", "output", "base", "sweep"};
  for (auto it = raw.begin(); it != raw.end(); ++it)
    if (!kTop.count(it.key()))
      root.key(it.key()).fail("unknown key \"" + it.key() +
                              "\" (known: name, description, output, base, sweep)");
  if (!raw.contains("name")) root.fail("missing key \"name\"");
  parse_value(raw["name"], e.name, root.key("name"));
  if (e.name.empty() || e.name.find('/') != std::string::npos)
    root.key("name").fail("must be a non-empty name without '/'");
  if (raw.contains("description"))
    parse_value(raw["description"], e.description, root.key("description"));
  if (raw.contains("output")) parse_value(raw["output"], e.output, root.key("output"));
  if (!raw.contains("base")) root.fail("missing key \"base\" (the run config)");
  e.raw = raw;

  json base_resolved;
  // The base's cross-field rules are checked per run (in the expansion): a sweep may
  // replace its values.
  (void)parse_run_config(raw["base"], root.key("base"), &base_resolved, false);
  expand_sweep(e, base_resolved);  // app/experiment/sweep_expansion.cpp
  // A cost profile's contents are part of the run (sim/cost_model.h cached_cost_profile):
  // each run's config records the hash of the bytes its sim_s is priced with, so --resume
  // refuses a profile edited since, like any other config change.
  for (RunSpec& r : e.runs)
    if (!r.cfg.clock.profile.empty() && r.resolved_at("clock").is_object()) {
      json clock = r.resolved_at("clock");
      clock["profile_fnv1a64"] = sim::cached_cost_profile(r.cfg.clock.profile).fnv1a64;
      r.set_resolved_field("clock", std::move(clock));
    }
  return e;
}

Experiment load_experiment(const std::string& path) { return parse_experiment(read_spec_file(path), path); }

}  // namespace wb::app
