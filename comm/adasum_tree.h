// The Adasum reduction tree: the one statement of its shape and of its node's coefficients,
// which every implementation follows (comm/reference.cpp, the in-rank tree of
// comm/collectives.cpp, the cross-rank levels of comm/rvhdd.h, the rank layout of
// comm/layout.cpp and the device tree of cuda/collectives_cuda.cu).
//
// Adasum (Maleki et al., MLSys 2021 Eq. 8; arXiv:2006.02924 section 3.6), per tensor:
//   AS(a, b) = (1 - a.b / (2 |a|^2)) a + (1 - a.b / (2 |b|^2)) b
//   AS(g[lo, hi)) = AS(AS(g[lo, mid)), AS(g[mid, hi))),  mid = tree_mid(lo, hi)
// Adasum is not associative, so the tree's shape is part of the result: every implementation
// must cut [lo, hi) at the same point, or results would depend on the rank count. The floor
// split puts the smaller half on the left for odd sizes, and the rank layout cuts the ranks the
// same way (comm/layout.h), so each rank's workers are a whole subtree.
//
// Header-only and free of the vector kernels, so that device code compiles it too.
#pragma once

#if defined(__CUDACC__)
#define WB_TREE_HD __host__ __device__
#else
#define WB_TREE_HD
#endif

namespace wb::comm {

// Where node [lo, hi) splits into its children [lo, mid) and [mid, hi).
template <class I>
WB_TREE_HD constexpr I tree_mid(I lo, I hi) {
  return lo + (hi - lo) / 2;
}

// Whether a child [lo, hi) is an internal node of the tree: two or more leaves, so its value is
// materialized by a combine before its parent reads it (a leaf is a worker's own vector). The
// node's kernels differ by this (kern::combine_dot3 fuses the materialization with the parent's
// dot products), and every implementation picks the same kernel for the same node.
template <class I>
WB_TREE_HD constexpr bool tree_internal(I lo, I hi) {
  return hi - lo >= 2;
}

// Zero-norm rule: a coefficient stays 1 when that side's squared norm is below this (a zero
// vector then contributes nothing and the other side passes through unchanged: AS(0, b) = b).
// Far below (1e-30)^2, so tiny but real gradients are combined exactly.
inline constexpr double kAdasumTinyNorm2 = 1e-200;

// A node's coefficients {ca, cb} from a.b, |a|^2, |b|^2 (accumulated in double).
WB_TREE_HD inline void adasum_coefficients(double dot, double aa, double bb, double& ca, double& cb) {
  ca = aa >= kAdasumTinyNorm2 ? 1.0 - dot / (2.0 * aa) : 1.0;
  cb = bb >= kAdasumTinyNorm2 ? 1.0 - dot / (2.0 * bb) : 1.0;
}

}  // namespace wb::comm
