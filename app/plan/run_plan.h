// The plan of one run (DESIGN.md section 4): what the run is, worked out once, before it
// executes. The planner resolves the run's config, instantiates its algorithm (the one
// instance the run then executes), and derives from them the budget, the algorithm's
// footprint and the memory and output estimates. Validation (`workbench validate`),
// `--dry-run`, the rank groups and execution (app/exec/training_loop.h) all read the plan;
// none of them works a fact out again.
#pragma once

#include <memory>
#include <string>

#include "algorithms/algorithm.h"
#include "app/experiment/spec.h"
#include "models/model.h"
#include "train/partition.h"

namespace wb::app {

// Test-set samples per evaluation pass (the evaluation workspace is made for this many).
constexpr int kEvalChunk = 256;
// A run records its final parameters (series final_params) when the model has at most this
// many: the toys' coefficients, not a network's weights. The output estimate counts them.
constexpr size_t kMaxFinalParams = 100000;

// metrics.validation_fraction holds back the tail of the training set (floor(N x fraction)
// samples, 0 when the fraction is 0); the run trains on the rest. The one rule for both,
// used by planning and by the loop (app/exec/training_loop.h) (shards, budgets, output size).
size_t validation_count(size_t N, double fraction);
size_t training_samples(const train::RunConfig& c, size_t N);


// A run's memory on its busiest rank (DESIGN.md section 3): a logical worker costs its state,
// the data set is loaded once, and the scratch of a pass belongs to the executing thread.
// One estimate for `workbench run --dry-run` and the --max-memory-gb budget. Device memory is
// not counted.
struct MemoryEstimate {
  // The program itself: code, MPI and HDF5 libraries, allocator (a W = 1 toy run: 32 MB max
  // RSS on Linux x86-64).
  static constexpr double kProgram = 30e6;
  // A logical worker's object beyond its vectors' contents: the Worker, its optimizer and
  // sampler objects and the allocator's headers of their heap blocks (measured: 65,536
  // quadratic workers take ~480 bytes each more than their 2 parameters; tests/cli/
  // test_estimates.sh checks it).
  static constexpr double kWorkerObject = 480;
  // A run's curves and series are held twice at its peak: in the growing vectors the loop
  // appends to (up to 2x their size in capacity) and as the packed journal record.
  static constexpr double kResultCopies = 2;
  // Folding the journal into the file (rank 0, at the end of the sweep) holds, at its peak, the
  // journal read whole, the decoded runs, the HDF5 image being built (with its growth) and the
  // finished image: ~6x the results written (measured on 1-run and 10,000-run toy sweeps).
  static constexpr double kFoldCopies = 6;
  double workers_per_rank = 0;  // the busiest rank's logical workers
  double state_per_worker = 0;  // bytes: w, g, optimizer + algorithm state, shard, indices
  double data = 0;              // bytes: training + test samples, shared by every worker
  double scratch = 0;           // bytes: one training pass + one evaluation pass
  double algorithm = 0;  // bytes: algorithm state not per worker (a simulated schedule of all
                         // W workers, global models), on every rank
  double results = 0;    // bytes: the run's curves and series (RunPlan::results_bytes)
  std::string dominant = "workers";  // the run-config key that moves the total most
  double total() const {
    return kProgram + workers_per_rank * (state_per_worker + kWorkerObject) + data + scratch +
           algorithm + kResultCopies * results;
  }
};

// The run's budget: the training samples it draws from, the samples of one step (the
// algorithm's: W x batch_size, or a mega-batch) and the steps (`steps`, else `epochs` of the
// training samples). The one place the budget is computed is plan_budget below.
struct RunBudget {
  size_t train_size = 0;        // N: training samples (without the validation tail)
  size_t validation = 0;        // the tail metrics.validation_fraction holds back
  double samples_per_step = 1;  // the algorithm's
  int64_t steps = 1;
};

struct RunPlan {
  const RunSpec* run = nullptr;  // id, index, config (the experiment outlives its plans)
  // The run's algorithm, instantiated once by plan_run; execute_run takes it over (its
  // setup() and steps run on this object), so it is empty once the run has executed.
  std::shared_ptr<algo::Algorithm> algorithm;
  RunBudget budget;         // plan_data
  algo::Footprint footprint;  // plan_data: the algorithm's, for this run's model and batch
  size_t opt_floats = 0;    // one optimizer's state for the model's parameters (plan_data)
  double results_bytes = 0;  // the run's curves and series (plan_data)
  int classes = 0;           // the training set's classes (0: no class labels) (plan_data)
  int group = 0;             // the rank group that runs it (plan_sweep)
  int ranks = 1;             // the ranks of that group (plan_sweep)
  MemoryEstimate memory;     // on its busiest rank, for `ranks` ranks (plan_memory)
};

// The run's plan from its config alone (no data): resolves the algorithm and instantiates
// it, the one place a run's algorithm is made. Config errors of derived counts are checked
// by check_config.
RunPlan plan_run(const RunSpec& rs);
// The rules that need the algorithm but no data: a step's samples fit a batch, a `steps`
// budget's samples fit the samples counter. UserError at the run's JSON path (file e.file).
void check_config(const Experiment& e, const RunPlan& p);
// A run priced by the cost profile at `profile` whose model (`model`: the resolved config, a
// spec's "model" value with every parameter) differs from the config that profile's compute
// entry for the model's name was measured on ("compute_models", sim/cost_model.h): a UserError
// naming the profile's JSON path, both configs and the calibrate command that measures this one.
// Nothing when they match or the profile recorded no config for that name. The two compare
// resolved, whatever the order of their keys.
void check_profile_model(const std::string& profile, const json& model);
// The config the profile's compute entry of model `name` was measured on, resolved (every
// parameter); null when the profile recorded none. A bad recorded config is a UserError at
// the profile's $.compute_models.<name>.
const json* profile_model(const std::string& profile, const std::string& name);
// Two resolved model configs are the same model (objects compared as maps).
bool same_model(const json& a, const json& b);
// A resolved model config without the parameters at their defaults (nested objects key by
// key): {"name": "gpt", "layers": 2, "heads": 2, "d_model": 64} for the resolved gpt of the
// DiLoCo specs, which resolves back to the same config. For messages.
json model_without_defaults(const json& model);
// plan_run + check_config for every run of the experiment, in sweep order: what
// `workbench validate --spec-only` checks beyond the parser.
std::vector<RunPlan> plan_runs(const Experiment& e);

// The budget for a training set of `train_set_size` samples (the validation tail is held
// back here). A budget above kMaxSteps is a UserError at w's "epochs" key.
RunBudget plan_budget(const RunPlan& p, size_t train_set_size,
                      const core::Where& w = core::Where{"", "$.base"});
// With the run's task: the footprint, the budget and the output estimate. With `checks`
// (the run's experiment), the data checks in the order a user meets them: every logical
// worker, and every shard the algorithm splits a worker's into, has >= 1 training sample
// (naming the key to change); a label-aware partition has class labels to read and can be
// made (at the run's `partition`); the `epochs` budget fits kMaxSteps (at checks->file $.base).
void plan_data(RunPlan& p, const models::Task& t, const Experiment* checks = nullptr);
// The run's data partition (its `partition`, train/partition.h) of the first N samples of
// the training set `train`, for W = c.workers workers and the run's seed: the one place it is
// made, for the planner's checks and the training loop's workers. The same on every rank.
train::DataPartition make_run_partition(const train::RunConfig& c, const models::Dataset& train,
                                        size_t N);
// The classes of a training set: 1 + its largest class label; 0 when it has no class labels.
int class_count(const models::Dataset& train);
// The memory on the busiest of `ranks` ranks (after plan_data).
MemoryEstimate plan_memory(const RunPlan& p, const models::Task& t, int ranks);

// A run's plan made whole for a run that is not part of a planned sweep (tests, benchmarks,
// examples): plan_run + plan_data with its data checks, messages naming "run <id>".
RunPlan plan_single(const RunSpec& rs, const models::Task& t);

// The estimates of a config alone (tests): plan_run + plan_data (no checks), plan_memory.
MemoryEstimate estimate_memory(const train::RunConfig& c, const models::Task& t, int ranks);
double estimate_results_bytes(const train::RunConfig& c, const models::Task& t);
// "395 MB", "9.8e+06 MB": sizes far beyond any machine stay readable.
std::string fmt_mb(double bytes);
// "~395 MB per rank (1024 workers x 0.262 MB + data 55 MB + scratch 42 MB + program 30 MB)"
std::string describe_memory(const MemoryEstimate& m);

}  // namespace wb::app
