// shards: the "pathological non-IID" partition of McMahan et al. (arXiv:1602.05629 section 3:
// "sort the data by digit label, divide it into 200 shards of size 300, and assign each of
// 100 clients 2 shards"), Flower's ShardPartitioner with num_shards_per_partition =
// shards_per_worker S:
//  - the training samples sorted by label (index order within a class),
//  - cut into W x S shards of consecutive samples,
//  - the shards dealt at random (a seeded permutation of the shard ids): worker k takes the
//    k-th S of them.
// One deviation, so that every sample is in exactly one part: Flower's shard size is
// floor(N / (W S)) and the leftover samples are dropped; here shard j is
// [floor(N j / (W S)), floor(N (j+1) / (W S))) of the sorted samples, sizes differing by at
// most one. When a shard is no larger than the smallest class, it spans at most 2 classes,
// so a worker holds at most 2 S classes (S when the classes divide into whole shards).
#include <algorithm>
#include <numeric>
#include <string>

#include "core/error.h"
#include "core/interrupt.h"
#include "train/partition.h"

namespace wb::train {

namespace {

struct ShardParams {
  int64_t shards_per_worker = 2;
  static void describe(core::ParamSet<ShardParams>& p) {
    p.field("shards_per_worker", &ShardParams::shards_per_worker,
            "label-sorted shards per worker (McMahan et al.: 2; Flower's "
            "num_shards_per_partition)")
        .min(1)
        .max(1 << 16);
  }
};

class ShardPartition final : public Partitioner {
 public:
  explicit ShardPartition(const ShardParams& p) : p_(p) {}
  bool needs_labels() const override { return true; }

  DataPartition make(const PartitionInput& in) const override {
    core::throw_if_interrupted();
    const size_t N = in.samples, W = static_cast<size_t>(in.workers),
                 S = static_cast<size_t>(p_.shards_per_worker), C = static_cast<size_t>(in.classes);
    const size_t shards = W * S;
    if (shards > N)
      throw UserError("", "shards_per_worker = " + std::to_string(S) + " with " + std::to_string(W) +
                              " workers makes " + std::to_string(shards) +
                              " shards but the training set has " + std::to_string(N) +
                              " samples: every shard needs >= 1 (use shards_per_worker <= " +
                              std::to_string(std::max<size_t>(1, N / W)) + " or fewer workers)");
    // Sorted by label, index order within a class (a stable counting sort).
    std::vector<size_t> at(C + 1, 0);
    for (size_t i = 0; i < N; ++i) ++at[static_cast<size_t>(in.labels[i]) + 1];
    for (size_t k = 0; k < C; ++k) at[k + 1] += at[k];
    std::vector<uint32_t> sorted(N);
    for (size_t i = 0; i < N; ++i) sorted[at[static_cast<size_t>(in.labels[i])]++] = static_cast<uint32_t>(i);
    // The deal: a seeded permutation of the shard ids.
    std::vector<uint32_t> deal(shards);
    std::iota(deal.begin(), deal.end(), 0u);
    core::Rng r = core::Rng::stream({in.seed, 0x5ba4d5ULL});
    r.shuffle(std::span<uint32_t>(deal));
    DataPartition out;
    out.seed = in.seed;
    out.order.reserve(N);
    out.offset.assign(1, 0);
    for (size_t k = 0; k < W; ++k) {
      for (size_t s = 0; s < S; ++s) {
        const size_t j = deal[k * S + s];
        out.order.insert(out.order.end(), sorted.begin() + static_cast<std::ptrdiff_t>(N * j / shards),
                         sorted.begin() + static_cast<std::ptrdiff_t>(N * (j + 1) / shards));
      }
      out.offset.push_back(out.order.size());
    }
    return out;
  }

 private:
  ShardParams p_;
};

}  // namespace

WB_REGISTER_PARTITION("shards", ShardPartition, ShardParams,
                      "sort by label, cut into workers x shards_per_worker shards, deal "
                      "shards_per_worker to each worker (McMahan et al. 2017; Flower's "
                      "ShardPartitioner)");

}  // namespace wb::train
