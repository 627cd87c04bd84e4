// lpp_sgd: LAP-SGD plus partial backpropagation (Chatterjee et al., arXiv:2203.06638,
// Algorithm 1; the engine is AsyncLocalSgd in async_engine.cpp, whose header comment describes
// the updaters, the averaging process and the two modes).
//
// Blocks (section 3, "Block partitions", Eq. 10): x_0 is the whole model; x_1..x_B are runs
// of consecutive tensors that partition it, balanced by parameter count
// (partition_blocks, algorithms/async_common.h), B = min(U, number of tensors) so that no
// block is empty -- with more updaters than tensors rank 0 says so on stderr and updater u
// takes block u mod B. (The paper chooses the cut points to minimize the cost of the
// concurrent partial backprops [Kungurtsev et al. 2021]; balancing parameters is this
// workbench's simpler, model-agnostic rule.)
// Block Selection Rule: the full model while s <= T_st (s read at line 2; T_st =
// full_fraction x T, the paper's "s <= T/10"; Table 13 uses E_st = 50 of 300 epochs), then
// every updater alternates full-model steps and steps on its own block x_{rank(u)}, full
// first. A block step computes the gradient of the block's tensors only: backprop from the
// output stops at the block's first tensor (Model::loss_grad_from), which is the saving
// ("F (c-1)/2 flops in c concurrent partial steps", section 3) and is charged on the
// simulated clock through Model::flops_per_sample_from. Only the block is written (line 6);
// the other tensors' optimizer state is untouched.
#include "algorithms/async_engine.h"

namespace wb::algo {

struct LppSgdParams {
  int64_t updaters = 4;
  int64_t H = 16;
  double switch_at = 0.5;
  std::string mode = "simulated";
  double full_fraction = 0.1;
  static void describe(core::ParamSet<LppSgdParams>& p) {
    describe_async_params(p);
    p.field("full_fraction", &LppSgdParams::full_fraction,
            "T_st / T: full-model steps only while s <= T_st (paper: T/10)")
        .min(0)
        .max(1);
  }
};

class LppSgd final : public AsyncLocalSgd {
 public:
  explicit LppSgd(const LppSgdParams& p)
      : AsyncLocalSgd(AsyncConfig{p.updaters, p.H, p.switch_at, p.mode, true, p.full_fraction,
                                  "lpp_sgd"}) {}
};

}  // namespace wb::algo

WB_REGISTER_ALGORITHM("lpp_sgd", wb::algo::LppSgd, wb::algo::LppSgdParams,
                      "LPP-SGD: LAP-SGD with partial backpropagation on balanced tensor blocks "
                      "after T_st (alternating full / own-block updates)");
