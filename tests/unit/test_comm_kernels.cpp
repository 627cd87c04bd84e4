// The vectorized comm kernels (comm/kernels.h) against their scalar references, at
// lengths around the vector width and unaligned offsets (llm.c style: atol + rtol*|ref|).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "comm/collectives.h"
#include "comm/rvhdd.h"
#include "comm/kernels.h"

namespace kern = wb::comm::kern;

namespace {

template <class T>
std::vector<T> rand_vec(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(u(rng));
  return v;
}

// Bitwise equality of the first n elements (memcmp on an empty vector's null data() is
// undefined behaviour: UBSan flags it).
template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b, size_t n) {
  return n == 0 || std::memcmp(a.data(), b.data(), n * sizeof(T)) == 0;
}

bool close(double x, double ref, double atol, double rtol) {
  return std::fabs(x - ref) <= atol + rtol * std::fabs(ref);
}

const std::vector<size_t> kLens{0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 100, 1000, 4099};

template <class T>
void check_kernels() {
  const double rtol = 1e-12;  // double accumulation either way: only the order differs
  for (size_t n : kLens) {
    for (size_t shift : {0, 1, 3}) {  // unaligned starts
      CAPTURE(n);
      CAPTURE(shift);
      auto a = rand_vec<T>(n + shift, static_cast<unsigned>(n + 1));
      auto b = rand_vec<T>(n + shift, static_cast<unsigned>(n + 2));
      double vs[3] = {0, 0, 0}, vv[3] = {0, 0, 0};
      kern::dot3_scalar(a.data() + shift, b.data() + shift, n, vs);
      kern::dot3(a.data() + shift, b.data() + shift, n, vv);
      for (int k = 0; k < 3; ++k) CHECK(close(vv[k], vs[k], 1e-12, rtol));
      // combine: same double expression, one rounding: bit-identical to the scalar loop.
      std::vector<T> os(n + shift), ov(n + shift);
      kern::combine_scalar(os.data() + shift, a.data() + shift, b.data() + shift, n, 0.75, -1.25);
      kern::combine(ov.data() + shift, a.data() + shift, b.data() + shift, n, 0.75, -1.25);
      CHECK(same_bits(os, ov, os.size()));
      // fused combine + dot3 == combine, combine, dot3 on the rounded results.
      auto c = rand_vec<T>(n + shift, static_cast<unsigned>(n + 3));
      auto d = rand_vec<T>(n + shift, static_cast<unsigned>(n + 4));
      std::vector<T> a2 = a, c2 = c;
      kern::combine_scalar(a2.data() + shift, a2.data() + shift, b.data() + shift, n, 0.6, 0.3);
      kern::combine_scalar(c2.data() + shift, c2.data() + shift, d.data() + shift, n, 1.1, -0.2);
      double ws[3] = {0, 0, 0}, wv[3] = {0, 0, 0};
      kern::dot3_scalar(a2.data() + shift, c2.data() + shift, n, ws);
      std::vector<T> a3 = a, c3 = c;
      kern::combine_dot3<T, true, true>({a3.data() + shift, b.data() + shift, 0.6, 0.3},
                                        {c3.data() + shift, d.data() + shift, 1.1, -0.2}, n, wv);
      CHECK(same_bits(a2, a3, n));
      CHECK(same_bits(c2, c3, n));
      for (int k = 0; k < 3; ++k) CHECK(close(wv[k], ws[k], 1e-12, rtol));
      // one side a plain input
      double us[3] = {0, 0, 0}, uv[3] = {0, 0, 0};
      kern::dot3_scalar(a2.data() + shift, c.data() + shift, n, us);
      std::vector<T> a4 = a;
      kern::combine_dot3<T, true, false>({a4.data() + shift, b.data() + shift, 0.6, 0.3},
                                         {c.data() + shift}, n, uv);
      CHECK(same_bits(a2, a4, n));
      for (int k = 0; k < 3; ++k) CHECK(close(uv[k], us[k], 1e-12, rtol));
    }
  }
}

}  // namespace

TEST_CASE("comm kernels: vector == scalar reference, fp32") { check_kernels<float>(); }
TEST_CASE("comm kernels: vector == scalar reference, fp64") { check_kernels<double>(); }

// The weighted average's two-rank path sums each element in a register; the sub-chunk passes
// (zero, axpy_double per source, divide) are its definition: the same bits.
TEST_CASE("comm kernels: wavg_raw == zero + axpy_double passes + division, bit for bit") {
  for (size_t m : {1, 2, 3, 4}) {
    for (size_t n : kLens) {
      CAPTURE(m);
      CAPTURE(n);
      std::vector<std::vector<float>> x;
      std::vector<const float*> ptr;
      std::vector<double> w;
      for (size_t k = 0; k < m; ++k) {
        x.push_back(rand_vec<float>(n, static_cast<unsigned>(31 * n + k)));
        w.push_back(0.5 + 0.37 * static_cast<double>((k * 7) % 5));
      }
      if (n > 2) x[0][1] = -0.0f;  // signed zeros: 0.0 + (-0.0) is +0.0 in both
      for (auto& v : x) ptr.push_back(v.data());
      const double wsum = 0.5 + w[0] + (m > 1 ? w[1] : 0.0);
      std::vector<double> acc(n, 0.0);
      for (size_t k = 0; k < m; ++k) kern::axpy_double(acc.data(), x[k].data(), w[k], n);
      std::vector<float> ref(n), got(n);
      for (size_t i = 0; i < n; ++i) ref[i] = static_cast<float>(acc[i] / wsum);
      kern::wavg_raw(got.data(), ptr.data(), w.data(), m, n, wsum);
      CHECK(same_bits(ref, got, n));
      if (n > 0) {  // in place over the first source, as the collective writes its kept half
        std::vector<float> x0 = x[0];
        ptr[0] = x0.data();
        kern::wavg_raw(x0.data(), ptr.data(), w.data(), m, n, wsum);
        CHECK(same_bits(ref, x0, n));
      }
    }
  }
}

TEST_CASE("comm kernels: dot3 is deterministic and accumulates in double") {
  // 65536 products of 1e-4f: exact in double (float accumulation would round).
  std::vector<float> a(1 << 16, 1.0f), b(1 << 16, 1e-4f);
  double v1[3] = {0, 0, 0}, v2[3] = {0, 0, 0};
  kern::dot3(a.data(), b.data(), a.size(), v1);
  kern::dot3(a.data(), b.data(), a.size(), v2);
  CHECK(std::memcmp(v1, v2, sizeof v1) == 0);
  CHECK(v1[0] == 65536.0 * static_cast<double>(1e-4f));  // exact: k * 1e-4f needs 24 + 17 bits
  CHECK(v1[1] == 65536.0);
}

TEST_CASE("make_pieces covers the buffer with segments and gaps") {
  using wb::comm::Segment;
  const std::vector<Segment> segs{{0, 0}, {2, 3}, {5, 4}, {12, 1}};
  const auto p = wb::comm::Collectives::make_pieces(15, segs);
  size_t at = 0;
  for (const auto& x : p) {
    CHECK(x.offset == at);
    CHECK(x.size > 0);
    at += x.size;
  }
  CHECK(at == 15);
  REQUIRE(p.size() == 6);  // gap [0,2), seg1, seg2, gap [9,12), seg3, gap [13,15)
  CHECK(p[0].seg == -1);
  CHECK(p[1].seg == 1);
  CHECK(p[2].seg == 2);
  CHECK(p[3].seg == -1);
  CHECK(p[4].seg == 3);
  CHECK(p[5].seg == -1);
}

TEST_CASE("aligned_level_bytes: the busiest half of each level, as the aligned schedule halves") {
  // Horovod's MNIST LeNet-5 (21,840 floats), one segment per tensor: the halving point nearest
  // the middle (10,920) on a tensor boundary is fc1.w's start, 5,280: halves of 5,280 and
  // 16,560 floats, and the level lasts as long as the 16,560.
  const std::vector<size_t> off{0, 250, 260, 5260, 5280, 21280, 21330, 21830, 21840};
  std::vector<wb::comm::Segment> segs;
  for (size_t i = 0; i + 1 < off.size(); ++i) segs.push_back({off[i], off[i + 1] - off[i]});
  const auto pieces = wb::comm::Collectives::make_pieces(21840, segs);
  REQUIRE(wb::comm::rvhdd::schedule_of(pieces, 21840, 1, 4) == wb::sim::AdasumSchedule::kAligned);
  std::vector<double> lb;
  wb::comm::rvhdd::aligned_level_bytes(pieces, 21840, 1, 4, lb);
  REQUIRE(lb.size() == 1);
  CHECK(lb[0] == 2.0 * 16560 * 4);
  // Even pieces: the even halves, bytes / 2^l at every level.
  std::vector<wb::comm::Segment> even;
  for (size_t o = 0; o < 65536; o += 1024) even.push_back({o, 1024});
  const auto ep = wb::comm::Collectives::make_pieces(65536, even);
  REQUIRE(wb::comm::rvhdd::schedule_of(ep, 65536, 3, 4) == wb::sim::AdasumSchedule::kAligned);
  wb::comm::rvhdd::aligned_level_bytes(ep, 65536, 3, 4, lb);
  REQUIRE(lb.size() == 3);
  CHECK(lb[0] == 65536.0 * 4);
  CHECK(lb[1] == 65536.0 * 4 / 2);
  CHECK(lb[2] == 65536.0 * 4 / 4);
}

TEST_CASE("comm kernels: divide == x / W bit for bit, the multiply by 1 / W included") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(4099);
  for (size_t i = 0; i < x.size(); ++i) {
    const float v = u(rng);
    // normals over a wide range, denormals, zeros of both signs, the largest finite
    x[i] = i % 5 == 0 ? v * 1e-39f : i % 7 == 0 ? v * 1e30f : v;
  }
  x[1] = 0.0f;
  x[2] = -0.0f;
  x[3] = 1.4e-45f;  // the smallest denormal: x / 2 rounds (to even: 0)
  x[4] = 3 * 1.4e-45f;
  x[6] = 3.4028235e38f;
  for (float W : {1.0f, 2.0f, 4.0f, 64.0f, 1024.0f, 3.0f, 6.0f, 48.0f}) {
    std::vector<float> y(x.size());
    wb::comm::kern::divide(y.data(), x.data(), x.size(), W);
    size_t wrong = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const float q = x[i] / W;
      wrong += std::memcmp(&q, &y[i], sizeof q) != 0;
    }
    CHECK_MESSAGE(wrong == 0, "W = " << W);
    std::vector<float> z = x;  // in place
    wb::comm::kern::divide(z.data(), z.data(), z.size(), W);
    CHECK(std::memcmp(z.data(), y.data(), z.size() * sizeof(float)) == 0);
  }
  std::vector<double> xd{1e-310, -3.0, 7.5e300}, yd(3);
  wb::comm::kern::divide(yd.data(), xd.data(), 3, 8.0);
  for (size_t i = 0; i < 3; ++i) CHECK(yd[i] == xd[i] / 8.0);
}
