#include "train/worker.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "core/interrupt.h"
#include "train/compute_device.h"
#include "train/grad_clip.h"

namespace wb::train {

namespace {

// Rng::shuffle's Fisher-Yates (the same draws, so the same permutation), answering a signal
// every 2^20 swaps: a permutation of 10^9 samples takes seconds.
// The signal check sits between blocks, not in the swap loop: a (non-inline) call in the
// loop made the compiler keep the generator's state in memory, and a 10,000-run sweep of
// one-step toy runs twice as slow.
void shuffle_interruptible(core::Rng& r, std::span<uint32_t> v) {
  constexpr size_t kPoll = size_t{1} << 20;
  core::Rng g = r;  // a local copy the optimizer can keep in registers
  size_t i = v.size();
  while (i > 1) {
    const size_t stop = i > kPoll ? i - kPoll : 1;
    for (; i > stop; --i) std::swap(v[i - 1], v[g.below(i)]);
    if (i > 1) core::throw_if_interrupted();
  }
  r = g;
}

}  // namespace

std::vector<uint32_t> Sampler::global_permutation(size_t dataset_size, uint64_t seed) {
  // The same on every rank (same seed).
  core::throw_if_interrupted();
  std::vector<uint32_t> perm(dataset_size);
  std::iota(perm.begin(), perm.end(), 0u);
  core::Rng r = core::Rng::stream({seed, 0x5eed5eedULL});
  shuffle_interruptible(r, std::span<uint32_t>(perm));
  return perm;
}

Sampler::Sampler(size_t dataset_size, int workers, int worker, uint64_t seed)
    : Sampler(global_permutation(dataset_size, seed), workers, worker, seed) {}

Sampler::Sampler(std::span<const uint32_t> perm, int workers, int worker, uint64_t seed) {
  // Shards are the permutation's contiguous blocks, sizes differing by at most one.
  const size_t dataset_size = perm.size();
  const size_t lo = dataset_size * static_cast<size_t>(worker) / static_cast<size_t>(workers);
  const size_t hi = dataset_size * static_cast<size_t>(worker + 1) / static_cast<size_t>(workers);
  *this = of_shard(perm.subspan(lo, hi - lo), worker, seed);
}

Sampler Sampler::of_shard(std::span<const uint32_t> shard, int worker, uint64_t seed) {
  Sampler s;
  s.seed_ = seed;
  s.worker_ = worker;
  s.shard_.assign(shard.begin(), shard.end());
  s.init();
  return s;
}

void Sampler::init() {
  // An empty shard is refused in pre-flight (app/plan/run_plan.cpp: workers, LAP/LPP
  // updaters <= training samples, every partition's part >= 1 sample); reaching it here is
  // a planning bug.
  WB_ASSERT(!shard_.empty(), "empty data shard");
  // Construction is setup (may throw Interrupted); a reshuffle during training is not.
  core::Rng r = core::Rng::stream({seed_, 0xdaa7aULL, static_cast<uint64_t>(worker_), epoch_});
  shuffle_interruptible(r, std::span<uint32_t>(shard_));
  pos_ = 0;
}

void Sampler::reshuffle() {
  core::Rng r = core::Rng::stream({seed_, 0xdaa7aULL, static_cast<uint64_t>(worker_), epoch_});
  r.shuffle(std::span<uint32_t>(shard_));
  pos_ = 0;
}

void Sampler::next(int n, std::span<uint32_t> out) {
  for (int i = 0; i < n; ++i) {
    if (pos_ == shard_.size()) {
      ++epoch_;
      reshuffle();
    }
    out[static_cast<size_t>(i)] = shard_[pos_++];
  }
}

std::span<const uint32_t> Worker::draw_indices(int n) {
  idx.resize(static_cast<size_t>(n));  // no allocation after the first batch of this size
  sampler.next(n, std::span<uint32_t>(idx));
  return idx;
}

uint64_t Worker::next_pass(const models::Dataset& d, std::span<const uint32_t> indices,
                           models::Batch& b) {
  if (indices.data() != idx.data()) idx.assign(indices.begin(), indices.end());
  d.gather(indices, b);
  const uint64_t noise = noise_seed(seed, id, passes);
  ++passes;
  last_noise = noise;
  return noise;
}

void Worker::clip(std::span<float> grad) const { clip_grad_norm(grad, clip_norm); }

double Worker::compute_gradient(const models::Model& m, const models::Dataset& d, int n,
                                PassScratch& s, bool clip_g) {
  return gradient_on(m, d, draw_indices(n), s, clip_g);
}

double Worker::gradient_on(const models::Model& m, const models::Dataset& d,
                           std::span<const uint32_t> indices, PassScratch& s, bool clip_g) {
  const uint64_t noise = next_pass(d, indices, s.batch);
  loss = state.empty() ? m.loss_grad(w, s.batch, g, *s.ws, noise)
                      : m.loss_grad_state(w, s.batch, g, *s.ws, noise, state);
  if (clip_g) clip(g);
  return loss;
}

void compute_gradients_of(std::span<Worker> workers, const models::Model& m,
                          const models::Dataset& d, int n, PassScratch& s,
                          std::span<double> flops, bool clip) {
  WB_ASSERT(flops.size() == workers.size(), "compute_gradients_of: one flops slot per worker");
  const auto* dm = dynamic_cast<const DeviceModel*>(&m);
  const int per_chunk = std::clamp(kGroupSamples / std::max(n, 1), 1, kGroupWorkers);
  if (dm && workers.size() > 1 && s.group_capacity >= 0 &&
      (s.group_capacity == 0 || s.group_batch < n ||
       s.group_capacity < std::min<int>(per_chunk, static_cast<int>(workers.size())))) {
    const int cap = std::min<int>(per_chunk, static_cast<int>(workers.size()));
    s.group_ws = dm->make_group_workspace(cap, n);
    s.group_capacity = s.group_ws ? cap : -1;
    s.group_batch = n;
  }
  if (!dm || workers.size() <= 1 || s.group_capacity <= 0) {
    for (size_t i = 0; i < workers.size(); ++i) {
      workers[i].compute_gradient(m, d, n, s, clip);
      flops[i] = m.flops_for_batch(s.batch);
    }
    return;
  }
  // Grouped: draw every batch of the chunk (the same draws compute_gradient makes, in worker
  // order), run the chunk's passes at once, then record each worker's result.
  if (s.group_batches.size() < static_cast<size_t>(s.group_capacity))
    s.group_batches.resize(static_cast<size_t>(s.group_capacity));
  std::vector<DeviceModel::GroupPass> passes;
  for (size_t c0 = 0; c0 < workers.size(); c0 += static_cast<size_t>(s.group_capacity)) {
    const size_t c1 = std::min(workers.size(), c0 + static_cast<size_t>(s.group_capacity));
    passes.clear();
    for (size_t i = c0; i < c1; ++i) {
      Worker& wk = workers[i];
      models::Batch& b = s.group_batches[i - c0];
      const uint64_t noise = wk.next_pass(d, wk.draw_indices(n), b);
      passes.push_back({.w = wk.w, .batch = &b, .g = wk.g, .noise_seed = noise});
      flops[i] = m.flops_for_batch(b);
    }
    dm->loss_grad_group(passes, *s.group_ws);
    for (size_t i = c0; i < c1; ++i) {
      workers[i].loss = passes[i - c0].loss;
      if (clip) workers[i].clip(workers[i].g);
    }
  }
}

double Worker::gradient_at(const models::Model& m, const models::Dataset& d,
                           std::span<const float> params, std::span<const uint32_t> indices,
                           std::span<float> grad, models::Batch& batch, models::Workspace& ws,
                           int stream, int64_t pass, int from_tensor) const {
  d.gather(indices, batch);
  const uint64_t noise =
      stream == 0 ? noise_seed(seed, id, pass) : noise_seed_stream(seed, id, stream, pass);
  // A partial pass (LPP-SGD) leaves the tensors before from_tensor at zero: the norm clipped
  // is that of the tensors the pass computed, as clip_grad_norm_ over the parameters that
  // have a .grad.
  const double loss =
      from_tensor < 0
          ? m.loss_grad(params, batch, grad, ws, noise)
          : m.loss_grad_from(params, batch, grad, ws, noise, static_cast<size_t>(from_tensor));
  clip(grad);
  return loss;
}

}  // namespace wb::train
