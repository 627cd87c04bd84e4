// The cross-rank Adasum and sum, written once with the transport as a parameter, as Horovod's
// Adasum<Communicator> is (Maleki et al., MLSys 2021 section 4; the schedules, bytes and worked
// example are in comm/collectives.h, "Adasum, cross-rank part"). Two transports implement it:
//   MpiTransport (comm/transport_mpi.h)            the run's ranks: every training run
//   LoopbackTransport (comm/transport_loopback.h)  ranks as threads of one process, memory
//                                                  copies for messages: the schedules at any
//                                                  rank count, on a machine with few cores
// The in-rank subtree (comm/collectives.cpp) and the device tree (cuda/collectives_cuda.cu) move
// no messages: they evaluate the same tree (comm/adasum_tree.h) over buffers in one memory.
//
// A Transport provides, peers being ranks of the run:
//   using Request;                                   default-constructible handle
//   template <class T> Request isend(int peer, int tag, const T* p, size_t n);
//   template <class T> Request irecv(int peer, int tag, T* p, size_t n);
//   void wait(Request&);
//   void wait_all(Request* r, size_t k);
//   void sum_doubles(size_t level, double* v, size_t n);  // in place over level l's group
// Messages between a pair with one tag arrive in the order sent (MPI's non-overtaking rule).
// The group of level l is the 2^(l+1) positions that share position >> (l+1) (Algorithm 1
// line 16); sum_doubles must give every member the same sums.
//
// Private to comm/: the public face is comm::Collectives.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "comm/adasum_tree.h"
#include "comm/kernels.h"
#include "comm/layout.h"
#include "comm/piece.h"
#include "core/error.h"
#include "sim/cost_model.h"

namespace wb::comm::rvhdd {

// Message tags of the phases (fold, reduce-scatter, allgather, unfold).
constexpr int kTagFold = 301, kTagScatter = 302, kTagGather = 303, kTagUnfold = 304;

// The plan over ranks (collectives.h, "plan"): the floor-split tree over R ranks, cut at depth
// k = floor(log2 R) into P = 2^k positions of 1 or 2 ranks; a 2-rank node is folded. A pure
// function of the layout, so every rank (and every transport) derives the same plan.
struct Plan {
  int position = -1;             // my position among the P active ranks; -1 on an extra rank
  int fold_partner = -1;         // extra rank (on an active rank) or partner (on an extra)
  bool is_extra = false;
  std::vector<int> position_rank;  // rank of each position
  size_t levels = 0;             // k
  // Whether level 0's children (the two positions' subtrees) are internal nodes of the worker
  // tree (>= 2 workers). The in-rank tree computes such a node's dot products in its fused
  // one-chain pass (kern::combine_dot3), a leaf pair's with kern::dot3; the cross-rank levels
  // use the same kernel for the same node, so that the coefficients, and so the results, are
  // bit-identical for every R. Levels >= 1 always have internal children (>= 2 positions,
  // each >= 1 worker).
  bool internal0 = false;
  bool fold_internal = false;    // the same for the fold's node (own, extra)
  bool internal(size_t l) const { return l > 0 || internal0; }
};

Plan make_plan(const Layout& layout, int rank);

// ---------------------------------------------------------------- schedule constants

// Elements per message of a pipelined exchange (1 MB of floats). Each RVHDD exchange is cut
// into chunks so that (1) the dot products / adds run on each chunk right after it lands,
// while it is still in cache, and every tensor that ends in the chunk is combined right
// there, (2) the combine of tensors that straddle a slice boundary is computed chunk by chunk
// just before the chunk is sent in the allgather, and (3) the MPI library stays in its
// efficient mid-size protocol (a single multi-MB message was measured slower here). 64K,
// 128K, 256K and 1M elements were measured on the 2-core VM: 256K was best at 1-16 MB
// (Adasum/MPI_Allreduce 1.17 at 1 MB vs 1.31 with 64K). The chunking is part of the result
// (the split schedule's dot products accumulate chunk by chunk), so every transport uses it.
constexpr size_t kPipe = size_t{1} << 18;

// Buffers up to this size take adasum_whole (one round per level).
constexpr size_t kWholeBytes = size_t{32} << 10;

// adasum_whole swaps in messages of at most this many bytes, all posted at once. A larger
// message leaves the MPI library's eager protocol for its rendezvous: on the 2-core machine
// (MPICH 4 over UCX shared memory, default settings) one 16 KB Sendrecv made a 16 KB Adasum
// take 9.3 us against MPI_Allreduce's 3.4 us (2.8x; 3.8 us with UCX_RNDV_THRESH=256k), while
// two 8 KB messages stay eager. MPI_Allreduce itself cuts a 16 KB buffer into 8 KB halves.
// Not pipelined_exchange with a small chunk: it waits for receive j before posting send j + 1,
// a round trip per message, where these few small messages should all be in flight together.
// (The fold of a non-power-of-two rank count still sends one message of up to kWholeBytes:
// not measured, the 2-core machine cannot run 3 busy-polling MPI ranks.)
constexpr size_t kEagerBytes = size_t{8} << 10;

// ---------------------------------------------------------------- the schedule's choice

// The Adasum schedule for n elements of elem_bytes in `pieces` over 2^levels positions,
// chosen identically on every rank: what the cost model prices (sim/cost_model.h).
sim::AdasumSchedule schedule_of(const std::vector<Piece>& pieces, size_t n, size_t levels, size_t elem_bytes);
// The aligned schedule's bytes per level as the cost model prices them
// (sim::CommCall::level_bytes): level l's slices halved on tensor boundaries as adasum_aligned
// halves them, 2 x the larger half of the most uneven slice, in bytes.
// Requires schedule_of(...) == kAligned.
void aligned_level_bytes(const std::vector<Piece>& pieces, size_t n, size_t levels, size_t elem_bytes,
                         std::vector<double>& out);

// One level of recursive vector halving: the slice [lo, hi) this rank holds, halved at mid.
struct Step {
  size_t lo, mid, hi;
  bool upper;  // bit l of my position: I keep the upper half [mid, hi)
  size_t keep_lo() const { return upper ? mid : lo; }
  size_t keep_hi() const { return upper ? hi : mid; }
  size_t send_lo() const { return upper ? lo : mid; }
  size_t send_hi() const { return upper ? mid : hi; }
  // Algorithm 1's halving of [lo, hi) at its midpoint (the vector, not the worker tree; the
  // aligned schedule moves the cut to a tensor boundary instead: plan_aligned).
  static Step halved(size_t lo, size_t hi, bool upper) { return {lo, lo + (hi - lo) / 2, hi, upper}; }
};

// The aligned schedule's steps for `position` (every slice of every level split on a piece
// boundary), or false when some slice has no boundary close enough to its midpoint.
bool plan_aligned(const std::vector<Piece>& pieces, size_t n, size_t levels, int position, size_t elem_bytes,
                  std::vector<Step>& mine);

// ---------------------------------------------------------------- building blocks

struct Nothing {
  void operator()(size_t, size_t) const {}
};

// Sends send[0, sn) to and receives recv[0, rn) from `peer`, kPipe elements per message.
// produce(off, len) runs just before send chunk [off, off+len) is posted; consume(off, len)
// runs when receive chunk [off, off+len) has landed, in order (so any accumulation it does
// has a fixed order: deterministic). All receives are posted first, sends are nonblocking: no
// deadlock whatever the partner's pace.
template <class Tr, class T, class Produce, class Consume>
void pipelined_exchange(Tr& t, int peer, int tag, const T* send, size_t sn, T* recv, size_t rn,
                        Produce&& produce, Consume&& consume) {
  using Req = typename Tr::Request;
  const size_t cs = (sn + kPipe - 1) / kPipe, cr = (rn + kPipe - 1) / kPipe;
  std::vector<Req> rreq(cr), sreq(cs);
  for (size_t j = 0; j < cr; ++j) rreq[j] = t.irecv(peer, tag, recv + j * kPipe, std::min(kPipe, rn - j * kPipe));
  for (size_t j = 0; j < std::max(cs, cr); ++j) {
    if (j < cs) {
      const size_t len = std::min(kPipe, sn - j * kPipe);
      produce(j * kPipe, len);
      sreq[j] = t.isend(peer, tag, send + j * kPipe, len);
    }
    if (j < cr) {
      t.wait(rreq[j]);
      consume(j * kPipe, std::min(kPipe, rn - j * kPipe));
    }
  }
  if (cs > 0) t.wait_all(sreq.data(), cs);
}

// Swaps send[0, n) with the peer's recv[0, n) in messages of at most kEagerBytes, all posted
// at once (n * sizeof(T) <= kWholeBytes).
template <class Tr, class T>
void eager_swap(Tr& t, int peer, int tag, const T* send, T* recv, size_t n) {
  const size_t per = kEagerBytes / sizeof(T), m = (n + per - 1) / per;
  constexpr size_t kMaxMsgs = kWholeBytes / kEagerBytes;
  WB_ASSERT(m <= kMaxMsgs, "eager_swap: more than kWholeBytes");
  typename Tr::Request req[2 * kMaxMsgs];
  for (size_t j = 0; j < m; ++j) req[j] = t.irecv(peer, tag, recv + j * per, std::min(per, n - j * per));
  for (size_t j = 0; j < m; ++j) req[m + j] = t.isend(peer, tag, send + j * per, std::min(per, n - j * per));
  t.wait_all(req, 2 * m);
}

template <class Tr, class T>
void send(Tr& t, int peer, int tag, const T* x, size_t n) {
  auto r = t.isend(peer, tag, x, n);
  t.wait(r);
}
template <class Tr, class T>
void recv(Tr& t, int peer, int tag, T* x, size_t n) {
  auto r = t.irecv(peer, tag, x, n);
  t.wait(r);
}

// A node's [a.b, a.a, b.b] with the kernel the in-rank tree uses for the same node.
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

// Phase 2 of every RVHDD schedule (Algorithm 1's allgather; the sum's too): the levels in
// reverse, each rank sends the half it kept at level l and receives the half it sent.
// produce(offset, len) runs before each chunk of the LAST level's send goes out (offsets into
// x), so that a schedule may fuse its final combine with the first exchange.
template <class Tr, class T, class Produce>
void allgather_levels(Tr& t, const Plan& c, T* x, const std::vector<Step>& steps, Produce&& produce_last) {
  for (size_t l = steps.size(); l-- > 0;) {
    const Step& st = steps[l];
    const int peer = c.position_rank[static_cast<size_t>(c.position ^ (1 << l))];
    T* kept = x + st.keep_lo();
    if (l + 1 == steps.size())
      pipelined_exchange(t, peer, kTagGather, kept, st.keep_hi() - st.keep_lo(), x + st.send_lo(),
                         st.send_hi() - st.send_lo(),
                         [&](size_t off, size_t len) { produce_last(st.keep_lo() + off, len); }, Nothing{});
    else
      pipelined_exchange(t, peer, kTagGather, kept, st.keep_hi() - st.keep_lo(), x + st.send_lo(),
                         st.send_hi() - st.send_lo(), Nothing{}, Nothing{});
  }
}

// ---------------------------------------------------------------- the three Adasum schedules

// The general RVHDD of Algorithm 1: the halving point cuts tensors, so every level ends with
// a sum of the per-piece partial dot products over the level's group.
template <class Tr, class T>
void adasum_split(Tr& t, const Plan& c, T* x, T* s, size_t n, const std::vector<Piece>& pieces,
                  std::vector<double>& dots) {
  const size_t np = pieces.size();
  std::vector<Step> steps;
  std::vector<double> coef(2 * np, 0.0);
  size_t lo = 0, hi = n;
  bool upper = false;
  // done[j]: piece j lies wholly inside this level's kept slice, so its dot products are
  // complete on this rank alone (the group sum below only adds zeros to them) and it was
  // combined the moment its last chunk arrived, while still in cache, instead of in a second
  // pass over the slice after the sum. Bit-identical either way: x + 0.0 is exact, so the
  // coefficients are the same.
  std::vector<char> done(np, 0);
  // kept <- ca*a + cb*b over [clo, chi) of the current kept slice [lo, hi) (Algorithm 1 line
  // 18); a = left subtree's part, b = right's: element i is x[i] (mine) and s[i - lo]
  // (received).
  auto combine_range = [&](size_t clo, size_t chi) {
    for_pieces(pieces, clo, chi, [&](size_t j, size_t o, size_t len) {
      if (pieces[j].seg < 0 || done[j]) return;  // gaps and local pieces: done on arrival
      const T* mine = x + o;
      const T* got = s + (o - lo);
      kern::combine(x + o, upper ? got : mine, upper ? mine : got, len, coef[2 * j], coef[2 * j + 1]);
    });
  };
  for (size_t l = 0; l < c.levels; ++l) {  // phase 1: reduce-scatter
    const int d = 1 << l;
    upper = (c.position & d) != 0;
    const int peer = c.position_rank[static_cast<size_t>(c.position ^ d)];
    const Step st = Step::halved(lo, hi, upper);
    const size_t klo = st.keep_lo(), khi = st.keep_hi(), slo = st.send_lo(), shi = st.send_hi();
    std::fill(dots.begin(), dots.end(), 0.0);
    std::fill(done.begin(), done.end(), 0);
    // Partial [a.b, a.a, b.b] per piece, chunk by chunk as the partner's half arrives; pieces
    // that end in this chunk and started inside the kept slice are finished here.
    pipelined_exchange(t, peer, kTagScatter, x + slo, shi - slo, s, khi - klo, Nothing{},
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
    // Finish the partial dot products over the 2d ranks that share each tensor (Algorithm 1
    // lines 15-17): every tensor gets its unsplit coefficients.
    t.sum_doubles(l, dots.data(), dots.size());
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
    if (l + 1 < c.levels) combine_range(lo, hi);
  }
  allgather_levels(t, c, x, steps, [&](size_t off, size_t len) { combine_range(off, off + len); });  // phase 2
}

// Small buffers: recursive doubling. At level l every rank swaps its WHOLE current vector with
// its partner and both compute the node AS(left, right) over all of it: one message round per
// level instead of RVHDD's two plus a coefficient sum (a buffer this small costs latency, not
// bandwidth; at R = 2 the bytes are the same as RVHDD's). Both partners compute the same
// numbers in the same order, so they agree bit for bit.
template <class Tr, class T>
void adasum_whole(Tr& t, const Plan& c, T* x, T* s, size_t n, const std::vector<Piece>& pieces) {
  for (size_t l = 0; l < c.levels; ++l) {
    const int d = 1 << l;
    const bool upper = (c.position & d) != 0;
    const int peer = c.position_rank[static_cast<size_t>(c.position ^ d)];
    eager_swap(t, peer, kTagScatter, x, s, n);
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

// RVHDD with every split point on a tensor boundary (collectives.h, "Adasum, cross-rank
// part"): no tensor is ever cut, each rank computes whole tensors' dot products from its own
// and the received data, and the coefficient sum disappears. False (nothing done) when the
// pieces do not allow it.
template <class Tr, class T>
bool adasum_aligned(Tr& t, const Plan& c, T* x, T* s, size_t n, const std::vector<Piece>& pieces) {
  std::vector<Step> steps;
  if (!plan_aligned(pieces, n, c.levels, c.position, sizeof(T), steps)) return false;
  for (size_t l = 0; l < c.levels; ++l) {  // reduce-scatter, whole tensors combined on arrival
    const Step& st = steps[l];
    const int peer = c.position_rank[static_cast<size_t>(c.position ^ (1 << l))];
    const size_t klo = st.keep_lo(), khi = st.keep_hi(), slo = st.send_lo(), shi = st.send_hi();
    const bool internal = c.internal(l);
    pipelined_exchange(t, peer, kTagScatter, x + slo, shi - slo, s, khi - klo, Nothing{},
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
  allgather_levels(t, c, x, steps, Nothing{});
  return true;
}

// ---------------------------------------------------------------- the collectives

// Elements of scratch adasum and sum need for n elements.
inline size_t adasum_scratch(size_t n) { return n; }
inline size_t sum_scratch(const Plan& c, size_t n) { return c.fold_partner >= 0 ? n : n / 2 + 1; }

// x <- Adasum over the ranks of each rank's subtree value x (collectives.h: phases 0-3); every
// rank returns with the root's value. s: adasum_scratch(n) elements; dots: 3 per piece.
template <class Tr, class T>
void adasum(Tr& t, const Plan& c, T* x, T* s, size_t n, const std::vector<Piece>& pieces,
            std::vector<double>& dots) {
  if (c.is_extra) {  // phases 0 and 3 on the folded rank: hand over, wait for the result
    send(t, c.fold_partner, kTagFold, x, n);
    recv(t, c.fold_partner, kTagUnfold, x, n);
    return;
  }
  dots.assign(3 * pieces.size(), 0.0);
  if (c.fold_partner >= 0) {  // phase 0: x <- AS(x, extra), x is the left subtree
    recv(t, c.fold_partner, kTagFold, s, n);
    for (const Piece& pc : pieces)
      if (pc.seg >= 0) node_combine(x + pc.offset, x + pc.offset, s + pc.offset, pc.size, c.fold_internal);
  }
  if (n * sizeof(T) <= kWholeBytes)
    adasum_whole(t, c, x, s, n, pieces);
  else if (!adasum_aligned(t, c, x, s, n, pieces))
    adasum_split(t, c, x, s, n, pieces, dots);
  if (c.fold_partner >= 0) send(t, c.fold_partner, kTagUnfold, x, n);  // phase 3
}

// The same schedule with kept += received: every add is at the node of tree_sum_reference, so
// the sum is bit-identical to it for every R. s: sum_scratch(c, n) elements.
template <class Tr, class T>
void sum(Tr& t, const Plan& c, T* x, T* s, size_t n) {
  if (c.is_extra) {
    send(t, c.fold_partner, kTagFold, x, n);
    recv(t, c.fold_partner, kTagUnfold, x, n);
    return;
  }
  if (c.fold_partner >= 0) {
    recv(t, c.fold_partner, kTagFold, s, n);
    kern::add(x, s, n);
  }
  std::vector<Step> steps;
  size_t lo = 0, hi = n;
  for (size_t l = 0; l < c.levels; ++l) {
    const int d = 1 << l;
    const bool upper = (c.position & d) != 0;
    const int peer = c.position_rank[static_cast<size_t>(c.position ^ d)];
    const Step st = Step::halved(lo, hi, upper);
    const size_t klo = st.keep_lo(), slo = st.send_lo();
    pipelined_exchange(t, peer, kTagScatter, x + slo, st.send_hi() - slo, s, st.keep_hi() - klo, Nothing{},
                       [&](size_t off, size_t len) { kern::add(x + klo + off, s + off, len); });
    steps.push_back(st);
    lo = klo;
    hi = st.keep_hi();
  }
  allgather_levels(t, c, x, steps, Nothing{});
  if (c.fold_partner >= 0) send(t, c.fold_partner, kTagUnfold, x, n);
}

}  // namespace wb::comm::rvhdd
