// The spec as text (DESIGN.md section 2): what the parsed JSON value no longer shows is
// checked on the bytes -- the file's kind and size, the encoding (UTF-8), the nesting depth,
// duplicate keys and control characters -- each refused with the file and its line or JSON
// path. The schema (run_config_json.cpp) and the sweep's expansion (sweep_expansion.cpp) see a
// value that passed all of these.
#pragma once

#include <cstddef>

#include <string>

#include "core/params.h"

namespace wb::app {

// The JSON value of a spec's text: UTF-8, well-formed, at most 64 levels deep, no duplicate
// key and no control character in any string (UserError naming file:line:col or the path).
// Parsing a large spec answers a signal (throws Interrupted).
json parse_spec_text(const std::string& text, const std::string& file);

// (line, column), 1-based, of byte `byte` of `text`.
std::pair<int, int> line_col(const std::string& text, size_t byte);

// The bytes of a spec file: a regular file of at most kMaxSpecBytes (a device such as
// /dev/zero, a FIFO or a huge file is refused before it is read); reading answers a signal
// (throws Interrupted).
constexpr size_t kMaxSpecBytes = 64u << 20;
std::string read_spec_file(const std::string& path);

}  // namespace wb::app
