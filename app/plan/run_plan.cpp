#include "app/plan/run_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>

#include "app/metrics/diagnostics.h"
#include "app/experiment/sweep_expansion.h"
#include "core/error.h"
#include "train/optimizer.h"
#include "train/run_facts.h"

namespace wb::app {

std::string fmt_mb(double bytes) {
  char buf[48];
  const double mb = bytes / 1e6;
  if (mb < 1e6) std::snprintf(buf, sizeof buf, "%.0f MB", mb);
  else std::snprintf(buf, sizeof buf, "%.3g MB", mb);
  return buf;
}

namespace {

size_t batch_bytes(const models::Dataset& d, int max_batch) {
  models::Batch b;
  d.reserve(b, max_batch);  // reserves, touches nothing
  return sizeof(float) * (b.x.capacity() + b.y.capacity() + b.x_val.capacity()) +
         sizeof(int32_t) * (b.label.capacity() + b.x_idx.capacity() + b.y_idx.capacity()) +
         sizeof(int64_t) * (b.x_ptr.capacity() + b.y_ptr.capacity());
}

// The optimizer's state for n parameters: one instance asked after one step (state that is
// made on the first step counts).
size_t optimizer_floats(const train::RunConfig& c, const models::Model& m) {
  const size_t n = m.num_params();
  const train::OptimizerEnv env{n, &m.tensors()};
  auto opt = train::optimizer_registry().create(c.optimizer.value(), env);
  std::vector<float> w(n, 0.f), g(n, 0.f);
  opt->step(w, g, 0.0);
  return opt->state().size();
}

// Bytes of the run's curves and series (held until the run is written, then in the results
// file). Curves: a point at every log_every-th step, every evaluation, the first and the
// last step (training_loop.cpp), 9 columns of doubles. Series: the algorithm's, the
// metrics' (their declared columns + a step index per measured step) and the final parameters of a model
// with <= kMaxFinalParams of them. In doubles until written; 8 bytes each in the file.
double results_bytes(const RunPlan& p, const models::Model& m) {
  const train::RunConfig& c = p.run->cfg;
  const double T = static_cast<double>(p.budget.steps);
  double points = std::floor(T / static_cast<double>(c.log_every)) + 2.0;
  if (c.eval_every > 0) points += std::floor(T / static_cast<double>(c.eval_every));
  points = std::min(points, T + 2.0);
  const algo::Footprint& am = p.footprint;
  double doubles = 9.0 * points + am.series_fixed + am.series_per_step * T;
  doubles += metric_series_doubles(c.metrics, m, T);  // each metric's declared series
  if (m.num_params() <= kMaxFinalParams) doubles += static_cast<double>(m.num_params());
  doubles += static_cast<double>(c.workers) * p.classes;  // partition/label_counts
  return 8.0 * doubles + 4096.0;  // + the run's group, attributes and config
}

void check_shards_of(const Experiment& e, const RunPlan& p, const models::Task& t) {
  const RunSpec& r = *p.run;
  const train::RunConfig& c = r.cfg;
  const size_t N = p.budget.train_size;  // without the validation tail
  const std::string model = c.model.value().is_object() ? c.model.value().value("name", "") : "";
  const size_t held = t.train->size() - N;
  const std::string data = "the training set of model " + model + " has " + std::to_string(N) +
                           " sample" + (N == 1 ? "" : "s") +
                           (held ? " to train on (metrics.validation_fraction holds back " +
                                       std::to_string(held) + ")"
                                 : "");
  if (static_cast<uint64_t>(c.workers) > N)
    throw UserError(e.file + ": " + key_path(e, r, "workers"),
                    "workers = " + std::to_string(c.workers) + " but " + data +
                        ": every logical worker needs a data shard of >= 1 sample (use "
                        "workers <= " + std::to_string(N) + " or a larger training set)");
  // An algorithm that splits a worker's shard (LAP/LPP: updater u of worker q samples shard
  // q*U + u of W*U) names the key and the owner of a shard in its footprint.
  const algo::Footprint& f = p.footprint;
  const int64_t U = f.shards_per_worker;
  const std::string name = f.shards_key.substr(f.shards_key.rfind('.') + 1);
  // W <= N here and U <= 256 (its declared bound), so W x U does not overflow.
  if (U > 1 && static_cast<uint64_t>(c.workers) * static_cast<uint64_t>(U) > N)
    throw UserError(e.file + ": " + key_path(e, r, f.shards_key),
                    name + " = " + std::to_string(U) + " with " + std::to_string(c.workers) +
                        " workers makes " + std::to_string(c.workers * U) + " data shards but " +
                        data + ": every " + f.shard_owner + " needs a shard of >= 1 sample (use " +
                        name + " <= " +
                        std::to_string(std::max<size_t>(1, N / static_cast<size_t>(c.workers))) +
                        ", fewer workers or a larger training set)");
}

// A label-aware partition (dirichlet, shards) needs class labels and parameters this data
// can meet; every part must hold a sample for each shard an algorithm cuts it into (LAP/LPP's
// updaters). iid and contiguous are blocks of W <= N (and W x U <= N) samples: nothing to make.
void check_partition_of(const Experiment& e, const RunPlan& p, const models::Task& t) {
  const RunSpec& r = *p.run;
  const train::RunConfig& c = r.cfg;
  if (!train::partition_needs_labels(c.partition.value())) return;
  const std::string where = e.file + ": " + key_path(e, r, "partition");
  const std::string name = c.partition.value().value("name", "");
  const std::string model = c.model.value().is_object() ? c.model.value().value("name", "") : "";
  if (p.classes == 0)
    throw UserError(where, "partition \"" + name + "\" splits the training set by class label, but "
                           "the samples of model " + model + " have no single class label (dirichlet "
                           "and shards need a classification model such as lenet5 or resnet); "
                           "use \"iid\" or \"contiguous\"");
  train::DataPartition dp;
  try {
    dp = make_run_partition(c, *t.train, p.budget.train_size);
  } catch (const UserError& ue) {
    throw UserError(where, ue.detail);
  }
  const algo::Footprint& f = p.footprint;
  const size_t U = static_cast<size_t>(std::max<int64_t>(1, f.shards_per_worker));
  if (dp.min_size() < U) {
    int k = 0;
    while (dp.shard(k).size() >= U) ++k;
    throw UserError(where, "partition \"" + name + "\" gives worker " + std::to_string(k) + " " +
                           std::to_string(dp.shard(k).size()) + " sample" +
                           (dp.shard(k).size() == 1 ? "" : "s") + " but " +
                           (U > 1 ? "its " + std::to_string(U) + " " + f.shard_owner + "s need" : "it needs") +
                           " at least " + std::to_string(U) + (U > 1 ? " (one each)" : "") +
                           ": raise min_partition_size or use fewer workers");
  }
}

}  // namespace

int class_count(const models::Dataset& train) {
  const auto labels = train.class_labels();
  return labels.empty() ? 0 : 1 + *std::max_element(labels.begin(), labels.end());
}

train::DataPartition make_run_partition(const train::RunConfig& c, const models::Dataset& train,
                                        size_t N) {
  train::PartitionInput in;
  in.samples = N;
  in.workers = static_cast<int>(c.workers);
  in.seed = static_cast<uint64_t>(c.seed);
  if (const auto labels = train.class_labels(); !labels.empty()) {
    in.labels = labels.first(N);
    in.classes = class_count(train);
  }
  if (in.labels.empty() && train::partition_needs_labels(c.partition.value()))
    throw UserError("", "the training samples have no class labels");  // the planner said more
  return train::make_partition(c.partition.value(), in);
}

namespace {
// JSON equality with objects compared as maps: json is ordered_json, whose == also compares
// the order of an object's keys.
bool same_json(const json& a, const json& b) {
  if (a.is_object() && b.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto it = a.begin(); it != a.end(); ++it) {
      const auto jt = b.find(it.key());
      if (jt == b.end() || !same_json(it.value(), *jt)) return false;
    }
    return true;
  }
  if (a.is_array() && b.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!same_json(a[i], b[i])) return false;
    return true;
  }
  return a == b;  // scalars; 64 and 64.0 are equal
}
}  // namespace

const json* profile_model(const std::string& profile, const std::string& name) {
  const auto& recorded = sim::cached_cost_profile(profile).profile.compute_models;
  const auto it = recorded.find(name);
  if (it == recorded.end()) return nullptr;
  // Resolved once per profile and model (a sweep checks every run); node-based map: the
  // pointers stay valid. Checks run on the main thread; the mutex costs nothing.
  static std::mutex mu;
  static std::map<std::pair<std::string, std::string>, json> resolved;
  std::lock_guard<std::mutex> lock(mu);
  auto r = resolved.find({profile, name});
  if (r == resolved.end())
    r = resolved
            .emplace(std::make_pair(profile, name),
                     models::model_registry().resolve(it->second, core::Where{profile, "$.compute_models." + name}))
            .first;
  return &r->second;
}

namespace {
// A model's compute per sample is its shape's (layers, widths, features, labels, non-zeros per
// row, the image's size and channels); these keys choose which samples it sees, or how many, or
// how it is evaluated, and leave a training step's cost alone. A profile measured on the default
// synthetic extreme-classification set prices the 110,000-row one and the Bibtex files alike;
// a profile's gpt prices it on any text.
const std::set<std::string> kDataKeys = {"data",       "train_file",  "test_file",      "train_limit",
                                         "test_limit", "train_size",  "test_size",      "eval_k",
                                         "data_path",  "eval_windows", "data_dir",      "augment",
                                         "data_seed",  "normalize_mean", "normalize_std"};
const std::set<std::string> kSyntheticDataKeys = {"train_size", "test_size", "data_seed", "signal", "signature"};

json compute_shape(const json& model) {
  if (!model.is_object()) return model;
  json out = json::object();
  for (auto it = model.begin(); it != model.end(); ++it) {
    if (kDataKeys.count(it.key())) continue;
    if (it.key() == "synthetic" && it.value().is_object()) {
      json syn = json::object();
      for (auto s = it.value().begin(); s != it.value().end(); ++s)
        if (!kSyntheticDataKeys.count(s.key())) syn[s.key()] = s.value();
      out[it.key()] = std::move(syn);
    } else {
      out[it.key()] = it.value();
    }
  }
  return out;
}
}  // namespace

bool same_model(const json& a, const json& b) { return same_json(compute_shape(a), compute_shape(b)); }

namespace {
// The keys of `v` whose values differ from `dflt`'s, nested objects key by key.
json differing(const json& v, const json& dflt) {
  json out = json::object();
  for (auto it = v.begin(); it != v.end(); ++it) {
    const auto d = dflt.find(it.key());
    if (d == dflt.end()) {
      out[it.key()] = it.value();
    } else if (it.value().is_object() && d->is_object()) {
      json sub = differing(it.value(), *d);
      if (!sub.empty()) out[it.key()] = std::move(sub);
    } else if (!same_json(it.value(), *d)) {
      out[it.key()] = it.value();
    }
  }
  return out;
}
}  // namespace

json model_without_defaults(const json& model) {
  if (!model.is_object() || !model.contains("name") || !model["name"].is_string()) return model;
  const std::string name = model["name"].get<std::string>();
  if (!models::model_registry().has(name)) return model;
  const json diff = differing(model, models::model_registry().resolve(json(name), core::Where{}));
  json out = json::object();
  out["name"] = name;
  for (auto it = diff.begin(); it != diff.end(); ++it) out[it.key()] = it.value();
  return out;
}

void check_profile_model(const std::string& profile, const json& model) {
  const std::string name = model.is_object() ? model.value("name", "") : model.is_string() ? model.get<std::string>() : "";
  const json* measured = profile_model(profile, name);
  if (!measured) return;
  const json mine = model.is_object() ? model : models::model_registry().resolve(model, core::Where{"", "$.model"});
  if (same_model(*measured, mine)) return;
  const json ms = compute_shape(*measured), ys = compute_shape(mine);
  std::string keys;  // the parameters that differ, first in the message
  for (auto k = ys.begin(); k != ys.end(); ++k)
    if (!ms.contains(k.key()) || !same_json(ms[k.key()], k.value())) keys += (keys.empty() ? "" : ", ") + k.key();
  for (auto k = ms.begin(); k != ms.end(); ++k)
    if (!ys.contains(k.key())) keys += (keys.empty() ? "" : ", ") + k.key();
  // Shown without the parameters at their defaults: the same configs, a line that reads.
  const std::string was = model_without_defaults(*measured).dump(), is = model_without_defaults(mine).dump();
  throw UserError(profile + ": $.compute_models." + name,
                  "measured " + name + " as " + was + "; this run's model is " + is + " (differs in " + keys +
                      "): run workbench calibrate --model '" + is + "'");
}

RunPlan plan_run(const RunSpec& rs) {
  RunPlan p;
  p.run = &rs;
  // A config made in code (tests) may name its algorithm: resolved to its object form first.
  const json& a = rs.cfg.algorithm.value();
  const json resolved = a.is_object() ? a : algo::algorithm_registry().resolve(a, core::Where{"", "$.algorithm"});
  p.algorithm = algo::algorithm_registry().create(resolved);
  p.budget.samples_per_step = p.algorithm->samples_per_step(rs.cfg);
  return p;
}

// Derived counts: a step's samples (the algorithm's: W x batch_size, or a mega-batch) and a
// `steps` budget's samples, before anything is allocated for them.
void check_config(const Experiment& e, const RunPlan& p) {
  const RunSpec& rs = *p.run;
  const train::RunConfig& c = rs.cfg;
  const core::Where w{e.file, "$"};
  try {
    const double per_step = p.budget.samples_per_step;
    const std::string keys = p.algorithm->samples_per_step_keys();
    if (!(per_step <= static_cast<double>(train::kMaxSamplesPerStep)))
      w.key("batch_size").fail("a step of " + c.algorithm.value().value("name", "") + " takes " +
                               keys + " = " + core::fmt_number(per_step) +
                               " samples, above the most a step may hold (" +
                               std::to_string(train::kMaxSamplesPerStep) + ")");
    constexpr double kMaxSamples = 0x1p53;  // the samples counter, exact in the epoch's double
    if (c.steps > 0 && !(static_cast<double>(c.steps) * per_step <= kMaxSamples))
      w.key("steps").fail("steps x samples per step (" + keys + ") = " + std::to_string(c.steps) +
                          " x " + core::fmt_number(per_step) + " = " +
                          core::fmt_number(static_cast<double>(c.steps) * per_step) +
                          " samples, above the most a run may process (2^53)");
    // The metrics asked for: ones the algorithm can feed (Algorithm::observes_gradients), and
    // their own rules across the run (app/metrics/metric.h). Every run is planned before any
    // trains, so `validate` and `run` refuse them, naming the key, before any training.
    check_metrics_supported(c, *p.algorithm, w);
    // A cost profile prices every step of the run's model: one without a compute entry for
    // it is refused now, not at that run's first step after earlier runs trained.
    if (!c.clock.profile.empty()) {
      const json& m = rs.resolved_at("model");
      const std::string model = m.is_object() ? m.value("name", "") : m.is_string() ? m.get<std::string>() : "";
      try {
        sim::check_profile_compute(c.clock.profile, model);
        check_profile_model(c.clock.profile, m);
      } catch (const UserError& pe) {
        w.key("clock").key("profile").fail(pe.what());
      }
    }
  } catch (const UserError& ue) {
    throw at_run(e.file, rs, ue);  // the sweep entry (or base key) the user changes
  }
}

std::vector<RunPlan> plan_runs(const Experiment& e) {
  std::vector<RunPlan> plans;
  plans.reserve(e.runs.size());
  for (const RunSpec& rs : e.runs) {
    plans.push_back(plan_run(rs));
    check_config(e, plans.back());
  }
  return plans;
}

RunBudget plan_budget(const RunPlan& p, size_t train_set_size, const core::Where& w) {
  const train::RunConfig& c = p.run->cfg;
  RunBudget b;
  b.samples_per_step = p.budget.samples_per_step;
  b.validation = validation_count(train_set_size, c.metrics.validation_fraction);
  b.train_size = train_set_size - b.validation;
  b.steps = train::budget_steps(c, b.train_size, b.samples_per_step, w);
  return b;
}

void plan_data(RunPlan& p, const models::Task& t, const Experiment* checks) {
  const train::RunConfig& c = p.run->cfg;
  const models::Model& m = *t.model;
  const size_t N = training_samples(c, t.train->size());
  p.budget.train_size = N;
  p.budget.validation = t.train->size() - N;
  p.opt_floats = optimizer_floats(c, m);
  // The sizes the algorithm's footprint is made of, for this run's batch_size; the
  // algorithm states what its setup() and step() allocate, the planner only adds up.
  const int Bi = static_cast<int>(std::min<int64_t>(c.batch_size, INT32_MAX));
  algo::FootprintInputs in;
  in.n = m.num_params();
  in.tensors = m.tensors().size();
  in.train_size = static_cast<double>(t.train->size());
  in.batch_bytes = static_cast<double>(batch_bytes(*t.train, Bi));
  in.workspace_bytes = static_cast<double>(m.workspace_bytes(Bi));
  in.opt_floats = p.opt_floats;
  p.footprint = p.algorithm->footprint(c, in);
  p.classes = class_count(*t.train);
  if (checks) {
    check_shards_of(*checks, p, t);
    check_partition_of(*checks, p, t);
  }
  p.budget = plan_budget(p, t.train->size(), core::Where{checks ? checks->file : "", "$.base"});
  p.results_bytes = results_bytes(p, m);
}

MemoryEstimate plan_memory(const RunPlan& p, const models::Task& t, int ranks) {
  const train::RunConfig& c = p.run->cfg;
  const models::Model& m = *t.model;
  const size_t n = m.num_params(), N = t.train->size();
  const int B = static_cast<int>(c.batch_size);
  const int64_t R = std::max<int64_t>(1, std::min<int64_t>(ranks, c.workers));
  MemoryEstimate e;
  e.workers_per_rank = std::ceil(static_cast<double>(c.workers) / static_cast<double>(R));
  double floats = 2.0 * static_cast<double>(n) + static_cast<double>(p.opt_floats) +
                  p.algorithm->state_floats_per_worker(c, n, p.opt_floats);
  floats += metric_floats_per_worker(c.metrics, m);  // metrics' gradient copies
  const algo::Footprint& am = p.footprint;
  e.state_per_worker = sizeof(float) * floats +
                       sizeof(uint32_t) * (static_cast<double>(B) +  // last batch's indices
                                           static_cast<double>(N) / static_cast<double>(c.workers)) +
                       am.per_worker;
  e.data = static_cast<double>(t.train->bytes() + (t.test ? t.test->bytes() : 0));
  e.scratch = static_cast<double>(m.workspace_bytes(B) + batch_bytes(*t.train, B));
  if (t.test)
    e.scratch += static_cast<double>(m.workspace_bytes(kEvalChunk) + batch_bytes(*t.test, kEvalChunk));
  e.algorithm = am.shared;
  e.results = p.results_bytes;
  // Which key moves the total most (for the refusal's JSON path): the results, the key the
  // algorithm names as driving its bytes per worker, else the workers.
  const double driven = e.workers_per_rank * am.dominant_per_worker;
  if (MemoryEstimate::kResultCopies * e.results > 0.5 * e.total()) e.dominant = "log_every";
  else if (!am.dominant_key.empty() && driven > 0.5 * e.total()) e.dominant = am.dominant_key;
  else e.dominant = "workers";
  return e;
}

RunPlan plan_single(const RunSpec& rs, const models::Task& t) {
  RunPlan p = plan_run(rs);
  Experiment solo;  // messages name the run: "run <id>: $.base.workers"
  solo.file = "run " + rs.id;
  plan_data(p, t, &solo);
  return p;
}

MemoryEstimate estimate_memory(const train::RunConfig& c, const models::Task& t, int ranks) {
  RunSpec rs;
  rs.cfg = c;
  RunPlan p = plan_run(rs);
  plan_data(p, t);
  return plan_memory(p, t, ranks);
}

double estimate_results_bytes(const train::RunConfig& c, const models::Task& t) {
  RunSpec rs;
  rs.cfg = c;
  RunPlan p = plan_run(rs);
  plan_data(p, t);
  return p.results_bytes;
}

std::string describe_memory(const MemoryEstimate& m) {
  char buf[400];
  const double MB = 1e6;
  std::string extra;
  if (m.algorithm > 0.5 * MB) extra += " + algorithm " + fmt_mb(m.algorithm);
  if (m.results > 0.5 * MB)
    extra += " + results " + fmt_mb(MemoryEstimate::kResultCopies * m.results);
  std::snprintf(buf, sizeof buf,
                "~%s per rank (%.0f workers x %.3g MB + data %.0f MB + scratch %.0f MB%s + "
                "program %.0f MB)",
                fmt_mb(m.total()).c_str(), m.workers_per_rank,
                (m.state_per_worker + MemoryEstimate::kWorkerObject) / MB,
                m.data / MB, m.scratch / MB, extra.c_str(), MemoryEstimate::kProgram / MB);
  return buf;
}

size_t validation_count(size_t N, double fraction) {
  return fraction > 0 ? static_cast<size_t>(std::floor(static_cast<double>(N) * fraction)) : 0;
}

size_t training_samples(const train::RunConfig& c, size_t N) {
  return N - validation_count(N, c.metrics.validation_fraction);
}

}  // namespace wb::app
