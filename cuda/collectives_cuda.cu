// In-process collectives over W device buffers: plan and kernels. Schedules, precision and
// bytes moved: see the header comment of cuda/comm_cuda.h.
//
// Worked example of the Adasum plan (W = 5, one segment of 5000 elements, kChunk 2048):
//   chunks: [0,2048) [2048,4096) [4096,5000), all seg 0.
//   tree (floor split): root [0,5) -> [0,2) + [2,5); [2,5) -> [2,3) + [3,5).
//   internal nodes: [0,5) depth 0, [0,2) depth 1, [2,5) depth 1, [3,5) depth 2.
//   launch 1 (depth 2): node [3,5): leaves 3, 4: dots of (g3, g4) -> coefficients c35.
//   launch 2 (depth 1): node [0,2): dots of (g0, g1) -> c01; node [2,5): leaf g2 and the
//     internal child [3,5), materialized in place as g3 <- T(fma(c35.a, g3, c35.b * g4))
//     while its dots with g2 accumulate -> c25.
//   launch 3 (depth 0): root: materialize g0 <- c01(g0, g1) and g2 <- c25(g2, g3) and dot
//     them -> c_root.
//   root launch: every buffer <- T(fma(c_root.a, g0, c_root.b * g2)).
// (each "launch" is the fused pass plus the coefficient pass.) That is the levels schedule; on
// Hopper the cluster schedule runs the same arithmetic in one launch where the plan allows
// (adasum_cluster_kernel, plan_cluster).
#include <cooperative_groups.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cuda/comm_cuda.h"
#include "cuda/common.cuh"
#include "core/error.h"

namespace wb::cuda {
namespace {

using dev::kThreads;

constexpr int kMaxSumStack = 40;  // the sum tree's depth + 1 (W < 2^39)

// One thread per element runs the post-order program of the floor-split sum tree:
// op >= 0 pushes worker op's value, op == -1 replaces the top two (left, right) by left + right.
template <class T>
__global__ void tree_sum_kernel(T* const* p, int workers, const int32_t* prog, int prog_size,
                                size_t n, bool average) {
  WB_FOR_EACH_INDEX(i, n) {
    T stack[kMaxSumStack];
    int top = 0;
    for (int k = 0; k < prog_size; ++k) {
      const int op = prog[k];
      if (op >= 0) {
        stack[top++] = p[op][i];
      } else {
        --top;
        stack[top - 1] = stack[top - 1] + stack[top];
      }
    }
    T r = stack[0];
    if (average) r = r / static_cast<T>(workers);
    for (int w = 0; w < workers; ++w) p[w][i] = r;
  }
}

template <class T>
__global__ void weighted_average_kernel(T* const* p, int workers, const double* wt, double wsum,
                                        size_t n) {
  WB_FOR_EACH_INDEX(i, n) {
    double acc = 0;
    for (int k = 0; k < workers; ++k) acc += wt[k] * static_cast<double>(p[k][i]);
    const T r = static_cast<T>(acc / wsum);
    for (int k = 0; k < workers; ++k) p[k][i] = r;
  }
}

// T(fma(ca, x, cb*y)): kern::axpby's evaluation, rounded once.
template <class T>
__device__ inline T axpby(double ca, T x, double cb, T y) {
  return static_cast<T>(
      __fma_rn(ca, static_cast<double>(x), __dmul_rn(cb, static_cast<double>(y))));
}

// Element t of a node's fused pass, the same in both schedules: materialize the internal
// children in place (ay / by non-null), then add the rounded values' products to [d, aa, bb]
// (kern::combine_dot3's arithmetic).
template <class T>
__device__ inline void node_element(T* ax, T* bx, const T* ay, const T* by, int t, double aca,
                                    double acb, double bca, double bcb, double& d, double& aa,
                                    double& bb) {
  T xa = ax[t], xb = bx[t];
  if (ay) ax[t] = xa = axpby(aca, xa, acb, ay[t]);
  if (by) bx[t] = xb = axpby(bca, xb, bcb, by[t]);
  const double x = xa, y = xb;
  d += x * y;
  aa += x * x;
  bb += y * y;
}

// Block (chunk c, node j of this depth): materialize the node's internal children on the
// chunk (in place) and write the chunk's partial [A.B, A.A, B.B] of the rounded values.
template <class T>
__global__ void adasum_level_kernel(T* const* p, const TreeNode* nodes, const TreeChunk* chunks,
                                    int num_chunks, int num_segs, const double* coef,
                                    double* partials) {
  const TreeNode nd = nodes[blockIdx.y];
  const TreeChunk ch = chunks[blockIdx.x];
  if (ch.seg < 0) return;  // a gap: no tree there (the whole block leaves together)
  T* ax = p[nd.a] + ch.offset;
  T* bx = p[nd.b] + ch.offset;
  const T* ay = nd.a_node >= 0 ? p[nd.a_right] + ch.offset : nullptr;
  const T* by = nd.b_node >= 0 ? p[nd.b_right] + ch.offset : nullptr;
  double aca = 1, acb = 0, bca = 1, bcb = 0;
  if (ay) {
    aca = coef[(static_cast<size_t>(nd.a_node) * num_segs + ch.seg) * 2];
    acb = coef[(static_cast<size_t>(nd.a_node) * num_segs + ch.seg) * 2 + 1];
  }
  if (by) {
    bca = coef[(static_cast<size_t>(nd.b_node) * num_segs + ch.seg) * 2];
    bcb = coef[(static_cast<size_t>(nd.b_node) * num_segs + ch.seg) * 2 + 1];
  }
  double d = 0, aa = 0, bb = 0;
  for (int t = threadIdx.x; t < ch.size; t += kThreads)
    node_element(ax, bx, ay, by, t, aca, acb, bca, bcb, d, aa, bb);
  d = dev::block_sum(d);
  aa = dev::block_sum(aa);
  bb = dev::block_sum(bb);
  if (threadIdx.x == 0) {
    double* out = partials + (static_cast<size_t>(nd.id) * num_chunks + blockIdx.x) * 3;
    out[0] = d;
    out[1] = aa;
    out[2] = bb;
  }
}

// Block (segment s, node j of this depth): sum the segment's chunk partials in chunk order
// and store the node's coefficients (comm::adasum_coefficients, zero-norm rule included).
__global__ void adasum_coef_kernel(const TreeNode* nodes, const int32_t* seg_chunks, int num_chunks,
                                   int num_segs, const double* partials, double* coef) {
  const TreeNode nd = nodes[blockIdx.y];
  const int s = blockIdx.x;
  const int c0 = seg_chunks[2 * s], c1 = seg_chunks[2 * s + 1];
  const double* row = partials + static_cast<size_t>(nd.id) * num_chunks * 3;
  double v[3];
  for (int k = 0; k < 3; ++k) {
    double acc = 0;
    for (int c = c0 + static_cast<int>(threadIdx.x); c < c1; c += kThreads) acc += row[3 * c + k];
    v[k] = dev::block_sum(acc);
  }
  if (threadIdx.x == 0) {
    double* out = coef + (static_cast<size_t>(nd.id) * num_segs + s) * 2;
    comm::adasum_coefficients(v[0], v[1], v[2], out[0], out[1]);
  }
}

// Block per chunk: the root's combine of g0 and g_m (materialized children), or g0 itself
// in a gap, written to every worker's buffer. Each thread reads its element of g0 and g_m
// before it writes that element anywhere, so the in-place fan-out is safe.
template <class T>
__global__ void adasum_root_kernel(T* const* p, int workers, int m, const TreeChunk* chunks,
                                   int num_segs, const double* root_coef) {
  const TreeChunk ch = chunks[blockIdx.x];
  double ca = 1, cb = 0;
  if (ch.seg >= 0) {
    ca = root_coef[static_cast<size_t>(ch.seg) * 2];
    cb = root_coef[static_cast<size_t>(ch.seg) * 2 + 1];
  }
  for (int t = threadIdx.x; t < ch.size; t += kThreads) {
    const size_t i = static_cast<size_t>(ch.offset) + t;
    const T r = ch.seg >= 0 ? axpby(ca, p[0][i], cb, p[m][i]) : p[0][i];
    for (int w = 0; w < workers; ++w) p[w][i] = r;
  }
}

// ------------------------------------------------------------------ cluster schedule

constexpr int kClusterThreads = 512;  // 64 registers each: two blocks fit a multiprocessor
constexpr int kMaxClusterBlocks = 16;  // Hopper's non-portable cluster limit (8 portable)

// Loads in flight per thread while filling shared memory (16 floats; 4 doubles: more spill
// under the 64-register cap that lets two blocks share a multiprocessor).
template <class T>
inline constexpr int kClusterUnroll = sizeof(T) == 4 ? 16 : 4;

// 8-byte words of shared memory before the slots: the W buffer pointers, coefficients
// [internal][2], the cluster-visible block partials [2 levels][max_level_nodes][3], the warps'
// items [max(nodes, warps)][3] (reused for the cluster's sums), then the tree (its internal
// nodes, level by level, and where each level begins): every per-level read stays on chip.
__host__ __device__ inline size_t cluster_head_doubles(int workers, int internal,
                                                       int max_level_nodes, int num_levels) {
  const int warps = kClusterThreads / 32;
  const int items = max_level_nodes > warps ? max_level_nodes : warps;
  const size_t tree_bytes = sizeof(TreeNode) * static_cast<size_t>(internal) +
                            sizeof(int32_t) * (static_cast<size_t>(num_levels) + 1);
  return static_cast<size_t>(workers) + 2 * static_cast<size_t>(internal) +
         6 * static_cast<size_t>(max_level_nodes) + 3 * static_cast<size_t>(items) +
         (tree_bytes + 7) / 8;
}

[[maybe_unused]] __device__ inline double warp_sum(double v) {  // fixed pairing: deterministic
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

// One cluster per task (its blocks consecutive in x). A segment task: block r of the cluster
// owns elements [r*slice, (r+1)*slice) of the segment in every worker, in shared memory, from
// the first load to the fan-out; the cluster meets once per tree level to sum its blocks'
// partials (rank order, through distributed shared memory) into the level's coefficients,
// which every block computes alike. A gap task copies worker 0's elements to the others.
// Arithmetic per element and per coefficient is adasum_level_kernel's and adasum_coef_kernel's.
template <class T>
__global__ void __launch_bounds__(kClusterThreads, 2)
    adasum_cluster_kernel(T* const* p, int workers, const ClusterTask* tasks,
                          const TreeNode* nodes, const int32_t* level_begin, int num_levels,
                          int internal, int max_level_nodes, int root_id) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned csize = cluster.num_blocks();
  const unsigned rank = cluster.block_rank();
  const ClusterTask task = tasks[blockIdx.x / csize];
  const int tid = static_cast<int>(threadIdx.x);
  const int nt = static_cast<int>(blockDim.x);
  if (task.slice == 0) {  // a gap: the whole cluster only copies (no barrier, no shared memory)
    const int64_t per = (static_cast<int64_t>(task.size) + csize - 1) / csize;
    const int64_t lo = task.offset + per * rank;
    const int64_t hi = min(task.offset + static_cast<int64_t>(task.size), lo + per);
    for (int64_t i = lo + tid; i < hi; i += nt) {
      const T v = p[0][i];
      for (int w = 1; w < workers; ++w) p[w][i] = v;
    }
    return;
  }
  const int64_t lo = min(static_cast<int64_t>(task.size), static_cast<int64_t>(rank) * task.slice);
  const int len =
      static_cast<int>(min(static_cast<int64_t>(task.size), lo + task.slice) - lo);
  const int64_t base = task.offset + lo;
  const int stride = task.slice;

  extern __shared__ __align__(16) unsigned char smem_raw[];
  T** ptr = reinterpret_cast<T**>(smem_raw);                       // [workers]
  double* coef = reinterpret_cast<double*>(smem_raw) + workers;    // [internal][2]
  double* part = coef + 2 * static_cast<size_t>(internal);         // [2][max_level_nodes][3]
  const int warps = nt / 32, warp = tid / 32, lane = tid % 32;
  double* items = part + 6 * static_cast<size_t>(max_level_nodes);  // [items][3]
  TreeNode* tree = reinterpret_cast<TreeNode*>(
      items + 3 * static_cast<size_t>(max_level_nodes > warps ? max_level_nodes : warps));
  int32_t* begin = reinterpret_cast<int32_t*>(tree + internal);
  T* slot = reinterpret_cast<T*>(
      smem_raw +
      sizeof(double) * cluster_head_doubles(workers, internal, max_level_nodes, num_levels));
  for (int w = tid; w < workers; w += nt) ptr[w] = p[w];
  for (int j = tid; j < internal; j += nt) tree[j] = nodes[j];
  for (int j = tid; j <= num_levels; j += nt) begin[j] = level_begin[j];
  __syncthreads();

  // Fill: this block's slice of every worker, kClusterUnroll loads in flight per thread.
  constexpr int kU = kClusterUnroll<T>;
  const int total = workers * len;
  for (int i0 = tid; i0 < total; i0 += nt * kU) {
    T v[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int i = i0 + u * nt;
      if (i < total) {
        const int w = i / len;
        v[u] = ptr[w][base + (i - w * len)];
      }
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int i = i0 + u * nt;
      if (i < total) {
        const int w = i / len;
        slot[static_cast<size_t>(w) * stride + (i - w * len)] = v[u];
      }
    }
  }
  __syncthreads();

  int buf = 0;
  for (int level = 0; level < num_levels; ++level) {
    const TreeNode* lv = tree + begin[level];
    const int k = begin[level + 1] - begin[level];
    const int per_node = warps / k > 1 ? warps / k : 1;  // warps sharing one node's slice
    const int num_items = k * per_node;
    for (int it = warp; it < num_items; it += warps) {  // warp-uniform
      const TreeNode nd = lv[it / per_node];
      const int sub = it % per_node;
      const int t0 = static_cast<int>(static_cast<int64_t>(len) * sub / per_node);
      const int t1 = static_cast<int>(static_cast<int64_t>(len) * (sub + 1) / per_node);
      T* ax = slot + static_cast<size_t>(nd.a) * stride;
      T* bx = slot + static_cast<size_t>(nd.b) * stride;
      const T* ay = nd.a_node >= 0 ? slot + static_cast<size_t>(nd.a_right) * stride : nullptr;
      const T* by = nd.b_node >= 0 ? slot + static_cast<size_t>(nd.b_right) * stride : nullptr;
      double aca = 1, acb = 0, bca = 1, bcb = 0;
      if (ay) {
        aca = coef[2 * nd.a_node];
        acb = coef[2 * nd.a_node + 1];
      }
      if (by) {
        bca = coef[2 * nd.b_node];
        bcb = coef[2 * nd.b_node + 1];
      }
      double d = 0, aa = 0, bb = 0;
      for (int t = t0 + lane; t < t1; t += 32)
        node_element(ax, bx, ay, by, t, aca, acb, bca, bcb, d, aa, bb);
      d = warp_sum(d);
      aa = warp_sum(aa);
      bb = warp_sum(bb);
      if (lane == 0) {
        items[3 * it] = d;
        items[3 * it + 1] = aa;
        items[3 * it + 2] = bb;
      }
    }
    __syncthreads();
    double* pb = part + 3 * static_cast<size_t>(max_level_nodes) * buf;
    for (int j = tid; j < 3 * k; j += nt) {  // this block's partial of (node, component): its
      const int node = j / 3, comp = j % 3;    // items in order (3k > nt from W = 342 on)
      double acc = 0;
      for (int sub = 0; sub < per_node; ++sub) acc += items[3 * (node * per_node + sub) + comp];
      pb[j] = acc;
    }
    if (csize > 1)
      cluster.sync();  // every block's partials of this level are in place
    else
      __syncthreads();
    // The cluster's sum of each (node, component): every block's partial loaded at once (one
    // round trip to the peers' shared memory), summed in rank order: the same bits in every
    // block. Into `items`, free again since this block's partials were summed.
    for (int j = tid; j < 3 * k; j += nt) {
      double acc = 0;
      for (int r0 = 0; r0 < static_cast<int>(csize); r0 += 8) {  // 8 loads in flight
        double got[8];
#pragma unroll
        for (int r = 0; r < 8; ++r)
          if (r0 + r < static_cast<int>(csize)) got[r] = cluster.map_shared_rank(pb, r0 + r)[j];
#pragma unroll
        for (int r = 0; r < 8; ++r)
          if (r0 + r < static_cast<int>(csize)) acc += got[r];
      }
      items[j] = acc;
    }
    __syncthreads();
    for (int j = tid; j < k; j += nt) {  // a level may have more nodes than threads
      const double v[3] = {items[3 * j], items[3 * j + 1], items[3 * j + 2]};
      const int id = lv[j].id;
      comm::adasum_coefficients(v[0], v[1], v[2], coef[2 * id], coef[2 * id + 1]);
    }
    __syncthreads();
    buf ^= 1;  // the next level writes the other buffer while peers may still read this one
  }

  // Root: combine g0 and g_m (materialized by the last level), fan out to every worker.
  const int m = comm::tree_mid(0, workers);
  const double ca = coef[2 * root_id], cb = coef[2 * root_id + 1];
  const T* x0 = slot;
  const T* xm = slot + static_cast<size_t>(m) * stride;
  for (int t = tid; t < len; t += nt) {
    const T r = axpby(ca, x0[t], cb, xm[t]);
    for (int w = 0; w < workers; ++w) ptr[w][base + t] = r;
  }
  if (csize > 1) cluster.sync();  // peers may read this block's partials until their last level
#else
  (void)p, (void)workers, (void)tasks, (void)nodes, (void)level_begin, (void)num_levels;
  (void)internal, (void)max_level_nodes, (void)root_id;
  __trap();  // planned only on compute capability >= 9 (LocalCollectives' constructor)
#endif
}

// Post-order program of the floor-split sum tree over workers [lo, hi) (comm/reference.cpp
// sum_rec); returns the stack depth it needs.
int emit_sum_program(int lo, int hi, std::vector<int32_t>& prog) {
  if (hi - lo == 1) {
    prog.push_back(lo);
    return 1;
  }
  const int m = comm::tree_mid(lo, hi);
  const int left = emit_sum_program(lo, m, prog);
  const int right = emit_sum_program(m, hi, prog);  // evaluated with the left value pushed
  prog.push_back(-1);
  return std::max(left, right + 1);
}

// Internal nodes of the floor-split Adasum tree over [lo, hi) at depth d, into by_depth[d];
// returns the node's id (-1 for a leaf). Children get their ids first.
int plan_node(int lo, int hi, size_t d, int& next_id,
              std::vector<std::vector<TreeNode>>& by_depth) {
  if (!comm::tree_internal(lo, hi)) return -1;
  const int m = comm::tree_mid(lo, hi);
  TreeNode nd{};
  nd.a_node = plan_node(lo, m, d + 1, next_id, by_depth);
  nd.b_node = plan_node(m, hi, d + 1, next_id, by_depth);
  nd.id = next_id++;
  nd.a = lo;
  nd.b = m;
  nd.a_right = comm::tree_mid(lo, m);
  nd.b_right = comm::tree_mid(m, hi);
  if (by_depth.size() <= d) by_depth.resize(d + 1);
  by_depth[d].push_back(nd);
  return nd.id;
}

}  // namespace

namespace {

// The cluster schedule's shape for W workers of T, or {} where it does not run: the blocks per
// cluster, the segments it would hold and the shared memory per block (plan_cluster uses it
// only when it holds every segment).
struct ClusterShape {
  int blocks = 0;  // 0: no cluster schedule
  size_t smem = 0;
  std::vector<bool> on_cluster;  // per segment
};

// How many such clusters this GPU holds at once (0: none fits).
template <class T>
int resident_clusters(const ClusterShape& shape) {
  auto kernel = adasum_cluster_kernel<T>;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(static_cast<unsigned>(shape.blocks));
  cfg.blockDim = dim3(kClusterThreads);
  cfg.dynamicSmemBytes = shape.smem;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = static_cast<unsigned>(shape.blocks);
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  int clusters = 0;
  if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return clusters;
}

// The shape with at most max_blocks blocks per cluster; slice_cap: elements per block at most.
// As few blocks per cluster as the largest segment needs: each extra block adds a cluster
// barrier per tree level to every segment (measured on an H200: spreading 64 small segments
// over 5-block clusters instead of one block each made the kernel slower, in two waves).
template <class T>
ClusterShape shape_for(std::span<const comm::Segment> segs, size_t head, size_t row,
                       size_t slice_cap, int max_blocks) {
  ClusterShape shape;
  shape.on_cluster.assign(segs.size(), false);
  const size_t limit = slice_cap * static_cast<size_t>(max_blocks);
  size_t largest = 0;
  for (const comm::Segment& g : segs)
    if (g.size > 0 && g.size <= limit) largest = std::max(largest, g.size);
  if (largest == 0) return shape;
  const size_t blocks = (largest + slice_cap - 1) / slice_cap;
  size_t slice_max = 0;
  for (size_t s = 0; s < segs.size(); ++s) {
    const size_t size = segs[s].size;
    if (size == 0 || size > limit) continue;
    shape.on_cluster[s] = true;
    slice_max = std::max(slice_max, (size + blocks - 1) / blocks);
  }
  shape.blocks = static_cast<int>(blocks);
  shape.smem = head + slice_max * row;
  return shape;
}

template <class T>
ClusterShape plan_cluster(int workers, size_t n, std::span<const comm::Segment> segs,
                          int internal, int max_level_nodes, int num_levels, int max_cluster) {
  // The gaps between segments (and after the last) are copy tasks of the same launch.
  size_t gaps = 0, at = 0;
  for (const comm::Segment& g : segs) {
    gaps += g.offset > at ? 1 : 0;
    at = g.offset + g.size;
  }
  gaps += n > at ? 1 : 0;
  int dev = 0, major = 0, optin = 0, per_sm = 0, reserved = 0;
  WB_CHECK_CUDA(cudaGetDevice(&dev));
  WB_CHECK_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  WB_CHECK_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  WB_CHECK_CUDA(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
  WB_CHECK_CUDA(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, dev));
  const size_t head =
      sizeof(double) * cluster_head_doubles(workers, internal, max_level_nodes, num_levels);
  const size_t row = static_cast<size_t>(workers) * sizeof(T);  // one element of every worker
  if (major < 9 || workers < 2 || static_cast<size_t>(optin) <= head + 32 * row) return {};
  // Kernel attributes are per function, not per plan: the largest shared memory any plan may
  // ask for, and clusters beyond the portable 8 blocks.
  auto kernel = adasum_cluster_kernel<T>;
  WB_CHECK_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) !=
      cudaSuccess)
    (void)cudaGetLastError();  // then no shape above 8 blocks is resident
  const size_t full_slice = (static_cast<size_t>(optin) - head) / row;
  // Two blocks per multiprocessor: each gets half its shared memory less the per-block reserve.
  const size_t half = static_cast<size_t>(std::max(per_sm / 2 - reserved, 0));
  const size_t half_slice = half > head ? (half - head) / row : 0;
  // All or nothing: a segment left to the levels schedule costs its 2 launches per tree level
  // whatever the rest does, so a cluster launch beside them only adds (measured on an H200:
  // LeNet-5's tensors at W = 64, fc1 too large for a cluster, 129 us mixed vs 88 us levels).
  // And in ONE wave: every task resident at once. The schedule's cost is a chain of barriers
  // per tree level, which a second wave pays again (W = 8 and 64 at 4 MB, one wave: 1.1-2.5x
  // faster than the levels schedule; at 64 MB, four waves: 0.9x).
  // Half the shared memory where that still fits (two blocks per multiprocessor).
  size_t nonempty = 0;
  for (const comm::Segment& g : segs) nonempty += g.size > 0 ? 1 : 0;
  auto usable = [&](const ClusterShape& c) {
    size_t tasks = 0;
    for (bool on : c.on_cluster) tasks += on ? 1 : 0;
    return c.blocks > 0 && tasks == nonempty &&
           static_cast<size_t>(resident_clusters<T>(c)) >= tasks + gaps;
  };
  const int max_blocks = std::min(max_cluster, kMaxClusterBlocks);
  if (half_slice >= 32) {
    ClusterShape halved = shape_for<T>(segs, head, row, half_slice, max_blocks);
    if (usable(halved)) return halved;
  }
  ClusterShape full = shape_for<T>(segs, head, row, full_slice, max_blocks);
  if (usable(full)) return full;
  return {};
}

}  // namespace

template <class T>
LocalCollectives<T>::LocalCollectives(int workers, size_t n, std::span<const comm::Segment> segs,
                                      int max_cluster_blocks)
    : workers_(workers),
      n_(n),
      segments_(static_cast<int>(segs.size())),
      bound_(static_cast<size_t>(std::max(workers, 0)), nullptr),
      ptrs_(static_cast<size_t>(std::max(workers, 0))),
      weights_(static_cast<size_t>(std::max(workers, 0))) {
  WB_ASSERT(workers >= 1, "LocalCollectives: workers must be >= 1");

  // Sum tree: post-order program of the floor split (comm/reference.cpp sum_rec).
  std::vector<int32_t> prog;
  sum_stack_depth_ = emit_sum_program(0, workers, prog);
  WB_ASSERT(sum_stack_depth_ <= kMaxSumStack, "LocalCollectives: too many workers");
  sum_program_ = DeviceBuffer<int32_t>(std::span<const int32_t>(prog));
  sum_program_size_ = static_cast<int>(prog.size());

  // Adasum tree: internal nodes grouped by depth.
  std::vector<std::vector<TreeNode>> by_depth;
  int next_id = 0;
  root_id_ = plan_node(0, workers, 0, next_id, by_depth);
  std::vector<TreeNode> flat;
  std::vector<int32_t> begin{0};
  for (size_t d = by_depth.size(); d-- > 0;) {
    WB_ASSERT(by_depth[d].size() <= 65535, "LocalCollectives: too many workers for one launch");
    levels_.emplace_back(std::span<const TreeNode>(by_depth[d]));
    flat.insert(flat.end(), by_depth[d].begin(), by_depth[d].end());
    begin.push_back(static_cast<int32_t>(flat.size()));
    max_level_nodes_ = std::max(max_level_nodes_, static_cast<int>(by_depth[d].size()));
  }
  internal_nodes_ = next_id;
  num_levels_ = static_cast<int>(by_depth.size());

  for (size_t s = 0; s < segs.size(); ++s) {
    const comm::Segment& g = segs[s];
    WB_ASSERT(g.offset >= (s == 0 ? 0 : segs[s - 1].offset + segs[s - 1].size) &&
                  g.offset + g.size <= n,
              "Adasum segments must be sorted, non-overlapping and inside the buffer");
  }
  ClusterShape shape;
  if (max_cluster_blocks > 0 && workers >= 2)
    shape = plan_cluster<T>(workers, n, segs, internal_nodes_, max_level_nodes_, num_levels_,
                            std::min(max_cluster_blocks, kMaxClusterBlocks));
  if (shape.blocks == 0) shape.on_cluster.assign(segs.size(), false);

  // Chunks of the levels schedule: [0, n) cut at segment boundaries (gaps included, seg -1,
  // unless the cluster schedule copies them), then into kChunk pieces; cluster tasks.
  std::vector<TreeChunk> chunks;
  std::vector<ClusterTask> tasks;
  std::vector<int32_t> seg_chunks(2 * segs.size(), 0);
  auto add_piece = [&](size_t off, size_t size, int seg) {
    for (size_t o = off; o < off + size; o += kChunk)
      chunks.push_back({static_cast<int64_t>(o),
                        static_cast<int32_t>(std::min<size_t>(kChunk, off + size - o)), seg});
  };
  auto add_gap = [&](size_t off, size_t size) {
    if (size == 0) return;
    if (shape.blocks == 0) {
      add_piece(off, size, -1);
      return;
    }
    for (size_t o = off; o < off + size; o += size_t{1} << 30)
      tasks.push_back({static_cast<int64_t>(o),
                       static_cast<int32_t>(std::min<size_t>(size_t{1} << 30, off + size - o)), 0});
  };
  size_t at = 0;
  for (size_t s = 0; s < segs.size(); ++s) {
    const comm::Segment& g = segs[s];
    add_gap(at, g.offset - at);
    seg_chunks[2 * s] = static_cast<int32_t>(chunks.size());
    if (shape.on_cluster[s]) {
      tasks.push_back({static_cast<int64_t>(g.offset), static_cast<int32_t>(g.size),
                       static_cast<int32_t>((g.size + shape.blocks - 1) / shape.blocks)});
    } else {
      add_piece(g.offset, g.size, static_cast<int>(s));
      any_segment_chunk_ = any_segment_chunk_ || g.size > 0;
    }
    seg_chunks[2 * s + 1] = static_cast<int32_t>(chunks.size());
    at = g.offset + g.size;
  }
  add_gap(at, n - at);
  chunks_ = static_cast<int>(chunks.size());
  chunk_table_ = DeviceBuffer<TreeChunk>(std::span<const TreeChunk>(chunks));
  seg_chunks_ = DeviceBuffer<int32_t>(std::span<const int32_t>(seg_chunks));
  const size_t internal = static_cast<size_t>(next_id);
  partials_ = DeviceBuffer<double>(internal * chunks.size() * 3);
  coef_ = DeviceBuffer<double>(internal * segs.size() * 2);

  cluster_tasks_ = static_cast<int>(tasks.size());
  if (cluster_tasks_ > 0) {
    cluster_size_ = shape.blocks;
    cluster_smem_ = shape.smem;
    tasks_ = DeviceBuffer<ClusterTask>(std::span<const ClusterTask>(tasks));
    level_nodes_ = DeviceBuffer<TreeNode>(std::span<const TreeNode>(flat));
    level_begin_ = DeviceBuffer<int32_t>(std::span<const int32_t>(begin));
  }
}

template <class T>
void LocalCollectives<T>::bind(std::span<T* const> bufs, cudaStream_t stream) {
  WB_ASSERT(static_cast<int>(bufs.size()) == workers_,
            "LocalCollectives: " + std::to_string(bufs.size()) + " buffers for " +
                std::to_string(workers_) + " workers");
  if (std::equal(bufs.begin(), bufs.end(), bound_.begin())) return;
  std::copy(bufs.begin(), bufs.end(), bound_.begin());
  // From pageable memory: the copy is staged before the call returns.
  WB_CHECK_CUDA(cudaMemcpyAsync(ptrs_.data(), bound_.data(), bound_.size() * sizeof(T*),
                                cudaMemcpyHostToDevice, stream));
}

template <class T>
void LocalCollectives<T>::allreduce(std::span<T* const> bufs, Reduce op, cudaStream_t stream) {
  bind(bufs, stream);
  if (n_ == 0) return;
  tree_sum_kernel<T><<<dev::capped_blocks(n_), kThreads, 0, stream>>>(
      ptrs_.data(), workers_, sum_program_.data(), sum_program_size_, n_, op == Reduce::kAverage);
  WB_CHECK_LAUNCH("tree_sum_kernel");
}

template <class T>
void LocalCollectives<T>::weighted_average(std::span<T* const> bufs,
                                           std::span<const double> weights, cudaStream_t stream) {
  bind(bufs, stream);
  WB_ASSERT(static_cast<int>(weights.size()) == workers_,
            "weighted_average: one weight per worker");
  double wsum = 0;
  for (double w : weights) wsum += w;
  WB_ASSERT(wsum > 0, "weighted_average: weights sum to zero");
  if (n_ == 0) return;
  weights_host_.assign(weights.begin(), weights.end());
  WB_CHECK_CUDA(cudaMemcpyAsync(weights_.data(), weights_host_.data(),
                                weights_host_.size() * sizeof(double), cudaMemcpyHostToDevice,
                                stream));
  weighted_average_kernel<T><<<dev::capped_blocks(n_), kThreads, 0, stream>>>(
      ptrs_.data(), workers_, weights_.data(), wsum, n_);
  WB_CHECK_LAUNCH("weighted_average_kernel");
}

template <class T>
void LocalCollectives<T>::adasum(std::span<T* const> bufs, cudaStream_t stream) {
  bind(bufs, stream);
  if (workers_ < 2 || n_ == 0) return;
  if (cluster_tasks_ > 0) {
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(static_cast<unsigned>(cluster_tasks_ * cluster_size_));
    cfg.blockDim = dim3(kClusterThreads);
    cfg.dynamicSmemBytes = cluster_smem_;
    cfg.stream = stream;
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = static_cast<unsigned>(cluster_size_);
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    T* const* p = ptrs_.data();
    WB_CHECK_CUDA(cudaLaunchKernelEx(&cfg, adasum_cluster_kernel<T>, p, workers_,
                                     static_cast<const ClusterTask*>(tasks_.data()),
                                     static_cast<const TreeNode*>(level_nodes_.data()),
                                     static_cast<const int32_t*>(level_begin_.data()), num_levels_,
                                     internal_nodes_, max_level_nodes_, root_id_));
    WB_CHECK_LAUNCH("adasum_cluster_kernel");
  }
  if (chunks_ == 0) return;  // every segment and gap ran on the cluster schedule
  if (any_segment_chunk_) {
    for (const DeviceBuffer<TreeNode>& level : levels_) {
      const dim3 grid(static_cast<unsigned>(chunks_), static_cast<unsigned>(level.size()));
      adasum_level_kernel<T><<<grid, kThreads, 0, stream>>>(ptrs_.data(), level.data(),
                                                            chunk_table_.data(), chunks_, segments_,
                                                            coef_.data(), partials_.data());
      WB_CHECK_LAUNCH("adasum_level_kernel");
      const dim3 cgrid(static_cast<unsigned>(segments_), static_cast<unsigned>(level.size()));
      adasum_coef_kernel<<<cgrid, kThreads, 0, stream>>>(level.data(), seg_chunks_.data(), chunks_,
                                                         segments_, partials_.data(), coef_.data());
      WB_CHECK_LAUNCH("adasum_coef_kernel");
    }
  }
  const double* root_coef =
      segments_ > 0 ? coef_.data() + static_cast<size_t>(root_id_) * segments_ * 2 : nullptr;
  adasum_root_kernel<T><<<static_cast<unsigned>(chunks_), kThreads, 0, stream>>>(
      ptrs_.data(), workers_, workers_ / 2, chunk_table_.data(), segments_, root_coef);
  WB_CHECK_LAUNCH("adasum_root_kernel");
}

template class LocalCollectives<float>;
template class LocalCollectives<double>;

}  // namespace wb::cuda
