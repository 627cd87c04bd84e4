#include "comm/layout.h"

#include <algorithm>
#include <string>

#include "comm/adasum_tree.h"
#include "core/error.h"

namespace wb::comm {

Layout::Layout(int workers, int ranks) : workers_(workers), ranks_(ranks), first_(ranks + 1, 0) {
  if (workers < 1 || ranks < 1 || ranks > workers)
    throw UserError("", "cannot place " + std::to_string(workers) + " workers on " +
                            std::to_string(ranks) +
                            " MPI ranks: need 1 <= ranks <= workers (run fewer ranks)");
  assign(0, workers, 0, ranks);
  first_[ranks] = workers;
}

void Layout::assign(int lo, int hi, int r0, int r1) {
  if (r1 - r0 == 1) {
    first_[r0] = lo;
    return;
  }
  const int m = tree_mid(lo, hi), q = tree_mid(r0, r1);  // workers and ranks cut alike
  assign(lo, m, r0, q);
  assign(m, hi, q, r1);
}

int Layout::owner(int worker) const {
  auto it = std::upper_bound(first_.begin(), first_.end() - 1, worker);
  return static_cast<int>(it - first_.begin()) - 1;
}

}  // namespace wb::comm
