// Data partitions: which training samples each logical worker draws from (the run config's
// `partition`). The names and defaults follow Flower Datasets' partitioners
// (flwr_datasets.partitioner, https://flower.ai/docs/datasets/ref-api/flwr_datasets.partitioner.html),
// what a federated-learning user already writes:
//   iid         blocks of one seeded permutation of the training set (the default; exactly the
//               shards every run had before partitions could be chosen)          IidPartitioner
//   contiguous  blocks of the training set in its own order: for text (gpt) each worker a
//               contiguous stretch of the corpus, the non-IID case of DiLoCo
//               (Douillard et al., arXiv:2311.08105 section 3, "non-i.i.d. data regime")
//   dirichlet   per class, proportions ~ Dir(alpha) over the workers         DirichletPartitioner
//   shards      sort by label, cut into W x S shards, deal S to each worker      ShardPartitioner
//               (McMahan et al., arXiv:1602.05629 section 3, "pathological non-IID")
// Each scheme is one file (train/partition_<name>.cpp) that registers itself.
//
// A partition is a function of (training-set size and labels, workers, seed) alone: every
// rank computes the whole partition and takes its own workers' parts, so the partition is
// the same at -n 1 and -n 2 (tests/mpi/test_partition_ranks.cpp).
//
// What an epoch is: each worker steps through its own partition with its own batch size,
// reshuffling it when it is exhausted (its own worker-local epoch), as each client of FedAvg
// does (McMahan et al. section 3: "each client ... makes E passes over its local data"). The
// run's epoch stays the samples processed by all workers over the training-set size, so an
// `epochs` budget is passes over the union of the partitions; with partitions of different
// sizes a small partition is passed over more often than a large one in that time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/registry.h"
#include "train/worker.h"

namespace wb::train {

// What a partition is made from.
struct PartitionInput {
  size_t samples = 0;                // N: the training samples (without a validation tail)
  std::span<const int32_t> labels;   // the class of each of the N samples; empty: none
  int classes = 0;                   // labels lie in [0, classes)
  int workers = 1;                   // W
  uint64_t seed = 0;                 // the run's seed
};

// A realised partition: worker k's samples are order[offset[k], offset[k + 1]).
struct DataPartition {
  std::vector<uint32_t> order;
  std::vector<size_t> offset;  // W + 1 entries, offset[0] = 0, offset[W] = order.size()
  // The offsets are floor(N k / W) (iid, contiguous): a sub-shard of worker k (LAP/LPP's
  // updaters) is then a block of the same W x U grid that the iid shards always used.
  bool blocks = false;
  uint64_t seed = 0;

  int workers() const { return static_cast<int>(offset.size()) - 1; }
  std::span<const uint32_t> shard(int k) const;
  // Worker k's sampler: its part, reshuffled every worker-local epoch with its own stream.
  Sampler sampler(int k) const;
  // Part `part` of `parts` of worker k (LAP/LPP-SGD: updater u of worker k): its sampler's
  // stream is that of worker k x parts + part, as when the W x U shards were a grid.
  Sampler sampler(int k, int parts, int part) const;
  // The smallest worker part (the planner's every-shard-has-a-sample check).
  size_t min_size() const;
  // Count of each class in each worker's part: W x classes, row-major.
  std::vector<int64_t> label_counts(std::span<const int32_t> labels, int classes) const;
};

// Blocks floor(N k / W) of `order` (iid over a permutation, contiguous over the identity).
DataPartition block_partition(std::vector<uint32_t> order, int workers, uint64_t seed);

class Partitioner {
 public:
  virtual ~Partitioner() = default;
  // True when the scheme reads class labels (dirichlet, shards): refused on a model whose
  // samples have none (the toys, gpt's text windows, sparse_mlp's multi-labels).
  virtual bool needs_labels() const { return false; }
  // The partition. UserError("", why) when the parameters cannot be met for this data (the
  // caller names the JSON path); core::Interrupted on a signal (setup).
  virtual DataPartition make(const PartitionInput& in) const = 0;
};

using PartitionRegistry = core::Registry<Partitioner>;
PartitionRegistry& partition_registry();

// The partition of a resolved `partition` value ({"name": ..., params}).
DataPartition make_partition(const json& resolved, const PartitionInput& in);
bool partition_needs_labels(const json& resolved);

// A Gamma(shape, 1) variate as its logarithm (Marsaglia and Tsang, ACM TOMS 26(3), 2000,
// with the boost Gamma(a) = Gamma(a + 1) U^(1/a) for a < 1, kept in logs so that a tiny alpha
// does not underflow to 0): the Dirichlet draw is the normalized exponentials.
double log_gamma_variate(core::Rng& r, double shape);
// A Dir(alpha, ..., alpha) draw of `k` proportions (sum 1) from r.
std::vector<double> dirichlet_draw(core::Rng& r, double alpha, int k);

}  // namespace wb::train

// WB_REGISTER_PARTITION("shards", ShardPartition, ShardParams, "doc"): ShardPartition(const
// ShardParams&) : Partitioner.
#define WB_REGISTER_PARTITION(NAME, IMPL, PARAMS, DOC) \
  WB_REGISTER(::wb::train::partition_registry, NAME, IMPL, PARAMS, DOC)
