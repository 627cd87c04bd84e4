#include "app/experiment/run_config_json.h"

#include <set>

#include "algorithms/algorithm.h"
#include "models/model.h"
#include "train/compute_device.h"
#include "train/optimizer.h"
#include "train/partition.h"
#include "train/run_facts.h"
#include "train/schedule.h"

// The run config's parsers and schema (train/run_config.h) are defined here, beside the
// registries that resolve its names; they are train's declarations, so train's namespace.
namespace wb::train {

void parse_value(const json& v, AlgorithmRef& out, const core::Where& w) {
  out = std::decay_t<decltype(out)>(algo::algorithm_registry().resolve(v, w));
}
void parse_value(const json& v, ModelRef& out, const core::Where& w) {
  out = std::decay_t<decltype(out)>(models::model_registry().resolve(v, w));
}
void parse_value(const json& v, OptimizerRef& out, const core::Where& w) {
  out = std::decay_t<decltype(out)>(optimizer_registry().resolve(v, w));
}
void parse_value(const json& v, ScheduleRef& out, const core::Where& w) {
  out = std::decay_t<decltype(out)>(schedule_registry().resolve(v, w));
}
void parse_value(const json& v, PartitionRef& out, const core::Where& w) {
  out = PartitionRef(partition_registry().resolve(v, w));
}

void parse_value(const json& v, WorkerCount& out, const core::Where& w) {
  if (v.is_string() && v.get<std::string>() == "all") {
    out.k = 0;
    return;
  }
  const bool ok = v.is_number_unsigned()  ? v.get<uint64_t>() >= 1 && v.get<uint64_t>() <= static_cast<uint64_t>(kMaxWorkers)
                  : v.is_number_integer() ? v.get<int64_t>() >= 1 && v.get<int64_t>() <= kMaxWorkers
                                          : false;
  if (!ok)
    w.fail("expected \"all\" or an integer >= 1 and <= " + std::to_string(kMaxWorkers) + ", got " +
           core::json_type_name(v));
  out.k = v.get<int64_t>();
}
void to_json(json& j, const WorkerCount& c) { j = c.k == 0 ? json("all") : json(c.k); }

void RunConfig::describe(core::ParamSet<RunConfig>& p) {
  p.field("algorithm", &RunConfig::algorithm,
          "algorithm name or {\"name\": ..., params} (see `workbench list`)");
  p.field("model", &RunConfig::model, "model (+ its data) name or {\"name\": ..., params}");
  p.field("optimizer", &RunConfig::optimizer, "per-worker optimizer name or object");
  p.field("schedule", &RunConfig::schedule, "learning-rate schedule name or object");
  p.field("partition", &RunConfig::partition,
          "which training samples each worker draws from (Flower Datasets' partitioners): "
          "\"iid\" (default: blocks of a seeded permutation), \"contiguous\" (blocks in data "
          "order; gpt: a stretch of the text per worker), {\"name\": \"dirichlet\", \"alpha\": 0.5, "
          "\"min_partition_size\": 10, \"self_balancing\": false} (per class, Dir(alpha) "
          "proportions over the workers), {\"name\": \"shards\", \"shards_per_worker\": 2} "
          "(label-sorted shards dealt to the workers); dirichlet and shards need a model with "
          "class labels");
  p.field("device", &RunConfig::device,
          "where the training/evaluation passes run: cpu, or cuda (one GPU per MPI rank, "
          "chosen by local rank; parameters and communication stay on the host)")
      .one_of({"cpu", "cuda"});
  p.field("workers", &RunConfig::workers, "logical workers W (independent of MPI ranks)")
      .min(1)
      .max(static_cast<double>(kMaxWorkers));
  p.field("batch_size", &RunConfig::batch_size, "samples per worker per step")
      .min(1)
      .max(static_cast<double>(kMaxSamplesPerStep));
  p.field("lr", &RunConfig::lr, "base learning rate").positive();
  p.field("clip_norm", &RunConfig::clip_norm,
          "clip each worker's gradient to this global L2 norm before any combination "
          "(torch.nn.utils.clip_grad_norm_: g *= min(1, clip_norm / (||g|| + 1e-6))); 0 = off")
      .min(0);
  p.field("steps", &RunConfig::steps, "budget in global steps; 0 = use epochs")
      .min(0)
      .max(static_cast<double>(kMaxSteps));
  p.field("epochs", &RunConfig::epochs, "budget in epochs of the training set (if steps = 0)")
      .positive()
      .max(kMaxEpochs);
  p.field("seed", &RunConfig::seed, "seed of init, data order, dropout (same seed, same curves)")
      .min(0)
      .max(static_cast<double>(kMaxSeed));
  p.field("log_every", &RunConfig::log_every, "record a curve point every N steps")
      .min(1)
      .max(static_cast<double>(kMaxSteps));
  p.field("eval_every", &RunConfig::eval_every,
          "test loss/accuracy every N steps; 0 = at the end only")
      .min(0)
      .max(static_cast<double>(kMaxSteps));
  p.field("max_loss", &RunConfig::max_loss,
          "a training loss above this marks the run diverged; 0 = only NaN/Inf")
      .min(0);
  p.field("converge", &RunConfig::converge, "early stop on a zero update");
  p.field("clock", &RunConfig::clock, "simulated-clock cost model");
  p.field("heterogeneity", &RunConfig::heterogeneity,
          "per-worker speed factors and jitter for the simulated clock");
  // Registry-driven keys (app/metrics/metric.h): documented like a nested struct's.
  auto& metrics = p.field("metrics", &RunConfig::metrics, "diagnostics logged to /runs/<id>/metrics");
  metrics.is_nested = true;
  metrics.nested_docs = [] { return MetricsParams::docs(); };
}

}  // namespace wb::train

namespace wb::app {

// Rules across fields of one resolved run. The counts a run's algorithm derives from its
// config (samples per step) are checked by the planner, which instantiates the algorithm
// (app/plan/run_plan.h check_config).
static void check_run_config(const train::RunConfig& c, const core::Where& w) {
  // The schedule's own rule against the base lr (Schedule::check: cosine's min_lr <= lr,
  // multistep's gamma <= 1).
  train::schedule_registry().create(c.schedule.value())->check(c.lr, w.key("schedule"));
}

train::RunConfig parse_run_config(const json& j, const core::Where& w, json* resolved,
                                  bool run_checks) {
  // A seed beyond int64 (2^63 and up, an unsigned JSON integer) is out of the seed's own range,
  // and the message names that range (2^53, exact in a double), not int64's 2^63 - 1 that the
  // integer reader would otherwise report first.
  if (j.is_object() && j.contains("seed") && j["seed"].is_number_unsigned() &&
      j["seed"].get<uint64_t>() > static_cast<uint64_t>(train::kMaxSeed))
    w.key("seed").fail("must be <= " + std::to_string(train::kMaxSeed) + ", got " +
                       j["seed"].dump());
  train::RunConfig c = core::params_of<train::RunConfig>().parse(j, w);
  // Defaults of polymorphic fields are bare names: resolve them to the full object form.
  if (!c.algorithm.value().is_object()) parse_value(json(c.algorithm.value()), c.algorithm, w.key("algorithm"));
  if (!c.model.value().is_object()) parse_value(json(c.model.value()), c.model, w.key("model"));
  if (!c.optimizer.value().is_object()) parse_value(json(c.optimizer.value()), c.optimizer, w.key("optimizer"));
  if (!c.schedule.value().is_object()) parse_value(json(c.schedule.value()), c.schedule, w.key("schedule"));
  if (!c.partition.value().is_object()) parse_value(json(c.partition.value()), c.partition, w.key("partition"));
  if (c.device != "cpu") {
    const train::ComputeBackend* b = train::find_compute_backend(c.device);
    if (!b)
      w.key("device").fail(
          "this workbench was built without " + c.device +
          " support (CUDA needs nvcc at configure time: cmake -DWORKBENCH_CUDA=ON); "
          "`workbench --version` lists the devices of this build");
    const std::string model = c.model.value().value("name", "");
    if (!b->supports(model))
      w.key("device").fail("model \"" + model + "\" has no " + c.device +
                           " implementation (" + c.device + " runs " + b->supported_models() +
                           "); use \"device\": \"cpu\"");
  }
  if (run_checks) check_run_config(c, w);
  if (resolved) *resolved = core::params_of<train::RunConfig>().to_json(c);
  return c;
}

}  // namespace wb::app
