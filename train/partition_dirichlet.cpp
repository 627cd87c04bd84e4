// dirichlet: label-skewed parts, Flower's DirichletPartitioner
// (flwr_datasets.partitioner.DirichletPartitioner, after Yurochkin et al., "Bayesian
// Nonparametric Federated Learning of Neural Networks", arXiv:1905.12022 section 5), with its
// argument names and defaults:
//  - for each class k (in ascending order), proportions p ~ Dir(alpha, ..., alpha) over the W
//    workers; the class's samples (in index order) are cut at floor(N_k x cumsum(p)), worker
//    j taking the j-th piece (numpy's split at cumsum(p)[:-1] x N_k, as Flower does);
//  - self_balancing: before a class is cut, a worker already holding more than N / W samples
//    gets proportion 0 and the others are renormalized (Flower's "balancing", not in the
//    paper; it makes later classes sparser than alpha suggests);
//  - min_partition_size: when some worker ends with fewer samples, the whole draw is repeated
//    (new proportions from the same stream); Flower gives up after 11 draws (attempts 0..10)
//    with "The max number of attempts (10) was reached", and so does this, naming the key.
// alpha -> infinity approaches every worker holding N_k / W of each class (iid label
// proportions); alpha -> 0 gives each class to one or few workers. Flower's `seed` (42 by
// default) is the run's seed here, and Flower's `shuffle` is the worker's own per-epoch
// reshuffle (train/worker.h Sampler).
#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "core/interrupt.h"
#include "train/partition.h"

namespace wb::train {

namespace {

struct DirichletParams {
  double alpha = 0.5;
  int64_t min_partition_size = 10;
  bool self_balancing = false;
  static void describe(core::ParamSet<DirichletParams>& p) {
    p.field("alpha", &DirichletParams::alpha,
            "concentration of Dir(alpha) over the workers, per class: large ~ iid label "
            "proportions, small = each class on few workers (Flower's alpha)")
        .positive();
    p.field("min_partition_size", &DirichletParams::min_partition_size,
            "redraw (at most 11 draws, as Flower) until every worker holds at least this many "
            "samples (and at least 1)")
        .min(0);
    p.field("self_balancing", &DirichletParams::self_balancing,
            "a worker holding more than N / W samples gets no share of the later classes "
            "(Flower's self_balancing)");
  }
};

class DirichletPartition final : public Partitioner {
 public:
  explicit DirichletPartition(const DirichletParams& p) : p_(p) {}
  bool needs_labels() const override { return true; }

  DataPartition make(const PartitionInput& in) const override {
    core::throw_if_interrupted();
    const size_t N = in.samples, W = static_cast<size_t>(in.workers),
                 C = static_cast<size_t>(in.classes);
    const size_t min_size = static_cast<size_t>(p_.min_partition_size);
    if (min_size > 0 && min_size * W > N)
      throw UserError("", "min_partition_size = " + std::to_string(min_size) + " with " +
                              std::to_string(W) + " workers asks for " +
                              std::to_string(min_size * W) + " samples but the training set has " +
                              std::to_string(N) + " (lower min_partition_size or use fewer workers)");
    // The samples of each class, in index order (a counting sort).
    std::vector<size_t> class_begin(C + 1, 0);
    for (size_t i = 0; i < N; ++i) ++class_begin[static_cast<size_t>(in.labels[i]) + 1];
    for (size_t k = 0; k < C; ++k) class_begin[k + 1] += class_begin[k];
    std::vector<uint32_t> by_class(N);
    {
      std::vector<size_t> fill(class_begin.begin(), class_begin.end() - 1);
      for (size_t i = 0; i < N; ++i) by_class[fill[static_cast<size_t>(in.labels[i])]++] = static_cast<uint32_t>(i);
    }
    core::Rng r = core::Rng::stream({in.seed, 0xd1c41e7ULL});
    const double avg = static_cast<double>(N) / static_cast<double>(W);
    constexpr int kAttempts = 11;  // Flower: attempts 0..10, then ValueError
    std::vector<std::vector<uint32_t>> parts(W);
    size_t smallest = 0, smallest_at = 0;
    for (int attempt = 0; attempt < kAttempts; ++attempt) {
      core::throw_if_interrupted();
      for (auto& v : parts) v.clear();
      for (size_t k = 0; k < C; ++k) {
        std::vector<double> prop = dirichlet_draw(r, p_.alpha, static_cast<int>(W));
        if (p_.self_balancing) {
          std::vector<double> kept = prop;
          double s = 0;
          for (size_t j = 0; j < W; ++j) {
            if (static_cast<double>(parts[j].size()) > avg) kept[j] = 0;
            s += kept[j];
          }
          // Some worker holds <= N / W samples, but its proportion can underflow to 0 for a
          // tiny alpha: then the class is cut by the unbalanced proportions (Flower would
          // divide by zero).
          if (s > 0) {
            for (double& x : kept) x /= s;
            prop = std::move(kept);
          }
        }
        const size_t nk = class_begin[k + 1] - class_begin[k];
        double cum = 0;
        size_t lo = 0;
        for (size_t j = 0; j < W; ++j) {
          cum += prop[j];
          const size_t hi = j + 1 == W ? nk : std::min(nk, static_cast<size_t>(cum * static_cast<double>(nk)));
          const size_t h = std::max(lo, hi);
          parts[j].insert(parts[j].end(), by_class.begin() + static_cast<std::ptrdiff_t>(class_begin[k] + lo),
                          by_class.begin() + static_cast<std::ptrdiff_t>(class_begin[k] + h));
          lo = h;
        }
      }
      smallest = parts[0].size(), smallest_at = 0;
      for (size_t j = 1; j < W; ++j)
        if (parts[j].size() < smallest) smallest = parts[j].size(), smallest_at = j;
      if (smallest >= std::max<size_t>(min_size, 1)) {
        DataPartition out;
        out.seed = in.seed;
        out.order.reserve(N);
        out.offset.assign(1, 0);
        for (const auto& v : parts) {
          out.order.insert(out.order.end(), v.begin(), v.end());
          out.offset.push_back(out.order.size());
        }
        return out;
      }
    }
    throw UserError("", "no Dirichlet draw with alpha = " + core::fmt_number(p_.alpha) + " over " +
                            std::to_string(W) + " workers gave every worker min_partition_size = " +
                            std::to_string(std::max<size_t>(min_size, 1)) + " samples in " +
                            std::to_string(kAttempts) + " attempts (the last left worker " +
                            std::to_string(smallest_at) + " with " + std::to_string(smallest) +
                            "): raise alpha, lower min_partition_size or use fewer workers");
  }

 private:
  DirichletParams p_;
};

}  // namespace

WB_REGISTER_PARTITION("dirichlet", DirichletPartition, DirichletParams,
                      "per class, proportions ~ Dir(alpha) over the workers (Flower's "
                      "DirichletPartitioner)");

}  // namespace wb::train
