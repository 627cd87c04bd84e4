// The plan over ranks and the aligned schedule's split points (comm/rvhdd.h).
#include "comm/rvhdd.h"

#include <utility>

namespace wb::comm::rvhdd {

namespace {

// Depth-k nodes of the floor-split tree over ranks [r0, r1) (see layout.h).
void depth_nodes(int r0, int r1, int depth, int k, std::vector<std::pair<int, int>>& out) {
  if (depth == k) {
    out.emplace_back(r0, r1);
    return;
  }
  const int q = tree_mid(r0, r1);
  depth_nodes(r0, q, depth + 1, k, out);
  depth_nodes(q, r1, depth + 1, k, out);
}

// The aligned schedule moves each split point from the midpoint to the nearest piece boundary
// when that moves it at most kMaxShiftBytes or 1/16 of the slice: no tensor is ever cut and
// the per-level coefficient sum (a latency-bound message round) disappears, at the price of
// imbalance.
constexpr size_t kMaxShiftBytes = size_t{64} << 10;
constexpr size_t kNoSplit = ~size_t{0};

size_t aligned_mid(const std::vector<Piece>& pieces, size_t lo, size_t hi, size_t elem_bytes) {
  if (hi - lo < 2) return kNoSplit;
  const size_t mid = lo + (hi - lo) / 2;
  auto it = std::upper_bound(pieces.begin(), pieces.end(), mid,
                             [](size_t v, const Piece& p) { return v < p.offset; });
  size_t best = kNoSplit, dist = kNoSplit;
  if (it != pieces.end() && it->offset < hi) {
    best = it->offset;
    dist = it->offset - mid;
  }
  if (it != pieces.begin()) {
    const size_t b = std::prev(it)->offset;  // <= mid
    if (b > lo && mid - b < dist) {
      best = b;
      dist = mid - b;
    }
  }
  if (best == kNoSplit) return kNoSplit;
  return dist * elem_bytes <= kMaxShiftBytes || dist <= (hi - lo) / 16 ? best : kNoSplit;
}

// Every slice of level l (all positions: every rank must take the same branch) split on a
// boundary; `mine` collects this position's slices.
bool plan_aligned_at(const std::vector<Piece>& pieces, size_t lo, size_t hi, size_t l, size_t levels,
                     int position, bool on_path, size_t elem_bytes, std::vector<Step>& mine) {
  if (l == levels) return true;
  const size_t mid = aligned_mid(pieces, lo, hi, elem_bytes);
  if (mid == kNoSplit) return false;
  const bool upper = (position >> l) & 1;
  if (on_path) mine[l] = {lo, mid, hi, upper};
  return plan_aligned_at(pieces, lo, mid, l + 1, levels, position, on_path && !upper, elem_bytes, mine) &&
         plan_aligned_at(pieces, mid, hi, l + 1, levels, position, on_path && upper, elem_bytes, mine);
}

}  // namespace

Plan make_plan(const Layout& layout, int rank) {
  Plan c;
  const int R = layout.ranks();
  int k = 0;
  while ((2 << k) <= R) ++k;  // P = 2^k <= R < 2P
  c.levels = static_cast<size_t>(k);
  std::vector<std::pair<int, int>> nodes;
  depth_nodes(0, R, 0, k, nodes);
  c.position_rank.resize(nodes.size());
  for (size_t p = 0; p < nodes.size(); ++p) {
    const auto [r0, r1] = nodes[p];
    WB_ASSERT(r1 - r0 == 1 || r1 - r0 == 2, "depth-k rank nodes hold 1 or 2 ranks");
    c.position_rank[p] = r0;
    if (rank == r0) {
      c.position = static_cast<int>(p);
      if (r1 - r0 == 2) c.fold_partner = r0 + 1;
    } else if (rank == r0 + 1 && r1 - r0 == 2) {
      c.is_extra = true;
      c.fold_partner = r0;
    }
  }
  if (c.is_extra) return c;
  if (c.fold_partner >= 0)
    c.fold_internal = tree_internal(0, layout.count(rank)) || tree_internal(0, layout.count(c.fold_partner));
  // Workers under position p's depth-k node: ranks position_rank[p] .. the next position's.
  auto pos_workers = [&](int p) {
    const size_t q = static_cast<size_t>(p);
    const int r0 = c.position_rank[q];
    const int r1 = q + 1 < c.position_rank.size() ? c.position_rank[q + 1] : R;
    return (r1 < R ? layout.first(r1) : layout.workers()) - layout.first(r0);
  };
  c.internal0 = k > 0 && (pos_workers(c.position) >= 2 || pos_workers(c.position ^ 1) >= 2);
  return c;
}

bool plan_aligned(const std::vector<Piece>& pieces, size_t n, size_t levels, int position, size_t elem_bytes,
                  std::vector<Step>& mine) {
  mine.assign(levels, Step{});
  return plan_aligned_at(pieces, 0, n, 0, levels, position, true, elem_bytes, mine);
}

sim::AdasumSchedule schedule_of(const std::vector<Piece>& pieces, size_t n, size_t levels, size_t elem_bytes) {
  if (n * elem_bytes <= kWholeBytes) return sim::AdasumSchedule::kWhole;
  std::vector<Step> steps;
  return plan_aligned(pieces, n, levels, 0, elem_bytes, steps) ? sim::AdasumSchedule::kAligned
                                                                : sim::AdasumSchedule::kSplit;
}

void aligned_level_bytes(const std::vector<Piece>& pieces, size_t n, size_t levels, size_t elem_bytes,
                         std::vector<double>& out) {
  out.assign(levels, 0.0);
  // Breadth first over plan_aligned's slices: level l holds 2^l of them.
  std::vector<std::pair<size_t, size_t>> slices{{0, n}}, next;
  for (size_t l = 0; l < levels; ++l) {
    next.clear();
    for (const auto& [lo, hi] : slices) {
      const size_t mid = aligned_mid(pieces, lo, hi, elem_bytes);
      WB_ASSERT(mid != kNoSplit, "aligned_level_bytes: the schedule is not aligned");
      const size_t half = std::max(mid - lo, hi - mid);
      out[l] = std::max(out[l], 2.0 * static_cast<double>(half * elem_bytes));
      next.push_back({lo, mid});
      next.push_back({mid, hi});
    }
    slices.swap(next);
  }
}

}  // namespace wb::comm::rvhdd
