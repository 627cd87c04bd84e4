// Input validation: bounds of
// every integer, overflow-checked budgets, run ids that are valid HDF5 names, control
// characters, duplicate keys and non-UTF-8 specs. The CLI side is tests/cli/probes/validate.tsv.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "app/experiment/spec.h"
#include "core/error.h"
#include "core/params.h"
#include "spec_errors.h"
#include "train/run_facts.h"

using namespace wb;
using wb::app::parse_experiment;

namespace {
using wb::test::error_of;
using wb::test::has;

struct Counts {
  int64_t n = 1;
  int64_t workers = 1;
  std::vector<int64_t> sizes;
  int64_t seed = 0;
  static void describe(core::ParamSet<Counts>& p) {
    p.field("n", &Counts::n, "a count with the default cap").min(1);
    p.field("workers", &Counts::workers, "a count with its own bound").min(1).max(1 << 20);
    p.field("sizes", &Counts::sizes, "a list of counts").min(1);
    p.field("seed", &Counts::seed, "exact bound above 2^53").max(9007199254740992.0);
  }
};
std::string counts_error(const std::string& text) {
  try {
    core::params_of<Counts>().parse(json::parse(text), core::Where{"f.json", "$"});
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("every integer parameter has an upper bound: a default cap, or its own max()") {
  CHECK(counts_error(R"({"n": 2147483647, "sizes": [1, 2147483647]})") == "");
  CHECK(has(counts_error(R"({"n": 2147483648})"), "f.json: $.n: must be <= 2147483647, got 2147483648"));
  CHECK(has(counts_error(R"({"n": 4294967297})"), "$.n: must be <= 2147483647, got 4294967297"));
  CHECK(has(counts_error(R"({"sizes": [1, 4294967296]})"), "$.sizes[1]: must be <= 2147483647"));
  CHECK(has(counts_error(R"({"n": 18446744073709551615})"), "$.n: integer out of range"));
  // An explicit max() replaces the default cap (not both), in the check and in the docs.
  CHECK(has(counts_error(R"({"workers": 1048577})"), "$.workers: must be <= 1048576, got 1048577"));
  // Integers compare exactly: 2^53 + 1 is a double's 2^53, but it is above the bound.
  CHECK(counts_error(R"({"seed": 9007199254740992})") == "");
  CHECK(has(counts_error(R"({"seed": 9007199254740993})"),
            "$.seed: must be <= 9007199254740992, got 9007199254740993"));
  const auto docs = core::params_of<Counts>().docs();
  CHECK(has(docs[0].doc, "[>= 1] [<= 2147483647]"));
  CHECK(has(docs[1].doc, "[>= 1] [<= 1048576]"));
  CHECK(!has(docs[1].doc, "2147483647"));
  CHECK(has(docs[2].doc, "[<= 2147483647]"));
}

TEST_CASE("run config, algorithm and model integers are bounded at parse time") {
  CHECK(has(error_of(R"({"name": "t", "base": {"batch_size": 4294967297}})"),
            "spec.json: $.base.batch_size: must be <= 2147483647, got 4294967297"));
  CHECK(has(error_of(R"({"name": "t", "base": {"algorithm": {"name": "adaptive_sgd", "megabatch": 1000000000000}}})"),
            "spec.json: $.base.algorithm.megabatch: must be <= 1048576"));
  CHECK(has(error_of(R"({"name": "t", "base": {"algorithm": {"name": "lap_sgd", "H": 4294967296}}})"),
            "spec.json: $.base.algorithm.H: must be <= 2147483647"));
  CHECK(has(error_of(R"({"name": "t", "base": {"model": {"name": "quadratic", "train_size": 4294967296}}})"),
            "spec.json: $.base.model.train_size: must be <= 2147483647"));
  CHECK(has(error_of(R"({"name": "t", "base": {"metrics": {"seq_emulation": {"every": 1, "workers": 4294967296}}}})"),
            "$.base.metrics.seq_emulation.workers: expected \"all\" or an integer >= 1 and <= 1048576"));
  // Derived: a step's samples (W x batch_size, or a mega-batch) fit the 2^31 - 1 a batch holds.
  CHECK(has(error_of(R"({"name": "t", "base": {"workers": 1048576, "batch_size": 4096}})"),
            "spec.json: $.base.batch_size: a step of sync_sgd takes $.workers x $.batch_size = 4294967296 samples"));
  CHECK(has(error_of(R"({"name": "t", "base": {"batch_size": 1048576, "algorithm": {"name": "elastic_sgd", "megabatch": 4096}}})"),
            "$.algorithm.megabatch x $.batch_size = 4294967296 samples"));
  // Sweep values are attributed to their sweep entry.
  CHECK(has(error_of(R"({"name": "t", "base": {}, "sweep": {"batch_size": [32, 2147483648]}})"),
            "spec.json: $.sweep.batch_size[1]: must be <= 2147483647, got 2147483648"));
}

TEST_CASE("budgets are overflow-checked") {
  CHECK(has(error_of(R"({"name": "t", "base": {"epochs": 1e16}})"),
            "spec.json: $.base.epochs: must be <= 1000000, got 10000000000000000"));
  CHECK(has(error_of(R"({"name": "t", "base": {"steps": 9223372036854775807}})"),
            "spec.json: $.base.steps: must be <= 1000000000000"));
  CHECK(has(error_of(R"({"name": "t", "base": {"steps": 1000000000000, "workers": 1024, "batch_size": 1048576}})"),
            "spec.json: $.base.steps: steps x samples per step ($.workers x $.batch_size) = "
            "1000000000000 x 1073741824 = 1.073741824e+21 samples, above the most a run may "
            "process (2^53)"));
  // The budget from epochs needs N: checked where it is computed, at the run's Where.
  app::RunSpec rs;
  train::RunConfig& c = rs.cfg;
  c.epochs = 1e6;
  c.batch_size = 1;
  CHECK(app::plan_budget(app::plan_run(rs), 1000000).steps == 1000000000000);
  try {
    app::plan_budget(app::plan_run(rs), 1000001, core::Where{"spec.json", "$.base"});
    FAIL("no error");
  } catch (const UserError& e) {
    CHECK(has(e.what(), "spec.json: $.base.epochs: epochs x training samples / samples per step = "
                        "1000000 x 1000001 / 1 = 1000001000000 steps, above the most a budget "
                        "may have (1000000000000 steps)"));
  }
  c.epochs = 1e-9;  // tiny budgets still take one step
  CHECK(train::budget_steps(c, 10, 1) == 1);
}

TEST_CASE("run ids are valid HDF5 link names for any value, ordinary ids unchanged") {
  auto e = parse_experiment(R"({"name": "t", "base": {"model": "sparse_mlp"},
      "sweep": {"model.train_file": ["/a/b/", "a%2Fb", "x.txt"], "lr": [0.01]}})", "spec.json");
  REQUIRE(e.runs.size() == 3);
  CHECK(e.runs[0].id == "train_file=%2Fa%2Fb%2F,lr=0.01");
  CHECK(e.runs[1].id == "train_file=a%252Fb,lr=0.01");  // '%' escaped too: ids stay unique
  CHECK(e.runs[2].id == "train_file=x.txt,lr=0.01");
  for (const auto& r : e.runs) CHECK(r.id.find('/') == std::string::npos);
  // Object values (name{key=value}) go through the same escaping.
  auto o = parse_experiment(R"({"name": "t", "base": {},
      "sweep": {"model": [{"name": "sparse_mlp", "data": "d/x"}, "quadratic"]}})", "spec.json");
  CHECK(o.runs[0].id == "model=sparse_mlp{data=d%2Fx}");
  CHECK(o.runs[1].id == "model=quadratic");
}

TEST_CASE("control characters in any string are refused, shown escaped") {
  CHECK(has(error_of(R"({"name": "a\u0000b", "base": {}})"),
            "spec.json: $.name: string \"a\\u0000b\" (line 1) contains the control character U+0000"));
  CHECK(has(error_of(R"({"name": "t", "base": {"algorithm": "adasum\u0000x"}})"),
            "spec.json: $.base.algorithm: string \"adasum\\u0000x\""));
  CHECK(has(error_of("{\"name\": \"t\",\n \"description\": \"tab\\there\", \"base\": {}}"),
            "$.description: string \"tab\\u0009here\" (line 2) contains the control character U+0009"));
  CHECK(has(error_of("{\"name\": \"t\", \"base\": {\"model\": {\"name\": \"sparse_mlp\", \"data\": \"x\x7f\"}}}"),
            "$.base.model.data: string \"x\\u007F\""));
  CHECK(has(error_of(R"({"name": "t", "base": {"l\u001fr": 1}})"),
            "$.base[\"l\\u001Fr\"]: key \"l\\u001Fr\" (line 1) contains the control character U+001F"));
  CHECK(has(error_of(R"({"name": "t", "base": {}, "sweep": {"model.data": ["a", "b\nc"]}})"),
            "$.sweep[\"model.data\"][1]: string \"b\\u000Ac\""));
  // Escaped quotes and backslashes are ordinary characters.
  CHECK(error_of(R"({"name": "t", "description": "a \"quoted\" \\ path", "base": {}})") == "");
}

TEST_CASE("duplicate keys are refused like unknown keys, with both lines") {
  CHECK(has(error_of("{\"name\": \"t\",\n\"base\": {\"lr\": 0.1,\n \"lr\": 0.2}}"),
            "spec.json: $.base.lr: duplicate key \"lr\" (line 3; first at line 2)"));
  CHECK(has(error_of(R"({"name": "t", "base": {}, "name": "u"})"), "spec.json: $.name: duplicate key"));
  // The same key after decoding escapes is the same key.
  CHECK(has(error_of(R"({"name": "t", "base": {"lr": 0.1, "l\u0072": 0.2}})"), "$.base.lr: duplicate key"));
  // Inside lists of objects, and in the sweep.
  CHECK(has(error_of(R"({"name": "t", "base": {}, "sweep": {"algorithm": [{"name": "adasum"}, {"name": "sync_sgd", "name": "adasum"}]}})"),
            "$.sweep.algorithm[1].name: duplicate key"));
  CHECK(has(error_of(R"({"name": "t", "base": {}, "sweep": {"lr": [0.1], "lr": [0.2]}})"),
            "$.sweep.lr: duplicate key"));
  // The same key in different objects is fine.
  CHECK(error_of(R"({"name": "t", "base": {"algorithm": {"name": "adasum"}, "model": {"name": "quadratic"}}})") == "");
}

TEST_CASE("a spec that is not UTF-8 says so") {
  CHECK(has(error_of(std::string("\xFF\xFE{\0\"\0", 6)),
            "spec.json: not UTF-8: the file starts with a UTF-16 (little-endian) byte-order mark"));
  CHECK(has(error_of(std::string("\xFE\xFF\0{", 4)), "UTF-16 (big-endian) byte-order mark"));
  CHECK(has(error_of(std::string("\xFF\xFE\0\0{\0\0\0", 8)), "UTF-32 (little-endian) byte-order mark"));
  CHECK(has(error_of(std::string("{\0\"\0", 4)), "spec.json:1:2: not UTF-8: a NUL byte (is the file UTF-16?)"));
  CHECK(has(error_of("{\"name\": \"caf\xE9\", \"base\": {}}"), "spec.json:1:14: not UTF-8: invalid byte 0xE9"));
  CHECK(has(error_of("{\"name\": \"t\",\n \"description\": \"\xC0\xAF\", \"base\": {}}"),
            "spec.json:2:18: not UTF-8: invalid byte 0xC0"));  // overlong '/'
  CHECK(has(error_of("{\"name\": \"\xED\xA0\x80\", \"base\": {}}"), "not UTF-8: invalid byte 0xED"));  // surrogate
  CHECK(has(error_of("{\"name\": \"\xF4\x90\x80\x80\", \"base\": {}}"), "not UTF-8"));  // > U+10FFFF
  CHECK(has(error_of("{\"name\": \"\xE2\x82\", \"base\": {}}"), "not UTF-8"));          // truncated
  // UTF-8 itself, with or without a byte-order mark, is fine.
  CHECK(error_of("{\"name\": \"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\", \"base\": {}}") == "");
  CHECK(error_of("\xEF\xBB\xBF{\"name\": \"t\", \"base\": {}}") == "");
  CHECK(has(error_of("\xEF\xBB\xBF{\"name\": \"t\", \"name\": \"u\", \"base\": {}}"), "$.name: duplicate key"));
}

TEST_CASE("physical parameters, cosine min_lr and seq_emulation.workers are checked") {
  CHECK(has(error_of(R"({"name": "t", "base": {"clock": {"flops_per_s": 1e-320}}})"),
            "spec.json: $.base.clock.flops_per_s: must be >= 1, got 1e-320"));
  CHECK(has(error_of(R"({"name": "t", "base": {"clock": {"bandwidth_bytes_per_s": 0.5}}})"),
            "$.base.clock.bandwidth_bytes_per_s: must be >= 1"));
  CHECK(has(error_of(R"({"name": "t", "base": {"clock": {"latency_s": 1e300}}})"),
            "$.base.clock.latency_s: must be <= 3600"));
  CHECK(has(error_of(R"({"name": "t", "base": {"heterogeneity": {"speeds": [1, 1e-300]}}})"),
            "$.base.heterogeneity.speeds[1]: must be >= 0.001"));
  CHECK(has(error_of(R"({"name": "t", "base": {"lr": 0.01, "schedule": {"name": "cosine", "min_lr": 0.1}}})"),
            "spec.json: $.base.schedule.min_lr: must be <= lr (0.01), got 0.1"));
  CHECK(error_of(R"({"name": "t", "base": {"lr": 0.1, "schedule": {"name": "cosine", "min_lr": 0.1}}})") == "");
  CHECK(has(error_of(R"({"name": "t", "base": {"workers": 4, "metrics": {"seq_emulation": {"every": 1, "workers": 8}}}})"),
            "spec.json: $.base.metrics.seq_emulation.workers: must be <= workers (4), got 8"));
  // Off (every = 0): the count is not used, so it is not checked against workers.
  CHECK(error_of(R"({"name": "t", "base": {"workers": 4, "metrics": {"seq_emulation": {"workers": 8}}}})") == "");
  // A swept worker count is attributed to the run.
  CHECK(has(error_of(R"({"name": "t", "base": {"metrics": {"seq_emulation": {"every": 1, "workers": 4}}},
      "sweep": {"workers": [4, 2]}})"),
            "$.base.metrics.seq_emulation.workers (run workers=2): must be <= workers (2), got 4"));
}
