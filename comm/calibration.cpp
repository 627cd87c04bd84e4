#include "comm/calibration.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "comm/collectives.h"
#include "comm/mpi_types.h"
#include "core/error.h"

namespace wb::comm {

const std::vector<std::string> kCalibratedOps = {"p2p",          "allreduce",        "adasum",
                                                 "adasum_split", "weighted_average", "broadcast"};

int calibration_reps(size_t bytes) {
  if (bytes <= (size_t{1} << 16)) return 200;
  if (bytes <= (size_t{1} << 20)) return 48;
  return 16;
}

std::string pair_link_class(MPI_Comm comm) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  MPI_Comm shared;
  WB_CHECK_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared));
  int node = rank;  // a node's name: the smallest rank on it
  WB_CHECK_MPI(MPI_Allreduce(&rank, &node, 1, MPI_INT, MPI_MIN, shared));
  MPI_Comm_free(&shared);
  std::vector<int> nodes(static_cast<size_t>(size));
  WB_CHECK_MPI(MPI_Allgather(&node, 1, MPI_INT, nodes.data(), 1, MPI_INT, comm));
  return size >= 2 && nodes[0] == nodes[1] ? "intra" : "cross";
}

int ranks_on_node(MPI_Comm comm) {
  MPI_Comm shared;
  WB_CHECK_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared));
  int n = 1;
  WB_CHECK_MPI(MPI_Comm_size(shared, &n));
  MPI_Comm_free(&shared);
  return n;
}

std::vector<double> time_level(MPI_Comm comm, const std::string& op, const std::vector<size_t>& bytes) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  WB_ASSERT(size >= 2, "time_level needs two ranks");
  MPI_Comm pair;
  WB_CHECK_MPI(MPI_Comm_split(comm, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair));
  std::vector<double> out(bytes.size(), 0.0);
  if (rank < 2) {
    Collectives coll(pair, 2);  // one worker per rank: W = 2, one level
    // Every size is measured in kRounds rounds interleaved with the other sizes, so that its
    // repetitions spread over the whole measurement: a rank preempted by another process for
    // a scheduler quantum (milliseconds) would otherwise stall all repetitions of a small
    // size at once, and the median would be the quantum.
    constexpr int kRounds = 8;
    std::vector<std::vector<float>> data(bytes.size()), fresh(bytes.size());
    std::vector<std::vector<Segment>> segs(bytes.size());
    std::vector<std::vector<double>> times(bytes.size());
    for (size_t s = 0; s < bytes.size(); ++s) {
      const size_t n = std::max<size_t>(1, bytes[s] / sizeof(float));
      data[s].resize(n);
      for (size_t i = 0; i < n; ++i)
        data[s][i] = 1.0f + 1e-3f * static_cast<float>((i * 7 + static_cast<size_t>(rank)) % 97);
      fresh[s] = data[s];
      if (op == "adasum")
        for (size_t off = 0; off < n; off += 1024) segs[s].push_back({off, std::min<size_t>(1024, n - off)});
      else
        segs[s].push_back({0, n});
    }
    const double weight = 1.0 + rank;
    for (int round = 0; round < kRounds; ++round) {
      for (size_t s = 0; s < bytes.size(); ++s) {
        std::vector<float>& buf = data[s];
        const size_t n = buf.size();
        std::span<float> sp(buf);
        std::span<const std::span<float>> bufs(&sp, 1);
        auto once = [&] {
          if (op == "p2p") {
            // Ping-pong: rank 0 sends, rank 1 returns; one message = half the round trip.
            if (rank == 0) {
              WB_CHECK_MPI(MPI_Send(buf.data(), static_cast<int>(n), MPI_FLOAT, 1, 7, pair));
              WB_CHECK_MPI(MPI_Recv(buf.data(), static_cast<int>(n), MPI_FLOAT, 1, 7, pair, MPI_STATUS_IGNORE));
            } else {
              WB_CHECK_MPI(MPI_Recv(buf.data(), static_cast<int>(n), MPI_FLOAT, 0, 7, pair, MPI_STATUS_IGNORE));
              WB_CHECK_MPI(MPI_Send(buf.data(), static_cast<int>(n), MPI_FLOAT, 0, 7, pair));
            }
          } else if (op == "allreduce") {
            // The sum (MPI_SUM's level); average's division by W is priced on its own
            // (CostProfile::average_divide_s_per_float), so that the model can tell the two apart.
            coll.allreduce<float>(bufs, ReduceOp::kSum, Charge::kNone);
          } else if (op == "adasum" || op == "adasum_split") {
            coll.adasum<float>(bufs, segs[s], Charge::kNone);
          } else if (op == "weighted_average") {
            coll.weighted_average<float>(bufs, std::span<const double>(&weight, 1), Charge::kNone);
          } else if (op == "broadcast") {
            coll.broadcast<float>(bufs, 0, Charge::kNone);
          } else {
            WB_ASSERT(false, "time_level: unknown op " + op);
          }
        };
        once();  // warm-up (caches, the pipeline's first messages)
        const int reps = std::max(2, calibration_reps(bytes[s]) / kRounds);
        for (int r = 0; r < reps; ++r) {
          // The buffer rewritten before each repetition, as a training step's backward pass
          // writes the gradient just before its collective: the op then starts from cached,
          // just-written data, as in a run (timed after neighbouring sizes had evicted it, a
          // sparse-MLP gradient's 1 MB allreduce measured 162 us here and 88 us inside the
          // step). Same values each time: sums do not grow from repetition to repetition.
          std::memcpy(buf.data(), fresh[s].data(), n * sizeof(float));
          WB_CHECK_MPI(MPI_Barrier(pair));
          const double t0 = MPI_Wtime();
          once();
          double dt = MPI_Wtime() - t0, slow = 0;
          if (op == "p2p") dt /= 2;
          WB_CHECK_MPI(MPI_Allreduce(&dt, &slow, 1, MPI_DOUBLE, MPI_MAX, pair));
          times[s].push_back(slow);
        }
      }
    }
    for (size_t s = 0; s < bytes.size(); ++s) {
      std::vector<double>& t = times[s];
      std::nth_element(t.begin(), t.begin() + static_cast<long>(t.size() / 2), t.end());
      out[s] = t[t.size() / 2];
    }
    MPI_Comm_free(&pair);
  }
  WB_CHECK_MPI(MPI_Bcast(out.data(), static_cast<int>(out.size()), MPI_DOUBLE, 0, comm));
  return out;
}

}  // namespace wb::comm
