// What the benches compare their kernels with, measured in the same run on the same core:
//   fma_chains()       the core's single-precision FMA peak: 16 (AVX-512) or 12 (AVX2)
//                      independent chains of vector FMAs (enough to cover the FMA latency
//                      times the number of FMA pipes on current x86 cores, few enough to
//                      stay in registers), compiled with the benches' flags, so a
//                      -march=native build measures the widest FMA it can use;
//   run_peer()         a peer script's one-line output (PyTorch on /usr/bin/python3), for
//                      ratios printed beside our own rates.
// Both are plain measurements: nothing is hard-coded, and a missing peer is reported as
// such (ratio 0), never replaced by a constant.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <string>

#if defined(__AVX512F__) || defined(__FMA__)
#include <immintrin.h>
#endif

namespace wb::bench {

// Runs `iters` rounds of kChains independent FMA chains on one thread and returns the FLOP
// executed (2 per lane per FMA). A bench times it as an Op beside its kernels, so that the
// peak and the kernels take turns in the same repetitions (load from other processes hits
// them alike) and fraction = kernel FLOP/s / this op's FLOP/s.
inline double fma_chains(long iters) {
#if defined(__AVX512F__)
  using V = __m512;
  constexpr int kLanes = 16;
  auto fma = [](V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); };
  auto set = [](float x) { return _mm512_set1_ps(x); };
  // Stored and added, not _mm512_reduce_add_ps: GCC 12 warns that reduce's inner
  // _mm512_extractf64x4_pd reads an uninitialized register (-Wmaybe-uninitialized).
  auto sum = [](V v) {
    float t[16];
    _mm512_storeu_ps(t, v);
    float s = 0;
    for (float x : t) s += x;
    return s;
  };
#elif defined(__FMA__)
  using V = __m256;
  constexpr int kLanes = 8;
  auto fma = [](V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); };
  auto set = [](float x) { return _mm256_set1_ps(x); };
  auto sum = [](V v) {
    float t[8];
    _mm256_storeu_ps(t, v);
    return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
  };
#else
  using V = float __attribute__((vector_size(16)));
  constexpr int kLanes = 4;
  auto fma = [](V a, V b, V c) { return a * b + c; };
  auto set = [](float x) { return V{x, x, x, x}; };
  auto sum = [](V v) { return v[0] + v[1] + v[2] + v[3]; };
#endif
  // The chains must stay in registers beside the two operands: 16 with AVX-512's 32
  // vector registers, 12 with AVX2/SSE's 16 (16 chains there spill 3 accumulators to the
  // stack, and their store-to-load round trips set the pace: 55 instead of 97 GFLOP/s
  // per CPU-second on a Zen 3 EPYC, so every fraction of that peak read 1.8x too high).
  // 12 chains still cover the FMA latency (4 cycles) x 2 FMA pipes of current x86 cores.
#if defined(__AVX512F__)
  constexpr int kChains = 16;
#else
  constexpr int kChains = 12;
#endif
  static volatile float sink = 0.999f;  // unknown to the compiler: nothing folds
  const V m = set(sink), a = set(1e-7f);
  V acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = set(static_cast<float>(c));
  for (long i = 0; i < iters; ++i)
    for (int c = 0; c < kChains; ++c) acc[c] = fma(acc[c], m, a);
  float s = 0;
  for (int c = 0; c < kChains; ++c) s += sum(acc[c]);
  sink = s;  // keep the result alive
  return 2.0 * kLanes * kChains * static_cast<double>(iters);
}

// Runs `cmd` and returns the number after `key` (e.g. "samples/s=") in its output, or 0
// when the command fails or prints no such number; the whole output is echoed, so the
// peer's own line (version, batch, threads) is in the log beside ours.
inline double run_peer(const std::string& cmd, const std::string& key) {
  FILE* f = popen((cmd + " 2>&1").c_str(), "r");
  if (!f) return 0;
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, f)) out += buf;
  const int rc = pclose(f);
  std::printf("peer: %s\n%s", cmd.c_str(), out.c_str());
  if (rc != 0) return 0;
  const size_t at = out.rfind(key);
  if (at == std::string::npos) return 0;
  return std::strtod(out.c_str() + at + key.size(), nullptr);
}

// Whether /usr/bin/python3 can import torch (the PyTorch peers' interpreter).
inline bool have_torch() {
  return std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0;
}

// A file next to this source tree: `rel` relative to the repository root, found from the
// working directory first, then from this header's own path (__FILE__ is absolute under
// CMake).
inline std::string repo_path(const std::string& rel) {
  auto exists = [](const std::string& p) {
    if (FILE* f = std::fopen(p.c_str(), "r")) {
      std::fclose(f);
      return true;
    }
    return false;
  };
  if (exists(rel)) return rel;
  std::string here = __FILE__;
  const size_t slash = here.rfind("/bench/");
  if (slash != std::string::npos) {
    const std::string p = here.substr(0, slash + 1) + rel;
    if (exists(p)) return p;
  }
  return "";
}

}  // namespace wb::bench
