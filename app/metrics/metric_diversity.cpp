// Gradient diversity (Yin et al., "Gradient Diversity: a Key Ingredient for Scalable
// Distributed Learning", AISTATS 2018, Definition 1): per tensor and in total
// sum_i ||g_i||^2 / ||sum_i g_i||^2 over the W workers' gradients of a step.
#include "app/metrics/diagnostics.h"
#include "app/metrics/metric.h"

namespace wb::app {

class Diversity final : public Metric {
 public:
  Diversity(const EveryParams&, const models::Model&, int) {}
  static MetricSchema schema() {
    return {"diversity", "tensor_names", per_tensor_columns("total"), /*gradient_copy=*/true};
  }
  std::vector<double> measure(algo::StepContext& ctx, GradientCopies& copies) override {
    const std::vector<double> own = worker_norms_per_tensor(ctx);
    const std::vector<double> sum = combined_norms_per_tensor(ctx, copies, /*adasum=*/false);
    std::vector<double> row;
    for (size_t t = 0; t < own.size(); ++t) row.push_back(sum[t] > 0 ? own[t] / sum[t] : NAN);
    return row;
  }
};

}  // namespace wb::app

WB_REGISTER_METRIC("diversity", wb::app::Diversity, wb::app::EveryParams,
                   "gradient diversity sum ||g_i||^2 / ||sum g_i||^2 per tensor (Yin et al.)");
