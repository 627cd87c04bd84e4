// The event kernel of the asynchronous algorithms (DESIGN.md section 12): LAP/LPP-SGD
// (algorithms/async_engine*.cpp), Adaptive SGD (adaptive_sgd.cpp), Elastic SGD (elastic_sgd.cpp)
// and any new scheme order their events through it instead of writing an event loop of their own.
//
// EventKernel is a discrete-event queue on the simulated clock. An algorithm registers one
// callback per event kind (read, write, averaging round, merge, ... -- the kinds are the
// algorithm's, the kernel only orders them) and schedules events; the kernel hands them back
// in a total order, moving the clock forward to each event's time. Deterministic: the order
// depends only on the scheduled (time, kind, tie) values and the order of scheduling, never on
// the machine, so every rank replays the same schedule and curves do not depend on the number
// of ranks. The same callbacks run on the wall clock in the algorithms' real mode
// (algorithms/actor_threads.h), which is why the kernel prices nothing but time.
//
// Order of events: (t, kind, tie, seq), smallest first. kind is the algorithm's priority at
// equal times (LAP-SGD: writes, then averaging rounds, then reads, so that with one updater
// and free communication a round sits exactly between a step and the next read, as in local
// SGD); tie breaks equal (t, kind) by a key of the algorithm's choice (Adaptive SGD's
// dispatcher: the lower worker id, Fig. 4 of "Adaptive SGD for heterogeneous GPUs" section
// 3.1); seq is the scheduling order (first scheduled, first handled).
// Worked example: schedule (1.0, read, q0), (0.5, write, q1), (1.0, write, q0): handled
// write q1 @0.5, write q0 @1.0, read q0 @1.0 -- at t = 1.0 the write goes first although it
// was scheduled last.
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

#include "sim/clock.h"

namespace wb::sim {

struct Event {
  double t = 0;     // simulated seconds
  int kind = 0;     // the algorithm's event kind: lower kinds first at equal times
  int tie = 0;      // then the lower tie key
  int64_t seq = 0;  // then the order of scheduling
  int actor = 0;    // who (the algorithm's meaning: worker q)
  int sub = 0;      // and which of its streams (updater u)
  bool operator>(const Event& o) const {
    if (t != o.t) return t > o.t;
    if (kind != o.kind) return kind > o.kind;
    if (tie != o.tie) return tie > o.tie;
    return seq > o.seq;
  }
};

class EventKernel {
 public:
  using Callback = std::function<void(const Event&)>;

  // The callback of event kind `kind` (0, 1, ...): called once per event of that kind, in
  // the kernel's order. A callback may schedule further events, at its own time or later.
  void on(int kind, Callback cb);
  // An event at time t (never before the event being handled: simulated time only moves
  // forward; checked).
  void schedule(double t, int kind, int actor, int sub = 0, int tie = 0);

  bool empty() const { return q_.empty(); }
  const Event& next() const { return q_.top(); }
  // Pops the next event, moves the clock (if any) forward to its time -- never back, so an
  // algorithm may have charged the clock beyond it, e.g. a collective -- and calls its
  // callback. Returns the event handled.
  Event dispatch(SimClock* clock);
  // dispatch() until the queue is empty or stop(next event) says to stop before it.
  template <class Stop>
  void run_until(SimClock* clock, Stop&& stop) {
    while (!q_.empty() && !stop(q_.top())) dispatch(clock);
  }
  // Drops every pending event (a mega-batch that is complete although some of its workers'
  // next events were scheduled). The sequence counter keeps counting.
  void clear();
  int64_t handled() const { return handled_; }
  double now() const { return now_; }  // time of the last event handled

 private:
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> q_;
  std::vector<Callback> cb_;
  int64_t seq_ = 0, handled_ = 0;
  double now_ = 0;
};

}  // namespace wb::sim
