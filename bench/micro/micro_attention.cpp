// micro_attention: the GPT's attention and MLP kernels at nanoGPT's shakespeare-char CPU shape
// (models/gpt.h defaults: d_model 128, 4 heads of 32, block 64; batch 12), on Google Benchmark.
//
// The attention itself is a loop inside GptFast::pass (models/transformer_fast.cpp), made of
// the pieces timed here, each over all 12 x 4 (sequence, head) pairs in the model's layout
// (qkv rows of 3 x 128 floats, head h at column h*32, probabilities P in rows padded to whole
// vectors):
//   gemm_bcast/attn_scores   S = Q K^T        (K^T packed, as the pass packs it per head)
//   gemm_bcast/attn_values   Y = P V          (V read in place through the qkv stride)
//   gemm_bcast/attn_dq       dQ = dS K        (the backward's dP = dY V^T is the scores' shape)
//   gemm_bcast/attn_dk       dK = dS^T Q      (dS read transposed; dV = P^T dY the same shape)
//   softmax_exp              tfast::exp_inplace over each causal row's t + 1 entries
//   gelu_forward / _backward tfast::gelu_* over the MLP's 768 x 512 hidden units
// References: the products in double; std::exp; tref::gelu_forward / gelu_backward in double.
// Counters: flops (FLOP/s; the GEMMs count the causal zeros of P they multiply), and
// items_per_second (elements) for the element-wise kernels. Every benchmark checks its output
// against the reference once before timing (bench/micro/micro_check.h).
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "bench/micro/micro_check.h"
#include "models/layers_fast.h"
#include "models/transformer_fast.h"
#include "models/transformer_layers.h"

namespace {

using wb::micro::check_or_skip;
using wb::micro::fill_uniform;
using wb::micro::mismatch;
using wb::micro::set_flops;
namespace fast = wb::models::fast;
namespace tfast = wb::models::tfast;
namespace tref = wb::models::tref;

constexpr int kBatch = 12, kT = 64, kC = 128, kH = 4, kHd = kC / kH, kR = kBatch * kT;
const int kTp = static_cast<int>(fast::round_up(kT));

enum class Prod { kScores, kValues, kDq, kDk };

// One product of every (sequence, head): C (M x N) = A (M x K, strides a_rs, a_cs) B (rows ldb).
struct Head {
  int M, N, K;
  long a_rs, a_cs, ldb, ldc;
  const float* a;
  const float* b;
  float* c;
};

void bm_attention_gemm(benchmark::State& state, Prod prod) {
  fast::Buffer qkv(static_cast<size_t>(kR) * 3 * kC), P(static_cast<size_t>(kBatch) * kH * kT * kTp),
      kt(static_cast<size_t>(kBatch) * kH * kHd * kTp), out(static_cast<size_t>(kR) * 3 * kC + P.size());
  fill_uniform(qkv, 31), fill_uniform(P, 32);
  for (int s = 0; s < kBatch; ++s)  // K^T of every head, rows padded to whole vectors (zeros)
    for (int h = 0; h < kH; ++h)
      for (int u = 0; u < kT; ++u)
        for (int i = 0; i < kHd; ++i)
          kt.data()[(static_cast<size_t>(s) * kH + h) * kHd * kTp + static_cast<size_t>(i) * kTp + u] =
              qkv.data()[(static_cast<size_t>(s) * kT + u) * 3 * kC + kC + h * kHd + i];
  auto head = [&](int s, int h) -> Head {
    const long base = static_cast<long>(s) * kT * 3 * kC + h * kHd;  // Q of (s, h) in qkv
    const long ph = (static_cast<long>(s) * kH + h) * kT * kTp;      // P (or dS) of (s, h)
    switch (prod) {
      case Prod::kScores:
        return {kT, kTp, kHd, 3 * kC, 1, kTp, kTp, qkv.data() + base,
                kt.data() + (static_cast<long>(s) * kH + h) * kHd * kTp, out.data() + ph};
      case Prod::kValues:
        return {kT, kHd, kT, kTp, 1, 3 * kC, kC, P.data() + ph, qkv.data() + base + 2 * kC,
                out.data() + static_cast<long>(s) * kT * kC + h * kHd};
      case Prod::kDq:
        return {kT, kHd, kT, kTp, 1, 3 * kC, 3 * kC, P.data() + ph, qkv.data() + base + kC, out.data() + base};
      case Prod::kDk:
        return {kT, kHd, kT, 1, kTp, 3 * kC, 3 * kC, P.data() + ph, qkv.data() + base, out.data() + base + kC};
    }
    return {};
  };
  auto run = [&] {
    for (int s = 0; s < kBatch; ++s)
      for (int h = 0; h < kH; ++h) {
        const Head x = head(s, h);
        fast::gemm_bcast(x.M, x.N, x.K, x.a, x.a_rs, x.a_cs, x.b, nullptr, x.ldb, x.c, x.ldc, nullptr, false);
      }
  };
  run();
  std::vector<double> ref(out.size(), 0.0);
  for (int s = 0; s < kBatch; ++s)
    for (int h = 0; h < kH; ++h) {
      const Head x = head(s, h);
      double* rc = ref.data() + (x.c - out.data());
      for (int m = 0; m < x.M; ++m)
        for (int n = 0; n < x.N; ++n) {
          double acc = 0;
          for (int k = 0; k < x.K; ++k)
            acc += static_cast<double>(x.a[m * x.a_rs + k * x.a_cs]) * x.b[k * x.ldb + n];
          rc[m * x.ldc + n] = acc;
        }
    }
  if (!check_or_skip(state, mismatch(out.data(), ref.data(), ref.size()))) return;
  for (auto _ : state) {
    run();
    benchmark::ClobberMemory();
  }
  const Head x = head(0, 0);
  set_flops(state, 2.0 * kBatch * kH * x.M * x.N * x.K);
}

// The causal softmax's exponentials: row t of every (sequence, head) has t + 1 entries,
// already shifted by the row maximum and scaled (values <= 0).
void bm_softmax_exp(benchmark::State& state) {
  const size_t rows = static_cast<size_t>(kBatch) * kH * kT;
  std::vector<float> src(rows * kTp);
  fill_uniform(src, 33);
  for (float& v : src) v = 4.0f * v - 4.0f;  // [-8, 0]
  std::vector<float> x = src;
  auto run = [&] {
    for (size_t r = 0; r < rows; ++r) tfast::exp_inplace(x.data() + r * kTp, r % kT + 1);
  };
  run();
  std::vector<double> ref(src.begin(), src.end());
  for (size_t r = 0; r < rows; ++r)
    for (size_t u = 0; u <= r % kT; ++u) ref[r * kTp + u] = std::exp(ref[r * kTp + u]);
  if (!check_or_skip(state, mismatch(x.data(), ref.data(), ref.size(), 1e-6, 0.0))) return;
  for (auto _ : state) {
    state.PauseTiming();  // in place: every iteration starts from the same scores
    std::memcpy(x.data(), src.data(), sizeof(float) * src.size());
    state.ResumeTiming();
    run();
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kBatch * kH * kT * (kT + 1) / 2);
}

void bm_gelu(benchmark::State& state, bool backward) {
  const size_t count = static_cast<size_t>(kR) * 4 * kC;
  fast::Buffer x(count), dy(count), y(count);
  fill_uniform(x, 34), fill_uniform(dy, 35);
  for (size_t i = 0; i < count; ++i) x.data()[i] *= 4.0f;  // pre-activations in [-4, 4]
  auto run = [&] {
    if (backward)
      tfast::gelu_backward(count, x.data(), dy.data(), y.data());
    else
      tfast::gelu_forward(count, x.data(), y.data());
  };
  run();
  const std::vector<double> xd(x.data(), x.data() + count), dyd(dy.data(), dy.data() + count);
  std::vector<double> ref(count);
  if (backward)
    tref::gelu_backward<double>(count, xd.data(), dyd.data(), ref.data());
  else
    tref::gelu_forward<double>(count, xd.data(), ref.data());
  // Absolute bounds of the unit test (tests/unit/test_gpt.cpp): ~1e-6 of the scale for GELU,
  // 1e-5 for its derivative (float 1 - t^2 cancels near |t| = 1).
  if (!check_or_skip(state, mismatch(y.data(), ref.data(), count, 1e-6, backward ? 1e-5 : 1e-6))) return;
  for (auto _ : state) {
    run();
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(count));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(count) *
                          (backward ? 3 : 2) * static_cast<int64_t>(sizeof(float)));
}

[[maybe_unused]] const bool registered = [] {
  const std::string heads = "/heads:" + std::to_string(kBatch * kH);
  benchmark::RegisterBenchmark(("gemm_bcast/attn_scores" + heads).c_str(), bm_attention_gemm, Prod::kScores);
  benchmark::RegisterBenchmark(("gemm_bcast/attn_values" + heads).c_str(), bm_attention_gemm, Prod::kValues);
  benchmark::RegisterBenchmark(("gemm_bcast/attn_dq" + heads).c_str(), bm_attention_gemm, Prod::kDq);
  benchmark::RegisterBenchmark(("gemm_bcast/attn_dk" + heads).c_str(), bm_attention_gemm, Prod::kDk);
  benchmark::RegisterBenchmark(("softmax_exp/causal_rows" + heads).c_str(), bm_softmax_exp);
  benchmark::RegisterBenchmark("gelu_forward/mlp_768x512", bm_gelu, false);
  benchmark::RegisterBenchmark("gelu_backward/mlp_768x512", bm_gelu, true);
  return true;
}();

}  // namespace
