// What the ranks of one `workbench run` agree on before and during a sweep (comm/ owns every
// MPI call, DESIGN.md section 3):
//  - the experiment: world rank 0 reads the spec once and every rank parses its bytes, so
//    ranks started on different files (an MPMD launch, a spec edited while the ranks start)
//    cannot run different experiments under one results file; and the command line, which
//    every rank must share (same_on_all of its hash);
//  - stopping: a signal to any rank stops every rank group. A group leader that sees its
//    interrupt flag tells world rank 0; rank 0 tells every leader; each leader's group then
//    agrees on it at its next step (the training loop's any_over_ranks), so every rank stops
//    within a step or two, whichever rank got the signal.
//
// Bytes on the wire: the spec once (its length, then its bytes); one allreduce of two
// uint64 for the hash; a 4-byte message per leader on a stop; at the end of the sweep one
// allreduce of one int per rank (StopChannel::finish).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace wb::comm {

// Root's text on every rank.
std::string broadcast_text(const std::string& text, int root, MPI_Comm comm);
// Whether every rank of comm passed the same value. Collective.
bool same_on_all(uint64_t value, MPI_Comm comm);

// The stop notices of one sweep, on their own tag of the world communicator.
class StopChannel {
 public:
  explicit StopChannel(MPI_Comm world) : comm_(world) {}
  // A group leader (not world rank 0): tell rank 0 that this rank got signal `sig`.
  void notify_root(int sig) const;
  // World rank 0: tell each of `leaders` (world ranks) to stop, with signal `sig`.
  void stop_all(int sig, const std::vector<int>& leaders) const;
  // Any rank: the signal of a stop notice that arrived for it, 0 if none (consumes notices).
  int poll() const;
  // Every rank, at the end of the sweep (collective): receives every notice still addressed
  // to it and returns the last signal among them (0 if none). Probing is not enough: a
  // notice sent before the sweep's last collective can still be in flight after it (MPI
  // orders no point-to-point message against a collective), and a message left unreceived
  // at MPI_Finalize is a message the transport must still deliver or flush while the peer may
  // already be past its own disconnect (MPICH 4.0 over UCX disconnects every endpoint and
  // only then meets the other ranks in a PMI barrier). The ranks sum how many notices each
  // sent to each rank, and each receives what it has not yet.
  int finish() const;

 private:
  static constexpr int kStopTag = 4243;
  MPI_Comm comm_;
  mutable std::vector<int> sent_;  // notices sent, per destination rank (sized on first use)
  mutable int received_ = 0;       // notices received by poll()
  void count_sent(int dest) const;
};

}  // namespace wb::comm
