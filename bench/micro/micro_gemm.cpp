// micro_gemm: the fast GEMM tiles at the shapes the models run them, on Google Benchmark.
//
//   fast::gemm_bcast (models/layers_fast.h; register tile 6 rows x 4 vectors, A broadcast):
//     the GPT's linear layers (nanoGPT shakespeare-char CPU shape: batch 12 x block 64 = 768
//     rows, d_model 128), forward y = x W^T (W^T packed), data gradient dx = dy W and weight
//     gradient dW += dy^T x (A read transposed through its strides), as transformer_fast.cpp
//     calls them; reference: tref::linear_forward / linear_backward in double.
//   fast::gemm_dot (dot products along K, one horizontal sum per output): the image models'
//     linear forward over rows padded to whole vectors (LeNet-5 fc1/fc2, LeNet-5 classic
//     fc1/fc2, batch 32); reference: models::linear_forward in double.
//   fast::gemm_nn (models/resnet_fast.h; 8 x 32 block of C in registers): the ResNet's
//     im2col convolution GEMMs, Y[cout, ho*wo] = W[cout, cin*9] col[cin*9, ho*wo], of the
//     three stages (16/32/64 channels at 32x32/16x16/8x8); reference: the triple loop in double.
// Counters: flops (FLOP/s, a multiply-add = 2). Every benchmark checks its output against the
// reference once before timing (bench/micro/micro_check.h).
#include <cstring>
#include <string>
#include <vector>

#include "bench/micro/micro_check.h"
#include "models/layers.h"
#include "models/layers_fast.h"
#include "models/resnet_fast.h"
#include "models/transformer_layers.h"

namespace {

using wb::micro::check_or_skip;
using wb::micro::fill_uniform;
using wb::micro::mismatch;
using wb::micro::set_flops;
namespace fast = wb::models::fast;
namespace tref = wb::models::tref;

template <class V>
std::vector<double> widen(const V& v) {
  return std::vector<double>(v.data(), v.data() + v.size());
}

// ---- gemm_bcast: the GPT's linear layers (R rows, in -> out features) ----
enum class Pass { kFwd, kDgrad, kWgrad };

void bm_gpt_linear(benchmark::State& state, int R, int in, int out, Pass pass) {
  // 64-byte aligned buffers, as the model's workspace (fast::Buffer).
  fast::Buffer x(static_cast<size_t>(R) * in), W(static_cast<size_t>(out) * in),
      dy(static_cast<size_t>(R) * out);
  fill_uniform(x, 1), fill_uniform(W, 2), fill_uniform(dy, 3);
  fast::Buffer WT(W.size());  // [in][out], as transformer_fast.cpp packs it per step
  for (int o = 0; o < out; ++o)
    for (int i = 0; i < in; ++i) WT.data()[static_cast<size_t>(i) * out + o] = W.data()[static_cast<size_t>(o) * in + i];
  const auto xd = widen(x), Wd = widen(W), dyd = widen(dy);
  fast::Buffer y(static_cast<size_t>(R) * out), dx(x.size()), dW(W.size());
  std::vector<double> ref;
  auto run = [&] {
    switch (pass) {
      case Pass::kFwd:
        fast::gemm_bcast(R, out, in, x.data(), in, 1, WT.data(), nullptr, out, y.data(), out, nullptr, false);
        break;
      case Pass::kDgrad:
        fast::gemm_bcast(R, in, out, dy.data(), out, 1, W.data(), nullptr, in, dx.data(), in, nullptr, false);
        break;
      case Pass::kWgrad:
        fast::gemm_bcast(out, in, R, dy.data(), 1, out, x.data(), nullptr, in, dW.data(), in, nullptr, true);
        break;
    }
  };
  run();
  std::string why;
  if (pass == Pass::kFwd) {
    ref.resize(y.size());
    tref::linear_forward<double>(R, in, out, xd.data(), Wd.data(), nullptr, ref.data());
    why = mismatch(y.data(), ref.data(), y.size());
  } else {
    std::vector<double> rdx(x.size()), rdW(W.size(), 0.0);
    tref::linear_backward<double>(R, in, out, xd.data(), Wd.data(), dyd.data(), rdx.data(), rdW.data(),
                                  nullptr);
    why = pass == Pass::kDgrad ? mismatch(dx.data(), rdx.data(), dx.size())
                               : mismatch(dW.data(), rdW.data(), dW.size());
  }
  if (!check_or_skip(state, why)) return;
  for (auto _ : state) {
    run();
    benchmark::ClobberMemory();
  }
  set_flops(state, 2.0 * R * in * out);
}

// ---- gemm_dot: the image models' linear forward (n samples, in -> out) ----
void bm_image_linear(benchmark::State& state, int n, int in, int out) {
  const int in_p = static_cast<int>(fast::round_up(static_cast<size_t>(in)));
  std::vector<float> x(static_cast<size_t>(n) * in), W(static_cast<size_t>(out) * in);
  fill_uniform(x, 4), fill_uniform(W, 5);
  // Rows padded to whole vectors with zeros, as FastNet keeps activations and packs weights.
  fast::Buffer xp(static_cast<size_t>(n) * in_p), Wp(static_cast<size_t>(out) * in_p),
      y(static_cast<size_t>(n) * out);
  for (int s = 0; s < n; ++s) std::memcpy(xp.data() + static_cast<size_t>(s) * in_p, &x[static_cast<size_t>(s) * in], sizeof(float) * in);
  for (int o = 0; o < out; ++o) std::memcpy(Wp.data() + static_cast<size_t>(o) * in_p, &W[static_cast<size_t>(o) * in], sizeof(float) * in);
  auto run = [&] {
    fast::gemm_dot(n, out, 1, in_p, xp.data(), 0, in_p, Wp.data(), 0, nullptr, in_p, y.data(), out, false);
  };
  run();
  const auto xd = widen(x), Wd = widen(W);
  const std::vector<double> zero(static_cast<size_t>(out), 0.0);
  std::vector<double> ref(static_cast<size_t>(n) * out);
  wb::models::ref::linear_forward<double>(n, in, out, xd.data(), Wd.data(), zero.data(), ref.data());
  if (!check_or_skip(state, mismatch(y.data(), ref.data(), ref.size()))) return;
  for (auto _ : state) {
    run();
    benchmark::ClobberMemory();
  }
  set_flops(state, 2.0 * n * in * out);  // the padded K's zero products not counted
}

// ---- gemm_nn: the ResNet's im2col GEMM C[M x N] = A[M x K] B[K x N] ----
void bm_resnet_gemm(benchmark::State& state, int M, int N, int K) {
  std::vector<float> A(static_cast<size_t>(M) * K), B(static_cast<size_t>(K) * N), C(static_cast<size_t>(M) * N);
  fill_uniform(A, 6), fill_uniform(B, 7);
  auto run = [&] { fast::gemm_nn(M, N, K, A.data(), K, B.data(), N, C.data(), N, false); };
  run();
  std::vector<double> ref(C.size(), 0.0);
  for (int m = 0; m < M; ++m)
    for (int k = 0; k < K; ++k) {
      const double a = A[static_cast<size_t>(m) * K + k];
      for (int j = 0; j < N; ++j) ref[static_cast<size_t>(m) * N + j] += a * B[static_cast<size_t>(k) * N + j];
    }
  if (!check_or_skip(state, mismatch(C.data(), ref.data(), ref.size()))) return;
  for (auto _ : state) {
    run();
    benchmark::ClobberMemory();
  }
  set_flops(state, 2.0 * M * N * K);
}

std::string shape(int M, int N, int K) {
  return "/M" + std::to_string(M) + "_N" + std::to_string(N) + "_K" + std::to_string(K);
}

[[maybe_unused]] const bool registered = [] {
  // GPT (models/gpt.h defaults: d_model 128, block 64) at nanoGPT's CPU batch of 12 windows.
  constexpr int R = 12 * 64, C = 128;
  struct Lin {
    const char* name;
    int in, out;
  };
  for (const Lin& l : {Lin{"qkv", C, 3 * C}, Lin{"proj", C, C}, Lin{"fc", C, 4 * C}, Lin{"mlp", 4 * C, C}}) {
    benchmark::RegisterBenchmark(("gemm_bcast/gpt_" + std::string(l.name) + "_fwd" + shape(R, l.out, l.in)).c_str(),
                                 bm_gpt_linear, R, l.in, l.out, Pass::kFwd);
    benchmark::RegisterBenchmark(("gemm_bcast/gpt_" + std::string(l.name) + "_dgrad" + shape(R, l.in, l.out)).c_str(),
                                 bm_gpt_linear, R, l.in, l.out, Pass::kDgrad);
    benchmark::RegisterBenchmark(("gemm_bcast/gpt_" + std::string(l.name) + "_wgrad" + shape(l.out, l.in, R)).c_str(),
                                 bm_gpt_linear, R, l.in, l.out, Pass::kWgrad);
  }
  // LeNet-5 (models/lenet.cpp: fc1 320 -> 50, fc2 50 -> 10) and LeNet-5 classic (fc1 400 ->
  // 120, fc2 120 -> 84), batch 32.
  for (const Lin& l : {Lin{"lenet5_fc1", 320, 50}, Lin{"lenet5_fc2", 50, 10},
                       Lin{"classic_fc1", 400, 120}, Lin{"classic_fc2", 120, 84}})
    benchmark::RegisterBenchmark(("gemm_dot/" + std::string(l.name) + shape(32, l.out, l.in)).c_str(),
                                 bm_image_linear, 32, l.in, l.out);
  // ResNet (models/resnet.cpp: width 16, 3x3 convolutions; one sample's GEMM per stage).
  for (int s = 0; s < 3; ++s) {
    const int ch = 16 << s, side = 32 >> s;
    benchmark::RegisterBenchmark(("gemm_nn/resnet_stage" + std::to_string(s + 1) + shape(ch, side * side, ch * 9)).c_str(),
                                 bm_resnet_gemm, ch, side * side, ch * 9);
  }
  return true;
}();

}  // namespace
