// Which MPI rank owns which logical workers.
//
// Ranks own contiguous blocks of workers, cut so that every rank block is a node of the
// Adasum reduction tree. The tree splits a worker range [lo, hi) at tree_mid(lo, hi) =
// lo + (hi-lo)/2 (comm/adasum_tree.h; floor split: the left half is the smaller one for odd sizes). The ranks are split
// the same way, recursively, together with the workers:
//
//   assign([lo,hi), [r0,r1)):  if r1-r0 == 1: rank r0 owns [lo,hi)
//                              else m = lo + (hi-lo)/2, q = r0 + (r1-r0)/2
//                                   assign([lo,m), [r0,q)); assign([m,hi), [q,r1))
//
// Worked example, W = 5, R = 2: [0,5) splits at 2, ranks {0},{1}: rank 0 owns [0,2),
// rank 1 owns [2,5). W = 7, R = 3: [0,7) -> [0,3) for rank 0, [3,7) for ranks {1,2}
// -> rank 1 owns [3,5), rank 2 owns [5,7).
// Each side of a split gets at least as many workers as ranks whenever W >= R
// (floor(W/2) >= floor(R/2)), so every rank owns >= 1 worker. Because rank blocks are
// tree nodes, the in-rank part of any tree collective is a whole subtree and the
// cross-rank part is the same floor-split tree over ranks: results do not depend on R.
#pragma once

#include <vector>

namespace wb::comm {

class Layout {
 public:
  Layout(int workers, int ranks);
  int workers() const { return workers_; }
  int ranks() const { return ranks_; }
  int first(int rank) const { return first_[rank]; }
  int count(int rank) const { return first_[rank + 1] - first_[rank]; }
  int owner(int worker) const;

 private:
  void assign(int lo, int hi, int r0, int r1);
  int workers_, ranks_;
  std::vector<int> first_;  // ranks_+1 entries
};

}  // namespace wb::comm
