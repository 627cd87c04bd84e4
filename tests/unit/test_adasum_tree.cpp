// comm/adasum_tree.h, the one statement of the Adasum tree every implementation follows: its
// split against the floor split written out, and the node's coefficients against Adasum's
// closed forms (Maleki et al., MLSys 2021 Eq. 8): AS(a, a) = a, AS(a, b) = a + b for orthogonal
// a and b, AS(0, b) = b.
#include <doctest/doctest.h>

#include <cstddef>

#include "comm/adasum_tree.h"

using wb::comm::adasum_coefficients;
using wb::comm::kAdasumTinyNorm2;
using wb::comm::tree_internal;
using wb::comm::tree_mid;

TEST_CASE("adasum tree: the floor split, the left half the smaller, and internal nodes") {
  CHECK(tree_mid(0, 5) == 2);  // [0, 2) and [2, 5): layout.h's worked example W = 5
  CHECK(tree_mid(3, 7) == 5);
  CHECK(tree_mid(std::size_t{0}, std::size_t{64}) == 32);
  for (int lo = 0; lo < 20; ++lo)
    for (int hi = lo + 2; hi < 90; ++hi) {
      const int m = tree_mid(lo, hi);
      CAPTURE(lo);
      CAPTURE(hi);
      CHECK(m == (lo + hi) / 2);  // floor of the midpoint (lo, hi >= 0)
      CHECK(m - lo <= hi - m);
      CHECK((hi - m) - (m - lo) <= 1);
    }
  CHECK_FALSE(tree_internal(4, 5));  // one worker: a leaf
  CHECK(tree_internal(4, 6));
}

TEST_CASE("adasum tree: the node's coefficients give Adasum's closed forms") {
  double ca = 0, cb = 0;
  // a = b: a.b = |a|^2 = |b|^2, both coefficients 1/2, AS(a, a) = a
  adasum_coefficients(4.0, 4.0, 4.0, ca, cb);
  CHECK(ca == 0.5);
  CHECK(cb == 0.5);
  // orthogonal: the sum
  adasum_coefficients(0.0, 3.0, 7.0, ca, cb);
  CHECK(ca == 1.0);
  CHECK(cb == 1.0);
  // a.b = 1, |a|^2 = 2, |b|^2 = 4: 1 - 1/4 and 1 - 1/8
  adasum_coefficients(1.0, 2.0, 4.0, ca, cb);
  CHECK(ca == 0.75);
  CHECK(cb == 0.875);
  // a zero side: its coefficient stays 1 (no division by 0) and the other side passes through
  adasum_coefficients(0.0, 0.0, 5.0, ca, cb);
  CHECK(ca == 1.0);
  CHECK(cb == 1.0);
  // the threshold: below it the rule, at it the formula (tiny but real gradients are combined)
  adasum_coefficients(1e-201, kAdasumTinyNorm2 / 10, 1.0, ca, cb);
  CHECK(ca == 1.0);
  adasum_coefficients(kAdasumTinyNorm2, kAdasumTinyNorm2, 1.0, ca, cb);
  CHECK(ca == 0.5);
}
