#include "app/metrics/metric.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace wb::app {

MetricRegistry& metric_registry() {
  static MetricRegistry r;
  return r;
}

void MetricRegistry::add(MetricEntry e) {
  if (const MetricEntry* old = find(e.name)) {
    std::fprintf(stderr, "workbench: duplicate metric \"%s\" registered at %s:%d and %s:%d\n",
                 e.name.c_str(), old->file.c_str(), old->line, e.file.c_str(), e.line);
    std::abort();
  }
  // Kept sorted by name: static registrars run in an unspecified order across files, and
  // the order of the metrics' keys in a resolved config must not depend on the link.
  auto at = std::find_if(entries_.begin(), entries_.end(),
                         [&](const MetricEntry& x) { return x.name > e.name; });
  entries_.insert(at, std::move(e));
}

const MetricEntry* MetricRegistry::find(const std::string& name) const {
  for (const auto& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

const MetricEntry& MetricRegistry::get(const std::string& name, const core::Where& w) const {
  if (const MetricEntry* e = find(name)) return *e;
  w.fail("unknown metric \"" + name + "\" (known: " + names() + ")");
}

std::string MetricRegistry::names() const {
  std::string s;
  for (const auto& e : entries_) s += (s.empty() ? "" : ", ") + e.name;
  return s;
}

std::function<std::vector<std::string>(const models::Model&)> fixed_columns(
    std::vector<std::string> names) {
  return [names = std::move(names)](const models::Model&) { return names; };
}

std::function<std::vector<std::string>(const models::Model&)> per_tensor_columns(
    std::string extra) {
  return [extra = std::move(extra)](const models::Model& m) {
    std::vector<std::string> v;
    for (const auto& t : m.tensors()) v.push_back(t.name);
    v.push_back(extra);
    return v;
  };
}

std::vector<std::span<float>>& GradientCopies::of(algo::StepContext& ctx) {
  const size_t L = ctx.workers.size(), n = ctx.model.num_params();
  if (scratch_.size() != L) scratch_.assign(L, std::vector<float>(n));
  spans_.clear();
  for (size_t k = 0; k < L; ++k) {
    std::copy(ctx.workers[k].g.begin(), ctx.workers[k].g.end(), scratch_[k].begin());
    spans_.emplace_back(scratch_[k]);
  }
  return spans_;
}

// ---- the run's `metrics` object ---------------------------------------------------------

namespace {

// The evaluation options that sit beside the metrics in `metrics`.
struct MetricsOptions {
  int64_t train_eval_samples = 1000;
  double validation_fraction = 0;
  static void describe(core::ParamSet<MetricsOptions>& p) {
    p.field("train_eval_samples", &MetricsOptions::train_eval_samples,
            "train accuracy/loss on the first min(N_train, this) training samples at every "
            "evaluation point (curves/train_accuracy, train_eval_loss; classification "
            "models); 0 = off")
        .min(0);
    p.field("validation_fraction", &MetricsOptions::validation_fraction,
            "hold back the last fraction of the training set: never trained on, evaluated "
            "at every evaluation point (curves/val_loss, val_accuracy); 0 = off")
        .min(0)
        .max(0.5);
  }
};

std::string known_keys() {
  std::string s = metric_registry().names();
  const std::string opts = core::params_of<MetricsOptions>().known();
  return s.empty() ? opts : s + ", " + opts;
}

}  // namespace

}  // namespace wb::app

// The run config's `metrics` object (train/run_config.h) is parsed, printed and documented
// here, beside the metric registry; these are train's declarations, so train's namespace.
namespace wb::train {

void parse_value(const json& v, MetricsParams& out, const core::Where& w) {
  if (!v.is_object()) w.fail("expected an object, got " + core::json_type_name(v));
  json options = json::object();
  json named = json::object();
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (core::params_of<app::MetricsOptions>().find(it.key())) {
      options[it.key()] = it.value();
      continue;
    }
    const app::MetricEntry* e = app::metric_registry().find(it.key());
    if (!e) w.key(it.key()).fail("unknown key \"" + it.key() + "\" (known: " + app::known_keys() + ")");
    named[it.key()] = e->resolve(it.value(), w.key(it.key()));
  }
  out.named = std::make_shared<const json>(std::move(named));
  const app::MetricsOptions o = core::params_of<app::MetricsOptions>().parse(options, w);
  out.train_eval_samples = o.train_eval_samples;
  out.validation_fraction = o.validation_fraction;
}

void to_json(json& j, const MetricsParams& m) {
  j = json::object();
  for (const auto& e : app::metric_registry().list()) {
    auto it = m.named->find(e.name);
    j[e.name] =
        it != m.named->end() ? *it : e.resolve(json::object(), core::Where{"<default>", "$"});
  }
  const json opts =
      core::params_of<app::MetricsOptions>().to_json({m.train_eval_samples, m.validation_fraction});
  for (auto& [k, val] : opts.items()) j[k] = val;
}

std::vector<core::ParamDoc> MetricsParams::docs() {
  std::vector<core::ParamDoc> out;
  for (const auto& e : app::metric_registry().list())
    for (auto d : e.params()) {
      d.name = e.name + "." + d.name;
      out.push_back(d);
    }
  for (const auto& d : core::params_of<app::MetricsOptions>().docs()) out.push_back(d);
  return out;
}

}  // namespace wb::train
