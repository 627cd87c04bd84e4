// Layout: every rank owns >= 1 worker, blocks are contiguous and cover [0, W), and every
// block is a node of the floor-split Adasum tree (so in-rank work is a whole subtree).
#include <doctest/doctest.h>

#include <set>
#include <utility>

#include "comm/layout.h"
#include "core/error.h"

namespace {
void tree_nodes(int lo, int hi, std::set<std::pair<int, int>>& out) {
  out.insert({lo, hi});
  if (hi - lo <= 1) return;
  const int m = lo + (hi - lo) / 2;
  tree_nodes(lo, m, out);
  tree_nodes(m, hi, out);
}
// Sizes of the rank-tree nodes at depth k = floor(log2 R): the RVHDD fold relies on them
// being 1 or 2 (collectives.h).
void depth_sizes(int r0, int r1, int depth, int k, std::set<int>& sizes) {
  if (depth == k) {
    sizes.insert(r1 - r0);
    return;
  }
  const int q = r0 + (r1 - r0) / 2;
  depth_sizes(r0, q, depth + 1, k, sizes);
  depth_sizes(q, r1, depth + 1, k, sizes);
}
}  // namespace

TEST_CASE("layout: contiguous covering tree-node blocks for many (W, R)") {
  for (int W = 1; W <= 130; ++W) {
    std::set<std::pair<int, int>> nodes;
    tree_nodes(0, W, nodes);
    for (int R = 1; R <= std::min(W, 40); ++R) {
      CAPTURE(W);
      CAPTURE(R);
      wb::comm::Layout l(W, R);
      CHECK(l.workers() == W);
      CHECK(l.ranks() == R);
      int at = 0;
      for (int r = 0; r < R; ++r) {
        CHECK(l.first(r) == at);
        CHECK(l.count(r) >= 1);
        CHECK(nodes.count({l.first(r), l.first(r) + l.count(r)}) == 1);
        for (int w = l.first(r); w < l.first(r) + l.count(r); ++w) CHECK(l.owner(w) == r);
        at += l.count(r);
      }
      CHECK(at == W);
    }
  }
}

TEST_CASE("layout: rank tree nodes at depth floor(log2 R) hold 1 or 2 ranks") {
  for (int R = 1; R <= 200; ++R) {
    int k = 0;
    while ((2 << k) <= R) ++k;
    std::set<int> sizes;
    depth_sizes(0, R, 0, k, sizes);
    CAPTURE(R);
    CHECK(*sizes.begin() >= 1);
    CHECK(*sizes.rbegin() <= 2);
  }
}

TEST_CASE("layout: more ranks than workers is a user error") {
  CHECK_THROWS_AS(wb::comm::Layout(3, 4), wb::UserError);
  CHECK_THROWS_AS(wb::comm::Layout(0, 1), wb::UserError);
}
