// adasum: combine the W workers' gradients or optimizer deltas with the Adasum operator
// (Maleki et al., MLSys 2021 Eq. 8, applied per layer as in section 3.3):
//   AS(a, b) = (1 - a.b / 2|a|^2) a + (1 - a.b / 2|b|^2) b, recursively over a binary
//   tree of workers (comm/collectives.h). Orthogonal vectors add up (sum), parallel ones
//   average: the effective step adapts without an LR scaling rule.
//
// apply = "gradient": the combined gradient goes through every worker's optimizer (the
//   allreduce-then-step use, hvd.allreduce(op=hvd.Adasum)). Every worker's optimizer sees
//   the same input, so states and models stay identical.
// apply = "delta": Horovod's DistributedOptimizer(op=hvd.Adasum) (Maleki et al., arXiv:2006.02924
//   4.1, Figure 3; adasum-horovod-guide.txt "The Distributed Optimizer for AdaSum"):
//     start_k = w_k                               (save the start model)
//     w_k <- optimizer_k.step(w_k, g_k, lr)       (local step on the LOCAL gradient)
//     delta_k = w_k - start_k
//     w_k <- start_k + AS(delta_0, ..., delta_{W-1})
//   Optimizer state (momentum, Adam moments, step counts) stays local to each worker and
//   only ever sees its own gradients -- "the logic of optimizers should only apply to the
//   smaller minibatches per node" (4.1). The models stay identical (same start, same
//   combined delta). Appendix A.5: for Adam/LAMB/LARS delta_l ~ C_l g_l per layer, so
//   Adasum on deltas behaves like Adasum on gradients scaled per layer. With W = 1 there
//   is nothing to combine and the locally updated model is kept as is: start + (w - start)
//   can differ from w by an ulp in float, and a single worker must equal the plain
//   optimizer bit for bit.
//
// local_steps = k backward passes per step (Horovod's backward_passes_per_step), two
// semantics, selected by local_steps_mode:
//   "accumulate"      (PyTorch: hvd.DistributedOptimizer(backward_passes_per_step=k) in
//                     torch accumulates .grad over k backward() calls): k micro-batch
//                     gradients of batch_size each are averaged, then ONE local optimizer
//                     step (delta) or the combination (gradient). Equals one step on the
//                     concatenated k x batch_size batch for a mean-over-batch loss.
//   "optimizer_steps" (TensorFlow: the Adasum delta of k local optimizer steps, one per
//                     micro-batch, as a local-SGD block): only with apply = "delta".
// Either way a step consumes W x k x batch_size samples and one combination.
//
// update_max_abs (the toy's convergence rule): gradient mode, max |combined gradient|;
// delta mode, max |combined delta| / lr (the applied update in units of the lr; with
// optimizer_steps it spans k local steps), NaN when lr = 0 (nothing applied).
#include <algorithm>

#include "algorithms/algorithm.h"

namespace wb::algo {

// The delta combination, exposed for the unit test of its algebra: for every local
// worker k, delta_k = w_k - start_k (written into delta[k]), delta <- Adasum over all W
// workers (per segment), w_k = start_k + delta_k. delta[k] holds the combined delta after.
void apply_adasum_deltas(comm::Collectives& coll, std::span<const std::span<float>> w,
                         std::span<const std::vector<float>> start,
                         std::span<const std::span<float>> delta,
                         std::span<const comm::Segment> segs) {
  for (size_t k = 0; k < w.size(); ++k) {
    const float* s = start[k].data();
    float* d = delta[k].data();
    const float* x = w[k].data();
    for (size_t i = 0; i < w[k].size(); ++i) d[i] = x[i] - s[i];
  }
  coll.adasum<float>(delta, segs);
  for (size_t k = 0; k < w.size(); ++k) {
    const float* s = start[k].data();
    const float* d = delta[k].data();
    float* x = w[k].data();
    for (size_t i = 0; i < w[k].size(); ++i) x[i] = s[i] + d[i];
  }
}

struct AdasumParams {
  std::string granularity = "tensor";
  std::string apply = "gradient";
  std::string lr_scaling = "none";
  int64_t local_steps = 1;
  std::string local_steps_mode = "accumulate";
  static void describe(core::ParamSet<AdasumParams>& p) {
    p.field("granularity", &AdasumParams::granularity,
            "Adasum coefficients per tensor, per layer (weight+bias) or for the whole model")
        .one_of({"tensor", "layer", "model"});
    p.field("apply", &AdasumParams::apply,
            "what is combined: the gradients (then every worker steps), or each worker's "
            "optimizer delta w_after - w_start (Horovod DistributedOptimizer, local state)")
        .one_of({"gradient", "delta"});
    p.field("lr_scaling", &AdasumParams::lr_scaling, "LR x 1, x W or x sqrt(W)")
        .one_of({"none", "linear", "sqrt"});
    p.field("local_steps", &AdasumParams::local_steps,
            "backward passes (micro-batches of batch_size) per step")
        .min(1);
    p.field("local_steps_mode", &AdasumParams::local_steps_mode,
            "accumulate: average the k micro-batch gradients, one local step (PyTorch); "
            "optimizer_steps: k local optimizer steps, combine their delta (TensorFlow; "
            "apply = delta only)")
        .one_of({"accumulate", "optimizer_steps"});
    p.check([](const AdasumParams& s, const core::Where& w) {
      if (s.apply == "gradient" && s.local_steps > 1 && s.local_steps_mode == "optimizer_steps")
        w.key("local_steps_mode")
            .fail("optimizer_steps combines a delta of k local optimizer steps: it needs "
                  "apply = \"delta\" (with apply = \"gradient\" use accumulate)");
    });
  }
};

class Adasum final : public Algorithm {
 public:
  // Every step shows its workers' fresh gradients, at the common model, to the metrics.
  bool observes_gradients() const override { return true; }
  explicit Adasum(const AdasumParams& p)
      : p_(p), delta_(p.apply == "delta"), opt_steps_(p.local_steps_mode == "optimizer_steps") {}

  int64_t micro_batches_per_step() const override { return p_.local_steps; }

  // start_ (apply = delta) and acc_ (accumulated micro-batches): n floats each per worker.
  double state_floats_per_worker(const train::RunConfig&, size_t n, size_t) const override {
    return static_cast<double>(n) * ((delta_ ? 1 : 0) + (p_.local_steps > 1 && !opt_steps_ ? 1 : 0));
  }

  void setup(StepContext& ctx) override {
    segs_ = segments(ctx.model, p_.granularity);
    gspans_ = grad_spans(ctx);
    wspans_ = param_spans(ctx);
    const size_t L = ctx.workers.size(), n = ctx.model.num_params();
    if (p_.local_steps > 1) loss_sum_.assign(L, 0.0);
    if (p_.local_steps > 1 && !opt_steps_) acc_.assign(L, std::vector<float>(n));
    if (delta_) start_.assign(L, std::vector<float>(n));
  }

  void step(StepContext& ctx) override {
    const int k = static_cast<int>(p_.local_steps);
    const double lr = ctx.lr * lr_scale(p_.lr_scaling, ctx.W);
    ctx.lr_applied = lr;  // curves/lr: the rate the step applies
    if (!delta_) {
      accumulate_gradients(ctx, k, acc_, loss_sum_);
      ctx.coll.adasum<float>(gspans_, segs_);  // charges the clock
      for (auto& w : ctx.workers) w.opt->step(w.w, w.g, lr);
      ctx.update_max_abs = max_abs(ctx.workers[0].g);
      return;
    }

    for (size_t j = 0; j < ctx.workers.size(); ++j)
      std::copy(ctx.workers[j].w.begin(), ctx.workers[j].w.end(), start_[j].begin());
    if (!opt_steps_) {
      accumulate_gradients(ctx, k, acc_, loss_sum_);
      for (auto& w : ctx.workers) w.opt->step(w.w, w.g, lr);
    } else {
      for (int s = 0; s < k; ++s) {
        compute_gradients(ctx);
        for (size_t j = 0; j < ctx.workers.size(); ++j) {
          auto& w = ctx.workers[j];
          w.opt->step(w.w, w.g, lr);
          if (k > 1) loss_sum_[j] = s == 0 ? w.loss : loss_sum_[j] + w.loss;
        }
      }
      if (k > 1)
        for (size_t j = 0; j < ctx.workers.size(); ++j) ctx.workers[j].loss = loss_sum_[j] / k;
    }

    if (ctx.W == 1) {
      // Nothing to combine (see the header): keep w, report its delta.
      auto& w = ctx.workers[0];
      for (size_t i = 0; i < w.w.size(); ++i) w.g[i] = w.w[i] - start_[0][i];
    } else {
      apply_adasum_deltas(ctx.coll, wspans_, start_, gspans_, segs_);  // charges the clock
    }
    // The delta's element-wise passes (start <- w, delta <- w - start, and with W > 1
    // w <- start + delta), each worker's on its own device: on the sparse MLP [128] (1 MB of
    // parameters) they made a delta step 0.25-0.35 ms dearer than a gradient step, unpriced
    // (calibrate --validate on a 2-core Zen 3, before `elementwise` was priced).
    const double passes =
        ctx.clock.elementwise_s(static_cast<double>(ctx.workers[0].w.size()), ctx.W == 1 ? 2 : 3);
    if (passes > 0) ctx.clock.advance(passes);
    ctx.update_max_abs = lr > 0 ? max_abs(ctx.workers[0].g) / lr : NAN;
  }

 private:
  AdasumParams p_;
  bool delta_, opt_steps_;
  std::vector<comm::Segment> segs_;
  std::vector<std::span<float>> gspans_, wspans_;  // the delta is built in the g buffers
  std::vector<std::vector<float>> start_, acc_;
  std::vector<double> loss_sum_;
};

}  // namespace wb::algo

WB_REGISTER_ALGORITHM("adasum", wb::algo::Adasum, wb::algo::AdasumParams,
                      "Adasum combination (per tensor) of the workers' gradients (then the "
                      "optimizer step) or of their local optimizer deltas (apply = delta)");
