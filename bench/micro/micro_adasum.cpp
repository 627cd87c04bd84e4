// micro_adasum: Adasum's vector kernels (comm/kernels.h) on Google Benchmark, over one
// gradient of each model (the parameter counts of LeNet-5, ResNet-8 on 1-channel 32x32
// images, and the GPT at its defaults, read from the models), fp32 and fp64:
//   dot3          [a.b, a.a, b.b] in double (Maleki et al., arXiv:2006.02924 4.4.1)
//   combine       out = T(ca a + cb b)
//   combine_dot3  the in-rank tree's fused pass: both children materialized in place and the
//                 node's three dot products taken from the rounded values in the same sweep
// References: dot3_scalar, combine_scalar (beside the kernels), and for combine_dot3 the two
// combine_scalar passes followed by dot3_scalar. Counters: bytes_per_second (bytes the kernel
// must read and write) and items_per_second (elements). Every benchmark checks its output
// against the reference once before timing (bench/micro/micro_check.h).
#include <string>
#include <vector>

#include "bench/micro/micro_check.h"
#include "comm/kernels.h"
#include "models/gpt.h"
#include "models/lenet.h"
#include "models/resnet.h"

namespace {

using wb::micro::check_or_skip;
using wb::micro::fill_uniform;
using wb::micro::mismatch;
namespace kern = wb::comm::kern;

// The Adasum coefficients of two vectors of similar norm and cosine ~0 (arXiv:2006.02924
// eq. 3: 1 - a.b / (2 |a|^2) ~ 1): the values stay in range over repeated in-place passes.
constexpr double kCa = 0.5, kCb = 0.5;

void set_rates(benchmark::State& state, size_t n, size_t bytes_per_element) {
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(n));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(n * bytes_per_element));
}

template <class T>
void bm_dot3(benchmark::State& state, size_t n) {
  std::vector<T> a(n), b(n);
  fill_uniform(a, 41), fill_uniform(b, 42);
  double v[3] = {0, 0, 0}, r[3] = {0, 0, 0};
  kern::dot3(a.data(), b.data(), n, v);
  kern::dot3_scalar(a.data(), b.data(), n, r);
  // Both sum exact double products; only the order differs.
  if (!check_or_skip(state, mismatch(v, r, 3, 1e-12, 1e-13))) return;
  for (auto _ : state) {
    double w[3] = {0, 0, 0};
    kern::dot3(a.data(), b.data(), n, w);
    benchmark::DoNotOptimize(w);
  }
  set_rates(state, n, 2 * sizeof(T));
}

template <class T>
void bm_combine(benchmark::State& state, size_t n) {
  std::vector<T> a(n), b(n), out(n), ref(n);
  fill_uniform(a, 43), fill_uniform(b, 44);
  kern::combine(out.data(), a.data(), b.data(), n, kCa, kCb);
  kern::combine_scalar(ref.data(), a.data(), b.data(), n, kCa, kCb);
  // One fixed evaluation (kern::axpby) rounded once: the same bits.
  if (!check_or_skip(state, mismatch(out.data(), ref.data(), n, 0.0, 0.0))) return;
  for (auto _ : state) {
    kern::combine(out.data(), a.data(), b.data(), n, kCa, kCb);
    benchmark::ClobberMemory();
  }
  set_rates(state, n, 3 * sizeof(T));
}

template <class T>
void bm_combine_dot3(benchmark::State& state, size_t n) {
  std::vector<T> ax(n), ay(n), bx(n), by(n);
  fill_uniform(ax, 45), fill_uniform(ay, 46), fill_uniform(bx, 47), fill_uniform(by, 48);
  std::vector<T> rax = ax, rbx = bx;
  double v[3] = {0, 0, 0}, r[3] = {0, 0, 0};
  kern::combine_dot3<T, true, true>({ax.data(), ay.data(), kCa, kCb}, {bx.data(), by.data(), kCa, kCb}, n, v);
  kern::combine_scalar(rax.data(), rax.data(), ay.data(), n, kCa, kCb);
  kern::combine_scalar(rbx.data(), rbx.data(), by.data(), n, kCa, kCb);
  kern::dot3_scalar(rax.data(), rbx.data(), n, r);
  std::string why = mismatch(ax.data(), rax.data(), n, 0.0, 0.0);
  if (why.empty()) why = mismatch(bx.data(), rbx.data(), n, 0.0, 0.0);
  if (why.empty()) why = mismatch(v, r, 3, 1e-12, 1e-13);
  if (!check_or_skip(state, why)) return;
  for (auto _ : state) {
    double w[3] = {0, 0, 0};
    kern::combine_dot3<T, true, true>({ax.data(), ay.data(), kCa, kCb}, {bx.data(), by.data(), kCa, kCb}, n, w);
    benchmark::DoNotOptimize(w);
  }
  set_rates(state, n, 6 * sizeof(T));  // reads A.x, A.y, B.x, B.y; writes A.x, B.x
}

[[maybe_unused]] const bool registered = [] {
  namespace m = wb::models;
  m::ResnetConfig rc;
  rc.depth = 8, rc.c = 1;  // Fashion-MNIST padded to 32x32
  const struct {
    const char* name;
    size_t n;
  } sizes[] = {{"lenet5", m::analyze(m::lenet5_spec()).num_params},
               {"resnet8", m::ResnetModel(rc).num_params()},
               {"gpt", m::layout_size(m::gpt_layout(m::GptConfig{}))}};
  for (const auto& s : sizes) {
    const std::string at = std::string("/") + s.name + "/n:" + std::to_string(s.n);
    benchmark::RegisterBenchmark(("dot3<float>" + at).c_str(), bm_dot3<float>, s.n);
    benchmark::RegisterBenchmark(("dot3<double>" + at).c_str(), bm_dot3<double>, s.n);
    benchmark::RegisterBenchmark(("combine<float>" + at).c_str(), bm_combine<float>, s.n);
    benchmark::RegisterBenchmark(("combine<double>" + at).c_str(), bm_combine<double>, s.n);
    benchmark::RegisterBenchmark(("combine_dot3<float>" + at).c_str(), bm_combine_dot3<float>, s.n);
    benchmark::RegisterBenchmark(("combine_dot3<double>" + at).c_str(), bm_combine_dot3<double>, s.n);
  }
  return true;
}();

}  // namespace
