#include "models/resnet_fast.h"

#include <algorithm>
#include <cstring>

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif

namespace wb::models::fast {

namespace {

// One SIMD vector of floats: AVX-512 (16 lanes), AVX2 + FMA (8), or a scalar fallback. The
// FMAs are explicit: the build's -std=c++20 (not gnu++20) leaves GCC's fp-contract off, so
// a * b + c would not fuse.
#if defined(__AVX512F__)
using V = __m512;
constexpr int kW = 16;
inline V vload(const float* p) { return _mm512_loadu_ps(p); }
inline void vstore(float* p, V v) { _mm512_storeu_ps(p, v); }
inline V vzero() { return _mm512_setzero_ps(); }
inline V vset1(float x) { return _mm512_set1_ps(x); }
inline V vfma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
#elif defined(__AVX2__) && defined(__FMA__)
using V = __m256;
constexpr int kW = 8;
inline V vload(const float* p) { return _mm256_loadu_ps(p); }
inline void vstore(float* p, V v) { _mm256_storeu_ps(p, v); }
inline V vzero() { return _mm256_setzero_ps(); }
inline V vset1(float x) { return _mm256_set1_ps(x); }
inline V vfma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
#else
using V = float;
constexpr int kW = 1;
inline V vload(const float* p) { return *p; }
inline void vstore(float* p, V v) { *p = v; }
inline V vzero() { return 0.f; }
inline V vset1(float x) { return x; }
inline V vfma(V a, V b, V c) { return a * b + c; }
#endif

// C[MR x NV*kW] (+)= A[MR x K] B[K x NV*kW]: MR * NV accumulators in registers.
template <int MR, int NV>
inline void kernel_nn(int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                      bool acc) {
  V c[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) c[r][v] = acc ? vload(C + r * ldc + v * kW) : vzero();
  for (int k = 0; k < K; ++k) {
    V b[NV];
    for (int v = 0; v < NV; ++v) b[v] = vload(B + static_cast<size_t>(k) * ldb + v * kW);
    for (int r = 0; r < MR; ++r) {
      const V a = vset1(A[r * lda + k]);
      for (int v = 0; v < NV; ++v) c[r][v] = vfma(a, b[v], c[r][v]);
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) vstore(C + r * ldc + v * kW, c[r][v]);
}

template <int NV>
inline void rows_nn(int M, int K, const float* A, int lda, const float* B, int ldb, float* C,
                    int ldc, bool acc) {
  int r = 0;
  for (; r + 8 <= M; r += 8)
    kernel_nn<8, NV>(K, A + r * lda, lda, B, ldb, C + static_cast<size_t>(r) * ldc, ldc, acc);
  for (; r < M; ++r)
    kernel_nn<1, NV>(K, A + r * lda, lda, B, ldb, C + static_cast<size_t>(r) * ldc, ldc, acc);
}

// Implicit GEMM panel: C[MR x NV kW] = A[MR x K] B, B[k][q] = xb[offs[k] + q].
template <int MR, int NV>
inline void kernel_implicit(int K, const float* A, int lda, const float* xb, const int* offs,
                            float* C, int ldc) {
  V c[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) c[r][v] = vzero();
  for (int k = 0; k < K; ++k) {
    const float* bp = xb + offs[k];
    V b[NV];
    for (int v = 0; v < NV; ++v) b[v] = vload(bp + v * kW);
    for (int r = 0; r < MR; ++r) {
      const V a = vset1(A[r * lda + k]);
      for (int v = 0; v < NV; ++v) c[r][v] = vfma(a, b[v], c[r][v]);
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) vstore(C + r * ldc + v * kW, c[r][v]);
}

template <int NV>
void implicit_rows(const ConvGeom& g, const float* w, const float* xp, const int* offs, float* y) {
  const int K = g.kdim(), wo = g.wo(), P = g.ho() * wo, wp = g.w + 2;
  for (int i = 0; i < g.ho(); ++i)
    for (int j0 = 0; j0 < wo; j0 += NV * kW) {
      const float* xb = xp + i * wp + j0;
      float* yb = y + i * wo + j0;
      int r = 0;
      for (; r + 8 <= g.cout; r += 8)
        kernel_implicit<8, NV>(K, w + r * K, K, xb, offs, yb + static_cast<size_t>(r) * P, P);
      for (; r < g.cout; ++r)
        kernel_implicit<1, NV>(K, w + r * K, K, xb, offs, yb + static_cast<size_t>(r) * P, P);
    }
}

}  // namespace

void gemm_nn(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C,
             int ldc, bool accumulate) {
  int p = 0;
  // Column panels of 2 vectors: the panel of B (K x 2 kW) stays in L1/L2 while the row
  // blocks of A sweep over it.
  for (; p + 2 * kW <= N; p += 2 * kW) rows_nn<2>(M, K, A, lda, B + p, ldb, C + p, ldc, accumulate);
  for (; p + kW <= N; p += kW) rows_nn<1>(M, K, A, lda, B + p, ldb, C + p, ldc, accumulate);
  for (; p < N; ++p)
    for (int r = 0; r < M; ++r) {
      float t = accumulate ? C[static_cast<size_t>(r) * ldc + p] : 0.f;
      for (int k = 0; k < K; ++k) t += A[r * lda + k] * B[static_cast<size_t>(k) * ldb + p];
      C[static_cast<size_t>(r) * ldc + p] = t;
    }
}

namespace {

// col[k = (c, u, v)][p = (i, j)] = x[c][i s + u - pad][j s + v - pad] (0 outside).
void im2col(const ConvGeom& g, const float* x, float* col, int ld) {
  const int ho = g.ho(), wo = g.wo();
  for (int c = 0; c < g.cin; ++c)
    for (int u = 0; u < g.k; ++u)
      for (int v = 0; v < g.k; ++v) {
        float* row = col + static_cast<size_t>((c * g.k + u) * g.k + v) * ld;
        const float* xc = x + static_cast<size_t>(c) * g.h * g.w;
        for (int i = 0; i < ho; ++i) {
          float* out = row + i * wo;
          const int yi = i * g.stride + u - g.pad;
          if (yi < 0 || yi >= g.h) {
            std::fill(out, out + wo, 0.f);
            continue;
          }
          const float* xr = xc + yi * g.w;
          if (g.stride == 1) {
            // j + v - pad in [0, w): j in [pad - v, w + pad - v)
            const int j0 = std::max(0, g.pad - v), j1 = std::min(wo, g.w + g.pad - v);
            const float* src = xr + v - g.pad;  // src[j] = x[yi][j + v - pad]
            for (int j = 0; j < j0; ++j) out[j] = 0.f;
            for (int j = j0; j < j1; ++j) out[j] = src[j];
            for (int j = std::max(j0, j1); j < wo; ++j) out[j] = 0.f;
          } else {
            for (int j = 0; j < wo; ++j) {
              const int xj = j * g.stride + v - g.pad;
              out[j] = (xj < 0 || xj >= g.w) ? 0.f : xr[xj];
            }
          }
        }
      }
}

// dx[c][yi][xj] += dcol[k][p] over the same index map (dx OVERWRITTEN first).
void col2im(const ConvGeom& g, const float* dcol, float* dx, int ld) {
  const int ho = g.ho(), wo = g.wo();
  std::fill(dx, dx + g.in_size(), 0.f);
  for (int c = 0; c < g.cin; ++c)
    for (int u = 0; u < g.k; ++u)
      for (int v = 0; v < g.k; ++v) {
        const float* row = dcol + static_cast<size_t>((c * g.k + u) * g.k + v) * ld;
        float* xc = dx + static_cast<size_t>(c) * g.h * g.w;
        for (int i = 0; i < ho; ++i) {
          const int yi = i * g.stride + u - g.pad;
          if (yi < 0 || yi >= g.h) continue;
          float* xr = xc + yi * g.w;
          const float* in = row + i * wo;
          if (g.stride == 1) {
            const int j0 = std::max(0, g.pad - v), j1 = std::min(wo, g.w + g.pad - v);
            float* dst = xr + v - g.pad;
            for (int j = j0; j < j1; ++j) dst[j] += in[j];
          } else {
            for (int j = 0; j < wo; ++j) {
              const int xj = j * g.stride + v - g.pad;
              if (xj >= 0 && xj < g.w) xr[xj] += in[j];
            }
          }
        }
      }
}

// Grow-only scratch: resizing a vector up within its capacity still zero-fills the new tail
// (the layers' col sizes differ, so every layer would memset its whole col buffer).
// The row stride of the col buffers: P plus 16 floats when P is a multiple of 256 floats
// (1 KB), so that the K rows a GEMM panel reads do not all map to the same L1 sets (a
// 32x32 map's rows are 4 KB apart: 144 of them alias into the 12 ways of one set).
int col_ld(int P) { return P % 256 == 0 ? P + 16 : P; }

float* grow(std::vector<float>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

}  // namespace

void conv_forward(const ConvGeom& g, int n, const float* x, const float* w, const float* b,
                  float* y, ConvScratch& s) {
  const int K = g.kdim(), P = g.ho() * g.wo();
  if (g.stride == 1 && g.k == 3 && g.pad == 1 && kW > 1 && g.wo() % kW == 0) {
    const int hp = g.h + 2, wp = g.w + 2;
    float* xp = grow(s.xpad, static_cast<size_t>(g.cin) * hp * wp);
    std::fill(xp, xp + static_cast<size_t>(g.cin) * hp * wp, 0.f);  // the border stays 0
    if (s.offs.size() < static_cast<size_t>(K)) s.offs.resize(static_cast<size_t>(K));
    for (int c = 0; c < g.cin; ++c)
      for (int u = 0; u < 3; ++u)
        for (int v = 0; v < 3; ++v) s.offs[(c * 3 + u) * 3 + v] = (c * hp + u) * wp + v;
    for (int smp = 0; smp < n; ++smp) {
      const float* xs = x + smp * g.in_size();
      for (int c = 0; c < g.cin; ++c)
        for (int i = 0; i < g.h; ++i)
          std::memcpy(xp + (static_cast<size_t>(c) * hp + i + 1) * wp + 1,
                      xs + (static_cast<size_t>(c) * g.h + i) * g.w, sizeof(float) * g.w);
      float* ys = y + smp * g.out_size();
      if (g.wo() % (2 * kW) == 0)
        implicit_rows<2>(g, w, xp, s.offs.data(), ys);
      else
        implicit_rows<1>(g, w, xp, s.offs.data(), ys);
      if (b)
        for (int o = 0; o < g.cout; ++o)
          for (int p = 0; p < P; ++p) ys[static_cast<size_t>(o) * P + p] += b[o];
    }
    return;
  }
  const int ld = col_ld(P);
  float* col = grow(s.col, static_cast<size_t>(K) * ld);
  for (int smp = 0; smp < n; ++smp) {
    im2col(g, x + smp * g.in_size(), col, ld);
    float* ys = y + smp * g.out_size();
    gemm_nn(g.cout, P, K, w, K, col, ld, ys, P, false);
    if (b)
      for (int o = 0; o < g.cout; ++o)
        for (int p = 0; p < P; ++p) ys[static_cast<size_t>(o) * P + p] += b[o];
  }
}

void conv_backward(const ConvGeom& g, int n, const float* x, const float* w, const float* dy,
                   float* dx, float* dw, float* db, ConvScratch& s) {
  const int K = g.kdim(), P = g.ho() * g.wo(), M = g.cout;
  const int ld = col_ld(P);
  float* col = grow(s.col, static_cast<size_t>(K) * ld);
  float *dcol = nullptr, *wt = nullptr;
  std::fill(dw, dw + g.w_size(), 0.f);
  if (db) std::fill(db, db + M, 0.f);
  // A stride-1 3x3 convolution's data gradient is the convolution of dy with the flipped,
  // transposed kernel, W'[c][o][u][v] = W[o][c][2-u][2-v] (pad 1): the implicit forward.
  const bool dx_implicit = dx && g.stride == 1 && g.k == 3 && g.pad == 1 && kW > 1 &&
                           g.wo() % kW == 0 && g.ho() == g.h && g.wo() == g.w;
  if (dx_implicit) {
    float* wf = grow(s.wt, static_cast<size_t>(K) * M);
    for (int o = 0; o < M; ++o)
      for (int c = 0; c < g.cin; ++c)
        for (int u = 0; u < 3; ++u)
          for (int v = 0; v < 3; ++v)
            wf[((static_cast<size_t>(c) * M + o) * 3 + u) * 3 + v] =
                w[((static_cast<size_t>(o) * g.cin + c) * 3 + 2 - u) * 3 + 2 - v];
    conv_forward(ConvGeom{M, g.ho(), g.wo(), g.cin, 3, 1, 1}, n, dy, wf, nullptr, dx, s);  // reads xpad/offs, not wt
  } else if (dx) {
    dcol = grow(s.dcol, static_cast<size_t>(K) * ld);
    wt = grow(s.wt, static_cast<size_t>(K) * M);
    for (int o = 0; o < M; ++o)
      for (int k = 0; k < K; ++k) wt[static_cast<size_t>(k) * M + o] = w[static_cast<size_t>(o) * K + k];
  }
  float* dyt = grow(s.dyt, static_cast<size_t>(P) * M);
  float* dwt = grow(s.dwt, static_cast<size_t>(K) * M);
  for (int smp = 0; smp < n; ++smp) {
    const float* dys = dy + smp * g.out_size();
    im2col(g, x + smp * g.in_size(), col, ld);
    for (int o = 0; o < M; ++o)
      for (int p = 0; p < P; ++p) dyt[static_cast<size_t>(p) * M + o] = dys[static_cast<size_t>(o) * P + p];
    gemm_nn(K, M, P, col, ld, dyt, M, dwt, M, smp > 0);
    if (db)
      for (int o = 0; o < M; ++o) {
        float t = 0;
        for (int p = 0; p < P; ++p) t += dys[static_cast<size_t>(o) * P + p];
        db[o] += t;
      }
    if (dx && !dx_implicit) {
      gemm_nn(K, P, M, wt, M, dys, P, dcol, ld, false);
      col2im(g, dcol, dx + smp * g.in_size(), ld);
    }
  }
  if (n > 0)
    for (int o = 0; o < M; ++o)
      for (int k = 0; k < K; ++k) dw[static_cast<size_t>(o) * K + k] = dwt[static_cast<size_t>(k) * M + o];
}

}  // namespace wb::models::fast
