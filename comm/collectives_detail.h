// Private to comm/: what the in-rank ops (collectives.cpp), the cross-rank part
// (collectives_rvhdd.cpp) and the MPI transport (transport_mpi.h) share.
#pragma once

#include <mpi.h>

#include <climits>
#include <cstddef>
#include <span>
#include <vector>

#include "comm/layout.h"

#include "core/error.h"

namespace wb::comm::detail {

// weighted_average's message for the local weights (the RVHDD phases' tags are in
// comm/rvhdd.h: 301-304).
constexpr int kTagWeights = 305;

// weighted_average across exactly two ranks (collectives_rvhdd.cpp): local workers p (all
// of length n) and their weights; on return p[0] holds the result. `scratch` is the
// caller's reusable byte buffer.
template <class T>
void weighted_average_pair(MPI_Comm comm, int rank, const Layout& layout, const std::vector<T*>& p,
                           size_t n, std::span<const double> local_weights,
                           std::vector<std::byte>& scratch);

inline int count_of(size_t n) {
  WB_ASSERT(n <= static_cast<size_t>(INT_MAX), "buffer too large for one MPI message");
  return static_cast<int>(n);
}

}  // namespace wb::comm::detail
