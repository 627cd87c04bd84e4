// The cross-rank part of comm::Collectives (collectives.h: "Adasum, cross-rank part" and
// "allreduce"): recursive vector-halving distance-doubling over the active ranks with the
// fold for non-powers of two. The in-rank part and the public ops are in collectives.cpp.
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "comm/collectives.h"
#include "comm/collectives_detail.h"
#include "comm/kernels.h"
#include "comm/mpi_types.h"
#include "runtime/core/error.h"

namespace wb::comm {

using detail::count_of;
using detail::kTagFold;
using detail::kTagGather;
using detail::kTagScatter;
using detail::kTagUnfold;

template <class T>
T* Collectives::scratch(size_t n) {
  if (scratch_.size() < n * sizeof(T)) scratch_.resize(n * sizeof(T));
  return reinterpret_cast<T*>(scratch_.data());
}

// ---------------------------------------------------------------- cross-rank RVHDD

namespace {

// Elements per message of a pipelined exchange (1 MB of floats). Each RVHDD exchange is cut
// into chunks so that (1) the dot products / adds run on each chunk right after it lands,
// while it is still in cache, and every tensor that ends in the chunk is combined right
// there (rank_adasum), (2) the combine of tensors that straddle a slice boundary is
// computed chunk by chunk just before the chunk is sent in the allgather, and (3) the MPI
// library stays in its efficient mid-size protocol (a single multi-MB message was
// measured slower here). 64K, 128K, 256K and 1M elements were measured on the 2-core VM:
// 256K was best at 1-16 MB (Adasum/MPI_Allreduce 1.17 at 1 MB vs 1.31 with 64K).
constexpr size_t kPipe = size_t{1} << 18;

// Sends send[0, sn) to and receives recv[0, rn) from `partner`, kPipe elements per
// message. produce(off, len) runs just before send chunk [off, off+len) is posted;
// consume(off, len) runs when receive chunk [off, off+len) has landed, in order (so any
// accumulation it does has a fixed order: deterministic). All receives are posted first,
// sends are nonblocking: no deadlock whatever the partner's pace.
template <class T, class Produce, class Consume>
void pipelined_exchange(MPI_Comm comm, int partner, int tag, const T* send, size_t sn, T* recv,
                        size_t rn, Produce&& produce, Consume&& consume) {
  const MPI_Datatype dt = mpi_type<T>();
  const size_t cs = (sn + kPipe - 1) / kPipe, cr = (rn + kPipe - 1) / kPipe;
  std::vector<MPI_Request> rreq(cr), sreq(cs);
  for (size_t j = 0; j < cr; ++j)
    WB_CHECK_MPI(MPI_Irecv(recv + j * kPipe, count_of(std::min(kPipe, rn - j * kPipe)), dt,
                           partner, tag, comm, &rreq[j]));
  for (size_t j = 0; j < std::max(cs, cr); ++j) {
    if (j < cs) {
      const size_t len = std::min(kPipe, sn - j * kPipe);
      produce(j * kPipe, len);
      WB_CHECK_MPI(MPI_Isend(send + j * kPipe, count_of(len), dt, partner, tag, comm, &sreq[j]));
    }
    if (j < cr) {
      WB_CHECK_MPI(MPI_Wait(&rreq[j], MPI_STATUS_IGNORE));
      consume(j * kPipe, std::min(kPipe, rn - j * kPipe));
    }
  }
  if (cs > 0) WB_CHECK_MPI(MPI_Waitall(static_cast<int>(cs), sreq.data(), MPI_STATUSES_IGNORE));
}

struct Nothing {
  void operator()(size_t, size_t) const {}
};

// Pieces overlapping [lo, hi), clipped: f(piece index, clipped offset, clipped length).
template <class F>
void for_pieces(const std::vector<Piece>& pieces, size_t lo, size_t hi, F&& f) {
  auto it = std::upper_bound(pieces.begin(), pieces.end(), lo,
                             [](size_t v, const Piece& p) { return v < p.offset + p.size; });
  for (; it != pieces.end() && it->offset < hi; ++it) {
    const size_t o = std::max(it->offset, lo);
    const size_t len = std::min(it->offset + it->size, hi) - o;
    if (len > 0) f(static_cast<size_t>(it - pieces.begin()), o, len);
  }
}

struct Step {
  size_t lo, mid, hi;
  bool upper;  // bit l of my position: I keep the upper half [mid, hi)
};

}  // namespace

template <class T>
void Collectives::rank_adasum(T* x, size_t n, const std::vector<Piece>& pieces) {
  const MPI_Datatype dt = mpi_type<T>();
  if (is_extra_) {  // phases 0 and 3 on the folded rank: hand over, wait for the result
    WB_CHECK_MPI(MPI_Send(x, count_of(n), dt, fold_partner_, kTagFold, comm_));
    WB_CHECK_MPI(MPI_Recv(x, count_of(n), dt, fold_partner_, kTagUnfold, comm_, MPI_STATUS_IGNORE));
    return;
  }
  const size_t np = pieces.size();
  T* s = scratch<T>(fold_partner_ >= 0 ? n : n / 2 + 1);
  dots_.assign(3 * np, 0.0);
  if (fold_partner_ >= 0) {  // phase 0: x <- AS(x, extra), x is the left subtree
    WB_CHECK_MPI(MPI_Recv(s, count_of(n), dt, fold_partner_, kTagFold, comm_, MPI_STATUS_IGNORE));
    for (size_t j = 0; j < np; ++j)
      if (pieces[j].seg >= 0)
        kern::dot3(x + pieces[j].offset, s + pieces[j].offset, pieces[j].size, &dots_[3 * j]);
    for (size_t j = 0; j < np; ++j) {
      if (pieces[j].seg < 0) continue;
      double ca, cb;
      adasum_coefficients(dots_[3 * j], dots_[3 * j + 1], dots_[3 * j + 2], ca, cb);
      const size_t o = pieces[j].offset;
      kern::combine(x + o, x + o, s + o, pieces[j].size, ca, cb);
    }
  }
  const size_t levels = level_comms_.size();
  std::vector<Step> steps;
  std::vector<double> coef(2 * np, 0.0);
  size_t lo = 0, hi = n;
  bool upper = false;
  // done[j]: piece j lies wholly inside this level's kept slice, so its dot products are
  // complete on this rank alone (the group allreduce below only adds zeros to them) and
  // it was combined the moment its last chunk arrived, while still in cache, instead of
  // in a second pass over the slice after the allreduce. Bit-identical either way: x + 0.0
  // is exact, so the coefficients are the same.
  std::vector<char> done(np, 0);
  // kept <- ca*a + cb*b over [clo, chi) of the current kept slice [lo, hi) (Algorithm 1
  // line 18); a = left subtree's part, b = right's: element i is x[i] (mine) and
  // s[i - lo] (received).
  auto combine_range = [&](size_t clo, size_t chi) {
    for_pieces(pieces, clo, chi, [&](size_t j, size_t o, size_t len) {
      if (pieces[j].seg < 0 || done[j]) return;  // gaps and local pieces: done on arrival
      const T* mine = x + o;
      const T* got = s + (o - lo);
      kern::combine(x + o, upper ? got : mine, upper ? mine : got, len, coef[2 * j], coef[2 * j + 1]);
    });
  };
  for (size_t l = 0; l < levels; ++l) {  // phase 1: reduce-scatter
    const int d = 1 << l;
    upper = (position_ & d) != 0;
    const int partner = position_rank_[position_ ^ d];
    const size_t mid = lo + (hi - lo) / 2;
    const size_t klo = upper ? mid : lo, khi = upper ? hi : mid;  // kept
    const size_t slo = upper ? lo : mid, shi = upper ? mid : hi;  // sent
    std::fill(dots_.begin(), dots_.end(), 0.0);
    std::fill(done.begin(), done.end(), 0);
    // Partial [a.b, a.a, b.b] per piece, chunk by chunk as the partner's half arrives;
    // pieces that end in this chunk and started inside the kept slice are finished here.
    pipelined_exchange(comm_, partner, kTagScatter, x + slo, shi - slo, s, khi - klo, Nothing{},
                       [&](size_t off, size_t len) {
                         for_pieces(pieces, klo + off, klo + off + len, [&](size_t j, size_t o, size_t m) {
                           const Piece& pc = pieces[j];
                           const T* mine = x + o;
                           const T* got = s + (o - klo);
                           if (pc.seg < 0) {  // gap: the left value stays
                             if (upper) std::memcpy(x + o, got, m * sizeof(T));
                             return;
                           }
                           double* v = &dots_[3 * j];
                           kern::dot3(upper ? got : mine, upper ? mine : got, m, v);
                           if (pc.offset < klo || o + m != pc.offset + pc.size) return;
                           double ca, cb;
                           adasum_coefficients(v[0], v[1], v[2], ca, cb);
                           const T* pm = x + pc.offset;
                           const T* pg = s + (pc.offset - klo);
                           kern::combine(x + pc.offset, upper ? pg : pm, upper ? pm : pg, pc.size, ca, cb);
                           done[j] = 1;
                         });
                       });
    // Finish the partial dot products over the 2d ranks that share each tensor
    // (Algorithm 1 lines 15-17): every tensor gets its unsplit coefficients.
    WB_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, dots_.data(), count_of(dots_.size()), MPI_DOUBLE,
                               MPI_SUM, level_comms_[l]));
    for (size_t j = 0; j < np; ++j) {
      coef[2 * j] = 1.0;
      coef[2 * j + 1] = 0.0;
      if (pieces[j].seg >= 0)
        adasum_coefficients(dots_[3 * j], dots_[3 * j + 1], dots_[3 * j + 2], coef[2 * j], coef[2 * j + 1]);
    }
    steps.push_back({lo, mid, hi, upper});
    lo = klo;
    hi = khi;
    // The last level's combine is fused into the first allgather step below.
    if (l + 1 < levels) combine_range(lo, hi);
  }
  for (size_t l = steps.size(); l-- > 0;) {  // phase 2: allgather
    const Step& st = steps[l];
    const int partner = position_rank_[position_ ^ (1 << l)];
    const size_t mlo = st.upper ? st.mid : st.lo, mhi = st.upper ? st.hi : st.mid;
    const size_t tlo = st.upper ? st.lo : st.mid, thi = st.upper ? st.mid : st.hi;
    if (l + 1 == steps.size())
      pipelined_exchange(comm_, partner, kTagGather, x + mlo, mhi - mlo, x + tlo, thi - tlo,
                         [&](size_t off, size_t len) { combine_range(mlo + off, mlo + off + len); },
                         Nothing{});
    else
      pipelined_exchange(comm_, partner, kTagGather, x + mlo, mhi - mlo, x + tlo, thi - tlo,
                         Nothing{}, Nothing{});
  }
  if (fold_partner_ >= 0)  // phase 3
    WB_CHECK_MPI(MPI_Send(x, count_of(n), dt, fold_partner_, kTagUnfold, comm_));
}

// Same schedule with kept += received: every add is at the node of tree_sum_reference.
template <class T>
void Collectives::rank_sum(T* x, size_t n) {
  const MPI_Datatype dt = mpi_type<T>();
  if (is_extra_) {
    WB_CHECK_MPI(MPI_Send(x, count_of(n), dt, fold_partner_, kTagFold, comm_));
    WB_CHECK_MPI(MPI_Recv(x, count_of(n), dt, fold_partner_, kTagUnfold, comm_, MPI_STATUS_IGNORE));
    return;
  }
  T* s = scratch<T>(fold_partner_ >= 0 ? n : n / 2 + 1);
  if (fold_partner_ >= 0) {
    WB_CHECK_MPI(MPI_Recv(s, count_of(n), dt, fold_partner_, kTagFold, comm_, MPI_STATUS_IGNORE));
    kern::add(x, s, n);
  }
  std::vector<Step> steps;
  size_t lo = 0, hi = n;
  for (size_t l = 0; l < level_comms_.size(); ++l) {
    const int d = 1 << l;
    const bool upper = (position_ & d) != 0;
    const int partner = position_rank_[position_ ^ d];
    const size_t mid = lo + (hi - lo) / 2;
    const size_t klo = upper ? mid : lo, khi = upper ? hi : mid;
    const size_t slo = upper ? lo : mid, shi = upper ? mid : hi;
    pipelined_exchange(comm_, partner, kTagScatter, x + slo, shi - slo, s, khi - klo, Nothing{},
                       [&](size_t off, size_t len) { kern::add(x + klo + off, s + off, len); });
    steps.push_back({lo, mid, hi, upper});
    lo = klo;
    hi = khi;
  }
  for (size_t l = steps.size(); l-- > 0;) {
    const Step& st = steps[l];
    const int partner = position_rank_[position_ ^ (1 << l)];
    const size_t mlo = st.upper ? st.mid : st.lo, mhi = st.upper ? st.hi : st.mid;
    const size_t tlo = st.upper ? st.lo : st.mid, thi = st.upper ? st.mid : st.hi;
    pipelined_exchange(comm_, partner, kTagGather, x + mlo, mhi - mlo, x + tlo, thi - tlo,
                       Nothing{}, Nothing{});
  }
  if (fold_partner_ >= 0)
    WB_CHECK_MPI(MPI_Send(x, count_of(n), dt, fold_partner_, kTagUnfold, comm_));
}

template void Collectives::rank_adasum<float>(float*, size_t, const std::vector<Piece>&);
template void Collectives::rank_adasum<double>(double*, size_t, const std::vector<Piece>&);
template void Collectives::rank_sum<float>(float*, size_t);
template void Collectives::rank_sum<double>(double*, size_t);

}  // namespace wb::comm
