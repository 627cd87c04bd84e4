// Helpers for tests of the spec parser's errors (test_spec.cpp, test_validation.cpp).
#pragma once

#include <string>

#include "app/plan/run_plan.h"
#include "app/experiment/spec.h"
#include "core/error.h"

namespace wb::test {

// The message of the UserError thrown by parsing `text` (as "spec.json") and planning its
// runs from their configs (the counts an algorithm derives), or "" if it passed.
inline std::string error_of(const std::string& text) {
  try {
    (void)app::plan_runs(app::parse_experiment(text, "spec.json"));
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

inline bool has(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

}  // namespace wb::test
