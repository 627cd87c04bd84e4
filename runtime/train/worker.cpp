#include "runtime/train/worker.h"

#include <numeric>

#include "runtime/core/error.h"

namespace wb::rt {

std::vector<uint32_t> Sampler::global_permutation(size_t dataset_size, uint64_t seed) {
  // The same on every rank (same seed).
  std::vector<uint32_t> perm(dataset_size);
  std::iota(perm.begin(), perm.end(), 0u);
  Rng r = Rng::stream({seed, 0x5eed5eedULL});
  r.shuffle(std::span<uint32_t>(perm));
  return perm;
}

Sampler::Sampler(size_t dataset_size, int workers, int worker, uint64_t seed)
    : Sampler(global_permutation(dataset_size, seed), workers, worker, seed) {}

Sampler::Sampler(std::span<const uint32_t> perm, int workers, int worker, uint64_t seed)
    : seed_(seed), worker_(worker) {
  // Shards are the permutation's contiguous blocks, sizes differing by at most one.
  const size_t dataset_size = perm.size();
  const size_t lo = dataset_size * static_cast<size_t>(worker) / static_cast<size_t>(workers);
  const size_t hi = dataset_size * static_cast<size_t>(worker + 1) / static_cast<size_t>(workers);
  shard_.assign(perm.begin() + static_cast<std::ptrdiff_t>(lo),
                perm.begin() + static_cast<std::ptrdiff_t>(hi));
  WB_ASSERT(!shard_.empty(), "empty data shard");
  reshuffle();
}

void Sampler::reshuffle() {
  Rng r = Rng::stream({seed_, 0xdaa7aULL, static_cast<uint64_t>(worker_), epoch_});
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

double Worker::compute_gradient(const models::Model& m, const models::Dataset& d, int n,
                                PassScratch& s) {
  idx.resize(static_cast<size_t>(n));  // no allocation after the first batch of this size
  sampler.next(n, std::span<uint32_t>(idx));
  return gradient_on(m, d, idx, s);
}

double Worker::gradient_on(const models::Model& m, const models::Dataset& d,
                           std::span<const uint32_t> indices, PassScratch& s) {
  if (indices.data() != idx.data()) idx.assign(indices.begin(), indices.end());
  d.gather(indices, s.batch);
  const uint64_t noise = noise_seed(seed, id, passes);
  ++passes;
  last_noise = noise;
  loss = m.loss_grad(w, s.batch, g, *s.ws, noise);
  return loss;
}

}  // namespace wb::rt
