// The cross-rank part of comm::Collectives (collectives.h: "Adasum, cross-rank part" and
// "allreduce"): the schedules of comm/rvhdd.h over the MPI transport, and the two-rank weighted
// average. The in-rank part and the public ops are in collectives.cpp.
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "comm/collectives.h"
#include "comm/collectives_detail.h"
#include "comm/kernels.h"
#include "comm/mpi_types.h"
#include "comm/rvhdd.h"
#include "comm/transport_mpi.h"
#include "core/error.h"

namespace wb::comm {

using detail::count_of;
using detail::kTagWeights;
using rvhdd::kPipe;
using rvhdd::kTagGather;
using rvhdd::kTagScatter;

template <class T>
T* Collectives::scratch(size_t n) {
  if (scratch_.size() < n * sizeof(T)) scratch_.resize(n * sizeof(T));
  return reinterpret_cast<T*>(scratch_.data());
}

template <class T>
void Collectives::rank_adasum(T* x, size_t n, const std::vector<Piece>& pieces) {
  MpiTransport t{comm_, level_comms_};
  rvhdd::adasum(t, plan_, x, scratch<T>(rvhdd::adasum_scratch(n)), n, pieces, dots_);
}

template <class T>
void Collectives::rank_sum(T* x, size_t n) {
  MpiTransport t{comm_, level_comms_};
  rvhdd::sum(t, plan_, x, scratch<T>(rvhdd::sum_scratch(plan_, n)), n);
}

// weighted_average across two ranks (collectives.h, "allreduce"): reduce-scatter then
// allgather, like MPI_Allreduce, but a rank with one or two workers sends its RAW inputs
// (T, the same bytes as one double partial or fewer) instead of a double partial, and the
// allgather moves the finished T values rather than double sums. Each half's double sum is
// then accumulated in worker order from 0.0, exactly as the one-rank loop does, so the
// result is bit-identical to R = 1 whenever the right rank has <= 2 workers (a left
// rank's double partial is a prefix of that same order). The weights travel too (a
// message of L doubles beside the data) and are summed in worker order.
template <class T>
void detail::weighted_average_pair(MPI_Comm comm, int rank, const Layout& layout, const std::vector<T*>& p,
                           size_t n, std::span<const double> lw, std::vector<std::byte>& scratch) {
  const MPI_Datatype dt = mpi_type<T>();
  const int other = 1 - rank;
  const bool upper = rank == 1;
  const size_t mid = n / 2;
  const size_t klo = upper ? mid : 0, khi = upper ? n : mid;  // kept
  const size_t slo = upper ? 0 : mid, shi = upper ? mid : n;  // sent
  const size_t kn = khi - klo, sn = shi - slo;
  const size_t lme = static_cast<size_t>(layout.count(rank));
  const size_t lot = static_cast<size_t>(layout.count(other));
  const bool raw_me = lme <= 2, raw_ot = lot <= 2;
  std::vector<double> wo(lot);
  MPI_Request wreq[2];
  WB_CHECK_MPI(MPI_Irecv(wo.data(), count_of(lot), MPI_DOUBLE, other, kTagWeights, comm, &wreq[0]));
  WB_CHECK_MPI(MPI_Isend(lw.data(), count_of(lme), MPI_DOUBLE, other, kTagWeights, comm, &wreq[1]));
  // One scratch area, 64-byte aligned parts: the receive buffer (lot raw slices of the kept
  // half, or one double partial), one chunk of double sums, and the double partial sent
  // (a rank with > 2 workers). Reused across calls: no page faults after the first.
  constexpr size_t kSub = 2048;  // 16 KB of double sums
  const size_t chunk = std::min(kSub, kn);
  auto up64 = [](size_t b) { return (b + 63) / 64 * 64; };
  const size_t recv_b = up64(raw_ot ? lot * kn * sizeof(T) : kn * sizeof(double));
  const size_t acc_b = up64(chunk * sizeof(double));
  const size_t send_b = raw_me ? 0 : up64(sn * sizeof(double));
  if (scratch.size() < recv_b + acc_b + send_b + 64) scratch.resize(recv_b + acc_b + send_b + 64);
  std::byte* base = scratch.data();
  base += (64 - reinterpret_cast<uintptr_t>(base) % 64) % 64;
  T* rraw = raw_ot ? reinterpret_cast<T*>(base) : nullptr;
  double* rpart = raw_ot ? nullptr : reinterpret_cast<double*>(base);
  double* acc = reinterpret_cast<double*>(base + recv_b);
  double* psend = reinterpret_cast<double*>(base + recv_b + acc_b);
  const size_t cs = (sn + kPipe - 1) / kPipe, cr = (kn + kPipe - 1) / kPipe;
  const size_t per_recv = raw_ot ? lot : 1, per_send = raw_me ? lme : 1;
  std::vector<MPI_Request> rreq(cr * per_recv), sreq(cs * per_send);
  for (size_t j = 0; j < cr; ++j) {
    const size_t off = j * kPipe, len = std::min(kPipe, kn - off);
    for (size_t k = 0; k < per_recv; ++k) {
      if (raw_ot)
        WB_CHECK_MPI(MPI_Irecv(rraw + k * kn + off, count_of(len), dt, other, kTagScatter, comm,
                               &rreq[j * per_recv + k]));
      else
        WB_CHECK_MPI(MPI_Irecv(rpart + off, count_of(len), MPI_DOUBLE, other, kTagScatter, comm,
                               &rreq[j * per_recv + k]));
    }
  }
  double wsum = 0;
  std::vector<std::pair<const T*, double>> src;  // raw_ot: inputs of the kept half, worker order
  for (size_t j = 0; j < std::max(cs, cr); ++j) {
    if (j < cs) {
      const size_t off = j * kPipe, len = std::min(kPipe, sn - off);
      for (size_t k = 0; k < per_send; ++k) {
        if (raw_me) {
          WB_CHECK_MPI(MPI_Isend(p[k] + slo + off, count_of(len), dt, other, kTagScatter, comm,
                                 &sreq[j * per_send + k]));
          continue;
        }
        double* a = psend + off;
        for (size_t s0 = 0; s0 < len; s0 += kSub) {  // in L1, as the sums below
          const size_t sl = std::min(kSub, len - s0);
          std::fill(a + s0, a + s0 + sl, 0.0);
          for (size_t q = 0; q < lme; ++q) kern::axpy_double(a + s0, p[q] + slo + off + s0, lw[q], sl);
        }
        WB_CHECK_MPI(MPI_Isend(a, count_of(len), MPI_DOUBLE, other, kTagScatter, comm,
                               &sreq[j * per_send + k]));
      }
    }
    if (j == 0) {  // the weights, summed in worker order (the left rank's first)
      WB_CHECK_MPI(MPI_Waitall(2, wreq, MPI_STATUSES_IGNORE));
      const std::span<const double> left = upper ? std::span<const double>(wo) : lw;
      const std::span<const double> right = upper ? lw : std::span<const double>(wo);
      for (double w : left) wsum += w;
      for (double w : right) wsum += w;
      WB_ASSERT(wsum > 0, "weighted_average: weights sum to zero");
    }
    if (j < cr) {
      const size_t off = j * kPipe, len = std::min(kPipe, kn - off);
      WB_CHECK_MPI(MPI_Waitall(static_cast<int>(per_recv), &rreq[j * per_recv], MPI_STATUSES_IGNORE));
      // Sub-chunks of kSub elements: the double sums stay in L1 across the passes over
      // the workers (a whole chunk's 2 MB of doubles went to memory and back per worker).
      if (raw_ot && src.empty()) {  // the kept half's raw inputs in worker order, once
        auto add_mine = [&] {
          for (size_t q = 0; q < lme; ++q) src.push_back({p[q] + klo, lw[q]});
        };
        auto add_other = [&] {
          for (size_t q = 0; q < lot; ++q) src.push_back({rraw + q * kn, wo[q]});
        };
        if (upper) {
          add_other();
          add_mine();
        } else {
          add_mine();
          add_other();
        }
      }
      if (raw_ot && src.size() <= 4) {
        // Up to four inputs (one or two workers a rank): each element's sum runs in a register
        // from 0.0 in worker order, the same operations as the sub-chunk passes below
        // (kern::wavg_raw), in one pass instead of src.size() + 2.
        const T* x[4];
        double wx[4];
        for (size_t k = 0; k < src.size(); ++k) {
          x[k] = src[k].first + off;
          wx[k] = src[k].second;
        }
        kern::wavg_raw(p[0] + klo + off, x, wx, src.size(), len, wsum);
        continue;
      }
      for (size_t s0 = 0; s0 < len; s0 += kSub) {
        const size_t sl = std::min(kSub, len - s0), o = off + s0;
        std::fill(acc, acc + sl, 0.0);
        if (raw_ot) {
          for (const auto& [x, wx] : src) kern::axpy_double(acc, x + o, wx, sl);
        } else {  // the other rank's double partial: a prefix or suffix of the same order
          auto add_mine = [&] {
            for (size_t q = 0; q < lme; ++q) kern::axpy_double(acc, p[q] + klo + o, lw[q], sl);
          };
          if (upper) {
            for (size_t i = 0; i < sl; ++i) acc[i] += rpart[o + i];
            add_mine();
          } else {
            add_mine();
            for (size_t i = 0; i < sl; ++i) acc[i] += rpart[o + i];
          }
        }
        T* out = p[0] + klo + o;
        for (size_t i = 0; i < sl; ++i) out[i] = static_cast<T>(acc[i] / wsum);
      }
    }
  }
  // The weights' exchange completes in the loop's first pass; with nothing to send or keep
  // (n = 0) the loop has none, and its requests must not outlive the call.
  if (std::max(cs, cr) == 0) WB_CHECK_MPI(MPI_Waitall(2, wreq, MPI_STATUSES_IGNORE));
  if (!sreq.empty())
    WB_CHECK_MPI(MPI_Waitall(static_cast<int>(sreq.size()), sreq.data(), MPI_STATUSES_IGNORE));
  MpiTransport t{comm, {}};
  rvhdd::pipelined_exchange(t, other, kTagGather, p[0] + klo, kn, p[0] + slo, sn, rvhdd::Nothing{}, rvhdd::Nothing{});
}

template void detail::weighted_average_pair<float>(MPI_Comm, int, const Layout&,
                                                  const std::vector<float*>&, size_t,
                                                  std::span<const double>, std::vector<std::byte>&);
template void detail::weighted_average_pair<double>(MPI_Comm, int, const Layout&,
                                                   const std::vector<double*>&, size_t,
                                                   std::span<const double>, std::vector<std::byte>&);

template void Collectives::rank_adasum<float>(float*, size_t, const std::vector<Piece>&);
template void Collectives::rank_adasum<double>(double*, size_t, const std::vector<Piece>&);
template void Collectives::rank_sum<float>(float*, size_t);
template void Collectives::rank_sum<double>(double*, size_t);

}  // namespace wb::comm
