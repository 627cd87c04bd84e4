// micro_conv: the fast convolution kernels at the models' layer shapes, on Google Benchmark.
//
//   ResNet (models/resnet_fast.h, im2col / implicit GEMM; Fashion-MNIST padded to 32x32, width
//   16, 3x3 convolutions, batch 8): fast::conv_forward and fast::conv_backward (data and weight
//   gradient) of the stem and of every distinct convolution of ResNet-8 (one block a stage:
//   16 -> 16 at 32x32, 16 -> 32 stride 2, 32 -> 32 at 16x16, 32 -> 64 stride 2, 64 -> 64 at
//   8x8); reference: rref::conv_forward / conv_backward in double.
//   LeNet-5 and LeNet-5 classic (models/layers_fast.h, batch 32): the dedicated kernels
//   (conv_forward_rowpair / _cvec, conv_wgrad_rows / _rowpair / _cvec, conv_dgrad_rows) at
//   the layers they serve; a kernel is registered only where the build's vector length fits
//   it (its *_fits predicate: rowpair needs rows of half a vector, AVX-512's 8 of 16 lanes),
//   so a binary lists the kernels its own FastNet can dispatch to. Reference:
//   models::conv2d_forward / conv2d_backward (models/layers.h) in double.
// Counters: flops (FLOP/s: 2 x multiply-adds of the pass, per sample x batch). Every benchmark
// checks its output against the reference once before timing (bench/micro/micro_check.h).
#include <string>
#include <vector>

#include "bench/micro/micro_check.h"
#include "models/layers.h"
#include "models/layers_fast.h"
#include "models/resnet_fast.h"

namespace {

using wb::micro::check_or_skip;
using wb::micro::fill_uniform;
using wb::micro::mismatch;
using wb::micro::set_flops;
using wb::models::ConvGeom;
using wb::models::ConvShape;
namespace fast = wb::models::fast;
namespace rref = wb::models::rref;
using fast::kVL;

template <class V>
std::vector<double> widen(const V& v) {
  return std::vector<double>(v.data(), v.data() + v.size());
}

// ---------------------------------------------------------------- ResNet (resnet_fast)
void bm_resnet_conv(benchmark::State& state, ConvGeom g, int n, bool backward) {
  std::vector<float> x(n * g.in_size()), w(g.w_size()), y(n * g.out_size()), dy(y.size()),
      dx(x.size()), dw(w.size());
  fill_uniform(x, 11), fill_uniform(w, 12), fill_uniform(dy, 13);
  fast::ConvScratch s;
  auto run = [&] {
    if (backward)
      fast::conv_backward(g, n, x.data(), w.data(), dy.data(), dx.data(), dw.data(), nullptr, s);
    else
      fast::conv_forward(g, n, x.data(), w.data(), nullptr, y.data(), s);
  };
  run();
  const auto xd = widen(x), wd = widen(w), dyd = widen(dy);
  std::string why;
  if (backward) {
    std::vector<double> rdx(x.size()), rdw(w.size());
    rref::conv_backward<double>(g, n, xd.data(), wd.data(), dyd.data(), rdx.data(), rdw.data(), nullptr);
    why = mismatch(dx.data(), rdx.data(), dx.size());
    if (why.empty()) why = mismatch(dw.data(), rdw.data(), dw.size());
  } else {
    std::vector<double> ry(y.size());
    rref::conv_forward<double>(g, n, xd.data(), wd.data(), nullptr, ry.data());
    why = mismatch(y.data(), ry.data(), y.size());
  }
  if (!check_or_skip(state, why)) return;
  for (auto _ : state) {
    run();
    benchmark::ClobberMemory();
  }
  set_flops(state, (backward ? 4.0 : 2.0) * n * static_cast<double>(g.out_size()) * g.kdim());
}

// ---------------------------------------------------------------- LeNet (layers_fast)
// An unpadded convolution (the fast path zero-pads a padded layer's input first: LeNet-5
// classic's conv1 runs on 32x32 planes).
struct Conv {
  const char* name;
  int cin, h, w, cout, k;
  int ho() const { return h - k + 1; }
  int wo() const { return w - k + 1; }
  int kdim() const { return cin * k * k; }
  ConvShape shape() const { return ConvShape{cin, h, w, cout, k, 0}; }
  double flop(int n) const { return 2.0 * n * cout * ho() * wo() * kdim(); }
};

// The inputs every LeNet kernel benchmark shares, and the reference pass in double.
struct ConvData {
  Conv c;
  int n;
  std::vector<float> x, w, b, dy;  // dense: x [n][cin][h][w], dy [n][cout][ho][wo]
  std::vector<double> ry, rdx, rdw, rdb;
  ConvData(const Conv& conv, int batch) : c(conv), n(batch) {
    x.resize(static_cast<size_t>(n) * c.cin * c.h * c.w + kVL);  // slack: rows read past
    w.resize(static_cast<size_t>(c.cout) * c.kdim());
    b.resize(static_cast<size_t>(c.cout));
    dy.resize(static_cast<size_t>(n) * c.cout * c.ho() * c.wo());
    fill_uniform(x, 21), fill_uniform(w, 22), fill_uniform(b, 23), fill_uniform(dy, 24);
    const auto xd = widen(x), wd = widen(w), bd = widen(b), dyd = widen(dy);
    ry.resize(dy.size()), rdx.resize(x.size() - kVL), rdw.resize(w.size()), rdb.resize(b.size());
    wb::models::ref::conv2d_forward<double>(c.shape(), n, xd.data(), wd.data(), bd.data(), ry.data());
    wb::models::ref::conv2d_backward<double>(c.shape(), n, xd.data(), wd.data(), dyd.data(), rdx.data(),
                                        rdw.data(), rdb.data());
  }
  // W^T [kdim][round_up(cout)] followed by the bias padded to round_up(cout): the layout of
  // conv_forward_rowpair / conv_forward_cvec.
  fast::Buffer packed_wt() const {
    const size_t ldw = fast::round_up(static_cast<size_t>(c.cout)), kdim = static_cast<size_t>(c.kdim());
    fast::Buffer wt((kdim + 1) * ldw);
    for (size_t o = 0; o < static_cast<size_t>(c.cout); ++o) {
      for (size_t q = 0; q < kdim; ++q) wt.data()[q * ldw + o] = w[o * kdim + q];
      wt.data()[kdim * ldw + o] = b[o];
    }
    return wt;
  }
  // dy with rows of ldo floats (the columns past wo zero) and channels cs floats apart.
  fast::Buffer strided_dy(int ldo, long cs) const {
    const int ho = c.ho(), wo = c.wo();
    fast::Buffer d(static_cast<size_t>(n) * c.cout * cs + kVL);
    for (int t = 0; t < n; ++t)
      for (int o = 0; o < c.cout; ++o)
        for (int i = 0; i < ho; ++i)
          for (int j = 0; j < wo; ++j)
            d.data()[(static_cast<long>(t) * c.cout + o) * cs + i * ldo + j] =
                dy[((static_cast<size_t>(t) * c.cout + o) * ho + i) * wo + j];
    return d;
  }
};

enum class Fwd { kRowpair, kCvec };

void bm_lenet_forward(benchmark::State& state, Conv c, int n, Fwd kind) {
  const ConvData d(c, n);
  const fast::Buffer wt = d.packed_wt();
  const size_t ldw = fast::round_up(static_cast<size_t>(c.cout));
  const float* bias = wt.data() + static_cast<size_t>(c.kdim()) * ldw;
  // Rows of whole vectors for the row-pair kernel (as its tests), dense rows for cvec.
  const int ldo = kind == Fwd::kRowpair ? kVL : c.wo();
  const long cs = static_cast<long>(c.ho()) * ldo;
  fast::Buffer out(static_cast<size_t>(n) * c.cout * cs);
  const size_t in_size = static_cast<size_t>(c.cin) * c.h * c.w;
  auto run = [&] {
    for (int t = 0; t < n; ++t) {  // one sample a call, as FastNet's forward
      const float* in = d.x.data() + t * in_size;
      float* o = out.data() + static_cast<long>(t) * c.cout * cs;
      if (kind == Fwd::kRowpair)
        fast::conv_forward_rowpair(c.cout, c.cin, c.k, c.h, c.w, in, wt.data(), bias, o, cs, ldo);
      else
        fast::conv_forward_cvec(c.cout, c.cin, c.k, c.h, c.w, in, wt.data(), bias, o, cs, ldo);
    }
  };
  run();
  std::vector<float> dense(d.ry.size());
  for (size_t q = 0; q < dense.size(); ++q) {
    const size_t j = q % c.wo(), i = q / c.wo() % c.ho(), to = q / (static_cast<size_t>(c.wo()) * c.ho());
    dense[q] = out.data()[to * cs + i * ldo + j];
  }
  if (!check_or_skip(state, mismatch(dense.data(), d.ry.data(), dense.size()))) return;
  for (auto _ : state) {
    run();
    benchmark::ClobberMemory();
  }
  set_flops(state, c.flop(n));
}

enum class Wgrad { kRows, kRowpair, kCvec };

void bm_lenet_wgrad(benchmark::State& state, Conv c, int n, Wgrad kind) {
  const ConvData d(c, n);
  // conv_wgrad_rows reads output rows padded to whole vectors, planes back to back;
  // the rowpair and cvec kernels read dense rows (their own copies into scratch).
  const int ldo = kind == Wgrad::kRows ? static_cast<int>(fast::round_up(static_cast<size_t>(c.wo()))) : c.wo();
  const long cs = static_cast<long>(c.ho()) * ldo, bs = c.cout * cs;
  const fast::Buffer dout = d.strided_dy(ldo, cs);
  const long in_bs = static_cast<long>(c.cin) * c.h * c.w;
  fast::Buffer scratch(kind == Wgrad::kRowpair ? fast::conv_wgrad_rowpair_scratch(c.cout, c.k, c.h)
                       : kind == Wgrad::kCvec  ? fast::conv_wgrad_cvec_scratch(c.cout, c.cin, c.k, c.h, c.w)
                                               : 1);
  fast::Buffer dw(d.w.size());
  auto run = [&] {
    switch (kind) {
      case Wgrad::kRows:
        fast::conv_wgrad_rows(c.cout, c.cin, c.k, c.h, c.w, n, dout.data(), bs, d.x.data(), in_bs, dw.data(), false);
        break;
      case Wgrad::kRowpair:
        fast::conv_wgrad_rowpair(c.cout, c.cin, c.k, c.h, c.w, n, dout.data(), bs, cs, ldo, d.x.data(), in_bs,
                                 scratch.data(), dw.data(), false);
        break;
      case Wgrad::kCvec:
        fast::conv_wgrad_cvec(c.cout, c.cin, c.k, c.h, c.w, n, dout.data(), bs, cs, ldo, d.x.data(), in_bs,
                              scratch.data(), dw.data(), false);
        break;
    }
  };
  run();
  if (!check_or_skip(state, mismatch(dw.data(), d.rdw.data(), d.rdw.size()))) return;
  for (auto _ : state) {
    run();
    benchmark::ClobberMemory();
  }
  set_flops(state, c.flop(n));
}

void bm_lenet_dgrad(benchmark::State& state, Conv c, int n) {
  const ConvData d(c, n);
  const int ldo = static_cast<int>(fast::round_up(static_cast<size_t>(c.wo())));
  const long cs = static_cast<long>(c.ho()) * ldo;
  const fast::Buffer dout = d.strided_dy(ldo, cs);
  fast::Buffer scratch(fast::conv_dgrad_rows_scratch(c.cout, c.k, c.ho(), c.wo()));
  const size_t in_size = static_cast<size_t>(c.cin) * c.h * c.w;
  fast::Buffer din(static_cast<size_t>(n) * in_size);
  auto run = [&] {
    for (int t = 0; t < n; ++t)  // one sample a call, as FastNet's backward
      fast::conv_dgrad_rows(c.cout, c.cin, c.k, c.h, c.w, d.w.data(), dout.data() + t * c.cout * cs, cs,
                            scratch.data(), din.data() + t * in_size);
  };
  run();
  if (!check_or_skip(state, mismatch(din.data(), d.rdx.data(), d.rdx.size()))) return;
  for (auto _ : state) {
    run();
    benchmark::ClobberMemory();
  }
  set_flops(state, c.flop(n));
}

[[maybe_unused]] const bool registered = [] {
  // ResNet-8 (models/resnet.cpp): the stem, then stage s's first convolution (stride 2 past
  // stage 1) and its second; batch 8.
  struct R {
    const char* name;
    ConvGeom g;
  };
  const R resnet[] = {{"stem", ConvGeom{1, 32, 32, 16, 3, 1, 1}},
                      {"s1_conv", ConvGeom{16, 32, 32, 16, 3, 1, 1}},
                      {"s2_conv1_stride2", ConvGeom{16, 32, 32, 32, 3, 2, 1}},
                      {"s2_conv2", ConvGeom{32, 16, 16, 32, 3, 1, 1}},
                      {"s3_conv1_stride2", ConvGeom{32, 16, 16, 64, 3, 2, 1}},
                      {"s3_conv2", ConvGeom{64, 8, 8, 64, 3, 1, 1}}};
  for (const R& r : resnet)
    for (bool bwd : {false, true})
      benchmark::RegisterBenchmark(
          ("resnet_conv_" + std::string(bwd ? "backward" : "forward") + "/" + r.name + "/batch:8").c_str(),
          bm_resnet_conv, r.g, 8, bwd);

  // LeNet-5 (models/lenet.cpp): conv1 1 -> 10 on 28x28, conv2 10 -> 20 on 12x12, k 5.
  // LeNet-5 classic: conv1 1 -> 6 on 28x28 with pad 2 (32x32 planes), conv2 6 -> 16 on 14x14.
  const Conv lenet[] = {{"lenet5_conv1", 1, 28, 28, 10, 5},
                        {"lenet5_conv2", 10, 12, 12, 20, 5},
                        {"classic_conv1", 1, 32, 32, 6, 5},
                        {"classic_conv2", 6, 14, 14, 16, 5}};
  constexpr int n = 32;
  auto name = [](const char* kernel, const Conv& c) {
    return std::string(kernel) + "/" + c.name + "/batch:" + std::to_string(n);
  };
  for (const Conv& c : lenet) {
    if (c.cin > 1) {  // the first stage's forward runs on gemm_bcast layouts (micro_gemm)
      if (fast::conv_forward_rowpair_fits(c.h, c.w, c.k))
        benchmark::RegisterBenchmark(name("conv_forward_rowpair", c).c_str(), bm_lenet_forward, c, n, Fwd::kRowpair);
      if (fast::conv_forward_cvec_fits(c.cout))
        benchmark::RegisterBenchmark(name("conv_forward_cvec", c).c_str(), bm_lenet_forward, c, n, Fwd::kCvec);
      if (fast::conv_wgrad_rowpair_fits(c.h, c.w, c.k))
        benchmark::RegisterBenchmark(name("conv_wgrad_rowpair", c).c_str(), bm_lenet_wgrad, c, n, Wgrad::kRowpair);
      if (fast::conv_wgrad_cvec_fits(c.k, c.cout))
        benchmark::RegisterBenchmark(name("conv_wgrad_cvec", c).c_str(), bm_lenet_wgrad, c, n, Wgrad::kCvec);
      if (fast::conv_dgrad_rows_fits(c.k, c.wo()))
        benchmark::RegisterBenchmark(name("conv_dgrad_rows", c).c_str(), bm_lenet_dgrad, c, n);
    }
    if (c.k <= fast::kWgradMaxK)
      benchmark::RegisterBenchmark(name("conv_wgrad_rows", c).c_str(), bm_lenet_wgrad, c, n, Wgrad::kRows);
  }
  return true;
}();

}  // namespace
