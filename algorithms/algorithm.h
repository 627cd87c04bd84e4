// Algorithms turn local work + collectives into global steps (DESIGN.md section 5).
//
// How to add an algorithm (one file per algorithm, self-registered):
//
//   // algorithms/my_algo.cpp
//   #include "algorithms/algorithm.h"
//   namespace wb::algo {
//   struct MyAlgoParams {
//     double beta = 0.5;
//     static void describe(rt::ParamSet<MyAlgoParams>& p) {
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
#include "models/model.h"
#include "runtime/clock.h"
#include "runtime/recorder.h"
#include "runtime/registry.h"
#include "runtime/spec.h"
#include "runtime/worker.h"

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
  std::span<rt::Worker> workers;  // this rank's logical workers, in worker order
  comm::Collectives& coll;        // collectives over ALL logical workers of the run
  const models::Model& model;
  const models::Dataset& train;
  const rt::RunConfig& cfg;
  rt::SimClock& clock;
  int64_t step = 0;   // 0-based global step
  double epoch = 0;   // fractional epoch at the start of the step
  double lr = 0;      // schedule value for this step
  int W = 1;          // total logical workers
  // Set by the algorithm: the largest |component| of the combined update direction it
  // applied (before the LR); drives the toy's convergence rule. NaN = not reported.
  double update_max_abs = NAN;
  // Samples consumed by the whole run in this step (all workers).
  int64_t step_samples = 0;
  GradientObserver* observer = nullptr;
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
  // After the last step: extra datasets for the run group (e.g. "workers/batch_size",
  // rows x W), written by rank 0 -- so they must be identical on every rank.
  virtual void append_series(StepContext&, std::vector<rt::Series>&) {}
  // Training samples one step processes, for the `epochs` budget (rt::total_steps). Default:
  // W workers x batch_size; algorithms whose step is a mega-batch override it.
  virtual double samples_per_step(const rt::RunConfig& c) const {
    return static_cast<double>(c.workers) * static_cast<double>(c.batch_size);
  }
};

using AlgorithmRegistry = rt::Registry<Algorithm>;
AlgorithmRegistry& algorithm_registry();

template <class Impl, class P>
struct AlgorithmRegistrar {
  AlgorithmRegistrar(const char* name, const char* doc, const char* file, int line) {
    algorithm_registry().add(rt::make_entry<Algorithm, Impl, P>(name, doc, file, line));
  }
};

// ---- helpers shared by algorithms -------------------------------------------------
// Every local worker computes the gradient of one batch of cfg.batch_size samples;
// advances the simulated clock by the slowest worker's compute time; then shows the
// fresh gradients (worker.g, taken at the model worker.w) to ctx.observer, if any.
void compute_gradients(StepContext& ctx, int batch_size = 0);
std::vector<std::span<float>> grad_spans(StepContext& ctx);
std::vector<std::span<float>> param_spans(StepContext& ctx);
// Segments for per-tensor / per-layer / whole-model combination.
std::vector<comm::Segment> segments(const models::Model& m, const std::string& granularity);
// Largest |x_i|.
double max_abs(std::span<const float> x);

}  // namespace wb::algo

#define WB_ALGO_CAT2(a, b) a##b
#define WB_ALGO_CAT(a, b) WB_ALGO_CAT2(a, b)
// WB_REGISTER_ALGORITHM("adasum", Adasum, AdasumParams, "doc"): at namespace scope in the
// algorithm's own .cpp file; Adasum(const AdasumParams&) must be constructible.
#define WB_REGISTER_ALGORITHM(NAME, IMPL, PARAMS, DOC)                                     \
  static ::wb::algo::AlgorithmRegistrar<IMPL, PARAMS> WB_ALGO_CAT(wb_algo_registrar_, \
                                                                  __LINE__)(NAME, DOC, __FILE__, __LINE__)
