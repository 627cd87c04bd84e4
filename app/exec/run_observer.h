// What a run tells whoever executes it, while it runs: handed to execute_run
// (app/exec/training_loop.h) with the run rather than held in globals, so two runs of one
// process never see each other's observer and nothing is left pointing into a frame that
// has ended. The runner (app/exec/runner.cpp) implements it; the training loop includes only
// this header, not the runner's or the recorder's.
#pragma once

#include <cstdint>
#include <string>

#include "sim/timeline.h"

namespace wb::app {

class RunObserver {
 public:
  virtual ~RunObserver() = default;
  // Called between training steps (at most every 10 ms) on every rank of the run: the runner
  // journals other rank groups' finished runs on world rank 0 as they arrive and passes stop
  // notices between rank groups here, so neither waits for a long run to end.
  virtual void between_steps() {}
  // `run --timeline`: the run's lead rank (rank 0 of its communicator) records its
  // simulated-clock events into the sink returned for run `id` (index: its place in the
  // sweep); nullptr: no timeline. A run that got a sink ends it with end_timeline.
  virtual sim::EventSink* begin_timeline(const std::string& /*id*/, int64_t /*index*/) {
    return nullptr;
  }
  // The run's sim_s and its breakdown (compute, communication, waiting).
  virtual void end_timeline(double /*sim_s*/, double /*compute_s*/, double /*comm_s*/,
                            double /*wait_s*/) {}
};

}  // namespace wb::app
