// A run reports, while it runs, to the RunObserver handed to execute_run
// (app/exec/run_observer.h) and to nothing else: nothing process-wide is left behind, so a
// later run without an observer reports nowhere and observing does not change a run.
#include <doctest/doctest.h>

#include <mpi.h>

#include <chrono>
#include <string>
#include <thread>

#include "app/exec/run_observer.h"
#include "app/exec/training_loop.h"
#include "app/plan/sweep_plan.h"  // TaskCache
#include "app/results/timeline_writer.h"
#include "app/experiment/spec.h"

using namespace wb;

namespace {

// Records the run's timeline as `run --timeline` does and counts the calls. Its
// begin_timeline (called while the run is set up) outlasts the 10 ms the loop leaves between
// two between_steps calls, so the run's first step must call between_steps.
class CountingObserver final : public app::RunObserver {
 public:
  int between = 0, begun = 0, ended = 0;
  app::TimelineWriter timeline;

  void between_steps() override { ++between; }
  sim::EventSink* begin_timeline(const std::string& id, int64_t index) override {
    ++begun;
    std::this_thread::sleep_for(std::chrono::milliseconds(15));
    return timeline.begin_run(id, index);
  }
  void end_timeline(double sim_s, double compute_s, double comm_s, double wait_s) override {
    ++ended;
    timeline.end_run(sim_s, compute_s, comm_s, wait_s);
  }
};

}  // namespace

TEST_CASE("a run reports to the RunObserver it is given, and to nothing else") {
  const auto e = app::parse_experiment(
      R"({"name": "o", "base": {"model": {"name": "quadratic", "train_size": 4096},
          "workers": 2, "batch_size": 4, "steps": 50}})",
      "o.json");
  app::TaskCache cache;
  const models::Task& task = cache.get(e.runs[0].cfg.model.value());

  CountingObserver obs;
  const app::RunResult r = app::execute_run(e.runs[0], task, MPI_COMM_SELF, nullptr, &obs);
  CHECK(r.status == "completed");
  CHECK(obs.begun == 1);
  CHECK(obs.ended == 1);
  CHECK_FALSE(obs.timeline.empty());
  CHECK(obs.between >= 1);

  const int between = obs.between;
  const app::RunResult r2 = app::execute_run(e.runs[0], task, MPI_COMM_SELF, nullptr);
  CHECK(r2.status == "completed");
  CHECK(obs.between == between);
  CHECK(obs.begun == 1);
  CHECK(obs.ended == 1);
  CHECK(r2.sim_s == r.sim_s);
  CHECK(r2.summary["final_train_loss"] == r.summary["final_train_loss"]);
}
