// The SIMD width of the build, in floats: what the fast kernels' buffers are padded to
// (models/layers_fast.h) and what their vector type holds (models/layers_fast_simd.h).
#pragma once

#include <cstddef>

namespace wb::models::fast {

// Floats per SIMD vector of the build (16 with AVX-512, 8 with AVX, 4 otherwise).
#if defined(__AVX512F__)
inline constexpr int kVL = 16;
#elif defined(__AVX__)
inline constexpr int kVL = 8;
#else
inline constexpr int kVL = 4;
#endif
inline size_t round_up(size_t n) {
  return (n + kVL - 1) / kVL * kVL;
}

}  // namespace wb::models::fast
