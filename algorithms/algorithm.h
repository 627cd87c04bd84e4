// Algorithms turn local work + collectives into global steps (DESIGN.md section 5).
//
// How to add an algorithm (one file per algorithm, self-registered):
//
//   // algorithms/my_algo.cpp
//   #include "algorithms/algorithm.h"
//   namespace wb::algo {
//   struct MyAlgoParams {
//     double beta = 0.5;
//     static void describe(core::ParamSet<MyAlgoParams>& p) {
//       p.field("beta", &MyAlgoParams::beta, "what beta does (paper, Eq. n)").min(0).max(1);
//     }
//   };
//   class MyAlgo final : public Algorithm {
//    public:
//     explicit MyAlgo(const MyAlgoParams& p) : p_(p) {}
//     void step(StepContext& ctx) override {
//       compute_gradients(ctx);                         // every local worker, one batch
//       ctx.coll.allreduce<float>(grad_spans(ctx), comm::ReduceOp::kAverage);
//       for (auto& w : ctx.workers) w.opt->step(w.w, w.g, ctx.lr);
//     }
//    private:
//     MyAlgoParams p_;
//   };
//   }  // namespace wb::algo
//   WB_REGISTER_ALGORITHM("my_algo", wb::algo::MyAlgo, wb::algo::MyAlgoParams, "one-line doc");
//
// The file is picked up by CMake's glob; `workbench list` shows it with its parameters;
// tests/unit/test_registry.cpp fails if a file in algorithms/ registers nothing.
#pragma once

#include <cmath>
#include <span>
#include <vector>

#include "comm/collectives.h"
#include "core/registry.h"
#include "core/series.h"
#include "models/model.h"
#include "sim/clock.h"
#include "train/partition.h"
#include "train/run_config.h"
#include "train/run_facts.h"
#include "train/worker.h"

namespace wb::algo {

struct StepContext;
// Sees every fresh set of worker gradients before the algorithm combines them
// (diagnostics: orthogonality, diversity, sequential emulation). Null when no metric is
// enabled, so the disabled cost is one pointer test per step.
class GradientObserver {
 public:
  virtual ~GradientObserver() = default;
  virtual void on_gradients(StepContext& ctx) = 0;
};

// Everything an algorithm may touch during one global step.
struct StepContext {
  std::span<train::Worker> workers;  // this rank's logical workers, in worker order
  comm::Collectives& coll;           // collectives over ALL logical workers of the run
  const models::Model& model;
  const models::Dataset& train;
  const train::RunConfig& cfg;
  sim::SimClock& clock;
  // Scratch for the training passes this thread runs (the runner's, for cfg.batch_size
  // samples): every local worker's pass uses it in turn (DESIGN.md section 3). An algorithm
  // that runs passes from several threads makes one PassScratch per thread instead.
  train::PassScratch* scratch = nullptr;
  // The run's budget, epochs and learning-rate schedule, from the runner (run_facts.h). Set
  // before setup(); algorithms read total steps and lr_at(s) here, never from the config.
  train::RunFacts run{};
  int64_t step = 0;   // 0-based global step
  double epoch = 0;   // fractional epoch at the start of the step
  double lr = 0;      // schedule value for this step
  // The rate the step applies (curves/lr): lr unless the algorithm scales it (lr_scaling
  // "linear" / "sqrt" of sync_sgd and adasum: lr x W, lr x sqrt(W)), set by the algorithm.
  double lr_applied = 0;
  int W = 1;          // total logical workers
  // Set by the algorithm: the largest |component| of the combined update direction it
  // applied (before the LR); drives the toy's convergence rule. NaN = not reported.
  double update_max_abs = NAN;
  // Samples consumed by the whole run in this step (all workers).
  int64_t step_samples = 0;
  GradientObserver* observer = nullptr;
  // The run's data partition (train/partition.h; the workers' samplers are its parts), for an
  // algorithm that samples for a worker itself (LAP/LPP updaters, Adaptive SGD's replicas).
  // Set by the runner for setup() only (null afterwards); see run_partition.
  const train::DataPartition* partition = nullptr;
};

// ctx.partition, or for a context made without one (tests) the default iid partition of
// ctx.train over ctx.W workers, made into `own`.
const train::DataPartition& run_partition(const StepContext& ctx, train::DataPartition& own);

// What an algorithm allocates beyond its state_floats_per_worker, in bytes, and the series
// it records, in doubles: for the planner's memory and output estimates and its data-shard
// check (app/plan/run_plan.cpp), so that a run that cannot fit is refused before it starts.
// Read off the algorithm's own setup() and step(); each algorithm keeps its own in step.
// The algorithm also names the run-config key that drives its share, so that a refusal names
// what to change: the planner knows no algorithm's parameters.
struct Footprint {
  double per_worker = 0;   // per logical worker of the rank
  double shared = 0;       // on every rank whatever its worker count
  double series_fixed = 0, series_per_step = 0;  // doubles of the series it records
  // The key that drives the bytes per worker ("algorithm.megabatch"), and how many bytes per
  // worker it drives (state_floats_per_worker's share included); "" when none beyond W.
  std::string dominant_key;
  double dominant_per_worker = 0;
  // Data shards per logical worker (LAP/LPP: one per updater), the key that sets that count
  // and what owns a shard ("updater"), for the planner's "every shard >= 1 sample" check.
  int64_t shards_per_worker = 1;
  std::string shards_key, shard_owner;
};
// The sizes a footprint is made of, measured by the planner for the run's batch_size.
struct FootprintInputs {
  size_t n = 0;                 // parameters
  size_t tensors = 0;           // parameter tensors
  double train_size = 0;        // samples of the training set
  double batch_bytes = 0;       // one training batch buffer
  double workspace_bytes = 0;   // one training pass's model workspace
  size_t opt_floats = 0;        // one optimizer's state for n parameters
};

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  // Called once before the first step (e.g. to check parameters against W).
  virtual void setup(StepContext&) {}
  // One global iteration.
  virtual void step(StepContext& ctx) = 0;
  // The parameters to evaluate (identical on every rank). Default: local worker 0's,
  // which is the common model for synchronous algorithms.
  virtual std::span<const float> eval_params(StepContext& ctx) { return ctx.workers[0].w; }
  // The model state (BatchNorm running statistics) evaluated with eval_params, identical on
  // every rank; empty for models without state. Default: logical worker 0's, broadcast (as
  // PyTorch DDP's broadcast_buffers makes rank 0's buffers everyone's).
  virtual std::span<const float> eval_state(StepContext& ctx);
  // After the last step: extra datasets for the run group (e.g. "workers/batch_size",
  // rows x W), written by rank 0 -- so they must be identical on every rank.
  virtual void append_series(StepContext&, std::vector<core::Series>&) {}
  // Training samples one step processes, for the `epochs` budget (train::budget_steps). Default:
  // W workers x batch_size x micro_batches_per_step(); algorithms whose step is a mega-batch
  // override it.
  virtual double samples_per_step(const train::RunConfig& c) const {
    return static_cast<double>(c.workers) * static_cast<double>(c.batch_size) *
           static_cast<double>(micro_batches_per_step());
  }
  // Micro-batches of batch_size each worker processes per step: `local_steps` of sync_sgd and
  // adasum (gradient accumulation, or local optimizer steps). An `epochs` budget counts them
  // all (without it, epochs 0.5 at local_steps 16 trained 8 epochs).
  virtual int64_t micro_batches_per_step() const { return 1; }
  // The run-config keys samples_per_step multiplies, as JSON paths, for the planner's message
  // when a step would hold too many samples.
  virtual std::string samples_per_step_keys() const {
    return micro_batches_per_step() > 1 ? "$.workers x $.batch_size x $.algorithm.local_steps"
                                        : "$.workers x $.batch_size";
  }
  // Floats the algorithm keeps per logical worker beyond the worker's own state (w, g,
  // optimizer state: opt_floats for n parameters), for the memory estimate
  // (app/plan/sweep_plan.h estimate_memory). Default: none.
  virtual double state_floats_per_worker(const train::RunConfig&, size_t /*n*/,
                                         size_t /*opt_floats*/) const {
    return 0;
  }
  // Whether the run's metrics (app/metrics/metric.h: orthogonality, diversity, ...) can be fed:
  // true when every step shows its workers' fresh gradients, taken at one common model,
  // to ctx.observer through compute_gradients() before combining them. Default false: a
  // metric asked of an algorithm that does not say so is refused before any run trains
  // (app/metrics/diagnostics.h check_metrics_supported), never silently left out.
  virtual bool observes_gradients() const { return false; }
  // Default: nothing beyond the workers' state (the synchronous algorithms).
  virtual Footprint footprint(const train::RunConfig&, const FootprintInputs&) const { return {}; }

 protected:
  std::vector<std::vector<float>> eval_state_;  // eval_state's copies, one per local worker
};

using AlgorithmRegistry = core::Registry<Algorithm>;
AlgorithmRegistry& algorithm_registry();

// ---- helpers shared by algorithms -------------------------------------------------
// Every local worker computes the gradient of one batch of cfg.batch_size samples;
// advances the simulated clock by the slowest worker's compute time; then shows the
// fresh gradients (worker.g, taken at the model worker.w) to ctx.observer, if any. Each
// gradient is clipped to the run's clip_norm (train::Worker::clip) unless clip is false.
void compute_gradients(StepContext& ctx, int batch_size = 0, bool clip = true);
std::vector<std::span<float>> grad_spans(StepContext& ctx);
std::vector<std::span<float>> param_spans(StepContext& ctx);
// Segments for per-tensor / per-layer / whole-model combination.
std::vector<comm::Segment> segments(const models::Model& m, const std::string& granularity);
// LR scaling rule over W workers: "none" 1, "linear" W (Goyal et al. 2017), "sqrt" sqrt(W).
double lr_scale(const std::string& rule, int W);
// Gradient accumulation with PyTorch semantics (Horovod's backward_passes_per_step): k
// micro-batches per local worker; on return worker j's g is the mean of its k gradients and
// its loss the mean of its k losses. acc (n floats per local worker) and loss_sum (one per
// local worker) are preallocated by the caller; k = 1 is compute_gradients(). The run's
// clip_norm applies to the mean, once (torch clips .grad after the k backward() calls).
void accumulate_gradients(StepContext& ctx, int k, std::span<std::vector<float>> acc,
                          std::span<double> loss_sum);
// Largest |x_i|.
double max_abs(std::span<const float> x);

}  // namespace wb::algo

// WB_REGISTER_ALGORITHM("adasum", Adasum, AdasumParams, "doc"): at namespace scope in the
// algorithm's own .cpp file; Adasum(const AdasumParams&) must be constructible.
#define WB_REGISTER_ALGORITHM(NAME, IMPL, PARAMS, DOC) \
  WB_REGISTER(::wb::algo::algorithm_registry, NAME, IMPL, PARAMS, DOC)
