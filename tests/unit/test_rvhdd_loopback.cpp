// The cross-rank schedules (comm/rvhdd.h) at 2-16 ranks in one process, over the loopback
// transport: the schedules MPI runs, at rank counts that busy-polling MPI ranks cannot reach on
// a machine with two cores. Each rank starts from its own subtree's value (the in-rank tree of
// comm::Collectives over its workers); every rank must end with the one-rank tree's result:
//   - the whole and aligned schedules bit for bit (no tensor is ever cut: each node's dot
//     products are taken over whole tensors with the in-rank tree's kernel);
//   - the split schedule within 1e-6 (partial dot products summed over each level's group);
//   - the sum bit for bit (every add at the reference tree's node), all of them on every rank
//     alike, folded (extra) ranks included.
#include <doctest/doctest.h>

#include <mpi.h>

#include <cmath>
#include <cstring>
#include <random>
#include <span>
#include <vector>

#include "comm/collectives.h"
#include "comm/reference.h"
#include "comm/rvhdd.h"
#include "comm/transport_loopback.h"

namespace {

using wb::comm::Collectives;
using wb::comm::Layout;
using wb::comm::LoopbackNet;
using wb::comm::LoopbackTransport;
using wb::comm::Piece;
using wb::comm::ReduceOp;
using wb::comm::Segment;
namespace rvhdd = wb::comm::rvhdd;

template <class T>
std::vector<std::vector<T>> random_inputs(int W, size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> d(0.0, 1.0);
  std::vector<std::vector<T>> g(static_cast<size_t>(W), std::vector<T>(n));
  for (auto& v : g)
    for (auto& x : v) x = static_cast<T>(d(rng));
  return g;
}

// Collectives(MPI_COMM_SELF, workers of g[lo, hi)) over those workers: the in-rank tree's value
// for that subtree (op: Adasum when segs is given, else the sum).
template <class T>
std::vector<T> in_rank(const std::vector<std::vector<T>>& g, int lo, int hi, const std::vector<Segment>* segs) {
  std::vector<std::vector<T>> d(g.begin() + lo, g.begin() + hi);
  std::vector<std::span<T>> b;
  for (auto& v : d) b.emplace_back(v);
  Collectives c(MPI_COMM_SELF, hi - lo);
  const std::span<const std::span<T>> bufs(b);
  if (segs)
    c.adasum<T>(bufs, *segs);
  else
    c.allreduce<T>(bufs, ReduceOp::kSum);
  return d[0];
}

// Every rank's result of the cross-rank part at R ranks (W = g.size() workers).
template <class T>
std::vector<std::vector<T>> over_loopback(const std::vector<std::vector<T>>& g, int R,
                                          const std::vector<Segment>* segs) {
  const int W = static_cast<int>(g.size());
  const size_t n = g[0].size();
  LoopbackNet net{Layout(W, R)};
  std::vector<std::vector<T>> out(static_cast<size_t>(R));
  for (int r = 0; r < R; ++r) {
    const Layout& L = net.layout();
    out[static_cast<size_t>(r)] = in_rank(g, L.first(r), L.first(r) + L.count(r), segs);
  }
  const std::vector<Piece> pieces = segs ? Collectives::make_pieces(n, *segs) : std::vector<Piece>{};
  net.run([&](int r) {
    LoopbackTransport t(net, r);
    T* x = out[static_cast<size_t>(r)].data();
    if (segs) {
      std::vector<T> s(rvhdd::adasum_scratch(n));
      std::vector<double> dots;
      rvhdd::adasum(t, t.plan(), x, s.data(), n, pieces, dots);
    } else {
      std::vector<T> s(rvhdd::sum_scratch(t.plan(), n));
      rvhdd::sum(t, t.plan(), x, s.data(), n);
    }
  });
  return out;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

template <class T>
double rel_err(const std::vector<T>& a, const std::vector<T>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - double(b[i])) * (double(a[i]) - double(b[i]));
    den += double(b[i]) * double(b[i]);
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

// Tensors of `size` elements from `at`, with a gap of `gap` after each.
std::vector<Segment> tensors(size_t at, size_t count, size_t size, size_t gap) {
  std::vector<Segment> s;
  for (size_t i = 0; i < count; ++i, at += size + gap) s.push_back({at, size});
  return s;
}

struct Case {
  const char* name;
  size_t n;
  std::vector<Segment> segs;
  wb::sim::AdasumSchedule schedule;
};

// One case per schedule, each at every level count the rank counts below reach.
std::vector<Case> cases() {
  using S = wb::sim::AdasumSchedule;
  return {
      // 3,000 floats (12 KB): the whole vector per level; a gap before, between and after
      {"whole", 3000, tensors(7, 9, 300, 19), S::kWhole},
      // 61 tensors of 3,001 floats (732 KB): every halving moves to a tensor boundary
      {"aligned", 61 * 3001 + 5, tensors(0, 61, 3001, 0), S::kAligned},
      // one tensor of 300,001 floats (1.2 MB, two pipeline chunks at level 0) between small
      // ones: the midpoint cuts it far from any boundary
      {"split", 301000, {{0, 500}, {500, 300001}, {300501, 499}}, S::kSplit},
  };
}

}  // namespace

// In float the node's dot products (accumulated in double from exact float products) rarely
// depend on the kernel's order; in double they do, so a schedule that took another kernel for a
// node than the in-rank tree would show in double.
template <class T>
void check_adasum_cases(double split_tol) {
  for (const Case& c : cases()) {
    const auto pieces = Collectives::make_pieces(c.n, c.segs);
    for (int R : {2, 3, 4, 5, 6, 7, 8, 12, 16}) {
      for (int W : {R, 2 * R + 1}) {
        CAPTURE(c.name);
        CAPTURE(sizeof(T));
        CAPTURE(R);
        CAPTURE(W);
        size_t levels = 0;
        while ((size_t{2} << levels) <= static_cast<size_t>(R)) ++levels;
        REQUIRE(rvhdd::schedule_of(pieces, c.n, levels, sizeof(T)) == c.schedule);
        const auto g = random_inputs<T>(W, c.n, static_cast<unsigned>(97 * R + W));
        const auto want = in_rank(g, 0, W, &c.segs);
        const auto got = over_loopback(g, R, &c.segs);
        for (int r = 0; r < R; ++r) {
          CAPTURE(r);
          CHECK(same_bits(got[static_cast<size_t>(r)], got[0]));  // every rank alike
        }
        if (c.schedule == wb::sim::AdasumSchedule::kSplit)
          CHECK(rel_err(got[0], want) < split_tol);
        else
          CHECK(same_bits(got[0], want));
      }
    }
  }
}

TEST_CASE("rvhdd over the loopback transport: Adasum at 2-16 ranks equals the one-rank tree (float)") {
  check_adasum_cases<float>(1e-6);
}

TEST_CASE("rvhdd over the loopback transport: Adasum at 2-16 ranks equals the one-rank tree (double)") {
  check_adasum_cases<double>(1e-12);
}

TEST_CASE("rvhdd over the loopback transport: the sum is bit-identical to the tree-sum reference") {
  for (size_t n : {size_t{31}, size_t{5000}, size_t{300001}}) {
    for (int R : {2, 3, 5, 8, 13}) {
      const int W = 2 * R + 1;
      CAPTURE(n);
      CAPTURE(R);
      const auto g = random_inputs<float>(W, n, static_cast<unsigned>(n + R));
      const auto want = wb::comm::tree_sum_reference(g);
      const auto got = over_loopback<float>(g, R, nullptr);
      for (const auto& v : got) CHECK(same_bits(v, want));
    }
  }
}

TEST_CASE("rvhdd plan: positions, folds and levels as the floor-split tree over ranks") {
  // R = 3: the tree is ({0}, {1, 2}); rank 2 folds into rank 1 (collectives.h's worked example).
  const Layout L3(7, 3);
  const auto p0 = rvhdd::make_plan(L3, 0), p1 = rvhdd::make_plan(L3, 1), p2 = rvhdd::make_plan(L3, 2);
  CHECK(p0.levels == 1);
  CHECK(p0.position == 0);
  CHECK(p0.fold_partner == -1);
  CHECK(p1.position == 1);
  CHECK(p1.fold_partner == 2);
  CHECK(p2.is_extra);
  CHECK(p2.position == -1);
  CHECK(p2.fold_partner == 1);
  CHECK(p0.position_rank == std::vector<int>{0, 1});
  // Level 0's children: position 0 holds workers [0, 3) (internal), position 1 [3, 7).
  CHECK(p0.internal0);
  // One worker a rank, R = 2: level 0 pairs two leaves.
  CHECK_FALSE(rvhdd::make_plan(Layout(2, 2), 0).internal0);
  // R = 12: 8 positions, 4 of them folded pairs; every rank is a position or an extra.
  const Layout L12(12, 12);
  int extras = 0, positions = 0;
  for (int r = 0; r < 12; ++r) {
    const auto p = rvhdd::make_plan(L12, r);
    CHECK(p.levels == 3);
    extras += p.is_extra;
    positions += p.position >= 0;
  }
  CHECK(extras == 4);
  CHECK(positions == 8);
}
