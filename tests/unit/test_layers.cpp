// Layers of the image models (models/layers.h, models/layers_fast.h):
//  - every reference layer's backward against central finite differences (double);
//  - the exact HVP (forward-over-reverse, Dual<double>) against finite differences of
//    gradients and against the full Hessian, on a tiny network with every layer kind;
//  - the fast kernels (GEMM micro-kernels, fused conv blocks, whole networks) against the
//    reference loops with atol + rtol*|ref|, at awkward sizes and batch sizes.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "models/dual.h"
#include "models/layers.h"
#include "models/layers_fast.h"
#include "models/lenet.h"
#include "core/error.h"
#include "core/rng.h"

using namespace wb;
using namespace wb::models;

namespace {

std::vector<double> randn(size_t n, uint64_t seed, double scale = 1.0) {
  core::Rng r(seed);
  std::vector<double> v(n);
  for (auto& x : v) x = scale * r.normal();
  return v;
}

// Checks analytic gradient `g` of f at x against central differences, element by element.
void check_fd(const std::function<double(const std::vector<double>&)>& f, std::vector<double> x,
              const std::vector<double>& g, const char* what, double h = 1e-6, double tol = 1e-6) {
  REQUIRE(g.size() == x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double x0 = x[i];
    x[i] = x0 + h;
    const double fp = f(x);
    x[i] = x0 - h;
    const double fm = f(x);
    x[i] = x0;
    const double fd = (fp - fm) / (2 * h);
    INFO(what << "[" << i << "]: analytic " << g[i] << " vs finite difference " << fd);
    CHECK(std::fabs(g[i] - fd) <= tol * (1 + std::fabs(fd)));
  }
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Awkward shapes for the fast path: implicit conv with padding on an odd map (odd
// pooling), im2col conv with k=2, dropout2d between conv and pool, 16 -> 7 -> 5 linears.
NetSpec odd_spec() {
  NetSpec s;
  s.name = "odd";
  s.c = 1, s.h = 11, s.w = 11;
  s.layers = {conv("conv1", 3, 3, 1), relu(),          max_pool2(), conv("conv2", 4, 2),
              dropout2d(0.25),        max_pool2(),     relu(),      linear("fc1", 7),
              dropout(0.5),           linear("fc2", 5)};
  return s;
}

// Two implicit convolutions (the second needs the implicit data gradient), no pooling
// after the first, a 3-channel input, pooling on 20x20.
NetSpec implicit_spec() {
  NetSpec s;
  s.name = "implicit";
  s.c = 3, s.h = 20, s.w = 20;
  s.layers = {conv("conv1", 2, 3, 1), relu(), conv("conv2", 3, 3, 1), max_pool2(), relu(),
              linear("fc1", 4)};
  return s;
}

// The im2col data gradient (col2im) with padding on rows wider than an AVX2 vector: conv2
// reads a 10x10 map with pad 2 (junk columns of the implicit layout would cost 40%).
NetSpec padded_im2col_spec() {
  NetSpec s;
  s.name = "padded_im2col";
  s.c = 2, s.h = 12, s.w = 12;
  s.layers = {conv("conv1", 3, 3), relu(), conv("conv2", 4, 5, 2), max_pool2(), relu(),
              linear("fc1", 6)};
  return s;
}

// The first stage's shifted copies (FastNet::Stage::vshift) with two input channels and rows
// of 19 columns: one whole vector and an overlapping last one with AVX-512, two and one with
// AVX2, four and one with SSE; 19 x 19 = 361 positions padded to whole vectors (zero tail
// columns of the output gradient), odd pooling (the last row and column dropped).
NetSpec vshift_spec() {
  NetSpec s;
  s.name = "vshift";
  s.c = 2, s.h = 21, s.w = 21;
  s.layers = {conv("conv1", 3, 3), max_pool2(), relu(), linear("fc1", 5)};
  return s;
}

// A plain MLP on an input whose size (5x5 = 25) is not a multiple of the vector length.
NetSpec mlp_spec() {
  NetSpec s;
  s.name = "mlp";
  s.c = 1, s.h = 5, s.w = 5;
  s.layers = {linear("fc1", 19), relu(), dropout(0.5), linear("fc2", 6)};
  return s;
}

// The forward of an unpadded convolution from W^T (kdim rows of ldw floats, the bias as row
// kdim), checked at every output against naive double loops; columns j >= wo of each row
// (up to ldo) must still hold the sentinel 9.
void check_conv_forward_wt(int cout, int cin, int k, int ho, int wo, int ldw, int ldo, long out_cs,
                           const std::vector<float>& in, const std::vector<float>& wt,
                           const std::vector<float>& out) {
  const int h = ho + k - 1, w = wo + k - 1, kdim = cin * k * k;
  for (int o = 0; o < cout; ++o)
    for (int i = 0; i < ho; ++i)
      for (int j = 0; j < ldo; ++j) {
        const float got = out[o * out_cs + i * ldo + j];
        if (j >= wo) {
          REQUIRE(got == 9.0f);
          continue;
        }
        double s = wt[static_cast<size_t>(kdim) * ldw + o], mag = std::fabs(s);
        for (int c = 0; c < cin; ++c)
          for (int u = 0; u < k; ++u)
            for (int v = 0; v < k; ++v) {
              const double p = static_cast<double>(wt[static_cast<size_t>((c * k + u) * k + v) * ldw + o]) *
                               in[(static_cast<size_t>(c) * h + i + u) * w + j + v];
              s += p;
              mag += std::fabs(p);
            }
        INFO("cout " << cout << " ho " << ho << " wo " << wo << " k " << k << " cin " << cin << " o " << o
                     << " i " << i << " j " << j);
        REQUIRE(std::fabs(got - s) <= 1e-6 + 1e-5 * mag);
      }
}

// An unpadded convolution's weight gradient dw (cout rows of cin*k*k) against naive double
// loops over nb samples (dout channel o of sample t at t*dout_bs + o*dout_cs, rows of ldo;
// inputs at t*in_bs, planes of h x w), dw0 the contents before when accumulating.
void check_conv_wgrad(int cout, int cin, int k, int ho, int wo, int nb, const std::vector<float>& dout,
                      long dout_bs, long dout_cs, int ldo, const std::vector<float>& in, long in_bs,
                      const std::vector<float>& dw, const std::vector<float>& dw0, bool acc) {
  const int h = ho + k - 1, w = wo + k - 1, kdim = cin * k * k;
  for (int o = 0; o < cout; ++o)
    for (int q = 0; q < kdim; ++q) {
      const int c = q / (k * k), u = q / k % k, v = q % k;
      const size_t at = static_cast<size_t>(o) * kdim + q;
      double s = acc ? dw0[at] : 0.0, mag = std::fabs(s);
      for (int t = 0; t < nb; ++t)
        for (int i = 0; i < ho; ++i)
          for (int j = 0; j < wo; ++j) {
            const double p = static_cast<double>(dout[t * dout_bs + o * dout_cs + i * ldo + j]) *
                             in[t * in_bs + (static_cast<long>(c) * h + i + u) * w + j + v];
            s += p;
            mag += std::fabs(p);
          }
      INFO("cout " << cout << " wo " << wo << " ho " << ho << " k " << k << " cin " << cin << " nb " << nb
                   << " o " << o << " q " << q);
      REQUIRE(std::fabs(dw[at] - s) <= 1e-6 + 1e-5 * mag);
    }
}

}  // namespace

TEST_SUITE("layers") {
  // ---- Dual numbers -------------------------------------------------------------------

  TEST_CASE("layers: Dual numbers carry exact derivatives through + - * / exp log") {
    using D = Dual<double>;
    const D x(0.7, 1.0);  // d/dx
    const D f = exp_of(x * x) / (D(1.0) + log_of(x + D(2.0))) - x * D(3.0);
    const double v = 0.7;
    const double u = std::exp(v * v), q = 1 + std::log(v + 2);
    const double df = (2 * v * u * q - u / (v + 2)) / (q * q) - 3;
    CHECK(f.v == doctest::Approx(u / q - 3 * v).epsilon(1e-14));
    CHECK(f.d == doctest::Approx(df).epsilon(1e-13));
  }

  // ---- reference layers: backward vs finite differences --------------------------------

  TEST_CASE("layers: conv2d backward matches finite differences (padding, 2 input channels)") {
    const ConvShape s{2, 7, 6, 3, 3, 1};  // cin 2, 7x6 input, cout 3, k 3, pad 1
    const int n = 2;
    const size_t nx = static_cast<size_t>(n) * s.cin * s.h * s.w, nw = s.cout * s.kdim();
    const size_t ny = static_cast<size_t>(n) * s.cout * s.ho() * s.wo();
    auto x = randn(nx, 1), w = randn(nw, 2, 0.3), b = randn(s.cout, 3), r = randn(ny, 4);
    auto loss = [&](const std::vector<double>& xx, const std::vector<double>& ww,
                    const std::vector<double>& bb) {
      std::vector<double> y(ny);
      ref::conv2d_forward(s, n, xx.data(), ww.data(), bb.data(), y.data());
      return dot(y, r);
    };
    std::vector<double> dx(nx), dw(nw), db(s.cout);
    ref::conv2d_backward(s, n, x.data(), w.data(), r.data(), dx.data(), dw.data(), db.data());
    check_fd([&](const std::vector<double>& v) { return loss(v, w, b); }, x, dx, "conv dx");
    check_fd([&](const std::vector<double>& v) { return loss(x, v, b); }, w, dw, "conv dw");
    check_fd([&](const std::vector<double>& v) { return loss(x, w, v); }, b, db, "conv db");
  }

  TEST_CASE("layers: max-pool, ReLU, dropout backward match finite differences") {
    const int n = 2, c = 3, h = 5, w = 7;  // odd sizes: floor mode drops the last row/col
    const size_t nx = static_cast<size_t>(n) * c * h * w, ny = static_cast<size_t>(n) * c * 2 * 3;
    auto x = randn(nx, 5);
    auto r = randn(ny, 6);
    {
      std::vector<int32_t> idx(ny);
      auto loss = [&](const std::vector<double>& xx) {
        std::vector<double> y(ny);
        ref::maxpool2_forward(n, c, h, w, xx.data(), y.data(), idx.data());
        return dot(y, r);
      };
      std::vector<double> y(ny), dx(nx);
      ref::maxpool2_forward(n, c, h, w, x.data(), y.data(), idx.data());
      ref::maxpool2_backward(n, c, h, w, r.data(), idx.data(), dx.data());
      check_fd(loss, x, dx, "maxpool dx");
    }
    {
      auto xr = x;
      for (auto& v : xr)
        if (std::fabs(v) < 1e-3) v = 0.5;  // keep finite differences away from the kink
      auto rr = randn(nx, 7);
      auto loss = [&](const std::vector<double>& xx) {
        std::vector<double> y(nx);
        ref::relu_forward(nx, xx.data(), y.data());
        return dot(y, rr);
      };
      std::vector<double> dx(nx);
      ref::relu_backward(nx, xr.data(), rr.data(), dx.data());
      check_fd(loss, xr, dx, "relu dx");
    }
    {
      const size_t units = static_cast<size_t>(n) * c;
      std::vector<uint8_t> keep(units);
      dropout_mask(99, 3, units, 0.5, keep.data());
      auto rr = randn(nx, 8);
      auto loss = [&](const std::vector<double>& xx) {
        std::vector<double> y(nx);
        ref::dropout_apply(units, h * w, keep.data(), 0.5, xx.data(), y.data());
        return dot(y, rr);
      };
      std::vector<double> dx(nx);
      ref::dropout_apply(units, h * w, keep.data(), 0.5, rr.data(), dx.data());
      check_fd(loss, x, dx, "dropout2d dx");
      // inverted dropout: kept values are scaled by 1/(1-p), dropped are 0
      std::vector<double> y(nx);
      ref::dropout_apply(units, h * w, keep.data(), 0.5, x.data(), y.data());
      for (size_t u = 0; u < units; ++u) CHECK(y[u * h * w] == (keep[u] ? 2 * x[u * h * w] : 0.0));
    }
  }

  TEST_CASE("layers: linear and log-softmax NLL backward match finite differences") {
    const int n = 3, in = 7, out = 4;
    auto x = randn(static_cast<size_t>(n) * in, 11), w = randn(static_cast<size_t>(out) * in, 12);
    auto b = randn(out, 13), r = randn(static_cast<size_t>(n) * out, 14);
    auto loss = [&](const std::vector<double>& xx, const std::vector<double>& ww,
                    const std::vector<double>& bb) {
      std::vector<double> y(static_cast<size_t>(n) * out);
      ref::linear_forward(n, in, out, xx.data(), ww.data(), bb.data(), y.data());
      return dot(y, r);
    };
    std::vector<double> dx(x.size()), dw(w.size()), db(out);
    ref::linear_backward(n, in, out, x.data(), w.data(), r.data(), dx.data(), dw.data(), db.data());
    check_fd([&](const std::vector<double>& v) { return loss(v, w, b); }, x, dx, "linear dx");
    check_fd([&](const std::vector<double>& v) { return loss(x, v, b); }, w, dw, "linear dw");
    check_fd([&](const std::vector<double>& v) { return loss(x, w, v); }, b, db, "linear db");

    const int classes = 5;
    auto z = randn(static_cast<size_t>(n) * classes, 15, 3.0);
    const int32_t label[n] = {0, 4, 2};
    auto nll = [&](const std::vector<double>& zz) {
      return ref::log_softmax_nll(n, classes, zz.data(), label, static_cast<double*>(nullptr),
                                  1.0 / n, nullptr) /
             n;
    };
    std::vector<double> dz(z.size());
    int64_t correct = 0;
    const double sum =
        ref::log_softmax_nll(n, classes, z.data(), label, dz.data(), 1.0 / n, &correct);
    // closed form for one sample: -log softmax(z)[y]
    double lse = 0;
    for (int c = 0; c < classes; ++c) lse += std::exp(z[c]);
    double expect0 = std::log(lse) - z[0];
    CHECK(sum >= expect0);
    check_fd(nll, z, dz, "nll dlogits");
  }

  // ---- exact HVP ----------------------------------------------------------------------

  TEST_CASE("layers: exact HVP equals finite differences of gradients (tiny net, dropout on)") {
    ConvNetModel m(tiny_every_layer_spec());
    CHECK(m.num_params() == 133);
    const Batch b = random_image_batch(4, 36, 3, 21);
    std::vector<float> wf(m.num_params());
    m.init_params(wf, 5);
    std::vector<double> w(wf.begin(), wf.end());
    const auto v = randn(w.size(), 22);
    std::vector<double> hv(w.size()), gp(w.size()), gm(w.size());
    const uint64_t noise = 77;
    m.hvp_f64(w, v, b, hv, noise);
    const double h = 1e-5;
    auto wp = w, wm = w;
    for (size_t i = 0; i < w.size(); ++i) wp[i] += h * v[i], wm[i] -= h * v[i];
    m.loss_grad_f64(wp, b, gp, noise);
    m.loss_grad_f64(wm, b, gm, noise);
    double err = 0, ref_norm = 0;
    for (size_t i = 0; i < w.size(); ++i) {
      const double fd = (gp[i] - gm[i]) / (2 * h);
      err = std::max(err, std::fabs(hv[i] - fd));
      ref_norm = std::max(ref_norm, std::fabs(fd));
    }
    INFO("max |Hv - fd| = " << err << ", max |fd| = " << ref_norm);
    CHECK(ref_norm > 1e-3);  // not trivially zero
    CHECK(err <= 1e-6 * (1 + ref_norm));
  }

  TEST_CASE("layers: full Hessian is symmetric, matches finite differences, and H v = hvp") {
    ConvNetModel m(tiny_every_layer_spec());
    const size_t n = m.num_params();
    const Batch b = random_image_batch(3, 36, 3, 31);
    std::vector<float> wf(n);
    m.init_params(wf, 6);
    std::vector<double> w(wf.begin(), wf.end());
    const uint64_t noise = 5;
    const std::vector<double> H = hessian_f64(m, w, b, noise);
    REQUIRE(H.size() == n * n);
    double asym = 0, hmax = 0;
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j) {
        asym = std::max(asym, std::fabs(H[i * n + j] - H[j * n + i]));
        hmax = std::max(hmax, std::fabs(H[i * n + j]));
      }
    CHECK(hmax > 1e-3);
    CHECK(asym <= 1e-12 * (1 + hmax));
    // Columns against finite differences of the gradient.
    std::vector<double> gp(n), gm(n);
    const double h = 1e-5;
    double err = 0;
    for (size_t j = 0; j < n; j += 7) {
      auto wp = w, wm = w;
      wp[j] += h;
      wm[j] -= h;
      m.loss_grad_f64(wp, b, gp, noise);
      m.loss_grad_f64(wm, b, gm, noise);
      for (size_t i = 0; i < n; ++i)
        err = std::max(err, std::fabs(H[i * n + j] - (gp[i] - gm[i]) / (2 * h)));
    }
    CHECK(err <= 1e-6 * (1 + hmax));
    // H v from the matrix equals the HVP for a random v.
    const auto v = randn(n, 32);
    std::vector<double> hv(n);
    m.hvp_f64(w, v, b, hv, noise);
    for (size_t i = 0; i < n; ++i) {
      double s = 0;
      for (size_t j = 0; j < n; ++j) s += H[i * n + j] * v[j];
      CHECK(hv[i] == doctest::Approx(s).epsilon(1e-10).scale(1 + hmax));
    }
    // The size guard of hessian_f64.
    ConvNetModel big(lenet5_spec());
    std::vector<double> wb(big.num_params());
    CHECK_THROWS_AS(hessian_f64(big, wb, random_image_batch(1, 784, 10, 1), 0), UserError);
  }

  TEST_CASE("layers: the HVP uses the training pass's dropout masks (noise_seed)") {
    ConvNetModel m(tiny_every_layer_spec());
    const Batch b = random_image_batch(5, 36, 3, 41);
    std::vector<float> wf(m.num_params());
    m.init_params(wf, 7);
    std::vector<double> w(wf.begin(), wf.end()), g1(w.size()), g2(w.size());
    const auto v = randn(w.size(), 42);
    std::vector<double> h1(w.size()), h2(w.size()), h3(w.size());
    m.hvp_f64(w, v, b, h1, 1);
    m.hvp_f64(w, v, b, h2, 1);
    m.hvp_f64(w, v, b, h3, 2);
    CHECK(h1 == h2);
    CHECK(h1 != h3);
    // float fast path, float reference and double oracle agree for the same noise_seed
    std::vector<float> gf(w.size()), gr(w.size());
    auto ws = m.make_workspace(5);
    const double lf = m.loss_grad(wf, b, gf, *ws, 9);
    const double lr = m.reference_loss_grad(wf, b, gr, 9);
    const double ld = m.loss_grad_f64(w, b, g1, 9);
    CHECK(lf == doctest::Approx(ld).epsilon(1e-5));
    CHECK(lr == doctest::Approx(ld).epsilon(1e-5));
    for (size_t i = 0; i < w.size(); ++i)
      CHECK(std::fabs(gf[i] - g1[i]) <= 1e-5 + 1e-4 * std::fabs(g1[i]));
  }

  // ---- fast kernels vs reference ------------------------------------------------------

  TEST_CASE("layers: fast GEMM micro-kernels match naive loops at awkward sizes") {
    using fast::kVL;
    core::Rng r(3);
    auto fill = [&](std::vector<float>& v) {
      for (auto& x : v) x = static_cast<float>(r.uniform(-1, 1));
    };
    for (int M : {1, 2, 5, 6, 7, 13, 25})
      for (int nv : {1, 2, 3, 5, 9})
        for (int K : {1, 3, 20, 33}) {
          const int N = nv * kVL;
          // gemm_bcast: C = bias + A^T-strided * B (B rows through an offset table)
          std::vector<float> a(static_cast<size_t>(M) * K), bias(M),
              c(static_cast<size_t>(M) * (N + 3));
          std::vector<float> b(static_cast<size_t>(K) * (N + 5) + 7);
          fill(a), fill(b), fill(bias), fill(c);
          std::vector<int32_t> off(K);
          for (int k = 0; k < K; ++k)
            off[k] = (K - 1 - k) * (N + 5) + (k % 3);  // permuted, unaligned
          const auto c0 = c;
          for (int mode = 0; mode < 3; ++mode) {  // 0: bias, 1: accumulate, 2: overwrite
            c = c0;
            // A(m,k) = a[k*M + m] (transposed storage)
            fast::gemm_bcast(M, N, K, a.data(), 1, M, b.data(), off.data(), 0, c.data(), N + 3,
                             mode == 0 ? bias.data() : nullptr, mode == 1);
            for (int m = 0; m < M; ++m)
              for (int j = 0; j < N; ++j) {
                double s = mode == 0 ? bias[m] : mode == 1 ? c0[m * (N + 3) + j] : 0.0;
                double mag = std::fabs(s);
                for (int k = 0; k < K; ++k) {
                  s += static_cast<double>(a[k * M + m]) * b[off[k] + j];
                  mag += std::fabs(a[k * M + m] * b[off[k] + j]);
                }
                REQUIRE(std::fabs(c[m * (N + 3) + j] - s) <= 1e-6 + 1e-5 * mag);
              }
          }
        }
    // K = 224 / 512 with M = 9: two samples' A rows per L1 chunk, or one, so the
    // batch sum runs over several chunks (each adding into C).
    for (int M : {1, 3, 4, 9})
      for (int N : {1, 4, 5, 11, 25})
        for (int kv : {1, 3, 224 / kVL, 512 / kVL})
          for (int nb : {1, 2, 5}) {
            if (kv * kVL >= 224 && M != 9) continue;
            const int K = kv * kVL;
            const long a_rs = K + kVL, a_bs = M * a_rs + 3, ldb = K + 2 * kVL, b_bs = N * ldb + 1;
            std::vector<float> a(static_cast<size_t>(nb) * a_bs), b(static_cast<size_t>(nb) * b_bs);
            std::vector<float> c(static_cast<size_t>(M) * (N + 1));
            fill(a), fill(b), fill(c);
            const auto c0 = c;
            for (bool acc : {false, true}) {
              c = c0;
              fast::gemm_dot(M, N, nb, K, a.data(), a_bs, a_rs, b.data(), b_bs, nullptr, ldb,
                             c.data(), N + 1, acc);
              for (int m = 0; m < M; ++m)
                for (int j = 0; j < N; ++j) {
                  double s = acc ? c0[m * (N + 1) + j] : 0.0, mag = std::fabs(s);
                  for (int t = 0; t < nb; ++t)
                    for (int k = 0; k < K; ++k) {
                      const double p = static_cast<double>(a[t * a_bs + m * a_rs + k]) *
                                       b[t * b_bs + j * ldb + k];
                      s += p;
                      mag += std::fabs(p);
                    }
                  REQUIRE(std::fabs(c[m * (N + 1) + j] - s) <= 1e-6 + 1e-5 * mag);
                }
            }
          }
  }

  TEST_CASE("layers: fast GEMMs read B vectors at a stride (conv rows straight from the planes)") {
    // b_vs != kVL: vector q of a B row sits at (q / vpr)*b_vs + (q % vpr)*kVL, as conv output
    // rows of vpr vectors read their input rows at the image width.
    using fast::kVL;
    core::Rng r(5);
    auto fill = [&](std::vector<float>& v) {
      for (auto& x : v) x = static_cast<float>(r.uniform(-1, 1));
    };
    // Rows of vpr vectors (vpr > 1: conv output rows wider than one vector).
    for (int vpr : {1, 2, 3})
      for (long extra : {4L, long{kVL} / 2, long{kVL} + 1})
        for (int M : {1, 5, 13})
          for (int rows : {1, 3, 8})
            for (int K : {2, 25}) {
              const long b_vs = vpr * kVL + extra;
              const int nv = rows * vpr;
              const int N = nv * kVL;
              std::vector<float> a(static_cast<size_t>(M) * K), c(static_cast<size_t>(M) * N);
              std::vector<float> b(static_cast<size_t>(K) * 7 + b_vs * rows + kVL);
              fill(a), fill(b);
              std::vector<int32_t> off(K);
              for (int k = 0; k < K; ++k) off[k] = (K - 1 - k) * 7;
              auto bat = [&](int k, int j) {
                const int q = j / kVL;
                return b[off[k] + (q / vpr) * b_vs + (q % vpr) * kVL + j % kVL];
              };
              fast::gemm_bcast(M, N, K, a.data(), K, 1, b.data(), off.data(), 0, c.data(), N,
                               nullptr, false, b_vs, vpr);
              for (int m = 0; m < M; ++m)
                for (int j = 0; j < N; ++j) {
                  double s = 0, mag = 0;
                  for (int k = 0; k < K; ++k) {
                    s += static_cast<double>(a[m * K + k]) * bat(k, j);
                    mag += std::fabs(a[m * K + k] * bat(k, j));
                  }
                  REQUIRE(std::fabs(c[m * N + j] - s) <= 1e-6 + 1e-5 * mag);
                }
              // gemm_dot over the same strided rows: C[m][k] = sum_t dot(A_t row m, B row k).
              const int nb = 3;
              const long a_bs = static_cast<long>(M) * N;
              std::vector<float> at(static_cast<size_t>(nb) * a_bs), cd(static_cast<size_t>(M) * K);
              fill(at);
              fast::gemm_dot(M, K, nb, N, at.data(), a_bs, N, b.data(), 0, off.data(), 0, cd.data(),
                             K, false, b_vs, vpr);
              for (int m = 0; m < M; ++m)
                for (int k = 0; k < K; ++k) {
                  double s = 0, mag = 0;
                  for (int t = 0; t < nb; ++t)
                    for (int j = 0; j < N; ++j) {
                      const double p = static_cast<double>(at[t * a_bs + m * N + j]) * bat(k, j);
                      s += p;
                      mag += std::fabs(p);
                    }
                  REQUIRE(std::fabs(cd[m * K + k] - s) <= 1e-6 + 1e-5 * mag);
                }
            }
  }

  TEST_CASE("layers: fast conv weight gradient (rows of whole vectors) matches naive loops") {
    // conv_wgrad_rows at every tile shape it dispatches to: output channels not a multiple
    // of the row tile, kernel sizes 1..kWgradMaxK and one above (the gemm_dot fallback),
    // output rows of 1..4 vectors, whole or padded to whole vectors (3 junk columns whose
    // output gradient is zero: lenet5_classic's conv2, 10 wide; k - 1: rows as wide as the
    // input's, back to back, as lenet5_classic's conv1 on its zero-padded 32 x 32 planes),
    // an odd batch, and accumulate on/off.
    using fast::kVL;
    core::Rng r(11);
    auto fill = [&](std::vector<float>& v) {
      for (auto& x : v) x = static_cast<float>(r.uniform(-1, 1));
    };
    for (int k : {1, 2, 3, 5, fast::kWgradMaxK, fast::kWgradMaxK + 1})
      for (int vpr : {1, 2, 3, 4})
        for (int junk : {0, 3, k - 1})
          for (int cout : {1, 3, 5})
            for (int cin : {1, 2})
              for (int nb : {1, 3}) {
                const int wo_p = vpr * kVL, wo = wo_p - junk, w = wo + k - 1, ho = 3,
                          h = ho + k - 1;
                if (wo < 1 || (junk == k - 1 && (k - 1 >= kVL || junk == 0 || junk == 3))) continue;
                const long dout_bs = static_cast<long>(cout) * ho * wo_p + 5;
                const long in_bs = static_cast<long>(cin) * h * w + 3;
                // The junk columns read up to `junk` floats past the last input plane.
                std::vector<float> dout(nb * dout_bs), in(nb * in_bs + kVL);
                fill(dout), fill(in);
                for (int t = 0; t < nb; ++t)
                  for (int row = 0; row < cout * ho; ++row)
                    for (int j = wo; j < wo_p; ++j) dout[t * dout_bs + row * wo_p + j] = 0.0f;
                const int kdim = cin * k * k;
                for (bool acc : {false, true}) {
                  std::vector<float> dw(static_cast<size_t>(cout) * kdim), dw0;
                  fill(dw);
                  dw0 = dw;
                  fast::conv_wgrad_rows(cout, cin, k, h, w, nb, dout.data(), dout_bs, in.data(),
                                        in_bs, dw.data(), acc);
                  for (int o = 0; o < cout; ++o)
                    for (int c = 0; c < cin; ++c)
                      for (int u = 0; u < k; ++u)
                        for (int v = 0; v < k; ++v) {
                          const size_t at = static_cast<size_t>(o) * kdim + (c * k + u) * k + v;
                          double s = acc ? dw0[at] : 0.0, mag = std::fabs(s);
                          for (int t = 0; t < nb; ++t)
                            for (int i = 0; i < ho; ++i)
                              for (int j = 0; j < wo; ++j) {
                                const double p =
                                    static_cast<double>(
                                        dout[t * dout_bs + (static_cast<long>(o) * ho + i) * wo_p +
                                             j]) *
                                    in[t * in_bs + (static_cast<long>(c) * h + i + u) * w + j + v];
                                s += p;
                                mag += std::fabs(p);
                              }
                          REQUIRE(std::fabs(dw[at] - s) <= 1e-6 + 1e-5 * mag);
                        }
                }
              }
  }

  TEST_CASE("layers: fast conv forward over row-pair vectors matches naive loops") {
    // conv_forward_rowpair where it applies (rows of half a vector, an even number of them):
    // channel counts of one tile, of several balanced tiles (past kVRegs - 4), and below a
    // vector; the unused lanes of W^T and the bias hold garbage that must not reach the
    // output; columns past the row and rows past the output left untouched.
    using fast::kVL;
    core::Rng r(23);
    const int wo = kVL / 2;
    for (int cout : {1, 5, 20, 29, 61})
      for (int ho : {2, 4, 8})
        for (int k : {1, 3, 5})
          for (int cin : {1, 10}) {
            const int h = ho + k - 1, w = wo + k - 1, kdim = cin * k * k;
            REQUIRE(fast::conv_forward_rowpair_fits(h, w, k));
            const int ldw = static_cast<int>(fast::round_up(cout)), ldo = kVL;
            const long out_cs = static_cast<long>(ho) * ldo + 3;
            std::vector<float> in(static_cast<size_t>(cin) * h * w), wt((kdim + 1) * ldw);
            for (auto& x : in) x = static_cast<float>(r.uniform(-1, 1));
            for (auto& x : wt) x = static_cast<float>(r.uniform(-1, 1));
            std::vector<float> out(cout * out_cs, 9.0f);
            fast::conv_forward_rowpair(cout, cin, k, h, w, in.data(), wt.data(),
                                       wt.data() + static_cast<size_t>(kdim) * ldw, out.data(),
                                       out_cs, ldo);
            check_conv_forward_wt(cout, cin, k, ho, wo, ldw, ldo, out_cs, in, wt, out);
            for (int o = 0; o < cout; ++o)
              for (long q = static_cast<long>(ho) * ldo; q < out_cs; ++q) REQUIRE(out[o * out_cs + q] == 9.0f);
          }
    CHECK_FALSE(fast::conv_forward_rowpair_fits(3 + 4, wo + 4, 5));   // ho = 3: odd
    CHECK_FALSE(fast::conv_forward_rowpair_fits(8 + 4, kVL + 4, 5));  // whole-vector rows
  }

  TEST_CASE("layers: fast conv forward over output-channel vectors matches naive loops") {
    // conv_forward_cvec at channel counts below, at and between whole vectors (the unused
    // lanes of W^T and the bias hold garbage that must not reach the output), row widths
    // that split into equal and unequal position tiles (lenet5_classic's conv2: 16
    // channels, 10 wide, k 5, 6 input channels), and columns past the row left untouched.
    using fast::kVL;
    core::Rng r(17);
    for (int cout : {1, 6, kVL, kVL + 3, 16, 2 * kVL})
      for (int wo : {1, 3, 10, 13})
        for (int k : {1, 3, 5})
          for (int cin : {1, 6}) {
            if (!fast::conv_forward_cvec_fits(cout)) continue;
            const int ho = 3, h = ho + k - 1, w = wo + k - 1, kdim = cin * k * k;
            const int ldw = static_cast<int>(fast::round_up(cout)), ldo = wo + 2;
            const long out_cs = static_cast<long>(ho) * ldo + 1;
            std::vector<float> in(static_cast<size_t>(cin) * h * w), wt((kdim + 1) * ldw);
            for (auto& x : in) x = static_cast<float>(r.uniform(-1, 1));
            for (auto& x : wt) x = static_cast<float>(r.uniform(-1, 1));
            std::vector<float> out(cout * out_cs, 9.0f);
            fast::conv_forward_cvec(cout, cin, k, h, w, in.data(), wt.data(),
                                    wt.data() + static_cast<size_t>(kdim) * ldw, out.data(), out_cs,
                                    ldo);
            check_conv_forward_wt(cout, cin, k, ho, wo, ldw, ldo, out_cs, in, wt, out);
            for (int o = 0; o < cout; ++o) REQUIRE(out[o * out_cs + ho * ldo] == 9.0f);
          }
  }

  TEST_CASE("layers: fast conv weight gradient over output-channel vectors matches naive loops") {
    // conv_wgrad_cvec at channel counts below, at and between whole vectors, kernel sizes up
    // to kWgradMaxK, batches within one sample chunk and across two (lenet5_classic's conv2:
    // 16 channels, 10 wide, k 5, 6 input channels), the output gradient's columns past the
    // row holding garbage it must not read, one scratch reused by every call, and
    // accumulate on/off.
    using fast::kVL;
    core::Rng r(19);
    auto fill = [&](std::vector<float>& v) {
      for (auto& x : v) x = static_cast<float>(r.uniform(-1, 1));
    };
    const int max_cout = fast::kCvecMaxNV * kVL, max_cin = 6, max_k = fast::kWgradMaxK;
    for (int cout : {1, 6, kVL, kVL + 3, 16, 2 * kVL})
      for (int wo : {1, 3, 10})
        for (int k : {1, 3, 5, fast::kWgradMaxK})
          for (int cin : {1, 6})
            for (int nb : {1, 3, fast::kCvecWgradChunk + 2}) {
              if (!fast::conv_wgrad_cvec_fits(k, cout)) continue;
              // One scratch for all shapes: sized for the largest, zero as created.
              static fast::Buffer scratch(fast::conv_wgrad_cvec_scratch(
                  max_cout, max_cin, max_k, 10 + max_k - 1, 10 + max_k - 1));
              REQUIRE(fast::conv_wgrad_cvec_scratch(cout, cin, k, 3 + k - 1, wo + k - 1) <=
                      scratch.size());
              const int ho = 3, h = ho + k - 1, w = wo + k - 1, ldo = wo + 3, kdim = cin * k * k;
              const long dout_cs = static_cast<long>(ho) * ldo + 1, dout_bs = cout * dout_cs + 2;
              const long in_bs = static_cast<long>(cin) * h * w + 1;
              std::vector<float> dout(nb * dout_bs), in(nb * in_bs);
              fill(dout), fill(in);
              for (bool acc : {false, true}) {
                std::vector<float> dw(static_cast<size_t>(cout) * kdim), dw0;
                fill(dw);
                dw0 = dw;
                fast::conv_wgrad_cvec(cout, cin, k, h, w, nb, dout.data(), dout_bs, dout_cs, ldo,
                                      in.data(), in_bs, scratch.data(), dw.data(), acc);
                check_conv_wgrad(cout, cin, k, ho, wo, nb, dout, dout_bs, dout_cs, ldo, in, in_bs, dw, dw0, acc);
              }
            }
  }

  TEST_CASE("layers: fast conv weight gradient over row pairs matches naive loops") {
    // conv_wgrad_rowpair on rows of half a vector (lenet5's conv2 with AVX-512: 8 wide), channel
    // counts below, at and past its 4-channel tiles (1, 3, 4, 5, 20), input channels 1 and 3,
    // kernel sizes 1 .. kWgradMaxK, 2 and 4 output rows, batches within one chunk and across
    // two, gradient columns past each row holding garbage it must not read, accumulate on/off.
    using fast::kVL;
    if (kVL < 2) return;
    core::Rng r(23);
    auto fill = [&](std::vector<float>& v) {
      for (auto& x : v) x = static_cast<float>(r.uniform(-1, 1));
    };
    const int wo = kVL / 2;
    for (int cout : {1, 3, 4, 5, 20})
      for (int cin : {1, 3})
        for (int k : {1, 3, 5, fast::kWgradMaxK})
          for (int ho : {2, 4})
            for (int nb : {1, 3, fast::kRowpairWgradChunk + 2}) {
              const int h = ho + k - 1, w = wo + k - 1, ldo = wo + 5, kdim = cin * k * k;
              REQUIRE(fast::conv_wgrad_rowpair_fits(h, w, k));
              const long dout_cs = static_cast<long>(ho) * ldo + 1, dout_bs = cout * dout_cs + 2;
              const long in_bs = static_cast<long>(cin) * h * w + 3;
              std::vector<float> dout(nb * dout_bs), in(nb * in_bs);
              fill(dout), fill(in);
              fast::Buffer scratch(fast::conv_wgrad_rowpair_scratch(cout, k, h));
              for (bool acc : {false, true}) {
                std::vector<float> dw(static_cast<size_t>(cout) * kdim), dw0;
                fill(dw);
                dw0 = dw;
                fast::conv_wgrad_rowpair(cout, cin, k, h, w, nb, dout.data(), dout_bs, dout_cs, ldo,
                                         in.data(), in_bs, scratch.data(), dw.data(), acc);
                check_conv_wgrad(cout, cin, k, ho, wo, nb, dout, dout_bs, dout_cs, ldo, in, in_bs, dw, dw0, acc);
              }
            }
    CHECK_FALSE(fast::conv_wgrad_rowpair_fits(3 + 4, kVL / 2 + 4, 5));  // ho = 3: odd
    CHECK_FALSE(fast::conv_wgrad_rowpair_fits(8 + 4, kVL + 4, 5));      // whole-vector rows
    CHECK_FALSE(fast::conv_wgrad_rowpair_fits(8 + 8, kVL / 2 + 8, 9));  // k > kWgradMaxK
  }

  TEST_CASE("layers: fast conv data gradient (rows of one or two vectors) matches naive loops") {
    // conv_dgrad_rows at every kernel size it takes (row tiles that do and do not divide
    // the input height), odd channel counts, one and two vectors per input row, output
    // rows of one vector, of two, and padded to whole vectors (junk columns whose gradient
    // is zero: lenet5_classic's conv2, 10 wide; 3 wide), rows of half a vector (two to a
    // vector: lenet5's conv2 with AVX-512), and the last row's store kept inside the dense
    // planes (a sentinel after them).
    using fast::kVL;
    core::Rng r(13);
    auto fill = [&](std::vector<float>& v) {
      for (auto& x : v) x = static_cast<float>(r.uniform(-1, 1));
    };
    for (int k = 1; k <= fast::kWgradMaxK; ++k)
      for (int wo : {kVL, 2 * kVL, 10, 3, kVL / 2})  // kVL / 2: two rows a vector
        for (int ho : {1, 3, 8})
          for (int cout : {1, 3, 20})
            for (int cin : {1, 2, 5}) {
              if (!fast::conv_dgrad_rows_fits(k, wo)) continue;
              const int wo_p = (wo + kVL - 1) / kVL * kVL, h = ho + k - 1, w = wo + k - 1;
              const long dout_cs = static_cast<long>(ho) * wo_p + 3;
              std::vector<float> wt(static_cast<size_t>(cout) * cin * k * k), dout(cout * dout_cs);
              fill(wt), fill(dout);
              for (int row = 0; row < cout * ho; ++row)
                for (int j = wo; j < wo_p; ++j) dout[row / ho * dout_cs + row % ho * wo_p + j] = 0;
              const size_t dense = static_cast<size_t>(cin) * h * w;
              std::vector<float> din(dense + 2 * kVL, 7.0f);
              fast::Buffer scratch(fast::conv_dgrad_rows_scratch(cout, k, ho, wo));
              for (int rep = 0; rep < 2; ++rep)  // the scratch's zero rows survive a call
                fast::conv_dgrad_rows(cout, cin, k, h, w, wt.data(), dout.data(), dout_cs,
                                      scratch.data(), din.data());
              for (size_t i = dense; i < din.size(); ++i) REQUIRE(din[i] == 7.0f);
              for (int c = 0; c < cin; ++c)
                for (int y = 0; y < h; ++y)
                  for (int x = 0; x < w; ++x) {
                    double s = 0, mag = 0;
                    for (int o = 0; o < cout; ++o)
                      for (int u = 0; u < k; ++u)
                        for (int v = 0; v < k; ++v) {
                          const int i = y - u, j = x - v;
                          if (i < 0 || i >= ho || j < 0 || j >= wo) continue;
                          const double p =
                              static_cast<double>(
                                  wt[((static_cast<size_t>(o) * cin + c) * k + u) * k + v]) *
                              dout[o * dout_cs + i * wo_p + j];
                          s += p;
                          mag += std::fabs(p);
                        }
                    INFO("k " << k << " wo " << wo << " ho " << ho << " cout " << cout << " cin "
                              << cin << " c " << c << " y " << y << " x " << x);
                    REQUIRE(std::fabs(din[(static_cast<size_t>(c) * h + y) * w + x] - s) <=
                            1e-6 + 1e-5 * mag);
                  }
            }
  }

  TEST_CASE("layers: fast path matches the reference loops (loss, gradient, evaluation)") {
    struct Case {
      NetSpec spec;
      std::vector<int> batches;
    };
    const std::vector<Case> cases = {{lenet5_spec(), {1, 3, 17, 33}},
                                     {lenet5_classic_spec(), {1, 5, 32}},
                                     {tiny_every_layer_spec(), {1, 2, 7}},
                                     {odd_spec(), {1, 6, 19}},
                                     {implicit_spec(), {1, 4}},
                                     {padded_im2col_spec(), {1, 3}},
                                     {vshift_spec(), {1, 5}},
                                     {mlp_spec(), {1, 9, 40}}};
    for (const Case& cs : cases) {
      ConvNetModel m(cs.spec);
      // The layouts these specs are here for (the vector length decides some of them).
      if (cs.spec.name == "vshift") REQUIRE(m.fast().stages()[0].vshift);
      if (cs.spec.name == "implicit") REQUIRE(m.fast().stages()[1].implicit);
      const int in = static_cast<int>(m.net().layers[0].in_size());
      std::vector<float> w(m.num_params());
      m.init_params(w, 11);
      const int max_batch = *std::max_element(cs.batches.begin(), cs.batches.end());
      auto ws = m.make_workspace(max_batch);
      for (int n : cs.batches) {
        const Batch b = random_image_batch(n, in, m.net().classes, 100 + n);
        std::vector<float> gf(w.size(), 123.0f), gr(w.size());
        // Twice through the same workspace: nothing may depend on leftovers of a pass.
        for (uint64_t noise : {3u, 4u}) {
          const double lf = m.loss_grad(w, b, gf, *ws, noise);
          const double lr = m.reference_loss_grad(w, b, gr, noise);
          INFO(cs.spec.name << " batch " << n << " noise " << noise);
          CHECK(lf == doctest::Approx(lr).epsilon(2e-6));
          double worst = 0;
          size_t at = 0;
          for (size_t i = 0; i < w.size(); ++i) {
            const double e = std::fabs(gf[i] - gr[i]) / (1e-6 + 1e-4 * std::fabs(gr[i]));
            if (e > worst) worst = e, at = i;
          }
          INFO("worst element " << at << ": fast " << gf[at] << " reference " << gr[at]);
          CHECK(worst <= 1.0);
        }
        // Evaluation: no dropout, sums, chunks of max_batch when the batch is larger.
        EvalResult ef = m.evaluate(w, b, *ws), er;
        reference_pass<float>(m.net(), w.data(), b.x.data(), b.label.data(), n, nullptr, false, 0,
                              &er);
        CHECK(ef.count == n);
        CHECK(ef.correct == er.correct);
        CHECK(ef.loss_sum == doctest::Approx(er.loss_sum).epsilon(1e-5));
      }
      const Batch big = random_image_batch(2 * max_batch + 3, in, m.net().classes, 7);
      EvalResult ef = m.evaluate(w, big, *ws), er;
      reference_pass<float>(m.net(), w.data(), big.x.data(), big.label.data(), big.n, nullptr,
                            false, 0, &er);
      CHECK(ef.count == big.n);
      CHECK(ef.correct == er.correct);
      CHECK(ef.loss_sum == doctest::Approx(er.loss_sum).epsilon(1e-5));
    }
  }

  TEST_CASE("layers: fast max-pool breaks ties like PyTorch (first maximum, row-major)") {
    // Constant images make every conv output window a tie; the gradient must go to the
    // first element of each window, as the reference (and PyTorch) does.
    for (const NetSpec& spec : {lenet5_spec(), lenet5_classic_spec()}) {
      ConvNetModel m(spec);
      std::vector<float> w(m.num_params());
      m.init_params(w, 1);
      Batch b = random_image_batch(4, 784, 10, 5);
      for (int i = 0; i < b.n; ++i)
        for (int p = 0; p < 784; ++p) {
          const int y = p / 28, x = p % 28;
          // background constant, a bright square in the middle of two images
          b.x[i * 784 + p] = (i % 2 == 0 && y > 8 && y < 20 && x > 6 && x < 21) ? 2.0f : -0.42f;
        }
      auto ws = m.make_workspace(4);
      std::vector<float> gf(w.size()), gr(w.size());
      m.loss_grad(w, b, gf, *ws, 8);
      m.reference_loss_grad(w, b, gr, 8);
      for (size_t i = 0; i < w.size(); ++i)
        REQUIRE(std::fabs(gf[i] - gr[i]) <= 1e-6 + 1e-4 * std::fabs(gr[i]));
    }
  }

  TEST_CASE("layers: fast max-pool picks the first of tied maxima with different inputs") {
    // conv 2->1 k1 with weights (1, 1): output = x0 + x1, so windows can tie on the output
    // while the tied positions have different inputs, and the conv weight gradient shows
    // which one received the gradient. Windows (row-major a0 a1 / a2 a3), value (x0, x1):
    //   all four tie | a1 and a2 tie | a2 and a3 tie | a0 and a3 tie
    NetSpec s;
    s.name = "ties";
    s.c = 2, s.h = 4, s.w = 4;
    s.layers = {conv("conv", 1, 1), max_pool2(), linear("fc", 2)};
    ConvNetModel m(s);
    std::vector<float> w(m.num_params());
    m.init_params(w, 3);
    w[0] = 1.0f, w[1] = 1.0f, w[2] = 0.0f;  // conv.weight, conv.bias
    const float win[4][4][2] = {{{1, 0}, {0, 1}, {.5f, .5f}, {.25f, .75f}},
                                {{0, 0}, {1, 0}, {0, 1}, {.2f, .3f}},
                                {{0, 0}, {.1f, .2f}, {1, 0}, {0, 1}},
                                {{1, 0}, {.4f, .4f}, {.3f, .6f}, {0, 1}}};
    Batch b;
    b.n = 1;
    b.x.assign(32, 0.0f);
    b.label = {1};
    for (int q = 0; q < 4; ++q)
      for (int e = 0; e < 4; ++e) {
        const int y = 2 * (q / 2) + e / 2, x = 2 * (q % 2) + e % 2;
        for (int c = 0; c < 2; ++c) b.x[c * 16 + y * 4 + x] = win[q][e][c];
      }
    auto ws = m.make_workspace(1);
    std::vector<float> gf(w.size()), gr(w.size());
    m.loss_grad(w, b, gf, *ws, 0);
    m.reference_loss_grad(w, b, gr, 0);
    CHECK(std::fabs(gr[0] - gr[1]) > 1e-3);  // the tie choice is visible in the gradient
    for (size_t i = 0; i < w.size(); ++i) CHECK(gf[i] == doctest::Approx(gr[i]).epsilon(1e-5));
  }

  TEST_CASE("layers: fast max-pool ties on small-integer data, pooled rows of a quarter vector") {
    // Integer images and weights in {-1, 0, 1} make the conv outputs exact small integers:
    // windows tie in every pattern, and a tie sent to another position changes the conv
    // weight gradient by a whole product. The second conv has 8-wide rows (lenet5's conv2
    // shape: with AVX-512 its pooling takes four pooled rows a vector), with dropout2d and
    // ReLU after the pooling as lenet5 has.
    NetSpec s;
    s.name = "int_ties";
    s.c = 1, s.h = 12, s.w = 12;
    s.layers = {conv("c1", 3, 1), relu(),   conv("c2", 4, 5), max_pool2(),
                dropout2d(0.5),   relu(),   linear("fc", 3)};
    ConvNetModel m(s);
    std::vector<float> w(m.num_params());
    core::Rng r(21);
    auto tri = [&] { return static_cast<float>(static_cast<int>(r.uniform(0, 3)) - 1); };
    for (int seed = 0; seed < 4; ++seed) {
      for (auto& x : w) x = tri();
      Batch b = random_image_batch(5, 144, 3, 9 + seed);
      for (auto& x : b.x) x = tri();
      auto ws = m.make_workspace(5);
      std::vector<float> gf(w.size()), gr(w.size());
      const double lf = m.loss_grad(w, b, gf, *ws, seed);
      const double lr = m.reference_loss_grad(w, b, gr, seed);
      CHECK(lf == doctest::Approx(lr).epsilon(1e-5));
      for (size_t i = 0; i < w.size(); ++i) {
        INFO("seed " << seed << " parameter " << i);
        REQUIRE(std::fabs(gf[i] - gr[i]) <= 1e-5 + 1e-5 * std::fabs(gr[i]));
      }
    }
  }

  TEST_CASE("layers: a batch larger than the workspace is an internal error, not a crash") {
    ConvNetModel m(lenet5_spec());
    std::vector<float> w(m.num_params()), g(w.size());
    m.init_params(w, 1);
    auto ws = m.make_workspace(8);
    const Batch b = random_image_batch(9, 784, 10, 1);
    CHECK_THROWS_AS(m.loss_grad(w, b, g, *ws, 0), InternalError);
    auto other = ConvNetModel(tiny_every_layer_spec()).make_workspace(8);
    const Batch ok = random_image_batch(8, 784, 10, 1);
    CHECK_THROWS_AS(m.loss_grad(w, ok, g, *other, 0), InternalError);  // wrong model's workspace
  }

}  // TEST_SUITE("layers")
