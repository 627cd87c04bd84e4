// What every kernel micro-benchmark (bench/micro/micro_*.cpp, Google Benchmark) shares:
// random inputs, the one-time check against the CPU reference, and the FLOP counter.
//
// The rule (nccl-tests' "correctness on every run", DESIGN.md section 10): a benchmark runs
// its kernel once on its inputs BEFORE the timed loop and compares the result with the plain
// reference beside the kernel; on a mismatch it calls state.SkipWithError and times nothing,
// so a wrong kernel reports an error instead of a rate.
#pragma once

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "core/rng.h"

namespace wb::micro {

// Uniform(-1, 1) values from a fixed seed: every run of a commit times the same data.
template <class T>
inline void fill_uniform(T* x, size_t n, uint64_t seed) {
  core::Rng r(seed);
  for (size_t i = 0; i < n; ++i) x[i] = static_cast<T>(r.uniform(-1, 1));
}
template <class V>
inline void fill_uniform(V& v, uint64_t seed) {
  fill_uniform(v.data(), v.size(), seed);
}

// got[i] against ref[i] (the reference computed in double): |got - ref| <= atol + rtol |ref|,
// with atol scaled by the largest |ref| (a float accumulation over K terms of magnitude ~1
// errs by ~K * 6e-8 of the sum's scale; a missed or doubled term errs by ~1). Returns ""
// when every value passes, else the first offender, for SkipWithError.
template <class G, class R>
inline std::string mismatch(const G* got, const R* ref, size_t n, double rtol = 1e-4,
                            double atol_rel = 1e-5) {
  double scale = 0;
  for (size_t i = 0; i < n; ++i) scale = std::max(scale, std::fabs(static_cast<double>(ref[i])));
  const double atol = atol_rel * std::max(scale, 1.0);
  for (size_t i = 0; i < n; ++i) {
    const double g = static_cast<double>(got[i]), r = static_cast<double>(ref[i]);
    if (!(std::fabs(g - r) <= atol + rtol * std::fabs(r))) {  // NaN fails too
      char buf[160];
      std::snprintf(buf, sizeof buf, "wrong result: element %zu of %zu is %.9g, reference %.9g", i,
                    n, g, r);
      return buf;
    }
  }
  return "";
}

// Skips the benchmark (an error in the output, no timing) when `why` is not empty.
inline bool check_or_skip(benchmark::State& state, const std::string& why) {
  if (why.empty()) return true;
  state.SkipWithError(why.c_str());
  return false;
}

// FLOP per iteration -> the "flops" counter in FLOP per second of CPU time (the JSON's
// "flops" field; 1e9 of it is a GFLOP/s). A multiply-add counts as 2.
inline void set_flops(benchmark::State& state, double flop_per_iteration) {
  state.counters["flops"] =
      benchmark::Counter(flop_per_iteration, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace wb::micro
