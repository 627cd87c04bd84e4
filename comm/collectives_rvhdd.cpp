// The cross-rank part of comm::Collectives (collectives.h: "Adasum, cross-rank part" and
// "allreduce"): recursive vector-halving distance-doubling over the active ranks with the
// fold for non-powers of two. The in-rank part and the public ops are in collectives.cpp.
#include <mpi.h>

#include <algorithm>
#include <array>
#include <utility>
#include <cstring>
#include <vector>

#include "comm/adasum_tree.h"
#include "comm/collectives.h"
#include "comm/collectives_detail.h"
#include "comm/kernels.h"
#include "comm/mpi_types.h"
#include "core/error.h"

namespace wb::comm {

using detail::count_of;
using detail::kTagFold;
using detail::kTagGather;
using detail::kTagScatter;
using detail::kTagUnfold;
using detail::kTagWeights;

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

// Buffers up to this size take rank_adasum_whole (one round per level).
constexpr size_t kWholeBytes = size_t{32} << 10;

// Swaps send[0, n) with the partner's recv[0, n) in messages of at most kEagerBytes, all
// posted at once. A larger message leaves the MPI library's eager protocol for its
// rendezvous: on the 2-core machine (MPICH 4 over UCX shared memory, default settings) one
// 16 KB Sendrecv made a 16 KB Adasum take 9.3 us against MPI_Allreduce's 3.4 us (2.8x; 3.8
// us with UCX_RNDV_THRESH=256k), while two 8 KB messages stay eager. MPI_Allreduce itself
// cuts a 16 KB buffer into 8 KB halves. Not pipelined_exchange with a small chunk: it waits
// for receive j before posting send j + 1, a round trip per message, where these few small
// messages should all be in flight together. (The fold of a non-power-of-two rank count,
// rank_adasum's phases 0 and 3, still sends one message of up to kWholeBytes: not measured,
// the 2-core machine cannot run 3 busy-polling ranks.)
constexpr size_t kEagerBytes = size_t{8} << 10;
template <class T>
void eager_swap(MPI_Comm comm, int partner, int tag, const T* send, T* recv, size_t n) {
  const MPI_Datatype dt = mpi_type<T>();
  const size_t per = kEagerBytes / sizeof(T), m = (n + per - 1) / per;
  constexpr size_t kMaxMsgs = kWholeBytes / kEagerBytes;
  WB_ASSERT(m <= kMaxMsgs, "eager_swap: more than kWholeBytes");
  MPI_Request req[2 * kMaxMsgs];
  for (size_t j = 0; j < m; ++j)
    WB_CHECK_MPI(MPI_Irecv(recv + j * per, count_of(std::min(per, n - j * per)), dt, partner, tag,
                           comm, &req[j]));
  for (size_t j = 0; j < m; ++j)
    WB_CHECK_MPI(MPI_Isend(send + j * per, count_of(std::min(per, n - j * per)), dt, partner, tag,
                           comm, &req[m + j]));
  WB_CHECK_MPI(MPI_Waitall(static_cast<int>(2 * m), req, MPI_STATUSES_IGNORE));
}

// A node's [a.b, a.a, b.b] with the kernel the in-rank tree uses for the same node
// (Sched::internal below).
template <class T>
void node_dot3(const T* a, const T* b, size_t n, bool internal, double* v) {
  if (internal)
    kern::dot3_one_chain(a, b, n, v);
  else
    kern::dot3(a, b, n, v);
}

// One node of the tree (comm/adasum_tree.h) over one whole piece held by this rank:
// out <- AS(a, b), a the left child's values, b the right's; out may be either.
template <class T>
void node_combine(T* out, const T* a, const T* b, size_t n, bool internal) {
  double v[3] = {0, 0, 0}, ca, cb;
  node_dot3(a, b, n, internal, v);
  adasum_coefficients(v[0], v[1], v[2], ca, cb);
  kern::combine(out, a, b, n, ca, cb);
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

// One level of recursive vector halving: the slice [lo, hi) this rank holds, halved at mid.
struct Step {
  size_t lo, mid, hi;
  bool upper;  // bit l of my position: I keep the upper half [mid, hi)
  size_t keep_lo() const { return upper ? mid : lo; }
  size_t keep_hi() const { return upper ? hi : mid; }
  size_t send_lo() const { return upper ? lo : mid; }
  size_t send_hi() const { return upper ? mid : hi; }
  // Algorithm 1's halving of [lo, hi) at its midpoint (the vector, not the worker tree; the aligned
  // schedule moves the cut to a tensor boundary instead: aligned_mid).
  static Step halved(size_t lo, size_t hi, bool upper) { return {lo, lo + (hi - lo) / 2, hi, upper}; }
};

// Phase 2 of every RVHDD schedule (Algorithm 1's allgather; the sum's too): the levels in
// reverse, each rank sends the half it kept at level l and receives the half it sent.
// produce(offset, len) runs before each chunk of the LAST level's send goes out (offsets into
// x), so that a schedule may fuse its final combine with the first exchange.
template <class T, class Produce>
void allgather_levels(MPI_Comm comm, int position, const std::vector<int>& position_rank, T* x,
                      const std::vector<Step>& steps, Produce&& produce_last) {
  for (size_t l = steps.size(); l-- > 0;) {
    const Step& st = steps[l];
    const int partner = position_rank[static_cast<size_t>(position ^ (1 << l))];
    T* kept = x + st.keep_lo();
    if (l + 1 == steps.size())
      pipelined_exchange(comm, partner, kTagGather, kept, st.keep_hi() - st.keep_lo(), x + st.send_lo(),
                         st.send_hi() - st.send_lo(),
                         [&](size_t off, size_t len) { produce_last(st.keep_lo() + off, len); }, Nothing{});
    else
      pipelined_exchange(comm, partner, kTagGather, kept, st.keep_hi() - st.keep_lo(), x + st.send_lo(),
                         st.send_hi() - st.send_lo(), Nothing{}, Nothing{});
  }
}

// What the Adasum schedules below need of Collectives' RVHDD plan (collectives.h).
struct Sched {
  MPI_Comm comm;
  int position;
  const std::vector<int>& position_rank;
  const std::vector<MPI_Comm>& level_comms;
  // Whether level 0's children (the two positions' subtrees) are internal nodes of the
  // worker tree (>= 2 workers). The in-rank tree computes such a node's dot products in
  // its fused one-chain pass (kern::combine_dot3), a leaf pair's with kern::dot3; the
  // cross-rank levels use the same kernel for the same node, so that the coefficients,
  // and so the results, are bit-identical for every R. Levels >= 1 always have internal
  // children (>= 2 positions, each >= 1 worker).
  bool internal0;
  bool internal(size_t l) const { return l > 0 || internal0; }
};

// The general RVHDD of Algorithm 1: the halving point cuts tensors, so every level ends
// with an allreduce of the per-piece partial dot products over the level's group.
template <class T>
void rank_adasum_split(const Sched& c, T* x, T* s, size_t n, const std::vector<Piece>& pieces,
                       std::vector<double>& dots) {
  const size_t np = pieces.size();
  const size_t levels = c.level_comms.size();
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
    upper = (c.position & d) != 0;
    const int partner = c.position_rank[c.position ^ d];
    const Step st = Step::halved(lo, hi, upper);
    const size_t klo = st.keep_lo(), khi = st.keep_hi(), slo = st.send_lo(), shi = st.send_hi();
    std::fill(dots.begin(), dots.end(), 0.0);
    std::fill(done.begin(), done.end(), 0);
    // Partial [a.b, a.a, b.b] per piece, chunk by chunk as the partner's half arrives;
    // pieces that end in this chunk and started inside the kept slice are finished here.
    pipelined_exchange(c.comm, partner, kTagScatter, x + slo, shi - slo, s, khi - klo, Nothing{},
                       [&](size_t off, size_t len) {
                         for_pieces(pieces, klo + off, klo + off + len, [&](size_t j, size_t o, size_t m) {
                           const Piece& pc = pieces[j];
                           const T* mine = x + o;
                           const T* got = s + (o - klo);
                           if (pc.seg < 0) {  // gap: the left value stays
                             if (upper) std::memcpy(x + o, got, m * sizeof(T));
                             return;
                           }
                           double* v = &dots[3 * j];
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
    WB_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, dots.data(), count_of(dots.size()), MPI_DOUBLE,
                               MPI_SUM, c.level_comms[l]));
    for (size_t j = 0; j < np; ++j) {
      coef[2 * j] = 1.0;
      coef[2 * j + 1] = 0.0;
      if (pieces[j].seg >= 0)
        adasum_coefficients(dots[3 * j], dots[3 * j + 1], dots[3 * j + 2], coef[2 * j], coef[2 * j + 1]);
    }
    steps.push_back(st);
    lo = klo;
    hi = khi;
    // The last level's combine is fused into the first allgather step below.
    if (l + 1 < levels) combine_range(lo, hi);
  }
  allgather_levels(c.comm, c.position, c.position_rank, x, steps,  // phase 2
                   [&](size_t off, size_t len) { combine_range(off, off + len); });
}

// Small buffers: recursive doubling. At level l every rank swaps its WHOLE current vector
// with its partner and both compute the node AS(left, right) over all of it: one message
// round per level instead of RVHDD's two plus a coefficient allreduce (a buffer this small
// costs latency, not bandwidth; at R = 2 the bytes are the same as RVHDD's). Both
// partners compute the same numbers in the same order, so they agree bit for bit.
template <class T>
void rank_adasum_whole(const Sched& c, T* x, T* s, size_t n, const std::vector<Piece>& pieces) {
  for (size_t l = 0; l < c.level_comms.size(); ++l) {
    const int d = 1 << l;
    const bool upper = (c.position & d) != 0;
    const int partner = c.position_rank[static_cast<size_t>(c.position ^ d)];
    eager_swap(c.comm, partner, kTagScatter, x, s, n);
    const bool internal = c.internal(l);
    for (const Piece& pc : pieces) {
      T* mine = x + pc.offset;
      const T* got = s + pc.offset;
      if (pc.seg < 0) {  // gap: the left value stays
        if (upper) std::memcpy(mine, got, pc.size * sizeof(T));
        continue;
      }
      node_combine(mine, upper ? got : mine, upper ? mine : got, pc.size, internal);
    }
  }
}

// RVHDD split points on tensor boundaries (collectives.h, "Adasum, cross-rank part"):
// when every halving point of every level is a piece boundary, no tensor is ever cut, each
// rank computes whole tensors' dot products from its own and the received data, and the
// per-level coefficient allreduce (a latency-bound message round) disappears. The price is
// imbalance: a split moves from the midpoint to the nearest boundary, accepted when it
// moves at most kMaxShiftBytes or 1/16 of the slice.
constexpr size_t kMaxShiftBytes = size_t{64} << 10;
constexpr size_t kNoSplit = ~size_t{0};

size_t aligned_mid(const std::vector<Piece>& pieces, size_t lo, size_t hi, size_t elem_bytes) {
  if (hi - lo < 2) return kNoSplit;
  const size_t mid = lo + (hi - lo) / 2;
  auto it = std::upper_bound(pieces.begin(), pieces.end(), mid,
                             [](size_t v, const Piece& p) { return v < p.offset; });
  size_t best = kNoSplit, dist = kNoSplit;
  if (it != pieces.end() && it->offset < hi) {
    best = it->offset;
    dist = it->offset - mid;
  }
  if (it != pieces.begin()) {
    const size_t b = std::prev(it)->offset;  // <= mid
    if (b > lo && mid - b < dist) {
      best = b;
      dist = mid - b;
    }
  }
  if (best == kNoSplit) return kNoSplit;
  return dist * elem_bytes <= kMaxShiftBytes || dist <= (hi - lo) / 16 ? best : kNoSplit;
}

// Every slice of level l (all positions: every rank must take the same branch) split on a
// boundary; `mine` collects this position's slices.
bool plan_aligned(const std::vector<Piece>& pieces, size_t lo, size_t hi, size_t l, size_t levels,
                  int position, bool on_path, size_t elem_bytes, std::vector<Step>& mine) {
  if (l == levels) return true;
  const size_t mid = aligned_mid(pieces, lo, hi, elem_bytes);
  if (mid == kNoSplit) return false;
  const bool upper = (position >> l) & 1;
  if (on_path) mine[l] = {lo, mid, hi, upper};
  return plan_aligned(pieces, lo, mid, l + 1, levels, position, on_path && !upper, elem_bytes, mine) &&
         plan_aligned(pieces, mid, hi, l + 1, levels, position, on_path && upper, elem_bytes, mine);
}

template <class T>
bool rank_adasum_aligned(const Sched& c, T* x, T* s, size_t n, const std::vector<Piece>& pieces) {
  const size_t levels = c.level_comms.size();
  std::vector<Step> steps(levels);
  if (!plan_aligned(pieces, 0, n, 0, levels, c.position, true, sizeof(T), steps)) return false;
  for (size_t l = 0; l < levels; ++l) {  // reduce-scatter, whole tensors combined on arrival
    const Step& st = steps[l];
    const int partner = c.position_rank[static_cast<size_t>(c.position ^ (1 << l))];
    const size_t klo = st.keep_lo(), khi = st.keep_hi(), slo = st.send_lo(), shi = st.send_hi();
    const bool internal = c.internal(l);
    pipelined_exchange(c.comm, partner, kTagScatter, x + slo, shi - slo, s, khi - klo, Nothing{},
                       [&](size_t off, size_t len) {
                         for_pieces(pieces, klo + off, klo + off + len, [&](size_t j, size_t o, size_t m) {
                           const Piece& pc = pieces[j];
                           if (pc.seg < 0) {  // gap: the left value stays
                             if (st.upper) std::memcpy(x + o, s + (o - klo), m * sizeof(T));
                             return;
                           }
                           if (o + m != pc.offset + pc.size) return;  // rest still on the way
                           T* mine = x + pc.offset;
                           const T* got = s + (pc.offset - klo);
                           node_combine(mine, st.upper ? got : mine, st.upper ? mine : got, pc.size, internal);
                         });
                       });
  }
  allgather_levels(c.comm, c.position, c.position_rank, x, steps, Nothing{});
  return true;
}

}  // namespace

sim::AdasumSchedule detail::adasum_schedule(const std::vector<Piece>& pieces, size_t n, size_t levels,
                                           size_t elem_bytes) {
  if (n * elem_bytes <= kWholeBytes) return sim::AdasumSchedule::kWhole;
  std::vector<Step> steps(levels);
  return plan_aligned(pieces, 0, n, 0, levels, 0, true, elem_bytes, steps) ? sim::AdasumSchedule::kAligned
                                                                           : sim::AdasumSchedule::kSplit;
}

void detail::aligned_level_bytes(const std::vector<Piece>& pieces, size_t n, size_t levels, size_t elem_bytes,
                                 std::vector<double>& out) {
  out.assign(levels, 0.0);
  // Breadth first over plan_aligned's slices: level l holds 2^l of them.
  std::vector<std::pair<size_t, size_t>> slices{{0, n}}, next;
  for (size_t l = 0; l < levels; ++l) {
    next.clear();
    for (const auto& [lo, hi] : slices) {
      const size_t mid = aligned_mid(pieces, lo, hi, elem_bytes);
      WB_ASSERT(mid != kNoSplit, "aligned_level_bytes: the schedule is not aligned");
      const size_t half = std::max(mid - lo, hi - mid);
      out[l] = std::max(out[l], 2.0 * static_cast<double>(half * elem_bytes));
      next.push_back({lo, mid});
      next.push_back({mid, hi});
    }
    slices.swap(next);
  }
}

template <class T>
void Collectives::rank_adasum(T* x, size_t n, const std::vector<Piece>& pieces) {
  const MPI_Datatype dt = mpi_type<T>();
  if (is_extra_) {  // phases 0 and 3 on the folded rank: hand over, wait for the result
    WB_CHECK_MPI(MPI_Send(x, count_of(n), dt, fold_partner_, kTagFold, comm_));
    WB_CHECK_MPI(MPI_Recv(x, count_of(n), dt, fold_partner_, kTagUnfold, comm_, MPI_STATUS_IGNORE));
    return;
  }
  const size_t np = pieces.size();
  T* s = scratch<T>(n);
  dots_.assign(3 * np, 0.0);
  if (fold_partner_ >= 0) {  // phase 0: x <- AS(x, extra), x is the left subtree
    WB_CHECK_MPI(MPI_Recv(s, count_of(n), dt, fold_partner_, kTagFold, comm_, MPI_STATUS_IGNORE));
    const bool internal = tree_internal(0, layout_.count(rank_)) || tree_internal(0, layout_.count(fold_partner_));
    for (const Piece& pc : pieces)
      if (pc.seg >= 0) node_combine(x + pc.offset, x + pc.offset, s + pc.offset, pc.size, internal);
  }
  // Workers under position p's depth-k node: ranks position_rank_[p] .. the next position's.
  auto pos_workers = [&](int p) {
    const size_t q = static_cast<size_t>(p);
    const int r0 = position_rank_[q];
    const int r1 = q + 1 < position_rank_.size() ? position_rank_[q + 1] : layout_.ranks();
    return (r1 < layout_.ranks() ? layout_.first(r1) : layout_.workers()) - layout_.first(r0);
  };
  const bool internal0 =
      !level_comms_.empty() && (pos_workers(position_) >= 2 || pos_workers(position_ ^ 1) >= 2);
  const Sched c{comm_, position_, position_rank_, level_comms_, internal0};
  if (n * sizeof(T) <= kWholeBytes)
    rank_adasum_whole(c, x, s, n, pieces);
  else if (!rank_adasum_aligned(c, x, s, n, pieces))
    rank_adasum_split(c, x, s, n, pieces, dots_);
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
    const Step st = Step::halved(lo, hi, upper);
    const size_t klo = st.keep_lo(), slo = st.send_lo();
    pipelined_exchange(comm_, partner, kTagScatter, x + slo, st.send_hi() - slo, s, st.keep_hi() - klo, Nothing{},
                       [&](size_t off, size_t len) { kern::add(x + klo + off, s + off, len); });
    steps.push_back(st);
    lo = klo;
    hi = st.keep_hi();
  }
  allgather_levels(comm_, position_, position_rank_, x, steps, Nothing{});
  if (fold_partner_ >= 0)
    WB_CHECK_MPI(MPI_Send(x, count_of(n), dt, fold_partner_, kTagUnfold, comm_));
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
  pipelined_exchange(comm, other, kTagGather, p[0] + klo, kn, p[0] + slo, sn, Nothing{}, Nothing{});
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
