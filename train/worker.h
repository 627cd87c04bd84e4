// A logical worker (DESIGN.md section 2): a model replica (flat parameter buffer), its
// gradient buffer, optimizer state, data shard and RNG stream. W of them make a run;
// rank r owns a contiguous block (comm/layout.h). Nothing about a worker depends on
// which rank owns it, so data order and dropout masks are the same for any R.
// A worker owns only its state (DESIGN.md section 3): the scratch of a training pass (the
// model's Workspace) belongs to whoever executes the pass and is handed in, so a rank that
// steps its W / R workers one after the other needs ONE workspace, not W / R of them. A
// pass leaves nothing in the workspace that a later pass reads, so results do not depend
// on which workspace a worker used (tests/unit/test_scale.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "models/model.h"
#include "train/optimizer.h"
#include "core/rng.h"

namespace wb::train {

// Worker k's shard of the training set, reshuffled every (worker-local) epoch with
// Rng(seed, k, epoch). With the default partition (iid) it is a contiguous block of a seeded
// global permutation; other partitions hand it their part (train/partition.h).
class Sampler {
 public:
  Sampler() = default;
  // The seeded global permutation of 0..dataset_size-1 that every shard is a block of. It
  // depends only on (dataset_size, seed): compute it once per run and build every worker's
  // Sampler from it (O(N) per run; building each from scratch is O(N) per worker, which
  // for W = 65,536 workers is minutes).
  static std::vector<uint32_t> global_permutation(size_t dataset_size, uint64_t seed);
  // Worker `worker` of `workers`: its block of perm (= global_permutation(N, seed)).
  // Construction and global_permutation are setup: they throw core::Interrupted when a signal
  // arrives (core/interrupt.h); next() never throws.
  Sampler(std::span<const uint32_t> perm, int workers, int worker, uint64_t seed);
  // The same shard, computing the permutation itself (one-off samplers, tests).
  Sampler(size_t dataset_size, int workers, int worker, uint64_t seed);
  // A sampler over the samples `shard` (a worker's part of a partition, train/partition.h),
  // shuffled with stream `worker`'s draws: Sampler(perm, W, k, seed) is of_shard(block k of
  // perm, k, seed). Setup: throws core::Interrupted on a signal.
  static Sampler of_shard(std::span<const uint32_t> shard, int worker, uint64_t seed);
  // Next n indices (wrapping into the next shard epoch). No allocation.
  void next(int n, std::span<uint32_t> out);
  size_t shard_size() const { return shard_.size(); }

 private:
  void init();  // the epoch-0 shuffle
  void reshuffle();
  std::vector<uint32_t> shard_;
  size_t pos_ = 0;
  uint64_t seed_ = 0, epoch_ = 0;
  int worker_ = 0;
};

// The one noise-seed rule (dropout masks): worker `worker`'s backward pass number `pass` of a
// run with seed `seed`. Every gradient of a logical worker goes through it, whichever
// algorithm asks, so a replay (diagnostics) or another algorithm on the same samples sees the
// same masks. Extra streams (LAP/LPP updaters u > 0) add their own tag: noise_seed_stream.
inline uint64_t noise_seed(uint64_t seed, int worker, int64_t pass) {
  return core::mix_ids(
      {seed, 0xd50ULL, static_cast<uint64_t>(worker), static_cast<uint64_t>(pass)});
}
inline uint64_t noise_seed_stream(uint64_t seed, int worker, int stream, int64_t pass) {
  return core::mix_ids({seed, 0xd51ULL, static_cast<uint64_t>(worker),
                        static_cast<uint64_t>(stream), static_cast<uint64_t>(pass)});
}

// The scratch of a training pass: the model's workspace and the batch buffer, for batches of
// up to max_batch samples. Owned by whoever executes passes (one per executing thread) and
// reused across workers: nothing a pass leaves in it is read by the next one.
struct PassScratch {
  PassScratch() = default;
  PassScratch(const models::Model& m, const models::Dataset& d, int max_batch)
      : ws(m.make_workspace(max_batch)) {
    d.reserve(batch, max_batch);
  }
  std::unique_ptr<models::Workspace> ws;
  models::Batch batch;  // the batch of the last pass run on this scratch
  // Grouped passes (compute_gradients_of): a chunk of workers' batches and the device
  // model's group workspace for group_capacity passes of group_batch samples, made on first
  // use; group_capacity -1: the model has no grouped passes.
  std::vector<models::Batch> group_batches;
  std::unique_ptr<models::Workspace> group_ws;
  int group_capacity = 0, group_batch = 0;
};

struct Worker {
  int id = 0;
  std::vector<float> w;  // parameters
  std::vector<float> g;  // gradient of the last batch
  std::unique_ptr<Optimizer> opt;
  // Model state that is not a parameter (BatchNorm's running statistics, Model::state_size):
  // owned like the optimizer state; training passes update it, evaluation reads it.
  std::vector<float> state;
  // The sample indices of the last batch (exactly its size): diagnostics replay that batch
  // by gathering them again, so the worker keeps 4 bytes per sample, not the samples.
  std::vector<uint32_t> idx;
  Sampler sampler;
  uint64_t seed = 0;   // run seed
  // The run's clip_norm (train/run_config.h; 0 = off): every gradient pass of this worker --
  // gradient_on, compute_gradients_of, gradient_at -- ends by clipping its own gradient to
  // this global L2 norm (train/grad_clip.h, torch.nn.utils.clip_grad_norm_), so every
  // algorithm sees per-worker clipped gradients BEFORE it combines anything: each worker is
  // a single-process PyTorch loop that clips after backward(). (DDP clips the gradient it has
  // already averaged; sync_sgd here averages clipped gradients.) The optimizer steps of local
  // SGD, LAP/LPP's updaters, Elastic/Adaptive SGD and DiLoCo's inner loop take clipped
  // gradients the same way. Set once at setup, read-only afterwards.
  double clip_norm = 0;
  int64_t passes = 0;  // backward passes done (drives dropout noise seeds)
  double loss = 0;     // mean loss of the last batch
  uint64_t last_noise = 0;  // noise seed (dropout masks) of the last batch: lets
                            // diagnostics replay exactly that pass in double precision

  // Clips grad (a gradient of this worker's model) to clip_norm; the last act of every pass
  // below. Gradient accumulation (algorithms/algorithm.cpp accumulate_gradients) calls it on
  // the mean of k unclipped micro-batch gradients instead, as PyTorch clips .grad once after
  // k backward() calls.
  void clip(std::span<float> grad) const;

  // Draw the next batch of n samples and compute loss + gradient into g. s: the executing
  // thread's scratch (made for >= n samples), never used by two passes at once; on return
  // s.batch holds the batch.
  // clip = false: leave g unclipped (the micro-batches of gradient accumulation, whose
  // mean is clipped once by the caller with clip()).
  double compute_gradient(const models::Model& m, const models::Dataset& d, int n,
                          PassScratch& s, bool clip = true);
  // THE gradient entry: loss + gradient of the model w on the samples `indices` into g, with
  // this worker's next noise seed (noise_seed). compute_gradient draws the indices from the
  // sampler and calls it; Adaptive SGD passes the indices its scheduler hands out.
  double gradient_on(const models::Model& m, const models::Dataset& d,
                     std::span<const uint32_t> indices, PassScratch& s, bool clip = true);
  // What every pass of this worker does before its loss_grad, for those who run the pass
  // themselves (grouped passes, compute_gradients_of): draw_indices takes the next n sample
  // indices from the sampler into idx; next_pass records `indices` as the last batch,
  // gathers it into b and returns this pass's noise seed (noise_seed), counting the pass.
  std::span<const uint32_t> draw_indices(int n);
  uint64_t next_pass(const models::Dataset& d, std::span<const uint32_t> indices,
                     models::Batch& b);
  // The gradient entry of asynchronous updaters (LAP/LPP-SGD: U updaters per worker share
  // its model): loss + gradient at `params` -- a snapshot of the shared model, not w -- on
  // `indices`, into `grad`, with noise stream `stream` (0: this worker's own stream,
  // noise_seed, so one updater replays the worker's passes exactly; others noise_seed_stream)
  // at pass number `pass`. from_tensor >= 0: backprop stops at that tensor
  // (Model::loss_grad_from, LPP-SGD's partial backpropagation); -1: the full pass. Reads no
  // member but the worker's identity and seed and writes none: updater threads of one worker
  // call it concurrently, each with its own batch, workspace, params and grad.
  double gradient_at(const models::Model& m, const models::Dataset& d,
                     std::span<const float> params, std::span<const uint32_t> indices,
                     std::span<float> grad, models::Batch& batch, models::Workspace& ws,
                     int stream, int64_t pass, int from_tensor = -1) const;
};

// The next gradient of each of `workers` on its next n samples, exactly as
// compute_gradient called on each in turn would give it (same batches, noise seeds, pass
// counts, losses, gradients bit for bit, clipped by each worker's clip_norm). When the model runs grouped passes
// (train::DeviceModel::make_group_workspace: the cuda device) the workers' passes run as one
// device computation per chunk of at most kGroupSamples samples and kGroupWorkers workers
// (the chunk's parameters and gradients are staged in pinned host memory and on the device:
// 512 LeNet-5 replicas are 45 MB each way); otherwise one after the other on s.
// flops[i] = m.flops_for_batch(worker i's batch), the simulated clock's input.
inline constexpr int kGroupSamples = 8192;
inline constexpr int kGroupWorkers = 512;
void compute_gradients_of(std::span<Worker> workers, const models::Model& m,
                          const models::Dataset& d, int n, PassScratch& s,
                          std::span<double> flops, bool clip = true);

}  // namespace wb::train
