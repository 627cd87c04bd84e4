// The actors' threads (actor_threads.h has the description). This file registers no
// algorithm: CMakeLists.txt exempts it from the one-algorithm-per-file check, as it does
// algorithm.cpp and async_engine*.cpp.
#include "algorithms/actor_threads.h"

namespace wb::algo {

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
