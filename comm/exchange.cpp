// The small exchanges of comm::Collectives (collectives.h, "small exchanges"): control values
// and measurement data, never charged to the simulated clock. Bytes on the wire are tiny
// (one double per worker or rank) except allgather_worker_blocks and chain_over_workers,
// which move the diagnostics' double-precision gradients and emulation state (K x n and 2n
// doubles) outside the modelled run.
#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "comm/collectives.h"
#include "core/error.h"

namespace wb::comm {

void Collectives::finish(MPI_Request& req) const {
  for (;;) {
    int done = 0;
    WB_CHECK_MPI(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
    if (done) return;
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

void Collectives::allgather_worker_values(std::span<const double> local,
                                          std::span<double> all) const {
  WB_ASSERT(static_cast<int>(local.size()) == local_count(), "one value per local worker");
  WB_ASSERT(static_cast<int>(all.size()) == layout_.workers(), "one slot per worker");
  if (ranks() == 1) {
    std::copy(local.begin(), local.end(), all.begin());
    return;
  }
  std::vector<int> counts(ranks()), displs(ranks());
  for (int r = 0; r < ranks(); ++r) {
    counts[r] = layout_.count(r);
    displs[r] = layout_.first(r);
  }
  if (!yielding_waits_) {
    WB_CHECK_MPI(MPI_Allgatherv(local.data(), static_cast<int>(local.size()), MPI_DOUBLE,
                                all.data(), counts.data(), displs.data(), MPI_DOUBLE, comm_));
    return;
  }
  MPI_Request req;
  WB_CHECK_MPI(MPI_Iallgatherv(local.data(), static_cast<int>(local.size()), MPI_DOUBLE,
                               all.data(), counts.data(), displs.data(), MPI_DOUBLE, comm_, &req));
  finish(req);
}

bool Collectives::allgather_worker_values_any(std::span<const double> local, std::span<double> all,
                                              bool mine) const {
  WB_ASSERT(static_cast<int>(local.size()) == local_count(), "one value per local worker");
  WB_ASSERT(static_cast<int>(all.size()) == layout_.workers(), "one slot per worker");
  if (ranks() == 1) {
    std::copy(local.begin(), local.end(), all.begin());
    return mine;
  }
  // Rank r sends its workers' values and then its flag: block r of the gathered vector is
  // [values of workers first(r) .. first(r) + count(r) - 1, flag].
  if (agree_counts_.empty()) {
    agree_counts_.resize(ranks());
    agree_displs_.resize(ranks());
    for (int r = 0; r < ranks(); ++r) {
      agree_counts_[r] = layout_.count(r) + 1;
      agree_displs_[r] = layout_.first(r) + r;
    }
    agree_got_.resize(all.size() + static_cast<size_t>(ranks()));
  }
  agree_send_.assign(local.begin(), local.end());
  agree_send_.push_back(mine ? 1.0 : 0.0);
  const int ns = static_cast<int>(agree_send_.size());
  if (!yielding_waits_) {
    WB_CHECK_MPI(MPI_Allgatherv(agree_send_.data(), ns, MPI_DOUBLE, agree_got_.data(), agree_counts_.data(),
                                agree_displs_.data(), MPI_DOUBLE, comm_));
  } else {
    MPI_Request req;
    WB_CHECK_MPI(MPI_Iallgatherv(agree_send_.data(), ns, MPI_DOUBLE, agree_got_.data(), agree_counts_.data(),
                                 agree_displs_.data(), MPI_DOUBLE, comm_, &req));
    finish(req);
  }
  bool any = false;
  for (int r = 0; r < ranks(); ++r) {
    const double* b = agree_got_.data() + agree_displs_[r];
    std::copy(b, b + layout_.count(r), all.begin() + layout_.first(r));
    any = any || b[layout_.count(r)] != 0.0;
  }
  return any;
}

double Collectives::sum_over_ranks(double local) const {
  if (ranks() == 1) return local;
  std::vector<double> all(ranks());
  if (yielding_waits_) {
    MPI_Request req;
    WB_CHECK_MPI(MPI_Iallgather(&local, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, comm_, &req));
    finish(req);
  } else {
    WB_CHECK_MPI(MPI_Allgather(&local, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, comm_));
  }
  double s = 0;
  for (double x : all) s += x;
  return s;
}

void Collectives::sum_over_ranks(std::span<double> v) const {
  if (ranks() > 1 && !v.empty() && !yielding_waits_) {
    WB_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_DOUBLE,
                               MPI_SUM, comm_));
  } else if (ranks() > 1 && !v.empty()) {
    MPI_Request req;
    WB_CHECK_MPI(MPI_Iallreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_DOUBLE,
                                MPI_SUM, comm_, &req));
    finish(req);
  }
}

bool Collectives::any_over_ranks(bool mine) const {
  int local = mine ? 1 : 0, any = local;
  if (ranks() > 1 && !yielding_waits_) {
    WB_CHECK_MPI(MPI_Allreduce(&local, &any, 1, MPI_INT, MPI_MAX, comm_));
  } else if (ranks() > 1) {
    MPI_Request req;
    WB_CHECK_MPI(MPI_Iallreduce(&local, &any, 1, MPI_INT, MPI_MAX, comm_, &req));
    finish(req);
  }
  return any != 0;
}

void Collectives::allgather_worker_blocks(std::span<double> all, size_t per_worker, int K) const {
  WB_ASSERT(all.size() >= static_cast<size_t>(K) * per_worker, "allgather_worker_blocks: all too small");
  if (ranks() == 1) return;
  std::vector<int> counts(ranks()), displs(ranks());
  for (int r = 0; r < ranks(); ++r) {
    const int lo = std::min(layout_.first(r), K), hi = std::min(layout_.first(r) + layout_.count(r), K);
    counts[r] = (hi - lo) * static_cast<int>(per_worker);
    displs[r] = lo * static_cast<int>(per_worker);
  }
  WB_CHECK_MPI(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DOUBLE, all.data(), counts.data(),
                              displs.data(), MPI_DOUBLE, comm_));
}

void Collectives::chain_over_workers(std::span<double> state, int K,
                                     const std::function<void(std::span<double>, int, int)>& fn) const {
  constexpr int kChainTag = 77;
  const int n = static_cast<int>(state.size());
  const int first = layout_.first(rank_), last = std::min(first + layout_.count(rank_), K);
  const bool mine = first < K;
  if (mine && rank_ > 0)
    WB_CHECK_MPI(MPI_Recv(state.data(), n, MPI_DOUBLE, rank_ - 1, kChainTag, comm_, MPI_STATUS_IGNORE));
  if (mine) {
    fn(state, first, last);
    // The rank that holds worker K-1 ends the chain; the others pass it on.
    if (last != K && rank_ + 1 < ranks())
      WB_CHECK_MPI(MPI_Send(state.data(), n, MPI_DOUBLE, rank_ + 1, kChainTag, comm_));
  }
  if (ranks() > 1) WB_CHECK_MPI(MPI_Bcast(state.data(), n, MPI_DOUBLE, layout_.owner(K - 1), comm_));
}

}  // namespace wb::comm
