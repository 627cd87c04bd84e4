// The LeNet-5 layer kernels (cuda/layers_cuda.h) against the reference loops of
// models/layers.h, in float and double, at awkward sizes (odd maps, padding, batch sizes
// that are not multiples of anything, more samples than one block of the loss kernel),
// and in DualD against models::Dual<double> (the exact-HVP path).
// Element-wise maps (ReLU, dropout, max-pool) must match exactly; everything that sums to
// atol + rtol*|ref| (the GPU sums the batch reductions in another order; float tolerances
// as llm.c's, scaled to sums of up to ~2000 unit-size terms).
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "cuda/layers_cuda.h"
#include "cuda/net_cuda.h"
#include "models/dual.h"
#include "models/layers.h"
#include "tests/cuda/cuda_test_util.h"

using namespace wb;
using namespace wb::cuda::test;
namespace ref = wb::models::ref;

namespace {

template <class T>
std::vector<T> download(const cuda::DeviceBuffer<T>& b) {
  return b.to_host();
}

struct ConvCase {
  models::ConvShape s;
  int n;
};

const std::vector<ConvCase> kConvCases = {
    {{1, 28, 28, 10, 5, 0}, 3},   // lenet5 conv1
    {{10, 12, 12, 20, 5, 0}, 2},  // lenet5 conv2
    {{3, 11, 9, 4, 3, 1}, 5},     // odd map, padding
    {{2, 7, 6, 3, 5, 2}, 1},      // kernel as large as the padded map allows
    {{1, 28, 28, 6, 5, 2}, 2},    // lenet5_classic conv1
};

template <class T>
void check_conv() {
  uint64_t seed = 100;
  for (const ConvCase& cc : kConvCases) {
    const models::ConvShape& s = cc.s;
    const int n = cc.n;
    CAPTURE(s.cin);
    CAPTURE(s.h);
    CAPTURE(s.w);
    CAPTURE(s.cout);
    CAPTURE(s.k);
    CAPTURE(s.pad);
    CAPTURE(n);
    const size_t xs = static_cast<size_t>(n) * s.cin * s.h * s.w;
    const size_t ys = static_cast<size_t>(n) * s.cout * s.ho() * s.wo();
    const size_t ws = static_cast<size_t>(s.cout) * s.kdim();
    auto x = randn<T>(xs, ++seed), w = randn<T>(ws, ++seed, 0.2), b = randn<T>(s.cout, ++seed);
    auto dy = randn<T>(ys, ++seed);
    std::vector<T> y(ys), dx(xs), dw(ws), db(s.cout);
    ref::conv2d_forward(s, n, x.data(), w.data(), b.data(), y.data());
    ref::conv2d_backward(s, n, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data());

    auto gx = to_device(x), gw = to_device(w), gb = to_device(b), gdy = to_device(dy);
    cuda::DeviceBuffer<T> gy(ys), gdx(xs), gdw(ws), gdb(s.cout);
    const cuda::ConvShape& cs = s;  // one ConvShape for CPU and CUDA (models/conv_shape.h)
    cuda::conv2d_forward<T>(cs, n, gx.data(), gw.data(), gb.data(), gy.data());
    cuda::conv2d_backward<T>(cs, n, gx.data(), gw.data(), gdy.data(), gdx.data(), gdw.data(),
                             gdb.data());
    device_sync();
    check_close(download(gy), y, Tol<T>::atol, Tol<T>::rtol, "conv2d_forward y");
    check_close(download(gdx), dx, Tol<T>::atol, Tol<T>::rtol, "conv2d_backward dx");
    check_close(download(gdw), dw, Tol<T>::atol, Tol<T>::rtol, "conv2d_backward dw");
    check_close(download(gdb), db, Tol<T>::atol, Tol<T>::rtol, "conv2d_backward db");
    // dx = nullptr: weight gradients only.
    gdw.zero();
    cuda::conv2d_backward<T>(cs, n, gx.data(), gw.data(), gdy.data(), nullptr, gdw.data(),
                             gdb.data());
    device_sync();
    check_close(download(gdw), dw, Tol<T>::atol, Tol<T>::rtol, "conv2d_backward dw (no dx)");
  }
}

template <class T>
void check_pool() {
  for (auto [n, c, h, w] :
       std::vector<std::array<int, 4>>{{3, 2, 7, 9}, {2, 10, 24, 24}, {1, 1, 2, 3}}) {
    CAPTURE(n);
    CAPTURE(c);
    CAPTURE(h);
    CAPTURE(w);
    const size_t xs = static_cast<size_t>(n) * c * h * w;
    const size_t ys = static_cast<size_t>(n) * c * (h / 2) * (w / 2);
    // Values on a coarse grid: many ties, so the first-maximum rule is exercised.
    auto x = randn<T>(xs, 7 + h);
    for (auto& v : x) v = static_cast<T>(std::round(static_cast<double>(v) * 2) / 2);
    auto dy = randn<T>(ys, 8 + h);
    std::vector<T> y(ys), dx(xs);
    std::vector<int32_t> idx(ys);
    ref::maxpool2_forward(n, c, h, w, x.data(), y.data(), idx.data());
    ref::maxpool2_backward(n, c, h, w, dy.data(), idx.data(), dx.data());
    auto gx = to_device(x), gdy = to_device(dy);
    cuda::DeviceBuffer<T> gy(ys), gdx(xs);
    cuda::DeviceBuffer<int32_t> gidx(ys);
    cuda::maxpool2_forward<T>(n, c, h, w, gx.data(), gy.data(), gidx.data());
    cuda::maxpool2_backward<T>(n, c, h, w, gdy.data(), gidx.data(), gdx.data());
    device_sync();
    check_equal(download(gy), y, "maxpool2_forward y");
    check_equal(download(gidx), idx, "maxpool2_forward idx");
    check_equal(download(gdx), dx, "maxpool2_backward dx");
  }
}

template <class T>
void check_elementwise() {
  const size_t count = 4099;
  auto x = randn<T>(count, 21), dy = randn<T>(count, 22);
  for (size_t i = 0; i < count; i += 17) x[i] = T(0);  // relu'(0) = 0
  std::vector<T> y(count), dx(count);
  ref::relu_forward(count, x.data(), y.data());
  ref::relu_backward(count, x.data(), dy.data(), dx.data());
  auto gx = to_device(x), gdy = to_device(dy);
  cuda::DeviceBuffer<T> gy(count), gdx(count);
  cuda::relu_forward<T>(count, gx.data(), gy.data());
  cuda::relu_backward<T>(count, gx.data(), gdy.data(), gdx.data());
  device_sync();
  check_equal(download(gy), y, "relu_forward");
  check_equal(download(gdx), dx, "relu_backward");

  // dropout: 13 units of 7 values (dropout2d-like) and 91 units of 1 (dropout-like).
  for (auto [units, unit_size] : std::vector<std::array<size_t, 2>>{{13, 7}, {91, 1}}) {
    const double p = 0.3;
    std::vector<uint8_t> keep(units);
    models::dropout_mask(5, 2, units, p, keep.data());
    std::vector<T> want(units * unit_size);
    ref::dropout_apply(units, unit_size, keep.data(), p, x.data(), want.data());
    auto gkeep = to_device(keep);
    cuda::DeviceBuffer<T> gout(units * unit_size);
    cuda::dropout_apply<T>(units, unit_size, gkeep.data(), p, gx.data(), gout.data());
    device_sync();
    check_equal(download(gout), want, "dropout_apply");
  }

  std::vector<float> xf = randn<float>(1001, 23);
  auto gxf = to_device(xf);
  cuda::DeviceBuffer<T> gc(xf.size());
  cuda::convert<T>(xf.size(), gxf.data(), gc.data());
  device_sync();
  std::vector<T> conv(xf.begin(), xf.end());
  check_equal(download(gc), conv, "convert");
}

template <class T>
void check_linear() {
  for (auto [n, in, out] :
       std::vector<std::array<int, 3>>{{7, 33, 13}, {1, 320, 50}, {300, 50, 10}}) {
    CAPTURE(n);
    CAPTURE(in);
    CAPTURE(out);
    auto x = randn<T>(static_cast<size_t>(n) * in, 31),
         w = randn<T>(static_cast<size_t>(out) * in, 32, 0.1);
    auto b = randn<T>(out, 33), dy = randn<T>(static_cast<size_t>(n) * out, 34);
    std::vector<T> y(static_cast<size_t>(n) * out), dx(x.size()), dw(w.size()), db(out);
    ref::linear_forward(n, in, out, x.data(), w.data(), b.data(), y.data());
    ref::linear_backward(n, in, out, x.data(), w.data(), dy.data(), dx.data(), dw.data(),
                         db.data());
    auto gx = to_device(x), gw = to_device(w), gb = to_device(b), gdy = to_device(dy);
    cuda::DeviceBuffer<T> gy(y.size()), gdx(dx.size()), gdw(dw.size()), gdb(db.size());
    cuda::linear_forward<T>(n, in, out, gx.data(), gw.data(), gb.data(), gy.data());
    cuda::linear_backward<T>(n, in, out, gx.data(), gw.data(), gdy.data(), gdx.data(), gdw.data(),
                             gdb.data());
    device_sync();
    check_close(download(gy), y, Tol<T>::atol, Tol<T>::rtol, "linear_forward");
    check_close(download(gdx), dx, Tol<T>::atol, Tol<T>::rtol, "linear_backward dx");
    check_close(download(gdw), dw, Tol<T>::atol, Tol<T>::rtol, "linear_backward dw");
    check_close(download(gdb), db, Tol<T>::atol, Tol<T>::rtol, "linear_backward db");
  }
}

template <class T>
void check_softmax_nll() {
  for (int n : {1, 7, 300}) {  // 300 > one round of the kernel's block
    CAPTURE(n);
    const int classes = 10;
    auto z = randn<T>(static_cast<size_t>(n) * classes, 41 + n, 3.0);
    std::vector<int32_t> label(n);
    core::Rng r(n);
    for (auto& l : label) l = static_cast<int32_t>(r.below(classes));
    std::vector<T> dz(z.size());
    int64_t correct = 0;
    const T loss =
        ref::log_softmax_nll(n, classes, z.data(), label.data(), dz.data(), 1.0 / n, &correct);
    auto gz = to_device(z);
    auto glabel = to_device(label);
    cuda::DeviceBuffer<T> gdz(dz.size());
    int64_t gcorrect = 0;
    const T gloss = cuda::log_softmax_nll<T>(n, classes, gz.data(), glabel.data(), gdz.data(),
                                             1.0 / n, &gcorrect);
    CHECK(gcorrect == correct);
    check_close(std::vector<T>{gloss}, std::vector<T>{loss}, Tol<T>::atol, Tol<T>::rtol,
                "log_softmax_nll loss sum");
    check_close(download(gdz), dz, Tol<T>::atol, Tol<T>::rtol, "log_softmax_nll dlogits");
  }
}

}  // namespace

TEST_CASE_TEMPLATE("cuda conv2d forward/backward vs reference", T, float, double) {
  check_conv<T>();
}
TEST_CASE_TEMPLATE("cuda maxpool2 forward/backward vs reference (ties)", T, float, double) {
  check_pool<T>();
}
TEST_CASE_TEMPLATE("cuda relu, dropout, convert vs reference", T, float, double) {
  check_elementwise<T>();
}
TEST_CASE_TEMPLATE("cuda linear forward/backward vs reference", T, float, double) {
  check_linear<T>();
}
TEST_CASE_TEMPLATE("cuda log_softmax_nll vs reference", T, float, double) {
  check_softmax_nll<T>();
}

// The HVP path: the same kernels on DualD against the reference loops on models::Dual<double>.
TEST_CASE("cuda DualD conv2d/linear/softmax vs models::Dual<double> reference") {
  using D = models::Dual<double>;
  auto dual_of = [](const std::vector<double>& v, const std::vector<double>& t) {
    std::vector<D> out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = D(v[i], t[i]);
    return out;
  };
  auto to_cuda_dual = [](const std::vector<D>& v) {
    std::vector<cuda::DualD> out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = cuda::DualD(v[i].v, v[i].d);
    return out;
  };
  auto check_dual = [](const std::vector<cuda::DualD>& got, const std::vector<D>& want,
                       const char* what) {
    std::vector<double> gv, gd, wv, wd;
    for (const auto& g : got) gv.push_back(g.v), gd.push_back(g.d);
    for (const auto& w : want) wv.push_back(w.v), wd.push_back(w.d);
    check_close(gv, wv, 1e-12, 1e-10, std::string(what) + " (value)");
    check_close(gd, wd, 1e-12, 1e-10, std::string(what) + " (tangent)");
  };

  const models::ConvShape s{2, 9, 8, 3, 3, 1};
  const int n = 3;
  const size_t xs = static_cast<size_t>(n) * s.cin * s.h * s.w;
  const size_t ys = static_cast<size_t>(n) * s.cout * s.ho() * s.wo();
  const size_t ws = static_cast<size_t>(s.cout) * s.kdim();
  auto x = dual_of(randn<double>(xs, 51), randn<double>(xs, 52));
  auto w = dual_of(randn<double>(ws, 53), randn<double>(ws, 54));
  auto b = dual_of(randn<double>(s.cout, 55), randn<double>(s.cout, 56));
  auto dy = dual_of(randn<double>(ys, 57), randn<double>(ys, 58));
  std::vector<D> y(ys), dx(xs), dw(ws), db(s.cout);
  ref::conv2d_forward(s, n, x.data(), w.data(), b.data(), y.data());
  ref::conv2d_backward(s, n, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data());
  auto gx = to_device(to_cuda_dual(x)), gw = to_device(to_cuda_dual(w));
  auto gb = to_device(to_cuda_dual(b)), gdy = to_device(to_cuda_dual(dy));
  cuda::DeviceBuffer<cuda::DualD> gy(ys), gdx(xs), gdw(ws), gdb(s.cout);
  const cuda::ConvShape& cs = s;  // one ConvShape for CPU and CUDA (models/conv_shape.h)
  cuda::conv2d_forward<cuda::DualD>(cs, n, gx.data(), gw.data(), gb.data(), gy.data());
  cuda::conv2d_backward<cuda::DualD>(cs, n, gx.data(), gw.data(), gdy.data(), gdx.data(),
                                     gdw.data(), gdb.data());
  device_sync();
  check_dual(gy.to_host(), y, "DualD conv2d_forward");
  check_dual(gdx.to_host(), dx, "DualD conv2d_backward dx");
  check_dual(gdw.to_host(), dw, "DualD conv2d_backward dw");
  check_dual(gdb.to_host(), db, "DualD conv2d_backward db");

  const int classes = 10, m = 5;
  auto z = dual_of(randn<double>(m * classes, 61, 2.0), randn<double>(m * classes, 62));
  std::vector<int32_t> label = {3, 0, 9, 9, 4};
  std::vector<D> dz(z.size());
  const D loss =
      ref::log_softmax_nll(m, classes, z.data(), label.data(), dz.data(), 1.0 / m, nullptr);
  auto gz = to_device(to_cuda_dual(z));
  auto glabel = to_device(label);
  cuda::DeviceBuffer<cuda::DualD> gdz(dz.size());
  const cuda::DualD gloss = cuda::log_softmax_nll<cuda::DualD>(m, classes, gz.data(), glabel.data(),
                                                               gdz.data(), 1.0 / m, nullptr);
  check_dual({gloss}, {loss}, "DualD log_softmax_nll loss");
  check_dual(gdz.to_host(), dz, "DualD log_softmax_nll dlogits");
}
