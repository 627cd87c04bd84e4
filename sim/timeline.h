// Events on the simulated clock, for `workbench run --timeline` (DESIGN.md section 12) and
// for anything that wants to look at where simulated time goes.
//
// The clock (sim/clock.h) emits every priced event to an EventSink when one is
// attached: collectives on kCollectiveTrack, the clock's own advances (a sync step's slowest
// compute, or any other advance/set) on kStepTrack -- those two tracks together sum to
// sim_s -- and, for synchronous steps, each worker's compute and straggler wait on the
// worker's own track (track = worker id, the first SimClock::kMaxWorkerTracks workers).
//
// An algorithm with its own schedule (the asynchronous engines: LAP/LPP, Adaptive/Elastic)
// emits per-worker events itself:
//     if (auto* s = ctx.clock.sink()) s->event({worker, EventKind::kCompute, "batch", t0, dur});
// and an averaging round as {kCollectiveTrack, EventKind::kAverage, "average", t0, dur}.
// Emitting never changes simulated time: the sink only records.
#pragma once

#include <string>

namespace wb::sim {

enum class EventKind { kCompute, kComm, kWait, kAverage };
inline const char* event_kind_name(EventKind k) {
  switch (k) {
    case EventKind::kCompute: return "compute";
    case EventKind::kComm: return "comm";
    case EventKind::kWait: return "wait";
    case EventKind::kAverage: return "average";
  }
  return "?";
}

inline constexpr int kCollectiveTrack = -1;  // collectives and averaging rounds
inline constexpr int kStepTrack = -2;        // the clock's non-communication advances

struct SimEvent {
  int track = 0;  // worker id >= 0, or kCollectiveTrack / kStepTrack
  EventKind kind = EventKind::kCompute;
  std::string name;
  double start_s = 0;  // simulated seconds since the run's start
  double dur_s = 0;
};

class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void event(const SimEvent& e) = 0;
};

}  // namespace wb::sim
