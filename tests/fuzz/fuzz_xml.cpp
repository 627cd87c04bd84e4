// libFuzzer target: the Extreme Classification Repository reader (models/xml_data.h),
// through its in-memory entry point parse_xml(std::istream&). Any input must either
// give well-formed CSR data or raise wb::UserError ("<name>:<line>: ..."); a crash, a
// sanitizer report, another exception type, a hang (-timeout) or a huge allocation
// (-rss_limit_mb / -malloc_limit_mb) is a bug. Checked on every accepted input:
//  - the CSR invariants the training code relies on (ptr arrays monotone, indices in
//    [0, F) / [0, L), sorted and unique per row, finite values, N rows);
//  - limit = 1 and 2 keep exactly a prefix of the full parse;
//  - XmlDataset::gather of every row reproduces it (ASan checks the copies).
// Built with -DWORKBENCH_FUZZ=ON (clang); run by `make -f Makefile.experiments fuzz`.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "models/xml_data.h"
#include "core/error.h"

namespace {

using wb::models::XmlData;

#define FUZZ_CHECK(cond) \
  do {                   \
    if (!(cond)) __builtin_trap(); \
  } while (0)

void check_csr(const std::vector<int64_t>& ptr, const std::vector<int32_t>& idx, int64_t dim) {
  FUZZ_CHECK(!ptr.empty() && ptr.front() == 0);
  FUZZ_CHECK(ptr.back() == static_cast<int64_t>(idx.size()));
  for (size_t r = 0; r + 1 < ptr.size(); ++r) {
    FUZZ_CHECK(ptr[r] <= ptr[r + 1]);
    for (int64_t k = ptr[r]; k < ptr[r + 1]; ++k) {
      const int32_t v = idx[static_cast<size_t>(k)];
      FUZZ_CHECK(v >= 0 && v < dim);
      if (k > ptr[r]) FUZZ_CHECK(idx[static_cast<size_t>(k - 1)] < v);  // sorted, unique
    }
  }
}

void check(const XmlData& d) {
  FUZZ_CHECK(d.features >= 1 && d.labels >= 1);
  FUZZ_CHECK(d.x_ptr.size() == d.y_ptr.size());
  FUZZ_CHECK(d.x_idx.size() == d.x_val.size());
  check_csr(d.x_ptr, d.x_idx, d.features);
  check_csr(d.y_ptr, d.y_idx, d.labels);
  for (float v : d.x_val) FUZZ_CHECK(std::isfinite(v));
}

bool is_prefix(const XmlData& p, const XmlData& d) {
  const size_t n = p.size();
  if (n > d.size() || p.features != d.features || p.labels != d.labels) return false;
  const auto nx = static_cast<size_t>(p.x_ptr[n]), ny = static_cast<size_t>(p.y_ptr[n]);
  return std::equal(p.x_ptr.begin(), p.x_ptr.end(), d.x_ptr.begin()) &&
         std::equal(p.y_ptr.begin(), p.y_ptr.end(), d.y_ptr.begin()) &&
         p.x_idx.size() == nx && std::equal(p.x_idx.begin(), p.x_idx.end(), d.x_idx.begin()) &&
         std::equal(p.x_val.begin(), p.x_val.end(), d.x_val.begin()) && p.y_idx.size() == ny &&
         std::equal(p.y_idx.begin(), p.y_idx.end(), d.y_idx.begin());
}

XmlData parse(const std::string& text, uint64_t limit) {
  std::istringstream in(text);
  return wb::models::parse_xml(in, "fuzz.txt", limit);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  XmlData full;
  try {
    full = parse(text, 0);
  } catch (const wb::UserError&) {
    // Bad input: a limited read may still accept it (rows past the limit are only
    // counted), but it must not crash either.
    for (uint64_t limit : {1, 2}) {
      try {
        check(parse(text, limit));
      } catch (const wb::UserError&) {
      }
    }
    return 0;
  }
  check(full);
  for (uint64_t limit : {1, 2}) {
    const XmlData part = parse(text, limit);  // accepted in full => accepted limited
    check(part);
    FUZZ_CHECK(part.size() == std::min<size_t>(limit, full.size()));
    FUZZ_CHECK(is_prefix(part, full));
  }
  // Batches of the whole set, in reverse order, through the training path's gather.
  const auto shared = std::make_shared<const XmlData>(std::move(full));
  const wb::models::XmlDataset ds(shared);
  std::vector<uint32_t> rows(ds.size());
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<uint32_t>(rows.size() - 1 - i);
  wb::models::Batch b;
  ds.reserve(b, static_cast<int>(rows.size()));
  ds.gather(rows, b);
  FUZZ_CHECK(b.n == static_cast<int>(rows.size()));
  for (size_t k = 0; k < rows.size(); ++k) {
    const XmlData& d = *shared;
    const size_t r = rows[k];
    FUZZ_CHECK(b.x_ptr[k + 1] - b.x_ptr[k] == d.x_ptr[r + 1] - d.x_ptr[r]);
    FUZZ_CHECK(b.y_ptr[k + 1] - b.y_ptr[k] == d.y_ptr[r + 1] - d.y_ptr[r]);
    for (int64_t j = 0; j < d.x_ptr[r + 1] - d.x_ptr[r]; ++j) {
      FUZZ_CHECK(b.x_idx[static_cast<size_t>(b.x_ptr[k] + j)] ==
                 d.x_idx[static_cast<size_t>(d.x_ptr[r] + j)]);
      FUZZ_CHECK(b.x_val[static_cast<size_t>(b.x_ptr[k] + j)] ==
                 d.x_val[static_cast<size_t>(d.x_ptr[r] + j)]);
    }
  }
  return 0;
}
