// Sweep expansion: every run's resolved config holds every value its id names, whatever the
// order of the sweep keys, and a key swept inside a swept polymorphic key ("model.x_max"
// with "model") applies to each of its values or the spec is refused naming both keys.
// A property test over random nested sweeps, with the expected outcome computed from a
// table of which keys each swept value has (independent of the expansion code).
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "app/experiment/spec.h"
#include "core/error.h"
#include "spec_errors.h"

using namespace wb;
using wb::test::error_of;
using wb::test::has;

namespace {

json at(const json& j, const std::string& dotted) {
  const json* n = &j;
  size_t a = 0;
  for (size_t b = 0; b <= dotted.size(); ++b)
    if (b == dotted.size() || dotted[b] == '.') {
      const std::string part = dotted.substr(a, b - a);
      if (!n->is_object() || !n->contains(part)) return json();
      n = &(*n)[part];
      a = b + 1;
    }
  return *n;
}

// The value a run uses at a swept key is the value its id names.
bool holds(const json& actual, const json& named) {
  if (named.is_number()) return actual.is_number() && actual.get<double>() == named.get<double>();
  if (named.is_string())
    return actual == named || (actual.is_object() && actual.value("name", "") == named.get<std::string>());
  if (named.is_object()) {
    for (auto it = named.begin(); it != named.end(); ++it)
      if (!actual.contains(it.key()) || !holds(actual[it.key()], it.value())) return false;
    return true;
  }
  return actual == named;
}

// A parent key, its possible values, and for each value which of the child keys it has.
struct Parent {
  std::string key;
  std::vector<json> values;
  std::vector<std::vector<std::string>> has_child;  // per value: child keys (relative) it has
  std::vector<std::vector<std::string>> sets_child;  // per value: child keys its object sets
};
struct Child {
  std::string key;  // dotted, under a parent
  std::vector<json> values;
};

const std::vector<Parent>& parents() {
  static const std::vector<Parent> p = {
      {"model",
       {"quadratic", "cubic", json{{"name", "quadratic"}, {"train_size", 64}}, "sparse_mlp"},
       {{"x_max", "train_size"}, {"x_max", "train_size"}, {"x_max", "train_size"}, {}},
       {{}, {}, {"train_size"}, {}}},
      {"optimizer",
       {"sgd", json{{"name", "sgd"}, {"momentum", 0.5}}, "adam"},
       {{"momentum"}, {"momentum"}, {}},
       {{}, {"momentum"}, {}}},
      {"algorithm",
       {"local_sgd", "post_local_sgd", "sync_sgd", json{{"name", "local_sgd"}, {"H", 3}}},
       {{"H"}, {"H"}, {}, {"H"}},
       {{}, {}, {}, {"H"}}},
  };
  return p;
}
const std::vector<Child>& children() {
  static const std::vector<Child> c = {
      {"model.x_max", {0.5, 1.0, 2.0}},
      {"model.train_size", {32, 48}},
      {"optimizer.momentum", {0.0, 0.9}},
      {"algorithm.H", {2, 4}},
  };
  return c;
}

struct Axis {
  std::vector<std::string> keys;
  std::vector<std::vector<json>> values;  // per value: one per key
};

}  // namespace

TEST_CASE("a key swept before its parent is applied after it (the issue's four cases)") {
  // The id names x_max=2.0: the run uses 2.0, in both orders.
  for (const char* sweep : {R"({"model.x_max": [1.0, 2.0], "model": ["quadratic", "cubic"]})",
                            R"({"model": ["quadratic", "cubic"], "model.x_max": [1.0, 2.0]})",
                            R"({"model.x_max+seed": [[1.0, 1], [2.0, 2]], "model": ["quadratic", "cubic"]})"}) {
    const std::string spec = std::string(R"({"name":"t","base":{"steps":2},"sweep":)") + sweep + "}";
    const auto e = app::parse_experiment(spec, "s.json");
    REQUIRE(e.runs.size() == 4);
    for (const auto& r : e.runs) {
      const double x = at(r.resolved(), "model.x_max").get<double>();
      CHECK(has(r.id, x == 1.0 ? "x_max=1" : "x_max=2"));
      CHECK(r.cfg.model.value()["x_max"].get<double>() == x);
    }
  }
  const auto e = app::parse_experiment(
      R"({"name":"t","base":{"steps":4},"sweep":{"optimizer.momentum":[0.5,0.9],"optimizer":["sgd","lars"],)"
      R"("algorithm.H":[2,3],"algorithm":["local_sgd","post_local_sgd"]}})",
      "s.json");
  REQUIRE(e.runs.size() == 16);
  for (const auto& r : e.runs) {
    CHECK(has(r.id, "momentum=" + at(r.resolved(), "optimizer.momentum").dump()));
    CHECK(has(r.id, "H=" + at(r.resolved(), "algorithm.H").dump()));
  }
}

TEST_CASE("a key swept inside a swept value that lacks it, or sets it, is refused naming both") {
  const std::string lacks = error_of(
      R"({"name":"t","base":{"steps":2},"sweep":{"model.x_max":[1,2],"model":["quadratic","sparse_mlp"]}})");
  CHECK(has(lacks, "spec.json: $.sweep[\"model.x_max\"]"));
  CHECK(has(lacks, "\"x_max\" is not a key of sparse_mlp"));
  CHECK(has(lacks, "$.sweep.model[1]"));
  const std::string sets = error_of(
      R"({"name":"t","base":{"steps":2},"sweep":{"algorithm":[{"name":"local_sgd","H":3}],"algorithm.H":[2,4]}})");
  CHECK(has(sets, "$.sweep[\"algorithm.H\"]"));
  CHECK(has(sets, "$.sweep.algorithm[0]"));
  CHECK(has(sets, "also sets"));
}

TEST_CASE("property: random nested sweeps -- each run holds its id's values, or the spec is refused naming both keys") {
  std::mt19937 rng(20261125);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  int parsed = 0, refused = 0;
  for (int trial = 0; trial < 300; ++trial) {
    // Choose parents and children; each with a random non-empty subset of its values.
    std::vector<Axis> axes;
    std::vector<const Parent*> ps;
    std::vector<std::vector<size_t>> pvals;  // the parent value indices used
    for (const Parent& p : parents()) {
      if (rng() % 2) continue;
      std::vector<size_t> idx;
      for (size_t i = 0; i < p.values.size(); ++i)
        if (rng() % 2) idx.push_back(i);
      if (idx.empty()) idx.push_back(pick(p.values.size()));
      ps.push_back(&p);
      pvals.push_back(idx);
      Axis a{{p.key}, {}};
      for (size_t i : idx) a.values.push_back({p.values[i]});
      axes.push_back(a);
    }
    for (const Child& c : children()) {
      if (rng() % 2) continue;
      Axis a{{c.key}, {}};
      const size_t n = 1 + pick(c.values.size());
      for (size_t i = 0; i < n; ++i) a.values.push_back({c.values[i]});
      axes.push_back(a);
    }
    axes.push_back(Axis{{"lr"}, {{0.01}, {0.1}}});
    // Link two axes of equal length sometimes ("a+b").
    if (axes.size() >= 2 && rng() % 3 == 0) {
      const size_t i = pick(axes.size()), j = pick(axes.size());
      if (i != j && axes[i].values.size() == axes[j].values.size()) {
        Axis l;
        l.keys = axes[i].keys;
        l.keys.insert(l.keys.end(), axes[j].keys.begin(), axes[j].keys.end());
        for (size_t v = 0; v < axes[i].values.size(); ++v) {
          auto row = axes[i].values[v];
          row.insert(row.end(), axes[j].values[v].begin(), axes[j].values[v].end());
          l.values.push_back(row);
        }
        axes.erase(axes.begin() + static_cast<std::ptrdiff_t>(std::max(i, j)));
        axes.erase(axes.begin() + static_cast<std::ptrdiff_t>(std::min(i, j)));
        axes.push_back(l);
      }
    }
    std::shuffle(axes.begin(), axes.end(), rng);
    json sweep = json::object();
    std::string joined;
    for (const Axis& a : axes) {
      std::string k;
      for (const auto& x : a.keys) k += (k.empty() ? "" : "+") + x;
      json vals = json::array();
      for (const auto& v : a.values) vals.push_back(a.keys.size() > 1 ? json(v) : v[0]);
      sweep[k] = vals;
      joined += k + " ";
    }
    // Expected: refused iff a swept child meets a swept parent value that lacks it or sets it.
    bool expect_refusal = false;
    for (const Axis& a : axes)
      for (const auto& ck : a.keys)
        for (size_t pi = 0; pi < ps.size(); ++pi) {
          if (ck.rfind(ps[pi]->key + ".", 0) != 0) continue;
          const std::string rel = ck.substr(ps[pi]->key.size() + 1);
          for (size_t vi : pvals[pi]) {
            const auto& hc = ps[pi]->has_child[vi];
            const auto& sc = ps[pi]->sets_child[vi];
            if (std::find(hc.begin(), hc.end(), rel) == hc.end() ||
                std::find(sc.begin(), sc.end(), rel) != sc.end())
              expect_refusal = true;
          }
        }
    // The base holds a model with x_max and an SGD optimizer: an unswept parent always has them.
    const json spec = {{"name", "t"},
                       {"base", {{"steps", 8}, {"workers", 2}, {"model", {{"name", "quadratic"}}},
                                 {"algorithm", {{"name", "local_sgd"}}}}},
                       {"sweep", sweep}};
    CAPTURE(spec.dump());
    app::Experiment e;
    std::string err;
    try {
      e = app::parse_experiment(spec.dump(), "s.json");
    } catch (const UserError& ue) {
      err = ue.what();
    }
    CHECK(err.empty() == !expect_refusal);
    if (!err.empty()) {
      ++refused;
      // One line naming the child's sweep key and the parent's sweep entry.
      CHECK(has(err, "s.json: $.sweep["));
      CHECK(has(err, "inside the swept"));
      continue;
    }
    ++parsed;
    // Every run: the mixed-radix pick of each axis (first axis slowest) is what it uses.
    size_t total = 1;
    for (const Axis& a : axes) total *= a.values.size();
    REQUIRE(e.runs.size() == total);
    for (size_t r = 0; r < total; ++r) {
      size_t rem = r;
      std::vector<size_t> pk(axes.size());
      for (size_t a = axes.size(); a-- > 0;) {
        pk[a] = rem % axes[a].values.size();
        rem /= axes[a].values.size();
      }
      for (size_t a = 0; a < axes.size(); ++a)
        for (size_t k = 0; k < axes[a].keys.size(); ++k) {
          const json& named = axes[a].values[pk[a]][k];
          CAPTURE(axes[a].keys[k]);
          CAPTURE(named.dump());
          CAPTURE(e.runs[r].id);
          CHECK(holds(at(e.runs[r].resolved(), axes[a].keys[k]), named));
        }
    }
  }
  // Both outcomes were exercised.
  CHECK(parsed > 30);
  CHECK(refused > 30);
}
