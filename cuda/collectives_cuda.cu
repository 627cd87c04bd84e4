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
// (each "launch" is the fused pass plus the coefficient pass.)
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
  for (int t = threadIdx.x; t < ch.size; t += kThreads) {
    T xa = ax[t], xb = bx[t];
    if (ay) ax[t] = xa = axpby(aca, xa, acb, ay[t]);
    if (by) bx[t] = xb = axpby(bca, xb, bcb, by[t]);
    const double x = xa, y = xb;
    d += x * y;
    aa += x * x;
    bb += y * y;
  }
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
    constexpr double kTiny = comm::kAdasumTinyNorm2;
    double* out = coef + (static_cast<size_t>(nd.id) * num_segs + s) * 2;
    out[0] = v[1] >= kTiny ? 1.0 - v[0] / (2.0 * v[1]) : 1.0;
    out[1] = v[2] >= kTiny ? 1.0 - v[0] / (2.0 * v[2]) : 1.0;
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

// Post-order program of the floor-split sum tree over workers [lo, hi) (comm/reference.cpp
// sum_rec); returns the stack depth it needs.
int emit_sum_program(int lo, int hi, std::vector<int32_t>& prog) {
  if (hi - lo == 1) {
    prog.push_back(lo);
    return 1;
  }
  const int m = lo + (hi - lo) / 2;
  const int left = emit_sum_program(lo, m, prog);
  const int right = emit_sum_program(m, hi, prog);  // evaluated with the left value pushed
  prog.push_back(-1);
  return std::max(left, right + 1);
}

// Internal nodes of the floor-split Adasum tree over [lo, hi) at depth d, into by_depth[d];
// returns the node's id (-1 for a leaf). Children get their ids first.
int plan_node(int lo, int hi, size_t d, int& next_id,
              std::vector<std::vector<TreeNode>>& by_depth) {
  if (hi - lo < 2) return -1;
  const int m = lo + (hi - lo) / 2;
  TreeNode nd{};
  nd.a_node = plan_node(lo, m, d + 1, next_id, by_depth);
  nd.b_node = plan_node(m, hi, d + 1, next_id, by_depth);
  nd.id = next_id++;
  nd.a = lo;
  nd.b = m;
  nd.a_right = lo + (m - lo) / 2;
  nd.b_right = m + (hi - m) / 2;
  if (by_depth.size() <= d) by_depth.resize(d + 1);
  by_depth[d].push_back(nd);
  return nd.id;
}

}  // namespace

template <class T>
LocalCollectives<T>::LocalCollectives(int workers, size_t n, std::span<const comm::Segment> segs)
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

  // Chunks: [0, n) cut at segment boundaries (gaps included, seg -1), then into kChunk pieces.
  std::vector<TreeChunk> chunks;
  std::vector<int32_t> seg_chunks(2 * segs.size(), 0);
  auto add_piece = [&](size_t off, size_t size, int seg) {
    for (size_t o = off; o < off + size; o += kChunk)
      chunks.push_back({static_cast<int64_t>(o),
                        static_cast<int32_t>(std::min<size_t>(kChunk, off + size - o)), seg});
  };
  size_t at = 0;
  for (size_t s = 0; s < segs.size(); ++s) {
    const comm::Segment& g = segs[s];
    WB_ASSERT(g.offset >= at && g.offset + g.size <= n,
              "Adasum segments must be sorted, non-overlapping and inside the buffer");
    if (g.offset > at) add_piece(at, g.offset - at, -1);
    seg_chunks[2 * s] = static_cast<int32_t>(chunks.size());
    add_piece(g.offset, g.size, static_cast<int>(s));
    seg_chunks[2 * s + 1] = static_cast<int32_t>(chunks.size());
    any_segment_chunk_ = any_segment_chunk_ || g.size > 0;
    at = g.offset + g.size;
  }
  if (at < n) add_piece(at, n - at, -1);
  chunks_ = static_cast<int>(chunks.size());
  chunk_table_ = DeviceBuffer<TreeChunk>(std::span<const TreeChunk>(chunks));
  seg_chunks_ = DeviceBuffer<int32_t>(std::span<const int32_t>(seg_chunks));

  // Adasum tree: internal nodes grouped by depth.
  std::vector<std::vector<TreeNode>> by_depth;
  int next_id = 0;
  root_id_ = plan_node(0, workers, 0, next_id, by_depth);
  for (size_t d = by_depth.size(); d-- > 0;) {
    WB_ASSERT(by_depth[d].size() <= 65535, "LocalCollectives: too many workers for one launch");
    levels_.emplace_back(std::span<const TreeNode>(by_depth[d]));
  }
  const size_t internal = static_cast<size_t>(next_id);
  partials_ = DeviceBuffer<double>(internal * chunks.size() * 3);
  coef_ = DeviceBuffer<double>(internal * segs.size() * 2);
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
