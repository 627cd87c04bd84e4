// Collectives against the single-process references (comm/reference.h) for many
// (W, R, length, tensor split), fp32 and fp64, plus Horovod's Adasum properties.
// Runs under `mpirun -n 1` and `-n 2`: every case runs on MPI_COMM_WORLD (R = size) and
// on MPI_COMM_SELF (R = 1, each rank on its own), so both paths are exercised in one job.
// With more slots (mpirun -n 3 / -n 4) the same cases cover the folded non-power-of-two
// schedule and two RVHDD levels.
#include <doctest/doctest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "comm/async_sum.h"
#include "comm/collectives.h"
#include "comm/reference.h"

using wb::comm::Collectives;
using wb::comm::ReduceOp;
using wb::comm::Segment;

namespace {

int world_size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

template <class T>
std::vector<std::vector<T>> random_inputs(int W, size_t n, unsigned seed, double scale = 1.0) {
  std::vector<std::vector<T>> g(W, std::vector<T>(n));
  for (int w = 0; w < W; ++w) {
    std::mt19937_64 rng(seed * 1000003u + static_cast<unsigned>(w));
    std::normal_distribution<double> nd(0.0, 1.0);
    // A shared component makes the inputs correlated (non-trivial coefficients).
    for (size_t i = 0; i < n; ++i)
      g[w][i] = static_cast<T>(scale * (nd(rng) + 0.5 * std::sin(0.1 * static_cast<double>(i))));
  }
  return g;
}

// This rank's copies of its workers' inputs, and spans over them.
template <class T>
struct Local {
  std::vector<std::vector<T>> data;
  std::vector<std::span<T>> spans;
  Local(const Collectives& c, const std::vector<std::vector<T>>& g) {
    for (int k = 0; k < c.local_count(); ++k) data.push_back(g[c.first_local() + k]);
    for (auto& d : data) spans.emplace_back(d);
  }
  std::span<const std::span<T>> bufs() const { return spans; }
};

template <class T>
double rel_err(const std::vector<T>& x, const std::vector<T>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = static_cast<double>(x[i]) - static_cast<double>(ref[i]);
    num += d * d;
    den += static_cast<double>(ref[i]) * static_cast<double>(ref[i]);
  }
  if (den == 0) return std::sqrt(num);
  return std::sqrt(num / den);
}

template <class T>
double tol() {
  return sizeof(T) == 4 ? 1e-6 : 1e-12;
}

// memcmp of n elements that is defined for empty vectors (their data() may be null).
template <class T>
bool same_bits(const T* a, const T* b, size_t n) {
  return n == 0 || std::memcmp(a, b, n * sizeof(T)) == 0;
}

// Every local buffer bit-identical to the first, and the first bit-identical to rank 0's.
template <class T>
bool identical_everywhere(MPI_Comm comm, const std::vector<std::vector<T>>& local) {
  for (auto& d : local)
    if (!same_bits(d.data(), local[0].data(), d.size())) return false;
  std::vector<T> root = local[0];
  MPI_Bcast(root.data(), static_cast<int>(root.size() * sizeof(T)), MPI_BYTE, 0, comm);
  int same = same_bits(root.data(), local[0].data(), root.size()) ? 1 : 0, all = 0;
  MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_MIN, comm);
  return all == 1;
}

// Tensor splits that straddle every halving boundary of the RVHDD schedule (levels up to
// 3, i.e. R up to 8): a boundary one past each midpoint, so the tensor that contains a
// midpoint is split between the two halves; plus a zero-size segment and a gap.
std::vector<std::vector<Segment>> splits(size_t n) {
  std::vector<std::vector<Segment>> out;
  out.push_back({{0, n}});
  std::vector<size_t> mids;
  std::vector<std::pair<size_t, size_t>> cur{{0, n}};
  for (int l = 0; l < 3; ++l) {
    std::vector<std::pair<size_t, size_t>> next;
    for (auto [lo, hi] : cur) {
      const size_t m = lo + (hi - lo) / 2;
      mids.push_back(m);
      next.push_back({lo, m});
      next.push_back({m, hi});
    }
    cur = next;
  }
  std::vector<size_t> cuts{0};
  for (size_t m : mids)
    if (m + 1 < n) cuts.push_back(m + 1);
  cuts.push_back(n);
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  std::vector<Segment> straddle;
  for (size_t i = 0; i + 1 < cuts.size(); ++i) straddle.push_back({cuts[i], cuts[i + 1] - cuts[i]});
  if (n > 0) out.push_back(straddle);
  if (n >= 4) {  // a zero-size segment, a gap in the middle and an uncovered tail
    out.push_back({{0, 0}, {0, n / 4}, {n / 2, n / 4}});
  }
  return out;
}

const std::vector<int> kWorkers{1, 2, 3, 4, 5, 7, 8, 13, 16, 64};
const size_t kN = 53;  // awkward base size: 20n-17 = 1043, 2n+1 = 107
// 9001 elements (36 KB of fp32) is above the whole-vector exchange limit of
// rank_adasum, so the RVHDD schedules (aligned splits and the general one) run too. The
// whole-vector exchange goes in messages of at most 8 KB: 5000 fp32 elements are three of
// them (the last one partial), 1043 fp64 elements two (5000 fp64 take RVHDD).
const std::vector<size_t> kLengths{0, 1, 2, 31, 1000, 20 * kN - 17, 2 * kN + 1, 5000, 9001};

template <class T>
void check_adasum_vs_reference(MPI_Comm comm) {
  int R = 1;
  MPI_Comm_size(comm, &R);
  for (int W : kWorkers) {
    if (W < R) continue;
    Collectives c(comm, W);
    for (size_t n : kLengths) {
      for (const auto& segs : splits(n)) {
        CAPTURE(W);
        CAPTURE(R);
        CAPTURE(n);
        CAPTURE(segs.size());
        const auto g = random_inputs<T>(W, n, static_cast<unsigned>(n + 7 * W));
        const auto ref = wb::comm::adasum_reference<T>(g, segs);
        Local<T> loc(c, g);
        c.adasum<T>(loc.bufs(), segs);
        for (auto& d : loc.data) CHECK(rel_err(d, ref) < tol<T>());
        CHECK(identical_everywhere(comm, loc.data));
      }
    }
  }
}

template <class T>
void check_allreduce_vs_reference(MPI_Comm comm) {
  int R = 1;
  MPI_Comm_size(comm, &R);
  for (int W : kWorkers) {
    if (W < R) continue;
    Collectives c(comm, W);
    for (size_t n : kLengths) {
      CAPTURE(W);
      CAPTURE(n);
      const auto g = random_inputs<T>(W, n, static_cast<unsigned>(3 * n + W));
      const auto ref = wb::comm::tree_sum_reference<T>(g);
      Local<T> s(c, g), a(c, g);
      c.allreduce<T>(s.bufs(), ReduceOp::kSum);
      c.allreduce<T>(a.bufs(), ReduceOp::kAverage);
      // Same tree, same adds: bit-identical to the reference whatever R is.
      for (auto& d : s.data) CHECK(same_bits(d.data(), ref.data(), n));
      for (auto& d : a.data)
        for (size_t i = 0; i < n; ++i) CHECK(d[i] == ref[i] / static_cast<T>(W));
      CHECK(identical_everywhere(comm, s.data));
      CHECK(identical_everywhere(comm, a.data));
    }
  }
}

template <class T>
void check_weighted_and_broadcast(MPI_Comm comm) {
  int R = 1;
  MPI_Comm_size(comm, &R);
  for (int W : kWorkers) {
    if (W < R) continue;
    Collectives c(comm, W);
    std::vector<double> w(W);
    for (int i = 0; i < W; ++i) w[i] = 0.5 + 0.37 * ((i * 7) % 5);
    for (size_t n : kLengths) {
      CAPTURE(W);
      CAPTURE(n);
      const auto g = random_inputs<T>(W, n, static_cast<unsigned>(5 * n + W));
      const auto ref = wb::comm::weighted_average_reference<T>(g, w);
      Local<T> loc(c, g);
      c.weighted_average<T>(loc.bufs(), std::span<const double>(w).subspan(c.first_local(), c.local_count()));
      for (auto& d : loc.data) CHECK(rel_err(d, ref) < tol<T>());
      CHECK(identical_everywhere(comm, loc.data));
      for (int root : {0, W / 2, W - 1}) {
        Local<T> b(c, g);
        c.broadcast<T>(b.bufs(), root);
        for (auto& d : b.data) CHECK(same_bits(d.data(), g[root].data(), n));
      }
    }
  }
}

// Depth of each leaf in the floor-split tree over [lo, hi).
void leaf_depths(int lo, int hi, int depth, std::vector<int>& out) {
  if (hi - lo == 1) {
    out[lo] = depth;
    return;
  }
  const int m = lo + (hi - lo) / 2;
  leaf_depths(lo, m, depth + 1, out);
  leaf_depths(m, hi, depth + 1, out);
}

template <class T>
void check_properties(MPI_Comm comm) {
  int R = 1;
  MPI_Comm_size(comm, &R);
  const T t = static_cast<T>(tol<T>());
  for (int W : kWorkers) {
    if (W < R) continue;
    Collectives c(comm, W);
    CAPTURE(W);
    CAPTURE(R);
    const size_t n = 2 * kN + 1 + static_cast<size_t>(W);  // >= W, awkward
    const std::vector<Segment> whole{{0, n}};
    {  // orthonormal inputs -> sum (dot products are exactly 0, coefficients exactly 1)
      std::vector<std::vector<T>> g(W, std::vector<T>(n, T(0)));
      for (int i = 0; i < W; ++i) g[i][static_cast<size_t>(i) * (n / W)] = T(1);  // distinct
      Local<T> loc(c, g);
      c.adasum<T>(loc.bufs(), whole);
      std::vector<T> sum(n, T(0));
      for (auto& v : g)
        for (size_t i = 0; i < n; ++i) sum[i] += v[i];
      for (auto& d : loc.data) CHECK(rel_err(d, sum) == 0.0);
    }
    {  // identical inputs -> their mean (AS(g, g) = g/2 + g/2)
      auto one = random_inputs<T>(1, n, 11)[0];
      std::vector<std::vector<T>> g(W, one);
      Local<T> loc(c, g);
      c.adasum<T>(loc.bufs(), whole);
      for (auto& d : loc.data) CHECK(rel_err(d, one) < t);
    }
    {  // rank-one inputs s_i u: AS(a u, b u) = (a+b)/2 u for a, b != 0, so the tree
       // gives the scaled mean sum_i s_i 2^-depth(i) u (the plain mean for W = 2^k).
      auto u = random_inputs<T>(1, n, 12)[0];
      std::vector<double> s(W);
      std::vector<std::vector<T>> g(W, std::vector<T>(n));
      for (int i = 0; i < W; ++i) {
        s[i] = (i % 3 == 2 ? -0.5 : 1.0) * (1.0 + 0.25 * i);
        for (size_t k = 0; k < n; ++k) g[i][k] = static_cast<T>(s[i] * static_cast<double>(u[k]));
      }
      std::vector<int> depth(W);
      leaf_depths(0, W, 0, depth);
      double scaled = 0;
      for (int i = 0; i < W; ++i) scaled += s[i] * std::ldexp(1.0, -depth[i]);
      std::vector<T> expect(n);
      for (size_t k = 0; k < n; ++k) expect[k] = static_cast<T>(scaled * static_cast<double>(u[k]));
      Local<T> loc(c, g);
      c.adasum<T>(loc.bufs(), whole);
      for (auto& d : loc.data) CHECK(rel_err(d, expect) < 10 * t);
    }
    for (double mag : {1e-30, 1e30}) {  // tiny and huge magnitudes: finite, scale-equivariant
      CAPTURE(mag);
      const auto g1 = random_inputs<T>(W, n, 13);
      const auto g = random_inputs<T>(W, n, 13, mag);
      auto expect = wb::comm::adasum_reference<T>(g1, whole);
      for (auto& x : expect) x = static_cast<T>(static_cast<double>(x) * mag);
      Local<T> loc(c, g);
      c.adasum<T>(loc.bufs(), whole);
      for (auto& d : loc.data) {
        bool finite = true;
        for (T x : d) finite = finite && std::isfinite(x);
        CHECK(finite);
        CHECK(rel_err(d, expect) < 10 * t);
      }
    }
    {  // zero vectors: all zero -> zero; some zero -> they drop out (AS(0, b) = b)
      std::vector<std::vector<T>> z(W, std::vector<T>(n, T(0)));
      Local<T> lz(c, z);
      c.adasum<T>(lz.bufs(), whole);
      for (auto& d : lz.data)
        for (T x : d) CHECK(x == T(0));
      auto g = random_inputs<T>(W, n, 14);
      for (int i = 0; i < W; i += 2) std::fill(g[i].begin(), g[i].end(), T(0));
      const auto ref = wb::comm::adasum_reference<T>(g, whole);
      Local<T> loc(c, g);
      c.adasum<T>(loc.bufs(), whole);
      for (auto& d : loc.data) CHECK(rel_err(d, ref) < t);
      if (W == 2) CHECK(rel_err(loc.data[0], g[1]) == 0.0);
    }
    {  // determinism: same inputs and layout -> bit-identical output on repeated calls
      const auto g = random_inputs<T>(W, 20 * kN - 17, 15);
      const auto segs = splits(g[0].size())[1];
      Local<T> a(c, g), b(c, g);
      c.adasum<T>(a.bufs(), segs);
      c.adasum<T>(b.bufs(), segs);
      for (size_t k = 0; k < a.data.size(); ++k)
        CHECK(same_bits(a.data[k].data(), b.data[k].data(), a.data[k].size()));
    }
  }
}

}  // namespace

TEST_CASE("collectives plan: positions, folds and levels") {
  Collectives c(MPI_COMM_WORLD, std::max(64, world_size()));
  const int R = world_size();
  int k = 0;
  while ((2 << k) <= R) ++k;
  CHECK(c.rvhdd_levels() == k);
  const bool folded = c.position() < 0;
  CHECK(folded == (c.fold_partner() >= 0 && c.fold_partner() < c.rank()));
  Collectives self(MPI_COMM_SELF, 5);
  CHECK(self.rvhdd_levels() == 0);
  CHECK(self.position() == 0);
  CHECK(self.fold_partner() == -1);
}

TEST_CASE("adasum matches the reference: fp32, world and self") {
  check_adasum_vs_reference<float>(MPI_COMM_WORLD);
  check_adasum_vs_reference<float>(MPI_COMM_SELF);
}
TEST_CASE("adasum matches the reference: fp64, world and self") {
  check_adasum_vs_reference<double>(MPI_COMM_WORLD);
  check_adasum_vs_reference<double>(MPI_COMM_SELF);
}
TEST_CASE("allreduce sum/average are bit-identical to the tree-sum reference") {
  check_allreduce_vs_reference<float>(MPI_COMM_WORLD);
  check_allreduce_vs_reference<float>(MPI_COMM_SELF);
  check_allreduce_vs_reference<double>(MPI_COMM_WORLD);
  check_allreduce_vs_reference<double>(MPI_COMM_SELF);
}
TEST_CASE("weighted average and broadcast match the reference") {
  check_weighted_and_broadcast<float>(MPI_COMM_WORLD);
  check_weighted_and_broadcast<float>(MPI_COMM_SELF);
  check_weighted_and_broadcast<double>(MPI_COMM_WORLD);
  check_weighted_and_broadcast<double>(MPI_COMM_SELF);
}
TEST_CASE("adasum properties (Horovod): orthonormal, identical, rank-one, magnitudes, zeros, determinism") {
  check_properties<float>(MPI_COMM_WORLD);
  check_properties<float>(MPI_COMM_SELF);
  check_properties<double>(MPI_COMM_WORLD);
  check_properties<double>(MPI_COMM_SELF);
}
// Bit-identical across R wherever no tensor is cut between ranks: the whole-vector
// exchange of small buffers and RVHDD with every split on a tensor boundary compute each
// node's dot products over whole tensors with the in-rank tree's kernel. (A single tensor
// larger than the exchange limit takes the general schedule: within tolerance, above.)
TEST_CASE("adasum and weighted average are bit-identical for every R when no tensor is cut") {
  for (int W : {2, 3, 4, 5, 8}) {
    if (W < world_size()) continue;
    for (size_t n : {size_t{31}, size_t{1000}, size_t{5000}, size_t{9001}, size_t{40000}}) {
      CAPTURE(W);
      CAPTURE(n);
      const auto g = random_inputs<float>(W, n, static_cast<unsigned>(11 * n + W));
      Collectives cw(MPI_COMM_WORLD, W), cs(MPI_COMM_SELF, W);
      for (const auto& segs : splits(n)) {
        if (segs.size() == 1 && n * sizeof(float) > (size_t{32} << 10)) continue;
        CAPTURE(segs.size());
        Local<float> a(cw, g), b(cs, g);
        cw.adasum<float>(a.bufs(), segs);
        cs.adasum<float>(b.bufs(), segs);
        CHECK(same_bits(a.data[0].data(), b.data[cw.first_local()].data(), n));
      }
      // weighted_average at R <= 2: bit-identical when the right rank has <= 2 workers. (At
      // R > 2 the ranks' double partials are added in the rank tree's order, not worker order.)
      if (W > 4 || world_size() > 2) continue;
      std::vector<double> w(W);
      for (int i = 0; i < W; ++i) w[i] = 0.5 + 0.37 * ((i * 7) % 5);
      Local<float> a(cw, g), b(cs, g);
      cw.weighted_average<float>(a.bufs(),
                                 std::span<const double>(w).subspan(cw.first_local(), cw.local_count()));
      cs.weighted_average<float>(b.bufs(), w);
      CHECK(same_bits(a.data[0].data(), b.data[cw.first_local()].data(), n));
    }
  }
}

TEST_CASE("adasum is R-invariant within tolerance: world vs self on the same inputs") {
  for (int W : {2, 5, 13, 64}) {
    if (W < world_size()) continue;
    const auto g = random_inputs<float>(W, 20 * kN - 17, 16);
    const auto segs = splits(g[0].size())[1];
    Collectives cw(MPI_COMM_WORLD, W), cs(MPI_COMM_SELF, W);
    Local<float> a(cw, g), b(cs, g);
    cw.adasum<float>(a.bufs(), segs);
    cs.adasum<float>(b.bufs(), segs);
    CHECK(rel_err(a.data[0], b.data[0]) < 1e-6);
  }
}

// The in-rank tree runs block by block (many tensors per pass, comm/collectives.cpp
// local_node) and the R = 1 root combine window by window; neither may change a bit: each
// tensor's result must equal Adasum over that tensor alone. Sizes put tensors, gaps and
// zero-size segments across the block (4096) and window (8192) boundaries, with lengths
// that are not multiples of the vector width, and one tensor larger than a block.
TEST_CASE("adasum in-rank blocks: each tensor bit-identical to Adasum over it alone") {
  for (int W : {2, 3, 8, 64}) {
    const size_t n = 3 * 16384 + 8192 + 77;
    std::vector<Segment> segs;
    for (size_t at = 5, k = 0; at < n; ++k) {
      const size_t len = std::min(n - at, k == 7 ? size_t{20000} : 37 + (k * 977) % 3001);
      segs.push_back({at, len});
      if (k % 5 == 3) segs.push_back({at + len, 0});
      at += len + (k % 4 == 1 ? 13 : 0);  // gaps keep worker 0's value
    }
    CAPTURE(W);
    const auto g = random_inputs<float>(W, n, static_cast<unsigned>(W + 101));
    Collectives cs(MPI_COMM_SELF, W);
    Local<float> all(cs, g);
    cs.adasum<float>(all.bufs(), segs);
    std::vector<float> expect = g[0];  // gaps
    for (const Segment& s : segs) {
      if (s.size == 0) continue;
      std::vector<std::vector<float>> one(W);
      for (int w = 0; w < W; ++w) one[w].assign(g[w].begin() + s.offset, g[w].begin() + s.offset + s.size);
      Local<float> l(cs, one);
      const std::vector<Segment> whole{{0, s.size}};
      cs.adasum<float>(l.bufs(), whole);
      std::copy(l.data[0].begin(), l.data[0].end(), expect.begin() + s.offset);
    }
    for (const auto& d : all.data) CHECK(same_bits(d.data(), expect.data(), n));
  }
}

// The training loop's per-step agreement: the workers' values in worker order and the OR of
// the ranks' flags, with blocking and with yielding waits (LAP/LPP-SGD real mode).
TEST_CASE("allgather_worker_values_any: values in worker order, the flag of any rank") {
  const int R = world_size();
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int W : {R, 2 * R + 1, 7 * R}) {
    for (bool yielding : {false, true}) {
      for (int flagged = -1; flagged < R; ++flagged) {  // -1: no rank raises the flag
        CAPTURE(W);
        CAPTURE(yielding);
        CAPTURE(flagged);
        Collectives c(MPI_COMM_WORLD, W);
        c.set_yielding_waits(yielding);
        std::vector<double> local(static_cast<size_t>(c.local_count())), all(static_cast<size_t>(W), -1.0);
        for (int k = 0; k < c.local_count(); ++k) local[static_cast<size_t>(k)] = 10.0 * (c.first_local() + k) + 0.5;
        const bool any = c.allgather_worker_values_any(local, all, rank == flagged);
        CHECK(any == (flagged >= 0));
        for (int w = 0; w < W; ++w) CHECK(all[static_cast<size_t>(w)] == 10.0 * w + 0.5);
      }
    }
  }
}

// LAP/LPP-SGD real mode's round: the element-wise float sum over the ranks, the same bits on
// every rank (MPI_SUM's), through test() polling and through wait(), round after round.
TEST_CASE("AsyncSum: the float sum over ranks, the same on every rank, round after round") {
  const int R = world_size();
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  Collectives c(MPI_COMM_WORLD, R);
  wb::comm::AsyncSum sum(c);
  const size_t n = 70001;  // above any eager limit: the rendezvous path
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    std::vector<std::vector<float>> g = random_inputs<float>(R, n, static_cast<unsigned>(round + 7));
    std::vector<float> out(n, NAN), ref(n);
    MPI_Allreduce(g[static_cast<size_t>(rank)].data(), ref.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM,
                  MPI_COMM_WORLD);
    CHECK_FALSE(sum.pending());
    sum.start(g[static_cast<size_t>(rank)], out);
    CHECK(sum.pending());
    if (round == 1) {
      sum.wait();
    } else {
      while (!sum.test()) {
      }
    }
    CHECK_FALSE(sum.pending());
    CHECK(same_bits(out.data(), ref.data(), n));
    if (R == 2) {  // one exchange and a local add: exactly a + b
      for (size_t i = 0; i < n; i += 997) CHECK(out[i] == g[0][i] + g[1][i]);
    }
  }
}
