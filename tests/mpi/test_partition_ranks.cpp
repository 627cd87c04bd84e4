// Rank invariance of the data partitions (DESIGN.md section 2, train/partition.h): every
// rank makes the whole partition from the run's seed and takes its own workers' parts, so a
// run with `partition` dirichlet, shards or contiguous gives the same curves, the same final
// model and the same partition/label_counts on MPI_COMM_WORLD (-n 1 or -n 2) as on
// MPI_COMM_SELF, for a synchronous algorithm and for one that samples for its workers
// itself (simulated lap_sgd's updaters).
#include <filesystem>
#include <string>

#include "tests/labelled_idx.h"
#include "tests/mpi/rank_invariance.h"

using namespace wb;
using test::check_same_run;
using test::run_world_and_self;
using test::world_size;

TEST_CASE("dirichlet, shards and contiguous partitions are independent of the rank count") {
  const int R = world_size();
  // Each rank writes its own copy (the same bytes): no rank waits on another's files.
  const std::string dir = test::make_labelled_idx_dir(300, 40);
  REQUIRE(!dir.empty());
  for (const char* part : {R"({"name": "dirichlet", "alpha": 0.3, "min_partition_size": 5})",
                           R"({"name": "shards", "shards_per_worker": 2})", R"("contiguous")"}) {
    for (const char* algo : {R"("sync_sgd")", R"({"name": "lap_sgd", "updaters": 2, "H": 2})"}) {
      const int W = 3;
      if (W < R) continue;
      const std::string spec =
          std::string(R"({"name": "t", "base": {"model": {"name": "lenet5", "data_dir": ")") + dir +
          R"("}, "batch_size": 4, "lr": 0.05, "steps": 6, "eval_every": 3, "workers": 3, "partition": )" + part +
          R"(, "algorithm": )" + algo + "}}";
      INFO(part << " " << algo << " R=" << R);
      const auto r = run_world_and_self(spec);
      check_same_run(r);
      bool counts = false;
      for (const auto& s : r.world.series) counts = counts || s.path == "partition/label_counts";
      CHECK(counts);
    }
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("gpt with contiguous text shards is independent of the rank count") {
  const int R = world_size();
  const std::string dir = test::make_labelled_idx_dir(1, 1);  // a private directory
  REQUIRE(!dir.empty());
  const std::string text = dir + "/text.txt";
  {
    std::ofstream f(text);
    for (int i = 0; i < 400; ++i) f << "line " << i << ": in the beginning was the word " << (i * 7919 % 1000) << "\n";
  }
  for (int W : {2, 3}) {
    if (W < R) continue;
    const std::string spec =
        std::string(R"({"name": "t", "base": {"model": {"name": "gpt", "layers": 1, "heads": 2, "d_model": 16,
        "block": 16, "eval_windows": 50, "data_path": ")") + text +
        R"("}, "optimizer": "adamw", "batch_size": 4, "lr": 0.003, "steps": 5, "eval_every": 5, "partition": "contiguous",
        "workers": )" + std::to_string(W) + "}}";
    INFO("W=" << W << " R=" << R);
    check_same_run(run_world_and_self(spec));
  }
  std::filesystem::remove_all(dir);
}
