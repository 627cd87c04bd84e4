// Orthogonality of the workers' gradients (Maleki et al., "Scaling Distributed Training
// with Adaptive Summation", MLSys 2021, section 5.1.3): per tensor
// ||Adasum(g_1..g_W)||^2 / sum_i ||g_i||^2, and their mean; 1 = orthogonal, 1/W = parallel.
// Uses comm::Collectives::adasum, the operator the Adasum algorithm uses.
#include <cmath>

#include "app/metrics/diagnostics.h"
#include "app/metrics/metric.h"

namespace wb::app {

class Orthogonality final : public Metric {
 public:
  Orthogonality(const EveryParams&, const models::Model&, int) {}
  static MetricSchema schema() {
    return {"orthogonality", "tensor_names", per_tensor_columns("mean"), /*gradient_copy=*/true};
  }
  std::vector<double> measure(algo::StepContext& ctx, GradientCopies& copies) override {
    const std::vector<double> own = worker_norms_per_tensor(ctx);
    const std::vector<double> as = combined_norms_per_tensor(ctx, copies, /*adasum=*/true);
    const size_t T = own.size() - 1;
    std::vector<double> row;
    double mean = 0;
    for (size_t t = 0; t < T; ++t) {
      const double v = own[t] > 0 ? as[t] / own[t] : NAN;
      row.push_back(v);
      mean += v / static_cast<double>(T);
    }
    row.push_back(mean);
    return row;
  }
};

}  // namespace wb::app

WB_REGISTER_METRIC("orthogonality", wb::app::Orthogonality, wb::app::EveryParams,
                   "||Adasum(g)||^2 / sum ||g_i||^2 per tensor (1 orthogonal, 1/W parallel)");
