#include "app/experiment/sweep_expansion.h"

#include "app/experiment/run_config_json.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <set>
#include <sstream>
#include <unordered_map>

namespace wb::app {

namespace {

// Every part, empty ones included: "lr." is "lr" and "" (no such key), not "lr".
std::vector<std::string> split_dots(const std::string& k) {
  std::vector<std::string> out;
  size_t s = 0;
  for (;;) {
    const size_t e = k.find('.', s);
    out.push_back(k.substr(s, e == std::string::npos ? std::string::npos : e - s));
    if (e == std::string::npos) break;
    s = e + 1;
  }
  return out;
}

// A config's text for "same config?": -0.0 is 0.0 (they compare equal and train alike).
std::string config_key(json j) {
  std::function<void(json&)> norm = [&](json& v) {
    if (v.is_number_float() && v.get<double>() == 0.0) v = 0.0;
    else if (v.is_structured())
      for (auto& c : v) norm(c);
  };
  norm(j);
  return j.dump();
}

std::string value_label(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object()) {
    std::string s = v.contains("name") && v["name"].is_string() ? v["name"].get<std::string>() : "";
    std::string inner;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (it.key() == "name") continue;
      inner += (inner.empty() ? "" : ",") + it.key() + "=" + value_label(it.value());
    }
    return inner.empty() ? s : s + "{" + inner + "}";
  }
  return v.dump();
}

// A run id is the name of its HDF5 group (/runs/<id>) and must be a valid link name for
// any swept value (a '/' in model.data_dir failed H5Gcreate2 after
// training). '/' (the HDF5 path separator), '%' (so that the escaping stays one-to-one:
// ids stay unique) and control characters are percent-encoded as %XX; every other byte is
// kept, so the ids of ordinary values ("lr=0.01,workers=4") do not change. An id always
// holds '=', so it is never "." either.
std::string hdf5_safe_id(const std::string& id) {
  std::string out;
  for (unsigned char ch : id) {
    if (ch == '/' || ch == '%' || ch < 0x20 || ch == 0x7F) {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", ch);
      out += buf;
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out;
}

// Whether a resolved config value `actual` is the swept value `named`: numbers compare as
// numbers (1 and 1.0), a name names a polymorphic object ("cubic" and {"name": "cubic", ...}),
// an object's keys each hold.
bool holds(const json& actual, const json& named) {
  if (named.is_number()) return actual.is_number() && actual.get<double>() == named.get<double>();
  if (named.is_string())
    return (actual.is_string() && actual == named) ||
           (actual.is_object() && actual.contains("name") && actual["name"] == named);
  if (named.is_object()) {
    if (!actual.is_object()) return false;
    for (auto it = named.begin(); it != named.end(); ++it)
      if (!actual.contains(it.key()) || !holds(actual[it.key()], it.value())) return false;
    return true;
  }
  if (named.is_array()) {
    if (!actual.is_array() || actual.size() != named.size()) return false;
    for (size_t i = 0; i < named.size(); ++i)
      if (!holds(actual[i], named[i])) return false;
    return true;
  }
  return actual == named;
}

}  // namespace

UserError at_run(const std::string& file, const RunSpec& rs, const UserError& ue) {
  std::string path = ue.where.substr(ue.where.find(": ") == std::string::npos
                                         ? 0
                                         : ue.where.find(": ") + 2);
  std::string where = file + ": $.base" + path.substr(1) + (rs.swept.empty() ? "" : " (run " + rs.id + ")");
  for (const SweptKey& sk : rs.swept) {
    const std::string p = "$." + sk.key;
    if (path == p || path.rfind(p + ".", 0) == 0 || path.rfind(p + "[", 0) == 0)
      return UserError(file + ": " + sk.path + path.substr(p.size()), ue.detail);
  }
  return UserError(where, ue.detail);
}

namespace {
template <int K>
void share(train::NamedRef<K>& ref, std::unordered_map<std::string, train::NamedRef<K>>& pool) {
  auto [it, fresh] = pool.emplace(ref.value().dump(), ref);
  if (!fresh) ref = it->second;
}
}  // namespace

void expand_sweep(Experiment& e, const json& base_resolved) {
  const std::string& file = e.file;
  const json& raw = e.raw;
  const core::Where root{file, "$"};
  // Sweep: ordered axes -> non-empty lists. An axis is one dotted key ("lr": [...]) or
  // several keys linked with '+' whose values move together ("algorithm+lr": [["adasum",
  // 0.1], ["sync_sgd", 0.05]]): a zip inside the cartesian product of the axes, for tuned
  // per-algorithm learning rates and the like.
  struct Axis {
    std::string raw;                // the sweep key as written
    std::vector<std::string> keys;  // its dotted keys (one unless linked)
    json values;
  };
  std::vector<Axis> axes;
  if (raw.contains("sweep")) {
    const json& sw = raw["sweep"];
    const core::Where ws = root.key("sweep");
    if (!sw.is_object()) ws.fail("expected an object {\"dotted.key\": [values...]}");
    std::set<std::string> swept;
    for (auto it = sw.begin(); it != sw.end(); ++it) {
      const core::Where wk = ws.key(it.key());
      Axis ax{it.key(), {}, it.value()};
      for (size_t a = 0, b = 0; b <= it.key().size(); ++b)
        if (b == it.key().size() || it.key()[b] == '+') {
          ax.keys.push_back(it.key().substr(a, b - a));
          a = b + 1;
        }
      if (!ax.values.is_array() || ax.values.empty())
        wk.fail(ax.keys.size() > 1 ? "expected a non-empty list of [" + std::to_string(ax.keys.size()) +
                                         " values] lists, one value per linked key"
                                   : std::string("expected a non-empty list of values"));
      for (const auto& k : ax.keys) {
        if (k.empty()) wk.fail("empty key in \"" + it.key() + "\" (link keys as \"a+b\")");
        if (!swept.insert(k).second) wk.fail("key \"" + k + "\" is swept twice");
      }
      if (ax.keys.size() > 1)
        for (size_t i = 0; i < ax.values.size(); ++i)
          if (!ax.values[i].is_array() || ax.values[i].size() != ax.keys.size())
            wk.index(i).fail("expected a list of " + std::to_string(ax.keys.size()) +
                             " values, one per linked key (" + it.key() + "), got " +
                             ax.values[i].dump());
      axes.push_back(std::move(ax));
    }
  }

  // Each key must name a field of the resolved run config. A key inside a swept key
  // ("model.x_max" with "model" swept) is checked per run, against each value of its parent.
  auto swept_parent = [&](const std::string& k) -> const Axis* {
    for (const auto& ax : axes)
      for (const auto& k2 : ax.keys)
        if (k.size() > k2.size() && k.compare(0, k2.size(), k2) == 0 && k[k2.size()] == '.') return &ax;
    return nullptr;
  };
  for (const auto& ax : axes)
    for (const auto& k : ax.keys) {
      if (swept_parent(k)) continue;
      const json* node = &base_resolved;
      for (const auto& part : split_dots(k)) {
        if (!node->is_object() || !node->contains(part))
          root.key("sweep").key(ax.raw).fail("no such key \"" + k +
                                             "\" in the run config (see `workbench list`)");
        node = &(*node)[part];
      }
    }

  // Short labels for run ids: last component of the dotted key when unambiguous.
  std::vector<std::vector<std::string>> labels;
  for (const auto& ax : axes) {
    labels.emplace_back();
    for (const auto& k : ax.keys) {
      const std::string last = split_dots(k).back();
      int same = 0;
      for (const auto& ax2 : axes)
        for (const auto& k2 : ax2.keys) same += split_dots(k2).back() == last;
      labels.back().push_back(same > 1 ? k : last);
    }
  }

  // Overflow-checked product: with many axes it could wrap around size_t to 0 (8 lists
  // of 256 values: 2^64) and silently give an experiment with no runs.
  size_t total = 1;
  bool wrapped = false;
  for (const auto& ax : axes) wrapped |= __builtin_mul_overflow(total, ax.values.size(), &total);
  if (wrapped || total > 100000)
    root.key("sweep").fail("expands to " + (wrapped ? "over 2^64" : std::to_string(total)) +
                           " runs (max 100000)");
  std::set<std::string> seen;
  std::unordered_map<size_t, size_t> by_config;  // hash of a resolved config -> a run with it
  std::vector<size_t> pick(axes.size(), 0);
  // Runs keep only the top-level fields their sweep changed (RunSpec::set_resolved).
  const auto shared_base = std::make_shared<const json>(base_resolved);
  // Runs whose algorithm (model, ...) resolves to the same object share one copy of it.
  std::unordered_map<std::string, train::AlgorithmRef> shared_algorithms;
  std::unordered_map<std::string, train::ModelRef> shared_models;
  std::unordered_map<std::string, train::OptimizerRef> shared_optimizers;
  std::unordered_map<std::string, train::ScheduleRef> shared_schedules;
  std::unordered_map<std::string, train::PartitionRef> shared_partitions;
  std::unordered_map<std::string, std::shared_ptr<const json>> shared_metrics;
  e.runs.reserve(total);
  for (size_t r = 0; r < total; ++r) {
    // Mixed radix: the first sweep key varies slowest.
    size_t rem = r;
    for (size_t a = axes.size(); a-- > 0;) {
      pick[a] = rem % axes[a].values.size();
      rem /= axes[a].values.size();
    }
    std::string id;
    std::vector<SweptKey> swept;
    struct Assign {
      std::string key;
      const json* value;
      size_t axis;
      size_t depth;
    };
    std::vector<Assign> assigns;
    for (size_t a = 0; a < axes.size(); ++a) {
      const json& picked = axes[a].values[pick[a]];
      for (size_t j = 0; j < axes[a].keys.size(); ++j) {
        const json& v = axes[a].keys.size() > 1 ? picked[j] : picked;
        std::string at = core::path_index(core::path_key("$.sweep", axes[a].raw), pick[a]);
        if (axes[a].keys.size() > 1) at = core::path_index(at, j);
        swept.push_back(SweptKey{axes[a].keys[j], at, v.is_object()});
        assigns.push_back(Assign{axes[a].keys[j], &v, a, split_dots(axes[a].keys[j]).size()});
        id += (id.empty() ? "" : ",") + labels[a][j] + "=" + value_label(v);
      }
    }
    if (axes.empty()) id = "base";
    id = hdf5_safe_id(id);
    RunSpec rs;
    json resolved;
    rs.id = id;
    rs.index = static_cast<int>(r);
    rs.swept = std::move(swept);
    try {
      // A key is applied after every key it lies inside, whatever the sweep order: "model"
      // then "model.x_max" (sweep order only decides the run ids and the run order). A
      // swept polymorphic value given by name ("cubic") is resolved to its object form
      // (every parameter, defaults included) before its sub-keys are set in it.
      std::stable_sort(assigns.begin(), assigns.end(),
                       [](const Assign& x, const Assign& y) { return x.depth < y.depth; });
      json cfg = base_resolved;
      size_t normalized = 1;  // every key shallower than this depth is in object form
      for (const Assign& as : assigns) {
        const Axis* parent = swept_parent(as.key);
        if (parent && as.depth > normalized) {
          json norm;
          parse_run_config(cfg, core::Where{file, "$"}, &norm, false);
          cfg = std::move(norm);
          normalized = as.depth;
        }
        const auto parts = split_dots(as.key);
        json* node = &cfg;
        for (size_t i = 0; i + 1 < parts.size(); ++i) {
          if (!node->is_object() || !node->contains(parts[i])) node = nullptr;
          if (!node) break;
          node = &(*node)[parts[i]];
        }
        const bool found = node && node->is_object() && node->contains(parts.back());
        if (parent) {
          // The parent's entry for this run, and what it set.
          const SweptKey* pk = nullptr;
          for (const SweptKey& sk : rs.swept)
            if (as.key.size() > sk.key.size() && as.key.compare(0, sk.key.size(), sk.key) == 0 &&
                as.key[sk.key.size()] == '.' && (!pk || sk.key.size() > pk->key.size()))
              pk = &sk;
          const json* pv = nullptr;
          for (const Assign& o : assigns)
            if (pk && o.key == pk->key) pv = o.value;
          const core::Where wk = root.key("sweep").key(axes[as.axis].raw);
          const std::string both = " (the sweep sets \"" + as.key + "\" inside the swept \"" +
                                   pk->key + "\", whose value " + pk->path + " is " +
                                   (pv ? pv->dump() : std::string("?")) + ")";
          if (!found)
            wk.fail("\"" + as.key.substr(pk->key.size() + 1) + "\" is not a key of " +
                    (pv ? value_label(*pv) : pk->key) + both +
                    ": a key swept inside a swept key must apply to each of its values; sweep "
                    "whole objects instead");
          // An object value that sets the key itself would contradict the run id.
          const json* inner = pv;
          const auto rel = split_dots(as.key.substr(pk->key.size() + 1));
          for (size_t i = 0; inner && i < rel.size(); ++i)
            inner = inner->is_object() && inner->contains(rel[i]) ? &(*inner)[rel[i]] : nullptr;
          if (inner)
            wk.fail("sets a key that the swept value also sets" + both +
                    ": set it in one place only");
        } else if (!found) {
          root.key("sweep").key(axes[as.axis].raw).fail("no such key \"" + as.key +
                                                        "\" in the run config (see `workbench list`)");
        }
        (*node)[parts.back()] = *as.value;
      }
      rs.cfg = parse_run_config(cfg, core::Where{file, "$"}, &resolved);
      share(rs.cfg.algorithm, shared_algorithms);
      share(rs.cfg.model, shared_models);
      share(rs.cfg.optimizer, shared_optimizers);
      share(rs.cfg.schedule, shared_schedules);
      share(rs.cfg.partition, shared_partitions);
      if (auto [it, fresh] = shared_metrics.emplace(rs.cfg.metrics.named->dump(), rs.cfg.metrics.named); !fresh)
        rs.cfg.metrics.named = it->second;
    } catch (const UserError& ue) {
      if (ue.where.rfind(file + ": $.sweep", 0) == 0) throw;
      throw at_run(file, rs, ue);  // the sweep value (or base key) that produced it
    }
    // Every value the run id names is the value the run uses: a check after expansion, for
    // every run, so that no run is ever labelled with a value it did not run with.
    for (const SweptKey& sk : rs.swept) {
      const json* actual = &resolved;
      for (const auto& part : split_dots(sk.key))
        actual = actual->is_object() && actual->contains(part) ? &(*actual)[part] : nullptr;
      const json* np = nullptr;
      for (const Assign& as : assigns)
        if (as.key == sk.key) np = as.value;
      const json& named = *np;
      if (!actual || !holds(*actual, named))
        throw UserError(file + ": " + sk.path,
                        "run " + rs.id + " is named for " + sk.key + " = " + named.dump() +
                            " but would run with " + (actual ? actual->dump() : "no such key") +
                            " (sweep keys that overwrite each other?)");
    }
    if (!seen.insert(rs.id).second)
      root.key("sweep").fail("two runs get the same id \"" + rs.id + "\" (duplicate values?)");
    // Two ids, one config ("lr": [1, 1.0]): the same run twice under two names.
    {
      const std::string dump = config_key(resolved);
      auto [it, fresh] = by_config.emplace(std::hash<std::string>{}(dump), e.runs.size());
      if (!fresh && config_key(e.runs[it->second].resolved()) == dump)
        root.key("sweep").fail("runs \"" + e.runs[it->second].id + "\" and \"" + rs.id +
                               "\" have the same config (duplicate values such as 1 and 1.0?)");
    }
    rs.set_resolved(std::move(resolved), shared_base);
    e.runs.push_back(std::move(rs));
  }
}

std::string key_path(const Experiment& e, const RunSpec& r, const std::string& key) {
  const std::string run = e.runs.size() > 1 ? " (run " + r.id + ")" : "";
  for (const SweptKey& sk : r.swept) {
    if (key == sk.key) return sk.path + run;
    // A key inside a swept object ("model": [{"name": ..., "train_size": 10}]) is in the entry;
    // inside a swept name ("model": ["lenet5", ...]) it is the entry that chose its default.
    if (key.rfind(sk.key + ".", 0) == 0) return (sk.object ? sk.path + key.substr(sk.key.size()) : sk.path) + run;
  }
  std::string at = "$.base";
  for (const auto& part : split_dots(key)) at = core::path_key(at, part);
  return at + run;
}

}  // namespace wb::app
