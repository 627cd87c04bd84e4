// Results must not depend on the number of MPI ranks (DESIGN.md section 2): the same
// run on MPI_COMM_WORLD (R = 1 or 2 ranks) and on MPI_COMM_SELF (R = 1) gives the same
// curves and final parameters (to 1e-6 relative; in fact bit-identical, because the
// in-rank/cross-rank split follows one reduction tree).
#include <string>

#include "tests/mpi/rank_invariance.h"

using namespace wb;
using test::check_same_run;
using test::run_world_and_self;
using test::world_size;

TEST_CASE("sync_sgd and adasum curves are independent of the rank count") {
  const int R = world_size();
  for (const char* algo : {"{\"name\": \"sync_sgd\", \"combine\": \"sum\"}", "\"sync_sgd\"", "\"adasum\""}) {
    for (int W : {2, 3, 5, 8}) {
      if (W < R) continue;
      for (const char* model : {"quadratic", "cubic"}) {
        const std::string spec = std::string(R"({"name": "t", "base": {"model": ")") + model +
                                 R"(", "batch_size": 3, "lr": 0.02, "steps": 40, "workers": )" +
                                 std::to_string(W) + R"(, "algorithm": )" + algo + "}}";
        INFO(algo << " W=" << W << " model=" << model << " R=" << R);
        const auto r = run_world_and_self(spec);
        REQUIRE(r.world.series.size() == 1);
        check_same_run(r);
      }
    }
  }
}

TEST_CASE("diagnostics are independent of the rank count") {
  const int R = world_size();
  for (int W : {2, 3, 5}) {
    if (W < R) continue;
    for (const char* k : {"\"all\"", "2"}) {
      const std::string spec =
          std::string(R"({"name": "t", "base": {"model": "cubic", "batch_size": 3, "lr": 0.02,
          "steps": 6, "algorithm": "adasum", "workers": )") + std::to_string(W) +
          R"(, "metrics": {"orthogonality": {"every": 2}, "diversity": {"every": 1},
          "seq_emulation": {"every": 3, "workers": )" + k + "}}}}";
      INFO("W=" << W << " k=" << k);
      check_same_run(run_world_and_self(spec));
    }
  }
}
