// The real mode of the asynchronous algorithms: the same read / compute / write callbacks the
// simulated mode hands to the event kernel (sim/event_kernel.h), run by one thread per actor
// (an updater, a worker) on the wall clock, with the stop flag, the join and the first
// thread's error carried back to the runner's thread, which is where every collective is
// called (funneled threading: the actors never communicate).
#pragma once

#include <atomic>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace wb::algo {

// One thread per actor, each running body(actor) once (the body loops over its reads,
// computes and writes until it is done or stopping() turns true). The first exception a body
// throws is kept, stops the others and is rethrown on the runner's thread by rethrow() /
// join(). Destruction stops and joins.
class ActorThreads {
 public:
  using Body = std::function<void(int actor)>;
  ActorThreads() = default;
  ActorThreads(const ActorThreads&) = delete;
  ActorThreads& operator=(const ActorThreads&) = delete;
  ~ActorThreads();

  // Starts actors [0, n) on threads of their own and returns.
  void start(int n, Body body);
  // Runs actors [0, n): 1..n-1 on threads, actor 0 on the calling thread (the runner's, whose
  // pass scratch it may use); returns when all are done, rethrowing the first error.
  void run_all(int n, Body body);
  bool stopping() const { return stop_.load(std::memory_order_relaxed); }
  void stop() { stop_.store(true); }
  // Joins every thread, then rethrows the first error, if any.
  void join();
  // Stops and joins every thread, dropping any error (destructors: nothing may throw).
  void halt() noexcept;
  bool started() const { return started_; }
  bool joined() const { return joined_; }
  // Rethrows (once) an error a thread has thrown so far; the threads keep stopping.
  void rethrow();

 private:
  void guarded(const Body& body, int actor);
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  std::mutex err_mu_;
  std::exception_ptr err_;
  bool started_ = false, joined_ = false;
};

}  // namespace wb::algo
