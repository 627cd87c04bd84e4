#include "sim/cost_model.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "core/error.h"

namespace wb::sim {

const char* comm_op_name(CommOp op) {
  switch (op) {
    case CommOp::kAllreduce: return "allreduce";
    case CommOp::kAdasum: return "adasum";
    case CommOp::kWeightedAverage: return "weighted_average";
    case CommOp::kBroadcast: return "broadcast";
    case CommOp::kP2P: return "p2p";
  }
  return "?";
}

double Piecewise::operator()(double bytes) const {
  WB_ASSERT(!segments.empty(), "Piecewise: no segments");
  for (const auto& s : segments)
    if (bytes <= s.max_bytes) return std::max(0.0, s.alpha_s + s.beta_s_per_byte * bytes);
  const auto& s = segments.back();
  return std::max(0.0, s.alpha_s + s.beta_s_per_byte * bytes);
}

// ---------------------------------------------------------------- the default formula

BatchCost FormulaCostModel::batch(const std::string&, double flops, double) const {
  return {batch_latency_s_, flops / flops_per_s_};
}

double FormulaCostModel::comm_s(const CommCall& c, int64_t node_size) const {
  if (c.op == CommOp::kP2P) {
    const bool cross = node_size > 0 && c.from / node_size != c.to / node_size;
    return cross ? latency_s_ + c.bytes / bandwidth_ : intra_latency_s_ + c.bytes / intra_bandwidth_;
  }
  const int W = c.workers;
  if (W <= 1) return 0;
  const bool cross = node_size > 0 && W > node_size;
  const double alpha = cross ? latency_s_ : intra_latency_s_;
  const double beta = cross ? bandwidth_ : intra_bandwidth_;
  const double steps = std::ceil(std::log2(static_cast<double>(W)));
  return 2 * steps * alpha + 2.0 * (W - 1) / W * c.bytes / beta;
}

// ---------------------------------------------------------------- the profile model

// A model's compute is piecewise in the batch size: segment "model#MAX" holds the batch sizes
// <= MAX (the last one, MAX = inf, is open); a plain "model" entry is one segment for all.
std::string compute_key(const std::string& model, double max_batch) {
  if (max_batch >= 1e17) return model + "#inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "#%.17g", max_batch);
  return model + buf;
}

std::vector<std::pair<double, ComputeCost>> compute_segments(const CostProfile& p, const std::string& model) {
  std::vector<std::pair<double, ComputeCost>> out;
  auto plain = p.compute.find(model);
  if (plain != p.compute.end()) out.push_back({1e18, plain->second});
  const std::string prefix = model + "#";
  for (auto it = p.compute.lower_bound(prefix); it != p.compute.end() && it->first.rfind(prefix, 0) == 0; ++it) {
    const std::string tail = it->first.substr(prefix.size());
    out.push_back({tail == "inf" ? 1e18 : std::strtod(tail.c_str(), nullptr), it->second});
  }
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  return out;
}

BatchCost ProfileCostModel::batch(const std::string& model, double, double samples) const {
  const auto segs = compute_segments(p_, model);
  if (segs.empty())
    throw UserError(path_ + ": $.compute", "no entry for model \"" + model +
                                               "\" (run `workbench calibrate` with this model)");
  // A CPU's fixed cost is the core's own work: busy, not overlappable latency.
  auto cost = [&](const ComputeCost& c) {
    return p_.compute_fixed_overlaps ? BatchCost{c.fixed_s, c.per_sample_s * samples}
                                     : BatchCost{0.0, c.fixed_s + c.per_sample_s * samples};
  };
  for (const auto& [max_batch, c] : segs)
    if (samples <= max_batch) return cost(c);
  return cost(segs.back().second);
}

void check_profile_compute(const std::string& path, const std::string& model) {
  if (compute_segments(cached_cost_profile(path).profile, model).empty())
    throw UserError(path + ": $.compute", "no entry for model \"" + model +
                                              "\" (run `workbench calibrate` with this model)");
}

double ProfileCostModel::level_s(const std::string& link, const std::string& op,
                                 double bytes) const {
  auto l = p_.links.find(link);
  if (l == p_.links.end()) l = p_.links.find("intra");
  WB_ASSERT(l != p_.links.end(), "profile without an intra link class");
  auto o = l->second.find(op);
  if (o == l->second.end() && op == "adasum_split") o = l->second.find("adasum");
  if (o == l->second.end()) o = l->second.find("allreduce");
  WB_ASSERT(o != l->second.end(), "profile link class without allreduce");
  return o->second(bytes);
}

double ProfileCostModel::comm_s(const CommCall& c, int64_t node_size) const {
  auto link_of_level = [&](int l) {  // level l pairs positions 2^l apart
    return node_size > 0 && (int64_t{2} << l) > node_size ? "cross" : "intra";
  };
  if (c.op == CommOp::kP2P) {
    const bool cross = node_size > 0 && c.from / node_size != c.to / node_size;
    return level_s(cross ? "cross" : "intra", "p2p", c.bytes);
  }
  const int W = c.workers;
  if (W <= 1) return 0;
  int L = 0;
  while ((2 << L) <= W) ++L;  // P = 2^L <= W < 2^(L+1)
  const bool fold = (1 << L) != W;
  const char* top = link_of_level(L - 1);
  double t = fold ? 2 * level_s(top, "p2p", c.bytes) : 0.0;
  switch (c.op) {
    case CommOp::kBroadcast: {
      const int rounds = L + (fold ? 1 : 0);  // ceil(log2 W) rounds of a binomial tree
      for (int l = 0; l < rounds; ++l) t += level_s(link_of_level(l), "broadcast", c.bytes);
      return fold ? t - 2 * level_s(top, "p2p", c.bytes) : t;
    }
    case CommOp::kAllreduce:
    case CommOp::kWeightedAverage: {
      const char* op = c.op == CommOp::kAllreduce ? "allreduce" : "weighted_average";
      for (int l = 0; l < L; ++l) t += level_s(link_of_level(l), op, c.bytes / std::ldexp(1.0, l));
      if (c.op == CommOp::kAllreduce && c.average)
        t += c.bytes / c.elem_bytes * p_.average_divide_s_per_float;
      return t;
    }
    case CommOp::kAdasum: {
      if (c.schedule == AdasumSchedule::kWhole) {
        for (int l = 0; l < L; ++l) t += level_s(link_of_level(l), "adasum", c.bytes);
        return t;
      }
      const char* op = c.schedule == AdasumSchedule::kSplit ? "adasum_split" : "adasum";
      for (int l = 0; l < L; ++l) {
        const bool uneven = c.schedule == AdasumSchedule::kAligned && static_cast<size_t>(l) < c.level_bytes.size();
        t += level_s(link_of_level(l), op, uneven ? c.level_bytes[static_cast<size_t>(l)] : c.bytes / std::ldexp(1.0, l));
        // The dot-product rounds beyond the first (which the 2-rank level holds): level l's
        // group of 2^(l+1) positions finishes 24 S bytes by recursive doubling.
        if (c.schedule == AdasumSchedule::kSplit)
          for (int r = 1; r <= l; ++r) t += level_s(link_of_level(r), "p2p", 24.0 * c.pieces);
      }
      return t;
    }
    case CommOp::kP2P: break;
  }
  return t;
}

// ---------------------------------------------------------------- profile files

namespace {

[[noreturn]] void bad(const std::string& file, const std::string& jpath, const std::string& what) {
  throw UserError(file + ": " + jpath, what);
}

double number(const json& j, const std::string& file, const std::string& jpath, double lo, double hi) {
  if (!j.is_number()) bad(file, jpath, "expected a number");
  const double v = j.get<double>();
  if (!std::isfinite(v) || v < lo || v > hi)
    bad(file, jpath, "expected a number in [" + core::fmt_number(lo) + ", " + core::fmt_number(hi) + "], got " +
                         core::fmt_number(v));
  return v;
}

const json& member(const json& j, const char* key, const std::string& file, const std::string& jpath) {
  if (!j.is_object() || !j.contains(key)) bad(file, jpath, std::string("missing key \"") + key + "\"");
  return j[key];
}

Piecewise read_piecewise(const json& a, const std::string& file, const std::string& jpath) {
  if (!a.is_array() || a.empty()) bad(file, jpath, "expected a non-empty array of segments");
  Piecewise p;
  double prev = -1;
  for (size_t i = 0; i < a.size(); ++i) {
    const std::string jp = jpath + "[" + std::to_string(i) + "]";
    AlphaBetaSegment s;
    s.max_bytes = number(member(a[i], "max_bytes", file, jp), file, jp + ".max_bytes", 0, 1e18);
    s.alpha_s = number(member(a[i], "alpha_s", file, jp), file, jp + ".alpha_s", -3600, 3600);
    s.beta_s_per_byte =
        number(member(a[i], "beta_s_per_byte", file, jp), file, jp + ".beta_s_per_byte", -1, 1);
    if (s.max_bytes <= prev) bad(file, jp + ".max_bytes", "segments must be sorted by max_bytes");
    prev = s.max_bytes;
    p.segments.push_back(s);
  }
  return p;
}

}  // namespace


namespace {

// A profile is a small JSON file (calib/*.json: tens of KB): the rules of spec files
// (app/experiment/spec_text.cpp read_spec_file) -- a regular file, opened without waiting (a FIFO
// would hang the reader), never read beyond a size limit (/dev/zero, a 100 MB file).
constexpr size_t kMaxProfileBytes = 16u << 20;

std::string read_profile_text(const std::string& path) {
  const std::string what = "the cost profile (\"clock\": {\"profile\": ...})";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw UserError(path, "cannot open " + what + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const bool dir = S_ISDIR(st.st_mode);
    ::close(fd);
    throw UserError(path, dir ? "is a directory, expected " + what + " (a JSON file)"
                              : "is not a regular file (a device, FIFO or socket): " + what +
                                    " is a JSON file");
  }
  auto too_big = [&] {
    ::close(fd);
    throw UserError(path, "is above the " + std::to_string(kMaxProfileBytes >> 20) + " MiB " + what +
                              " may have");
  };
  if (static_cast<uint64_t>(st.st_size) > kMaxProfileBytes) too_big();
  std::string text;
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw UserError(path, "cannot read " + what + ": " + std::strerror(err));
    }
    if (n == 0) break;
    text.append(chunk, static_cast<size_t>(n));
    if (text.size() > kMaxProfileBytes) too_big();  // grew while being read
  }
  ::close(fd);
  return text;
}

CostProfile parse_cost_profile(const std::string& text, const std::string& path);

}  // namespace

CostProfile load_cost_profile(const std::string& path) {
  return parse_cost_profile(read_profile_text(path), path);
}

const LoadedCostProfile& cached_cost_profile(const std::string& path) {
  // Node-based map: references stay valid as paths are added. Runs and checks call this
  // from the main thread, but a mutex costs nothing here and keeps it safe.
  static std::mutex mu;
  static std::map<std::string, LoadedCostProfile> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(path);
  if (it != cache.end()) return it->second;
  const std::string text = read_profile_text(path);
  LoadedCostProfile lp;
  lp.profile = parse_cost_profile(text, path);
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  lp.fnv1a64 = hex;
  return cache.emplace(path, std::move(lp)).first->second;
}

namespace {

CostProfile parse_cost_profile(const std::string& text, const std::string& path) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    // parse_error, and out_of_range for a number beyond a double (1e999).
    throw UserError(path, std::string("not valid JSON: ") + e.what());
  }
  if (!j.is_object()) bad(path, "$", "expected an object");
  CostProfile p;
  if (j.contains("machine") && j["machine"].is_string()) p.machine = j["machine"].get<std::string>();
  if (j.contains("source") && j["source"].is_string()) p.source = j["source"].get<std::string>();
  if (j.contains("ranks")) p.ranks = static_cast<int>(number(j["ranks"], path, "$.ranks", 2, 1 << 20));
  const json& links = member(j, "links", path, "$");
  if (!links.is_object()) bad(path, "$.links", "expected an object of link classes");
  for (auto it = links.begin(); it != links.end(); ++it) {
    const std::string lk = it.key(), jl = "$.links." + lk;
    if (lk != "intra" && lk != "cross") bad(path, jl, "link class must be \"intra\" or \"cross\"");
    if (!it.value().is_object()) bad(path, jl, "expected an object of ops");
    for (auto o = it.value().begin(); o != it.value().end(); ++o) {
      static const char* kOps[] = {"p2p", "allreduce", "adasum", "adasum_split", "weighted_average",
                                   "broadcast"};
      if (std::find_if(std::begin(kOps), std::end(kOps), [&](const char* s) { return o.key() == s; }) ==
          std::end(kOps))
        bad(path, jl + "." + o.key(),
            "unknown op (p2p, allreduce, adasum, adasum_split, weighted_average, broadcast)");
      p.links[lk][o.key()] = read_piecewise(o.value(), path, jl + "." + o.key());
    }
    for (const char* need : {"p2p", "allreduce"})
      if (!p.links[lk].count(need)) bad(path, jl, std::string("missing op \"") + need + "\"");
  }
  if (!p.links.count("intra")) bad(path, "$.links", "missing link class \"intra\"");
  const json& comp = member(j, "compute", path, "$");
  if (!comp.is_object()) bad(path, "$.compute", "expected an object: model -> {fixed_s, per_sample_s}");
  for (auto it = comp.begin(); it != comp.end(); ++it) {
    const std::string jp = "$.compute." + it.key();
    if (it.key().find('#') != std::string::npos) bad(path, jp, "a model name cannot hold '#'");
    double prev = 0;
    auto segment = [&](const json& v, const std::string& sp, bool list) {
      double max_batch = 1e18;
      if (list && v.is_object() && v.contains("max_batch"))
        max_batch = number(v["max_batch"], path, sp + ".max_batch", 1, 1e18);
      ComputeCost c;
      c.fixed_s = number(member(v, "fixed_s", path, sp), path, sp + ".fixed_s", 0, 3600);
      c.per_sample_s = number(member(v, "per_sample_s", path, sp), path, sp + ".per_sample_s", 0, 3600);
      if (max_batch <= prev) bad(path, sp + ".max_batch", "segments must be sorted by max_batch");
      prev = max_batch;
      p.compute[list ? compute_key(it.key(), max_batch) : it.key()] = c;
    };
    if (it.value().is_array()) {
      if (it.value().empty()) bad(path, jp, "expected a non-empty array of segments");
      for (size_t i = 0; i < it.value().size(); ++i)
        segment(it.value()[i], jp + "[" + std::to_string(i) + "]", true);
    } else {
      segment(it.value(), jp, false);  // one segment for every batch size
    }
  }
  if (j.contains("compute_models")) {
    const json& cm = j["compute_models"];
    if (!cm.is_object())
      bad(path, "$.compute_models", "expected an object: model name -> the model config its compute was measured on");
    for (auto it = cm.begin(); it != cm.end(); ++it) {
      const std::string jp = "$.compute_models." + it.key();
      const json& v = it.value();
      const json* name = v.is_string() ? &v : v.is_object() && v.contains("name") ? &v.at("name") : nullptr;
      if (!name || !name->is_string())
        bad(path, jp, "expected a model config: a name or an object with \"name\" (a spec's \"model\" value)");
      if (name->get<std::string>() != it.key())
        bad(path, jp, "names model \"" + name->get<std::string>() + "\", not \"" + it.key() +
                          "\" (each entry is the config of the model it is named after)");
      if (compute_segments(p, it.key()).empty())
        bad(path, jp, "no compute entry for model \"" + it.key() + "\" ($.compute)");
      p.compute_models[it.key()] = v;
    }
  }
  if (j.contains("compute_fixed_overlaps")) {
    if (!j["compute_fixed_overlaps"].is_boolean()) bad(path, "$.compute_fixed_overlaps", "expected true or false");
    p.compute_fixed_overlaps = j["compute_fixed_overlaps"].get<bool>();
  }
  if (j.contains("elementwise")) {
    const json& el = j["elementwise"];
    if (!el.is_object()) bad(path, "$.elementwise", "expected an object {s_per_float}");
    p.elementwise_s_per_float =
        number(member(el, "s_per_float", path, "$.elementwise"), path, "$.elementwise.s_per_float", 0, 1e-3);
  }
  if (j.contains("average_divide")) {
    const json& ad = j["average_divide"];
    if (!ad.is_object()) bad(path, "$.average_divide", "expected an object {s_per_float}");
    p.average_divide_s_per_float = number(member(ad, "s_per_float", path, "$.average_divide"), path,
                                          "$.average_divide.s_per_float", 0, 1e-3);
  }
  if (j.contains("shared_model")) {
    const json& sm = j["shared_model"];
    if (!sm.is_object()) bad(path, "$.shared_model", "expected an object {read_s_per_float, atomic_add_s_per_float}");
    p.shared_model.read_s_per_float = number(member(sm, "read_s_per_float", path, "$.shared_model"), path,
                                             "$.shared_model.read_s_per_float", 0, 1e-3);
    p.shared_model.atomic_add_s_per_float =
        number(member(sm, "atomic_add_s_per_float", path, "$.shared_model"), path,
               "$.shared_model.atomic_add_s_per_float", 0, 1e-3);
    if (sm.contains("rounds_share_core")) {
      if (!sm["rounds_share_core"].is_boolean()) bad(path, "$.shared_model.rounds_share_core", "expected true or false");
      p.shared_model.rounds_share_core = sm["rounds_share_core"].get<bool>();
    }
  }
  for (const char* k : {"fit", "notes", "citations"})
    if (j.contains(k)) p.extra[k] = j[k];
  return p;
}

}  // namespace

json cost_profile_json(const CostProfile& p) {
  json j;
  j["format"] = "psgd-workbench cost profile 1";
  j["machine"] = p.machine;
  j["source"] = p.source;
  j["ranks"] = p.ranks;
  json links = json::object();
  for (const auto& [lk, ops] : p.links) {
    json o = json::object();
    for (const auto& [op, pw] : ops) {
      json a = json::array();
      for (const auto& s : pw.segments)
        a.push_back({{"max_bytes", s.max_bytes}, {"alpha_s", s.alpha_s}, {"beta_s_per_byte", s.beta_s_per_byte}});
      o[op] = a;
    }
    links[lk] = o;
  }
  j["links"] = links;
  json comp = json::object();
  for (const auto& [key, c] : p.compute) {
    const std::string m = key.substr(0, key.find('#'));
    if (comp.contains(m)) continue;
    json a = json::array();
    for (const auto& [max_batch, g] : compute_segments(p, m))
      a.push_back({{"max_batch", max_batch}, {"fixed_s", g.fixed_s}, {"per_sample_s", g.per_sample_s}});
    comp[m] = a;
  }
  j["compute"] = comp;
  if (!p.compute_models.empty()) {
    json cm = json::object();
    for (const auto& [m, cfg] : p.compute_models) cm[m] = cfg;
    j["compute_models"] = cm;
  }
  j["compute_fixed_overlaps"] = p.compute_fixed_overlaps;
  if (p.elementwise_s_per_float > 0) j["elementwise"] = {{"s_per_float", p.elementwise_s_per_float}};
  if (p.average_divide_s_per_float > 0) j["average_divide"] = {{"s_per_float", p.average_divide_s_per_float}};
  if (p.shared_model.read_s_per_float > 0 || p.shared_model.atomic_add_s_per_float > 0)
    j["shared_model"] = {{"read_s_per_float", p.shared_model.read_s_per_float},
                         {"atomic_add_s_per_float", p.shared_model.atomic_add_s_per_float},
                         {"rounds_share_core", p.shared_model.rounds_share_core}};
  if (p.extra.is_object())
    for (auto it = p.extra.begin(); it != p.extra.end(); ++it) j[it.key()] = it.value();
  return j;
}

// ---------------------------------------------------------------- least squares

std::pair<double, double> ols_line(const std::vector<double>& x, const std::vector<double>& t) {
  const size_t n = x.size();
  if (n == 0) return {0, 0};
  double mx = 0, mt = 0;
  for (size_t i = 0; i < n; ++i) {
    mx += x[i];
    mt += t[i];
  }
  mx /= static_cast<double>(n);
  mt /= static_cast<double>(n);
  double sxx = 0, sxt = 0;
  for (size_t i = 0; i < n; ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxt += (x[i] - mx) * (t[i] - mt);
  }
  if (sxx <= 0) return {mt, 0};
  const double b = sxt / sxx;
  return {mt - b * mx, b};
}

std::pair<double, double> nonneg_line(const std::vector<double>& x, const std::vector<double>& t) {
  const auto [a, b] = ols_line(x, t);
  if (a >= 0 && b >= 0) return {a, b};
  const size_t n = x.size();
  auto sse = [&](double aa, double bb) {
    double s = 0;
    for (size_t i = 0; i < n; ++i) s += (aa + bb * x[i] - t[i]) * (aa + bb * x[i] - t[i]);
    return s;
  };
  double sxx = 0, sxt = 0, st = 0;
  for (size_t i = 0; i < n; ++i) {
    sxx += x[i] * x[i];
    sxt += x[i] * t[i];
    st += t[i];
  }
  const double b0 = sxx > 0 ? std::max(0.0, sxt / sxx) : 0.0;     // a = 0
  const double a0 = n > 0 ? std::max(0.0, st / static_cast<double>(n)) : 0.0;  // b = 0
  return sse(0, b0) <= sse(a0, 0) ? std::pair<double, double>{0, b0} : std::pair<double, double>{a0, 0};
}

namespace {
// (fitted - measured) / measured per point, in input order.
void relative_residuals(const Piecewise& pw, const std::vector<double>& bytes, const std::vector<double>& seconds,
                        std::vector<double>* residuals) {
  if (!residuals) return;
  residuals->clear();
  for (size_t i = 0; i < bytes.size(); ++i)
    residuals->push_back(seconds[i] > 0 ? (pw(bytes[i]) - seconds[i]) / seconds[i] : 0.0);
}
}  // namespace

Piecewise fit_piecewise(const std::vector<double>& bytes, const std::vector<double>& seconds,
                        const std::vector<double>& breaks, std::vector<double>* residuals, bool nonneg) {
  WB_ASSERT(bytes.size() == seconds.size(), "fit_piecewise: one time per size");
  Piecewise pw;
  double lo = -1;
  for (size_t s = 0; s <= breaks.size(); ++s) {
    const double hi = s < breaks.size() ? breaks[s] : 1e18;
    std::vector<double> x, t;
    for (size_t i = 0; i < bytes.size(); ++i)
      if (bytes[i] > lo && bytes[i] <= hi) {
        x.push_back(bytes[i]);
        t.push_back(seconds[i]);
      }
    lo = hi;
    if (x.empty()) continue;
    auto [a, b] = nonneg ? nonneg_line(x, t) : ols_line(x, t);
    pw.segments.push_back({hi, a, b});
  }
  relative_residuals(pw, bytes, seconds, residuals);
  return pw;
}

std::pair<double, double> rel_line(const std::vector<double>& x, const std::vector<double>& t) {
  const size_t n = x.size();
  if (n == 0) return {0, 0};
  double sw = 0, mx = 0, mt = 0;
  for (size_t i = 0; i < n; ++i) {
    const double w = t[i] > 0 ? 1.0 / (t[i] * t[i]) : 0.0;
    sw += w;
    mx += w * x[i];
    mt += w * t[i];
  }
  if (sw <= 0) return ols_line(x, t);
  mx /= sw;
  mt /= sw;
  double sxx = 0, sxt = 0;
  for (size_t i = 0; i < n; ++i) {
    const double w = t[i] > 0 ? 1.0 / (t[i] * t[i]) : 0.0;
    sxx += w * (x[i] - mx) * (x[i] - mx);
    sxt += w * (x[i] - mx) * (t[i] - mt);
  }
  // A message does not get faster as it grows: a falling line (noise among the smallest
  // sizes) becomes the constant, the optimum on b = 0 of this convex fit.
  if (sxx <= 0 || sxt <= 0) return {mt, 0};
  const double b = sxt / sxx;
  return {mt - b * mx, b};
}

Piecewise fit_piecewise_auto(const std::vector<double>& bytes, const std::vector<double>& seconds,
                             size_t max_segments, size_t min_points, std::vector<double>* residuals) {
  WB_ASSERT(bytes.size() == seconds.size(), "fit_piecewise_auto: one time per size");
  WB_ASSERT(max_segments >= 1 && min_points >= 1, "fit_piecewise_auto: at least one segment of one point");
  std::vector<size_t> order(bytes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return bytes[a] < bytes[b]; });
  const size_t n = order.size();
  Piecewise pw;
  if (n == 0) return pw;
  std::vector<double> x(n), t(n);
  for (size_t i = 0; i < n; ++i) {
    x[i] = bytes[order[i]];
    t[i] = seconds[order[i]];
  }
  // cost[i][j]: the squared relative residuals of one line through points i .. j - 1.
  auto line_of = [&](size_t i, size_t j) {
    return rel_line(std::vector<double>(x.begin() + static_cast<long>(i), x.begin() + static_cast<long>(j)),
                    std::vector<double>(t.begin() + static_cast<long>(i), t.begin() + static_cast<long>(j)));
  };
  std::vector<std::vector<double>> cost(n + 1, std::vector<double>(n + 1, INFINITY));
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + min_points; j <= n; ++j) {
      const auto [a, b] = line_of(i, j);
      double c = 0;
      for (size_t k = i; k < j; ++k) {
        const double r = t[k] > 0 ? (a + b * x[k] - t[k]) / t[k] : 0.0;
        c += r * r;
      }
      cost[i][j] = c;
    }
  // best[s][j]: the points 0 .. j - 1 in s segments; from[s][j]: where the last one starts.
  const size_t S = std::max<size_t>(1, std::min(max_segments, n / min_points));
  std::vector<std::vector<double>> best(S + 1, std::vector<double>(n + 1, INFINITY));
  std::vector<std::vector<size_t>> from(S + 1, std::vector<size_t>(n + 1, 0));
  best[0][0] = 0;
  for (size_t s = 1; s <= S; ++s)
    for (size_t j = 1; j <= n; ++j)
      for (size_t i = 0; i < j; ++i)
        if (best[s - 1][i] + cost[i][j] < best[s][j]) {
          best[s][j] = best[s - 1][i] + cost[i][j];
          from[s][j] = i;
        }
  size_t s_best = 1;
  for (size_t s = 1; s <= S; ++s)
    // ties (within a relative error of 1e-6 per point, rounding's scale): the fewer segments
    if (best[s][n] < best[s_best][n] - 1e-12 * static_cast<double>(n)) s_best = s;
  if (!std::isfinite(best[s_best][n])) {  // fewer than min_points points: one line through them
    const auto [a, b] = line_of(0, n);
    pw.segments.push_back({1e18, a, b});
  } else {
    std::vector<std::pair<size_t, size_t>> segs;  // [i, j) per segment, last first
    for (size_t s = s_best, j = n; s > 0; --s) {
      segs.push_back({from[s][j], j});
      j = from[s][j];
    }
    std::reverse(segs.begin(), segs.end());
    for (size_t k = 0; k < segs.size(); ++k) {
      const auto [i, j] = segs[k];
      const auto [a, b] = line_of(i, j);
      const double hi = k + 1 < segs.size() ? std::sqrt(x[j - 1] * x[j]) : 1e18;
      pw.segments.push_back({hi, a, b});
    }
  }
  relative_residuals(pw, bytes, seconds, residuals);
  return pw;
}

}  // namespace wb::sim
