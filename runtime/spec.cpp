#include "runtime/spec.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "algorithms/algorithm.h"
#include "models/model.h"
#include "runtime/train/compute_device.h"
#include "runtime/train/optimizer.h"
#include "runtime/train/run_facts.h"
#include "runtime/train/schedule.h"

namespace wb::rt {

void parse_value(const json& v, AlgorithmRef& out, const Where& w) {
  out.value = algo::algorithm_registry().resolve(v, w);
}
void parse_value(const json& v, ModelRef& out, const Where& w) {
  out.value = models::model_registry().resolve(v, w);
}
void parse_value(const json& v, OptimizerRef& out, const Where& w) {
  out.value = optimizer_registry().resolve(v, w);
}
void parse_value(const json& v, ScheduleRef& out, const Where& w) {
  out.value = schedule_registry().resolve(v, w);
}

void parse_value(const json& v, WorkerCount& out, const Where& w) {
  if (v.is_string() && v.get<std::string>() == "all") {
    out.k = 0;
    return;
  }
  if (!v.is_number_integer() || v.get<int64_t>() < 1)
    w.fail("expected \"all\" or an integer >= 1, got " + json_type_name(v));
  out.k = v.get<int64_t>();
}
void to_json(json& j, const WorkerCount& c) { j = c.k == 0 ? json("all") : json(c.k); }

void RunConfig::describe(ParamSet<RunConfig>& p) {
  p.field("algorithm", &RunConfig::algorithm,
          "algorithm name or {\"name\": ..., params} (see `workbench list`)");
  p.field("model", &RunConfig::model, "model (+ its data) name or {\"name\": ..., params}");
  p.field("optimizer", &RunConfig::optimizer, "per-worker optimizer name or object");
  p.field("schedule", &RunConfig::schedule, "learning-rate schedule name or object");
  p.field("device", &RunConfig::device,
          "where the training/evaluation passes run: cpu, or cuda (one GPU per MPI rank, "
          "chosen by local rank; parameters and communication stay on the host)")
      .one_of({"cpu", "cuda"});
  p.field("workers", &RunConfig::workers, "logical workers W (independent of MPI ranks)")
      .min(1)
      .max(1 << 20);
  p.field("batch_size", &RunConfig::batch_size, "samples per worker per step").min(1);
  p.field("lr", &RunConfig::lr, "base learning rate").positive();
  p.field("steps", &RunConfig::steps, "budget in global steps; 0 = use epochs").min(0);
  p.field("epochs", &RunConfig::epochs, "budget in epochs of the training set (if steps = 0)")
      .positive();
  p.field("seed", &RunConfig::seed, "seed of init, data order, dropout (same seed, same curves)")
      .min(0);
  p.field("log_every", &RunConfig::log_every, "record a curve point every N steps").min(1);
  p.field("eval_every", &RunConfig::eval_every,
          "test loss/accuracy every N steps; 0 = at the end only")
      .min(0);
  p.field("max_loss", &RunConfig::max_loss,
          "a training loss above this marks the run diverged; 0 = only NaN/Inf")
      .min(0);
  p.field("converge", &RunConfig::converge, "early stop on a zero update");
  p.field("clock", &RunConfig::clock, "simulated-clock cost model");
  p.field("heterogeneity", &RunConfig::heterogeneity,
          "per-worker speed factors and jitter for the simulated clock");
  p.field("metrics", &RunConfig::metrics, "diagnostics logged to /runs/<id>/metrics");
}

RunConfig parse_run_config(const json& j, const Where& w, json* resolved) {
  RunConfig c = params_of<RunConfig>().parse(j, w);
  // Defaults of polymorphic fields are bare names: resolve them to the full object form.
  if (!c.algorithm.value.is_object()) parse_value(json(c.algorithm.value), c.algorithm, w.key("algorithm"));
  if (!c.model.value.is_object()) parse_value(json(c.model.value), c.model, w.key("model"));
  if (!c.optimizer.value.is_object()) parse_value(json(c.optimizer.value), c.optimizer, w.key("optimizer"));
  if (!c.schedule.value.is_object()) parse_value(json(c.schedule.value), c.schedule, w.key("schedule"));
  if (c.device != "cpu") {
    const ComputeBackend* b = find_compute_backend(c.device);
    if (!b)
      w.key("device").fail(
          "this workbench was built without " + c.device +
          " support (CUDA needs nvcc at configure time: cmake -DWORKBENCH_CUDA=ON); "
          "`workbench --version` lists the devices of this build");
    const std::string model = c.model.value.value("name", "");
    if (!b->supports(model))
      w.key("device").fail("model \"" + model + "\" has no " + c.device +
                           " implementation (" + c.device + " runs " + b->supported_models() +
                           "); use \"device\": \"cpu\"");
  }
  if (resolved) *resolved = params_of<RunConfig>().to_json(c);
  return c;
}

int64_t total_steps(const RunConfig& c, size_t train_size) {
  if (c.steps > 0) return c.steps;
  // Planning (validation, rank groups) has no algorithm yet: the algorithm says how many
  // samples a step takes (a mega-batch for Adaptive SGD). The runner asks the one it runs.
  const auto& reg = algo::algorithm_registry();
  const json algo = c.algorithm.value.is_object() ? c.algorithm.value
                                                  : reg.resolve(c.algorithm.value, Where{"", "$.algorithm"});
  return budget_steps(c, train_size, reg.create(algo)->samples_per_step(c));
}

namespace {

std::pair<int, int> line_col(const std::string& text, size_t byte) {
  int line = 1, col = 1;
  for (size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

std::vector<std::string> split_dots(const std::string& k) {
  std::vector<std::string> out;
  std::stringstream ss(k);
  std::string part;
  while (std::getline(ss, part, '.')) out.push_back(part);
  return out;
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

}  // namespace

Experiment parse_experiment(const std::string& text, const std::string& file) {
  Experiment e;
  e.file = file;
  json raw;
  try {
    raw = json::parse(text);
  } catch (const json::parse_error& pe) {
    auto [line, col] = line_col(text, pe.byte == 0 ? 0 : pe.byte - 1);
    std::string msg = pe.what();
    // nlohmann: "[json.exception.parse_error.101] parse error at line L, column C: what"
    auto pos = msg.find("column");
    if (pos != std::string::npos && msg.find(": ", pos) != std::string::npos)
      msg = msg.substr(msg.find(": ", pos) + 2);
    throw UserError(file + ":" + std::to_string(line) + ":" + std::to_string(col),
                    "malformed JSON: " + msg);
  } catch (const json::exception& je) {
    // The parser also throws out_of_range.406 for a number too large for a double
    // ("number overflow parsing '1e999'"); it has no byte offset, so locate the quoted
    // token in the text (found by fuzz_spec: it escaped as an internal error).
    std::string msg = je.what();
    if (auto p = msg.find("] "); p != std::string::npos) msg = msg.substr(p + 2);
    std::string where = file;
    const size_t q0 = msg.find('\''), q1 = msg.rfind('\'');
    if (q0 != std::string::npos && q1 > q0 + 1) {
      if (size_t at = text.find(msg.substr(q0 + 1, q1 - q0 - 1)); at != std::string::npos) {
        auto [line, col] = line_col(text, at);
        where += ":" + std::to_string(line) + ":" + std::to_string(col);
      }
    }
    throw UserError(where, "malformed JSON: " + msg);
  }
  // Nesting depth: parsing is iterative, but copying or printing a json value recurses
  // once per level, so a spec nested thousands deep overflowed the stack (fuzz_spec under
  // ASan, 32000 levels). A real spec is 5 levels deep; the text is valid JSON here, so
  // a plain scan that skips strings counts the levels exactly.
  constexpr int kMaxDepth = 64;
  {
    int depth = 0;
    bool in_string = false, escaped = false;
    for (size_t i = 0; i < text.size(); ++i) {
      const char c = text[i];
      if (in_string) {
        if (escaped) escaped = false;
        else if (c == '\\') escaped = true;
        else if (c == '"') in_string = false;
      } else if (c == '"') {
        in_string = true;
      } else if (c == '[' || c == '{') {
        if (++depth > kMaxDepth) {
          auto [line, col] = line_col(text, i);
          throw UserError(file + ":" + std::to_string(line) + ":" + std::to_string(col),
                          "malformed JSON: nested deeper than " + std::to_string(kMaxDepth) +
                              " levels of objects/lists");
        }
      } else if (c == ']' || c == '}') {
        --depth;
      }
    }
  }
  const Where root{file, "$"};
  if (!raw.is_object()) root.fail("expected an object with \"name\" and \"base\"");
  static const std::set<std::string> kTop = {"name", "description", "output", "base", "sweep"};
  for (auto it = raw.begin(); it != raw.end(); ++it)
    if (!kTop.count(it.key()))
      root.key(it.key()).fail("unknown key \"" + it.key() +
                              "\" (known: name, description, output, base, sweep)");
  if (!raw.contains("name")) root.fail("missing key \"name\"");
  parse_value(raw["name"], e.name, root.key("name"));
  if (e.name.empty() || e.name.find('/') != std::string::npos)
    root.key("name").fail("must be a non-empty name without '/'");
  if (raw.contains("description"))
    parse_value(raw["description"], e.description, root.key("description"));
  if (raw.contains("output")) parse_value(raw["output"], e.output, root.key("output"));
  if (!raw.contains("base")) root.fail("missing key \"base\" (the run config)");
  e.raw = raw;

  json base_resolved;
  RunConfig base = parse_run_config(raw["base"], root.key("base"), &base_resolved);

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
    const Where ws = root.key("sweep");
    if (!sw.is_object()) ws.fail("expected an object {\"dotted.key\": [values...]}");
    std::set<std::string> swept;
    for (auto it = sw.begin(); it != sw.end(); ++it) {
      const Where wk = ws.key(it.key());
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
        // Each key must name a field of the resolved run config, and be swept once.
        if (k.empty()) wk.fail("empty key in \"" + it.key() + "\" (link keys as \"a+b\")");
        const json* node = &base_resolved;
        for (const auto& part : split_dots(k)) {
          if (!node->is_object() || !node->contains(part))
            wk.fail("no such key \"" + k + "\" in the run config (see `workbench list`)");
          node = &(*node)[part];
        }
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
  std::vector<size_t> pick(axes.size(), 0);
  for (size_t r = 0; r < total; ++r) {
    // Mixed radix: the first sweep key varies slowest.
    size_t rem = r;
    for (size_t a = axes.size(); a-- > 0;) {
      pick[a] = rem % axes[a].values.size();
      rem /= axes[a].values.size();
    }
    json cfg = base_resolved;
    std::string id;
    for (size_t a = 0; a < axes.size(); ++a) {
      const json& picked = axes[a].values[pick[a]];
      for (size_t j = 0; j < axes[a].keys.size(); ++j) {
        const json& v = axes[a].keys.size() > 1 ? picked[j] : picked;
        json* node = &cfg;
        auto parts = split_dots(axes[a].keys[j]);
        for (size_t i = 0; i + 1 < parts.size(); ++i) node = &(*node)[parts[i]];
        (*node)[parts.back()] = v;
        id += (id.empty() ? "" : ",") + labels[a][j] + "=" + value_label(v);
      }
    }
    if (axes.empty()) id = "base";
    RunSpec rs;
    rs.id = id;
    rs.index = static_cast<int>(r);
    try {
      rs.cfg = parse_run_config(cfg, Where{file, "$"}, &rs.resolved);
    } catch (const UserError& ue) {
      // Attribute the error to the sweep value that produced it.
      std::string path = ue.where.substr(ue.where.find(": ") == std::string::npos
                                             ? 0
                                             : ue.where.find(": ") + 2);
      std::string where = file + ": $.base" + path.substr(1) + " (run " + id + ")";
      auto sweep_path = [&]() -> std::string {
        for (size_t a = 0; a < axes.size(); ++a)
          for (size_t j = 0; j < axes[a].keys.size(); ++j) {
            const std::string p = "$." + axes[a].keys[j];
            if (path == p || path.rfind(p + ".", 0) == 0 || path.rfind(p + "[", 0) == 0) {
              std::string at = path_index(path_key("$.sweep", axes[a].raw), pick[a]);
              if (axes[a].keys.size() > 1) at = path_index(at, j);
              return at + path.substr(p.size());
            }
          }
        return "";
      };
      const std::string at = sweep_path();
      if (!at.empty()) where = file + ": " + at;
      throw UserError(where, ue.detail);
    }
    if (!seen.insert(rs.id).second)
      root.key("sweep").fail("two runs get the same id \"" + rs.id + "\" (duplicate values?)");
    e.runs.push_back(std::move(rs));
  }
  (void)base;
  return e;
}

Experiment load_experiment(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw UserError(path, "no such file");
  if (std::filesystem::is_directory(path, ec)) throw UserError(path, "is a directory, expected a JSON file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path, "cannot open for reading");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_experiment(ss.str(), path);
}

}  // namespace wb::rt
