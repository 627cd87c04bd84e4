// Diagnostics (DESIGN.md section 8): the run's metrics (app/metrics/metric.h), measured from
// the workers' fresh gradients at a step, for any algorithm that exposes them
// (Algorithm::observes_gradients(): it shows them to the observer through
// compute_gradients(), before it combines anything), written to /runs/<id>/metrics/.
// The metrics themselves are plugins, one file each (app/metrics/metric_*.cpp):
//  orthogonality  per tensor ||Adasum(g_1..g_W)||^2 / sum_i ||g_i||^2, and their mean
//  diversity      per tensor and total sum_i ||g_i||^2 / ||sum_i g_i||^2
//  seq_emulation  errors against the exact-Hessian sequential emulation (metrics/seq_error)
// Each metric has its own step index dataset (metrics/<series>_step): the 0-based global
// step whose gradients were measured (the model after that many updates).
#pragma once

#include <memory>
#include <vector>

#include "algorithms/algorithm.h"
#include "app/metrics/metric.h"
#include "app/results/run_result.h"
#include "app/experiment/spec.h"

namespace wb::app {

class Diagnostics final : public algo::GradientObserver {
 public:
  Diagnostics(const train::MetricsParams& p, const models::Model& m, int workers);
  void on_gradients(algo::StepContext& ctx) override;
  // Append the recorded series (metrics/...) to a run result, in registration order.
  void append_series(std::vector<core::Series>& out) const;

 private:
  struct Active {
    const MetricEntry* entry;
    int64_t every;
    std::unique_ptr<Metric> metric;
    std::vector<std::string> columns;
    std::vector<double> steps, rows;
  };
  int64_t last_step_ = -1;
  GradientCopies copies_;
  std::vector<Active> active_;
};

// The metrics a run asks for are ones its algorithm can feed and their own rules across the
// run hold (e.g. seq_emulation.workers <= workers); otherwise UserError naming
// `w`.metrics.<metric> (w: the run's JSON path, with its run id). Called by the planner for
// every run of a sweep before any of them trains.
void check_metrics_supported(const train::RunConfig& c, const algo::Algorithm& algo,
                             const core::Where& w);

// Doubles the enabled metrics record over `steps` global steps, for the output-size
// estimate (one row of columns + its step index per measured step), and floats they keep
// per local worker, for the memory estimate.
double metric_series_doubles(const train::MetricsParams& p, const models::Model& m, double steps);
double metric_floats_per_worker(const train::MetricsParams& p, const models::Model& m);

// Helpers of the gradient metrics (orthogonality, diversity): per tensor and total
// (last entry) sum_i ||g_i||^2 over ALL workers, added in worker order on every rank;
// and the per tensor and total ||combined||^2 of the copies after combining them with
// Adasum (adasum = true) or a sum.
std::vector<double> worker_norms_per_tensor(algo::StepContext& ctx);
std::vector<double> combined_norms_per_tensor(algo::StepContext& ctx, GradientCopies& copies,
                                              bool adasum);

}  // namespace wb::app
