// Plain single-process reference implementations of every collective: a loop over all
// W worker vectors in one process. They are the test oracle for comm/collectives.cpp
// (and later for the vectorized / CUDA paths), so they favour obviousness over speed.
//
// Adasum: the tree and its node's coefficients as comm/adasum_tree.h states them, with
// plain loops; dot products and squared norms accumulate in double.
#pragma once

#include <span>
#include <vector>

#include "comm/adasum_tree.h"

namespace wb::comm {

struct Segment {  // one tensor (or layer, or the whole model) inside the fused buffer
  size_t offset = 0, size = 0;
};

// a <- AS(a, b), per segment.
template <class T>
void adasum_pair_reference(std::span<T> a, std::span<const T> b, std::span<const Segment> segs);

// The tree over all vectors; result returned (inputs untouched).
template <class T>
std::vector<T> adasum_reference(const std::vector<std::vector<T>>& g,
                                std::span<const Segment> segs);

// Sum in the same tree order (so results do not depend on the rank layout).
template <class T>
std::vector<T> tree_sum_reference(const std::vector<std::vector<T>>& g);

// sum_i w_i g_i / sum_i w_i
template <class T>
std::vector<T> weighted_average_reference(const std::vector<std::vector<T>>& g,
                                          std::span<const double> w);

}  // namespace wb::comm
