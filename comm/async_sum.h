// A non-blocking element-wise sum of floats over the ranks of a run, for algorithms whose
// communication overlaps their computation: LAP/LPP-SGD's real mode starts a round's average
// and keeps its updaters running until it lands (Chatterjee et al., arXiv:2203.06638, Alg. 1
// lines 13-16). It owns a duplicated communicator so its messages never match the blocking
// collectives' (which the runner's thread keeps calling while a round is in flight).
//
// How: MPI_Iallreduce, except on two ranks, where the sum is one exchange of the whole
// vector (MPI_Isend + MPI_Irecv) and a local add. MPI progresses a non-blocking operation
// only inside MPI calls, and the runner tests at its steps: on the 2-core machine, where the
// runner shares a core with its updaters, MPICH's Iallreduce of a LeNet-5 model needed 3.2
// tests on average and a round landed ~820 us after it started (LAP-SGD, batch 8, a round
// every step of ~0.45 ms: the runner fell behind its updaters and real mode ran 33% slower
// than the simulated mode's clock); the exchange needs 1.5 tests and lands after ~460 us.
// a + b is the same float whichever rank adds it, so both ranks hold the same sum, the
// allreduce's.
//
// Threading: start/test/wait are called from one thread (the runner's; MPI_THREAD_FUNNELED).
// Cost: the caller models the round's simulated time (Collectives::cost_s), because an
// overlapped round's time is hidden behind computation by the algorithm's own schedule.
#pragma once

#include <mpi.h>

#include <array>
#include <span>
#include <vector>

#include "comm/collectives.h"

namespace wb::comm {

class AsyncSum {
 public:
  // Collective over coll's ranks (duplicates its communicator).
  explicit AsyncSum(const Collectives& coll);
  ~AsyncSum();  // waits for a pending sum (every rank started it), frees the communicator
  AsyncSum(const AsyncSum&) = delete;
  AsyncSum& operator=(const AsyncSum&) = delete;

  // out <- sum over ranks of in (element-wise, in float: the models are float32, and a
  // round moves 4 bytes per parameter, as PyTorch DDP's and the paper's averaging do, and as
  // the cost model prices it); in and out stay untouched by the caller until test()
  // returned true or wait() returned.
  void start(std::span<const float> in, std::span<float> out);
  bool pending() const { return pending_; }
  // True once the pending sum has landed in out (then no longer pending). Never blocks.
  bool test();
  void wait();

 private:
  void finish();  // two ranks: out <- in + the peer's
  MPI_Comm comm_ = MPI_COMM_NULL;
  int ranks_ = 1, peer_ = -1;
  // reqs_[0]: the Iallreduce, or (two ranks) the receive; reqs_[1]: the send (two ranks).
  std::array<MPI_Request, 2> reqs_{MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  bool pending_ = false;
  std::span<const float> in_;
  std::span<float> out_;
  std::vector<float> got_;  // two ranks: the peer's vector
};

}  // namespace wb::comm
