// The event kernel (event_kernel.h has the description). This file registers no algorithm:
// it is the kernel the asynchronous algorithms run on (CMakeLists.txt exempts it from the
// one-algorithm-per-file check, as it does async_engine*.cpp).
#include "algorithms/event_kernel.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace wb::algo {

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

Event EventKernel::dispatch(rt::SimClock* clock) {
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

// ---------------------------------------------------------------- real mode
ActorThreads::~ActorThreads() { halt(); }

void ActorThreads::halt() noexcept {
  stop();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

void ActorThreads::guarded(const Body& body, int actor) {
  try {
    body(actor);
  } catch (...) {
    std::lock_guard<std::mutex> lock(err_mu_);
    if (!err_) err_ = std::current_exception();
    stop();
  }
}

void ActorThreads::start(int n, Body body) {
  started_ = true;
  joined_ = false;
  // The body is shared by the threads (each gets its own copy of the std::function).
  for (int a = 0; a < n; ++a) threads_.emplace_back([this, body, a] { guarded(body, a); });
}

void ActorThreads::run_all(int n, Body body) {
  stop_.store(false);
  start(n > 0 ? n - 1 : 0, [&body](int a) { body(a + 1); });
  if (n > 0) guarded(body, 0);
  join();
}

void ActorThreads::join() {
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
  joined_ = true;
  rethrow();
}

void ActorThreads::rethrow() {
  std::lock_guard<std::mutex> lock(err_mu_);
  if (err_) {
    auto e = err_;
    err_ = nullptr;
    std::rethrow_exception(e);
  }
}

}  // namespace wb::algo
