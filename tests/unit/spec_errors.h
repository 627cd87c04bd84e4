// Helpers for tests of the spec parser's errors (test_spec.cpp, test_validation.cpp).
#pragma once

#include <string>

#include "runtime/core/error.h"
#include "runtime/spec.h"

namespace wb::test {

// The message of the UserError thrown by parsing `text` (as "spec.json"), or "" if it parsed.
inline std::string error_of(const std::string& text) {
  try {
    rt::parse_experiment(text, "spec.json");
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

inline bool has(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

}  // namespace wb::test
