// Inputs shared by the collective benchmarks (bench_collectives.cpp, bench_gpu.cu), so the
// CPU and GPU Adasum figures are measured on the same data.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "comm/reference.h"

namespace wb::bench {

// Deterministic input of worker w, element i: a cheap hash in [-1, 1] plus a shared
// component, so the Adasum coefficients are not trivial.
inline float adasum_input(int w, size_t i) {
  uint64_t x = (static_cast<uint64_t>(w) + 1) * 0x9E3779B97F4A7C15ull ^ (i * 0xBF58476D1CE4E5B9ull);
  x ^= x >> 31;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 29;
  const float r = static_cast<float>(x >> 40) / static_cast<float>(1ull << 24) * 2.0f - 1.0f;
  return 0.7f * r + 0.3f * static_cast<float>((i % 97) / 97.0);
}

// 64 tensors of uneven sizes (proportional to 1 + t % 5) covering [0, n); fewer when n < 64.
inline std::vector<comm::Segment> uneven_tensors(size_t n) {
  std::vector<comm::Segment> s;
  const size_t k = std::min<size_t>(64, std::max<size_t>(1, n));
  size_t tot = 0;
  for (size_t u = 0; u < k; ++u) tot += 1 + u % 5;
  size_t at = 0;
  for (size_t t = 0; t < k; ++t) {
    size_t end = t + 1 == k ? n : at + n * (1 + t % 5) / tot;
    end = std::max(end, at);
    s.push_back({at, end - at});
    at = end;
  }
  return s;
}

}  // namespace wb::bench
