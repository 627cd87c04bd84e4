// The event kernel of the asynchronous algorithms (sim/event_kernel.h): the order of
// events (time, kind, tie, scheduling order), Fig. 4's dispatcher replayed on it against the
// reference scheduler (adaptive::schedule_megabatch), the clock that only moves forward, and
// the real mode's threads (algorithms/actor_threads.h: every actor runs, an error reaches the
// caller, stop is seen).
#include <doctest/doctest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <string>
#include <tuple>
#include <vector>

#include "algorithms/actor_threads.h"
#include "algorithms/adaptive_core.h"
#include "sim/event_kernel.h"

using namespace wb;
using wb::algo::ActorThreads;
using wb::sim::Event;
using wb::sim::EventKernel;

TEST_CASE("event kernel: events in (time, kind, tie, scheduling) order; the worked example") {
  sim::EventKernel k;
  std::vector<std::string> seen;
  enum : int { kWrite = 0, kRead = 1 };
  k.on(kWrite, [&](const sim::Event& e) { seen.push_back("write q" + std::to_string(e.actor)); });
  k.on(kRead, [&](const sim::Event& e) { seen.push_back("read q" + std::to_string(e.actor)); });
  k.schedule(1.0, kRead, 0);
  k.schedule(0.5, kWrite, 1);
  k.schedule(1.0, kWrite, 0);
  k.run_until(nullptr, [](const sim::Event&) { return false; });
  CHECK(seen == std::vector<std::string>{"write q1", "write q0", "read q0"});

  // At equal (time, kind): the lower tie first, then the first scheduled.
  seen.clear();
  k.schedule(2.0, kRead, 7, 0, /*tie=*/3);
  k.schedule(2.0, kRead, 8, 0, /*tie=*/1);
  k.schedule(2.0, kRead, 9, 0, /*tie=*/1);
  k.run_until(nullptr, [](const sim::Event&) { return false; });
  CHECK(seen == std::vector<std::string>{"read q8", "read q9", "read q7"});
  CHECK(k.handled() == 6);
}

TEST_CASE("event kernel: the clock moves forward only; no event before the current one") {
  sim::EventKernel k;
  sim::SimClock clock;
  int calls = 0;
  k.on(0, [&](const sim::Event& e) {
    ++calls;
    if (e.actor == 0) clock.advance(10.0);  // e.g. a collective charged by the callback
  });
  k.schedule(1.0, 0, 0);
  k.schedule(5.0, 0, 1);
  k.dispatch(&clock);
  CHECK(clock.now() == 11.0);
  k.dispatch(&clock);
  CHECK(clock.now() == 11.0);  // the event at 5 s does not move the clock back
  CHECK(calls == 2);
  CHECK_THROWS(k.schedule(4.0, 0, 0));  // before the event just handled (5 s)
  CHECK_THROWS(k.schedule(6.0, 3, 0));  // a kind without a callback
  k.schedule(6.0, 0, 0);
  k.clear();
  CHECK(k.empty());
}

TEST_CASE("event kernel: Fig. 4's dispatcher on the kernel is adaptive::schedule_megabatch") {
  // Costs with many exact ties (integer seconds), uneven batch sizes and a cut last batch:
  // the tie key (the worker id) must give the reference's "lower worker id first".
  for (int W : {1, 2, 3, 5}) {
    CAPTURE(W);
    std::vector<int64_t> b;
    for (int i = 0; i < W; ++i) b.push_back(3 + 2 * i);
    const int64_t M = 97;
    auto cost = [](int k, int64_t n) { return static_cast<double>(1 + (k % 2) + (n % 3 == 0)); };
    const auto ref = wb::algo::adaptive::schedule_megabatch(W, M, b, 0.5, cost);

    sim::EventKernel k;
    sim::SimClock clock;
    clock.set(0.5);
    std::vector<double> free_at(static_cast<size_t>(W), 0.5);
    std::vector<std::tuple<int, int64_t, double, double>> got;
    int64_t left = M;
    k.on(0, [&](const sim::Event& e) {
      const auto w = static_cast<size_t>(e.actor);
      const int64_t n = std::min(b[w], left);
      const double c = cost(e.actor, n);
      got.emplace_back(e.actor, n, free_at[w], free_at[w] + c);
      free_at[w] += c;
      left -= n;
      if (left > 0) k.schedule(free_at[w], 0, e.actor, 0, e.actor);
    });
    for (int w = 0; w < W; ++w) k.schedule(0.5, 0, w, 0, w);
    k.run_until(&clock, [&](const sim::Event&) { return left == 0; });
    REQUIRE(got.size() == ref.batches.size());
    for (size_t i = 0; i < got.size(); ++i) {
      CAPTURE(i);
      CHECK(std::get<0>(got[i]) == ref.batches[i].worker);
      CHECK(std::get<1>(got[i]) == ref.batches[i].size);
      CHECK(std::get<2>(got[i]) == ref.batches[i].start);
      CHECK(std::get<3>(got[i]) == ref.batches[i].end);
    }
  }
}

TEST_CASE("event kernel real: every actor runs once, actor 0 on the caller's thread") {
  ActorThreads t;
  std::vector<std::atomic<int>> ran(6);
  const auto caller = std::this_thread::get_id();
  std::atomic<bool> zero_on_caller{false};
  t.run_all(6, [&](int a) {
    ran[static_cast<size_t>(a)].fetch_add(1);
    if (a == 0) zero_on_caller = std::this_thread::get_id() == caller;
  });
  for (auto& r : ran) CHECK(r.load() == 1);
  CHECK(zero_on_caller.load());
  CHECK(t.joined());
}

TEST_CASE("event kernel real: a thread's error stops the others and reaches the caller") {
  ActorThreads t;
  std::atomic<int> loops{0};
  t.start(4, [&](int a) {
    if (a == 2) throw std::runtime_error("actor 2 failed");
    while (!t.stopping()) loops.fetch_add(1);  // stops because actor 2 failed
  });
  CHECK_THROWS_WITH(t.join(), "actor 2 failed");
  CHECK(t.stopping());
  // run_all: an error on the caller's own actor is rethrown after the others are joined.
  ActorThreads u;
  std::atomic<int> others{0};
  CHECK_THROWS_WITH(u.run_all(3, [&](int a) {
    if (a == 0) throw std::runtime_error("actor 0 failed");
    others.fetch_add(1);
  }),
                    "actor 0 failed");
  CHECK(others.load() == 2);
}
