// Private to comm/collectives*.cpp: what the in-rank ops (collectives.cpp) and the
// cross-rank RVHDD schedule (collectives_rvhdd.cpp) share.
#pragma once

#include <mpi.h>

#include <climits>
#include <cstddef>
#include <span>
#include <vector>

#include "comm/layout.h"

#include "core/error.h"
#include "sim/cost_model.h"

namespace wb::comm {
struct Piece;
}
namespace wb::comm::detail {

// Message tags of the RVHDD phases (collectives.h: fold, reduce-scatter, allgather, unfold).
constexpr int kTagFold = 301, kTagScatter = 302, kTagGather = 303, kTagUnfold = 304;
constexpr int kTagWeights = 305;  // weighted_average: the local weights

// weighted_average across exactly two ranks (collectives_rvhdd.cpp): local workers p (all
// of length n) and their weights; on return p[0] holds the result. `scratch` is the
// caller's reusable byte buffer.
template <class T>
void weighted_average_pair(MPI_Comm comm, int rank, const Layout& layout, const std::vector<T*>& p,
                           size_t n, std::span<const double> local_weights,
                           std::vector<std::byte>& scratch);

// The Adasum schedule the cross-worker part takes for n elements of elem_bytes in `pieces`
// over 2^levels positions (collectives_rvhdd.cpp makes the same choice): what the cost
// model prices (sim/cost_model.h).
sim::AdasumSchedule adasum_schedule(const std::vector<comm::Piece>& pieces, size_t n, size_t levels,
                                   size_t elem_bytes);
// The aligned schedule's bytes per level as the cost model prices them
// (sim::CommCall::level_bytes): level l's slices halved on tensor boundaries as
// collectives_rvhdd.cpp halves them, 2 x the larger half of the most uneven slice, in bytes.
// Requires adasum_schedule(...) == kAligned.
void aligned_level_bytes(const std::vector<comm::Piece>& pieces, size_t n, size_t levels, size_t elem_bytes,
                         std::vector<double>& out);

inline int count_of(size_t n) {
  WB_ASSERT(n <= static_cast<size_t>(INT_MAX), "buffer too large for one MPI message");
  return static_cast<int>(n);
}

}  // namespace wb::comm::detail
