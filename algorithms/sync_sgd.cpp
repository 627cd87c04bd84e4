// sync_sgd: the synchronous data-parallel baseline (Horovod allreduce / PyTorch DDP).
// Every worker computes a gradient on its own batch, the gradients are allreduced
// (sum or average over all W workers), and every worker applies the same optimizer
// step, so the replicas stay identical. Any optimizer works (allreduce BEFORE the
// optimizer step: "Adam with averaging"), since every worker feeds the same combined
// gradient to an identical optimizer state.
//
// LR scaling rule (Goyal et al. 2017, "linear scaling"; sqrt as in Krizhevsky 2014):
// lr_eff = lr x {1, W, sqrt(W)}. With combine=sum the effective step already grows with
// W (sum = W x average), which is the "Sum" baseline of the Adasum paper's LeNet study
// (Maleki et al., arXiv:2006.02924 5.4).
//
// local_steps = k (backward passes per step, Horovod's backward_passes_per_step):
// gradient accumulation with PyTorch semantics. Each worker runs k micro-batches of
// batch_size samples, averages their gradients (and losses), and only then the allreduce
// and one optimizer step happen. For a loss that is a mean over the batch this equals one
// step on the k x batch_size concatenated batch (tests/unit/test_adasum_delta.cpp). A step
// consumes W x k x batch_size samples, so an epoch budget has k times fewer steps.
// k = 1 takes the plain path (no copy), bit-identical to the foundation's sync_sgd.
#include <algorithm>
#include <cmath>

#include "algorithms/algorithm.h"

namespace wb::algo {

struct SyncSgdParams {
  std::string combine = "average";
  std::string lr_scaling = "none";
  int64_t local_steps = 1;
  static void describe(core::ParamSet<SyncSgdParams>& p) {
    p.field("combine", &SyncSgdParams::combine, "allreduce op over the W gradients")
        .one_of({"sum", "average"});
    p.field("lr_scaling", &SyncSgdParams::lr_scaling, "LR x 1, x W or x sqrt(W)")
        .one_of({"none", "linear", "sqrt"});
    p.field("local_steps", &SyncSgdParams::local_steps,
            "micro-batches of batch_size per step whose gradients are averaged before the "
            "allreduce (gradient accumulation)")
        .min(1);
  }
};

class SyncSgd final : public Algorithm {
 public:
  // Every step shows its workers' fresh gradients, at the common model, to the metrics.
  bool observes_gradients() const override { return true; }
  explicit SyncSgd(const SyncSgdParams& p) : p_(p) {}
  int64_t micro_batches_per_step() const override { return p_.local_steps; }
  void setup(StepContext& ctx) override {
    gspans_ = grad_spans(ctx);
    if (p_.local_steps > 1) {
      acc_.assign(ctx.workers.size(), std::vector<float>(ctx.model.num_params()));
      loss_sum_.assign(ctx.workers.size(), 0.0);
    }
  }
  void step(StepContext& ctx) override {
    accumulate_gradients(ctx, static_cast<int>(p_.local_steps), acc_, loss_sum_);
    ctx.coll.allreduce<float>(gspans_, p_.combine == "sum" ? comm::ReduceOp::kSum
                                                           : comm::ReduceOp::kAverage);
    const double lr = ctx.lr * lr_scale(p_.lr_scaling, ctx.W);
    ctx.lr_applied = lr;  // curves/lr: the rate the step applies
    for (auto& w : ctx.workers) w.opt->step(w.w, w.g, lr);
    ctx.update_max_abs = max_abs(ctx.workers[0].g);
  }

 private:
  SyncSgdParams p_;
  std::vector<std::span<float>> gspans_;
  std::vector<std::vector<float>> acc_;
  std::vector<double> loss_sum_;
};

}  // namespace wb::algo

WB_REGISTER_ALGORITHM("sync_sgd", wb::algo::SyncSgd, wb::algo::SyncSgdParams,
                      "synchronous SGD: allreduce (sum|average) of gradients, then the optimizer step");
