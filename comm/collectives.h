// Collectives over the LOGICAL workers of a run (DESIGN.md sections 2 and 5).
//
// Every op takes `bufs`: one span per worker owned by this rank, in worker order, all
// of the same length. Ops are in place: on return every local buffer holds the result
// (identical on every rank). Each op has two parts: the in-rank part over the local
// workers (plain loops, no MPI) and the cross-rank part over MPI. Because rank blocks
// are nodes of the reduction tree (comm/layout.h), the in-rank part is a whole subtree
// and the cross-rank part is the top of the SAME tree: the reference in comm/reference.h
// is the oracle for every (W, R).
//
// ============================================================ plan (constructor)
// The rank-level tree is the floor-split tree over ranks (layout.h). Let k = floor(log2 R),
// P = 2^k. Every node at depth k of that tree holds 1 or 2 ranks (node sizes at depth j
// are floor or ceil of R/2^j, and R/2^k is in [1,2)). A 2-rank node (r, r+1) is FOLDED:
// r+1 (the "extra") hands its whole vector to r, r combines the pair, and the P "active"
// ranks run recursive vector-halving distance-doubling (RVHDD) over positions
// p = 0..P-1, where p numbers the depth-k nodes left to right. This is gloo's fold for
// non-powers of two, but choosing the fold pairs as the tree's depth-k pairs keeps the
// result the same tree. Above depth k the tree is complete, and RVHDD level l pairs the
// positions that differ in bit l: exactly the siblings at depth k-1-l.
// Sub-communicators (Algorithm 1 line 16: the group of 2d positions that share
// p >> (l+1)) are built once here with MPI_Comm_split, one per level l = 0..k-1. The plan is
// rvhdd::make_plan (comm/rvhdd.h), a pure function of the layout; the schedules below are
// written once there with the transport as a parameter (MPI here; an in-process transport
// runs them at any rank count in the tests).
//
// ============================================================ Adasum, cross-rank part
// (Maleki et al., MLSys 2021 section 3.4, Algorithm 1; arXiv:2006.02924 4.2.1, 4.4.3)
//   phase 0  fold (R not a power of two only): extra -> partner, n elements; the partner
//            computes AS(own, extra) locally (own is the left subtree).
//   phase 1  reduce-scatter, levels l = 0..k-1, d = 2^l, partner q = p XOR d, current
//            slice [lo,hi), mid = lo + (hi-lo)/2 (floor, Algorithm 1 line 2):
//              bit l of p clear: keep [lo,mid), send [mid,hi)   (a = mine, b = received)
//              bit l of p set:   keep [mid,hi), send [lo,mid)   (a = received, b = mine)
//            a is always the LEFT subtree's part (Eq. 9 order). For every piece (a tensor
//            clipped to the kept slice, arxiv 4.4.3) partial [a.b, a.a, b.b] in double;
//            one MPI_Allreduce of 3 doubles per piece over the level's group finishes
//            them, so each tensor's coefficients are those of the unsplit tensor; then
//            kept <- ca*a + cb*b. A piece wholly inside the kept slice needs nobody
//            else's partials (the allreduce only adds zeros to them), so it is combined
//            as soon as its last chunk lands, still in cache; only the (at most two)
//            pieces that straddle the slice's ends wait for the allreduce.
//   phase 2  allgather, levels in reverse: send my slice, receive the partner's slice
//            straight into place.
//   phase 3  unfold: partner -> extra, n elements.
// Bytes on the wire per active rank, n elements of s bytes, S pieces (sent = received):
//   s*n*(1 - 1/P) reduce-scatter + s*n*(1 - 1/P) allgather + 24*S*k (coefficient
//   allreduces; a 2d-rank group's recursive-doubling moves 24*S*log2(2d) per rank)
//   [+ s*n fold + s*n unfold on the folded pairs]. Compare MPI_Allreduce (Rabenseifner):
//   2*s*n*(1 - 1/P): Adasum adds only the 3-doubles-per-tensor allreduces and one extra
//   read pass for the dot products.
//
// Worked example (R = 4, n = 10, one tensor T = [3,8) plus the rest):
//   level 0 (d=1): pairs (p0,p1), (p2,p3); slice [0,10), mid 5. p0 keeps [0,5) and gets
//     x1[0,5); p1 keeps [5,10) and gets x0[5,10). T's partials: p0 over [3,5), p1 over
//     [5,8); group {p0,p1} sums them -> the coefficients of AS(x0,x1) on all of T.
//   level 1 (d=2): p0 pairs p2 on [0,5), mid 2: p0 keeps [0,2), p2 keeps [2,5);
//     p1 pairs p3 on [5,10), mid 7: p1 keeps [5,7), p3 keeps [7,10). T's partials:
//     p2 [3,5), p1 [5,7), p3 [7,8), p0 none; group {p0..p3} sums them.
//   allgather: level 1 then level 0 undo the halving; all ranks hold AS(AS(x0,x1),AS(x2,x3)).
// R = 3: the tree is ({0}, {1,2}); k = 1, P = 2: depth-1 nodes {0} and {1,2}: rank 2 folds
//   into rank 1 (rank 1 computes AS(x1,x2)); positions p0 = rank 0, p1 = rank 1.
//
// Which schedule runs phases 1-2 (comm/rvhdd.h), chosen identically on every rank:
//   whole    buffers up to 32 KB: recursive doubling. Level l swaps the WHOLE vector with
//            partner p XOR 2^l and both compute AS(left, right) over all of it: one message
//            round per level instead of two plus the coefficient allreduce (small buffers
//            cost latency; at R = 2 the bytes equal RVHDD's).
//   aligned  when every halving point of every level can move to a piece boundary (at most
//            64 KB or 1/16 of the slice away from the midpoint): no tensor is ever cut, each
//            rank computes whole tensors' dot products from its own and the received data,
//            and the coefficient allreduce disappears (the dot products travel with the
//            data, as in the Horovod paper's claim that Adasum costs about a sum).
//   split    otherwise (e.g. one tensor larger than 32 KB): the general schedule above.
// Every node's dot products use the kernel the in-rank tree uses for the same node
// (kern::combine_dot3's one-chain order when a child is internal, kern::dot3 for a leaf
// pair), so whole and aligned give results BIT-IDENTICAL to R = 1; split sums partial dot
// products over halves (within 1e-6 relative of R = 1, tested).
//
// ============================================================ Adasum, in-rank part
// The local subtree is evaluated block by block (a run of whole tensors of >= 4K elements:
// each node's pass is one sequential stream per buffer; see local_node in collectives.cpp),
// bottom-up, depth first, with one fused pass per internal node whose
// children are not both leaves: the pass materializes the internal children in place
// (child = ca*left + cb*right, rounded to T) and accumulates the node's [A.B, A.A, B.B]
// from the rounded values in the same sweep (kern::combine_dot3). Leaf-pair nodes get a
// pure dot pass. So a level costs one read of its inputs instead of two (dot pass then
// combine pass). With R = 1 the root's combine is fused with the fan-out to the W
// buffers. Every (node, tensor) pass is the same call whatever the blocking, so the
// per-tensor sums and the whole result are deterministic (bit-identical across calls).
//
// ============================================================ allreduce (sum, average)
// In-rank: floor-split tree of a += b. Cross-rank: the same RVHDD schedule and fold as
// Adasum with kept += received. IEEE addition is commutative, and every add happens at
// the same tree node as in tree_sum_reference, so sums are BIT-IDENTICAL to the reference
// for every (W, R): results do not depend on R at all. Average = sum / W (one division).
// Weighted average: per-rank double partials (n values + the weight total) summed with
// the same schedule in double, then divided. At R = 2 instead: a reduce-scatter of the
// ranks' RAW inputs (T; a rank with more than 2 workers sends its double partial), each
// half's double sum accumulated in worker order as at R = 1, divided, rounded to T, then an
// allgather of T: MPI_Allreduce's bytes, and bit-identical to R = 1 when the right rank has
// <= 2 workers. Broadcast: MPI_Bcast from the root worker's
// rank, then a local fan-out.
//
// Zero-norm rule: see reference.h (kAdasumTinyNorm2): a coefficient stays 1 when its side's
// squared norm is below the threshold, so AS(0, b) = b. Elements that lie in no segment
// keep the leftmost worker's value, as in adasum_pair_reference.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "comm/layout.h"
#include "comm/piece.h"
#include "comm/reference.h"
#include "comm/rvhdd.h"
#include "sim/clock.h"

namespace wb::comm {

enum class ReduceOp { kSum, kAverage };

// Who pays for a collective. The training's collectives charge the run's simulated clock
// (kClock, the default: an algorithm never writes its own clock.advance for communication);
// measurement and evaluation -- diagnostics, averaging replicas only to evaluate them, an
// overlapped round whose time the algorithm's own event schedule models -- pass kNone.
enum class Charge { kClock, kNone };

class Collectives {
 public:
  // comm: the ranks that run this run (duplicated internally); workers: W.
  Collectives(MPI_Comm comm, int workers);
  ~Collectives();
  Collectives(const Collectives&) = delete;
  Collectives& operator=(const Collectives&) = delete;

  const Layout& layout() const { return layout_; }
  int rank() const { return rank_; }
  int ranks() const { return layout_.ranks(); }
  int first_local() const { return layout_.first(rank_); }
  int local_count() const { return layout_.count(rank_); }
  MPI_Comm comm() const { return comm_; }

  // The run's simulated clock, charged by every op called with Charge::kClock (the runner
  // attaches it; tests and benchmarks that attach none charge nothing).
  void attach_clock(sim::SimClock* clock) { clock_ = clock; }
  // Simulated seconds of one allreduce over all W workers of n elements of T (the clock's cost
  // model, SimClock::collective_s); needs an attached clock.
  template <class T>
  double cost_s(size_t n) const;

  // Sum or average (sum then divide by W) of all W buffers, in tree order.
  template <class T>
  void allreduce(std::span<const std::span<T>> bufs, ReduceOp op, Charge c = Charge::kClock);
  // Adasum tree over all W buffers, coefficients per segment.
  template <class T>
  void adasum(std::span<const std::span<T>> bufs, std::span<const Segment> segs,
              Charge c = Charge::kClock);
  // sum_i w_i g_i / sum_i w_i over all W workers; local_weights[k] belongs to local worker k.
  template <class T>
  void weighted_average(std::span<const std::span<T>> bufs, std::span<const double> local_weights,
                        Charge c = Charge::kClock);
  // Every worker's buffer <- root worker's buffer.
  template <class T>
  void broadcast(std::span<const std::span<T>> bufs, int root_worker, Charge c = Charge::kClock);

  // ---- small exchanges (control values, measurement): never charged (comm/exchange.cpp)
  // How allgather_worker_values, sum_over_ranks and any_over_ranks wait for the other ranks.
  // MPI waits by busy-polling (MPICH spins on a core). An algorithm whose own threads
  // compute while the runner's thread waits here (LAP/LPP-SGD real mode: the updaters)
  // turns yielding on: the exchange is then a nonblocking collective tested every ~20 us
  // with the thread asleep in between, so a waiting runner leaves the cores to the
  // updaters. Same values either way; only the waiting differs.
  void set_yielding_waits(bool on) { yielding_waits_ = on; }
  // One double per local worker in, all W values out (worker order) on every rank.
  void allgather_worker_values(std::span<const double> local, std::span<double> all) const;
  // Both of the above in one exchange: the values as allgather_worker_values, and true on
  // every rank when `mine` is true on any rank (any_over_ranks). The training loop's
  // per-step agreement (losses, interruption): one message round a step instead of two,
  // which is what a runner sharing its core with updaters waits for (yielding waits).
  bool allgather_worker_values_any(std::span<const double> local, std::span<double> all, bool mine) const;
  // Sum of one double per rank, identical on all ranks (fixed rank order).
  double sum_over_ranks(double local) const;
  // Element-wise sum over ranks of v, in place (identical on every rank).
  void sum_over_ranks(std::span<double> v) const;
  // True on every rank when `mine` is true on any rank of the run.
  bool any_over_ranks(bool mine) const;
  // all holds `per_worker` doubles for each of the first K workers (worker order); each rank
  // has filled the blocks of its own workers among them; on return every rank has all K.
  void allgather_worker_blocks(std::span<double> all, size_t per_worker, int K) const;
  // A sequential chain over the first K workers in worker order (e.g. the exact sequential
  // SGD emulation): each rank that owns workers [first, end) with first < K runs
  // fn(state, first, min(end, K)) after receiving `state` from the previous rank, then passes
  // it on; on return every rank holds the final state.
  void chain_over_workers(std::span<double> state, int K,
                          const std::function<void(std::span<double>, int, int)>& fn) const;

  // The RVHDD plan, exposed for tests and the benchmark's description.
  int rvhdd_levels() const { return static_cast<int>(plan_.levels); }
  int position() const { return plan_.position; }          // -1 on a folded (extra) rank
  int fold_partner() const { return plan_.fold_partner; }  // -1 when not part of a fold

  // Cover of [0, n) by the segments (sorted, non-overlapping) and gaps between them.
  static std::vector<Piece> make_pieces(size_t n, std::span<const Segment> segs);
  // make_pieces(n, segs), kept from the last call with the same n and segments: an
  // algorithm passes the same layout at every step, and at small buffers (4 KB, 64 tensors)
  // building it and its allocation were ~15% of an Adasum call (bench_collectives).
  const std::vector<Piece>& pieces_of(size_t n, std::span<const Segment> segs);

 private:
  template <class T>
  void rank_adasum(T* x, size_t n, const std::vector<Piece>& pieces);
  template <class T>
  void rank_sum(T* x, size_t n);
  template <class T>
  T* scratch(size_t n);
  template <class T>
  sim::CommCall call(sim::CommOp op, size_t n) const;
  void charge(const sim::CommCall& k, Charge c);
  template <class T>
  void allreduce_uncharged(std::span<const std::span<T>> bufs, ReduceOp op);
  template <class T>
  void adasum_uncharged(std::span<const std::span<T>> bufs, std::span<const Segment> segs);
  template <class T>
  void weighted_average_uncharged(std::span<const std::span<T>> bufs,
                                  std::span<const double> local_weights);
  template <class T>
  void broadcast_uncharged(std::span<const std::span<T>> bufs, int root_worker);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  Layout layout_;
  // RVHDD plan over ranks (see the header comment).
  rvhdd::Plan plan_;                    // positions, fold and levels (comm/rvhdd.h)
  std::vector<MPI_Comm> level_comms_;   // level l: the 2^(l+1) positions sharing p >> (l+1)
  std::vector<std::byte> scratch_;      // receive buffer, grown on demand, reused
  std::vector<double> dots_;            // per-piece [a.b, a.a, b.b]
  std::vector<double> level_bytes_;     // the priced Adasum's bytes per level (aligned schedule)
  size_t pieces_n_ = ~size_t{0};        // pieces_of's cache: its n, segments and pieces
  std::vector<Segment> pieces_segs_;
  std::vector<Piece> pieces_;
  sim::SimClock* clock_ = nullptr;       // charged by the training's collectives
  bool yielding_waits_ = false;         // set_yielding_waits
  // allgather_worker_values_any's buffers, reused: it runs every step of every run (counts
  // and displacements from the layout, which does not change; send and receive sized by it).
  mutable std::vector<int> agree_counts_, agree_displs_;
  mutable std::vector<double> agree_send_, agree_got_;
  // Completes `req` (yielding waits): MPI_Test, then a short sleep, until done.
  void finish(MPI_Request& req) const;
};

}  // namespace wb::comm
