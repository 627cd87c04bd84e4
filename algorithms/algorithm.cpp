#include "algorithms/algorithm.h"

#include <algorithm>
#include <cmath>

namespace wb::algo {

AlgorithmRegistry& algorithm_registry() {
  static AlgorithmRegistry r("algorithm");
  return r;
}

void compute_gradients(StepContext& ctx, int batch_size, bool clip) {
  const int b = batch_size > 0 ? batch_size : static_cast<int>(ctx.cfg.batch_size);
  // A synchronous step waits for the slowest of ALL W workers. Each worker's time is its
  // own batch's cost (Model::flops_for_batch: the sparse MLP's cost follows the batch's
  // non-zeros) / its speed x its jitter; speeds and jitter are functions of (seed, worker,
  // draw), the batch cost is known only where the worker lives, so the W times are
  // allgathered (every rank then takes the same maximum). For a fixed cost per sample this
  // is exactly SimClock::slowest_compute_s.
  // The rank's workers' passes: one after the other, or one grouped device computation
  // (the cuda device), with the same results either way (train::compute_gradients_of).
  std::vector<double> local(ctx.workers.size()), all(static_cast<size_t>(ctx.W));
  train::compute_gradients_of(ctx.workers, ctx.model, ctx.train, b, *ctx.scratch, local, clip);
  for (size_t i = 0; i < ctx.workers.size(); ++i) {
    const train::Worker& w = ctx.workers[i];
    local[i] = ctx.clock.compute_s(w.id, local[i], static_cast<uint64_t>(w.passes));
  }
  ctx.step_samples += static_cast<int64_t>(b) * ctx.W;
  ctx.coll.allgather_worker_values(local, all);
  ctx.clock.advance_compute(all);  // the slowest: its mean is compute, the rest straggler wait
  if (ctx.observer) ctx.observer->on_gradients(ctx);
}

std::vector<std::span<float>> grad_spans(StepContext& ctx) {
  std::vector<std::span<float>> s;
  s.reserve(ctx.workers.size());
  for (auto& w : ctx.workers) s.emplace_back(w.g);
  return s;
}

std::vector<std::span<float>> param_spans(StepContext& ctx) {
  std::vector<std::span<float>> s;
  s.reserve(ctx.workers.size());
  for (auto& w : ctx.workers) s.emplace_back(w.w);
  return s;
}

std::span<const float> Algorithm::eval_state(StepContext& ctx) {
  if (ctx.workers.empty() || ctx.workers[0].state.empty()) return {};
  eval_state_.resize(ctx.workers.size());
  std::vector<std::span<float>> spans;
  for (size_t k = 0; k < ctx.workers.size(); ++k) {
    eval_state_[k] = ctx.workers[k].state;
    spans.emplace_back(eval_state_[k]);
  }
  if (ctx.W > 1) ctx.coll.broadcast<float>(spans, 0, comm::Charge::kNone);
  return eval_state_[0];
}

double lr_scale(const std::string& rule, int W) {
  if (rule == "linear") return W;
  if (rule == "sqrt") return std::sqrt(static_cast<double>(W));
  return 1.0;
}

// Gradient accumulation (sync_sgd, adasum): k micro-batches of cfg.batch_size per
// local worker; on return worker j's g is the mean of its k gradients and its loss the
// mean of its k losses. acc (n floats per local worker) and loss_sum (one per local
// worker) are preallocated by the caller; k = 1 is compute_gradients() and touches neither.
void accumulate_gradients(StepContext& ctx, int k, std::span<std::vector<float>> acc,
                          std::span<double> loss_sum) {
  if (k <= 1) {
    compute_gradients(ctx);
    return;
  }
  for (int s = 0; s < k; ++s) {
    compute_gradients(ctx, 0, /*clip=*/false);
    for (size_t j = 0; j < ctx.workers.size(); ++j) {
      const auto& g = ctx.workers[j].g;
      float* a = acc[j].data();
      if (s == 0) {
        std::copy(g.begin(), g.end(), a);
        loss_sum[j] = ctx.workers[j].loss;
      } else {
        for (size_t i = 0; i < g.size(); ++i) a[i] += g[i];
        loss_sum[j] += ctx.workers[j].loss;
      }
    }
  }
  const float fk = static_cast<float>(k);
  for (size_t j = 0; j < ctx.workers.size(); ++j) {
    auto& wk = ctx.workers[j];
    const float* a = acc[j].data();
    for (size_t i = 0; i < wk.g.size(); ++i) wk.g[i] = a[i] / fk;
    wk.clip(wk.g);
    wk.loss = loss_sum[j] / k;
  }
}

std::vector<comm::Segment> segments(const models::Model& m, const std::string& granularity) {
  const auto& t = m.tensors();
  std::vector<comm::Segment> out;
  if (granularity == "model") {
    out.push_back({0, m.num_params()});
  } else if (granularity == "layer") {
    // A layer = consecutive tensors sharing the name prefix before the last '.'
    // ("conv1.weight" + "conv1.bias"), as Horovod applies Adasum per layer.
    auto prefix = [](const std::string& n) { return n.substr(0, n.rfind('.')); };
    for (size_t i = 0; i < t.size(); ++i) {
      if (!out.empty() && i > 0 && prefix(t[i].name) == prefix(t[i - 1].name))
        out.back().size += t[i].size;
      else
        out.push_back({t[i].offset, t[i].size});
    }
  } else {
    for (auto& ti : t) out.push_back({ti.offset, ti.size});
  }
  return out;
}

double max_abs(std::span<const float> x) {
  // Every step of sync SGD and Adasum runs this over the whole gradient. As
  // std::max(double, double) over the elements it was a serial chain of compares (a max
  // reduction is not reassociated without -ffast-math): 26-28% of a sparse-MLP step
  // (255,647 floats) under perf. Kept as 16 independent lanes, a > m ? a : m (a NaN never
  // enters, as with std::max(m, NaN)), it is the same maximum: max is exact and order-free.
  constexpr size_t kLanes = 16;
  float lane[kLanes] = {};
  const float* p = x.data();
  const size_t n = x.size();
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (size_t j = 0; j < kLanes; ++j) {
      const float a = std::fabs(p[i + j]);
      lane[j] = a > lane[j] ? a : lane[j];
    }
  float m = 0;
  for (; i < n; ++i) {
    const float a = std::fabs(p[i]);
    m = a > m ? a : m;
  }
  for (float v : lane) m = v > m ? v : m;
  return m;
}

const train::DataPartition& run_partition(const StepContext& ctx, train::DataPartition& own) {
  if (ctx.partition) return *ctx.partition;
  const uint64_t seed = static_cast<uint64_t>(ctx.cfg.seed);
  own = train::block_partition(train::Sampler::global_permutation(ctx.train.size(), seed), ctx.W,
                               seed);
  return own;
}

}  // namespace wb::algo
