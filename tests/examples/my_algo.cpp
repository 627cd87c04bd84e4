// docs/extending.md "How to add an algorithm": this file IS the manual's example (tests/examples/
// check_readme.sh keeps them identical); example_tests compiles, registers and runs it.
#include "algorithms/algorithm.h"

namespace wb::algo {

struct MyAlgoParams {
  double beta = 1.0;
  static void describe(core::ParamSet<MyAlgoParams>& p) {
    p.field("beta", &MyAlgoParams::beta, "scale of the averaged gradient step (paper, Eq. n)")
        .min(0)
        .max(10);
  }
};

// Synchronous data-parallel SGD with a scaled step: every worker computes a gradient on its
// own batch, the W gradients are averaged, every replica applies the same step.
class MyAlgo final : public Algorithm {
 public:
  explicit MyAlgo(const MyAlgoParams& p) : p_(p) {}
  void step(StepContext& ctx) override {
    compute_gradients(ctx);  // every local worker, one batch; charges the compute time
    // Over ALL W logical workers, whatever the rank layout; charges the communication time.
    ctx.coll.allreduce<float>(grad_spans(ctx), comm::ReduceOp::kAverage);
    for (auto& w : ctx.workers) w.opt->step(w.w, w.g, p_.beta * ctx.lr);
    ctx.update_max_abs = max_abs(ctx.workers[0].g);  // drives the `converge` rule
  }

 private:
  MyAlgoParams p_;
};

}  // namespace wb::algo

WB_REGISTER_ALGORITHM("my_algo", wb::algo::MyAlgo, wb::algo::MyAlgoParams,
                      "averaged gradients, step scaled by beta (docs/extending.md example)");
