// Schedules and byte counts: see the header comment of comm/collectives.h.
#include "comm/collectives.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cstring>
#include <string>

#include "comm/kernels.h"
#include "comm/mpi_types.h"
#include "runtime/error.h"

namespace wb::comm {

namespace {

constexpr int kTagFold = 301, kTagScatter = 302, kTagGather = 303, kTagUnfold = 304;
// Elements per chunk of the fused "compute then fan out" passes: 32 KB of floats, so the
// chunk is still in L1/L2 when it is copied into the W buffers.
constexpr size_t kChunk = 8192;
// Fan-outs use plain stores. Non-temporal stores were tried and measured slower on the
// 2-core Xeon VM (in-process Adasum, W = 64 x 1 MB: 19.1 ms with them, 14.3 ms without):
// the last-level cache holds the W buffers, and the caller reads them next anyway.

int comm_size(MPI_Comm c) {
  int s = 1;
  WB_CHECK_MPI(MPI_Comm_size(c, &s));
  return s;
}

int count_of(size_t n) {
  WB_ASSERT(n <= static_cast<size_t>(INT_MAX), "buffer too large for one MPI message");
  return static_cast<int>(n);
}

// Depth-k nodes of the floor-split tree over ranks [r0, r1) (see layout.h).
void depth_nodes(int r0, int r1, int depth, int k, std::vector<std::pair<int, int>>& out) {
  if (depth == k) {
    out.emplace_back(r0, r1);
    return;
  }
  const int q = r0 + (r1 - r0) / 2;
  depth_nodes(r0, q, depth + 1, k, out);
  depth_nodes(q, r1, depth + 1, k, out);
}

template <class T>
std::vector<T*> pointers(std::span<const std::span<T>> bufs) {
  WB_ASSERT(!bufs.empty(), "no local buffers");
  std::vector<T*> p(bufs.size());
  for (size_t i = 0; i < bufs.size(); ++i) {
    WB_ASSERT(bufs[i].size() == bufs[0].size(), "all worker buffers must have the same length");
    p[i] = bufs[i].data();
  }
  return p;
}

// dst[w][off, off+len) <- src for every local buffer (src may be one of them).
template <class T>
void fan_out_chunk(const std::vector<T*>& p, size_t off, const T* src, size_t len) {
  for (T* d : p)
    if (d + off != src) std::memcpy(d + off, src, len * sizeof(T));
}

template <class T>
void fan_out(const std::vector<T*>& p, size_t n, const T* src) {
  if (p.size() <= 1) return;
  for (size_t off = 0; off < n; off += kChunk)
    fan_out_chunk(p, off, src + off, std::min(kChunk, n - off));
}

// ---------------------------------------------------------------- in-rank Adasum tree
// Node [lo, hi) of the local tree, restricted to one tensor's range [o, o+len), lives in
// p[lo] once materialized (in place). Materializes the node's two children and returns
// the node's coefficients {ca, cb}. One fused pass (kern::combine_dot3) per call.
//
// The tree runs tensor by tensor (the coefficients of one tensor never depend on another):
// W slices of one tensor usually fit in L2 together (64 workers x 4K floats = 1 MB), so
// the leaves are read from memory once and every later level hits the cache, instead of
// streaming all W buffers through memory once per tree level. Same operations in the same
// order per tensor as a level-by-level sweep: results are unchanged, bit for bit.
template <class T>
std::array<double, 2> local_node(const std::vector<T*>& p, size_t lo, size_t hi, size_t o,
                                 size_t len) {
  const size_t m = lo + (hi - lo) / 2;
  const bool il = m - lo >= 2, ir = hi - m >= 2;  // internal children: materialize them
  std::array<double, 2> cl{1, 0}, cr{1, 0};
  if (il) cl = local_node(p, lo, m, o, len);
  if (ir) cr = local_node(p, m, hi, o, len);
  const size_t ml = lo + (m - lo) / 2, mr = m + (hi - m) / 2;
  kern::Side<T> a{p[lo] + o}, b{p[m] + o};
  if (il) a = {p[lo] + o, p[ml] + o, cl[0], cl[1]};
  if (ir) b = {p[m] + o, p[mr] + o, cr[0], cr[1]};
  double v[3] = {0, 0, 0};
  if (il && ir)
    kern::combine_dot3<T, true, true>(a, b, len, v);
  else if (il)
    kern::combine_dot3<T, true, false>(a, b, len, v);
  else if (ir)
    kern::combine_dot3<T, false, true>(a, b, len, v);
  else
    kern::dot3(a.x, b.x, len, v);
  std::array<double, 2> c{1, 0};
  adasum_coefficients(v[0], v[1], v[2], c[0], c[1]);
  return c;
}

// In-rank floor-split tree of a += b over one chunk [off, off+len): a whole subtree per
// chunk (sum is elementwise), so the local reduction is a single pass over the inputs.
template <class T>
void tree_add_chunk(const std::vector<T*>& p, size_t lo, size_t hi, size_t off, size_t len) {
  if (hi - lo <= 1) return;
  const size_t m = lo + (hi - lo) / 2;
  tree_add_chunk(p, lo, m, off, len);
  tree_add_chunk(p, m, hi, off, len);
  kern::add(p[lo] + off, p[m] + off, len);
}

}  // namespace

// ---------------------------------------------------------------- plan

Collectives::Collectives(MPI_Comm comm, int workers) : layout_(workers, comm_size(comm)) {
  WB_CHECK_MPI(MPI_Comm_dup(comm, &comm_));
  WB_CHECK_MPI(MPI_Comm_rank(comm_, &rank_));
  const int R = layout_.ranks();
  int k = 0;
  while ((2 << k) <= R) ++k;  // P = 2^k <= R < 2P
  std::vector<std::pair<int, int>> nodes;
  depth_nodes(0, R, 0, k, nodes);
  position_rank_.resize(nodes.size());
  for (size_t p = 0; p < nodes.size(); ++p) {
    const auto [r0, r1] = nodes[p];
    WB_ASSERT(r1 - r0 == 1 || r1 - r0 == 2, "depth-k rank nodes hold 1 or 2 ranks");
    position_rank_[p] = r0;
    if (rank_ == r0) {
      position_ = static_cast<int>(p);
      if (r1 - r0 == 2) fold_partner_ = r0 + 1;
    } else if (rank_ == r0 + 1 && r1 - r0 == 2) {
      is_extra_ = true;
      fold_partner_ = r0;
    }
  }
  for (int l = 0; l < k; ++l) {
    MPI_Comm c = MPI_COMM_NULL;
    const int color = is_extra_ ? MPI_UNDEFINED : (position_ >> (l + 1));
    WB_CHECK_MPI(MPI_Comm_split(comm_, color, is_extra_ ? 0 : position_, &c));
    level_comms_.push_back(c);
  }
}

Collectives::~Collectives() {
  int fin = 0;
  MPI_Finalized(&fin);
  if (fin) return;
  for (MPI_Comm& c : level_comms_)
    if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

std::vector<Piece> Collectives::make_pieces(size_t n, std::span<const Segment> segs) {
  std::vector<Piece> out;
  size_t at = 0;
  for (size_t s = 0; s < segs.size(); ++s) {
    const Segment& g = segs[s];
    WB_ASSERT(g.offset >= at && g.offset + g.size <= n,
              "Adasum segments must be sorted, non-overlapping and inside the buffer");
    if (g.offset > at) out.push_back({at, g.offset - at, -1});
    if (g.size > 0) out.push_back({g.offset, g.size, static_cast<int>(s)});
    at = g.offset + g.size;
  }
  if (at < n) out.push_back({at, n - at, -1});
  return out;
}

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

// ---------------------------------------------------------------- ops

template <class T>
void Collectives::allreduce(std::span<const std::span<T>> bufs, ReduceOp op) {
  WB_ASSERT(static_cast<int>(bufs.size()) == local_count(), "one buffer per local worker");
  const std::vector<T*> p = pointers(bufs);
  const size_t n = bufs[0].size(), L = p.size();
  if (n == 0) return;
  const bool avg = op == ReduceOp::kAverage;
  const T W = static_cast<T>(layout_.workers());
  std::vector<T> tmp(std::min(kChunk, n));
  if (ranks() == 1) {  // one pass: subtree sum, divide, fan out, chunk by chunk
    for (size_t off = 0; off < n; off += kChunk) {
      const size_t len = std::min(kChunk, n - off);
      tree_add_chunk(p, 0, L, off, len);
      const T* src = p[0] + off;
      if (avg) {
        for (size_t i = 0; i < len; ++i) tmp[i] = p[0][off + i] / W;
        src = tmp.data();
      }
      fan_out_chunk(p, off, src, len);
    }
    return;
  }
  for (size_t off = 0; off < n; off += kChunk) tree_add_chunk(p, 0, L, off, std::min(kChunk, n - off));
  rank_sum(p[0], n);
  for (size_t off = 0; off < n; off += kChunk) {
    const size_t len = std::min(kChunk, n - off);
    if (avg)
      for (size_t i = 0; i < len; ++i) p[0][off + i] /= W;
    fan_out_chunk(p, off, p[0] + off, len);
  }
}

template <class T>
void Collectives::adasum(std::span<const std::span<T>> bufs, std::span<const Segment> segs) {
  WB_ASSERT(static_cast<int>(bufs.size()) == local_count(), "one buffer per local worker");
  const std::vector<T*> p = pointers(bufs);
  const size_t n = bufs[0].size(), L = p.size();
  if (n == 0) return;
  const std::vector<Piece> pieces = make_pieces(n, segs);
  if (L >= 2) {
    // Gaps (elements in no segment) keep p[0]'s value: no tree for them.
    const T* right = p[L / 2];  // root's right child, once materialized
    if (ranks() == 1) {
      // Root combine fused with the fan-out: each chunk is computed once into tmp (L1)
      // and written to the W buffers.
      std::vector<T> tmp(std::min(kChunk, n));
      for (const Piece& pc : pieces) {
        std::array<double, 2> c{1, 0};
        if (pc.seg >= 0) c = local_node(p, 0, L, pc.offset, pc.size);
        for (size_t off = pc.offset; off < pc.offset + pc.size; off += kChunk) {
          const size_t len = std::min(kChunk, pc.offset + pc.size - off);
          const T* src = p[0] + off;
          if (pc.seg >= 0) {
            kern::combine(tmp.data(), p[0] + off, right + off, len, c[0], c[1]);
            src = tmp.data();
          }
          fan_out_chunk(p, off, src, len);
        }
      }
      return;
    }
    for (const Piece& pc : pieces) {
      if (pc.seg < 0) continue;
      const std::array<double, 2> c = local_node(p, 0, L, pc.offset, pc.size);
      kern::combine(p[0] + pc.offset, p[0] + pc.offset, right + pc.offset, pc.size, c[0], c[1]);
    }
  }
  if (ranks() > 1) rank_adasum(p[0], n, pieces);
  fan_out(p, n, p[0]);
}

template <class T>
void Collectives::weighted_average(std::span<const std::span<T>> bufs,
                                   std::span<const double> local_weights) {
  WB_ASSERT(static_cast<int>(bufs.size()) == local_count(), "one buffer per local worker");
  WB_ASSERT(local_weights.size() == bufs.size(), "one weight per local worker");
  const std::vector<T*> p = pointers(bufs);
  const size_t n = bufs[0].size(), L = p.size();
  double wsum = 0;
  for (double w : local_weights) wsum += w;
  if (ranks() == 1) {  // one pass, chunk by chunk, same order as the reference
    WB_ASSERT(wsum > 0, "weighted_average: weights sum to zero");
    std::vector<double> acc(std::min(kChunk, n));
    std::vector<T> tmp(acc.size());
    for (size_t off = 0; off < n; off += kChunk) {
      const size_t len = std::min(kChunk, n - off);
      std::fill(acc.begin(), acc.begin() + len, 0.0);
      for (size_t k = 0; k < L; ++k) kern::axpy_double(acc.data(), p[k] + off, local_weights[k], len);
      for (size_t i = 0; i < len; ++i) tmp[i] = static_cast<T>(acc[i] / wsum);
      fan_out_chunk(p, off, tmp.data(), len);
    }
    return;
  }
  // Per-rank double partials (n values + the weight total) summed with the RVHDD schedule.
  std::vector<double> acc(n + 1, 0.0);
  for (size_t k = 0; k < L; ++k) kern::axpy_double(acc.data(), p[k], local_weights[k], n);
  acc[n] = wsum;
  rank_sum(acc.data(), n + 1);
  WB_ASSERT(acc[n] > 0, "weighted_average: weights sum to zero");
  for (size_t i = 0; i < n; ++i) p[0][i] = static_cast<T>(acc[i] / acc[n]);
  fan_out(p, n, p[0]);
}

template <class T>
void Collectives::broadcast(std::span<const std::span<T>> bufs, int root_worker) {
  WB_ASSERT(static_cast<int>(bufs.size()) == local_count(), "one buffer per local worker");
  WB_ASSERT(root_worker >= 0 && root_worker < layout_.workers(), "root worker out of range");
  const std::vector<T*> p = pointers(bufs);
  const size_t n = bufs[0].size();
  const int root_rank = layout_.owner(root_worker);
  T* src = p[0];
  if (root_rank == rank_) src = p[static_cast<size_t>(root_worker - first_local())];
  if (ranks() > 1 && n > 0)
    WB_CHECK_MPI(MPI_Bcast(src, count_of(n), mpi_type<T>(), root_rank, comm_));
  fan_out(p, n, src);
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
  WB_CHECK_MPI(MPI_Allgatherv(local.data(), static_cast<int>(local.size()), MPI_DOUBLE,
                              all.data(), counts.data(), displs.data(), MPI_DOUBLE, comm_));
}

double Collectives::sum_over_ranks(double local) const {
  if (ranks() == 1) return local;
  std::vector<double> all(ranks());
  WB_CHECK_MPI(MPI_Allgather(&local, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, comm_));
  double s = 0;
  for (double x : all) s += x;
  return s;
}

#define WB_INST(T)                                                                        \
  template void Collectives::allreduce<T>(std::span<const std::span<T>>, ReduceOp);       \
  template void Collectives::adasum<T>(std::span<const std::span<T>>,                     \
                                       std::span<const Segment>);                         \
  template void Collectives::weighted_average<T>(std::span<const std::span<T>>,           \
                                                 std::span<const double>);                \
  template void Collectives::broadcast<T>(std::span<const std::span<T>>, int);
WB_INST(float)
WB_INST(double)
#undef WB_INST

}  // namespace wb::comm
