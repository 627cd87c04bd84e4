// Private to comm/collectives*.cpp: what the in-rank ops (collectives.cpp) and the
// cross-rank RVHDD schedule (collectives_rvhdd.cpp) share.
#pragma once

#include <climits>
#include <cstddef>

#include "runtime/core/error.h"

namespace wb::comm::detail {

// Message tags of the RVHDD phases (collectives.h: fold, reduce-scatter, allgather, unfold).
constexpr int kTagFold = 301, kTagScatter = 302, kTagGather = 303, kTagUnfold = 304;

inline int count_of(size_t n) {
  WB_ASSERT(n <= static_cast<size_t>(INT_MAX), "buffer too large for one MPI message");
  return static_cast<int>(n);
}

}  // namespace wb::comm::detail
