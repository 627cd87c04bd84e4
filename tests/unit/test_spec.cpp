// Spec parsing, sweep expansion and the bad-input messages (file + JSON path).
#include <doctest/doctest.h>

#include <string>

#include "app/experiment/spec.h"
#include "core/error.h"
#include "spec_errors.h"

using namespace wb;
using wb::app::parse_experiment;

namespace {
using wb::test::error_of;
using wb::test::has;
}  // namespace

TEST_CASE("a minimal spec gets every default") {
  auto e = parse_experiment(R"({"name": "t", "base": {}})", "spec.json");
  REQUIRE(e.runs.size() == 1);
  CHECK(e.runs[0].id == "base");
  CHECK(e.runs[0].cfg.workers == 1);
  CHECK(e.runs[0].resolved()["algorithm"]["name"] == "sync_sgd");
  CHECK(e.runs[0].resolved()["model"]["x_max"] == 1.0);
  CHECK(e.runs[0].resolved()["converge"]["consecutive"] == 2);
}

TEST_CASE("sweep expansion: cartesian product, first key slowest, ids from varied keys") {
  auto e = parse_experiment(R"({"name": "t", "base": {"lr": 0.1},
      "sweep": {"workers": [2, 4], "model.x_max": [1, 2.5], "algorithm": ["adasum",
                {"name": "sync_sgd", "combine": "sum"}]}})",
                            "spec.json");
  REQUIRE(e.runs.size() == 8);
  CHECK(e.runs[0].id == "workers=2,x_max=1,algorithm=adasum");
  CHECK(e.runs[1].id == "workers=2,x_max=1,algorithm=sync_sgd{combine=sum}");
  CHECK(e.runs[2].id == "workers=2,x_max=2.5,algorithm=adasum");
  CHECK(e.runs[7].id == "workers=4,x_max=2.5,algorithm=sync_sgd{combine=sum}");
  CHECK(e.runs[7].cfg.workers == 4);
  CHECK(e.runs[7].resolved()["model"]["x_max"] == 2.5);
  CHECK(e.runs[7].resolved()["model"]["name"] == "quadratic");
  CHECK(e.runs[7].resolved()["algorithm"]["combine"] == "sum");
  CHECK(e.runs[7].cfg.lr == 0.1);
  for (int i = 0; i < 8; ++i) CHECK(e.runs[i].index == i);
}

TEST_CASE("linked sweep keys (\"a+b\") move together inside the cartesian product") {
  // Tuned learning rates per algorithm (the Adasum paper's LR table), times two worker counts.
  auto e = parse_experiment(R"({"name": "t", "base": {},
      "sweep": {"workers": [2, 4], "algorithm+lr": [["adasum", 0.1],
                [{"name": "sync_sgd", "combine": "sum"}, 0.025]]}})",
                            "spec.json");
  REQUIRE(e.runs.size() == 4);
  CHECK(e.runs[0].id == "workers=2,algorithm=adasum,lr=0.1");
  CHECK(e.runs[1].id == "workers=2,algorithm=sync_sgd{combine=sum},lr=0.025");
  CHECK(e.runs[3].id == "workers=4,algorithm=sync_sgd{combine=sum},lr=0.025");
  CHECK(e.runs[0].cfg.lr == 0.1);
  CHECK(e.runs[0].resolved()["algorithm"]["name"] == "adasum");
  CHECK(e.runs[3].cfg.lr == 0.025);
  CHECK(e.runs[3].cfg.workers == 4);
  CHECK(e.runs[3].resolved()["algorithm"]["combine"] == "sum");
  // Errors name the linked value: the list, its entry, the position inside the entry.
  CHECK(has(error_of(R"({"name": "t", "base": {}, "sweep": {"algorithm+lr": [["adasum", 0.1], ["adasum"]]}})"),
            "spec.json: $.sweep[\"algorithm+lr\"][1]: expected a list of 2 values, one per linked key"));
  CHECK(has(error_of(R"({"name": "t", "base": {}, "sweep": {"algorithm+lr": [["adasum", -1]]}})"),
            "spec.json: $.sweep[\"algorithm+lr\"][0][1]: must be > 0, got -1"));
  CHECK(has(error_of(R"({"name": "t", "base": {}, "sweep": {"algorithm+lr": [["adasun", 1]]}})"),
            "spec.json: $.sweep[\"algorithm+lr\"][0][0]: unknown algorithm \"adasun\""));
  CHECK(has(error_of(R"({"name": "t", "base": {}, "sweep": {"lr": [0.1], "algorithm+lr": [["adasum", 1]]}})"),
            "spec.json: $.sweep[\"algorithm+lr\"]: key \"lr\" is swept twice"));
  CHECK(has(error_of(R"({"name": "t", "base": {}, "sweep": {"algorithm+lrr": [["adasum", 1]]}})"),
            "spec.json: $.sweep[\"algorithm+lrr\"]: no such key \"lrr\""));
  CHECK(has(error_of(R"({"name": "t", "base": {}, "sweep": {"algorithm+": [["adasum", 1]]}})"),
            "empty key"));
  CHECK(has(error_of(R"({"name": "t", "base": {}, "sweep": {"algorithm+lr": []}})"),
            "$.sweep[\"algorithm+lr\"]: expected a non-empty list of [2 values] lists"));
}

TEST_CASE("ambiguous last components keep the full dotted key") {
  auto e = parse_experiment(R"({"name": "t", "base": {},
      "sweep": {"converge.tol": [0, 1e-3], "clock.latency_s": [1e-6]}})",
                            "spec.json");
  CHECK(e.runs[1].id == "tol=0.001,latency_s=1e-06");
}

TEST_CASE("bad input: one message with file and JSON path") {
  CHECK(has(error_of(R"({"name": "t", "base": {"workers": "eight"}})"),
            "spec.json: $.base.workers: expected an integer, got string \"eight\""));
  CHECK(has(error_of(R"({"name": "t", "base": {"workers": 0}})"), "$.base.workers: must be >= 1"));
  CHECK(has(error_of(R"({"name": "t", "base": {"workers": -3}})"), "$.base.workers: must be >= 1"));
  CHECK(has(error_of(R"({"name": "t", "base": {"lr": -0.1}})"), "$.base.lr: must be > 0, got -0.1"));
  CHECK(has(error_of(R"({"name": "t", "base": {"lr": 0}})"), "$.base.lr: must be > 0"));
  CHECK(has(error_of(R"({"name": "t", "base": {"batch_size": 0}})"), "$.base.batch_size: must be >= 1"));
  CHECK(has(error_of(R"({"name": "t", "base": {"lrr": 0.1}})"), "$.base.lrr: unknown key \"lrr\""));
  CHECK(has(error_of(R"({"name": "t", "bse": {}})"), "spec.json: $.bse: unknown key"));
  const auto unknown = error_of(R"({"name": "t", "base": {"algorithm": "adasun"}})");
  CHECK(has(unknown, "$.base.algorithm: unknown algorithm \"adasun\" (known: "));
  CHECK(has(unknown, "adasum, "));
  CHECK(has(unknown, "sync_sgd"));
  CHECK(has(error_of(R"({"name": "t", "base": {"model": {"name": "quadratik"}}})"),
            "$.base.model.name: unknown model \"quadratik\" (known: "));
  CHECK(has(error_of(R"({"name": "t", "base": {"model": {"name": "quadratic", "xmax": 2}}})"),
            "$.base.model.xmax: unknown key"));
  CHECK(has(error_of(R"({"name": "t", "base": {"algorithm": {"name": "sync_sgd", "combine": "max"}}})"),
            "$.base.algorithm.combine: expected one of sum|average, got \"max\""));
  CHECK(has(error_of(R"({"name": "t", "base": {}, "sweep": {"model.xmax": [1, 2]}})"),
            "spec.json: $.sweep[\"model.xmax\"]: no such key"));
  CHECK(has(error_of(R"({"name": "t", "base": {}, "sweep": {"lr": [0.1, -1]}})"),
            "spec.json: $.sweep.lr[1]: must be > 0, got -1"));
  CHECK(has(error_of(R"({"name": "t", "base": {}, "sweep": {"model": ["quadratic", "nope"]}})"),
            "spec.json: $.sweep.model[1]: unknown model \"nope\""));
  CHECK(has(error_of(R"({"name": "t", "base": {}, "sweep": {"lr": []}})"),
            "$.sweep.lr: expected a non-empty list"));
  CHECK(has(error_of(R"({"base": {}})"), "spec.json: $: missing key \"name\""));
  CHECK(has(error_of(R"({"name": "t"})"), "missing key \"base\""));
}

TEST_CASE("malformed JSON names the line and column") {
  auto m = error_of("{\n  \"name\": \"t\",\n  \"base\": {\"lr\": 0.1,}\n}\n");
  CHECK(has(m, "spec.json:3:"));
  CHECK(has(m, "malformed JSON"));
}

TEST_CASE("a number too large for a double is malformed JSON at its line and column") {
  // fuzz_spec regression (tests/fuzz/corpus_spec/regress-number-overflow.json): the
  // parser's out_of_range.406 escaped parse_experiment as an internal error.
  const auto m = error_of("{\"name\": \"t\",\n \"base\": {\"lr\": 1e999}}");
  CHECK(has(m, "spec.json:2:17: malformed JSON: number overflow parsing '1e999'"));
  CHECK(has(error_of("55544E55555559555555555*: \"t"), "malformed JSON: number overflow"));
}

TEST_CASE("JSON nested deeper than 64 levels is refused at the offending bracket") {
  // fuzz_spec regression (tests/fuzz/corpus_spec/regress-deep-nesting.json): 32000 nested
  // lists overflowed the stack in nlohmann's recursive copy under ASan.
  const std::string deep =
      R"({"name": "t", "base": {"lr": )" + std::string(32000, '[') + std::string(32000, ']') + "}}";
  CHECK(has(error_of(deep),
            "spec.json:1:92: malformed JSON: nested deeper than 64 levels of objects/lists"));
  // Brackets inside strings do not count; 64 levels are fine (then the usual checks).
  CHECK(has(error_of(R"({"name": "[[[[{{{{", "base": {"lr": )" + std::string(62, '[') +
                     std::string(62, ']') + "}}"),
            "$.base.lr: expected a number"));
}

TEST_CASE("a sweep whose run count overflows size_t is refused, not empty") {
  // "[from, from + n)" as a JSON list.
  auto list = [](int from, int n) {
    std::string v = "[";
    for (int i = 0; i < n; ++i) {
      if (i) v += ',';
      v += std::to_string(from + i);
    }
    return v + "]";
  };
  // 8 axes x 256 values = 2^64 runs: the unchecked product wrapped to 0 (no runs at all).
  // fuzz_spec regression seed: tests/fuzz/corpus_spec/regress-sweep-count-wraps.json.
  std::string sweep;
  for (const char* k : {"lr", "seed", "steps", "workers", "batch_size", "epochs", "log_every",
                        "eval_every"}) {
    if (!sweep.empty()) sweep += ", ";
    sweep += '"';
    sweep += k;
    sweep += "\": " + list(1, 256);
  }
  CHECK(has(error_of(R"({"name": "t", "base": {}, "sweep": {)" + sweep + "}}"),
            "spec.json: $.sweep: expands to over 2^64 runs (max 100000)"));
  CHECK(has(error_of(R"({"name": "t", "base": {}, "sweep": {"seed": )" + list(0, 400) +
                     R"(, "steps": )" + list(1, 251) + "}}"),
            "spec.json: $.sweep: expands to 100400 runs (max 100000)"));
}

TEST_CASE("the plan's budget from epochs and from steps") {
  app::RunSpec rs0;
  train::RunConfig& c = rs0.cfg;
  c.workers = 4;
  c.batch_size = 32;
  c.epochs = 2;
  CHECK(app::plan_budget(app::plan_run(rs0), 60000).steps == 938);  // ceil(2 * 60000 / 128)
  c.steps = 10;
  CHECK(app::plan_budget(app::plan_run(rs0), 60000).steps == 10);
  // A mega-batch algorithm's step takes megabatch x batch_size samples, not W x batch_size.
  auto e = parse_experiment(R"({"name": "t", "base": {"workers": 4, "batch_size": 32,
      "epochs": 2}, "sweep": {"algorithm": [{"name": "adaptive_sgd", "megabatch": 8},
      {"name": "elastic_sgd", "megabatch": 8}]}})", "spec.json");
  for (const auto& rs : e.runs) {
    INFO(rs.id);
    CHECK(app::plan_budget(app::plan_run(rs), 60000).steps == 469);  // ceil(2 * 60000 / (8 * 32))
  }
}
