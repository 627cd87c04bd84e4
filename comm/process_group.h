// The application's view of its MPI processes (comm/ owns every MPI call, DESIGN.md
// section 3): rank and size, splitting a sweep's ranks into rank groups and a run's ranks,
// the few scalar agreements between runs, and the channel that carries finished runs from
// each rank group's leader to world rank 0 (the only writer).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace wb::comm {

int rank_of(MPI_Comm comm);
int size_of(MPI_Comm comm);
// The ranks of comm with the same color, ordered by key; color < 0: this rank joins none and
// gets MPI_COMM_NULL. Collective over comm. Free with free_group (a no-op for `parent`).
MPI_Comm split_group(MPI_Comm comm, int color, int key);
void free_group(MPI_Comm& group, MPI_Comm parent);
// Root's flags on every rank (in place).
void broadcast_flags(std::vector<char>& flags, int root, MPI_Comm comm);
// Root's value on every rank.
int broadcast_int(int value, int root, MPI_Comm comm);
// The largest of every rank's value, on every rank.
int max_over(int value, MPI_Comm comm);

// Finished runs travel as byte messages on one tag from group leaders to rank 0: each leader
// sends its results in order, then an empty message ("this group is done"). Messages from
// one source on one tag arrive in order, so a group's results come before its end mark.
class ResultChannel {
 public:
  explicit ResultChannel(MPI_Comm world) : comm_(world) {}
  void send(const std::vector<uint8_t>& bytes) const;  // leader -> rank 0
  void send_done() const;                               // leader -> rank 0: no more results
  // Rank 0: the next message, if one is there (block = wait for one). An empty vector is a
  // group's end mark.
  std::optional<std::vector<uint8_t>> receive(bool block) const;

 private:
  static constexpr int kResultTag = 4242;
  MPI_Comm comm_;
};

}  // namespace wb::comm
