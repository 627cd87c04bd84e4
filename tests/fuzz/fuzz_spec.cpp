// libFuzzer target: the experiment-spec parser (JSON -> validated, expanded runs).
// Any input must either parse or raise wb::UserError; anything else (a crash, a
// sanitizer report, another exception type, an accepted spec with no runs or duplicate
// run ids) is a bug. Built with -DWORKBENCH_FUZZ=ON
// (clang); run by `make -f Makefile.experiments fuzz`.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "app/plan/run_plan.h"
#include "app/experiment/spec.h"
#include "core/error.h"

namespace {

// Runs a valid sweep of this spec would expand to (1 when it is not one): the product of
// the "sweep" list lengths, saturated.
size_t sweep_runs(const std::string& text) {
  wb::json j;
  try {
    j = wb::json::parse(text);
  } catch (const wb::json::exception&) {
    return 1;
  }
  if (!j.is_object() || !j.contains("sweep") || !j["sweep"].is_object()) return 1;
  size_t n = 1;
  for (const auto& [_, v] : j["sweep"].items())
    if (v.is_array() && !v.empty()) n = __builtin_mul_overflow(n, v.size(), &n) ? SIZE_MAX : n;
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // Bounded work per input: a sweep within the documented 100000-run limit is expanded
  // run by run (~17 us each in a release build, ~0.4 ms under ASan+UBSan, so up to 40 s
  // an input here). Past a few thousand runs the code path is the same as for a small
  // sweep, so those inputs are skipped; over 100000 (the error path) is still fuzzed.
  if (const size_t runs = sweep_runs(text); runs > 2000 && runs <= 100000) return 0;
  wb::app::Experiment e;
  try {
    e = wb::app::parse_experiment(text, "fuzz.json");
    (void)wb::app::plan_runs(e);  // the counts each run's algorithm derives from its config
  } catch (const wb::UserError&) {
    return 0;
  }
  // An accepted spec has at least one run (the base), at most the documented 100000,
  // with unique ids and indices 0..n-1.
  if (e.runs.empty() || e.runs.size() > 100000) __builtin_trap();
  std::set<std::string> ids;
  for (size_t i = 0; i < e.runs.size(); ++i)
    if (e.runs[i].index != static_cast<int>(i) || !ids.insert(e.runs[i].id).second)
      __builtin_trap();
  return 0;
}
