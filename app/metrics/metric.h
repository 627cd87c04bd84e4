// Metrics (DESIGN.md section 8) are plugins, one file each, self-registered like the
// algorithms: a metric measures the workers' fresh gradients at a step (it observes
// compute_gradients(), before the algorithm combines anything) and records one row per
// measured step under /runs/<id>/metrics/. Its schema -- the series it writes and their
// columns -- is declared once, and feeds the HDF5 writer, the planner's output-size and
// memory estimates, and the refusal of a metric the run's algorithm cannot feed
// (Algorithm::observes_gradients()).
//
// How to add a metric (one file, nothing else to edit):
//
//   // app/metrics/metric_my_metric.cpp (or any file linked into the workbench)
//   #include "app/metrics/metric.h"
//   namespace wb::app {
//   struct MyMetricParams {
//     int64_t every = 0;  // every metric has `every`: log every N steps, 0 = off
//     static void describe(ParamSet<MyMetricParams>& p) {
//       p.field("every", &MyMetricParams::every, "log every N steps; 0 = off").min(0);
//     }
//   };
//   class MyMetric final : public Metric {
//    public:
//     MyMetric(const MyMetricParams&, const models::Model&, int /*W*/) {}
//     static MetricSchema schema() { return {"my_metric", "columns", fixed_columns({"x"})}; }
//     std::vector<double> measure(algo::StepContext& ctx, GradientCopies&) override {
//       return {...one value per column, the same on every rank...};
//     }
//   };
//   }  // namespace wb::app
//   WB_REGISTER_METRIC("my_metric", wb::app::MyMetric, wb::app::MyMetricParams, "doc");
//
// A spec then asks for it as {"metrics": {"my_metric": {"every": 10}}}; the run writes
// metrics/my_metric (rows x columns) and metrics/my_metric_step (the 0-based global step of
// each row). The worked example of docs/extending.md is tests/examples/my_metric.cpp.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "core/params.h"
#include "train/run_config.h"

namespace wb::app {

// What a metric writes: the dataset metrics/<series> with one row of `columns(model)`
// doubles per measured step (1-D when there is one column), its column names in the string
// list attribute `columns_attr`, and metrics/<series>_step (one double per row).
struct MetricSchema {
  std::string series;
  std::string columns_attr = "columns";
  std::function<std::vector<std::string>(const models::Model&)> columns;
  // The metric combines copies of the workers' gradients (GradientCopies): n floats per
  // local worker, shared by every metric of the run, for the memory estimate.
  bool gradient_copy = false;
};
// Column helpers for schemas: a fixed list; one column per parameter tensor plus `extra`.
std::function<std::vector<std::string>(const models::Model&)> fixed_columns(
    std::vector<std::string> names);
std::function<std::vector<std::string>(const models::Model&)> per_tensor_columns(
    std::string extra);

// Scratch copies of this rank's workers' gradients (a collective combines them in place),
// made once per run and shared by the metrics that declare gradient_copy.
class GradientCopies {
 public:
  // Fresh copies of ctx.workers[k].g, one span per local worker.
  std::vector<std::span<float>>& of(algo::StepContext& ctx);

 private:
  std::vector<std::vector<float>> scratch_;
  std::vector<std::span<float>> spans_;
};

// The parameters of a metric that has no others than `every`.
struct EveryParams {
  int64_t every = 0;
  static void describe(core::ParamSet<EveryParams>& p) {
    p.field("every", &EveryParams::every, "log every N steps; 0 = off")
        .min(0)
        .max(train::kMaxSteps);
  }
};

class Metric {
 public:
  virtual ~Metric() = default;
  // One row of the schema's columns for the gradients of ctx.step (worker.g at worker.w),
  // identical on every rank (rank 0 writes it). Called at the steps where
  // ctx.step % every == 0, once per step.
  virtual std::vector<double> measure(algo::StepContext& ctx, GradientCopies& copies) = 0;
};

struct MetricEntry {
  std::string name, doc, file;
  int line = 0;
  MetricSchema schema;
  std::function<std::vector<core::ParamDoc>()> params;
  // User JSON -> the resolved parameters (every key filled in).
  std::function<json(const json&, const core::Where&)> resolve;
  // Rules across the metric's parameters and the run (e.g. k <= workers); w is the
  // metric's own JSON path.
  std::function<void(const json& resolved, const train::RunConfig&, const core::Where&)> check;
  std::function<std::unique_ptr<Metric>(const json& resolved, const models::Model&, int W)>
      create;
};

// Metrics by name (the order of their keys in a resolved config and of their series in a
// results file).
class MetricRegistry {
 public:
  void add(MetricEntry e);
  const MetricEntry& get(const std::string& name, const core::Where& w) const;
  const MetricEntry* find(const std::string& name) const;
  const std::vector<MetricEntry>& list() const { return entries_; }
  std::string names() const;

 private:
  std::vector<MetricEntry> entries_;
};
MetricRegistry& metric_registry();

template <class Impl, class P>
struct MetricRegistrar {
  MetricRegistrar(const char* name, const char* doc, const char* file, int line) {
    MetricEntry e;
    e.name = name;
    e.doc = doc;
    e.file = file;
    e.line = line;
    e.schema = Impl::schema();
    e.params = [] { return core::params_of<P>().docs(); };
    e.resolve = [](const json& v, const core::Where& w) {
      return core::params_of<P>().to_json(core::params_of<P>().parse(v, w));
    };
    e.check = [](const json& resolved, const train::RunConfig& c, const core::Where& w) {
      if constexpr (requires(const P& p) { Impl::check(p, c, w); })
        Impl::check(core::params_of<P>().parse(resolved, w), c, w);
    };
    e.create = [](const json& resolved, const models::Model& m, int W) -> std::unique_ptr<Metric> {
      return std::make_unique<Impl>(
          core::params_of<P>().parse(resolved, core::Where{"<resolved>", "$"}), m, W);
    };
    metric_registry().add(std::move(e));
  }
};

}  // namespace wb::app

// WB_REGISTER_METRIC("name", Impl, Params, "doc"), at namespace scope in the metric's own
// file: Impl(const Params&, const models::Model&, int W) and static MetricSchema schema()
// must exist; an optional static void check(const Params&, const RunConfig&, const Where&)
// states rules across the run. Params must have an int64 `every`.
#define WB_REGISTER_METRIC(NAME, IMPL, PARAMS, DOC)                                        \
  static ::wb::app::MetricRegistrar<IMPL, PARAMS> WB_REGISTRY_CAT(wb_metric_registrar_,     \
                                                                 __LINE__)(NAME, DOC, __FILE__, \
                                                                           __LINE__)
