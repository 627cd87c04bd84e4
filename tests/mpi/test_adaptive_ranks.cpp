// adaptive_sgd (simulated mode) and elastic_sgd must not depend on the number of MPI
// ranks: every rank simulates the whole dispatch schedule, trains only its own workers,
// and merges through the collectives (DESIGN.md section 2). The same run on
// MPI_COMM_WORLD (R = 1 or 2) and on MPI_COMM_SELF gives the same curves, per-worker
// series (batch sizes, updates, merge weights, ...) and final parameters (bit-identical).
#include <string>

#include "tests/mpi/rank_invariance.h"

using namespace wb;
using test::check_same_run;
using test::run_world_and_self;
using test::world_size;

TEST_CASE("adaptive_sgd and elastic_sgd are independent of the rank count") {
  const int R = world_size();
  const char* algos[] = {
      R"({"name": "adaptive_sgd", "megabatch": 24})",
      R"({"name": "adaptive_sgd", "megabatch": 24, "initial_batch": 8, "pert_thr": 1.0})",
      R"({"name": "elastic_sgd", "megabatch": 24, "gamma": 0.5})"};
  for (const char* algo : algos) {
    for (int W : {2, 3, 4}) {
      if (W < R) continue;
      const std::string spec =
          std::string(R"({"name": "t", "base": {"model": {"name": "sparse_mlp", "hidden": [12],
          "synthetic": {"train_size": 600, "test_size": 100, "features": 120, "labels": 12, "nnz": 10}},
          "batch_size": 16, "lr": 0.3, "steps": 5, "eval_every": 1, "seed": 4,
          "heterogeneity": {"speeds": [1.0, 0.7, 0.85], "jitter": {"dist": "lognormal", "sigma": 0.2}},
          "workers": )") + std::to_string(W) + R"(, "algorithm": )" + algo + "}}";
      INFO(std::string(algo) << " W=" << W << " R=" << R);
      const auto r = run_world_and_self(spec);
      REQUIRE(r.world.status == "completed");
      check_same_run(r);
  
    }
  }
}
