// Rank invariance of diloco and streaming_diloco (DESIGN.md section 2): both are synchronous
// (every round is one tree allreduce over all W workers, the schedule and the clock's overlap
// are functions of the step), so a run on MPI_COMM_WORLD (-n 1 or -n 2) and on MPI_COMM_SELF
// gives the same curves, simulated clock, rounds and final parameters. Each of streaming's
// keys is varied here: fragments, delay, merge, every quantization, every outer optimizer.
#include <string>

#include "tests/mpi/rank_invariance.h"

using namespace wb;
using test::check_same_run;
using test::run_world_and_self;
using test::world_size;

TEST_CASE("diloco and streaming_diloco are independent of the rank count") {
  const int R = world_size();
  for (const char* algo :
       {R"({"name": "diloco", "sync_every": 3})",
        R"({"name": "streaming_diloco", "sync_every": 4, "num_fragments": 2, "fragment_sync_delay": 1,
            "fragment_update_alpha": 0.5})",
        R"({"name": "streaming_diloco", "sync_every": 3, "num_fragments": 3, "fragment_sync_delay": 2,
            "quantize_bits": 4, "outer": "adam", "outer_lr": 0.1})",
        R"({"name": "streaming_diloco", "sync_every": 5, "quantize_bits": 16, "fragment_update_alpha": 0.3})",
        R"({"name": "streaming_diloco", "sync_every": 4, "num_fragments": 2, "quantize_bits": 8,
            "outer": "sgd", "outer_lr": 1.0, "fragment_sync_delay": 3})"}) {
    for (int W : {2, 3, 5}) {
      if (W < R) continue;
      // A slow link (10 MB/s) so that the overlapped rounds stick out of the compute on the clock.
      const std::string spec =
          std::string(R"({"name": "t", "base": {"model": "cubic", "batch_size": 3, "lr": 0.02,
          "steps": 30, "eval_every": 5, "optimizer": {"name": "sgd", "momentum": 0.9},
          "clock": {"intra_bandwidth_bytes_per_s": 1e7, "intra_latency_s": 1e-5},
          "heterogeneity": {"speeds": [1, 0.7], "jitter": {"dist": "uniform", "sigma": 0.2}},
          "workers": )") + std::to_string(W) + R"(, "algorithm": )" + algo + "}}";
      INFO(algo << " W=" << W << " R=" << R);
      check_same_run(run_world_and_self(spec));
    }
  }
}
