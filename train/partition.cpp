#include "train/partition.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace wb::train {

PartitionRegistry& partition_registry() {
  static PartitionRegistry r("partition");
  return r;
}

DataPartition make_partition(const json& resolved, const PartitionInput& in) {
  return partition_registry().create(resolved)->make(in);
}

bool partition_needs_labels(const json& resolved) {
  return partition_registry().create(resolved)->needs_labels();
}

std::span<const uint32_t> DataPartition::shard(int k) const {
  const size_t lo = offset[static_cast<size_t>(k)], hi = offset[static_cast<size_t>(k) + 1];
  return std::span<const uint32_t>(order).subspan(lo, hi - lo);
}

Sampler DataPartition::sampler(int k) const { return Sampler::of_shard(shard(k), k, seed); }

Sampler DataPartition::sampler(int k, int parts, int part) const {
  const size_t P = static_cast<size_t>(parts), u = static_cast<size_t>(part);
  const size_t id = static_cast<size_t>(k) * P + u;
  size_t lo, hi;
  if (blocks) {
    // Block id of the W x U grid over `order`: floor(N id / (W U)). Worker k's block
    // [floor(N k / W), floor(N (k+1) / W)) is the union of its U grid blocks, since
    // floor(N k U / (W U)) = floor(N k / W).
    const size_t N = order.size(), WU = static_cast<size_t>(workers()) * P;
    lo = N * id / WU;
    hi = N * (id + 1) / WU;
  } else {
    const size_t a = offset[static_cast<size_t>(k)], len = offset[static_cast<size_t>(k) + 1] - a;
    lo = a + len * u / P;
    hi = a + len * (u + 1) / P;
  }
  return Sampler::of_shard(std::span<const uint32_t>(order).subspan(lo, hi - lo),
                           static_cast<int>(id), seed);
}

size_t DataPartition::min_size() const {
  size_t m = std::numeric_limits<size_t>::max();
  for (size_t k = 0; k + 1 < offset.size(); ++k) m = std::min(m, offset[k + 1] - offset[k]);
  return m;
}

std::vector<int64_t> DataPartition::label_counts(std::span<const int32_t> labels,
                                                 int classes) const {
  const size_t C = static_cast<size_t>(classes);
  std::vector<int64_t> counts(static_cast<size_t>(workers()) * C, 0);
  for (int k = 0; k < workers(); ++k)
    for (uint32_t i : shard(k)) ++counts[static_cast<size_t>(k) * C + static_cast<size_t>(labels[i])];
  return counts;
}

DataPartition block_partition(std::vector<uint32_t> order, int workers, uint64_t seed) {
  DataPartition p;
  const size_t N = order.size(), W = static_cast<size_t>(workers);
  p.order = std::move(order);
  p.offset.resize(W + 1);
  for (size_t k = 0; k <= W; ++k) p.offset[k] = N * k / W;
  p.blocks = true;
  p.seed = seed;
  return p;
}

double log_gamma_variate(core::Rng& r, double shape) {
  // Gamma(a) = Gamma(a + 1) x U^(1/a) for a < 1 (Marsaglia and Tsang, section 6).
  double boost = 0;
  if (shape < 1) {
    double u = r.uniform();
    while (u <= 0) u = r.uniform();
    boost = std::log(u) / shape;
    shape += 1;
  }
  // Marsaglia and Tsang's squeeze: d = a - 1/3, c = 1 / sqrt(9 d); accept
  // v = (1 + c x)^3 when log U < x^2 / 2 + d - d v + d log v.
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = r.normal();
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = r.uniform();
    if (u < 1.0 - 0.0331 * x * x * x * x) return std::log(d * v) + boost;
    if (u > 0 && std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return std::log(d * v) + boost;
  }
}

std::vector<double> dirichlet_draw(core::Rng& r, double alpha, int k) {
  // Normalized Gamma(alpha) variates, in logs: exp(l_i - max) / sum_j exp(l_j - max).
  std::vector<double> l(static_cast<size_t>(k));
  for (double& x : l) x = log_gamma_variate(r, alpha);
  const double m = *std::max_element(l.begin(), l.end());
  double s = 0;
  for (double& x : l) s += (x = std::exp(x - m));
  for (double& x : l) x /= s;
  return l;
}

}  // namespace wb::train
