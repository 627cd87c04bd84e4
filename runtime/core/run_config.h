// The run facts (DESIGN.md section 3, ground floor): one run's configuration, as the
// algorithms, models' factories and the application all see it. Parsing and validation
// (the registries' resolve) live in the application's runtime/spec.cpp; this header only
// names the fields and their defaults, so algorithms/ can read a RunConfig without
// including anything above the ground floor.
#pragma once

#include <string>

#include "runtime/core/clock.h"
#include "runtime/core/params.h"

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
  std::string device = "cpu";  // runtime/train/compute_device.h
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

}  // namespace wb::rt
