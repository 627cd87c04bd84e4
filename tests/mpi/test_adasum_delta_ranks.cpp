// Adasum on optimizer deltas and sync_sgd with Adam/LAMB are synchronous algorithms, so
// their curves must not depend on the number of MPI ranks (DESIGN.md section 2): the same
// run on MPI_COMM_WORLD (R = 1 or 2) and on MPI_COMM_SELF (R = 1) agrees to 1e-6 relative.
// Each worker's optimizer state lives with the worker, wherever its rank is.
#include <string>

#include "tests/mpi/rank_invariance.h"

using namespace wb;
using test::check_same_run;
using test::run_world_and_self;
using test::world_size;

TEST_CASE("adasum delta and sync_sgd + adam/lamb curves are independent of the rank count") {
  const int R = world_size();
  const char* algos[] = {
      R"({"name": "adasum", "apply": "delta"})",
      R"({"name": "adasum", "apply": "delta", "local_steps": 2, "local_steps_mode": "optimizer_steps"})",
      R"({"name": "adasum", "apply": "delta", "local_steps": 2, "granularity": "model"})",
      R"({"name": "sync_sgd", "local_steps": 2})",
      R"("sync_sgd")",
  };
  const char* opts[] = {R"("adam")", R"({"name": "lamb", "weight_decay": 0.01})",
                        R"({"name": "sgd", "momentum": 0.9, "nesterov": true})"};
  for (const char* algo : algos) {
    for (const char* opt : opts) {
      for (int W : {2, 3, 5}) {
        if (W < R) continue;
        const std::string spec =
            std::string(R"({"name": "t", "base": {"model": "cubic", "batch_size": 3, "lr": 0.02,
            "steps": 25, "schedule": {"name": "warmup_linear", "warmup": 0.2}, "workers": )") +
            std::to_string(W) + R"(, "algorithm": )" + algo + R"(, "optimizer": )" + opt + "}}";
        INFO(std::string(algo) << " " << opt << " W=" << W << " R=" << R);
        const auto r = run_world_and_self(spec);
        REQUIRE(r.world.status == "completed");
        REQUIRE(r.world.series.size() == 1);
        check_same_run(r);
      }
    }
  }
}
