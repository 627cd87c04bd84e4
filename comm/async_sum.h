// A non-blocking element-wise sum of floats over the ranks of a run (MPI_Iallreduce), for
// algorithms whose communication overlaps their computation: LAP/LPP-SGD's real mode starts
// a round's average and keeps its updaters running until it lands (Chatterjee et al., arXiv:2203.06638, Alg. 1
// lines 13-16). It owns a duplicated communicator so its messages never match the blocking
// collectives' (which the runner's thread keeps calling while a round is in flight).
//
// Threading: start/test/wait are called from one thread (the runner's; MPI_THREAD_FUNNELED).
// Cost: the caller models the round's simulated time (Collectives::cost_s), because an
// overlapped round's time is hidden behind computation by the algorithm's own schedule.
#pragma once

#include <mpi.h>

#include <span>

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
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Request req_ = MPI_REQUEST_NULL;
  bool pending_ = false;
};

}  // namespace wb::comm
