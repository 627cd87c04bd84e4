// contiguous: worker k's part is block k of the training set in its own order, blocks of
// floor(N k / W). For text (gpt, models/text_data.h) the samples are the windows in corpus
// order, so each worker trains on its own stretch of the text: the non-i.i.d. regime of
// DiLoCo (Douillard et al., arXiv:2311.08105 section 3, where each replica sees a different
// part of the data), against iid's windows drawn from the whole corpus. On a data set whose
// file order is arbitrary (Fashion-MNIST) it is close to iid. Each worker still draws random
// samples from its block, reshuffled every worker-local epoch (train/worker.h).
#include <numeric>

#include "core/interrupt.h"
#include "train/partition.h"

namespace wb::train {

namespace {

class ContiguousPartition final : public Partitioner {
 public:
  explicit ContiguousPartition(const core::NoParams&) {}
  DataPartition make(const PartitionInput& in) const override {
    core::throw_if_interrupted();
    std::vector<uint32_t> order(in.samples);
    std::iota(order.begin(), order.end(), 0u);
    return block_partition(std::move(order), in.workers, in.seed);
  }
};

}  // namespace

WB_REGISTER_PARTITION("contiguous", ContiguousPartition, core::NoParams,
                      "blocks of the training set in its own order (gpt: a stretch of the text "
                      "per worker)");

}  // namespace wb::train
