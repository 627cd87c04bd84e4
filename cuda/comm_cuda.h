// The comm/ vector passes and the in-process collectives on the GPU, over device buffers.
// CPU twins: comm/kernels.h (passes) and comm/reference.h (collectives), with the same
// precision contract (Maleki et al., arXiv:2006.02924 4.4.1): data fp32 or fp64; dot products and
// squared norms accumulate in double; the Adasum combination ca*a + cb*b is evaluated in
// double as fma(ca, a, cb*b) -- the exact order of kern::axpby on an FMA machine -- and
// rounded once to T. Sums and dot products are reduced in a fixed order (deterministic:
// the same bits on every run), though not the CPU's order, so dot products agree with the
// CPU to rounding (~1e-16 relative) and Adasum results to about an ulp of T.
//
// Translation units: vector_cuda.cu (the passes), collectives_cuda.cu (LocalCollectives).
// T = float or double. All pointers are device pointers; work is queued on `stream`.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "comm/reference.h"
#include "cuda/check.h"

namespace wb::cuda {

// ------------------------------------------------------------------ passes (comm/kernels.h)

// v[0..3) += [a.b, a.a, b.b] (v: 3 doubles in DEVICE memory). Deterministic block partials
// (scratch from the stream-ordered allocator) summed in block order.
template <class T>
void dot3(const T* a, const T* b, size_t n, double* v, cudaStream_t stream = nullptr);

// out = T(fma(ca, a, cb*b)); out may alias a or b.
template <class T>
void combine(T* out, const T* a, const T* b, size_t n, double ca, double cb,
             cudaStream_t stream = nullptr);

// a += b (IEEE adds element by element: the same bits as the CPU loop).
template <class T>
void add(T* a, const T* b, size_t n, cudaStream_t stream = nullptr);

// acc += w * x, in double.
template <class T>
void axpy_double(double* acc, const T* x, double w, size_t n, cudaStream_t stream = nullptr);

// ------------------------------------------------------------------ in-process collectives

enum class Reduce { kSum, kAverage };

// Plan records of LocalCollectives::adasum (device memory).
struct TreeChunk {  // a piece of [0, n) inside one segment (seg >= 0) or a gap (seg == -1)
  int64_t offset;
  int32_t size;
  int32_t seg;
};
struct ClusterTask {  // one segment (or gap) of [0, n) for one thread-block cluster
  int64_t offset;
  int32_t size;
  int32_t slice;  // elements per block of the cluster; 0: a gap (worker 0's value fanned out)
};
struct TreeNode {  // an internal node [lo, hi) of the tree, m = comm::tree_mid(lo, hi) (comm/adasum_tree.h)
  int32_t id;      // row of the partials / coefficients tables
  int32_t a, b;    // the workers holding the children: a = lo, b = m
  int32_t a_right, b_right;  // the children's right halves: tree_mid(lo, m), tree_mid(m, hi)
  int32_t a_node, b_node;    // node id of an internal child (materialized first), -1: a leaf
};

// Collectives over the W logical workers of one rank whose buffers all live on this GPU
// (the in-rank part of comm::Collectives with R = 1): every op is in place and leaves the
// result in every worker's buffer. Plan in the constructor (tree schedule, chunk table,
// scratch: all device allocations happen here), execute in the ops (no allocation; queued on
// `stream`, no host synchronization).
//
// allreduce  per element, the floor-split tree of IEEE adds of tree_sum_reference, so sums
//            are BIT-IDENTICAL to comm::tree_sum_reference; average = sum / T(W) (one
//            division, as comm::Collectives).
// weighted_average  sum_k w_k g_k in double in worker order, divided by sum_k w_k.
// adasum     the floor-split Adasum tree of comm::adasum_reference, per segment; elements in
//            no segment keep worker 0's value. Two schedules, the same arithmetic:
//   cluster  (Hopper, compute capability >= 9, when EVERY segment's W slices fit in the
//            shared memory of a thread-block cluster of at most 16 blocks and all the clusters
//            are resident at once; otherwise the levels schedule runs everything: a segment
//            left to it costs its launches anyway, and a second wave of clusters pays the
//            barrier chain again): ONE launch, one cluster per segment. Each block loads its slice of the segment from all W buffers into shared
//            memory once, runs every tree level there (materialize internal children in place,
//            accumulate [A.B, A.A, B.B]; the cluster sums its blocks' partials in rank order
//            through distributed shared memory after one cluster barrier per level), and writes
//            the root's combine to the W buffers. Device memory sees the bytes of a memcpy of
//            the W inputs (read W n s, write W n s) and nothing else; what bounds it is the
//            chain of barriers, one per tree level (H200, bench_gpu: W = 64 x 64 KB in 64
//            tensors 33 us against the levels schedule's 81 us and memcpy's 5.6 us).
//   levels   (the segments that do not fit, and every segment before Hopper): the tree's
//            internal nodes grouped by depth, deepest first; one fused launch per depth
//            materializes every node's internal children in place (child = T(fma(ca, left,
//            cb*right))) and accumulates the node's [A.B, A.A, B.B] from the rounded values
//            (kern::combine_dot3's pass), per chunk of kChunk elements; a second launch sums
//            each (node, segment)'s chunk partials in chunk order and stores the coefficients.
//            The root's combine is fused with the fan-out to the W buffers. Launches: 2 per
//            tree level + 1 (W = 64: 13), independent of the number of segments.
//            Bytes moved (W = 2^k workers of n elements of s bytes): the deepest level reads
//            both leaves of every leaf pair (W n s); every internal node but the root is
//            materialized once (read 2, write 1: 3 (W - 2) n s in all); the root reads 2 and
//            writes W: (5W - 4) n s in all, against 2 W n s for a memcpy of the W inputs --
//            about 0.4 of memcpy's bandwidth when both stream from memory.
//            Both schedules sum dot products in a fixed order (deterministic), each its own, so
//            they agree with each other and with the CPU to rounding (about an ulp of T).
template <class T>
class LocalCollectives {
 public:
  // segs: Adasum segments (tensors), sorted, non-overlapping, inside [0, n).
  // max_cluster_blocks: the cluster schedule's largest cluster (1..16; Hopper allows 8
  // portably, 16 non-portably, and the plan checks what this GPU can hold); 0 keeps Adasum on
  // the levels schedule (tests compare the two, bench_gpu times both).
  LocalCollectives(int workers, size_t n, std::span<const comm::Segment> segs,
                   int max_cluster_blocks = 16);
  LocalCollectives(const LocalCollectives&) = delete;
  LocalCollectives& operator=(const LocalCollectives&) = delete;

  int workers() const { return workers_; }
  size_t size() const { return n_; }

  // bufs: W device buffers of n elements each, in worker order.
  void allreduce(std::span<T* const> bufs, Reduce op, cudaStream_t stream = nullptr);
  void weighted_average(std::span<T* const> bufs, std::span<const double> weights,
                        cudaStream_t stream = nullptr);
  void adasum(std::span<T* const> bufs, cudaStream_t stream = nullptr);

  // Elements per chunk of the Adasum passes (one block each).
  static constexpr int kChunk = 2048;

  // The cluster schedule's plan: segments (and gaps) it runs, blocks per cluster (0: none).
  int cluster_tasks() const { return cluster_tasks_; }
  int cluster_blocks() const { return cluster_size_; }

 private:
  void bind(std::span<T* const> bufs, cudaStream_t stream);  // the device pointer table

  int workers_;
  size_t n_;
  int segments_;
  std::vector<T*> bound_;              // host copy of ptrs_ (re-uploaded when it changes)
  DeviceBuffer<T*> ptrs_;              // W device pointers
  DeviceBuffer<int32_t> sum_program_;  // post-order program of the sum tree
  int sum_program_size_ = 0;
  int sum_stack_depth_ = 0;
  std::vector<double> weights_host_;  // staged copy of the last weights
  DeviceBuffer<double> weights_;      // W weights (weighted_average)
  int chunks_ = 0;
  DeviceBuffer<TreeChunk> chunk_table_;
  DeviceBuffer<int32_t> seg_chunks_;  // chunks of segment s: [seg_chunks[2s], seg_chunks[2s+1])
  bool any_segment_chunk_ = false;
  std::vector<DeviceBuffer<TreeNode>> levels_;  // internal nodes by depth, deepest first
  DeviceBuffer<double> partials_;               // [node][chunk][3]
  DeviceBuffer<double> coef_;                   // [node][segment][2]
  int root_id_ = -1;
  // Cluster schedule: one cluster of cluster_size_ blocks per task.
  int cluster_tasks_ = 0;
  int cluster_size_ = 0;
  size_t cluster_smem_ = 0;              // dynamic shared memory per block, bytes
  int max_level_nodes_ = 0;              // nodes of the widest tree level
  int internal_nodes_ = 0;               // W - 1
  DeviceBuffer<ClusterTask> tasks_;
  DeviceBuffer<TreeNode> level_nodes_;   // every level's nodes, deepest level first
  DeviceBuffer<int32_t> level_begin_;    // level L: level_nodes_[level_begin_[L] .. [L + 1])
  int num_levels_ = 0;
};

}  // namespace wb::cuda
