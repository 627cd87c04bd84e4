// `workbench run --timeline FILE`: the runs' events on the simulated clock
// (sim/timeline.h) in the Chrome trace-event format ("JSON Object Format", complete
// events ph "X", times in microseconds), which Perfetto (ui.perfetto.dev) and
// chrome://tracing open. One process per run (pid = the run's index, named by its id), one
// thread per track: "steps" (the clock's non-communication advances), "collectives", and
// "worker k" for the first SimClock::kMaxWorkerTracks workers. The "steps" and
// "collectives" tracks together sum to the run's sim_s; otherData.runs holds each run's
// sim_s and its breakdown (compute, comm, wait) for checks and plots.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/timeline.h"

namespace wb::app {

class TimelineWriter {
 public:
  TimelineWriter();
  ~TimelineWriter();
  // The sink for run `id` (index: its place in the sweep); events until end_run.
  sim::EventSink* begin_run(const std::string& id, int64_t index);
  void end_run(double sim_s, double compute_s, double comm_s, double wait_s);
  bool empty() const;
  // Writes the trace (whole file to FILE.tmp, then renamed: nothing half-written).
  void write(const std::string& path) const;

 private:
  struct Run;
  std::vector<std::unique_ptr<Run>> runs_;
};

}  // namespace wb::app
