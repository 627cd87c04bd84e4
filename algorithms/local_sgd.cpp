// local_sgd: local SGD / model averaging (Zinkevich et al. 2010, Lin et al. 2020, "Don't
// use large mini-batches, use local SGD"; the L-SGD of Chatterjee et al., arXiv:2203.06638
// section 1). Every worker runs H optimizer steps on its own batches without
// communicating, then the W models are averaged:
//     w_k <- w_k - lr * opt(g_k)        (every step, worker-local optimizer state)
//     every H steps: w_k <- (1/W) sum_j w_j  (ctx.coll.allreduce kAverage of PARAMETERS)
// Only parameters are averaged; momentum buffers and other optimizer state stay local,
// as in Lin et al.'s code (and the LPP paper's PL-SGD, derived from it). With H = 1 and
// plain SGD this is sync_sgd with combine = average: (1/W) sum (w - lr g_k) = w - lr avg(g)
// up to float rounding (tests/unit/test_local_sgd.cpp).
//
// The averaging rule is SyncFrequency (algorithms/async_common.h): local_sgd is the
// special case switch_at = 0 (period H from the start); post_local_sgd.cpp adds the switch.
// The last step always averages, so a run ends on one common model.
//
// Simulated time: a step costs the slowest worker's compute (compute_gradients), a round
// one collective over W workers of n floats (sim/clock.h). A step between rounds also
// charges the slowest worker: workers meet at the next round, so the round waits for the
// slowest sum over its H steps -- charging per step the max of per-step times is an upper
// bound of max-of-sums that is exact without jitter.
#include "algorithms/local_sgd.h"

namespace wb::algo {

void LocalSgd::setup(StepContext& ctx) {
  if (ctx.observer)
    throw UserError("", "local/post-local SGD does not support metrics (diagnostics need the "
                        "synchronous gradient combination): remove \"metrics\"");
  freq_ = SyncFrequency(ctx.run.total_steps, c_.switch_at, c_.H);
  wspans_ = param_spans(ctx);
  sspans_.clear();
  if (c_.average_state && !ctx.workers.empty() && !ctx.workers[0].state.empty())
    for (auto& w : ctx.workers) sspans_.emplace_back(w.state);
  s_pre_ = 0;
  rounds_at_.clear();
}

void LocalSgd::step(StepContext& ctx) {
  compute_gradients(ctx);
  for (auto& w : ctx.workers) w.opt->step(w.w, w.g, ctx.lr);
  ctx.update_max_abs = max_abs(ctx.workers[0].g);
  const int64_t s_cur = ctx.step + 1;  // minibatches processed by every worker
  if (freq_.due(s_cur, s_pre_)) {
    ctx.coll.allreduce<float>(wspans_, comm::ReduceOp::kAverage);  // charges the clock
    // BatchNorm running statistics with the parameters (bn_stats averaged): a second,
    // small allreduce, as the buffers are a module's other tensors.
    if (!sspans_.empty()) ctx.coll.allreduce<float>(sspans_, comm::ReduceOp::kAverage);
    s_pre_ = s_cur;
    rounds_at_.push_back(static_cast<double>(s_cur));
  }
}

std::span<const float> LocalSgd::eval_params(StepContext& ctx) {
  eval_.resize(ctx.workers.size());
  std::vector<std::span<float>> spans;
  for (size_t k = 0; k < ctx.workers.size(); ++k) {
    eval_[k] = ctx.workers[k].w;
    spans.emplace_back(eval_[k]);
  }
  if (ctx.W > 1) ctx.coll.allreduce<float>(spans, comm::ReduceOp::kAverage, comm::Charge::kNone);
  return eval_[0];
}

std::span<const float> LocalSgd::eval_state(StepContext& ctx) {
  if (!c_.average_state || ctx.workers.empty() || ctx.workers[0].state.empty())
    return Algorithm::eval_state(ctx);
  eval_state_.resize(ctx.workers.size());
  std::vector<std::span<float>> spans;
  for (size_t k = 0; k < ctx.workers.size(); ++k) {
    eval_state_[k] = ctx.workers[k].state;
    spans.emplace_back(eval_state_[k]);
  }
  if (ctx.W > 1) ctx.coll.allreduce<float>(spans, comm::ReduceOp::kAverage, comm::Charge::kNone);
  return eval_state_[0];
}

void LocalSgd::append_series(StepContext&, std::vector<core::Series>& out) {
  // The steps after which the models were averaged (s_cur = 1-based step): the switch
  // point is visible in the HDF5 file.
  core::Series s;
  s.path = "workers/averaged_after_step";
  s.rows = rounds_at_.size();
  s.data = rounds_at_;
  out.push_back(std::move(s));
}

struct LocalSgdParams {
  int64_t H = 8;
  std::string bn_stats = "local";
  static void describe(core::ParamSet<LocalSgdParams>& p) {
    p.field("H", &LocalSgdParams::H, "local steps between model averages").min(1);
    p.field("bn_stats", &LocalSgdParams::bn_stats,
            "BatchNorm running statistics: averaged with the parameters at every round, or "
            "kept local to each worker")
        .one_of({"local", "averaged"});
  }
};

class LocalSgdAlgo final : public LocalSgd {
 public:
  explicit LocalSgdAlgo(const LocalSgdParams& p)
      : LocalSgd(LocalConfig{p.H, 0.0, p.bn_stats == "averaged"}) {}
};

}  // namespace wb::algo

WB_REGISTER_ALGORITHM("local_sgd", wb::algo::LocalSgdAlgo, wb::algo::LocalSgdParams,
                      "local SGD: H local optimizer steps, then average the models "
                      "(parameters only; optimizer state stays local)");
