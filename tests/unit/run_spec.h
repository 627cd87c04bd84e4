// Helpers for unit tests that run one small experiment in-process and read its series
// (test_adasum_delta, test_diloco, test_lap_lpp, test_lm_training, test_local_sgd).
#pragma once

#include <mpi.h>

#include <string>

#include <doctest/doctest.h>
#include "app/exec/runner.h"
#include "app/exec/training_loop.h"
#include "app/plan/sweep_plan.h"
#include "app/experiment/spec.h"

namespace wb::test {

// The one run of {"name": "t", "base": {<base_fields>}} on MPI_COMM_SELF.
inline app::RunResult run_spec(const std::string& base_fields) {
  const std::string spec = R"({"name": "t", "base": {)" + base_fields + "}}";
  auto e = app::parse_experiment(spec, "t.json");
  REQUIRE(e.runs.size() == 1);
  app::TaskCache cache;
  return app::execute_run(e.runs[0], cache.get(e.runs[0].cfg.model.value()), MPI_COMM_SELF, nullptr);
}

// The run's series at `path`, or nullptr.
inline const core::Series* find(const app::RunResult& r, const std::string& path) {
  for (const auto& s : r.series)
    if (s.path == path) return &s;
  return nullptr;
}

}  // namespace wb::test
