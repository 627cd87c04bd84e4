// The event kernel (event_kernel.h has the description).
#include "sim/event_kernel.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace wb::sim {

void EventKernel::on(int kind, Callback cb) {
  WB_ASSERT(kind >= 0, "event kinds are 0, 1, ...");
  if (cb_.size() <= static_cast<size_t>(kind)) cb_.resize(static_cast<size_t>(kind) + 1);
  cb_[static_cast<size_t>(kind)] = std::move(cb);
}

void EventKernel::schedule(double t, int kind, int actor, int sub, int tie) {
  // An event in the past would be handled out of order: simulated time moves forward only.
  WB_ASSERT(t >= now_, "event scheduled at " + std::to_string(t) + " s, before the current " +
                           std::to_string(now_) + " s");
  WB_ASSERT(kind >= 0 && static_cast<size_t>(kind) < cb_.size() && cb_[static_cast<size_t>(kind)],
            "event kind " + std::to_string(kind) + " has no callback");
  q_.push(Event{t, kind, tie, seq_++, actor, sub});
}

Event EventKernel::dispatch(SimClock* clock) {
  const Event e = q_.top();
  q_.pop();
  now_ = e.t;
  ++handled_;
  if (clock) clock->set(std::max(clock->now(), e.t));
  cb_[static_cast<size_t>(e.kind)](e);
  return e;
}

void EventKernel::clear() {
  while (!q_.empty()) q_.pop();
}

}  // namespace wb::sim
