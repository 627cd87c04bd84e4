// diloco: Distributed Low-Communication training (Douillard et al., arXiv:2311.08105,
// Algorithm 1). Every worker runs H = sync_every inner optimizer steps on its own batches
// (the run's `optimizer`: the paper uses AdamW, section 3), then the replicas meet:
//     Delta  = theta_outer - (1/W) sum_k theta_k       (the outer gradient, Algorithm 1 line 12)
//     theta_outer <- OuterOpt(theta_outer, Delta)       (line 14: Nesterov, lr 0.7, momentum 0.9)
//     theta_k <- theta_outer for every worker           (line 4: the next round starts from it)
// The average of the W replicas is one ctx.coll.allreduce of the parameters, which is what the
// pseudo-gradient average costs on the wire (the same n floats; priced by the clock and
// identical at any rank count). Inner optimizer state (AdamW moments) stays with its worker
// across rounds, as the paper keeps it (section 3: "each worker maintains its own inner
// optimizer state"); only the outer optimizer's state is global.
//
// The outer step is computed in double from the float parameters: Delta = theta_outer - mean is
// exact for floats of similar magnitude, so outer SGD with lr 1 gives back the mean itself:
// DiLoCo with `outer: sgd, outer_lr: 1` is FedAvg / local SGD with period H (tests/unit/
// test_diloco.cpp checks it bit for bit against local_sgd). Outer Nesterov is PyTorch's
// torch.optim.SGD(nesterov=True), the update the paper's code uses:
//     b <- mu b + Delta;  theta_outer <- theta_outer - lr (Delta + mu b)
// Outer Adam (the paper's ablation, Table 4 / Figure 7) is Adam with beta1 = outer_momentum,
// beta2 = 0.999, eps 1e-8, bias-corrected.
//
// The last step always synchronizes, so a run ends on theta_outer. Evaluation uses
// theta_outer (the model DiLoCo reports: the replicas between rounds are not a model anyone
// evaluates). Simulated time: as local_sgd, a local step costs the slowest worker's compute,
// a round one collective of n floats over the W workers.
#include <cmath>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/async_common.h"
#include "algorithms/diloco_common.h"

namespace wb::algo {

struct DilocoParams {
  int64_t sync_every = 500;
  std::string outer = "nesterov";
  double outer_lr = 0.7;
  double outer_momentum = 0.9;
  static void describe(core::ParamSet<DilocoParams>& p) {
    p.field("sync_every", &DilocoParams::sync_every,
            "H: inner steps between outer steps (arXiv:2311.08105 uses 500)")
        .min(1);
    p.field("outer", &DilocoParams::outer,
            "outer optimizer on the averaged pseudo-gradient (sgd with outer_lr 1 = local SGD)")
        .one_of({"sgd", "nesterov", "adam"});
    p.field("outer_lr", &DilocoParams::outer_lr, "outer learning rate (the paper's 0.7)").min(0).max(100);
    p.field("outer_momentum", &DilocoParams::outer_momentum,
            "outer momentum (Nesterov mu; Adam beta1); the paper's 0.9")
        .min(0)
        .max(1, false);
  }
};

class Diloco final : public Algorithm {
 public:
  explicit Diloco(const DilocoParams& p) : p_(p) {}

  void setup(StepContext& ctx) override {
    freq_ = SyncFrequency(ctx.run.total_steps, 0.0, p_.sync_every);
    wspans_ = param_spans(ctx);
    s_pre_ = 0;
    rounds_ = 0;
    outer_step_ = 0;
    const auto& w0 = ctx.workers[0].w;  // every worker starts from the same model
    theta_.assign(w0.begin(), w0.end());
    outer_.init(p_.outer, p_.outer_lr, p_.outer_momentum, theta_.size());
    rounds_at_.clear();
  }

  void step(StepContext& ctx) override {
    compute_gradients(ctx);
    for (auto& w : ctx.workers) w.opt->step(w.w, w.g, ctx.lr);
    ctx.update_max_abs = max_abs(ctx.workers[0].g);
    const int64_t s_cur = ctx.step + 1;
    if (!freq_.due(s_cur, s_pre_)) return;
    // every worker's replica becomes the mean of the W replicas (one priced allreduce)
    ctx.coll.allreduce<float>(wspans_, comm::ReduceOp::kAverage);
    outer_update(ctx.workers[0].w);
    for (auto& w : ctx.workers) std::copy(theta_.begin(), theta_.end(), w.w.begin());
    s_pre_ = s_cur;
    ++rounds_;
    rounds_at_.push_back(static_cast<double>(s_cur));
  }

  std::span<const float> eval_params(StepContext&) override { return theta_; }

  void append_series(StepContext&, std::vector<core::Series>& out) override {
    core::Series s;
    s.path = "workers/outer_step_after_step";
    s.rows = rounds_at_.size();
    s.data = rounds_at_;
    out.push_back(std::move(s));
  }

  Footprint footprint(const train::RunConfig&, const FootprintInputs& in) const override {
    Footprint f;
    const double n = static_cast<double>(in.n);
    // theta_outer (float) + the outer optimizer's state (double): momentum, Adam's second moment
    f.shared = 4.0 * n + 8.0 * n * ((p_.outer == "sgd" ? 0 : 1) + (p_.outer == "adam" ? 1 : 0));
    return f;
  }

 private:
  // theta_outer <- OuterOpt(theta_outer, theta_outer - mean); mean: the averaged replica.
  void outer_update(std::span<const float> mean) {
    ++outer_step_;
    outer_.step(theta_, 0, theta_.size(), outer_step_,
                [&](size_t i) { return static_cast<double>(theta_[i]) - static_cast<double>(mean[i]); });
  }

  DilocoParams p_;
  SyncFrequency freq_;
  int64_t s_pre_ = 0, rounds_ = 0, outer_step_ = 0;
  std::vector<std::span<float>> wspans_;
  std::vector<float> theta_;          // theta_outer, identical on every rank
  OuterOptimizer outer_;              // outer optimizer state (momentum / Adam moments)
  std::vector<double> rounds_at_;     // s_cur of every outer step (workers/... in the HDF5 file)
};

}  // namespace wb::algo

WB_REGISTER_ALGORITHM("diloco", wb::algo::Diloco, wb::algo::DilocoParams,
                      "DiLoCo (arXiv:2311.08105): sync_every inner steps of the run's optimizer per "
                      "worker, then an outer step (Nesterov by default) on the averaged pseudo-gradient");
