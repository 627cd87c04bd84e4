// lap_sgd: locally-asynchronous parallel SGD (Chatterjee et al., arXiv:2203.06638,
// Algorithm 1 with the full-model block x_0 only, section 3 "Block Selection Rule"): the
// asynchronous engine (async_engine.h/.cpp: U lock-free updaters per worker on a shared
// model, non-blocking in-place averaging, simulated and real mode) without partial
// backpropagation. lpp_sgd.cpp is the other configuration of the same engine.
#include "algorithms/async_engine.h"

namespace wb::algo {

struct LapSgdParams {
  int64_t updaters = 4;
  int64_t H = 16;
  double switch_at = 0.5;
  std::string mode = "simulated";
  static void describe(core::ParamSet<LapSgdParams>& p) {
    describe_async_params(p);
  }
};

class LapSgd final : public AsyncLocalSgd {
 public:
  explicit LapSgd(const LapSgdParams& p)
      : AsyncLocalSgd(AsyncConfig{p.updaters, p.H, p.switch_at, p.mode, false, 0.0, "lap_sgd"}) {}
};

}  // namespace wb::algo

WB_REGISTER_ALGORITHM("lap_sgd", wb::algo::LapSgd, wb::algo::LapSgdParams,
                      "LAP-SGD: U lock-free (Hogwild) updaters per worker on a shared model, "
                      "non-blocking in-place model averaging (post-local frequency)");
