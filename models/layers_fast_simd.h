// Private to models/layers_fast.cpp and models/layers_fast_net.cpp: the SIMD vocabulary both
// are written in (the vector type, loads and stores, lane permutations, the compile-time
// dispatch). The kernels (layers_fast.cpp) and the net that drives them (layers_fast_net.cpp)
// are separate translation units; these helpers stay in an unnamed namespace so that each
// unit inlines its own copy, as when both lived in one file.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "models/simd_width.h"

namespace wb::models::fast {
namespace {

// The vector registers, and the widest rows (in vectors) a register tile of one B row by as
// many C rows as the rest of the registers hold takes: B read straight from conv input planes.
// The net's planner picks the rowvec stage by it (layers_fast_net.cpp).
#if defined(__AVX512F__)
constexpr int kVRegs = 32, kBcastRowNV = 4;
#else
constexpr int kVRegs = 16, kBcastRowNV = 3;
#endif

// GCC/Clang vector extension: portable SIMD (zmm with AVX-512, ymm with AVX, xmm else);
// a*b+c contracts to FMA under -O3 -march=native.
typedef float vf __attribute__((vector_size(kVL * sizeof(float))));

inline vf vload(const float* p) {
  vf v;
  std::memcpy(&v, p, sizeof(vf));
  return v;
}
inline void vstore(float* p, vf v) {
  std::memcpy(p, &v, sizeof(vf));
}
// Every lane = s, as one vbroadcastss. (vf{} + s is not the same: 0 + -0 = +0, so the
// compiler must keep the add, an extra dependent vaddss before each broadcast.)
template <size_t... I>
inline vf vsplat_lanes(float s, std::index_sequence<I...>) {
  return vf{((void)I, s)...};
}
inline vf vsplat(float s) {
  return vsplat_lanes(s, std::make_index_sequence<kVL>{});
}
// Copies 8 floats (one ymm move with AVX): im2col rows of 8-wide outputs, where whole
// kVL = 16 stores every 8 floats would overlap and cross cache lines.
inline void copy8(float* dst, const float* src) {
  std::memcpy(dst, src, 8 * sizeof(float));
}
// The value in a vector register, so the compiler cannot fold its load into each FMA that
// uses it (GCC does, as if memory operands were free: a B vector used by MR FMAs was
// loaded MR times, an unaligned load that often splits a cache line).
inline vf in_register(vf v) {
#if defined(__x86_64__) || defined(__i386__)
  __asm__("" : "+x"(v));
#endif
  return v;
}
inline float hsum(vf v) {
  float t[kVL];
  std::memcpy(t, &v, sizeof(vf));
  for (int w = kVL / 2; w > 0; w /= 2)
    for (int i = 0; i < w; ++i) t[i] += t[i + w];
  return t[0];
}

typedef int32_t vi __attribute__((vector_size(kVL * sizeof(int32_t))));
inline vi vload_i(const int32_t* p) {
  vi v;
  std::memcpy(&v, p, sizeof(vi));
  return v;
}
inline void vstore_i(int32_t* p, vi v) {
  std::memcpy(p, &v, sizeof(vi));
}
// kVL dropout keep flags (bytes, 0 or 1) as a lane mask (-1 where kept).
typedef uint8_t vu8 __attribute__((vector_size(kVL)));
inline vi keep_mask(const uint8_t* p) {
  vu8 b;
  std::memcpy(&b, p, sizeof b);
  return __builtin_convertvector(b, vi) != 0;
}

// Lane permutations for the 2x2 max-pool: split even/odd columns of two vectors, and
// interleave two vectors back. Constant lane indices, so the same code builds with GCC
// and clang (__builtin_shufflevector: GCC >= 12 and clang; older GCC falls back to
// __builtin_shuffle with a constant mask).
#if defined(__has_builtin)
#if __has_builtin(__builtin_shufflevector)
#define WB_HAS_SHUFFLEVECTOR 1
#endif
#endif
// Lane i of the result = lane idx(i) of the concatenation (a, b), idx a constexpr map.
template <class Idx, size_t... I>
inline vf permute2(vf a, vf b, std::index_sequence<I...>) {
#ifdef WB_HAS_SHUFFLEVECTOR
  return __builtin_shufflevector(a, b, Idx::at(I)...);
#else
  return __builtin_shuffle(a, b, vi{Idx::at(I)...});
#endif
}
// In-lane shuffles (one vshufps / vunpcklps per vector; a plain even/odd split or
// interleave costs two cross-lane vpermps and a blend each with AVX2). Within each
// 128-bit block B (lanes 4B .. 4B+3) the even/odd split takes lanes 4B, 4B+2 (odd: +1)
// of a, then of b,
// so lane i holds pooled column scr_col(i) = 2B + w (w = i % 4 < 2) or kVL/2 + 2B + w - 2,
// a "scrambled" order that one cross-lane permute (vpermpd 0xD8 with AVX2) undoes. The
// pooling computes in that order and unscrambles its two results; the backward scrambles
// its two inputs, and the in-lane interleaves then write the windows in order.
constexpr int scr_col(int i) {
  return i % 4 < 2 ? 2 * (i / 4) + i % 4 : kVL / 2 + 2 * (i / 4) + i % 4 - 2;
}
struct ScrEvenIdx {
  static constexpr int at(size_t i) {
    return (i % 4 < 2 ? 0 : kVL) + 4 * static_cast<int>(i / 4) + 2 * static_cast<int>(i % 2);
  }
};
struct ScrOddIdx {
  static constexpr int at(size_t i) { return ScrEvenIdx::at(i) + 1; }
};
struct ScrambleIdx {  // true order -> scrambled: lane i <- lane scr_col(i)
  static constexpr int at(size_t i) { return scr_col(static_cast<int>(i)); }
};
struct UnscrambleIdx {  // scrambled -> true order: lane scr_col(i) <- lane i
  static constexpr int at(size_t e) {
    for (int i = 0; i < kVL; ++i)
      if (scr_col(i) == static_cast<int>(e)) return i;
    return 0;
  }
};
struct UnpackLoIdx {  // per block: a[4B], b[4B], a[4B+1], b[4B+1]
  static constexpr int at(size_t i) {
    return (i % 2 ? kVL : 0) + 4 * static_cast<int>(i / 4) + static_cast<int>(i % 4) / 2;
  }
};
struct UnpackHiIdx {  // per block: a[4B+2], b[4B+2], a[4B+3], b[4B+3]
  static constexpr int at(size_t i) { return UnpackLoIdx::at(i) + 2; }
};
using Lanes = std::make_index_sequence<kVL>;
template <class Idx>
inline vf permute1(vf a) {
  return permute2<Idx>(a, a, Lanes{});
}
template <class Idx>
inline vi permute1(vi a) {
  return reinterpret_cast<vi>(permute2<Idx>(reinterpret_cast<vf>(a), reinterpret_cast<vf>(a),
                                            Lanes{}));
}
struct Perms {
  vi lane;     // 0, 1, ..., kVL - 1
  vi scr_col;  // scr_col(lane)
};
inline const Perms& perms() {
  static const Perms p = [] {
    Perms q;
    for (int i = 0; i < kVL; ++i) q.lane[i] = i, q.scr_col[i] = scr_col(i);
    return q;
  }();
  return p;
}

// Calls f(std::integral_constant<int, n>) for a runtime n in [1, N].
template <int N, class F>
inline void dispatch(int n, F&& f) {
  if constexpr (N >= 1) {
    if (n == N) {
      f(std::integral_constant<int, N>{});
      return;
    }
    dispatch<N - 1>(n, f);
  }
}

}  // namespace
}  // namespace wb::models::fast
