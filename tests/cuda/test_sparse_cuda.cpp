// sparse_mlp's CSR x dense products on the GPU (cuda/sparse_cuda.h) against
//  - the loops of SparseMlp::pass (models/sparse_mlp.cpp, the j == 0 branches), copied here
//    as the plain oracle, on random CSR batches with empty rows and features shared by many
//    rows (the transpose product's atomics collide there);
//  - SparseMlp::loss_grad_f64 itself: with no hidden layer the model is softmax regression,
//    logits = X W + b, so the GPU products plus the documented loss gradient
//    dz = (softmax - t) / m give the model's gradient;
//  - the "cuda" device's whole sparse MLP (cuda/sparse_model_cuda.h) against the CPU model.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "cuda/sparse_cuda.h"
#include "cuda/sparse_model_cuda.h"
#include "models/model.h"
#include "models/sparse_mlp.h"
#include "tests/cuda/cuda_test_util.h"

using namespace wb;
using namespace wb::cuda::test;

namespace {

// n rows over F features: 0..max_nnz distinct features per row (row 1 empty), skewed to
// the low feature ids; labels 0..3 per row out of L (row 2 unlabelled).
models::Batch random_csr(int n, int F, int L, int max_nnz, uint64_t seed) {
  core::Rng r(seed);
  models::Batch b;
  b.n = n;
  b.x_ptr = {0};
  b.y_ptr = {0};
  for (int i = 0; i < n; ++i) {
    const int nnz = i == 1 ? 0 : static_cast<int>(r.below(max_nnz + 1));
    std::vector<bool> used(F, false);
    for (int k = 0; k < nnz; ++k) {
      int f = static_cast<int>(r.below(F) * r.below(F) / F);  // skewed: collisions
      if (used[f]) continue;
      used[f] = true;
      b.x_idx.push_back(f);
      b.x_val.push_back(static_cast<float>(r.uniform(0.1, 2.0)));
    }
    b.x_ptr.push_back(static_cast<int64_t>(b.x_idx.size()));
    const int labels = i == 2 ? 0 : 1 + static_cast<int>(r.below(3));
    std::vector<bool> lused(L, false);
    for (int k = 0; k < labels; ++k) {
      const int l = static_cast<int>(r.below(L));
      if (lused[l]) continue;
      lused[l] = true;
      b.y_idx.push_back(l);
    }
    b.y_ptr.push_back(static_cast<int64_t>(b.y_idx.size()));
  }
  return b;
}

template <class T>
void check_products(int n, int F, int dout) {
  CAPTURE(n);
  CAPTURE(F);
  CAPTURE(dout);
  const models::Batch b = random_csr(n, F, 5, 9, 77 + n);
  auto W = randn<T>(static_cast<size_t>(F) * dout, 1), bias = randn<T>(dout, 2);
  auto dz = randn<T>(static_cast<size_t>(n) * dout, 3);
  // The oracle: SparseMlp::pass's loops.
  std::vector<T> out(static_cast<size_t>(n) * dout), dW(W.size(), T(0)), db(dout, T(0));
  for (int i = 0; i < n; ++i) {
    T* o = out.data() + static_cast<size_t>(i) * dout;
    std::copy(bias.begin(), bias.end(), o);
    for (int64_t p = b.x_ptr[i]; p < b.x_ptr[i + 1]; ++p)
      for (int q = 0; q < dout; ++q)
        o[q] += static_cast<T>(b.x_val[p]) * W[static_cast<size_t>(b.x_idx[p]) * dout + q];
  }
  for (int i = 0; i < n; ++i) {
    const T* d = dz.data() + static_cast<size_t>(i) * dout;
    for (int q = 0; q < dout; ++q) db[q] += d[q];
    for (int64_t p = b.x_ptr[i]; p < b.x_ptr[i + 1]; ++p)
      for (int q = 0; q < dout; ++q)
        dW[static_cast<size_t>(b.x_idx[p]) * dout + q] += static_cast<T>(b.x_val[p]) * d[q];
  }
  auto gptr = to_device(b.x_ptr);
  auto gidx = to_device(b.x_idx);
  auto gval = to_device(b.x_val);
  auto gW = to_device(W), gbias = to_device(bias), gdz = to_device(dz);
  cuda::DeviceBuffer<T> gout(out.size()), gdW(dW.size()), gdb(db.size());
  cuda::csr_dense_forward<T>(n, dout, gptr.data(), gidx.data(), gval.data(), gW.data(),
                             gbias.data(), gout.data());
  cuda::csr_dense_backward<T>(n, F, dout, gptr.data(), gidx.data(), gval.data(), gdz.data(),
                              gdW.data(), gdb.data());
  device_sync();
  const double atol = sizeof(T) == 4 ? 1e-4 : 1e-12, rtol = sizeof(T) == 4 ? 1e-4 : 1e-12;
  check_close(gout.to_host(), out, atol, rtol, "csr_dense_forward");
  check_close(gdW.to_host(), dW, atol, rtol, "csr_dense_backward dW");
  check_close(gdb.to_host(), db, atol, rtol, "csr_dense_backward db");
}

}  // namespace

TEST_CASE_TEMPLATE("cuda csr x dense and its transpose vs the sparse_mlp loops", T, float, double) {
  check_products<T>(1, 3, 1);
  check_products<T>(37, 101, 19);
  check_products<T>(300, 1836, 128);  // Bibtex-sized input layer, hidden 128
}

TEST_CASE("cuda softmax regression gradient vs SparseMlp::loss_grad_f64") {
  const int n = 23, F = 57, L = 11;
  const models::Batch b = random_csr(n, F, L, 8, 5);
  models::SparseMlp model(F, {}, L, 4.0);
  REQUIRE(model.num_params() == static_cast<size_t>(F * L + L));
  std::vector<float> wf(model.num_params());
  model.init_params(wf, 3);
  std::vector<double> w(wf.begin(), wf.end());
  for (int q = 0; q < L; ++q) w[static_cast<size_t>(F) * L + q] = 0.1 * q;  // non-zero bias
  std::vector<double> g(w.size());
  const double loss = model.loss_grad_f64(w, b, g, 0);

  auto gptr = to_device(b.x_ptr);
  auto gidx = to_device(b.x_idx);
  auto gval = to_device(b.x_val);
  auto gw = to_device(w);
  cuda::DeviceBuffer<double> logits(static_cast<size_t>(n) * L);
  cuda::csr_dense_forward<double>(n, L, gptr.data(), gidx.data(), gval.data(), gw.data(),
                                  gw.data() + static_cast<size_t>(F) * L, logits.data());
  device_sync();
  // The loss and dz = (softmax - t) / m on the host (models/sparse_mlp.h's formulas).
  const std::vector<double> z = logits.to_host();
  int m = 0;
  for (int i = 0; i < n; ++i) m += b.y_ptr[i + 1] > b.y_ptr[i];
  std::vector<double> dz(z.size(), 0.0);
  double loss_sum = 0;
  for (int i = 0; i < n; ++i) {
    const int64_t y0 = b.y_ptr[i], y1 = b.y_ptr[i + 1];
    if (y1 == y0) continue;
    const double* zi = z.data() + static_cast<size_t>(i) * L;
    double mx = zi[0], se = 0, zy = 0;
    for (int l = 1; l < L; ++l) mx = std::max(mx, zi[l]);
    for (int l = 0; l < L; ++l) se += std::exp(zi[l] - mx);
    const double lse = mx + std::log(se);
    for (int64_t p = y0; p < y1; ++p) zy += zi[b.y_idx[p]];
    loss_sum += lse - zy / static_cast<double>(y1 - y0);
    for (int l = 0; l < L; ++l) dz[static_cast<size_t>(i) * L + l] = std::exp(zi[l] - lse) / m;
    for (int64_t p = y0; p < y1; ++p)
      dz[static_cast<size_t>(i) * L + b.y_idx[p]] -= 1.0 / m / static_cast<double>(y1 - y0);
  }
  CHECK(loss_sum / m == doctest::Approx(loss).epsilon(1e-12));
  auto gdz = to_device(dz);
  cuda::DeviceBuffer<double> gg(w.size());
  cuda::csr_dense_backward<double>(n, F, L, gptr.data(), gidx.data(), gval.data(), gdz.data(),
                                   gg.data(), gg.data() + static_cast<size_t>(F) * L);
  device_sync();
  check_close(gg.to_host(), g, 1e-12, 1e-10, "softmax regression gradient");
}

// ---------------------------------------------------------------------------------------------
// The "cuda" device's sparse MLP (cuda/sparse_model_cuda.h, with cuda/mlp_cuda.h's dense
// layers, loss and atomic-free sparse weight gradient) against the CPU model: every kernel
// of a pass is exercised, with no hidden layer (softmax regression), one and two hidden
// layers, at awkward batch sizes (empty rows, unlabelled rows, features shared by many rows).
TEST_CASE("cuda sparse_mlp model: loss, gradient and evaluation match the CPU model") {
  struct Shape {
    int F, L;
    std::vector<int64_t> hidden;
    int k;
  };
  for (const Shape& sh : {Shape{37, 11, {}, 1}, Shape{53, 29, {13}, 3}, Shape{61, 300, {17, 9}, 5}}) {
    const models::SparseMlp cpu(sh.F, sh.hidden, sh.L, 5.0, sh.k);
    const cuda::CudaSparseMlp gpu(cpu);
    std::vector<float> w(cpu.num_params());
    gpu.init_params(w, 9);
    for (float& x : w) x += 0.01f;  // non-zero biases
    auto cws = cpu.make_workspace(64);
    auto gws = gpu.make_workspace(64);  // reused across batch sizes (the CSR buffers grow)
    for (int n : {1, 5, 37, 64}) {
      CAPTURE(sh.F);
      CAPTURE(sh.hidden.size());
      CAPTURE(n);
      const models::Batch b = random_csr(n, sh.F, sh.L, 9 + n % 7, 300 + static_cast<uint64_t>(n));
      std::vector<float> gc(w.size()), gg(w.size(), 7.f), gg2(w.size());
      const double lc = cpu.loss_grad(w, b, gc, *cws, 1);
      const double lg = gpu.loss_grad(w, b, gg, *gws, 1);
      CHECK(lg == doctest::Approx(lc).epsilon(1e-5));
      check_close(gg, gc, 1e-6, 1e-4, "sparse_mlp gradient");
      // No atomics: a second pass gives the same bits.
      CHECK(gpu.loss_grad(w, b, gg2, *gws, 1) == lg);
      check_equal(gg2, gg, "second pass");
      const auto ec = cpu.evaluate(w, b, *cws), eg = gpu.evaluate(w, b, *gws);
      CHECK(eg.count == ec.count);
      CHECK(eg.has_accuracy);
      CHECK(eg.loss_sum == doctest::Approx(ec.loss_sum).epsilon(1e-5));
      CHECK(std::fabs(eg.correct - ec.correct) <= 1.0);  // a near-tie may flip one row's top-k
    }
  }
}
