// Shared scaffolding of the rank-invariance tests (DESIGN.md section 2): results must not
// depend on the number of MPI ranks. Each test runs one spec on MPI_COMM_WORLD (R = 1 or 2
// ranks under mpirun) and on MPI_COMM_SELF (R = 1) and compares the two with same_run().
#pragma once

#include <doctest/doctest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "app/exec/runner.h"
#include "app/exec/training_loop.h"
#include "app/plan/sweep_plan.h"
#include "app/experiment/spec.h"

namespace wb::test {

// Relative difference; two NaNs (a test loss not evaluated at that step) count as equal.
inline double rel(double a, double b) {
  if (std::isnan(a) && std::isnan(b)) return 0;
  const double d = std::fabs(a - b), s = std::max(std::fabs(a), std::fabs(b));
  return s == 0 ? d : d / s;
}

inline int world_size() {
  int R = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &R);
  return R;
}

struct WorldAndSelf {
  app::RunResult world, self;
};

// The first run of `spec_json` on both communicators.
inline WorldAndSelf run_world_and_self(const std::string& spec_json) {
  auto e = app::parse_experiment(spec_json, "t.json");
  app::TaskCache cache;
  const auto& rs = e.runs[0];
  const auto& task = cache.get(rs.cfg.model.value());
  WorldAndSelf r;
  r.world = app::execute_run(rs, task, MPI_COMM_WORLD, nullptr);
  r.self = app::execute_run(rs, task, MPI_COMM_SELF, nullptr);
  return r;
}

// Curves (train/test loss, test accuracy, samples) and every series except wall-clock ones
// to `tol` relative; the simulated clock and the final parameters exactly (one global
// schedule, one reduction tree for every R: they are bit-identical, so a looser check
// would hide a real layout dependence).
inline void check_same_run(const WorldAndSelf& r, double tol = 1e-6) {
  const app::RunResult& w = r.world;
  const app::RunResult& s = r.self;
  REQUIRE(w.status == s.status);
  REQUIRE(w.curves.size() == s.curves.size());
  for (size_t i = 0; i < w.curves.size(); ++i) {
    CHECK(rel(w.curves.train_loss[i], s.curves.train_loss[i]) <= tol);
    CHECK(rel(w.curves.test_loss[i], s.curves.test_loss[i]) <= tol);
    CHECK(rel(w.curves.test_accuracy[i], s.curves.test_accuracy[i]) <= tol);
    CHECK(w.curves.samples[i] == s.curves.samples[i]);
    CHECK(w.curves.sim_s[i] == s.curves.sim_s[i]);
  }
  REQUIRE(w.series.size() == s.series.size());
  for (size_t k = 0; k < w.series.size(); ++k) {
    const auto& a = w.series[k];
    const auto& b = s.series[k];
    REQUIRE(a.path == b.path);
    if (a.path.find("wall") != std::string::npos) continue;  // this machine's time
    INFO(a.path);
    REQUIRE(a.data.size() == b.data.size());
    for (size_t i = 0; i < a.data.size(); ++i) {
      if (a.path == "final_params")
        CHECK(a.data[i] == b.data[i]);
      else
        CHECK(rel(a.data[i], b.data[i]) <= tol);
    }
  }
  if (w.summary.contains("final_test_loss") && s.summary.contains("final_test_loss") &&
      w.summary["final_test_loss"].is_number())
    CHECK(rel(w.summary["final_test_loss"].get<double>(),
              s.summary["final_test_loss"].get<double>()) <= tol);
}

}  // namespace wb::test
