// The run facts: one run's configuration, as the worker, the algorithms and the application
// all see it. Parsing and validation (the registries' resolve) live in the application's
// app/experiment/run_config_json.cpp; this header only names the fields and their defaults, so
// algorithms/ can read a RunConfig without including the application. It sits above the
// simulator because a run's clock parameters (sim/clock.h: ClockParams, checked against its cost
// profile) are part of it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/params.h"
#include "sim/clock.h"

namespace wb::train {

// Bounds of the budget, checked when a spec is parsed: every
// derived count -- the total steps, the samples processed (int64, and exact in the double
// that makes the epoch), a curve's length -- then fits its type with room to spare.
//  - a step holds at most kMaxSamplesPerStep samples (batches are indexed by int);
//  - a budget is at most kMaxSteps steps, given as `steps` or derived from `epochs`
//    (1e12 steps at 1 us each is 11 days of simulation);
//  - epochs <= kMaxEpochs, so that epochs x N stays below 2^53 for any N < 2^32 (a data set
//    is indexed by uint32);
//  - a seed is exact in a double (analysis tools read config_json numbers as doubles).
inline constexpr int64_t kMaxWorkers = int64_t{1} << 20;
inline constexpr int64_t kMaxSamplesPerStep = core::kMaxInt;
inline constexpr int64_t kMaxSteps = 1000000000000;
inline constexpr double kMaxEpochs = 1e6;
inline constexpr int64_t kMaxSeed = int64_t{1} << 53;

// A polymorphic config value resolved through a registry ("adasum" or {"name": ...}).
// Immutable once set, and shared by copies: the runs of a sweep that resolve to the same
// object hold one copy of it (RunSpec's memory is what bounds a 100k-run sweep).
template <int Kind>
class NamedRef {
 public:
  NamedRef() : value_(std::make_shared<const json>()) {}
  explicit NamedRef(json v) : value_(std::make_shared<const json>(std::move(v))) {}
  // The resolved object form: {"name": ..., every parameter}.
  const json& value() const { return *value_; }

 private:
  std::shared_ptr<const json> value_;
};
using AlgorithmRef = NamedRef<0>;
using ModelRef = NamedRef<1>;
using OptimizerRef = NamedRef<2>;
using ScheduleRef = NamedRef<3>;
using PartitionRef = NamedRef<4>;  // train/partition.h

void parse_value(const json& v, AlgorithmRef& out, const core::Where& w);
void parse_value(const json& v, ModelRef& out, const core::Where& w);
void parse_value(const json& v, OptimizerRef& out, const core::Where& w);
void parse_value(const json& v, ScheduleRef& out, const core::Where& w);
void parse_value(const json& v, PartitionRef& out, const core::Where& w);
template <int K>
void to_json(json& j, const NamedRef<K>& r) {
  j = r.value();
}
}  // namespace wb::train

// Specializations live in the primary template's namespace.
namespace wb::core {
template <int K>
struct TypeName<train::NamedRef<K>> {
  static std::string get() { return "name|object"; }
};
}  // namespace wb::core

namespace wb::train {

struct ConvergeParams {
  bool enabled = false;
  double tol = 0.0;
  int64_t consecutive = 2;
  static void describe(core::ParamSet<ConvergeParams>& p) {
    p.field("enabled", &ConvergeParams::enabled,
            "stop when the applied combined update is ~0 for `consecutive` steps "
            "(the Horovod toy's convergence rule)");
    p.field("tol", &ConvergeParams::tol, "max |update component| that counts as zero").min(0);
    p.field("consecutive", &ConvergeParams::consecutive, "consecutive zero steps").min(1).max(kMaxSteps);
  }
};

// "all" or a positive integer k (the first k workers).
struct WorkerCount {
  int64_t k = 0;  // 0 = all
};
void parse_value(const json& v, WorkerCount& out, const core::Where& w);
void to_json(json& j, const WorkerCount& c);
}  // namespace wb::train

namespace wb::core {
template <>
struct TypeName<train::WorkerCount> {
  static std::string get() { return "\"all\"|int"; }
};
}  // namespace wb::core

namespace wb::train {

// The `metrics` object of a run (DESIGN.md section 8): one key per registered metric, each
// a plugin (app/metrics/metric.h, WB_REGISTER_METRIC) with its own parameters and an `every`
// (log every N steps; 0 = off, zero cost), and the evaluation options below. Parsed and printed by app/metrics/metric.cpp, which knows
// the registry; this header only holds the values, so the floors below can read them.
struct MetricsParams {
  // The metrics the spec names, resolved ({"every": N, ...}), by name; a metric not named
  // here is off. Printed in registration order with every metric's defaults.
  // Immutable once parsed and shared by copies, like NamedRef: a sweep's runs hold one.
  std::shared_ptr<const json> named = std::make_shared<const json>(json::object());
  // Train accuracy and a validation split (LPP Table 1's Tr.A. column, per-arm lr chosen
  // on held-back data). Here rather than at the top level of RunConfig because
  // RunConfig::describe lives in app/experiment/run_config_json.cpp; spelled
  // metrics.train_eval_samples and metrics.validation_fraction in a spec.
  int64_t train_eval_samples = 1000;  // 0 = off
  double validation_fraction = 0;     // 0 = no split (bit-identical to no split at all)
  // `every` of metric `name` (0: off or not named).
  int64_t every(const std::string& name) const {
    auto it = named->find(name);
    return it == named->end() ? 0 : it->value("every", int64_t{0});
  }
  bool any() const {
    for (auto& [name, v] : named->items())
      if (v.value("every", int64_t{0}) > 0) return true;
    return false;
  }
  // The key docs of `workbench list`: every registered metric's parameters, then the options.
  static std::vector<core::ParamDoc> docs();
};
void parse_value(const json& v, MetricsParams& out, const core::Where& w);
void to_json(json& j, const MetricsParams& m);
}  // namespace wb::train

namespace wb::core {
template <>
struct TypeName<train::MetricsParams> {
  static std::string get() { return "object"; }
};
}  // namespace wb::core

namespace wb::train {

// One run. Defaults here are THE defaults (printed by `workbench list`).
struct RunConfig {
  AlgorithmRef algorithm{json("sync_sgd")};
  ModelRef model{json("quadratic")};
  OptimizerRef optimizer{json("sgd")};
  ScheduleRef schedule{json("constant")};
  std::string device = "cpu";  // train/compute_device.h
  // Which training samples each logical worker draws from (train/partition.h).
  PartitionRef partition{json("iid")};
  int64_t workers = 1;
  int64_t batch_size = 32;
  double lr = 0.01;
  // Gradient clipping by global L2 norm (train/grad_clip.h), per logical worker on its own
  // gradient before any combination (train::Worker::clip_norm); 0 = off.
  double clip_norm = 0;
  int64_t steps = 0;
  double epochs = 1.0;
  int64_t seed = 1;
  int64_t log_every = 1;
  int64_t eval_every = 0;
  double max_loss = 0;
  ConvergeParams converge;
  sim::ClockParams clock;
  sim::HeterogeneityParams heterogeneity;
  MetricsParams metrics;
  static void describe(core::ParamSet<RunConfig>& p);
};

}  // namespace wb::train
