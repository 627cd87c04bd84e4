// The ResNet layer kernels (cuda/resnet_layers_cuda.h) against the reference loops of
// models/resnet_layers.h (models::rref), in float and double, at awkward sizes (odd maps,
// stride 2 on odd sizes, channel counts that are not multiples of anything, a reduction
// longer than one block's 256 threads), and grouped launches against lone ones.
//
// Tolerances (|got - ref| <= atol + rtol*|ref|, llm.c's check):
//  - exact (check_equal): avg-pool, the option-A shortcut, add+ReLU, accumulate -- the GPU
//    runs the reference's own operations in the reference's order (a copy, one add, one
//    sequential sum and one IEEE division);
//  - float, atol 1e-4 / rtol 1e-3: everything that reduces (convolutions, the norms'
//    statistics and backward sums). The GPU sums over a tree, the reference sequentially; the
//    reference's own float error on a sum of m unit-size terms is up to m * 2^-24 relative
//    (m <= 2048 here: 1.2e-4) and typically sqrt(m) * 2^-24 (3e-6), far inside rtol; the
//    normalized outputs are O(1), so atol 1e-4 covers the cancellation in the norms' data
//    gradient (m dy - sum dy - xhat sum(dy xhat), each term O(m), scaled by 1/m);
//  - double, atol 1e-10 / rtol 1e-9: the same bound with 2^-53.
//  - grouped launches: bit-identical to lone launches (each block's partition of its
//    reduction depends only on the per-group shape).
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "cuda/resnet_layers_cuda.h"
#include "models/resnet_layers.h"
#include "tests/cuda/cuda_test_util.h"

using namespace wb;
using namespace wb::cuda::test;
namespace rref = wb::models::rref;
using models::ConvGeom;

namespace {

template <class T>
void close(const cuda::DeviceBuffer<T>& got, const std::vector<T>& ref, const std::string& what) {
  check_close(got.to_host(), ref, Tol<T>::atol, Tol<T>::rtol, what);
}

// x = offset + scale * N(0, 1): activations whose mean is far from zero, so a one-pass
// variance (E[x^2] - mean^2) would fail the tolerance.
template <class T>
std::vector<T> shifted(size_t n, uint64_t seed, double offset, double scale) {
  auto v = randn<T>(n, seed, scale);
  for (auto& x : v) x = static_cast<T>(static_cast<double>(x) + offset);
  return v;
}

// G parameter sets at `stride` from a vector of G * stride values.
template <class T>
std::vector<T> slice(const std::vector<T>& v, size_t at, size_t len) {
  return std::vector<T>(v.begin() + static_cast<std::ptrdiff_t>(at),
                        v.begin() + static_cast<std::ptrdiff_t>(at + len));
}

// ------------------------------------------------------------------ strided convolution
struct ConvCase {
  ConvGeom g;
  int n;
  bool bias;
};
const std::vector<ConvCase> kConvCases = {
    {{16, 32, 32, 32, 3, 2, 1}, 2, false},  // stage 2's first conv
    {{16, 32, 32, 32, 1, 2, 0}, 2, false},  // option B's 1x1 projection
    {{3, 32, 32, 16, 3, 1, 1}, 2, true},    // the stem, norm none (bias)
    {{5, 9, 7, 4, 3, 2, 1}, 3, true},       // odd map, stride 2
    {{2, 8, 8, 3, 5, 3, 2}, 1, false},      // stride 3, large kernel
};

template <class T>
void check_conv() {
  uint64_t seed = 200;
  for (const ConvCase& cc : kConvCases) {
    const ConvGeom& g = cc.g;
    const int n = cc.n;
    CAPTURE(g.cin);
    CAPTURE(g.h);
    CAPTURE(g.w);
    CAPTURE(g.cout);
    CAPTURE(g.k);
    CAPTURE(g.stride);
    CAPTURE(g.pad);
    CAPTURE(n);
    const size_t xs = n * g.in_size(), ys = n * g.out_size(), ws = g.w_size();
    auto x = randn<T>(xs, ++seed), w = randn<T>(ws, ++seed, 0.2), b = randn<T>(g.cout, ++seed);
    auto dy = randn<T>(ys, ++seed);
    const T* bp = cc.bias ? b.data() : nullptr;
    std::vector<T> y(ys), dx(xs), dw(ws), db(g.cout);
    rref::conv_forward(g, n, x.data(), w.data(), bp, y.data());
    rref::conv_backward(g, n, x.data(), w.data(), dy.data(), dx.data(), dw.data(),
                        cc.bias ? db.data() : nullptr);

    auto gx = to_device(x), gw = to_device(w), gb = to_device(b), gdy = to_device(dy);
    cuda::DeviceBuffer<T> gy(ys), gdx(xs), gdw(ws), gdb(g.cout);
    cuda::conv_forward<T>(g, n, gx.data(), gw.data(), cc.bias ? gb.data() : nullptr, gy.data());
    cuda::conv_backward<T>(g, n, gx.data(), gw.data(), gdy.data(), gdx.data(), gdw.data(),
                           cc.bias ? gdb.data() : nullptr);
    device_sync();
    close(gy, y, "conv_forward y");
    close(gdx, dx, "conv_backward dx");
    close(gdw, dw, "conv_backward dw");
    if (cc.bias) close(gdb, db, "conv_backward db");
    // dx = nullptr: the stem's backward (no gradient for the input images).
    gdw.zero();
    cuda::conv_backward<T>(g, n, gx.data(), gw.data(), gdy.data(), nullptr, gdw.data(),
                           cc.bias ? gdb.data() : nullptr);
    device_sync();
    close(gdw, dw, "conv_backward dw (no dx)");
  }
}

// ------------------------------------------------------------------ batch norm
template <class T>
void check_bn() {
  uint64_t seed = 300;
  for (auto [n, c, hw] : std::vector<std::array<int, 3>>{{5, 3, 49}, {4, 16, 64}, {2, 8, 1024}}) {
    CAPTURE(n);
    CAPTURE(c);
    CAPTURE(hw);
    const size_t len = static_cast<size_t>(n) * c * hw;
    auto x = shifted<T>(len, ++seed, 3.0, 2.0), dy = randn<T>(len, ++seed);
    auto gamma = shifted<T>(c, ++seed, 1.0, 0.1), beta = randn<T>(c, ++seed);
    auto run_mean = randn<float>(c, ++seed), run_var = shifted<float>(c, ++seed, 2.0, 0.3);
    std::vector<T> y(len), mean(c), invstd(c), yeval(len), dx(len), dgamma(c), dbeta(c);
    std::vector<float> rm = run_mean, rv = run_var;
    rref::bn_forward_train(n, c, hw, x.data(), gamma.data(), beta.data(), y.data(), mean.data(),
                           invstd.data());
    rref::bn_update_running(n, c, hw, mean.data(), invstd.data(), rm.data(), rv.data());
    rref::bn_forward_eval(n, c, hw, x.data(), gamma.data(), beta.data(), rm.data(), rv.data(),
                          yeval.data());
    rref::bn_backward(n, c, hw, x.data(), gamma.data(), mean.data(), invstd.data(), dy.data(),
                      dx.data(), dgamma.data(), dbeta.data());

    auto gx = to_device(x), gdy = to_device(dy), ggamma = to_device(gamma);
    auto gbeta = to_device(beta), grm = to_device(run_mean), grv = to_device(run_var);
    cuda::DeviceBuffer<T> gy(len), gmean(c), ginvstd(c), gyeval(len), gdx(len), gdgamma(c),
        gdbeta(c);
    cuda::bn_forward_train<T>(n, c, hw, gx.data(), ggamma.data(), gbeta.data(), gy.data(),
                              gmean.data(), ginvstd.data());
    cuda::bn_update_running<T>(n, c, hw, gmean.data(), ginvstd.data(), grm.data(), grv.data());
    cuda::bn_forward_eval<T>(n, c, hw, gx.data(), ggamma.data(), gbeta.data(), grm.data(),
                             grv.data(), gyeval.data());
    device_sync();
    close(gy, y, "bn_forward_train y");
    close(gmean, mean, "bn_forward_train mean");
    close(ginvstd, invstd, "bn_forward_train invstd");
    // float state from T statistics: the float tolerance whatever T is.
    check_close(grm.to_host(), rm, 1e-5, 1e-5, "bn_update_running mean");
    check_close(grv.to_host(), rv, 1e-5, 1e-5, "bn_update_running var (unbiased)");
    close(gyeval, yeval, "bn_forward_eval y");

    // The backward on the reference's statistics: its own error, not the forward's.
    gmean.upload(mean);
    ginvstd.upload(invstd);
    cuda::bn_backward<T>(n, c, hw, gx.data(), ggamma.data(), gmean.data(), ginvstd.data(),
                         gdy.data(), gdx.data(), gdgamma.data(), gdbeta.data());
    device_sync();
    close(gdx, dx, "bn_backward dx");
    close(gdgamma, dgamma, "bn_backward dgamma");
    close(gdbeta, dbeta, "bn_backward dbeta");
  }
}

// ------------------------------------------------------------------ group norm
template <class T>
void check_gn() {
  uint64_t seed = 400;
  // (n, c, hw, groups): ResNet-20's stages at groups 8, an odd map, one group (layer-norm
  // like), one channel per group (instance-norm like).
  for (auto [n, c, hw, groups] : std::vector<std::array<int, 4>>{
           {3, 16, 64, 8}, {2, 32, 256, 8}, {5, 6, 49, 3}, {2, 4, 9, 1}, {3, 5, 25, 5}}) {
    CAPTURE(n);
    CAPTURE(c);
    CAPTURE(hw);
    CAPTURE(groups);
    const size_t len = static_cast<size_t>(n) * c * hw, ns = static_cast<size_t>(n) * groups;
    auto x = shifted<T>(len, ++seed, -2.0, 1.5), dy = randn<T>(len, ++seed);
    auto gamma = shifted<T>(c, ++seed, 1.0, 0.1), beta = randn<T>(c, ++seed);
    std::vector<T> y(len), mean(ns), invstd(ns), dx(len), dgamma(c), dbeta(c);
    rref::gn_forward(n, c, hw, groups, x.data(), gamma.data(), beta.data(), y.data(), mean.data(),
                     invstd.data());
    rref::gn_backward(n, c, hw, groups, x.data(), gamma.data(), mean.data(), invstd.data(),
                      dy.data(), dx.data(), dgamma.data(), dbeta.data());

    auto gx = to_device(x), gdy = to_device(dy), ggamma = to_device(gamma);
    auto gbeta = to_device(beta);
    cuda::DeviceBuffer<T> gy(len), gmean(ns), ginvstd(ns), gdx(len), gdgamma(c), gdbeta(c);
    cuda::gn_forward<T>(n, c, hw, groups, gx.data(), ggamma.data(), gbeta.data(), gy.data(),
                        gmean.data(), ginvstd.data());
    device_sync();
    close(gy, y, "gn_forward y");
    close(gmean, mean, "gn_forward mean");
    close(ginvstd, invstd, "gn_forward invstd");
    gmean.upload(mean);
    ginvstd.upload(invstd);
    cuda::gn_backward<T>(n, c, hw, groups, gx.data(), ggamma.data(), gmean.data(), ginvstd.data(),
                         gdy.data(), gdx.data(), gdgamma.data(), gdbeta.data());
    device_sync();
    close(gdx, dx, "gn_backward dx");
    close(gdgamma, dgamma, "gn_backward dgamma");
    close(gdbeta, dbeta, "gn_backward dbeta");
  }
}

// ------------------------------------------------------------------ avg-pool, residual
template <class T>
void check_avgpool() {
  for (auto [n, c, hw] : std::vector<std::array<int, 3>>{{3, 7, 64}, {2, 16, 1}, {4, 5, 49}}) {
    CAPTURE(n);
    CAPTURE(c);
    CAPTURE(hw);
    const size_t len = static_cast<size_t>(n) * c * hw, out = static_cast<size_t>(n) * c;
    auto x = randn<T>(len, 500 + hw), dy = randn<T>(out, 501 + hw);
    std::vector<T> y(out), dx(len);
    rref::avgpool_forward(n, c, hw, x.data(), y.data());
    rref::avgpool_backward(n, c, hw, dy.data(), dx.data());
    auto gx = to_device(x), gdy = to_device(dy);
    cuda::DeviceBuffer<T> gy(out), gdx(len);
    cuda::avgpool_forward<T>(n, c, hw, gx.data(), gy.data());
    cuda::avgpool_backward<T>(n, c, hw, gdy.data(), gdx.data());
    device_sync();
    check_equal(gy.to_host(), y, "avgpool_forward");
    check_equal(gdx.to_host(), dx, "avgpool_backward");
  }
}

template <class T>
void check_residual() {
  // (n, cin, h, w, stride, cout): the CIFAR stage changes, an odd map, stride 1 widening.
  for (auto [n, cin, h, w, stride, cout] : std::vector<std::array<int, 6>>{{3, 16, 32, 32, 2, 32},
                                                                           {2, 32, 16, 16, 2, 64},
                                                                           {2, 3, 7, 9, 2, 7},
                                                                           {2, 4, 5, 5, 1, 8}}) {
    CAPTURE(n);
    CAPTURE(cin);
    CAPTURE(h);
    CAPTURE(w);
    CAPTURE(stride);
    CAPTURE(cout);
    const int ho = (h - 1) / stride + 1, wo = (w - 1) / stride + 1;
    const size_t xs = static_cast<size_t>(n) * cin * h * w;
    const size_t ys = static_cast<size_t>(n) * cout * ho * wo;
    auto x = randn<T>(xs, 600 + h), dy = randn<T>(ys, 601 + h);
    auto dx = randn<T>(xs, 602 + h);  // the main path's gradient, which the shortcut joins
    std::vector<T> y(ys);
    auto gx = to_device(x), gdy = to_device(dy), gdx = to_device(dx);
    rref::shortcut_a_forward(n, cin, h, w, stride, cout, x.data(), y.data());
    rref::shortcut_a_backward(n, cin, h, w, stride, cout, dy.data(), dx.data());
    cuda::DeviceBuffer<T> gy(ys);
    cuda::shortcut_a_forward<T>(n, cin, h, w, stride, cout, gx.data(), gy.data());
    cuda::shortcut_a_backward<T>(n, cin, h, w, stride, cout, gdy.data(), gdx.data());
    device_sync();
    check_equal(gy.to_host(), y, "shortcut_a_forward");
    check_equal(gdx.to_host(), dx, "shortcut_a_backward (accumulated)");
  }

  // The block's end as the CPU pass writes it: out += shortcut; relu(out) (in place).
  const size_t count = 5003;
  auto a = randn<T>(count, 610), b = randn<T>(count, 611);
  for (size_t i = 0; i < count; i += 19) b[i] = -a[i];  // a + b == 0: relu gives 0
  std::vector<T> out = a;
  for (size_t i = 0; i < count; ++i) out[i] += b[i];
  for (auto& v : out)
    if (!(v > 0)) v = T(0);
  std::vector<T> acc = a;
  for (size_t i = 0; i < count; ++i) acc[i] += b[i];
  auto ga = to_device(a), gb = to_device(b), gacc = to_device(a);
  cuda::add_relu_forward<T>(count, ga.data(), gb.data(), ga.data());  // y aliases a
  cuda::accumulate<T>(count, gb.data(), gacc.data());
  device_sync();
  check_equal(ga.to_host(), out, "add_relu_forward (in place)");
  check_equal(gacc.to_host(), acc, "accumulate");
}

// ------------------------------------------------------------------ grouped launches
// G workers with their own parameters at an unaligned stride and their own batches in one
// launch == G lone launches, bit for bit.
template <class T>
void check_grouped() {
  constexpr int G = 3, n = 4;
  auto lone_of = [](const cuda::DeviceBuffer<T>& all, size_t at, size_t len) {
    return slice(all.to_host(), at, len);
  };

  // Strided convolution with bias.
  {
    const ConvGeom g{5, 9, 7, 6, 3, 2, 1};
    const size_t ws = g.w_size(), stride = ws + g.cout + 7;  // weights, bias, padding
    const size_t xs = n * g.in_size(), ys = n * g.out_size();
    auto w = randn<T>(G * stride, 700, 0.2), x = randn<T>(G * xs, 701), dy = randn<T>(G * ys, 702);
    auto gw = to_device(w), gx = to_device(x), gdy = to_device(dy);
    cuda::DeviceBuffer<T> gy(G * ys), gdx(G * xs), gdw(G * stride);
    gdw.zero();
    const cuda::Groups gr{G, stride};
    cuda::conv_forward<T>(g, n, gx.data(), gw.data(), gw.data() + ws, gy.data(), nullptr, gr);
    cuda::conv_backward<T>(g, n, gx.data(), gw.data(), gdy.data(), gdx.data(), gdw.data(),
                           gdw.data() + ws, nullptr, gr);
    device_sync();
    for (int k = 0; k < G; ++k) {
      CAPTURE(k);
      auto lw = to_device(slice(w, k * stride, stride)), lx = to_device(slice(x, k * xs, xs));
      auto ldy = to_device(slice(dy, k * ys, ys));
      cuda::DeviceBuffer<T> ly(ys), ldx(xs), ldw(stride);
      cuda::conv_forward<T>(g, n, lx.data(), lw.data(), lw.data() + ws, ly.data());
      cuda::conv_backward<T>(g, n, lx.data(), lw.data(), ldy.data(), ldx.data(), ldw.data(),
                             ldw.data() + ws);
      device_sync();
      check_equal(lone_of(gy, k * ys, ys), ly.to_host(), "grouped conv_forward");
      check_equal(lone_of(gdx, k * xs, xs), ldx.to_host(), "grouped conv_backward dx");
      check_equal(lone_of(gdw, k * stride, ws + g.cout), slice(ldw.to_host(), 0, ws + g.cout),
                  "grouped conv_backward dw, db");
    }
  }

  // Batch norm: parameters [gamma c, beta c] at `stride`, running state [mean c, var c] at
  // `sstride`.
  {
    const int c = 6, hw = 25;
    const size_t len = static_cast<size_t>(n) * c * hw, stride = 2 * c + 3, sstride = 2 * c + 5;
    auto p = shifted<T>(G * stride, 710, 1.0, 0.2), x = shifted<T>(G * len, 711, 1.0, 2.0);
    auto dy = randn<T>(G * len, 712);
    auto st = shifted<float>(G * sstride, 713, 1.5, 0.2);
    auto gp = to_device(p), gx = to_device(x), gdy = to_device(dy), gst = to_device(st);
    cuda::DeviceBuffer<T> gy(G * len), gm(G * c), gis(G * c), gye(G * len), gdx(G * len),
        gdp(G * stride);
    gdp.zero();
    const cuda::Groups gr{G, stride};
    cuda::bn_forward_train<T>(n, c, hw, gx.data(), gp.data(), gp.data() + c, gy.data(), gm.data(),
                              gis.data(), nullptr, gr);
    cuda::bn_update_running<T>(n, c, hw, gm.data(), gis.data(), gst.data(), gst.data() + c, nullptr,
                               G, sstride);
    cuda::bn_forward_eval<T>(n, c, hw, gx.data(), gp.data(), gp.data() + c, gst.data(),
                             gst.data() + c, gye.data(), nullptr, gr, sstride);
    cuda::bn_backward<T>(n, c, hw, gx.data(), gp.data(), gm.data(), gis.data(), gdy.data(),
                         gdx.data(), gdp.data(), gdp.data() + c, nullptr, gr);
    device_sync();
    for (int k = 0; k < G; ++k) {
      CAPTURE(k);
      auto lp = to_device(slice(p, k * stride, stride)), lx = to_device(slice(x, k * len, len));
      auto ldy = to_device(slice(dy, k * len, len));
      auto lst = to_device(slice(st, k * sstride, sstride));
      cuda::DeviceBuffer<T> ly(len), lm(c), lis(c), lye(len), ldx(len), ldp(2 * c);
      cuda::bn_forward_train<T>(n, c, hw, lx.data(), lp.data(), lp.data() + c, ly.data(), lm.data(),
                                lis.data());
      cuda::bn_update_running<T>(n, c, hw, lm.data(), lis.data(), lst.data(), lst.data() + c);
      cuda::bn_forward_eval<T>(n, c, hw, lx.data(), lp.data(), lp.data() + c, lst.data(),
                               lst.data() + c, lye.data());
      cuda::bn_backward<T>(n, c, hw, lx.data(), lp.data(), lm.data(), lis.data(), ldy.data(),
                           ldx.data(), ldp.data(), ldp.data() + c);
      device_sync();
      check_equal(lone_of(gy, k * len, len), ly.to_host(), "grouped bn_forward_train y");
      check_equal(lone_of(gm, k * c, c), lm.to_host(), "grouped bn_forward_train mean");
      check_equal(lone_of(gis, k * c, c), lis.to_host(), "grouped bn_forward_train invstd");
      check_equal(slice(gst.to_host(), k * sstride, sstride), lst.to_host(),
                  "grouped bn_update_running (and the state's padding untouched)");
      check_equal(lone_of(gye, k * len, len), lye.to_host(), "grouped bn_forward_eval");
      check_equal(lone_of(gdx, k * len, len), ldx.to_host(), "grouped bn_backward dx");
      check_equal(lone_of(gdp, k * stride, 2 * c), ldp.to_host(),
                  "grouped bn_backward dgamma, dbeta");
    }
  }

  // Group norm.
  {
    const int c = 8, hw = 36, groups = 4;
    const size_t len = static_cast<size_t>(n) * c * hw, ns = static_cast<size_t>(n) * groups;
    const size_t stride = 2 * c + 1;
    auto p = shifted<T>(G * stride, 720, 1.0, 0.2), x = shifted<T>(G * len, 721, -1.0, 2.0);
    auto dy = randn<T>(G * len, 722);
    auto gp = to_device(p), gx = to_device(x), gdy = to_device(dy);
    cuda::DeviceBuffer<T> gy(G * len), gm(G * ns), gis(G * ns), gdx(G * len), gdp(G * stride);
    gdp.zero();
    const cuda::Groups gr{G, stride};
    cuda::gn_forward<T>(n, c, hw, groups, gx.data(), gp.data(), gp.data() + c, gy.data(), gm.data(),
                        gis.data(), nullptr, gr);
    cuda::gn_backward<T>(n, c, hw, groups, gx.data(), gp.data(), gm.data(), gis.data(), gdy.data(),
                         gdx.data(), gdp.data(), gdp.data() + c, nullptr, gr);
    device_sync();
    for (int k = 0; k < G; ++k) {
      CAPTURE(k);
      auto lp = to_device(slice(p, k * stride, stride)), lx = to_device(slice(x, k * len, len));
      auto ldy = to_device(slice(dy, k * len, len));
      cuda::DeviceBuffer<T> ly(len), lm(ns), lis(ns), ldx(len), ldp(2 * c);
      cuda::gn_forward<T>(n, c, hw, groups, lx.data(), lp.data(), lp.data() + c, ly.data(),
                          lm.data(), lis.data());
      cuda::gn_backward<T>(n, c, hw, groups, lx.data(), lp.data(), lm.data(), lis.data(),
                           ldy.data(), ldx.data(), ldp.data(), ldp.data() + c);
      device_sync();
      check_equal(lone_of(gy, k * len, len), ly.to_host(), "grouped gn_forward y");
      check_equal(lone_of(gm, k * ns, ns), lm.to_host(), "grouped gn_forward mean");
      check_equal(lone_of(gis, k * ns, ns), lis.to_host(), "grouped gn_forward invstd");
      check_equal(lone_of(gdx, k * len, len), ldx.to_host(), "grouped gn_backward dx");
      check_equal(lone_of(gdp, k * stride, 2 * c), ldp.to_host(),
                  "grouped gn_backward dgamma, dbeta");
    }
  }
}

}  // namespace

TEST_CASE_TEMPLATE("cuda resnet conv (strided, optional bias) vs reference", T, float, double) {
  check_conv<T>();
}
TEST_CASE_TEMPLATE("cuda resnet batch norm (train, running stats, eval, backward) vs reference", T,
                   float, double) {
  check_bn<T>();
}
TEST_CASE_TEMPLATE("cuda resnet group norm forward/backward vs reference", T, float, double) {
  check_gn<T>();
}
TEST_CASE_TEMPLATE("cuda resnet global avg-pool vs reference (exact)", T, float, double) {
  check_avgpool<T>();
}
TEST_CASE_TEMPLATE("cuda resnet shortcut A, add+relu, accumulate vs reference (exact)", T, float,
                   double) {
  check_residual<T>();
}
TEST_CASE_TEMPLATE("cuda resnet grouped launches == lone launches, bit for bit", T, float, double) {
  check_grouped<T>();
}
