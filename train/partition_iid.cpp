// iid: worker k's part is block k of one seeded permutation of the training set, blocks of
// floor(N k / W) (Flower's IidPartitioner: a shuffled dataset cut into equal parts). The
// default, and exactly the shards every run had before `partition` existed: the same
// permutation (Sampler::global_permutation) and the same blocks, so a run's curves are
// unchanged bit for bit (tests/unit/test_partition.cpp).
#include "train/partition.h"

namespace wb::train {

namespace {

class IidPartition final : public Partitioner {
 public:
  explicit IidPartition(const core::NoParams&) {}
  DataPartition make(const PartitionInput& in) const override {
    return block_partition(Sampler::global_permutation(in.samples, in.seed), in.workers, in.seed);
  }
};

}  // namespace

WB_REGISTER_PARTITION("iid", IidPartition, core::NoParams,
                      "blocks of one seeded permutation of the training set (the default)");

}  // namespace wb::train
