// Vectorized element passes used by comm/collectives.cpp, with the plain scalar
// reference of each one beside it (llm.c style: tests/unit/test_comm_kernels.cpp compares
// them with atol + rtol*|ref|).
//
// Precision contract (Maleki et al., arXiv:2006.02924 4.4.1): data is fp32 or fp64; dot products
// and squared norms accumulate in double, the Adasum combination ca*a + cb*b is evaluated
// in double and rounded once to T. A float*float product is exact in double, so the only
// difference between the vector and scalar dot3 is the summation order (8 lanes x 2
// accumulators, then a fixed horizontal sum): deterministic, bit-identical across calls.
//
// Vectorization (arXiv:2006.02924 4.4.2): GCC/Clang vector extensions of 8 doubles. With
// -march=native (CMake option WORKBENCH_NATIVE) they compile to one AVX-512 register or
// two AVX2 registers; without, to SSE2 pairs. Intrinsics only for the AVX-512
// float <-> double conversions (see load8).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__AVX512F__) || defined(__AVX__) || defined(__SSE2__)
#include <immintrin.h>
#endif

namespace wb::comm::kern {

using V8d = double __attribute__((vector_size(64)));
using V8f = float __attribute__((vector_size(32)));
inline constexpr size_t kLanes = 8;

// The float <-> double conversions use the one-instruction AVX-512 forms when available:
// GCC 12 lowers __builtin_convertvector(V8f -> V8d) to two 256-bit converts plus
// extract/insert shuffles that saturate port 5 (dot3 over 128K floats in L2: 49 us with
// them, 24 us with the one-instruction form). Same values either way: the conversion is exact.
#if defined(__AVX512F__)
// Zero-masked forms with a full mask: the same instruction, but GCC 12's unmasked
// intrinsics start from _mm512_undefined_*() and trip -Wmaybe-uninitialized.
inline __m512d cvt_up(__m256 x) { return _mm512_maskz_cvtps_pd(0xFF, x); }
#endif

template <class T>
inline V8d load8(const T* p) {
  if constexpr (std::is_same_v<T, float>) {
#if defined(__AVX512F__)
    return reinterpret_cast<V8d>(cvt_up(_mm256_loadu_ps(p)));
#else
    V8f x;
    std::memcpy(&x, p, sizeof x);
    return __builtin_convertvector(x, V8d);
#endif
  } else {
    V8d x;
    std::memcpy(&x, p, sizeof x);
    return x;
  }
}

// Rounds to T, stores, and returns the stored values widened again: the caller's next
// dot products see exactly the materialized (rounded) vector, as the reference does.
template <class T>
inline V8d store8(T* p, V8d v) {
  if constexpr (std::is_same_v<T, float>) {
#if defined(__AVX512F__)
    const __m256 r = _mm512_maskz_cvtpd_ps(0xFF, reinterpret_cast<__m512d>(v));
    _mm256_storeu_ps(p, r);
    return reinterpret_cast<V8d>(cvt_up(r));
#else
    const V8f x = __builtin_convertvector(v, V8f);
    std::memcpy(p, &x, sizeof x);
    return __builtin_convertvector(x, V8d);
#endif
  } else {
    std::memcpy(p, &v, sizeof v);
    return v;
  }
}

// The Adasum combination ca*x + cb*y in double, with ONE fixed evaluation everywhere
// (scalar reference, vector kernels, comm/reference.cpp): fma(ca, x, cb*y) when the
// target has FMA, else two products and a sum. Spelled out rather than left to
// -ffp-contract: GCC contracts `ca*x + cb*y` into fma(ca, x, cb*y) or fma(cb, y, ca*x)
// depending on the surrounding code, the two differ in the last bit, and after rounding
// to float that showed up as 1-ulp differences between combine_dot3 and the scalar loop.
inline double axpby(double ca, double x, double cb, double y) {
#if defined(__FMA__)
  return __builtin_fma(ca, x, cb * y);
#else
  return ca * x + cb * y;  // no FMA instruction: nothing to contract
#endif
}

inline V8d axpby(double ca, V8d x, double cb, V8d y) {
  const V8d t = cb * y;
#if defined(__AVX512F__)
  return reinterpret_cast<V8d>(_mm512_fmadd_pd(_mm512_set1_pd(ca), reinterpret_cast<__m512d>(x),
                                                reinterpret_cast<__m512d>(t)));
#elif defined(__FMA__)
  V8d r;
  for (int h = 0; h < 2; ++h) {
    __m256d xh, th;
    std::memcpy(&xh, reinterpret_cast<const double*>(&x) + 4 * h, sizeof xh);
    std::memcpy(&th, reinterpret_cast<const double*>(&t) + 4 * h, sizeof th);
    const __m256d rh = _mm256_fmadd_pd(_mm256_set1_pd(ca), xh, th);
    std::memcpy(reinterpret_cast<double*>(&r) + 4 * h, &rh, sizeof rh);
  }
  return r;
#else
  return ca * x + t;
#endif
}

inline double hsum(V8d v) {  // fixed order: deterministic
  return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
}

// AVX2 + FMA without AVX-512 (e.g. AMD Zen 3): the V8d forms above need 12 accumulators of
// two registers each in dot3, more than the 16 YMM registers, and GCC 12 spills them to
// the stack on every iteration (dot3 over 16K floats ran at scalar speed). The kernels
// below use __m256d halves explicitly, with the SAME lanes, the same FMA per lane, the
// same tails and the same horizontal sums as the V8d forms: bit-identical results
// (tests/unit/test_comm_kernels.cpp checks them against the scalar references).
#if !defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__)
#define WB_KERN_AVX2 1
namespace avx2 {
inline __m256d ld4(const float* p) { return _mm256_cvtps_pd(_mm_loadu_ps(p)); }
inline __m256d ld4(const double* p) { return _mm256_loadu_pd(p); }
// Rounds to T, stores, returns the stored values widened again (as store8).
inline __m256d st4(float* p, __m256d v) {
  const __m128 r = _mm256_cvtpd_ps(v);
  _mm_storeu_ps(p, r);
  return _mm256_cvtps_pd(r);
}
inline __m256d st4(double* p, __m256d v) {
  _mm256_storeu_pd(p, v);
  return v;
}
inline __m256d axpby4(__m256d ca, __m256d x, __m256d cb, __m256d y) {
  return _mm256_fmadd_pd(ca, x, _mm256_mul_pd(cb, y));
}
// hsum of the V8d whose lanes 0..3 are lo and 4..7 are hi.
inline double hsum(__m256d lo, __m256d hi) {
  double l[4], h[4];
  _mm256_storeu_pd(l, lo);
  _mm256_storeu_pd(h, hi);
  return ((l[0] + h[0]) + (l[1] + h[1])) + ((l[2] + h[2]) + (l[3] + h[3]));
}
}  // namespace avx2
#endif

// ---------------------------------------------------------------- scalar references

// v += [a.b, a.a, b.b]
template <class T>
void dot3_scalar(const T* a, const T* b, size_t n, double* v) {
  double d = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < n; ++i) {
    const double x = a[i], y = b[i];
    d += x * y;
    aa += x * x;
    bb += y * y;
  }
  v[0] += d;
  v[1] += aa;
  v[2] += bb;
}

// out = T(ca*a + cb*b); out may alias a or b.
template <class T>
void combine_scalar(T* out, const T* a, const T* b, size_t n, double ca, double cb) {
  for (size_t i = 0; i < n; ++i)
    out[i] = static_cast<T>(axpby(ca, static_cast<double>(a[i]), cb, static_cast<double>(b[i])));
}

// ---------------------------------------------------------------- vector kernels

template <class T>
void dot3(const T* a, const T* b, size_t n, double* v) {
  size_t i = 0;
#if defined(WB_KERN_AVX2)
  // acc[c][q][h]: chain c (elements i + 8c ..), quantity q (a.b, a.a, b.b), half h.
  __m256d acc[2][3][2];
  for (auto& c : acc)
    for (auto& q : c)
      for (auto& h : q) h = _mm256_setzero_pd();
  for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
    for (int c = 0; c < 2; ++c)
      for (int h = 0; h < 2; ++h) {
        const __m256d x = avx2::ld4(a + i + 8 * c + 4 * h), y = avx2::ld4(b + i + 8 * c + 4 * h);
        acc[c][0][h] = _mm256_fmadd_pd(x, y, acc[c][0][h]);
        acc[c][1][h] = _mm256_fmadd_pd(x, x, acc[c][1][h]);
        acc[c][2][h] = _mm256_fmadd_pd(y, y, acc[c][2][h]);
      }
  }
  auto sum2 = [&](int q) {
    return avx2::hsum(_mm256_add_pd(acc[0][q][0], acc[1][q][0]),
                      _mm256_add_pd(acc[0][q][1], acc[1][q][1]));
  };
  double d = sum2(0), aa = sum2(1), bb = sum2(2);
#else
  V8d d0 = {}, d1 = {}, a0 = {}, a1 = {}, b0 = {}, b1 = {};
  for (; i + 2 * kLanes <= n; i += 2 * kLanes) {  // two chains hide the FMA latency
    const V8d x0 = load8(a + i), y0 = load8(b + i);
    const V8d x1 = load8(a + i + kLanes), y1 = load8(b + i + kLanes);
    d0 += x0 * y0;
    a0 += x0 * x0;
    b0 += y0 * y0;
    d1 += x1 * y1;
    a1 += x1 * x1;
    b1 += y1 * y1;
  }
  double d = hsum(d0 + d1), aa = hsum(a0 + a1), bb = hsum(b0 + b1);
#endif
  for (; i < n; ++i) {
    const double x = a[i], y = b[i];
    d += x * y;
    aa += x * x;
    bb += y * y;
  }
  v[0] += d;
  v[1] += aa;
  v[2] += bb;
}

template <class T>
void combine(T* out, const T* a, const T* b, size_t n, double ca, double cb) {
  size_t i = 0;
#if defined(WB_KERN_AVX2)
  const __m256d va = _mm256_set1_pd(ca), vb = _mm256_set1_pd(cb);
  for (; i + kLanes <= n; i += kLanes)
    for (int h = 0; h < 2; ++h)
      avx2::st4(out + i + 4 * h, avx2::axpby4(va, avx2::ld4(a + i + 4 * h), vb, avx2::ld4(b + i + 4 * h)));
#else
  for (; i + kLanes <= n; i += kLanes) store8(out + i, axpby(ca, load8(a + i), cb, load8(b + i)));
#endif
  for (; i < n; ++i)
    out[i] = static_cast<T>(axpby(ca, static_cast<double>(a[i]), cb, static_cast<double>(b[i])));
}

// One side of a fused tree pass: either an input read as is (x), or an internal node
// materialized in place as out = T(cx*x + cy*y) (out == x).
template <class T>
struct Side {
  T* x = nullptr;
  const T* y = nullptr;
  double cx = 1, cy = 0;
};

// The fused pass of the in-rank Adasum tree (see collectives.cpp): materialize the
// internal children A and B of a node (kA/kB) and accumulate the node's [A.B, A.A, B.B]
// from the rounded values in the same sweep, so each level costs one pass over the data.
//
// Cost (AVX2 path, 2-core EPYC Zen 3, L1-resident, 1024 elements, kA = kB = true):
// 0.59-0.73 ns per element index (both sides materialized), bound by the four
// float<->double conversions per materialized element (two widening loads, the rounding,
// the re-widening for the dot products; vcvtps2pd/vcvtpd2ps ymm run about one per cycle
// here and compete with the FMAs): without the re-widening the same loop takes 0.51 ns,
// without the dot products 0.42 ns. Over a W = 64 tree that is ~300 conversions per element
// position, which keeps the in-process 4 MB case near 0.3 of memcpy. Keeping
// internal nodes as rounded doubles in scratch would halve the conversions of the upper
// levels; a first micro-benchmark of that loop (0.64-0.68 ns, more bytes loaded and
// stored) showed no gain, so it was not pursued.
template <class T, bool kA, bool kB>
void combine_dot3(Side<T> A, Side<T> B, size_t n, double* v) {
  size_t i = 0;
#if defined(WB_KERN_AVX2)
  __m256d acc[3][2];
  for (auto& q : acc)
    for (auto& h : q) h = _mm256_setzero_pd();
  const __m256d acx = _mm256_set1_pd(A.cx), acy = _mm256_set1_pd(A.cy);
  const __m256d bcx = _mm256_set1_pd(B.cx), bcy = _mm256_set1_pd(B.cy);
  for (; i + kLanes <= n; i += kLanes) {
    for (int h = 0; h < 2; ++h) {
      const size_t j = i + 4 * static_cast<size_t>(h);
      __m256d x, y;
      if constexpr (kA)
        x = avx2::st4(A.x + j, avx2::axpby4(acx, avx2::ld4(A.x + j), acy, avx2::ld4(A.y + j)));
      else
        x = avx2::ld4(A.x + j);
      if constexpr (kB)
        y = avx2::st4(B.x + j, avx2::axpby4(bcx, avx2::ld4(B.x + j), bcy, avx2::ld4(B.y + j)));
      else
        y = avx2::ld4(B.x + j);
      acc[0][h] = _mm256_fmadd_pd(x, y, acc[0][h]);
      acc[1][h] = _mm256_fmadd_pd(x, x, acc[1][h]);
      acc[2][h] = _mm256_fmadd_pd(y, y, acc[2][h]);
    }
  }
  double d = avx2::hsum(acc[0][0], acc[0][1]), aa = avx2::hsum(acc[1][0], acc[1][1]),
         bb = avx2::hsum(acc[2][0], acc[2][1]);
#else
  V8d d0 = {}, a0 = {}, b0 = {};
  for (; i + kLanes <= n; i += kLanes) {
    V8d x, y;
    if constexpr (kA)
      x = store8(A.x + i, axpby(A.cx, load8(A.x + i), A.cy, load8(A.y + i)));
    else
      x = load8(A.x + i);
    if constexpr (kB)
      y = store8(B.x + i, axpby(B.cx, load8(B.x + i), B.cy, load8(B.y + i)));
    else
      y = load8(B.x + i);
    d0 += x * y;
    a0 += x * x;
    b0 += y * y;
  }
  double d = hsum(d0), aa = hsum(a0), bb = hsum(b0);
#endif
  // Tail: materialize each side first, then read the stored values back. Three plain
  // loops on purpose: with the interleaved single-loop form, GCC 12 -O2/-O3 (SLP
  // vectorizer; -fno-tree-slp-vectorize cured it) produced dots from the unrounded
  // values in tests/unit/test_comm_kernels.cpp.
  const size_t tail = i;
  if constexpr (kA)
    for (size_t j = tail; j < n; ++j)
      A.x[j] = static_cast<T>(axpby(A.cx, static_cast<double>(A.x[j]), A.cy, static_cast<double>(A.y[j])));
  if constexpr (kB)
    for (size_t j = tail; j < n; ++j)
      B.x[j] = static_cast<T>(axpby(B.cx, static_cast<double>(B.x[j]), B.cy, static_cast<double>(B.y[j])));
  for (size_t j = tail; j < n; ++j) {
    const double x = A.x[j], y = B.x[j];
    d += x * y;
    aa += x * x;
    bb += y * y;
  }
  v[0] += d;
  v[1] += aa;
  v[2] += bb;
}

// [a.b, a.a, b.b] with the one-chain summation order of combine_dot3 (the in-rank tree's
// fused pass over a node whose children are internal): the cross-rank levels use it for
// such nodes so that their coefficients are bit-identical to the in-rank tree's.
template <class T>
void dot3_one_chain(const T* a, const T* b, size_t n, double* v) {
  combine_dot3<T, false, false>(Side<T>{const_cast<T*>(a)}, Side<T>{const_cast<T*>(b)}, n, v);
}

// a += b (exact IEEE adds element by element: the same bits as the scalar loop).
template <class T>
void add(T* a, const T* b, size_t n) {
  for (size_t i = 0; i < n; ++i) a[i] += b[i];
}

// acc += w * x, in double.
template <class T>
void axpy_double(double* acc, const T* x, double w, size_t n) {
  for (size_t i = 0; i < n; ++i) acc[i] += w * static_cast<double>(x[i]);
}

// out[i] = T((0.0 + w[0] x[0][i] + ... + w[m-1] x[m-1][i]) / wsum), m <= 4 sources in the
// given order: what zeroing an accumulator, m axpy_double passes and the division compute,
// element by element in a register (the weighted average's two-rank path).
template <class T>
void wavg_raw(T* out, const T* const* x, const double* w, size_t m, size_t n, double wsum) {
  auto run = [&](auto mc) {
    constexpr size_t M = decltype(mc)::value;
    for (size_t i = 0; i < n; ++i) {
      double a = 0.0;
      for (size_t k = 0; k < M; ++k) a += w[k] * static_cast<double>(x[k][i]);
      out[i] = static_cast<T>(a / wsum);
    }
  };
  switch (m) {
    case 1: run(std::integral_constant<size_t, 1>{}); break;
    case 2: run(std::integral_constant<size_t, 2>{}); break;
    case 3: run(std::integral_constant<size_t, 3>{}); break;
    default: run(std::integral_constant<size_t, 4>{}); break;
  }
}

// y[i] = x[i] / W (y may be x): an allreduce's average. With W a power of two it multiplies
// by 1 / W, which is exact, so every product is the correctly rounded x[i] / W: the
// quotient's bits, denormals included (test_comm_kernels.cpp compares it with the division).
// A sparse-MLP step's division (255,647 floats, a Zen 5) took 57 us more than sum: a vdivps
// every ~16 cycles, slower still on the denormals a softmax's gradient carries (0.11 against
// 0.06 ns/float with a third of them, where a multiply stays at 0.07).
template <class T>
void divide(T* y, const T* x, size_t n, T W) {
  int e = 0;
  if (std::frexp(W, &e) == T(0.5)) {
    const T r = T(1) / W;
    for (size_t i = 0; i < n; ++i) y[i] = x[i] * r;
  } else {
    for (size_t i = 0; i < n; ++i) y[i] = x[i] / W;
  }
}

}  // namespace wb::comm::kern
