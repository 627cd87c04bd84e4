// Schedules and byte counts: see the header comment of comm/collectives.h.
#include "comm/collectives.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cstring>
#include <string>

#include "comm/adasum_tree.h"
#include "comm/collectives_detail.h"
#include "comm/kernels.h"
#include "comm/mpi_types.h"
#include "core/error.h"

namespace wb::comm {

using detail::count_of;

namespace {

// Elements per chunk of the fused "compute then fan out" passes: 32 KB of floats, so the
// chunk is still in L1/L2 when it is copied into the W buffers.
constexpr size_t kChunk = 8192;
// Elements per worker in one block of the in-rank Adasum tree (see local_node): 16 KB of
// floats. Measured with bench_collectives' in-process table (W = 64, 2-core EPYC, loaded):
// at 64 MB, 4K-element blocks 12.2-13.1 ms, 16K 13.8-14.3 ms, one tensor per block 13.3-13.6
// ms; at 4 MB all within the noise (630-710 us).
constexpr size_t kBlock = 4096;
// Fan-outs use plain stores. Non-temporal stores were tried and measured slower on the
// 2-core Xeon VM (in-process Adasum, W = 64 x 1 MB: 19.1 ms with them, 14.3 ms without):
// the last-level cache holds the W buffers, and the caller reads them next anyway.

int comm_size(MPI_Comm c) {
  int s = 1;
  WB_CHECK_MPI(MPI_Comm_size(c, &s));
  return s;
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
// Node [lo, hi) of the local tree over one BLOCK of tensors (pieces pcs, all real
// segments, ascending and inside one contiguous range of the buffers); the node's slice of
// piece k lives in p[lo] once materialized (in place). Materializes the node's two
// children and writes the node's coefficients {ca, cb} for piece k to out[k]. One fused
// pass (kern::combine_dot3) per piece; scratch holds 2 * pcs.size() coefficient pairs per
// tree level below this node.
//
// Block by block rather than tensor by tensor: the coefficients of one tensor never
// depend on another, so any order of the (node, tensor) passes gives the same operations on
// the same values: results are unchanged, bit for bit. What the order changes is the cache.
// One tensor of a 4 MB model over 64 workers is ~256 floats, and the W slices of it sit at
// the same offset of W buffers n*4 bytes apart (with n*4 = 64 KB, the L2 way size of the
// 2-core EPYC, all in the same few L2 sets), and tensor by tensor the recursion ran 63 x 64
// times for 4032 short kernel calls: ~50-60 ns per (node, tensor) with 5-27-float tensors,
// ~38 ns block by block (W = 64, 256 KB total: 200-245 us -> 154-160 us). A block of
// contiguous tensors of >= kBlock floats makes each node's pass one sequential stream per
// buffer, and the recursion runs once per block. The kernel calls per (node, tensor) stay.
template <class T>
void local_node(const std::vector<T*>& p, size_t lo, size_t hi, std::span<const Piece> pcs,
                std::array<double, 2>* out, std::array<double, 2>* scratch) {
  const size_t m = tree_mid(lo, hi), K = pcs.size();
  const bool il = tree_internal(lo, m), ir = tree_internal(m, hi);  // materialize them
  std::array<double, 2>* cl = scratch;
  std::array<double, 2>* cr = scratch + K;
  if (il) local_node(p, lo, m, pcs, cl, scratch + 2 * K);
  if (ir) local_node(p, m, hi, pcs, cr, scratch + 2 * K);
  const size_t ml = tree_mid(lo, m), mr = tree_mid(m, hi);
  for (size_t k = 0; k < K; ++k) {
    const size_t o = pcs[k].offset, len = pcs[k].size;
    kern::Side<T> a{p[lo] + o}, b{p[m] + o};
    if (il) a = {p[lo] + o, p[ml] + o, cl[k][0], cl[k][1]};
    if (ir) b = {p[m] + o, p[mr] + o, cr[k][0], cr[k][1]};
    double v[3] = {0, 0, 0};
    if (il && ir)
      kern::combine_dot3<T, true, true>(a, b, len, v);
    else if (il)
      kern::combine_dot3<T, true, false>(a, b, len, v);
    else if (ir)
      kern::combine_dot3<T, false, true>(a, b, len, v);
    else
      kern::dot3(a.x, b.x, len, v);
    adasum_coefficients(v[0], v[1], v[2], out[k][0], out[k][1]);
  }
}

// Coefficient pairs local_node needs below a root over L workers, per piece of a block.
size_t tree_scratch_per_piece(size_t L) {
  size_t depth = 0;
  while ((size_t{1} << depth) < L) ++depth;
  return 2 * (depth + 1);
}

// The next block of pieces from pieces[i]: whole pieces (gaps included), at least
// kBlock elements unless the buffer ends first.
size_t block_end(const std::vector<Piece>& pieces, size_t i) {
  size_t len = 0;
  while (i < pieces.size() && len < kBlock) len += pieces[i++].size;
  return i;
}

// In-rank floor-split tree of a += b over one chunk [off, off+len): a whole subtree per
// chunk (sum is elementwise), so the local reduction is a single pass over the inputs.
template <class T>
void tree_add_chunk(const std::vector<T*>& p, size_t lo, size_t hi, size_t off, size_t len) {
  if (!tree_internal(lo, hi)) return;
  const size_t m = tree_mid(lo, hi);
  tree_add_chunk(p, lo, m, off, len);
  tree_add_chunk(p, m, hi, off, len);
  kern::add(p[lo] + off, p[m] + off, len);
}

}  // namespace

// ---------------------------------------------------------------- plan

Collectives::Collectives(MPI_Comm comm, int workers) : layout_(workers, comm_size(comm)) {
  WB_CHECK_MPI(MPI_Comm_dup(comm, &comm_));
  WB_CHECK_MPI(MPI_Comm_rank(comm_, &rank_));
  plan_ = rvhdd::make_plan(layout_, rank_);
  for (size_t l = 0; l < plan_.levels; ++l) {
    MPI_Comm c = MPI_COMM_NULL;
    const int color = plan_.is_extra ? MPI_UNDEFINED : (plan_.position >> (l + 1));
    WB_CHECK_MPI(MPI_Comm_split(comm_, color, plan_.is_extra ? 0 : plan_.position, &c));
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

const std::vector<Piece>& Collectives::pieces_of(size_t n, std::span<const Segment> segs) {
  const bool same = n == pieces_n_ && segs.size() == pieces_segs_.size() &&
                    std::equal(segs.begin(), segs.end(), pieces_segs_.begin(), [](const Segment& a, const Segment& b) {
                      return a.offset == b.offset && a.size == b.size;
                    });
  if (!same) {
    pieces_ = make_pieces(n, segs);
    pieces_segs_.assign(segs.begin(), segs.end());
    pieces_n_ = n;
  }
  return pieces_;
}

// ---------------------------------------------------------------- ops

template <class T>
void Collectives::allreduce_uncharged(std::span<const std::span<T>> bufs, ReduceOp op) {
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
        kern::divide(tmp.data(), p[0] + off, len, W);
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
    if (avg) kern::divide(p[0] + off, p[0] + off, len, W);
    fan_out_chunk(p, off, p[0] + off, len);
  }
}

template <class T>
void Collectives::adasum_uncharged(std::span<const std::span<T>> bufs, std::span<const Segment> segs) {
  WB_ASSERT(static_cast<int>(bufs.size()) == local_count(), "one buffer per local worker");
  const std::vector<T*> p = pointers(bufs);
  const size_t n = bufs[0].size(), L = p.size();
  if (n == 0) return;
  const std::vector<Piece>& pieces = pieces_of(n, segs);
  if (L >= 2) {
    // Gaps (elements in no segment) keep p[0]'s value: no tree for them.
    const T* right = p[tree_mid(size_t{0}, L)];  // root's right child, once materialized
    std::vector<Piece> segs_of_block;
    std::vector<std::array<double, 2>> c, scratch;
    std::vector<T> tmp(ranks() == 1 ? std::min(kChunk, n) : 0);
    for (size_t i = 0; i < pieces.size();) {
      const size_t i1 = block_end(pieces, i);
      segs_of_block.clear();
      for (size_t j = i; j < i1; ++j)
        if (pieces[j].seg >= 0) segs_of_block.push_back(pieces[j]);
      const size_t K = segs_of_block.size();
      c.assign(K, {1, 0});
      scratch.resize(K * tree_scratch_per_piece(L));
      if (K > 0) local_node<T>(p, 0, L, segs_of_block, c.data(), scratch.data());
      if (ranks() > 1) {
        for (size_t k = 0; k < K; ++k) {
          const Piece& pc = segs_of_block[k];
          kern::combine(p[0] + pc.offset, p[0] + pc.offset, right + pc.offset, pc.size, c[k][0], c[k][1]);
        }
        i = i1;
        continue;
      }
      // R = 1: the root's combine fused with the fan-out, window by window: each window is
      // computed once into tmp (L1/L2), gaps copied from p[0], then written to the W buffers
      // with W long copies (a window spans many small tensors).
      const size_t b0 = pieces[i].offset, b1 = pieces[i1 - 1].offset + pieces[i1 - 1].size;
      size_t j = i, k = 0;  // first piece (and segment index) that may overlap the window
      for (size_t w0 = b0; w0 < b1; w0 += kChunk) {
        const size_t w1 = std::min(w0 + kChunk, b1);
        for (size_t q = j, kq = k; q < i1 && pieces[q].offset < w1; ++q) {
          const Piece& pc = pieces[q];
          const size_t s0 = std::max(pc.offset, w0), s1 = std::min(pc.offset + pc.size, w1);
          if (pc.seg >= 0) {
            kern::combine(tmp.data() + (s0 - w0), p[0] + s0, right + s0, s1 - s0, c[kq][0], c[kq][1]);
            ++kq;
          } else {
            std::memcpy(tmp.data() + (s0 - w0), p[0] + s0, (s1 - s0) * sizeof(T));
          }
          if (pc.offset + pc.size <= w1) {  // done with this piece: later windows start after it
            j = q + 1;
            k = kq;
          }
        }
        fan_out_chunk(p, w0, tmp.data(), w1 - w0);
      }
      i = i1;
    }
    if (ranks() == 1) return;
  }
  if (ranks() > 1) rank_adasum(p[0], n, pieces);
  fan_out(p, n, p[0]);
}

template <class T>
void Collectives::weighted_average_uncharged(std::span<const std::span<T>> bufs,
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
  if (ranks() == 2) {  // raw inputs on the wire, T on the way back (collectives_rvhdd.cpp)
    if (n > 0) detail::weighted_average_pair(comm_, rank_, layout_, p, n, local_weights, scratch_);
    else WB_ASSERT(sum_over_ranks(wsum) > 0, "weighted_average: weights sum to zero");
    fan_out(p, n, p[0]);
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
void Collectives::broadcast_uncharged(std::span<const std::span<T>> bufs, int root_worker) {
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

// ---------------------------------------------------------------- the simulated cost
// Every op of the training charges the run's clock after it ran (DESIGN.md section 3: comm/
// owns every MPI call and its cost). The clock's cost model prices the op by its own
// algorithm over all W workers (sim/cost_model.h): what is issued here is only
// the op, W, the bytes and, for Adasum, its pieces and schedule.

template <class T>
double Collectives::cost_s(size_t n) const {
  WB_ASSERT(clock_ != nullptr, "Collectives::cost_s: no simulated clock attached");
  return clock_->collective_s(layout_.workers(), static_cast<double>(sizeof(T)) * static_cast<double>(n));
}

template <class T>
sim::CommCall Collectives::call(sim::CommOp op, size_t n) const {
  sim::CommCall k;
  k.op = op;
  k.workers = layout_.workers();
  k.bytes = static_cast<double>(sizeof(T)) * static_cast<double>(n);
  k.elem_bytes = static_cast<int>(sizeof(T));
  return k;
}

void Collectives::charge(const sim::CommCall& k, Charge c) {
  if (clock_ && c == Charge::kClock) clock_->charge(k);
}

template <class T>
void Collectives::allreduce(std::span<const std::span<T>> bufs, ReduceOp op, Charge c) {
  allreduce_uncharged(bufs, op);
  sim::CommCall k = call<T>(sim::CommOp::kAllreduce, bufs.empty() ? 0 : bufs[0].size());
  k.average = op == ReduceOp::kAverage;
  charge(k, c);
}
template <class T>
void Collectives::adasum(std::span<const std::span<T>> bufs, std::span<const Segment> segs, Charge c) {
  adasum_uncharged(bufs, segs);
  if (!clock_ || c != Charge::kClock) return;
  const size_t n = bufs.empty() ? 0 : bufs[0].size();
  sim::CommCall k = call<T>(sim::CommOp::kAdasum, n);
  // The schedule over the simulated W workers' positions (2^floor(log2 W)), not this run's
  // ranks: the clock prices the modelled machine.
  size_t levels = 0;
  while ((size_t{2} << levels) <= static_cast<size_t>(layout_.workers())) ++levels;
  const std::vector<Piece>& pieces = pieces_of(n, segs);
  k.pieces = static_cast<int>(pieces.size());
  k.schedule = rvhdd::schedule_of(pieces, n, levels, sizeof(T));
  if (k.schedule == sim::AdasumSchedule::kAligned) {
    rvhdd::aligned_level_bytes(pieces, n, levels, sizeof(T), level_bytes_);
    k.level_bytes = level_bytes_;
  }
  charge(k, c);
}
template <class T>
void Collectives::weighted_average(std::span<const std::span<T>> bufs,
                                   std::span<const double> local_weights, Charge c) {
  weighted_average_uncharged(bufs, local_weights);
  charge(call<T>(sim::CommOp::kWeightedAverage, bufs.empty() ? 0 : bufs[0].size()), c);
}
template <class T>
void Collectives::broadcast(std::span<const std::span<T>> bufs, int root_worker, Charge c) {
  broadcast_uncharged(bufs, root_worker);
  charge(call<T>(sim::CommOp::kBroadcast, bufs.empty() ? 0 : bufs[0].size()), c);
}

#define WB_INST(T)                                                                        \
  template void Collectives::allreduce<T>(std::span<const std::span<T>>, ReduceOp, Charge); \
  template void Collectives::adasum<T>(std::span<const std::span<T>>,                     \
                                       std::span<const Segment>, Charge);                 \
  template void Collectives::weighted_average<T>(std::span<const std::span<T>>,           \
                                                 std::span<const double>, Charge);        \
  template void Collectives::broadcast<T>(std::span<const std::span<T>>, int, Charge);    \
  template double Collectives::cost_s<T>(size_t) const;
WB_INST(float)
WB_INST(double)
#undef WB_INST

}  // namespace wb::comm
