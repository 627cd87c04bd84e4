// An in-process transport for the cross-rank schedules (comm/rvhdd.h): the run's R ranks as R
// threads of one process, messages as memory copies. It runs the exact schedules MPI runs (the
// same chunking, the same order of every floating-point operation) at any rank count, where a
// machine has fewer cores than ranks and busy-polling MPI ranks cannot share them: the tests
// check the fold, the aligned and the split schedules at 2-16 ranks against the one-rank tree.
//
// Sends are buffered (isend copies and completes at once), so no schedule can deadlock on
// them; a receive waits until its message arrives, and gives up with an error after
// kTimeoutS, so a schedule that forgets a message fails instead of hanging.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "comm/layout.h"
#include "comm/rvhdd.h"

namespace wb::comm {

// What the R threads share: the plan of every rank, the message channels and the groups'
// sums.
class LoopbackNet {
 public:
  static constexpr double kTimeoutS = 60.0;
  explicit LoopbackNet(const Layout& layout);
  const Layout& layout() const { return layout_; }
  const rvhdd::Plan& plan(int rank) const { return plans_[static_cast<size_t>(rank)]; }

  // Runs f(rank) on one thread per rank and waits for all; the first exception thrown by
  // any of them is rethrown here (after every thread has ended).
  void run(const std::function<void(int rank)>& f);

  using Key = std::tuple<int, int, int>;  // source rank, destination rank, tag
  void post(const Key& k, const void* p, size_t bytes);          // a send, copied now
  uint64_t ticket(const Key& k);                                  // a receive's place in order
  void take(const Key& k, uint64_t seq, void* p, size_t bytes);  // waits for it, copies it
  // v <- the element-wise sum over the level's group, in position order (the same on every
  // member); `round` counts this rank's calls at this level.
  void group_sum(const rvhdd::Plan& c, size_t level, uint64_t round, double* v, size_t n);

 private:
  struct Channel {
    uint64_t sent = 0, posted = 0;
    std::map<uint64_t, std::vector<unsigned char>> msgs;
  };
  struct Slot {
    std::map<int, std::vector<double>> parts;  // by position
    std::vector<double> total;
    int readers = 0;
  };
  Layout layout_;
  std::vector<rvhdd::Plan> plans_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<Key, Channel> channels_;
  std::map<std::tuple<size_t, int, uint64_t>, Slot> slots_;  // level, group, round
};

// One rank's view of a LoopbackNet: the Transport of comm/rvhdd.h.
class LoopbackTransport {
 public:
  LoopbackTransport(LoopbackNet& net, int rank) : net_(net), rank_(rank) {}
  const rvhdd::Plan& plan() const { return net_.plan(rank_); }

  struct Request {
    bool receive = false;
    LoopbackNet::Key key{};
    uint64_t seq = 0;
    void* p = nullptr;
    size_t bytes = 0;
  };
  template <class T>
  Request isend(int peer, int tag, const T* p, size_t n) {
    net_.post({rank_, peer, tag}, p, n * sizeof(T));
    return {};
  }
  template <class T>
  Request irecv(int peer, int tag, T* p, size_t n) {
    const LoopbackNet::Key k{peer, rank_, tag};
    return {true, k, net_.ticket(k), p, n * sizeof(T)};
  }
  void wait(Request& r);
  void wait_all(Request* r, size_t k) {
    for (size_t i = 0; i < k; ++i) wait(r[i]);
  }
  void sum_doubles(size_t level, double* v, size_t n);

 private:
  LoopbackNet& net_;
  int rank_;
  std::vector<uint64_t> rounds_;  // per level
};

}  // namespace wb::comm
