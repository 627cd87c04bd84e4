// docs/extending.md "An outer optimizer: Lookahead": this file IS the manual's example
// (tests/examples/check_readme.sh keeps them identical); example_tests compiles, registers
// and trains it.
#include <algorithm>

#include "algorithms/algorithm.h"

namespace wb::algo {

struct MyLookaheadParams {
  int64_t k = 5;
  double alpha = 0.5;
  static void describe(core::ParamSet<MyLookaheadParams>& p) {
    p.field("k", &MyLookaheadParams::k, "inner (fast) steps between slow-weight updates").min(1);
    p.field("alpha", &MyLookaheadParams::alpha, "slow-weight step size (arXiv:1907.08610, Alg. 1)")
        .min(0)
        .max(1);
  }
};

// Lookahead (Zhang et al., arXiv:1907.08610, Algorithm 1): the run's optimizer moves the fast
// weights theta for k steps, then the slow weights follow, phi <- phi + alpha (theta - phi),
// and the fast weights restart from phi. An outer optimizer on the outer gradient phi - theta:
// with W workers theta is their average (one allreduce), which is DiLoCo with outer SGD at
// lr alpha; with one worker it is Lookahead itself.
class MyLookahead final : public Algorithm {
 public:
  explicit MyLookahead(const MyLookaheadParams& p) : p_(p) {}
  void setup(StepContext& ctx) override {
    slow_.assign(ctx.workers[0].w.begin(), ctx.workers[0].w.end());  // phi_0 = theta_0
  }
  void step(StepContext& ctx) override {
    compute_gradients(ctx);
    for (auto& w : ctx.workers) w.opt->step(w.w, w.g, ctx.lr);  // the inner (fast) step
    ctx.update_max_abs = max_abs(ctx.workers[0].g);
    const int64_t s = ctx.step + 1;  // steps done; the last one always ends on phi
    if (s % p_.k != 0 && s < ctx.run.total_steps) return;
    // The fast weights of all W workers, averaged (W = 1: unchanged); charges the clock.
    ctx.coll.allreduce<float>(param_spans(ctx), comm::ReduceOp::kAverage);
    const auto& fast = ctx.workers[0].w;
    for (size_t i = 0; i < slow_.size(); ++i) {
      const double phi = slow_[i];
      slow_[i] = static_cast<float>(phi - p_.alpha * (phi - static_cast<double>(fast[i])));
    }
    for (auto& w : ctx.workers) std::copy(slow_.begin(), slow_.end(), w.w.begin());
  }
  // Evaluate the slow weights, as the paper reports them.
  std::span<const float> eval_params(StepContext&) override { return slow_; }

 private:
  MyLookaheadParams p_;
  std::vector<float> slow_;  // phi, identical on every rank
};

}  // namespace wb::algo

WB_REGISTER_ALGORITHM("my_lookahead", wb::algo::MyLookahead, wb::algo::MyLookaheadParams,
                      "Lookahead: k fast steps, then slow weights += alpha (fast - slow) "
                      "(docs/extending.md example)");
