// docs/extending.md "How to add a metric": this file IS the manual's example (tests/examples/
// check_readme.sh keeps them identical); example_tests compiles, registers and runs it.
#include <cmath>

#include "app/metrics/metric.h"

namespace wb::app {

struct MyMetricParams {
  int64_t every = 0;  // every metric has one: log every N steps, 0 = off
  static void describe(core::ParamSet<MyMetricParams>& p) {
    p.field("every", &MyMetricParams::every, "log every N steps; 0 = off")
        .min(0)
        .max(train::kMaxSteps);
  }
};

// The mean and the largest squared gradient norm over the W workers of a step, taken from
// the fresh gradients (worker.g at worker.w) before the algorithm combines them.
class MyMetric final : public Metric {
 public:
  MyMetric(const MyMetricParams&, const models::Model&, int /*W*/) {}
  // The schema: metrics/my_metric, one row of these two columns per measured step.
  static MetricSchema schema() { return {"my_metric", "columns", fixed_columns({"mean", "max"})}; }
  std::vector<double> measure(algo::StepContext& ctx, GradientCopies&) override {
    std::vector<double> local, all(static_cast<size_t>(ctx.W));
    for (const auto& w : ctx.workers) {
      double s = 0;
      for (float x : w.g) s += static_cast<double>(x) * x;
      local.push_back(s);
    }
    // Over ALL W logical workers, in worker order: the same row on every rank.
    ctx.coll.allgather_worker_values(local, all);
    double sum = 0, max = 0;
    for (double s : all) {
      sum += s;
      max = std::max(max, s);
    }
    return {sum / ctx.W, max};
  }
};

}  // namespace wb::app

WB_REGISTER_METRIC("my_metric", wb::app::MyMetric, wb::app::MyMetricParams,
                   "mean and max squared gradient norm over the workers");
