#include "runtime/spec.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "algorithms/algorithm.h"
#include "runtime/core/interrupt.h"
#include "models/model.h"
#include "runtime/diagnostics.h"
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
  const bool ok = v.is_number_unsigned()  ? v.get<uint64_t>() >= 1 && v.get<uint64_t>() <= static_cast<uint64_t>(kMaxWorkers)
                  : v.is_number_integer() ? v.get<int64_t>() >= 1 && v.get<int64_t>() <= kMaxWorkers
                                          : false;
  if (!ok)
    w.fail("expected \"all\" or an integer >= 1 and <= " + std::to_string(kMaxWorkers) + ", got " +
           json_type_name(v));
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
      .max(static_cast<double>(kMaxWorkers));
  p.field("batch_size", &RunConfig::batch_size, "samples per worker per step")
      .min(1)
      .max(static_cast<double>(kMaxSamplesPerStep));
  p.field("lr", &RunConfig::lr, "base learning rate").positive();
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
  // Registry-driven keys (runtime/metric.h): documented like a nested struct's.
  auto& metrics = p.field("metrics", &RunConfig::metrics, "diagnostics logged to /runs/<id>/metrics");
  metrics.is_nested = true;
  metrics.nested_docs = [] { return MetricsParams::docs(); };
}

// Rules across fields of one resolved run, and the counts derived from them (issue 18).
static void check_run_config(const RunConfig& c, const Where& w) {
  // Derived counts (defects 8, 9): a step's samples (the algorithm's: W x batch_size, or a
  // mega-batch) and a `steps` budget's samples, before anything is allocated for them.
  const double per_step = algo::algorithm_registry().create(c.algorithm.value)->samples_per_step(c);
  const json a = c.algorithm.value;
  const std::string keys = a.contains("megabatch") ? "$.algorithm.megabatch x $.batch_size"
                                                   : "$.workers x $.batch_size";
  if (!(per_step <= static_cast<double>(kMaxSamplesPerStep)))
    w.key("batch_size").fail("a step of " + a.value("name", "") + " takes " + keys + " = " +
                             fmt_number(per_step) + " samples, above the most a step may hold (" +
                             std::to_string(kMaxSamplesPerStep) + ")");
  constexpr double kMaxSamples = 0x1p53;  // the samples counter, exact in the epoch's double
  if (c.steps > 0 && !(static_cast<double>(c.steps) * per_step <= kMaxSamples))
    w.key("steps").fail("steps x samples per step (" + keys + ") = " + std::to_string(c.steps) +
                        " x " + fmt_number(per_step) + " = " +
                        fmt_number(static_cast<double>(c.steps) * per_step) +
                        " samples, above the most a run may process (2^53)");
  // A cosine schedule anneals from lr down to min_lr: min_lr > lr would raise the rate.
  const json& sch = c.schedule.value;
  if (sch.value("name", "") == "cosine" && sch.contains("min_lr") &&
      sch["min_lr"].get<double>() > c.lr)
    w.key("schedule").key("min_lr").fail("must be <= lr (" + fmt_number(c.lr) + "), got " +
                                         sch["min_lr"].dump() +
                                         ": cosine annealing goes from lr down to min_lr");
  // The metrics asked for: ones the algorithm can feed, and their own rules across the run.
  check_metrics_supported(c, w);
  // One rule for the schedules' parameters: a value that reverses the direction a schedule
  // is named for is refused (cosine min_lr > lr above; a multistep decay with gamma > 1
  // would grow the rate at each milestone). A warm-up's end_factor is its target and may
  // exceed 1 (warming up to k x lr, Goyal et al., arXiv:1706.02677, section 2.2).
  const std::string sname = sch.value("name", "");
  if ((sname == "multistep" || sname == "warmup_scaled") && sch.contains("gamma") &&
      sch["gamma"].is_number() && sch["gamma"].get<double>() > 1)
    w.key("schedule").key("gamma").fail("must be <= 1, got " + sch["gamma"].dump() +
                                        ": a multistep schedule decays the rate at each milestone");
}

RunConfig parse_run_config(const json& j, const Where& w, json* resolved, bool run_checks) {
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
  if (run_checks) check_run_config(c, w);
  if (resolved) *resolved = params_of<RunConfig>().to_json(c);
  return c;
}

int64_t total_steps(const RunConfig& c, size_t train_size, const Where& w) {
  if (c.steps > 0) return c.steps;
  // Planning (validation, rank groups) has no algorithm yet: the algorithm says how many
  // samples a step takes (a mega-batch for Adaptive SGD). The runner asks the one it runs.
  const auto& reg = algo::algorithm_registry();
  const json algo = c.algorithm.value.is_object() ? c.algorithm.value
                                                  : reg.resolve(c.algorithm.value, Where{"", "$.algorithm"});
  return budget_steps(c, train_size, reg.create(algo)->samples_per_step(c), w);
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

// A string as JSON would write it, control characters (U+0000-U+001F, U+007F) escaped:
// what a message shows of a value that may hold them.
std::string escaped(const std::string& v) {
  std::string out = "\"";
  for (unsigned char ch : v) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += static_cast<char>(ch);
    } else if (ch < 0x20 || ch == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04X", ch);
      out += buf;
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out + "\"";
}

// The spec is UTF-8 text (issue 18, "also decide"): a UTF-16 or Latin-1 file is named as
// such, rather than reported as malformed JSON at its first byte. A UTF-8 byte-order mark
// is allowed (the JSON parser skips it).
void check_utf8(const std::string& text, const std::string& file) {
  auto starts = [&](const char* bom, size_t n) { return text.size() >= n && text.compare(0, n, bom, n) == 0; };
  const char* enc = starts("\xFF\xFE\x00\x00", 4)   ? "UTF-32 (little-endian)"
                    : starts("\x00\x00\xFE\xFF", 4) ? "UTF-32 (big-endian)"
                    : starts("\xFF\xFE", 2)         ? "UTF-16 (little-endian)"
                    : starts("\xFE\xFF", 2)         ? "UTF-16 (big-endian)"
                                                    : nullptr;
  if (enc)
    throw UserError(file, std::string("not UTF-8: the file starts with a ") + enc +
                              " byte-order mark; save the spec as UTF-8");
  const auto* t = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = t[i];
    size_t len = 0;
    uint32_t cp = 0, lo = 0;
    if (c == 0) {
      len = 0;  // a NUL byte: no JSON text has one (UTF-16 has many)
    } else if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1F, lo = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0F, lo = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07, lo = 0x10000;
    }
    bool ok = len > 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) {
      ok = (t[i + k] & 0xC0) == 0x80;
      cp = (cp << 6) | (t[i + k] & 0x3F);
    }
    // Overlong forms, UTF-16 surrogates and code points above U+10FFFF are not UTF-8.
    ok = ok && cp >= lo && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    if (!ok) {
      auto [line, col] = line_col(text, i);
      char buf[8];
      std::snprintf(buf, sizeof buf, "0x%02X", c);
      throw UserError(file + ":" + std::to_string(line) + ":" + std::to_string(col),
                      c == 0 ? std::string("not UTF-8: a NUL byte (is the file UTF-16?); save the "
                                           "spec as UTF-8")
                             : std::string("not UTF-8: invalid byte ") + buf +
                                   " (a Latin-1 or other 8-bit encoding?); save the spec as UTF-8");
    }
    i += len;
  }
}

// One pass over the (already parsed, valid, at most kMaxDepth deep) JSON text, for what the
// parsed value no longer shows (issue 18):
//  - duplicate keys: the parser keeps the last one silently; refused as unknown keys are,
//    with both lines;
//  - control characters (U+0000-U+001F, U+007F) in any string, key or value: a NUL cut a
//    name short ("a\u0000b" wrote a file called "a") and messages too.
class TextChecks {
 public:
  TextChecks(const std::string& text, const std::string& file) : t_(text), file_(file) {
    if (t_.compare(0, 3, "\xEF\xBB\xBF") == 0) i_ = 3;  // UTF-8 byte-order mark
  }
  void run() { value("$"); }

 private:
  void ws() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r')) ++i_;
  }
  // At a '"': the decoded string; i_ moves past the closing quote.
  std::string str() {
    const size_t at = i_++;
    while (i_ < t_.size() && t_[i_] != '"') i_ += t_[i_] == '\\' ? 2 : 1;
    ++i_;
    return json::parse(t_.substr(at, i_ - at)).get<std::string>();
  }
  int line(size_t at) const { return line_col(t_, at).first; }
  static bool has_control(const std::string& v) {
    for (unsigned char ch : v)
      if (ch < 0x20 || ch == 0x7F) return true;
    return false;
  }
  [[noreturn]] void control(const std::string& path, const std::string& v, size_t at, bool key) {
    unsigned char bad = 0;
    for (unsigned char ch : v)
      if (ch < 0x20 || ch == 0x7F) {
        bad = ch;
        break;
      }
    char cp[8];
    std::snprintf(cp, sizeof cp, "U+%04X", bad);
    throw UserError(file_ + ": " + path,
                    std::string(key ? "key " : "string ") + escaped(v) + " (line " +
                        std::to_string(line(at)) + ") contains the control character " + cp +
                        ": control characters (U+0000-U+001F, U+007F) are not allowed");
  }
  void value(const std::string& path) {
    ws();
    if (i_ >= t_.size()) return;
    const char c = t_[i_];
    if (c == '{') {
      ++i_;
      std::map<std::string, size_t> seen;
      for (;;) {
        ws();
        if (t_[i_] == '}') break;
        const size_t at = i_;
        const std::string k = str();
        if (has_control(k)) control(path + "[" + escaped(k) + "]", k, at, true);
        const std::string kp = path_key(path, k);
        if (auto [it, fresh] = seen.emplace(k, at); !fresh)
          throw UserError(file_ + ": " + kp,
                          "duplicate key \"" + k + "\" (line " + std::to_string(line(at)) +
                              "; first at line " + std::to_string(line(it->second)) +
                              "): a key may appear once in an object");
        ws();
        ++i_;  // ':'
        value(kp);
        ws();
        if (t_[i_] == ',') ++i_;
      }
      ++i_;
    } else if (c == '[') {
      ++i_;
      for (size_t k = 0;; ++k) {
        ws();
        if (t_[i_] == ']') break;
        value(path_index(path, k));
        ws();
        if (t_[i_] == ',') ++i_;
      }
      ++i_;
    } else if (c == '"') {
      const size_t at = i_;
      const std::string v = str();
      if (has_control(v)) control(path, v, at, false);
    } else {  // number, true, false, null
      while (i_ < t_.size() && std::string_view(",]} \t\n\r").find(t_[i_]) == std::string_view::npos) ++i_;
    }
  }

  const std::string& t_;
  const std::string& file_;
  size_t i_ = 0;
};

// A run id is the name of its HDF5 group (/runs/<id>) and must be a valid link name for
// any swept value (issue 18, defect 7: a '/' in model.data_dir failed H5Gcreate2 after
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

Experiment parse_experiment(const std::string& text, const std::string& file) {
  Experiment e;
  e.file = file;
  check_utf8(text, file);
  json raw;
  try {
    // Parsing a large spec takes seconds: it answers a signal (checked every 64k events).
    size_t events = 0;
    raw = json::parse(text, [&events](int, json::parse_event_t, json&) {
      if ((++events & 0xFFFF) == 0) throw_if_interrupted();
      return true;
    });
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
  TextChecks(text, file).run();
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
  // The base's cross-field rules are checked per run (below): a sweep may replace its values.
  RunConfig base = parse_run_config(raw["base"], root.key("base"), &base_resolved, false);

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
        std::string at = path_index(path_key("$.sweep", axes[a].raw), pick[a]);
        if (axes[a].keys.size() > 1) at = path_index(at, j);
        swept.push_back(SweptKey{axes[a].keys[j], at, v.is_object()});
        assigns.push_back(Assign{axes[a].keys[j], &v, a, split_dots(axes[a].keys[j]).size()});
        id += (id.empty() ? "" : ",") + labels[a][j] + "=" + value_label(v);
      }
    }
    if (axes.empty()) id = "base";
    id = hdf5_safe_id(id);
    RunSpec rs;
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
          parse_run_config(cfg, Where{file, "$"}, &norm, false);
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
          const Where wk = root.key("sweep").key(axes[as.axis].raw);
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
      rs.cfg = parse_run_config(cfg, Where{file, "$"}, &rs.resolved);
    } catch (const UserError& ue) {
      if (ue.where.rfind(file + ": $.sweep", 0) == 0) throw;
      // Attribute the error to the sweep value that produced it.
      std::string path = ue.where.substr(ue.where.find(": ") == std::string::npos
                                             ? 0
                                             : ue.where.find(": ") + 2);
      std::string where = file + ": $.base" + path.substr(1) + (axes.empty() ? "" : " (run " + id + ")");
      auto sweep_path = [&]() -> std::string {
        for (const SweptKey& sk : rs.swept) {
          const std::string p = "$." + sk.key;
          if (path == p || path.rfind(p + ".", 0) == 0 || path.rfind(p + "[", 0) == 0)
            return sk.path + path.substr(p.size());
        }
        return "";
      };
      const std::string at = sweep_path();
      if (!at.empty()) where = file + ": " + at;
      throw UserError(where, ue.detail);
    }
    // Every value the run id names is the value the run uses: a check after expansion, for
    // every run, so that no run is ever labelled with a value it did not run with.
    for (const SweptKey& sk : rs.swept) {
      const json* actual = &rs.resolved;
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
      const std::string dump = rs.resolved.dump();
      auto [it, fresh] = by_config.emplace(std::hash<std::string>{}(dump), e.runs.size());
      if (!fresh && e.runs[it->second].resolved.dump() == dump)
        root.key("sweep").fail("runs \"" + e.runs[it->second].id + "\" and \"" + rs.id +
                               "\" have the same config (duplicate values such as 1 and 1.0?)");
    }
    e.runs.push_back(std::move(rs));
  }
  (void)base;
  return e;
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
  for (const auto& part : split_dots(key)) at = path_key(at, part);
  return at + run;
}

std::string read_spec_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw UserError(path, "no such file");
  if (std::filesystem::is_directory(path, ec)) throw UserError(path, "is a directory, expected a JSON file");
  // Open first, then check what was opened (O_NONBLOCK: opening a FIFO does not wait).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw UserError(path, "cannot open for reading: " + std::string(std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw UserError(path, "is not a regular file (a device, FIFO or socket): a spec is a JSON file");
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxSpecBytes) {
    ::close(fd);
    throw UserError(path, "is " + std::to_string(st.st_size / (1 << 20)) + " MiB, above the " +
                              std::to_string(kMaxSpecBytes >> 20) + " MiB a spec may have");
  }
  std::string text;
  char chunk[1 << 16];
  for (;;) {
    if (interrupt_requested()) {
      ::close(fd);
      throw Interrupted();
    }
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw UserError(path, "cannot read: " + std::string(std::strerror(err)));
    }
    if (n == 0) break;
    text.append(chunk, static_cast<size_t>(n));
    if (text.size() > kMaxSpecBytes) {  // grew while being read
      ::close(fd);
      throw UserError(path, "is above the " + std::to_string(kMaxSpecBytes >> 20) +
                                " MiB a spec may have");
    }
  }
  ::close(fd);
  return text;
}

Experiment load_experiment(const std::string& path) { return parse_experiment(read_spec_file(path), path); }

}  // namespace wb::rt
