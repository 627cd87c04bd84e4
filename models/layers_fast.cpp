#include "models/layers_fast.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "core/error.h"

namespace wb::models {
namespace fast {
namespace {

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
const Perms& perms() {
  static const Perms p = [] {
    Perms q;
    for (int i = 0; i < kVL; ++i) q.lane[i] = i, q.scr_col[i] = scr_col(i);
    return q;
  }();
  return p;
}

// Register tiles. AVX-512 has 32 vector registers: bcast 6x4 = 24 accumulators + 4 B
// vectors + 1 broadcast; dot 4x5 = 20 accumulators + 4 A + 1 B. With 16 registers
// (AVX2/SSE) the tiles shrink so nothing spills.
#if defined(__AVX512F__)
constexpr int kBcastMR = 6, kBcastNV = 4, kDotMR = 4, kDotNR = 5;
#else
// 16 ymm registers: bcast 6x2 = 12 accumulators + 2 B + 1 broadcast; dot 3x4 = 12 + 3 A +
// 1 B. Twelve independent accumulators cover the FMA latency (4 cycles) x 2 FMA pipes of
// Zen 3 with slack; the 8 of a 4x2 / 2x4 tile left no room for a late load.
constexpr int kBcastMR = 6, kBcastNV = 2, kDotMR = 3, kDotNR = 4;
#endif
// Rows of up to kBcastRowNV vectors (B read straight from conv input planes) get a tile
// of one such row by as many C rows as the kVRegs vector registers hold.
#if defined(__AVX512F__)
constexpr int kVRegs = 32, kBcastRowNV = 4;
#else
constexpr int kVRegs = 16, kBcastRowNV = 3;
#endif
// gemm_dot: bytes of A rows per sample chunk. Its tiles read A at ~26 B a cycle, which L2
// serves, while every chunk pays each tile's zeroing and horizontal sums again: at 16 KB
// (half of a 32 KB L1) lenet5's conv1 weight gradient (27 KB of A a sample) ran one sample
// a chunk; two a chunk made a training step 1-2% faster at batch 8-64 (Zen 5, 48 KB L1).
constexpr size_t kDotL1Budget = 64 * 1024;
// conv_wgrad_rows: bytes of a sample chunk's rows (half of a 32 KB L1 data cache).
constexpr size_t kWgradRowsL1Budget = 16 * 1024;

// Calls f(std::integral_constant<int, n>) for a runtime n in [1, N].
// Horizontal sums of kVL vectors at once: log2(kVL) levels, each folding pairs of vectors
// (x's groups of G lanes, then y's, each halved by adding its upper half to its lower), the
// last leaving lane e = the sum of vector e's lanes. Each sum is added in hsum's order
// (lanes i + kVL/2 first, then i + kVL/4, ...), so the bits are hsum's; 2 shuffles and an
// add a pair instead of log2(kVL) of each a vector: conv_wgrad_rowpair's tiles end with 20
// sums each, which with hsum cost lenet5's batch 8 more than the full lanes gained.
template <int G>
constexpr int fold_src(int i, bool upper) {
  const int half = G / 2, groups = kVL / G, q = i / half, w = i % half;
  return (q < groups ? 0 : kVL) + (q % groups) * G + w + (upper ? half : 0);
}
template <int G, size_t... I>
inline vf fold_pair(vf x, vf y, std::index_sequence<I...>) {
#ifdef WB_HAS_SHUFFLEVECTOR
  return __builtin_shufflevector(x, y, fold_src<G>(static_cast<int>(I), false)...) +
         __builtin_shufflevector(x, y, fold_src<G>(static_cast<int>(I), true)...);
#else
  float a[2 * kVL], r[kVL];
  std::memcpy(a, &x, sizeof x);
  std::memcpy(a + kVL, &y, sizeof y);
  for (int i = 0; i < kVL; ++i) r[i] = a[fold_src<G>(i, false)] + a[fold_src<G>(i, true)];
  return vload(r);
#endif
}
template <int G>
inline void fold_level(vf* v, int n) {
#pragma GCC unroll 16
  for (int i = 0; i < n / 2; ++i) v[i] = fold_pair<G>(v[2 * i], v[2 * i + 1], std::make_index_sequence<kVL>{});
  if constexpr (G > 2) fold_level<G / 2>(v, n / 2);
}
// out[e] = hsum(v[e]) for e < n, bit for bit; v is overwritten.
inline void hsums(vf* v, int n, float* out) {
  int e = 0;
  if constexpr (kVL >= 2)
    for (; e + kVL <= n; e += kVL) {
      fold_level<kVL>(v + e, kVL);
      vstore(out + e, v[e]);
    }
  for (; e < n; ++e) out[e] = hsum(v[e]);
}

// The start of a register tile of MR x N dot products: every accumulator zero.
template <int MR, int N>
inline void zero_tile(vf (&acc)[MR][N]) {
#pragma GCC unroll 8
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 8
    for (int j = 0; j < N; ++j) acc[m][j] = vf{};
}
// The end of a register tile of MR x N dot products: their horizontal sums (hsums) stored
// (or added, with accumulate) to out[m * rs + j].
template <int MR, int N>
inline void store_tile_sums(vf (&acc)[MR][N], float* out, long rs, bool accumulate) {
  float sum[MR * N];
  hsums(&acc[0][0], MR * N, sum);
#pragma GCC unroll 8
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 8
    for (int j = 0; j < N; ++j) {
      float& o = out[m * rs + j];
      o = (accumulate ? o : 0.0f) + sum[m * N + j];
    }
}

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

// Calls f.template operator()<LO, HI>() for a runtime range [lo, hi] within [0, N - 1]; nothing
// when lo > hi. The data-gradient tiles run only the rows a tap row meets (compile-time bounds,
// so their accumulators stay in registers).
template <int N, class F>
inline void dispatch_range(int lo, int hi, F&& f) {
  dispatch<N>(lo + 1, [&](auto lo_c) {
    constexpr int LO = decltype(lo_c)::value - 1;
    dispatch<N>(hi + 1, [&](auto hi_c) {
      constexpr int HI = decltype(hi_c)::value - 1;
      if constexpr (LO <= HI) f.template operator()<LO, HI>();
    });
  });
}

// Where vector q of a B row starts (floats from the row start): rows of `vpr` contiguous
// vectors, `vs` floats apart (vpr = 1, vs = kVL: one contiguous row).
struct BVecs {
  long vs;
  int vpr;
  long at(int q) const { return (q / vpr) * vs + (q % vpr) * kVL; }
  // Step between the vectors of one register tile (which never straddles a row of vpr > 1).
  long step() const { return vpr == 1 ? vs : kVL; }
};

struct OffsetRows {
  const int32_t* off;
  long operator()(int k) const { return off[k]; }
};
struct StridedRows {
  long ld;
  long operator()(int k) const { return k * ld; }
};

template <int MR, int NV, class BR>
inline void bcast_tile(int K, const float* a, long a_rs, long a_cs, const float* b, BR br, int n0,
                       BVecs bv_at, float* c, long ldc, const float* bias, bool accumulate) {
  const long b0 = bv_at.at(n0 / kVL), b_vs = bv_at.step();
  vf acc[MR][NV];
#pragma GCC unroll 8
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v)
      acc[m][v] = bias ? vsplat(bias[m]) : (accumulate ? vload(c + m * ldc + n0 + v * kVL) : vf{});
  for (int k = 0; k < K; ++k) {
    const float* brow = b + br(k) + b0;
    vf bv[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) bv[v] = vload(brow + v * b_vs);
    const float* ak = a + k * a_cs;
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) {
      const vf am = vsplat(ak[m * a_rs]);
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[m][v] += am * bv[v];
    }
  }
#pragma GCC unroll 8
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) vstore(c + m * ldc + n0 + v * kVL, acc[m][v]);
}

template <class BR>
void bcast_impl(int M, int N, int K, const float* a, long a_rs, long a_cs, const float* b, BR br,
                BVecs b_vs, float* c, long ldc, const float* bias, bool accumulate) {
  const int nvec = N / kVL;
  if (b_vs.vpr > 1) {
    // Rows of vpr vectors: one tile per row (vpr vectors) and as many C rows as the
    // registers hold beside them.
    WB_ASSERT(b_vs.vpr <= kBcastRowNV && nvec % b_vs.vpr == 0,
              "gemm_bcast: " + std::to_string(b_vs.vpr) + " vectors per B row");
    dispatch<kBcastRowNV>(b_vs.vpr, [&](auto nv_c) {
      constexpr int NV = decltype(nv_c)::value;
      constexpr int kMaxMR = std::min(6, (kVRegs - 1 - NV) / NV);
      const int mblocks = (M + kMaxMR - 1) / kMaxMR;
      for (int blk = 0, m0 = 0; blk < mblocks; ++blk) {
        const int mr = (M - m0) / (mblocks - blk);  // balanced: 10 rows -> 3 + 3 + 4
        dispatch<kMaxMR>(mr, [&](auto mr_c) {
          for (int v = 0; v < nvec; v += NV)
            bcast_tile<decltype(mr_c)::value, NV>(K, a + m0 * a_rs, a_rs, a_cs, b, br, v * kVL,
                                                  b_vs, c + m0 * ldc, ldc,
                                                  bias ? bias + m0 : nullptr, accumulate);
        });
        m0 += mr;
      }
    });
    return;
  }
  // Balanced row blocks: M = 10 -> 5 + 5 rather than 6 + 4.
  const int mblocks = (M + kBcastMR - 1) / kBcastMR;
  const int mr_main = (M + mblocks - 1) / mblocks;
  for (int m0 = 0; m0 < M; m0 += mr_main) {
    const int mr = std::min(mr_main, M - m0);
    dispatch<kBcastMR>(mr, [&](auto mr_c) {
      constexpr int MR = decltype(mr_c)::value;
      const float* am = a + m0 * a_rs;
      float* cm = c + m0 * ldc;
      const float* bm = bias ? bias + m0 : nullptr;
      int v = 0;
      for (; v + kBcastNV <= nvec; v += kBcastNV)
        bcast_tile<MR, kBcastNV>(K, am, a_rs, a_cs, b, br, v * kVL, b_vs, cm, ldc, bm, accumulate);
      if (v < nvec)
        dispatch<kBcastNV - 1>(nvec - v, [&](auto nv_c) {
          bcast_tile<MR, decltype(nv_c)::value>(K, am, a_rs, a_cs, b, br, v * kVL, b_vs, cm, ldc,
                                                bm, accumulate);
        });
    });
  }
}

template <int MR, int NR, class BR>
inline void dot_tile(int nbatch, int kv, const float* a, long a_bs, long a_rs, const float* b,
                     long b_bs, BR br, const long* qoff, int n0, float* c, long ldc,
                     bool accumulate) {
  vf acc[MR][NR];
  zero_tile(acc);
  long boff[NR];
#pragma GCC unroll 8
  for (int j = 0; j < NR; ++j) boff[j] = br(n0 + j);
  for (int t = 0; t < nbatch; ++t) {
    const float* at = a + t * a_bs;
    const float* bt = b + t * b_bs;
    for (int q = 0; q < kv; ++q) {
      vf av[MR];
#pragma GCC unroll 8
      for (int m = 0; m < MR; ++m) av[m] = vload(at + m * a_rs + q * kVL);
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) {
        const vf bv = vload(bt + boff[j] + qoff[q]);
#pragma GCC unroll 8
        for (int m = 0; m < MR; ++m) acc[m][j] += av[m] * bv;
      }
    }
  }
#if defined(__AVX__) && !defined(__AVX512F__)
  if constexpr (NR == 4) {
    // Four horizontal sums at once (three hadds and one 128-bit add): a plain hsum per
    // output costs about as much as the dot products of a short chunk.
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) {
      const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(__m256(acc[m][0]), __m256(acc[m][1])),
                                      _mm256_hadd_ps(__m256(acc[m][2]), __m256(acc[m][3])));
      __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
      float* out = c + m * ldc + n0;
      if (accumulate) s = _mm_add_ps(s, _mm_loadu_ps(out));
      _mm_storeu_ps(out, s);
    }
    return;
  }
#endif
  store_tile_sums(acc, c + n0, ldc, accumulate);
}

template <class BR>
void dot_impl(int M, int N, int nbatch, int K, const float* a, long a_bs, long a_rs, const float* b,
              long b_bs, BR br, BVecs b_vs, float* c, long ldc, bool accumulate) {
  const int kv = K / kVL;
  // B vector offsets along K, looked up in the inner loop (rows of vpr vectors).
  constexpr int kMaxStackQ = 1024;
  long qstack[kMaxStackQ];
  std::vector<long> qheap;
  long* qoff = qstack;
  if (kv > kMaxStackQ) {
    qheap.resize(kv);
    qoff = qheap.data();
  }
  for (int q = 0; q < kv; ++q) qoff[q] = b_vs.at(q);
  const int mblocks = (M + kDotMR - 1) / kDotMR;
  const int mr_main = (M + mblocks - 1) / mblocks;
  const int nblocks = (N + kDotNR - 1) / kDotNR;
  const int nr_main = (N + nblocks - 1) / nblocks;
  // Samples in chunks of A rows (M x K floats each) within kDotL1Budget: every column block
  // re-reads all A rows, so a chunk's A must stay in the caches near the core (the weight
  // gradient of a conv layer sums over the batch: at batch 32 A is 160 KB for lenet5's
  // conv2 with im2col). Each chunk adds its dot products to C, so only the first chunk
  // honours `accumulate`.
  const size_t a_bytes = sizeof(float) * static_cast<size_t>(M) * K;
  const int chunk = std::max(1, static_cast<int>(kDotL1Budget / std::max<size_t>(a_bytes, 1)));
  for (int t0 = 0; t0 < nbatch; t0 += chunk) {
    const int nt = std::min(chunk, nbatch - t0);
    const bool acc_t = accumulate || t0 > 0;
    const float* at = a + static_cast<long>(t0) * a_bs;
    const float* bt = b + static_cast<long>(t0) * b_bs;
    // Column blocks outer: a block's B rows (the chunk's samples) stay in L1 across row
    // blocks.
    for (int n0 = 0; n0 < N; n0 += nr_main) {
      const int nr = std::min(nr_main, N - n0);
      for (int m0 = 0; m0 < M; m0 += mr_main) {
        const int mr = std::min(mr_main, M - m0);
        dispatch<kDotMR>(mr, [&](auto mr_c) {
          dispatch<kDotNR>(nr, [&](auto nr_c) {
            dot_tile<decltype(mr_c)::value, decltype(nr_c)::value>(nt, kv, at + m0 * a_rs, a_bs,
                                                                   a_rs, bt, b_bs, br, qoff, n0,
                                                                   c + m0 * ldc, ldc, acc_t);
          });
        });
      }
    }
  }
}

// conv_wgrad_rows' register tile: output channels o0 .. o0+MR-1 (rows a + m*a_rs of the
// output gradient) x taps v < K of input row offset u (b = the input plane at row u).
template <int MR, int K, int VPR>
inline void wgrad_tile(int nt, int ho, const float* a, long a_bs, long a_rs, const float* b,
                       long b_bs, long w, float* dw, long dw_rs, bool accumulate) {
  vf acc[MR][K];
  zero_tile(acc);
  for (int t = 0; t < nt; ++t) {
    const float* at = a + t * a_bs;
    const float* bt = b + t * b_bs;
    for (int i = 0; i < ho; ++i)
#pragma GCC unroll 4
      for (int q = 0; q < VPR; ++q) {
        const float* ap = at + (i * VPR + q) * kVL;
        const float* bp = bt + i * w + q * kVL;
        vf av[MR];
#pragma GCC unroll 8
        for (int m = 0; m < MR; ++m) av[m] = in_register(vload(ap + m * a_rs));
#pragma GCC unroll 8
        for (int v = 0; v < K; ++v) {
          const vf bv = in_register(vload(bp + v));
#pragma GCC unroll 8
          for (int m = 0; m < MR; ++m) acc[m][v] += av[m] * bv;
        }
      }
  }
  store_tile_sums(acc, dw, dw_rs, accumulate);
}

// Lanes shifted up by V (lane x <- lane x - V, zeros in), and the V lanes shifted out,
// moved to the bottom (lane x < V <- lane kVL - V + x): a vector shifted right by V lanes
// across two vectors. Second operand: a zero vector.
template <int V>
struct ShiftUpIdx {
  static constexpr int at(size_t i) { return static_cast<int>(i) >= V ? static_cast<int>(i) - V : kVL; }
};
template <int V>
struct ShiftOutIdx {
  static constexpr int at(size_t i) { return static_cast<int>(i) < V ? kVL - V + static_cast<int>(i) : kVL; }
};

// Register rows of conv_dgrad_rows' tile: K accumulators (the tap columns v) per input row
// and output-row vector, R rows, plus R rows of VPR output-gradient vectors and one
// broadcast weight.
template <int K, int VPR>
constexpr int dgrad_rows_r() {
  return std::max(1, std::min(4, (kVRegs - 1) / ((K + 1) * VPR)));
}
// Output rows of at most this many vectors (with AVX2, K = 5 and two vectors already take
// 13 of the 16 registers at R = 1).
constexpr int kDgradMaxVPR = 2;

template <int K, int VPR>
void dgrad_rows_k(int cout, int cin, int h, int wi, const float* w, const float* dout, long dout_cs,
                  float* dpad, float* din) {
  constexpr int R = dgrad_rows_r<K, VPR>();
  constexpr int RW = VPR * kVL;  // floats per output row (junk columns beyond wo)
  const int ho = h - K + 1;
  const int kk = K * K, kdim = cin * kk;
  // The output gradient with R - 1 zero rows above and below each channel: the tile's rows
  // y0 .. y0+R-1 read rows y - u that may lie outside [0, ho) for some of its rows.
  const int prows = ho + 2 * (R - 1);
  for (int o = 0; o < cout; ++o)
    for (int r = 0; r < ho; ++r)
#pragma GCC unroll 4
      for (int q = 0; q < VPR; ++q)
        vstore(dpad + (static_cast<long>(o) * prows + R - 1 + r) * RW + q * kVL,
               vload(dout + o * dout_cs + r * RW + q * kVL));
  const long dense = static_cast<long>(cin) * h * wi;
  for (int c = 0; c < cin; ++c)
    for (int y0 = 0; y0 < h; y0 += R) {
      // Taps u with at least one of the rows y0 .. y0+R-1 inside: y - u in [0, ho).
      const int u_lo = std::max(0, y0 - (ho - 1)), u_hi = std::min(K - 1, y0 + R - 1);
      vf acc[K][R][VPR];
#pragma GCC unroll 8
      for (int v = 0; v < K; ++v)
#pragma GCC unroll 4
        for (int t = 0; t < R; ++t)
#pragma GCC unroll 4
          for (int q = 0; q < VPR; ++q) acc[v][t][q] = vf{};
      // u outer, o inner: a plain loop of cout steps, two pointer bumps each (o outer with
      // a u loop of 1..k steps inside made GCC spill its pointers). Only the rows [TL, TH]
      // whose output-gradient row y - u lies in [0, ho) and that lie in the input (y < h):
      // the others multiplied the pad's zero rows (lenet5_classic's conv2: 64 row-taps a
      // channel for 50). A skipped product is +-0, so the sums' bits do not change.
      auto taps = [&]<int TL, int TH>(int u) {
        const float* wc = w + c * kk + u * K;
        const float* dp = dpad + static_cast<long>(R - 1 + y0 - u) * RW;
        for (int o = 0; o < cout; ++o, wc += kdim, dp += prows * RW) {
          vf d[R][VPR];
#pragma GCC unroll 4
          for (int t = TL; t <= TH; ++t)
#pragma GCC unroll 4
            for (int q = 0; q < VPR; ++q) d[t][q] = vload(dp + t * RW + q * kVL);
#pragma GCC unroll 8
          for (int v = 0; v < K; ++v) {
            const vf wv = vsplat(wc[v]);
#pragma GCC unroll 4
            for (int t = TL; t <= TH; ++t)
#pragma GCC unroll 4
              for (int q = 0; q < VPR; ++q) acc[v][t][q] += wv * d[t][q];
          }
        }
      };
      for (int u = u_lo; u <= u_hi; ++u) {
        const int t_lo = std::max(0, u - y0);
        const int t_hi = std::min({R - 1, ho - 1 + u - y0, h - 1 - y0});
        dispatch_range<R>(t_lo, t_hi, [&]<int TL, int TH>() { taps.template operator()<TL, TH>(u); });
      }
#pragma GCC unroll 4
      for (int t = 0; t < R; ++t) {
        const int y = y0 + t;
        if (y >= h) break;
        // din row y = sum_v S_v shifted right by v lanes: vector q of S_v lands in vectors
        // q and q + 1. Lanes past the row (x >= wi) are zero: they come from junk columns.
        vf row[VPR + 1];
#pragma GCC unroll 4
        for (int q = 0; q < VPR; ++q) row[q] = acc[0][t][q];
        row[VPR] = vf{};
        [&]<size_t... V>(std::index_sequence<V...>) {
#pragma GCC unroll 4
          for (int q = 0; q < VPR; ++q)
            ((row[q] += permute2<ShiftUpIdx<V + 1>>(acc[V + 1][t][q], vf{}, Lanes{}),
              row[q + 1] += permute2<ShiftOutIdx<V + 1>>(acc[V + 1][t][q], vf{}, Lanes{})),
             ...);
        }(std::make_index_sequence<K - 1>{});
        const long at = (static_cast<long>(c) * h + y) * wi;
#pragma GCC unroll 4
        for (int q = 0; q <= VPR; ++q) {
          if (q * kVL >= wi) break;
          if (at + (q + 1) * kVL <= dense) {
            vstore(din + at + q * kVL, row[q]);  // spills into the next row: written after
          } else {
            for (int x = q * kVL; x < wi; ++x) din[at + x] = row[q][x - q * kVL];
          }
        }
      }
    }
}

// conv_dgrad_rows for output rows of exactly half a vector (lenet5's conv2 with AVX-512: 8
// of 16 lanes; dgrad_rows_k spends half its FMAs on the zero junk columns). A vector holds
// two output-gradient rows, [dout[o][r] | dout[o][r + 1]] (pad: the pairs of every r from
// -(K - 1) to h - 1, zero rows outside the output), so one accumulator per tap column v
// holds S_v of two input rows, [S_v[y] | S_v[y + 1]] for y = y0 + 2t: the same weight
// multiplies both halves. Each half is then shifted right by v lanes into a row of its own
// (HalfShift). The sums run over (u, o) in the same order as dgrad_rows_k's.
template <int H, int V>
struct HalfShift {  // lane i <- lane H * kVL/2 + i - V of a, for i in [V, V + kVL/2); else 0
  static constexpr int at(size_t i) {
    return static_cast<int>(i) >= V && static_cast<int>(i) < V + kVL / 2 ? H * kVL / 2 + static_cast<int>(i) - V
                                                                          : kVL;
  }
};
template <int K>
constexpr int dgrad_rowpair_r() {  // K accumulators and one output-gradient vector per pair
  return std::max(1, (kVRegs - 1) / (K + 1));
}
template <int K>
size_t dgrad_rowpair_scratch(int cout, int ho) {
  return static_cast<size_t>(cout) * (ho + 2 * K) * kVL;
}

template <int K, int R2>
void dgrad_rowpair_tile(int c, int y0, int cout, int cin, int h, int wi, int ho, const float* w,
                        const float* pad, int prows, float* din, long dense) {
  const int kk = K * K, kdim = cin * kk;
  // Taps u with at least one of the tile's rows y0 .. y0 + 2 R2 - 1 inside: y - u in [0, ho).
  const int u_lo = std::max(0, y0 - (ho - 1)), u_hi = std::min(K - 1, y0 + 2 * R2 - 1);
  vf acc[K][R2];
#pragma GCC unroll 8
  for (int v = 0; v < K; ++v)
#pragma GCC unroll 8
    for (int t = 0; t < R2; ++t) acc[v][t] = vf{};
  // The pairs [TL, TH] whose output-gradient rows y - u, y + 1 - u are not both outside
  // [0, ho) for this tap row: the others would multiply the pad's zero rows (a third of the
  // work of lenet5's conv2 with whole tiles; skipping it made a training step at batch 32
  // ~5% faster). Skipping a zero product leaves the sums' bits as they are (acc starts at +0,
  // and x + (+-0) = x), so the order of the sums is unchanged.
  auto taps = [&]<int TL, int TH>(int u) {
    const float* wc = w + c * kk + u * K;
    // Pair row r = y0 - u (+ 2t) sits at index r + K - 1 of the channel's pad.
    const float* dp = pad + static_cast<long>(y0 - u + K - 1) * kVL;
    for (int o = 0; o < cout; ++o, wc += kdim, dp += static_cast<long>(prows) * kVL) {
      vf d[R2];
#pragma GCC unroll 8
      for (int t = TL; t <= TH; ++t) d[t] = vload(dp + 2 * t * kVL);
#pragma GCC unroll 8
      for (int v = 0; v < K; ++v) {
        const vf wv = vsplat(wc[v]);
#pragma GCC unroll 8
        for (int t = TL; t <= TH; ++t) acc[v][t] += wv * d[t];
      }
    }
  };
  for (int u = u_lo; u <= u_hi; ++u) {
    // Pair t holds rows y0 + 2t, y0 + 2t + 1: some row of it meets [0, ho) when
    // -1 <= y0 + 2t - u <= ho - 1.
    const int lo_num = u - 1 - y0, hi_num = ho - 1 + u - y0;
    const int t_lo = std::max(0, lo_num <= 0 ? 0 : (lo_num + 1) / 2);
    const int t_hi = std::min(R2 - 1, hi_num < 0 ? -1 : hi_num / 2);
    dispatch_range<R2>(t_lo, t_hi, [&]<int TL, int TH>() { taps.template operator()<TL, TH>(u); });
  }
#pragma GCC unroll 8
  for (int t = 0; t < R2; ++t) {
    const int y = y0 + 2 * t;
    if (y >= h) break;
    // v = 0 first, then v = 1 .. K - 1 added in order, as dgrad_rows_k sums: the same bits.
    vf lo = permute2<HalfShift<0, 0>>(acc[0][t], vf{}, Lanes{});
    vf hi = permute2<HalfShift<1, 0>>(acc[0][t], vf{}, Lanes{});
    [&]<size_t... V>(std::index_sequence<V...>) {
      ((lo += permute2<HalfShift<0, V + 1>>(acc[V + 1][t], vf{}, Lanes{}),
        hi += permute2<HalfShift<1, V + 1>>(acc[V + 1][t], vf{}, Lanes{})),
       ...);
    }(std::make_index_sequence<K - 1>{});
    // Lanes past the row (x >= wi) are zero. Rows in order: a whole-vector store spills into
    // the next row, written after.
    for (int half = 0; half < 2; ++half) {
      const int yy = y + half;
      if (yy >= h) break;
      const vf row = half ? hi : lo;
      const long at = (static_cast<long>(c) * h + yy) * wi;
      if (at + kVL <= dense) {
        vstore(din + at, row);
      } else {
        for (int x = 0; x < wi; ++x) din[at + x] = row[x];
      }
    }
  }
}

template <int K>
void dgrad_rowpair_k(int cout, int cin, int h, int wi, const float* w, const float* dout,
                     long dout_cs, float* pad, float* din) {
  const int ho = h - K + 1, half = kVL / 2;
  const int prows = ho + 2 * K;  // pair rows r = -(K - 1) .. h - 1 (and slack) per channel
  for (int o = 0; o < cout; ++o)
    for (int i = 0; i < prows; ++i) {
      const int r = i - (K - 1);
      float* dst = pad + (static_cast<long>(o) * prows + i) * kVL;
      for (int hh = 0; hh < 2; ++hh) {
        const int rr = r + hh;
        if (rr >= 0 && rr < ho)
          std::memcpy(dst + hh * half, dout + o * dout_cs + static_cast<long>(rr) * kVL, half * sizeof(float));
        else
          std::memset(dst + hh * half, 0, half * sizeof(float));
      }
    }
  const long dense = static_cast<long>(cin) * h * wi;
  constexpr int R2max = dgrad_rowpair_r<K>();
  const int npairs = (h + 1) / 2, ntile = (npairs + R2max - 1) / R2max;
  for (int c = 0; c < cin; ++c)
    for (int tile = 0, p0 = 0; tile < ntile; ++tile) {
      const int np = (npairs - p0) / (ntile - tile);
      dispatch<R2max>(np, [&](auto r_c) {
        dgrad_rowpair_tile<K, decltype(r_c)::value>(c, 2 * p0, cout, cin, h, wi, ho, w, pad, prows, din, dense);
      });
      p0 += np;
    }
}

}  // namespace

bool conv_dgrad_rows_fits(int k, int wo) {
  const int vpr = (wo + kVL - 1) / kVL;
  return wo >= 1 && vpr <= kDgradMaxVPR && k >= 1 && k <= kWgradMaxK && k - 1 <= kVL &&
         (k + 1) * vpr + 1 <= kVRegs;
}

size_t conv_dgrad_rows_scratch(int cout, int k, int ho, int wo) {
  size_t n = 0;
  const int vpr = (wo + kVL - 1) / kVL;
  dispatch<kWgradMaxK>(k, [&](auto k_c) {
    dispatch<kDgradMaxVPR>(vpr, [&](auto vpr_c) {
      constexpr int K = decltype(k_c)::value, VPR = decltype(vpr_c)::value;
      n = static_cast<size_t>(cout) * (ho + 2 * (dgrad_rows_r<K, VPR>() - 1)) * VPR * kVL;
      if (2 * wo == kVL) n = std::max(n, dgrad_rowpair_scratch<K>(cout, ho));
    });
  });
  return n;
}

void conv_dgrad_rows(int cout, int cin, int k, int h, int wi, const float* w, const float* dout,
                     long dout_cs, float* scratch, float* din) {
  const int wo = wi - k + 1, vpr = (wo + kVL - 1) / kVL;
  WB_ASSERT(
      conv_dgrad_rows_fits(k, wo) && h >= k,
      "conv_dgrad_rows: kernel size " + std::to_string(k) + ", rows of " + std::to_string(wo));
  dispatch<kWgradMaxK>(k, [&](auto k_c) {
    dispatch<kDgradMaxVPR>(vpr, [&](auto vpr_c) {
      constexpr int K = decltype(k_c)::value, VPR = decltype(vpr_c)::value;
      // Only tiles whose shifts stay within two vectors and whose accumulators fit the
      // registers exist (SSE: kVL 4, k <= 5).
      if constexpr (K - 1 <= kVL && (K + 1) * VPR + 1 <= kVRegs) {
        if constexpr (VPR == 1 && K - 1 + kVL / 2 <= kVL) {
          if (2 * wo == kVL) {
            dgrad_rowpair_k<K>(cout, cin, h, wi, w, dout, dout_cs, scratch, din);
            return;
          }
        }
        dgrad_rows_k<K, VPR>(cout, cin, h, wi, w, dout, dout_cs, scratch, din);
      }
    });
  });
}

void conv_wgrad_rows(int cout, int cin, int k, int h, int w, int nbatch, const float* dout,
                     long dout_bs, const float* in, long in_bs, float* dw, bool accumulate) {
  const int ho = h - k + 1, wo = w - k + 1;
  WB_ASSERT(ho >= 1 && wo >= 1,
            "conv_wgrad_rows: output rows of " + std::to_string(wo) + " floats");
  const int vpr = (wo + kVL - 1) / kVL, kk = k * k, kdim = cin * kk, pp = ho * vpr * kVL;
  // Padded output rows as wide as the input rows (the implicit GEMM's zero-padded planes:
  // lenet5_classic's conv1, 28 -> 32 wide) lie back to back in both: one row of ho * vpr
  // vectors, whatever vpr.
  const bool flat = w == vpr * kVL;
  if (k > kWgradMaxK || (!flat && vpr > kBcastRowNV)) {  // the tile would not fit the registers
    std::vector<int32_t> off(kdim);
    for (int c = 0; c < cin; ++c)
      for (int u = 0; u < k; ++u)
        for (int v = 0; v < k; ++v) off[c * kk + u * k + v] = (c * h + u) * w + v;
    gemm_dot(cout, kdim, nbatch, pp, dout, dout_bs, pp, in, in_bs, off.data(), 0, dw, kdim,
             accumulate, w, vpr);
    return;
  }
  dispatch<kWgradMaxK>(k, [&](auto k_c) {
    constexpr int K = decltype(k_c)::value;
    // Accumulators MR x K, MR A vectors and one B vector in the registers.
    constexpr int MR = std::max(1, std::min(4, (kVRegs - 1) / (K + 1)));
    // Samples in chunks whose output-gradient rows (MR channels) and one input plane fit
    // half of L1: the k tiles of a (c, u) pair, and the k pairs of a channel c, reread them.
    const size_t per_sample = sizeof(float) * (static_cast<size_t>(MR) * pp + h * w);
    const int chunk = std::max(1, static_cast<int>(kWgradRowsL1Budget / per_sample));
    for (int t0 = 0; t0 < nbatch; t0 += chunk) {
      const int nt = std::min(chunk, nbatch - t0);
      const bool acc_t = accumulate || t0 > 0;
      const float* a = dout + static_cast<long>(t0) * dout_bs;
      const float* b = in + static_cast<long>(t0) * in_bs;
      for (int o0 = 0; o0 < cout; o0 += MR) {
        const auto tiles = [&](auto mr_c) {
          constexpr int R = decltype(mr_c)::value;
          // Rows of vpr vectors w floats apart, or (flat) one row of ho * vpr vectors. Two
          // calls, not runtime-selected strides: those made GCC's code for lenet5's conv2
          // (one vector a row) 8% slower.
          const auto run = [&](auto vpr_c, int nrows, long stride) {
            for (int c = 0; c < cin; ++c)
              for (int u = 0; u < k; ++u)
                wgrad_tile<R, K, decltype(vpr_c)::value>(
                    nt, nrows, a + static_cast<long>(o0) * pp, dout_bs, pp,
                    b + static_cast<long>(c * h + u) * w, in_bs, stride,
                    dw + static_cast<long>(o0) * kdim + c * kk + u * k, kdim, acc_t);
          };
          if (flat)
            run(std::integral_constant<int, 1>{}, ho * vpr, kVL);
          else
            dispatch<kBcastRowNV>(vpr, [&](auto vpr_c) { run(vpr_c, ho, w); });
        };
        if (o0 + MR <= cout)
          tiles(std::integral_constant<int, MR>{});
        else
          dispatch<MR>(cout - o0, tiles);
      }
    }
  });
}

namespace {
// conv_forward_cvec's register tile: MR adjacent output positions of one row (their inputs
// adjacent too: one pointer, constant offsets) x NV vectors of output channels.
template <int MR, int NV>
inline void cvec_tile(int kdim, const float* in, const int32_t* koff, const float* wt, int ldw,
                      const float* bias, int cout, float* out, long out_cs) {
  vf acc[MR][NV];
#pragma GCC unroll 8
  for (int v = 0; v < NV; ++v) {
    const vf b = vload(bias + v * kVL);
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) acc[m][v] = b;
  }
  for (int k = 0; k < kdim; ++k) {
    const float* ik = in + koff[k];
    const float* wk = wt + static_cast<long>(k) * ldw;
    vf wv[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) wv[v] = in_register(vload(wk + v * kVL));
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) {
      const vf x = vsplat(ik[m]);
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[m][v] += x * wv[v];
    }
  }
  // Channel-major out: one scalar store per output (MR*NV*kVL stores per kdim*MR*NV FMAs).
#pragma GCC unroll 8
  for (int v = 0; v < NV; ++v)
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m)
      for (int l = 0; l < kVL && v * kVL + l < cout; ++l)
        out[(v * kVL + l) * out_cs + m] = acc[m][v][l];
}

// conv_forward_rowpair's register tile: NO output channels x one vector of positions (two
// output rows of kVL/2 columns). The accumulators and the input vector stay in registers
// (the outputs are stored as half vectors, not through an array: GCC spilled a tile read
// back through memcpy to the stack).
typedef float vh __attribute__((vector_size(kVL / 2 * sizeof(float))));
// Two half vectors as one, and back (one vinsertf32x8 / vextractf32x8 with AVX-512).
// Without __builtin_shufflevector (GCC < 12): through a small array, the same values.
template <size_t... I, size_t... J>
inline vf concat_halves(vh lo, vh hi, std::index_sequence<I...>, std::index_sequence<J...>) {
#ifdef WB_HAS_SHUFFLEVECTOR
  return __builtin_shufflevector(lo, hi, I..., (J + kVL / 2)...);
#else
  float t[kVL];
  std::memcpy(t, &lo, sizeof lo);
  std::memcpy(t + kVL / 2, &hi, sizeof hi);
  return vload(t);
#endif
}
template <size_t... I>
inline void store_halves(float* lo_at, float* hi_at, vf v, std::index_sequence<I...>) {
#ifdef WB_HAS_SHUFFLEVECTOR
  const vh lo = __builtin_shufflevector(v, v, I...), hi = __builtin_shufflevector(v, v, (I + kVL / 2)...);
  std::memcpy(lo_at, &lo, sizeof lo);
  std::memcpy(hi_at, &hi, sizeof hi);
#else
  float t[kVL];
  vstore(t, v);
  std::memcpy(lo_at, t, sizeof(vh));
  std::memcpy(hi_at, t + kVL / 2, sizeof(vh));
#endif
}
constexpr int kRowpairMaxNO = kVRegs - 4;

template <int NO>
inline void rowpair_tile(int kdim, const float* in, const int32_t* koff, int w, const float* wt,
                         int ldw, const float* bias, float* out, long out_cs, int ldo) {
  using Half = std::make_index_sequence<kVL / 2>;
  vf acc[NO];
#pragma GCC unroll 32
  for (int o = 0; o < NO; ++o) acc[o] = vsplat(bias[o]);
  for (int k = 0; k < kdim; ++k) {
    const float* p = in + koff[k];
    vh lo, hi;
    std::memcpy(&lo, p, sizeof lo);
    std::memcpy(&hi, p + w, sizeof hi);
    const vf x = concat_halves(lo, hi, Half{}, Half{});
    const float* wk = wt + static_cast<long>(k) * ldw;
#pragma GCC unroll 32
    for (int o = 0; o < NO; ++o) acc[o] += x * vsplat(wk[o]);
  }
#pragma GCC unroll 32
  for (int o = 0; o < NO; ++o) store_halves(out + o * out_cs, out + o * out_cs + ldo, acc[o], Half{});
}

// conv_wgrad_rowpair's register tile: MR output channels x the K taps v of one (c, u), each
// accumulator a vector of positions (two output rows of kVL/2 columns, as rowpair_tile's),
// summed over nt samples and npair row pairs; one horizontal sum per output at the end.
// dp: the chunk's packed output gradients [t][o][pair][kVL] at channel o0; in: the input
// plane of channel c from row u.
constexpr int kRowpairWgradMR = 4;
template <int MR, int K>
inline void wgrad_rowpair_tile(int nt, int npair, const float* in, long in_bs, int w, const float* dp,
                               long dp_bs, float* dw, int kdim, bool accumulate) {
  using Half = std::make_index_sequence<kVL / 2>;
  vf acc[MR][K];
  zero_tile(acc);
  for (int t = 0; t < nt; ++t) {
    const float* it = in + t * in_bs;
    const float* d = dp + t * dp_bs;
    for (int p = 0; p < npair; ++p) {
      vf dv[MR];
#pragma GCC unroll 8
      for (int m = 0; m < MR; ++m) dv[m] = in_register(vload(d + static_cast<long>(m * npair + p) * kVL));
      const float* r = it + 2 * p * w;
#pragma GCC unroll 8
      for (int v = 0; v < K; ++v) {
        vh lo, hi;
        std::memcpy(&lo, r + v, sizeof lo);
        std::memcpy(&hi, r + w + v, sizeof hi);
        const vf x = concat_halves(lo, hi, Half{}, Half{});
#pragma GCC unroll 8
        for (int m = 0; m < MR; ++m) acc[m][v] += x * dv[m];
      }
    }
  }
  store_tile_sums(acc, dw, kdim, accumulate);
}

// conv_wgrad_cvec's register tile: the K taps v of one (c, u) x NV vectors of output
// channels, summed over a chunk of samples and all positions.
template <int K, int NV>
inline void wgrad_cvec_tile(int nt, int ho, int wo, const float* in, long in_bs, int w,
                            const float* dt, long dt_bs, int ldd, float* dwt, bool accumulate) {
  vf acc[K][NV];
#pragma GCC unroll 8
  for (int v = 0; v < K; ++v)
#pragma GCC unroll 4
    for (int q = 0; q < NV; ++q) acc[v][q] = accumulate ? vload(dwt + v * ldd + q * kVL) : vf{};
  for (int t = 0; t < nt; ++t) {
    const float* it = in + t * in_bs;
    const float* d = dt + t * dt_bs;
    for (int i = 0; i < ho; ++i)
      for (int j = 0; j < wo; ++j, d += ldd) {
        vf dv[NV];
#pragma GCC unroll 4
        for (int q = 0; q < NV; ++q) dv[q] = in_register(vload(d + q * kVL));
        const float* x = it + i * w + j;
#pragma GCC unroll 8
        for (int v = 0; v < K; ++v) {
          const vf xv = vsplat(x[v]);
#pragma GCC unroll 4
          for (int q = 0; q < NV; ++q) acc[v][q] += xv * dv[q];
        }
      }
  }
#pragma GCC unroll 8
  for (int v = 0; v < K; ++v)
#pragma GCC unroll 4
    for (int q = 0; q < NV; ++q) vstore(dwt + v * ldd + q * kVL, acc[v][q]);
}
}  // namespace

bool conv_wgrad_cvec_fits(int k, int cout) {
  const int nv = static_cast<int>(round_up(std::max(cout, 1)) / kVL);
  return cout >= 1 && k >= 1 && k <= kWgradMaxK && nv <= kCvecMaxNV && (k + 1) * nv + 1 <= kVRegs;
}

size_t conv_wgrad_cvec_scratch(int cout, int cin, int k, int h, int w) {
  const size_t ldd = round_up(cout), ho = h - k + 1, wo = w - k + 1;
  return kCvecWgradChunk * ho * wo * ldd + static_cast<size_t>(cin) * k * k * ldd;
}

void conv_wgrad_cvec(int cout, int cin, int k, int h, int w, int nbatch, const float* dout,
                     long dout_bs, long dout_cs, int ldo, const float* in, long in_bs,
                     float* scratch, float* dw, bool accumulate) {
  WB_ASSERT(conv_wgrad_cvec_fits(k, cout) && h >= k && w >= k,
            "conv_wgrad_cvec: kernel size " + std::to_string(k) + ", " + std::to_string(cout) +
                " output channels");
  const int ho = h - k + 1, wo = w - k + 1, kk = k * k, kdim = cin * kk;
  const int ldd = static_cast<int>(round_up(cout)), nv = ldd / kVL;
  const long dt_bs = static_cast<long>(ho) * wo * ldd;
  float* dt = scratch;
  float* dwt = scratch + kCvecWgradChunk * dt_bs;
  dispatch<kWgradMaxK>(k, [&](auto k_c) {
    dispatch<kCvecMaxNV>(nv, [&](auto nv_c) {
      constexpr int K = decltype(k_c)::value, NV = decltype(nv_c)::value;
      if constexpr ((K + 1) * NV + 1 <= kVRegs) {
        for (int t0 = 0; t0 < nbatch; t0 += kCvecWgradChunk) {
          const int nt = std::min(kCvecWgradChunk, nbatch - t0);
          // The chunk's output gradients position-major: [t][i*wo + j][o] (lanes o >= cout
          // stay zero from the scratch's creation).
          // Stores in order, loads strided (strided stores, one cache line each, cost ~3x).
          for (int t = 0; t < nt; ++t) {
            const float* src = dout + (t0 + t) * dout_bs;
            float* dst = dt + t * dt_bs;
            for (int i = 0; i < ho; ++i)
              for (int j = 0; j < wo; ++j, dst += ldd)
                for (int o = 0; o < cout; ++o) dst[o] = src[o * dout_cs + i * ldo + j];
          }
          for (int c = 0; c < cin; ++c)
            for (int u = 0; u < K; ++u)
              wgrad_cvec_tile<K, NV>(nt, ho, wo, in + t0 * in_bs + static_cast<long>(c * h + u) * w,
                                     in_bs, w, dt, dt_bs, ldd,
                                     dwt + static_cast<long>((c * K + u) * K) * ldd, t0 > 0);
        }
      }
    });
  });
  for (int o = 0; o < cout; ++o)
    for (int q = 0; q < kdim; ++q) {
      float& out = dw[static_cast<long>(o) * kdim + q];
      out = (accumulate ? out : 0.0f) + dwt[static_cast<long>(q) * ldd + o];
    }
}

bool conv_wgrad_rowpair_fits(int h, int w, int k) {
  return k >= 1 && k <= kWgradMaxK && conv_forward_rowpair_fits(h, w, k);
}

size_t conv_wgrad_rowpair_scratch(int cout, int k, int h) {
  const size_t npair = static_cast<size_t>(h - k + 1) / 2;
  return static_cast<size_t>(kRowpairWgradChunk) * cout * npair * kVL;
}

void conv_wgrad_rowpair(int cout, int cin, int k, int h, int w, int nbatch, const float* dout,
                        long dout_bs, long dout_cs, int ldo, const float* in, long in_bs,
                        float* scratch, float* dw, bool accumulate) {
  WB_ASSERT(cout >= 1 && conv_wgrad_rowpair_fits(h, w, k),
            "conv_wgrad_rowpair: " + std::to_string(h) + "x" + std::to_string(w) + " k" +
                std::to_string(k) + " has no rows of half a vector in pairs");
  const int ho = h - k + 1, npair = ho / 2, kdim = cin * k * k;
  const long dp_bs = static_cast<long>(cout) * npair * kVL;
  dispatch<kWgradMaxK>(k, [&](auto k_c) {
    constexpr int K = decltype(k_c)::value;
    for (int t0 = 0; t0 < nbatch; t0 += kRowpairWgradChunk) {
      const int nt = std::min(kRowpairWgradChunk, nbatch - t0);
      // The chunk's output gradients as row-pair vectors [t][o][pair][kVL]: each is read by
      // all cin x k (c, u) tiles, the inputs' pairs by the channel tiles only.
      for (int t = 0; t < nt; ++t)
        for (int o = 0; o < cout; ++o)
          for (int p = 0; p < npair; ++p) {
            const float* src = dout + (t0 + t) * dout_bs + o * dout_cs + static_cast<long>(2 * p) * ldo;
            float* dst = scratch + t * dp_bs + static_cast<long>(o * npair + p) * kVL;
            // wo = kVL / 2 (conv_wgrad_rowpair_fits): copies of a constant size, inlined (a
            // libc call per half row cost ~2% of a lenet5 training step)
            std::memcpy(dst, src, sizeof(float) * (kVL / 2));
            std::memcpy(dst + kVL / 2, src + ldo, sizeof(float) * (kVL / 2));
          }
      const bool acc = accumulate || t0 > 0;
      for (int c = 0; c < cin; ++c)
        for (int u = 0; u < K; ++u)
          for (int o0 = 0; o0 < cout; o0 += kRowpairWgradMR) {
            const int mr = std::min(kRowpairWgradMR, cout - o0);
            dispatch<kRowpairWgradMR>(mr, [&](auto mr_c) {
              wgrad_rowpair_tile<decltype(mr_c)::value, K>(
                  nt, npair, in + t0 * in_bs + static_cast<long>(c * h + u) * w, in_bs, w,
                  scratch + static_cast<long>(o0) * npair * kVL, dp_bs,
                  dw + static_cast<long>(o0) * kdim + (c * K + u) * K, kdim, acc);
            });
          }
    }
  });
}

bool conv_forward_cvec_fits(int cout) {
  return cout >= 1 && round_up(cout) <= static_cast<size_t>(kCvecMaxNV) * kVL;
}

// The input offset of each tap (c, u, v) of an unpadded convolution over planes of h x w,
// (c*h + u)*w + v, on the stack for up to 1024 taps (no allocation per call).
class TapOffsets {
 public:
  TapOffsets(int cin, int k, int h, int w) {
    const int kk = k * k, kdim = cin * kk;
    if (kdim > kMaxQ) {
      heap_.resize(kdim);
      p_ = heap_.data();
    }
    for (int c = 0; c < cin; ++c)
      for (int u = 0; u < k; ++u)
        for (int v = 0; v < k; ++v) p_[c * kk + u * k + v] = (c * h + u) * w + v;
  }
  TapOffsets(const TapOffsets&) = delete;
  TapOffsets& operator=(const TapOffsets&) = delete;
  operator const int32_t*() const { return p_; }

 private:
  static constexpr int kMaxQ = 1024;
  int32_t stack_[kMaxQ];
  std::vector<int32_t> heap_;
  int32_t* p_ = stack_;
};

void conv_forward_cvec(int cout, int cin, int k, int h, int w, const float* in, const float* wt,
                       const float* bias, float* out, long out_cs, int ldo) {
  WB_ASSERT(conv_forward_cvec_fits(cout) && h >= k && w >= k,
            "conv_forward_cvec: " + std::to_string(cout) + " output channels");
  const int ho = h - k + 1, wo = w - k + 1, kdim = cin * k * k;
  const int ldw = static_cast<int>(round_up(cout)), nv = ldw / kVL;
  TapOffsets koff(cin, k, h, w);
  // Balanced position blocks per row: 10 -> 5 + 5 (tiles of at most (kVRegs - 1 - NV) / NV).
  dispatch<kCvecMaxNV>(nv, [&](auto nv_c) {
    constexpr int NV = decltype(nv_c)::value;
    constexpr int kMaxMR = std::min(8, (kVRegs - 1 - NV) / NV);
    const int nblk = (wo + kMaxMR - 1) / kMaxMR;
    for (int i = 0; i < ho; ++i)
      for (int blk = 0, j0 = 0; blk < nblk; ++blk) {
        const int mr = (wo - j0) / (nblk - blk);
        dispatch<kMaxMR>(mr, [&](auto mr_c) {
          cvec_tile<decltype(mr_c)::value, NV>(kdim, in + i * w + j0, koff, wt, ldw, bias, cout,
                                               out + static_cast<long>(i) * ldo + j0, out_cs);
        });
        j0 += mr;
      }
  });
}

bool conv_forward_rowpair_fits(int h, int w, int k) {
  const int ho = h - k + 1, wo = w - k + 1;
  return kVL >= 2 && ho >= 2 && ho % 2 == 0 && 2 * wo == kVL;
}

void conv_forward_rowpair(int cout, int cin, int k, int h, int w, const float* in, const float* wt,
                          const float* bias, float* out, long out_cs, int ldo) {
  WB_ASSERT(cout >= 1 && conv_forward_rowpair_fits(h, w, k),
            "conv_forward_rowpair: " + std::to_string(h) + "x" + std::to_string(w) + " k" +
                std::to_string(k) + " has no rows of half a vector in pairs");
  const int ho = h - k + 1, kdim = cin * k * k;
  const int ldw = static_cast<int>(round_up(cout));
  TapOffsets koff(cin, k, h, w);
  // Balanced channel tiles: 20 -> one tile of 20, 40 -> 20 + 20.
  const int ntile = (cout + kRowpairMaxNO - 1) / kRowpairMaxNO;
  for (int t = 0, o0 = 0; t < ntile; ++t) {
    const int no = (cout - o0) / (ntile - t);
    dispatch<kRowpairMaxNO>(no, [&](auto no_c) {
      for (int i = 0; i < ho; i += 2)
        rowpair_tile<decltype(no_c)::value>(kdim, in + i * w, koff, w, wt + o0, ldw, bias + o0,
                                            out + o0 * out_cs + static_cast<long>(i) * ldo, out_cs, ldo);
    });
    o0 += no;
  }
}

void gemm_bcast(int M, int N, int K, const float* a, long a_rs, long a_cs, const float* b,
                const int32_t* b_off, long ldb, float* c, long ldc, const float* bias,
                bool accumulate, long b_vs, int b_vpr) {
  // b_vs < b_vpr * kVL: rows overlap (conv output rows padded to whole vectors read past
  // the input row; the extra columns are junk).
  WB_ASSERT(b_vpr >= 1 && b_vs >= 1, "gemm_bcast: bad B vector layout");
  const BVecs bv{b_vs, b_vpr};
  WB_ASSERT(N % kVL == 0,
            "gemm_bcast: N=" + std::to_string(N) + " not a multiple of the vector length");
  if (b_off)
    bcast_impl(M, N, K, a, a_rs, a_cs, b, OffsetRows{b_off}, bv, c, ldc, bias, accumulate);
  else
    bcast_impl(M, N, K, a, a_rs, a_cs, b, StridedRows{ldb}, bv, c, ldc, bias, accumulate);
}

void gemm_dot(int M, int N, int nbatch, int K, const float* a, long a_bs, long a_rs, const float* b,
              long b_bs, const int32_t* b_off, long ldb, float* c, long ldc, bool accumulate,
              long b_vs, int b_vpr) {
  WB_ASSERT(b_vpr >= 1 && (K / kVL) % b_vpr == 0, "gemm_dot: bad B vector layout");
  const BVecs bv{b_vs, b_vpr};
  WB_ASSERT(K % kVL == 0,
            "gemm_dot: K=" + std::to_string(K) + " not a multiple of the vector length");
  if (b_off)
    dot_impl(M, N, nbatch, K, a, a_bs, a_rs, b, b_bs, OffsetRows{b_off}, bv, c, ldc, accumulate);
  else
    dot_impl(M, N, nbatch, K, a, a_bs, a_rs, b, b_bs, StridedRows{ldb}, bv, c, ldc, accumulate);
}

Buffer::Buffer(size_t n) : n_(n) {
  if (n == 0) return;
  const size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
  float* p = static_cast<float*>(std::aligned_alloc(64, bytes));
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, bytes);
  p_.reset(p);
}

}  // namespace fast

using fast::kVL;
using fast::round_up;

// Padded rowvec rows: at most this many times the real output columns. At 2.0, with AVX-512
// (kVL 16), lenet5's conv2 (8 wide -> 16) takes the padded rowvec stage (forward and weight
// gradient over channel vectors, conv_dgrad_rows) instead of im2col. bench_lenet on a Zen 5
// in alternating runs: training 0.399-0.418 of the FMA peak against 0.381-0.400 with 1.6, evaluation
// 0.481-0.490 against 0.542-0.558 (conv_forward_cvec is slower than im2col + gemm_bcast there,
// but the training pass gains more than that); lenet_sweep.json at -n 2: 61.6 s against
// 64.9 s. AVX2 and SSE builds take no other path (lenet5's rows are whole vectors there;
// lenet5_classic's conv2, 10 -> 16 or 12, is within 1.6). Its forward and data gradient put
// two rows in a vector (conv_forward_rowpair, dgrad_rowpair_k): training 0.48-0.50,
// evaluation 0.59-0.61, lenet_sweep.json 53.6 s.
constexpr double kRowvecMaxPad = 2.0;

FastNet::FastNet(const NetInfo& net) : net_(net) {
  const auto& L = net_.layers;
  in0_ = L.at(0).in_size();
  size_t l = 0;
  while (l < L.size()) {
    const LayerInfo& li = L[l];
    Stage st;
    st.layer = static_cast<int>(l);
    ++l;
    auto take = [&](LayerKind k) {
      if (l < L.size() && L[l].spec.kind == k) {
        ++l;
        return true;
      }
      return false;
    };
    if (li.spec.kind == LayerKind::kConv) {
      st.conv = true;
      st.cs = li.conv();
      // Post-ops in any order, each at most once: they commute (see layers_fast.h).
      for (bool more = true; more;) {
        more = false;
        if (!st.pool && take(LayerKind::kMaxPool2)) st.pool = more = true;
        if (!st.relu && take(LayerKind::kRelu)) st.relu = more = true;
        if (st.drop_layer < 0 && l < L.size() && L[l].spec.kind == LayerKind::kDropout2d) {
          st.drop_layer = static_cast<int>(l);
          st.drop_p = L[l].spec.p;
          ++l;
          more = true;
        }
      }
      const ConvShape& cs = st.cs;
      const int ho = cs.ho(), wo = cs.wo();
      st.hp = cs.h + 2 * cs.pad;
      st.wp = cs.w + 2 * cs.pad;
      // Output rows of whole vectors read from the input planes when the register tiles
      // allow (no copy, no junk); else implicit GEMM when the junk columns cost at most
      // 25% extra work.
      // Rows that are not whole vectors are padded to whole vectors (junk columns, like the
      // implicit GEMM's) when the input has slack for the reads past its last row (not the
      // caller's batch: stage 0) and the junk is cheaper than im2col: lenet5_classic's conv2
      // (10 wide -> 16 with AVX2), whose 150 x 104 column matrix per sample (8 MB at batch
      // 128) cost more to write and stream back for the weight gradient than 60% junk FMAs.
      const int wo_p = static_cast<int>(round_up(wo));
      const bool rowvec = cs.pad == 0 && wo_p / kVL <= fast::kBcastRowNV &&
                          (wo == wo_p || (!stages_.empty() && wo_p <= kRowvecMaxPad * wo));
      // The first stage cannot read past its rows (the caller's batch has no slack), so rows
      // that are not whole vectors cannot be padded to them (rowvec). Instead of the implicit
      // GEMM's junk columns (lenet5's conv1 with AVX-512 or SSE: 24 of 28 columns real, its
      // forward and weight gradient doing 16.7% more FMAs than the real columns need) it
      // copies each input plane k times, copy v shifted left by v columns and cut to wo: B row
      // (c, u, v) is then copy (c, v) from row u on, the output positions p = i*wo + j dense.
      // The copies cost k times the input (13 KB a sample for lenet5) against 9,000 vector
      // FMAs a sample in conv1's forward alone.
      st.vshift = stages_.empty() && cs.pad == 0 && !rowvec && wo < cs.w;
      st.implicit =
          !rowvec && !st.vshift && static_cast<double>(ho) * st.wp <= 1.25 * ho * wo;
      const int kk = cs.k * cs.k;
      st.boff.resize(cs.kdim());
      if (st.vshift) {
        st.wrow = wo;
        st.pp = static_cast<int>(round_up(static_cast<size_t>(ho) * wo));
        const int copy = cs.h * wo;  // one shifted plane
        for (int c = 0; c < cs.cin; ++c)
          for (int u = 0; u < cs.k; ++u)
            for (int v = 0; v < cs.k; ++v)
              st.boff[c * kk + u * cs.k + v] = (c * cs.k + v) * copy + u * wo;
        // B rows read pp floats (up to pp - ho*wo past the last copy: slack, zero).
        st.in_stride = round_up(std::max<size_t>(static_cast<size_t>(st.boff.back()) + st.pp,
                                                 static_cast<size_t>(cs.cin) * cs.k * copy));
      } else if (st.implicit) {
        st.wrow = st.wp;
        st.pp = static_cast<int>(round_up(static_cast<size_t>(ho) * st.wp));
        for (int c = 0; c < cs.cin; ++c)
          for (int u = 0; u < cs.k; ++u)
            for (int v = 0; v < cs.k; ++v)
              st.boff[c * kk + u * cs.k + v] = c * st.hp * st.wp + u * st.wp + v;
        // The last B row reads pp floats from its offset: slack after the planes.
        st.in_stride = round_up(std::max<size_t>(static_cast<size_t>(st.boff.back()) + st.pp,
                                                 static_cast<size_t>(cs.cin) * st.hp * st.wp));
        // Padded rows of whole vectors: the padded planes are an unpadded convolution's
        // input for conv_wgrad_rows (its rows read past a plane into the slack above).
        st.wgrad_rows = st.wp == wo_p && cs.k <= fast::kWgradMaxK;
      } else if (rowvec) {
        st.rowvec = st.wgrad_rows = true;
        st.vpr = wo_p / kVL;
        // Junk columns but channels of whole vectors (or fewer lanes lost to their padding):
        // the forward runs over channel vectors instead (lenet5_classic's conv2: 100 x 16
        // lanes a channel tile instead of 160 x 16).
        st.fwd_cvec =
            wo != wo_p && fast::conv_forward_cvec_fits(cs.cout) &&
            static_cast<size_t>(wo) * round_up(cs.cout) < static_cast<size_t>(wo_p) * cs.cout;
        st.wgrad_cvec = st.fwd_cvec && fast::conv_wgrad_cvec_fits(cs.k, cs.cout);
        // Rows of exactly half a vector: the forward fills every lane with two rows instead.
        st.fwd_rowpair = st.fwd_cvec && fast::conv_forward_rowpair_fits(cs.h, cs.w, cs.k);
        st.wgrad_rowpair = st.fwd_rowpair && fast::conv_wgrad_rowpair_fits(cs.h, cs.w, cs.k);
        st.dgrad_rows = fast::conv_dgrad_rows_fits(cs.k, wo);
        st.wrow = wo_p;
        st.pp = ho * wo_p;
        for (int c = 0; c < cs.cin; ++c)
          for (int u = 0; u < cs.k; ++u)
            for (int v = 0; v < cs.k; ++v)
              st.boff[c * kk + u * cs.k + v] = (c * cs.h + u) * cs.w + v;
        st.in_stride = 0;  // no B buffer: the GEMMs read the input planes
      } else {
        st.wrow = wo;
        st.pp = static_cast<int>(round_up(static_cast<size_t>(ho) * wo));
        for (int k = 0; k < cs.kdim(); ++k) st.boff[k] = k * st.pp;
        st.in_stride = static_cast<size_t>(cs.kdim()) * st.pp;
      }
      st.oc = cs.cout;
      st.oh = st.pool ? ho / 2 : ho;
      st.ow = st.pool ? wo / 2 : wo;
      st.act_stride = round_up(static_cast<size_t>(st.oc) * st.oh * st.ow);
      WB_ASSERT(stages_.empty() || stages_.back().conv,
                "fast path: a convolution after a linear layer is not supported");
    } else if (li.spec.kind == LayerKind::kLinear) {
      st.in = li.c;
      st.out = li.spec.out;
      st.in_p = static_cast<int>(round_up(st.in));
      st.out_p = static_cast<int>(round_up(st.out));
      for (bool more = true; more;) {
        more = false;
        if (!st.relu && take(LayerKind::kRelu)) st.relu = more = true;
        if (st.drop_layer < 0 && l < L.size() && L[l].spec.kind == LayerKind::kDropout) {
          st.drop_layer = static_cast<int>(l);
          st.drop_p = L[l].spec.p;
          ++l;
          more = true;
        }
      }
      st.oc = st.out, st.oh = 1, st.ow = 1;
      st.act_stride = st.out_p;
      WB_ASSERT(stages_.empty() || stages_.back().act_stride == static_cast<size_t>(st.in_p),
                "fast path: linear input stride mismatch");
    } else {
      WB_ASSERT(false, "fast path: layer " + std::to_string(l - 1) + " of " + net_.spec.name +
                           " must follow a conv or linear layer");
    }
    stages_.push_back(std::move(st));
  }
  const Stage& last = stages_.back();
  WB_ASSERT(!last.conv && !last.relu && last.drop_layer < 0,
            "fast path: the network must end with a plain Linear layer (the logits)");
}

namespace {
// A conv stage's data-gradient scratch: the zero-padded output gradient of conv_dgrad_rows,
// else one sample's column gradient with kVL floats of slack on both sides (col2im).
size_t dcol_floats(const FastNet::Stage& st) {
  if (st.dgrad_rows)
    return fast::conv_dgrad_rows_scratch(st.cs.cout, st.cs.k, st.cs.ho(), st.cs.wo());
  return static_cast<size_t>(st.cs.kdim()) * st.pp + 2 * kVL;
}
// conv_forward_cvec's W^T (kdim rows of cout rounded up to whole vectors) and the bias as
// one more such row.
size_t cvec_pack_floats(const FastNet::Stage& st) {
  return (static_cast<size_t>(st.cs.kdim()) + 1) * round_up(st.cs.cout);
}
size_t wgrad_scratch_floats(const FastNet::Stage& st) {
  if (st.wgrad_rowpair) return fast::conv_wgrad_rowpair_scratch(st.cs.cout, st.cs.k, st.cs.h);
  return fast::conv_wgrad_cvec_scratch(st.cs.cout, st.cs.cin, st.cs.k, st.cs.h, st.cs.w);
}
}  // namespace

std::unique_ptr<FastWorkspace> FastNet::make_workspace(int max_batch) const {
  WB_ASSERT(max_batch >= 1, "make_workspace: max_batch must be >= 1");
  auto ws = std::make_unique<FastWorkspace>();
  ws->owner = this;
  ws->max_batch = max_batch;
  const size_t B = static_cast<size_t>(max_batch);
  ws->bufs.resize(stages_.size());
  for (size_t s = 0; s < stages_.size(); ++s) {
    const Stage& st = stages_[s];
    auto& b = ws->bufs[s];
    // Slack: the vectorized pooling reads (and zero-writes) up to a few vectors past
    // a row, plane or the last sample (conv_post_forward / conv_post_backward).
    const size_t slack = 4 * kVL + 2 * static_cast<size_t>(st.wrow) +
                         2 * kVL * ((static_cast<size_t>(st.ow) + kVL - 1) / kVL);
    b.act = fast::Buffer(B * st.act_stride + slack);
    b.dact = fast::Buffer(B * st.act_stride + slack);
    if (st.drop_layer >= 0) b.keep.resize(B * (st.conv ? st.oc : st.out));
    if (st.conv) {
      const size_t plane = static_cast<size_t>(st.cs.cout) * st.pp;
      if (!st.rowvec) b.in = fast::Buffer(B * st.in_stride + 2 * kVL + 8);  // im2col store spill
      // One sample's conv output: the pooling consumes it right after its GEMM and the
      // backward never reads it, so it stays in L1 (a batch of them streamed ~1.5 MB
      // through L2 at batch 64 for lenet5's conv1).
      b.out = fast::Buffer(plane + slack);
      b.dout = fast::Buffer(B * plane + slack);
      b.dbias.assign(st.cs.cout, 0.0);
      if (st.pool) b.idx.resize(B * st.oc * st.oh * st.ow + slack);
      if (s > 0) {
        b.dcol = fast::Buffer(dcol_floats(st));
        if (st.implicit) b.dpad = fast::Buffer(st.in_stride);
      }
      if (st.fwd_cvec) b.wpack = fast::Buffer(cvec_pack_floats(st));
      if (st.wgrad_cvec || st.wgrad_rowpair) b.dwpack = fast::Buffer(wgrad_scratch_floats(st));
    } else {
      if (s == 0 && in0_ != static_cast<size_t>(st.in_p)) b.in = fast::Buffer(B * st.in_p);
      b.wpack = fast::Buffer(static_cast<size_t>(st.out) * st.in_p);
      b.dwpack = fast::Buffer(static_cast<size_t>(st.out) * st.in_p);
    }
  }
  return ws;
}

size_t FastNet::workspace_bytes(int max_batch) const {
  // The sizes make_workspace allocates, term by term.
  const size_t B = static_cast<size_t>(std::max(1, max_batch));
  size_t floats = 0, other = 0;
  for (size_t s = 0; s < stages_.size(); ++s) {
    const Stage& st = stages_[s];
    const size_t slack = 4 * kVL + 2 * static_cast<size_t>(st.wrow) +
                         2 * kVL * ((static_cast<size_t>(st.ow) + kVL - 1) / kVL);
    floats += 2 * (B * st.act_stride + slack);
    if (st.drop_layer >= 0) other += B * static_cast<size_t>(st.conv ? st.oc : st.out);
    if (st.conv) {
      const size_t plane = static_cast<size_t>(st.cs.cout) * st.pp;
      floats += (st.rowvec ? 0 : B * st.in_stride + 2 * kVL + 8) + (plane + slack) +
                (B * plane + slack);
      other += sizeof(double) * static_cast<size_t>(st.cs.cout);
      if (st.pool) other += sizeof(int32_t) * (B * st.oc * st.oh * st.ow + slack);
      if (s > 0) {
        floats += dcol_floats(st);
        if (st.implicit) floats += st.in_stride;
      }
      if (st.fwd_cvec) floats += cvec_pack_floats(st);
      if (st.wgrad_cvec || st.wgrad_rowpair) floats += wgrad_scratch_floats(st);
    } else {
      if (s == 0 && in0_ != static_cast<size_t>(st.in_p)) floats += B * st.in_p;
      floats += 2 * static_cast<size_t>(st.out) * st.in_p;
    }
  }
  return sizeof(float) * floats + other;
}

size_t FastWorkspace::bytes() const {
  size_t b = 0;
  for (const auto& s : bufs) {
    b +=
        sizeof(float) * (s.in.size() + s.out.size() + s.dout.size() + s.act.size() + s.dact.size() +
                         s.dcol.size() + s.dpad.size() + s.wpack.size() + s.dwpack.size());
    b += sizeof(int32_t) * s.idx.size() + s.keep.size() + sizeof(double) * s.dbias.size();
  }
  return b;
}

namespace {

// Input sample -> B rows of a conv stage (padded plane copy, or im2col). Positions that
// stay zero (padding, slack, out-of-image taps) were zeroed at workspace creation and
// are never written, so nothing is cleared per step.
// in_slack: `in` may be read up to kVL floats past the sample (a stage's activation
// buffer has slack; the caller's batch does not).
void conv_gather(const FastNet::Stage& st, const float* in, bool in_slack, float* brows) {
  using namespace fast;
  const ConvShape& cs = st.cs;
  if (st.vshift) {  // copy (c, v): rows of plane c from column v, wo columns
    const int wo = cs.wo();
    for (int c = 0; c < cs.cin; ++c)
      for (int v = 0; v < cs.k; ++v) {
        const float* src = in + static_cast<size_t>(c) * cs.h * cs.w + v;
        float* dst = brows + static_cast<size_t>(c * cs.k + v) * cs.h * wo;
        if (wo < kVL) {
          for (int y = 0; y < cs.h; ++y)
            std::memcpy(dst + y * wo, src + y * cs.w, sizeof(float) * wo);
          continue;
        }
        // Whole vectors inside the source row (v + wo <= w: nothing read past the sample);
        // the last one overlaps the one before when wo is not a multiple of kVL.
        for (int y = 0; y < cs.h; ++y) {
          const float* s = src + y * cs.w;
          float* d = dst + y * wo;
          int j = 0;
          for (; j + kVL <= wo; j += kVL) vstore(d + j, vload(s + j));
          if (j < wo) vstore(d + wo - kVL, vload(s + wo - kVL));
        }
      }
    return;
  }
  if (st.implicit) {
    for (int c = 0; c < cs.cin; ++c)
      for (int y = 0; y < cs.h; ++y)
        std::memcpy(brows + static_cast<size_t>(c) * st.hp * st.wp + (y + cs.pad) * st.wp + cs.pad,
                    in + (static_cast<size_t>(c) * cs.h + y) * cs.w, sizeof(float) * cs.w);
    return;
  }
  const int ho = cs.ho(), wo = cs.wo();
  if (cs.pad == 0 && in_slack) {
    // Whole vectors: each store may spill up to kVL-1 floats past its output row, into
    // the next row (written next: rows go in order), the zero-tap-free padding of this
    // B row (junk columns: any finite value is fine) or the workspace slack.
    for (int c = 0; c < cs.cin; ++c)
      for (int u = 0; u < cs.k; ++u)
        for (int v = 0; v < cs.k; ++v) {
          float* row = brows + static_cast<size_t>((c * cs.k + u) * cs.k + v) * st.pp;
          const float* src = in + (static_cast<size_t>(c) * cs.h + u) * cs.w + v;
          if (wo <= 8) {
            for (int i = 0; i < ho; ++i) copy8(row + i * wo, src + i * cs.w);
          } else {
            for (int i = 0; i < ho; ++i)
              for (int j = 0; j < wo; j += kVL) vstore(row + i * wo + j, vload(src + i * cs.w + j));
          }
        }
    return;
  }
  for (int c = 0; c < cs.cin; ++c)
    for (int u = 0; u < cs.k; ++u)
      for (int v = 0; v < cs.k; ++v) {
        float* row = brows + static_cast<size_t>((c * cs.k + u) * cs.k + v) * st.pp;
        const int j0 = std::max(0, cs.pad - v), j1 = std::min(wo, cs.w + cs.pad - v);
        if (j1 <= j0) continue;
        for (int i = 0; i < ho; ++i) {
          const int yi = i + u - cs.pad;
          if (yi < 0 || yi >= cs.h) continue;
          const float* src = in + (static_cast<size_t>(c) * cs.h + yi) * cs.w + (v - cs.pad);
          float* dst = row + i * wo;
          for (int j = j0; j < j1; ++j) dst[j] = src[j];
        }
      }
}

// col2im for input channels [c0, c1): dcol holds their B-row gradients (row
// (c - c0)*k*k + u*k + v). Called per channel right after its GEMM so the column
// gradient (k*k rows) stays in L1.
//
// Kernel sizes up to kWgradMaxK and rows of up to kCol2imChunks vectors take col2im_k: the
// taps unrolled, one accumulator per kernel row u (a single chain of k*k dependent adds was
// latency-bound: 3 cycles a tap), channels and rows outermost so that a row's last vector
// may be stored whole, spilling into the next row (written after it).
constexpr int kCol2imChunks = 4;
template <int K>
void col2im_k(const FastNet::Stage& st, const float* dcol, int c0, int c1, float* din) {
  using namespace fast;
  const ConvShape& cs = st.cs;
  const int ho = cs.ho(), wo = cs.wo(), nch = (cs.w + kVL - 1) / kVL;
  const long dense = static_cast<long>(cs.cin) * cs.h * cs.w;
  const Perms& P = perms();
  vi mask[kCol2imChunks][K];
  for (int ch = 0; ch < nch; ++ch)
    for (int v = 0; v < K; ++v) {
      const vi j = ch * kVL + cs.pad - v + P.lane;
      mask[ch][v] = (j >= 0) & (j < wo) & (ch * kVL + P.lane < cs.w);
    }
  for (int c = c0; c < c1; ++c)
    for (int y = 0; y < cs.h; ++y)
      for (int ch = 0; ch < nch; ++ch) {
        const int x0 = ch * kVL;
        vf acc[K];
#pragma GCC unroll 8
        for (int u = 0; u < K; ++u) {
          acc[u] = vf{};
          const int i = y + cs.pad - u;
          if (i < 0 || i >= ho) continue;
          const float* rows = dcol + static_cast<size_t>(((c - c0) * K + u) * K) * st.pp +
                              i * st.wrow + x0 + cs.pad;
#pragma GCC unroll 8
          for (int v = 0; v < K; ++v) {
            const vf t = vload(rows + static_cast<size_t>(v) * st.pp - v);
            acc[u] += mask[ch][v] ? t : vf{};
          }
        }
#pragma GCC unroll 8
        for (int u = 1; u < K; ++u) acc[0] += acc[u];
        const long at = (static_cast<long>(c) * cs.h + y) * cs.w + x0;
        float* dst = din + at;
        if (x0 + kVL <= cs.w || at + kVL <= dense) {
          vstore(dst, acc[0]);
        } else {
          for (int x = 0; x < kVL && x0 + x < cs.w; ++x) dst[x] = acc[0][x];
        }
      }
}

void conv_col2im(const FastNet::Stage& st, const float* dcol, int c0, int c1, float* din) {
  const ConvShape& cs = st.cs;
  if (cs.k <= fast::kWgradMaxK && cs.w <= kCol2imChunks * fast::kVL) {
    fast::dispatch<fast::kWgradMaxK>(cs.k, [&](auto k_c) {
      col2im_k<decltype(k_c)::value>(st, dcol, c0, c1, din);
    });
    return;
  }
  // col2im as a gather: each input row is summed in registers from the (u, v) shifted
  // column rows, din[c][y][x] = sum_{u,v} dcol[(c,u,v)][(y+pad-u)*wo + x+pad-v] over the
  // valid taps (lane masks per v). A scatter-add (din[..] += dcol[..] per tap) instead
  // read-modify-writes overlapping, misaligned vectors and stalls on store forwarding.
  // dcol has kVL floats of slack before and after (reads of masked-out lanes).
  using namespace fast;
  const int ho = cs.ho(), wo = cs.wo();
  WB_ASSERT(cs.k <= 32, "fast path: conv kernel larger than 32");
  const Perms& P = perms();
  const bool one_chunk = cs.w <= kVL;
  for (int x0 = 0; x0 < cs.w; x0 += kVL) {
    vi mask[32];
    for (int v = 0; v < cs.k; ++v) {
      const vi j = x0 + cs.pad - v + P.lane;
      mask[v] = (j >= 0) & (j < wo) & (x0 + P.lane < cs.w);
    }
    for (int c = c0; c < c1; ++c)
      for (int y = 0; y < cs.h; ++y) {
        vf acc{};
        for (int u = 0; u < cs.k; ++u) {
          const int i = y + cs.pad - u;
          if (i < 0 || i >= ho) continue;
          const float* rows = dcol + static_cast<size_t>(((c - c0) * cs.k + u) * cs.k) * st.pp +
                              i * st.wrow + x0 + cs.pad;
          for (int v = 0; v < cs.k; ++v) {
            const vf t = vload(rows + static_cast<size_t>(v) * st.pp - v);
            acc += mask[v] ? t : vf{};
          }
        }
        float* dst = din + (static_cast<size_t>(c) * cs.h + y) * cs.w + x0;
        if (one_chunk) {
          vstore(dst, acc);  // spills into the next row / channel / sample: written after
        } else {
          for (int x = 0; x < kVL && x0 + x < cs.w; ++x) dst[x] = acc[x];
        }
      }
  }
}

// Gradient of the B rows (one sample, dcol = W^T dout) -> gradient of the dense input.
void conv_scatter(const FastNet::Stage& st, const float* dcol, float* dpad, float* din) {
  const ConvShape& cs = st.cs;
  const int kd = cs.kdim();
  if (st.implicit) {
    std::memset(din, 0, sizeof(float) * cs.cin * cs.h * cs.w);
    std::memset(dpad, 0, sizeof(float) * st.in_stride);
    for (int k = 0; k < kd; ++k) {
      float* dst = dpad + st.boff[k];
      const float* src = dcol + static_cast<size_t>(k) * st.pp;
      for (int p = 0; p < st.pp; p += kVL)
        for (int i = 0; i < kVL; ++i) dst[p + i] += src[p + i];
    }
    for (int c = 0; c < cs.cin; ++c)
      for (int y = 0; y < cs.h; ++y)
        std::memcpy(din + (static_cast<size_t>(c) * cs.h + y) * cs.w,
                    dpad + static_cast<size_t>(c) * st.hp * st.wp + (y + cs.pad) * st.wp + cs.pad,
                    sizeof(float) * cs.w);
    return;
  }
  conv_col2im(st, dcol, 0, cs.cin, din);
}

// Pooling of conv outputs whose rows are half a vector at a stride of one vector (lenet5's
// conv2 with AVX-512: 8 real columns of 16) in groups of four pooled rows: 4 x kVL/4 pooled
// values are one whole vector. The pass per pooled row used a quarter of its lanes (4 of
// 16); the groups made a lenet5 training step at batch 32 ~3% faster (bench_lenet, AVX-512).
// Layout of one group g (pooled rows 4g .. 4g + 3): conv rows 8g + 2k (top) and 8g + 2k + 1
// (bottom) of pooled row 4g + k, lane l of a result = pooled row k = l / (kVL/4), column
// j = l % (kVL/4) (the true order: the dense act layout, no scramble).
bool pool_quad(const FastNet::Stage& st) {
  return st.pool && st.wrow == fast::kVL && 4 * st.ow == fast::kVL && st.oh % 4 == 0;
}
namespace quad {
using fast::kVL;
constexpr int Q = kVL / 4, H = kVL / 2;
struct EvenOddIdx {  // (ra, rb) -> even columns of ra, of rb, then odd columns of ra, of rb
  static constexpr int at(size_t i) {
    const int l = static_cast<int>(i) % H, odd = static_cast<int>(i) / H;
    return (l < Q ? 2 * l : kVL + 2 * (l - Q)) + odd;
  }
};
struct LowHalvesIdx {  // lanes 0 .. H-1 of a, then of b
  static constexpr int at(size_t i) { return i < H ? static_cast<int>(i) : kVL + static_cast<int>(i) - H; }
};
struct HighHalvesIdx {  // lanes H .. kVL-1 of a, then of b
  static constexpr int at(size_t i) { return LowHalvesIdx::at(i) + H; }
};
template <int K>
struct RowIdx {  // (e0, e1) -> conv row of pooled row K: column x = 2j + e from e_e[K Q + j]
  static constexpr int at(size_t i) {
    return i < H ? (i % 2 ? kVL : 0) + K * Q + static_cast<int>(i) / 2 : 0;
  }
};
// The windows' left (even) and right (odd) columns of the conv rows o, o + 2 wr, o + 4 wr,
// o + 6 wr: lanes k Q .. k Q + Q - 1 hold row o + 2k wr.
inline void even_odd(const float* o, int wr, fast::vf& even, fast::vf& odd) {
  using namespace fast;
  const vf a01 = permute2<EvenOddIdx>(vload(o), vload(o + 2 * wr), Lanes{});
  const vf a23 = permute2<EvenOddIdx>(vload(o + 4 * wr), vload(o + 6 * wr), Lanes{});
  even = permute2<LowHalvesIdx>(a01, a23, Lanes{});
  odd = permute2<HighHalvesIdx>(a01, a23, Lanes{});
}
}  // namespace quad

// Fused max-pool / dropout2d scale / ReLU on one sample's conv output.
// Vectorized over kVL output columns and branch-free: on real data the argmax is
// unpredictable, and a mispredicted branch per window cost more than the convolution.
// Tie-breaking = PyTorch's row-major `val > maxval` scan (the first maximum wins): pairs
// are compared within each row first, then the two rows, which keeps that order.
// Reads run past the row end (junk lanes, never stored); the buffers have slack for it.
void conv_post_forward(const FastNet::Stage& st, const float* out, float* act, int32_t* idx,
                       const uint8_t* keep) {
  using namespace fast;
  const float keep_scale = static_cast<float>(1.0 / (1.0 - st.drop_p));
  const int plane = st.oh * st.ow, wr = st.wrow, ow = st.ow, dense = st.oc * plane;
  const bool relu = st.relu, quad = pool_quad(st);
  const Perms& P = perms();
  for (int c = 0; c < st.oc; ++c) {
    const float s = keep ? (keep[c] ? keep_scale : 0.0f) : 1.0f;
    const float* o = out + static_cast<size_t>(c) * st.pp;
    float* a = act + c * plane;
    if (!st.pool) {
      for (int i = 0; i < st.oh; ++i)
        for (int j = 0; j < ow; ++j) {
          const float v = o[i * wr + j] * s;
          a[i * ow + j] = relu ? (v > 0.0f ? v : 0.0f) : v;
        }
      continue;
    }
    int32_t* ix = idx + c * plane;
    if (quad) {
      // Same comparisons in the same order as the rows below (tie-breaking, NaN), four pooled
      // rows a vector.
      const vi q = (P.lane / quad::Q) * (2 * wr) + (P.lane % quad::Q) * 2;  // top-left corner
      for (int g = 0; g < st.oh / 4; ++g) {
        const float* og = o + 8 * g * wr;
        vf x0, x1, y0, y1;
        quad::even_odd(og, wr, x0, x1);
        quad::even_odd(og + wr, wr, y0, y1);
        const vi c0 = x1 > x0, c1 = y1 > y0;
        const vf h0 = c0 ? x1 : x0, h1 = c1 ? y1 : y0;
        const vi cv = h1 > h0;
        vf m = (cv ? h1 : h0) * s;
        if (relu) m = m > vf{} ? m : vf{};
        const vi off = cv ? wr - c1 : -c0;
        vstore(a + 4 * g * ow, m);
        vstore_i(ix + 4 * g * ow, q + 8 * g * wr + off);
      }
      continue;
    }
    for (int i = 0; i < st.oh; ++i) {
      const float* r0 = o + 2 * i * wr;
      const float* r1 = r0 + wr;
      const int q0 = 2 * i * wr;
      for (int j0 = 0; j0 < ow; j0 += kVL) {
        const vf a0 = vload(r0 + 2 * j0), a1 = vload(r0 + 2 * j0 + kVL);
        const vf b0 = vload(r1 + 2 * j0), b1 = vload(r1 + 2 * j0 + kVL);
        // Scrambled column order (scr_col), undone on m and at below.
        const vf x0 = permute2<ScrEvenIdx>(a0, a1, Lanes{}), x1 = permute2<ScrOddIdx>(a0, a1, Lanes{});
        const vf y0 = permute2<ScrEvenIdx>(b0, b1, Lanes{}), y1 = permute2<ScrOddIdx>(b0, b1, Lanes{});
        const vi c0 = x1 > x0, c1 = y1 > y0;  // -1 where the right column wins
        const vf h0 = c0 ? x1 : x0, h1 = c1 ? y1 : y0;
        const vi cv = h1 > h0;  // -1 where the lower row wins
        vf m = (cv ? h1 : h0) * s;
        if (relu) m = m > vf{} ? m : vf{};
        const vi off = cv ? wr - c1 : -c0;  // 0, 1, wr or wr + 1
        const vi at = permute1<UnscrambleIdx>(q0 + 2 * (j0 + P.scr_col) + off);
        m = permute1<UnscrambleIdx>(m);
        // A whole-vector store may run past the row into the next row or channel (written
        // after this one); only the sample's last stores, which would run past its dense
        // output, go lane by lane. (Lane by lane everywhere cost conv2 of lenet5, 4 wide,
        // about as much as its pooling work.)
        if (j0 + kVL <= ow || c * plane + i * ow + j0 + kVL <= dense) {
          vstore(a + i * ow + j0, m);
          vstore_i(ix + i * ow + j0, at);
        } else {
          for (int j = j0; j < ow; ++j) {
            a[i * ow + j] = m[j - j0];
            ix[i * ow + j] = at[j - j0];
          }
        }
      }
    }
  }
}

// Backward of conv_post_forward: dact -> dout, db += sums. Every 2x2 window is written
// whole (value at the argmax, zeros elsewhere), so dout needs no clearing. The stores run
// up to 2 kVL floats from a row start: lanes past the row are zero, and what they spill
// into (the next row, plane or sample) is written after, or is junk/slack that must be
// zero anyway.
void conv_post_backward(const FastNet::Stage& st, const float* act, const float* dact,
                        const int32_t* idx, const uint8_t* keep, float* dout, double* db) {
  using namespace fast;
  const float keep_scale = static_cast<float>(1.0 / (1.0 - st.drop_p));
  const int plane = st.oh * st.ow, wr = st.wrow, ow = st.ow;
  const bool relu = st.relu, quad = pool_quad(st);
  const Perms& P = perms();
  for (int c = 0; c < st.oc; ++c) {
    const float s = keep ? (keep[c] ? keep_scale : 0.0f) : 1.0f;
    const float* a = act + c * plane;
    const float* da = dact + c * plane;
    float* d = dout + static_cast<size_t>(c) * st.pp;
    if (!st.pool) {
      float bsum = 0.0f;
      for (int i = 0; i < st.oh; ++i)
        for (int j = 0; j < ow; ++j) {
          const int k = i * ow + j;
          const float gk = (relu && !(a[k] > 0.0f)) ? 0.0f : da[k] * s;
          d[i * wr + j] = gk;
          bsum += gk;
        }
      db[c] += bsum;
      continue;
    }
    const int32_t* ix = idx + c * plane;
    vf bsum{};
    if (quad) {
      // conv_post_forward's groups of four pooled rows: each conv row a whole-vector store
      // (its columns past the real half zero), every row of the plane written.
      const vi q = (P.lane / quad::Q) * (2 * wr) + (P.lane % quad::Q) * 2;
      const vi real = P.lane < quad::H;
      for (int g = 0; g < st.oh / 4; ++g) {
        const int k0 = 4 * g * ow;
        vi live = ~vi{};  // all lanes
        if (relu) live = vload(a + k0) > vf{};
        const vf gk = live ? vload(da + k0) * s : vf{};
        bsum += gk;
        const vi off = vload_i(ix + k0) - (q + 8 * g * wr);
        const vf e0 = off == 0 ? gk : vf{}, e1 = off == 1 ? gk : vf{};
        const vf f0 = off == wr ? gk : vf{}, f1 = off == wr + 1 ? gk : vf{};
        float* dg = d + 8 * g * wr;
        [&]<size_t... K>(std::index_sequence<K...>) {
          ((vstore(dg + 2 * K * wr, real ? permute2<quad::RowIdx<K>>(e0, e1, Lanes{}) : vf{}),
            vstore(dg + (2 * K + 1) * wr, real ? permute2<quad::RowIdx<K>>(f0, f1, Lanes{}) : vf{})),
           ...);
        }(std::make_index_sequence<4>{});
      }
      db[c] += hsum(bsum);
      continue;
    }
    // Rows wider than one vector: the upper row's last stores spill into the lower row,
    // so the lower row is written after the whole upper one. Rows of up to kRowChunks
    // vectors keep their gradients and offsets in registers for that; wider rows compute
    // them again in a second pass.
    constexpr int kRowChunks = 4;
    const int nch = (ow + kVL - 1) / kVL;
    if (nch == 1) {
      // One vector a row (lenet5's conv1, 12 pooled columns): the loop below with its
      // arrays in registers, the upper row's stores before the lower row's.
      const vi in_row = P.lane < ow;
      for (int i = 0; i < st.oh; ++i) {
        const int q0 = 2 * i * wr, k0 = i * ow;
        vi live = in_row;
        if (relu) live &= vload(a + k0) > vf{};
        const vf g0 = live ? vload(da + k0) * s : vf{};
        bsum += g0;
        const vf gk = permute1<ScrambleIdx>(g0);
        const vi off = permute1<ScrambleIdx>(vload_i(ix + k0) - (q0 + 2 * P.lane));
        const vf e0 = off == 0 ? gk : vf{}, e1 = off == 1 ? gk : vf{};
        vstore(d + q0, permute2<UnpackLoIdx>(e0, e1, Lanes{}));
        vstore(d + q0 + kVL, permute2<UnpackHiIdx>(e0, e1, Lanes{}));
        const vf f0 = off == wr ? gk : vf{}, f1 = off == wr + 1 ? gk : vf{};
        vstore(d + q0 + wr, permute2<UnpackLoIdx>(f0, f1, Lanes{}));
        vstore(d + q0 + wr + kVL, permute2<UnpackHiIdx>(f0, f1, Lanes{}));
      }
      db[c] += hsum(bsum);
      continue;
    }
    const int passes = nch <= kRowChunks ? 1 : 2;
    vf gks[kRowChunks];
    vi offs[kRowChunks];
    for (int i = 0; i < st.oh; ++i) {
      const int q0 = 2 * i * wr;
      for (int pass = 0; pass < passes; ++pass) {
        for (int ch = 0, j0 = 0; ch < nch; ++ch, j0 += kVL) {
          const int k0 = i * ow + j0;
          vi live = P.lane < (ow - j0);
          if (relu) live &= vload(a + k0) > vf{};
          const vf g0 = live ? vload(da + k0) * s : vf{};
          if (pass == 0) bsum += g0;
          // Scrambled (scr_col) order, so that the in-lane unpacks write columns in order.
          const vf gk = permute1<ScrambleIdx>(g0);
          const vi off = permute1<ScrambleIdx>(vload_i(ix + k0) - (q0 + 2 * (j0 + P.lane)));
          if (pass == 0) {
            const vf e0 = off == 0 ? gk : vf{}, e1 = off == 1 ? gk : vf{};
            vstore(d + q0 + 2 * j0, permute2<UnpackLoIdx>(e0, e1, Lanes{}));
            vstore(d + q0 + 2 * j0 + kVL, permute2<UnpackHiIdx>(e0, e1, Lanes{}));
          }
          if (passes == 1) {
            gks[ch] = gk, offs[ch] = off;
          } else if (pass == 1) {
            const vf f0 = off == wr ? gk : vf{}, f1 = off == wr + 1 ? gk : vf{};
            vstore(d + q0 + wr + 2 * j0, permute2<UnpackLoIdx>(f0, f1, Lanes{}));
            vstore(d + q0 + wr + 2 * j0 + kVL, permute2<UnpackHiIdx>(f0, f1, Lanes{}));
          }
        }
      }
      if (passes == 1)
        for (int ch = 0, j0 = 0; ch < nch; ++ch, j0 += kVL) {
          const vf gk = gks[ch];
          const vi off = offs[ch];
          const vf f0 = off == wr ? gk : vf{}, f1 = off == wr + 1 ? gk : vf{};
          vstore(d + q0 + wr + 2 * j0, permute2<UnpackLoIdx>(f0, f1, Lanes{}));
          vstore(d + q0 + wr + 2 * j0 + kVL, permute2<UnpackHiIdx>(f0, f1, Lanes{}));
        }
    }
    db[c] += hsum(bsum);
  }
}

// A linear layer's weights as rows of in_p floats: the parameters themselves when in is a
// multiple of the vector length (lenet5's fc1: 64 KB a step not copied), else the packed
// copy in wpack, made when `pack` (the forward pass; the backward reuses it).
const float* linear_weights(const FastNet::Stage& st, FastWorkspace::StageBufs& b,
                            const float* w, bool pack) {
  if (st.in == st.in_p) return w;
  if (pack)
    for (int j = 0; j < st.out; ++j)
      std::memcpy(b.wpack.data() + static_cast<size_t>(j) * st.in_p,
                  w + static_cast<size_t>(j) * st.in, sizeof(float) * st.in);
  return b.wpack.data();
}

}  // namespace

void FastNet::forward(const float* w, const float* x, int n, bool train, uint64_t noise_seed,
                      FastWorkspace& ws) const {
  const float* in = x;
  size_t in_stride = in0_;
  for (size_t s = 0; s < stages_.size(); ++s) {
    const Stage& st = stages_[s];
    auto& b = ws.bufs[s];
    const LayerInfo& li = net_.layers[st.layer];
    const bool drop = train && st.drop_layer >= 0;
    if (drop)
      dropout_mask(noise_seed, st.drop_layer, static_cast<size_t>(n) * st.oc, st.drop_p,
                   b.keep.data());
    if (st.conv) {
      const ConvShape& cs = st.cs;
      const int ldw = static_cast<int>(round_up(cs.cout)), kdim = cs.kdim();
      if (st.fwd_cvec) {  // W^T and the bias, once per pass
        float* wt = b.wpack.data();
        for (int o = 0; o < cs.cout; ++o) {
          for (int k = 0; k < kdim; ++k)
            wt[static_cast<size_t>(k) * ldw + o] = w[li.w_off + o * kdim + k];
          wt[static_cast<size_t>(kdim) * ldw + o] = w[li.b_off + o];
        }
      }
      for (int i = 0; i < n; ++i) {
        const float* brows = in + i * in_stride;
        if (!st.rowvec) {
          float* rows = b.in.data() + i * st.in_stride;
          conv_gather(st, in + i * in_stride, s > 0, rows);
          brows = rows;
        }
        float* out = b.out.data();
        if (st.fwd_rowpair)
          fast::conv_forward_rowpair(cs.cout, cs.cin, cs.k, cs.h, cs.w, brows, b.wpack.data(),
                                     b.wpack.data() + static_cast<size_t>(kdim) * ldw, out, st.pp,
                                     st.wrow);
        else if (st.fwd_cvec)
          fast::conv_forward_cvec(cs.cout, cs.cin, cs.k, cs.h, cs.w, brows, b.wpack.data(),
                                  b.wpack.data() + static_cast<size_t>(kdim) * ldw, out, st.pp,
                                  st.wrow);
        else
          fast::gemm_bcast(cs.cout, st.pp, kdim, w + li.w_off, kdim, 1, brows, st.boff.data(), 0,
                           out, st.pp, w + li.b_off, false, st.rowvec ? cs.w : kVL,
                           st.rowvec ? st.vpr : 1);
        conv_post_forward(
            st, out, b.act.data() + i * st.act_stride,
            st.pool ? b.idx.data() + static_cast<size_t>(i) * st.oc * st.oh * st.ow : nullptr,
            drop ? b.keep.data() + static_cast<size_t>(i) * st.oc : nullptr);
      }
    } else {
      if (in_stride != static_cast<size_t>(st.in_p)) {  // first stage, unpadded input
        for (int i = 0; i < n; ++i)
          std::memcpy(b.in.data() + static_cast<size_t>(i) * st.in_p, in + i * in_stride,
                      sizeof(float) * st.in);
        in = b.in.data();
        in_stride = st.in_p;
      }
      const float* wp = linear_weights(st, b, w + li.w_off, true);
      float* act = b.act.data();
      fast::gemm_dot(n, st.out, 1, st.in_p, in, 0, st.in_p, wp, 0, nullptr, st.in_p, act, st.out_p,
                     false);
      const float* bias = w + li.b_off;
      const float keep_scale = static_cast<float>(1.0 / (1.0 - st.drop_p));
      const fast::vf vscale = fast::vsplat(keep_scale), zero{};
      for (int i = 0; i < n; ++i) {
        float* a = act + static_cast<size_t>(i) * st.out_p;
        const uint8_t* keep = drop ? b.keep.data() + static_cast<size_t>(i) * st.out : nullptr;
        // Whole vectors of the real columns, then the rest one by one: the same operations
        // per element (bit for bit), and nothing read or written past column out.
        int j = 0;
        for (; j + kVL <= st.out; j += kVL) {
          fast::vf v = fast::vload(a + j) + fast::vload(bias + j);
          if (st.relu) v = v > zero ? v : zero;
          if (keep) v = fast::keep_mask(keep + j) ? v * vscale : zero;
          fast::vstore(a + j, v);
        }
        for (; j < st.out; ++j) {
          float v = a[j] + bias[j];
          if (st.relu && !(v > 0.0f)) v = 0.0f;
          if (keep) v = keep[j] ? v * keep_scale : 0.0f;
          a[j] = v;
        }
      }
    }
    in = b.act.data();
    in_stride = st.act_stride;
  }
}

double FastNet::loss_grad(const float* w, const float* x, const int32_t* label, int n, float* g,
                          FastWorkspace& ws, uint64_t noise_seed, int first_stage) const {
  if (ws.owner != this)
    throw InternalError("loss_grad: the workspace was made for another network");
  if (n < 1 || n > ws.max_batch)
    throw InternalError("loss_grad: batch of " + std::to_string(n) +
                        " samples does not fit the workspace made for max_batch " +
                        std::to_string(ws.max_batch));
  forward(w, x, n, true, noise_seed, ws);

  // log_softmax + NLL (mean): d logits = (softmax - onehot) / n.
  const Stage& last = stages_.back();
  const int classes = last.out;
  double loss = 0;
  {
    auto& b = ws.bufs.back();
    const float inv_n = 1.0f / static_cast<float>(n);
    for (int i = 0; i < n; ++i) {
      const float* z = b.act.data() + static_cast<size_t>(i) * last.out_p;
      float* dz = b.dact.data() + static_cast<size_t>(i) * last.out_p;
      WB_ASSERT(label[i] >= 0 && label[i] < classes, "label out of range");
      float zmax = z[0];
      for (int c = 1; c < classes; ++c) zmax = std::max(zmax, z[c]);
      float sum = 0;
      for (int c = 0; c < classes; ++c) sum += std::exp(z[c] - zmax);
      const float lse = zmax + std::log(sum);
      loss += static_cast<double>(lse - z[label[i]]);
      for (int c = 0; c < classes; ++c)
        dz[c] = (std::exp(z[c] - lse) - (c == label[i] ? 1.0f : 0.0f)) * inv_n;
    }
  }

  const size_t stop = static_cast<size_t>(std::max(0, first_stage));
  for (size_t s = stages_.size(); s-- > stop;) {
    const Stage& st = stages_[s];
    auto& b = ws.bufs[s];
    const LayerInfo& li = net_.layers[st.layer];
    const bool need_dx = s > stop;
    const float* in = s > 0 ? ws.bufs[s - 1].act.data() : (b.in.size() ? b.in.data() : x);
    float* din = s > 0 ? ws.bufs[s - 1].dact.data() : nullptr;
    const bool drop = st.drop_layer >= 0;
    if (st.conv) {
      const ConvShape& cs = st.cs;
      const size_t plane = static_cast<size_t>(cs.cout) * st.pp;
      double* db = b.dbias.data();
      std::fill(b.dbias.begin(), b.dbias.end(), 0.0);
      const auto post_backward = [&](int i, float* dout_i) {
        conv_post_backward(
            st, b.act.data() + i * st.act_stride, b.dact.data() + i * st.act_stride,
            st.pool ? b.idx.data() + static_cast<size_t>(i) * st.oc * st.oh * st.ow : nullptr,
            drop ? b.keep.data() + static_cast<size_t>(i) * st.oc : nullptr, dout_i, db);
      };
      // dW[o][k] = sum_i sum_p dout_i[o][p] * B_i[k][p]
      const float* brows = b.in.data();
      long brows_stride = static_cast<long>(st.in_stride);
      if (st.rowvec) {
        brows = s > 0 ? ws.bufs[s - 1].act.data() : x;
        brows_stride = static_cast<long>(s > 0 ? stages_[s - 1].act_stride : in0_);
      }
      // conv_wgrad_rows' input planes: the input itself (rowvec) or the padded copy.
      const int wh = st.rowvec ? cs.h : st.hp, ww = st.rowvec ? cs.w : st.wp;
      if (st.wgrad_rows && !st.wgrad_cvec && !st.wgrad_rowpair && !need_dx) {
        // The output gradient feeds only this weight gradient: made and used a few samples
        // at a time at the start of dout, it stays in L1/L2 (lenet5's conv1: 23 KB a
        // sample, 1.5 MB through L3 at batch 64 when made for the whole batch first).
        constexpr int kChunk = 4;
        for (int i0 = 0; i0 < n; i0 += kChunk) {
          const int m = std::min(kChunk, n - i0);
          for (int i = i0; i < i0 + m; ++i) post_backward(i, b.dout.data() + (i - i0) * plane);
          fast::conv_wgrad_rows(cs.cout, cs.cin, cs.k, wh, ww, m, b.dout.data(),
                                static_cast<long>(plane), brows + i0 * brows_stride, brows_stride,
                                g + li.w_off, i0 > 0);
        }
      } else {
        for (int i = 0; i < n; ++i) post_backward(i, b.dout.data() + i * plane);
        if (st.wgrad_rowpair)
          fast::conv_wgrad_rowpair(cs.cout, cs.cin, cs.k, cs.h, cs.w, n, b.dout.data(),
                                   static_cast<long>(plane), st.pp, st.wrow, brows, brows_stride,
                                   b.dwpack.data(), g + li.w_off, false);
        else if (st.wgrad_cvec)
          fast::conv_wgrad_cvec(cs.cout, cs.cin, cs.k, cs.h, cs.w, n, b.dout.data(),
                                static_cast<long>(plane), st.pp, st.wrow, brows, brows_stride,
                                b.dwpack.data(), g + li.w_off, false);
        else if (st.wgrad_rows)
          fast::conv_wgrad_rows(cs.cout, cs.cin, cs.k, wh, ww, n, b.dout.data(),
                                static_cast<long>(plane), brows, brows_stride, g + li.w_off, false);
        else
          fast::gemm_dot(cs.cout, cs.kdim(), n, st.pp, b.dout.data(), static_cast<long>(plane),
                         st.pp, brows, brows_stride, st.boff.data(), 0, g + li.w_off, cs.kdim(),
                         false);
      }
      for (int o = 0; o < cs.cout; ++o) g[li.b_off + o] = static_cast<float>(db[o]);
      if (need_dx) {
        const size_t prev_stride = stages_[s - 1].act_stride;
        for (int i = 0; i < n; ++i) {
          // dcol[k][p] = sum_o W[o][k] dout_i[o][p]
          if (st.dgrad_rows) {
            fast::conv_dgrad_rows(cs.cout, cs.cin, cs.k, cs.h, cs.w, w + li.w_off,
                                  b.dout.data() + i * plane, st.pp, b.dcol.data(),
                                  din + i * prev_stride);
            continue;
          }
          float* dcol = b.dcol.data() + kVL;  // kVL floats of slack on both sides
          if (st.implicit) {
            fast::gemm_bcast(cs.kdim(), st.pp, cs.cout, w + li.w_off, 1, cs.kdim(),
                             b.dout.data() + i * plane, nullptr, st.pp, dcol, st.pp, nullptr,
                             false);
            conv_scatter(st, dcol, b.dpad.data(), din + i * prev_stride);
          } else {
            const int kk = cs.k * cs.k;  // one input channel at a time, in L1
            for (int c = 0; c < cs.cin; ++c) {
              fast::gemm_bcast(kk, st.pp, cs.cout, w + li.w_off + c * kk, 1, cs.kdim(),
                               b.dout.data() + i * plane, nullptr, st.pp, dcol, st.pp, nullptr,
                               false);
              conv_col2im(st, dcol, c, c + 1, din + i * prev_stride);
            }
          }
        }
      }
    } else {
      float* d = b.dact.data();
      const float* act = b.act.data();
      const float keep_scale = static_cast<float>(1.0 / (1.0 - st.drop_p));
      for (int j = 0; j < st.out; ++j) g[li.b_off + j] = 0.0f;
      const fast::vf vscale = fast::vsplat(keep_scale), zero{};
      for (int i = 0; i < n; ++i) {
        const uint8_t* keep = drop ? b.keep.data() + static_cast<size_t>(i) * st.out : nullptr;
        float* di = d + static_cast<size_t>(i) * st.out_p;
        const float* ai = act + static_cast<size_t>(i) * st.out_p;
        // As the forward: whole vectors, then one by one; the bias gradient still adds the
        // samples in order, per element.
        int j = 0;
        for (; j + kVL <= st.out; j += kVL) {
          fast::vf v = fast::vload(di + j);
          if (st.relu) v = fast::vload(ai + j) > zero ? v : zero;
          if (keep) v = fast::keep_mask(keep + j) ? v * vscale : zero;
          fast::vstore(di + j, v);
          fast::vstore(g + li.b_off + j, fast::vload(g + li.b_off + j) + v);
        }
        for (; j < st.out; ++j) {
          float v = di[j];
          if (st.relu && !(ai[j] > 0.0f)) v = 0.0f;
          if (keep) v = keep[j] ? v * keep_scale : 0.0f;
          di[j] = v;
          g[li.b_off + j] += v;
        }
      }
      // dW[j][:] = sum_i d[i][j] * in_i[:]
      // Rows already of whole vectors (in == in_p): straight into g, no packed copy.
      const bool packed = st.in != st.in_p;
      fast::gemm_bcast(st.out, st.in_p, n, d, 1, st.out_p, in, nullptr, st.in_p,
                       packed ? b.dwpack.data() : g + li.w_off, st.in_p, nullptr, false);
      if (packed)
        for (int j = 0; j < st.out; ++j)
          std::memcpy(g + li.w_off + static_cast<size_t>(j) * st.in,
                      b.dwpack.data() + static_cast<size_t>(j) * st.in_p, sizeof(float) * st.in);
      if (need_dx)  // din[i][:] = sum_j d[i][j] * W[j][:]
        fast::gemm_bcast(n, st.in_p, st.out, d, st.out_p, 1, linear_weights(st, b, w + li.w_off, false),
                         nullptr, st.in_p, din, st.in_p, nullptr, false);
    }
  }
  return loss / n;
}

EvalResult FastNet::evaluate(const float* w, const float* x, const int32_t* label, int n,
                             FastWorkspace& ws) const {
  if (ws.owner != this) throw InternalError("evaluate: the workspace was made for another network");
  EvalResult r;
  r.has_accuracy = true;
  const Stage& last = stages_.back();
  const int classes = last.out;
  for (int i0 = 0; i0 < n; i0 += ws.max_batch) {
    const int m = std::min(ws.max_batch, n - i0);
    forward(w, x + static_cast<size_t>(i0) * in0_, m, false, 0, ws);
    const float* logits = ws.bufs.back().act.data();
    for (int i = 0; i < m; ++i) {
      const float* z = logits + static_cast<size_t>(i) * last.out_p;
      const int32_t y = label[i0 + i];
      WB_ASSERT(y >= 0 && y < classes, "label out of range");
      int arg = 0;
      for (int c = 1; c < classes; ++c)
        if (z[c] > z[arg]) arg = c;
      double sum = 0;
      for (int c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(z[c]) - z[arg]);
      r.loss_sum += z[arg] + std::log(sum) - z[y];
      r.correct += arg == y ? 1 : 0;
    }
    r.count += m;
  }
  return r;
}

}  // namespace wb::models
