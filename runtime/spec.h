// Experiment specs (DESIGN.md section 2): one JSON file with a `base` run config and an
// optional `sweep` (cartesian product over dotted keys). Parsing validates everything up
// front -- every expanded run -- so a bad value fails before any run starts or any file
// is written.
//
//   {
//     "name": "toy_square",
//     "output": "toy_square.h5",                         (optional; -o overrides)
//     "base": { "model": {"name": "quadratic", "x_max": 1}, "workers": 4, "lr": 0.1, ... },
//     "sweep": { "workers": [2, 4, 8], "model.x_max": [1, 2],
//                "algorithm": [{"name": "sync_sgd", "combine": "average"}, "adasum"] }
//   }
//
// A sweep value replaces the value at its key (an object replaces the whole object).
// Run ids are made of the varied keys in sweep order: "workers=4,x_max=2,algorithm=adasum"
// (the last component of a dotted key when that is unambiguous, else the full key).
#pragma once

#include <string>
#include <vector>

#include "runtime/clock.h"
#include "runtime/params.h"

namespace wb::rt {

// A polymorphic config value resolved through a registry ("adasum" or {"name": ...}).
template <int Kind>
struct NamedRef {
  json value;  // resolved object form: {"name": ..., every parameter}
};
using AlgorithmRef = NamedRef<0>;
using ModelRef = NamedRef<1>;
using OptimizerRef = NamedRef<2>;
using ScheduleRef = NamedRef<3>;

void parse_value(const json& v, AlgorithmRef& out, const Where& w);
void parse_value(const json& v, ModelRef& out, const Where& w);
void parse_value(const json& v, OptimizerRef& out, const Where& w);
void parse_value(const json& v, ScheduleRef& out, const Where& w);
template <int K>
void to_json(json& j, const NamedRef<K>& r) {
  j = r.value;
}
template <int K>
struct TypeName<NamedRef<K>> {
  static std::string get() { return "name|object"; }
};

struct ConvergeParams {
  bool enabled = false;
  double tol = 0.0;
  int64_t consecutive = 2;
  static void describe(ParamSet<ConvergeParams>& p) {
    p.field("enabled", &ConvergeParams::enabled,
            "stop when the applied combined update is ~0 for `consecutive` steps "
            "(the Horovod toy's convergence rule)");
    p.field("tol", &ConvergeParams::tol, "max |update component| that counts as zero").min(0);
    p.field("consecutive", &ConvergeParams::consecutive, "consecutive zero steps").min(1);
  }
};

// "all" or a positive integer k (the first k workers).
struct WorkerCount {
  int64_t k = 0;  // 0 = all
};
void parse_value(const json& v, WorkerCount& out, const Where& w);
void to_json(json& j, const WorkerCount& c);
template <>
struct TypeName<WorkerCount> {
  static std::string get() { return "\"all\"|int"; }
};

// Diagnostics (DESIGN.md section 8), computed from the workers' fresh gradients at a
// step whatever the algorithm does with them. every = 0 disables (zero cost).
struct EveryParams {
  int64_t every = 0;
  static void describe(ParamSet<EveryParams>& p) {
    p.field("every", &EveryParams::every, "log every N steps; 0 = off").min(0);
  }
};
struct SeqEmulationParams {
  int64_t every = 0;
  WorkerCount workers;
  static void describe(ParamSet<SeqEmulationParams>& p) {
    p.field("every", &SeqEmulationParams::every, "log every N steps; 0 = off").min(0);
    p.field("workers", &SeqEmulationParams::workers,
            "emulate the sequential run over all workers or the first k");
  }
};
struct MetricsParams {
  EveryParams orthogonality;
  EveryParams diversity;
  SeqEmulationParams seq_emulation;
  static void describe(ParamSet<MetricsParams>& p) {
    p.field("orthogonality", &MetricsParams::orthogonality,
            "||Adasum(g)||^2 / sum ||g_i||^2 per tensor (1 orthogonal, 1/W parallel)");
    p.field("diversity", &MetricsParams::diversity,
            "gradient diversity sum ||g_i||^2 / ||sum g_i||^2 per tensor (Yin et al.)");
    p.field("seq_emulation", &MetricsParams::seq_emulation,
            "error against the exact-Hessian sequential emulation (adasum-arxiv 3.7)");
  }
  bool any() const {
    return orthogonality.every > 0 || diversity.every > 0 || seq_emulation.every > 0;
  }
};

// One run. Defaults here are THE defaults (printed by `workbench list`).
struct RunConfig {
  AlgorithmRef algorithm{json("sync_sgd")};
  ModelRef model{json("quadratic")};
  OptimizerRef optimizer{json("sgd")};
  ScheduleRef schedule{json("constant")};
  std::string device = "cpu";  // runtime/compute_device.h
  int64_t workers = 1;
  int64_t batch_size = 32;
  double lr = 0.01;
  int64_t steps = 0;
  double epochs = 1.0;
  int64_t seed = 1;
  int64_t log_every = 1;
  int64_t eval_every = 0;
  double max_loss = 0;
  ConvergeParams converge;
  ClockParams clock;
  HeterogeneityParams heterogeneity;
  MetricsParams metrics;
  static void describe(ParamSet<RunConfig>& p);
};

struct RunSpec {
  std::string id;     // from the varied keys ("base" when there is no sweep)
  int index = 0;      // position in the sweep
  RunConfig cfg;
  json resolved;      // every field, defaults included (HDF5 config_json)
};

struct Experiment {
  std::string file;  // the spec's path (for messages)
  std::string name;
  std::string description;
  std::string output;  // from the spec ("" -> <name>.h5)
  json raw;            // the spec as given (HDF5 experiment_json)
  std::vector<RunSpec> runs;
};

// Parse and fully validate a spec file (UserError naming file and JSON path).
Experiment load_experiment(const std::string& path);
Experiment parse_experiment(const std::string& text, const std::string& file);
RunConfig parse_run_config(const json& j, const Where& w, json* resolved = nullptr);

// Budget in steps for a run given the training set size.
int64_t total_steps(const RunConfig& c, size_t train_size);

}  // namespace wb::rt
