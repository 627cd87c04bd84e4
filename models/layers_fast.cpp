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
#include "models/layers_fast_simd.h"

namespace wb::models {
namespace fast {
namespace {

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
// gemm_dot: bytes of A rows per sample chunk. Its tiles read A at ~26 B a cycle, which L2
// serves, while every chunk pays each tile's zeroing and horizontal sums again: at 16 KB
// (half of a 32 KB L1) lenet5's conv1 weight gradient (27 KB of A a sample) ran one sample
// a chunk; two a chunk made a training step 1-2% faster at batch 8-64 (Zen 5, 48 KB L1).
constexpr size_t kDotL1Budget = 64 * 1024;
// conv_wgrad_rows: bytes of a sample chunk's rows (half of a 32 KB L1 data cache).
constexpr size_t kWgradRowsL1Budget = 16 * 1024;

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

}  // namespace wb::models
