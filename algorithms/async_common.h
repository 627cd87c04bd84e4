// Header-only (every .cpp in algorithms/ must register an algorithm, test_registry.cpp).
// Pieces shared by the local/asynchronous family (local_sgd, post_local_sgd, lap_sgd,
// lpp_sgd) and their tests:
//  - SyncFrequency: when a worker averages (post-local SGD, Lin et al. 2020; LPP paper,
//    Chatterjee et al., arXiv:2203.06638 section 3, "Synchronization Frequency Scheme").
//  - partition_blocks: LPP-SGD's blocks of consecutive tensors (section 3, "Block
//    partitions", Eq. 10), balanced by parameter count.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <limits>
#include <string>
#include <vector>

#include "models/model.h"

namespace wb::algo {

// Hogwild's lock-free element-wise access to a shared model (LAP/LPP-SGD real mode): relaxed
// atomics through std::atomic_ref, no C++ data race, no lost update. `workbench calibrate`
// times these same two functions for the cost profile's shared_model entry.
inline float load_relaxed(float& x) { return std::atomic_ref<float>(x).load(std::memory_order_relaxed); }
inline void add_relaxed(float& x, float d) {
  std::atomic_ref<float>(x).fetch_add(d, std::memory_order_relaxed);
}

// CPU seconds of the calling thread (CLOCK_THREAD_CPUTIME_ID): real mode times its shared-model
// loops with it, so the time a thread waits for the core it shares (updaters and the runner on
// one core) is not counted as the loop's cost. A call is a few hundred ns, against loops of
// tens of us (LeNet-5) to ms (the sparse MLP).
inline double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Algorithm 1 lines 9-11: with s_cur minibatches processed (per worker) and s_pre the
// count at the last averaging round, average when s_cur - s_pre >= K_j, where
// K_j = 1 while s_cur <= switch_step ("K_j = 1 until T/2 minibatches are processed") and
// H afterwards. switch_step = round(switch_at x T): switch_at is a FRACTION OF THE STEP
// BUDGET (0.5 = the paper's T/2; 0 = plain local SGD with period H from the start; 1 =
// average after every step, i.e. mini-batch SGD on models). One extra rule: the last
// minibatch (s_cur = T) always ends with a round, so the run finishes on one common model
// (what is evaluated and written as final_params).
// Worked example: T = 20, switch_at = 0.5 (switch_step 10), H = 4: rounds after
// s_cur = 1, 2, ..., 10, then 14, 18, and 20 (the final round).
class SyncFrequency {
 public:
  SyncFrequency() = default;
  SyncFrequency(int64_t total, double switch_at, int64_t H)
      : total_(total),
        switch_step_(static_cast<int64_t>(std::llround(switch_at * static_cast<double>(total)))),
        H_(H < 1 ? 1 : H) {}
  int64_t period(int64_t s_cur) const { return s_cur <= switch_step_ ? 1 : H_; }
  bool due(int64_t s_cur, int64_t s_pre) const {
    if (s_cur <= s_pre) return false;
    return s_cur - s_pre >= period(s_cur) || s_cur >= total_;
  }
  int64_t switch_step() const { return switch_step_; }
  int64_t total() const { return total_; }

 private:
  int64_t total_ = 0, switch_step_ = 0, H_ = 1;
};

// One LPP block: tensors [first_tensor, end_tensor), parameters [offset, offset + size).
struct Block {
  size_t first_tensor = 0, end_tensor = 0;
  size_t offset = 0, size = 0;
};

// Split the model's tensor list into `blocks` runs of consecutive tensors (no empty block)
// minimizing the largest block's parameter count (exact linear-partition DP; ties go to
// the earliest split, so the partition is deterministic). blocks is clamped to
// [1, number of tensors]: with more updaters than tensors the caller reduces the block
// count (and says so). Example, lenet5 (conv1.w 250, conv1.b 10, conv2.w 5000,
// conv2.b 20, fc1.w 16000, fc1.b 50, fc2.w 500, fc2.b 10) into 2 blocks:
// {conv1.*, conv2.*} = 5,280 and {fc1.*, fc2.*} = 16,560 (any other cut leaves a block of
// >= 21,280).
inline std::vector<Block> partition_blocks(const std::vector<models::TensorInfo>& t, int blocks) {
  const size_t n = t.size();
  std::vector<Block> out;
  if (n == 0) return out;
  const size_t k = static_cast<size_t>(std::clamp<int64_t>(blocks, 1, static_cast<int64_t>(n)));
  std::vector<double> pre(n + 1, 0.0);
  for (size_t i = 0; i < n; ++i) pre[i + 1] = pre[i] + static_cast<double>(t[i].size);
  // best[b][i]: smallest possible largest block when the first i tensors form b blocks;
  // cut[b][i]: where the last of those b blocks starts.
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(k + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<size_t>> cut(k + 1, std::vector<size_t>(n + 1, 0));
  best[0][0] = 0;
  for (size_t b = 1; b <= k; ++b)
    for (size_t i = b; i <= n; ++i)
      for (size_t j = b - 1; j < i; ++j) {
        const double v = std::max(best[b - 1][j], pre[i] - pre[j]);
        if (v < best[b][i]) {
          best[b][i] = v;
          cut[b][i] = j;
        }
      }
  std::vector<size_t> starts(k + 1);
  starts[k] = n;
  for (size_t b = k, i = n; b >= 1; --b) {
    starts[b - 1] = cut[b][i];
    i = cut[b][i];
  }
  for (size_t b = 0; b < k; ++b) {
    Block bl;
    bl.first_tensor = starts[b];
    bl.end_tensor = starts[b + 1];
    bl.offset = t[bl.first_tensor].offset;
    bl.size = t[bl.end_tensor - 1].offset + t[bl.end_tensor - 1].size - bl.offset;
    out.push_back(bl);
  }
  return out;
}

}  // namespace wb::algo
