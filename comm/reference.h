// Plain single-process reference implementations of every collective: a loop over all
// W worker vectors in one process. They are the test oracle for comm/collectives.cpp
// (and later for the vectorized / CUDA paths), so they favour obviousness over speed.
//
// Adasum (Maleki et al., MLSys 2021 Eq. 8; arXiv:2006.02924 3.6):
//   AS(a, b) = (1 - a.b / (2 |a|^2)) a + (1 - a.b / (2 |b|^2)) b      per tensor
//   AS(g[0,n)) = AS(AS(g[0, n/2)), AS(g[n/2, n)))   floor split, any n >= 1
// Dot products and squared norms accumulate in double. Zero-norm rule: a coefficient
// stays 1 when that side's squared norm is below kAdasumTinyNorm2 (a zero vector then
// contributes nothing and the other side passes through unchanged: AS(0, b) = b).
// The threshold is far below (1e-30)^2 so tiny-but-real gradients are combined exactly.
#pragma once

#include <span>
#include <vector>

namespace wb::comm {

inline constexpr double kAdasumTinyNorm2 = 1e-200;

struct Segment {  // one tensor (or layer, or the whole model) inside the fused buffer
  size_t offset = 0, size = 0;
};

// Coefficients for one segment given a.b, |a|^2, |b|^2.
inline void adasum_coefficients(double dot, double aa, double bb, double& ca, double& cb) {
  ca = aa >= kAdasumTinyNorm2 ? 1.0 - dot / (2.0 * aa) : 1.0;
  cb = bb >= kAdasumTinyNorm2 ? 1.0 - dot / (2.0 * bb) : 1.0;
}

// a <- AS(a, b), per segment.
template <class T>
void adasum_pair_reference(std::span<T> a, std::span<const T> b, std::span<const Segment> segs);

// The tree over all vectors; result returned (inputs untouched).
template <class T>
std::vector<T> adasum_reference(const std::vector<std::vector<T>>& g,
                                std::span<const Segment> segs);

// Sum in the same floor-split tree order (so results do not depend on the rank layout).
template <class T>
std::vector<T> tree_sum_reference(const std::vector<std::vector<T>>& g);

// sum_i w_i g_i / sum_i w_i
template <class T>
std::vector<T> weighted_average_reference(const std::vector<std::vector<T>>& g,
                                          std::span<const double> w);

}  // namespace wb::comm
