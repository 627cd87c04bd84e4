// README "How to add an asynchronous algorithm": this file IS the README's example
// (tests/examples/check_readme.sh keeps them identical); example_tests runs it.
// An asynchronous algorithm is a configuration of the asynchronous engine
// (algorithms/async_engine.h): U Hogwild updaters per worker on a shared model, averaged by a
// non-blocking round every K applied updates, in simulated or real (threaded) mode.
#include "algorithms/async_engine.h"

namespace wb::algo {

struct MyAsyncParams {
  int64_t updaters = 2;
  int64_t H = 4;
  double switch_at = 0.0;
  std::string mode = "simulated";
  static void describe(rt::ParamSet<MyAsyncParams>& p) {
    describe_async_params(p);  // updaters, H, switch_at, mode: the engine's own parameters
  }
};

// LAP-SGD averaging every H updates from the start (no K = 1 phase): the engine with a fixed
// averaging period, full-model updates only (no partial backpropagation).
class MyAsync final : public AsyncLocalSgd {
 public:
  explicit MyAsync(const MyAsyncParams& p)
      : AsyncLocalSgd(AsyncConfig{p.updaters, p.H, p.switch_at, p.mode, /*partial=*/false,
                                  /*full_fraction=*/0.0, "my_async"}) {}
};

}  // namespace wb::algo

WB_REGISTER_ALGORITHM("my_async", wb::algo::MyAsync, wb::algo::MyAsyncParams,
                      "LAP-SGD with a fixed averaging period (README example)");
