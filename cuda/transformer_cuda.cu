// The char-level GPT's layers on the GPU (cuda/transformer_cuda.h); CPU twins: models::tref
// (models/transformer_layers.h). Readable baseline kernels, correctness first:
//   - element-wise maps (GELU, residual add, embedding forward): one thread per element;
//   - row-wise work (LayerNorm, one attention query row): one warp per row, the row's sums
//     by a butterfly of __shfl_xor_sync (a fixed pairing: deterministic);
//   - sums over rows (LayerNorm dg/db): one block per column and dev::block_sum's fixed tree;
//   - every other sum: one thread per output running the reference's loop in the
//     reference's order (embedding scatter-add, attention dq/dk/dv, the tied head's
//     products), so in double the GPU and the CPU agree to an FMA contraction.
// No atomics anywhere: a pass repeats itself bit for bit.
#include <cmath>

#include "cuda/common.cuh"
#include "cuda/layers_cuda.h"
#include "cuda/transformer_cuda.h"

namespace wb::cuda {
namespace {

using dev::kThreads;
constexpr int kWarp = 32;
constexpr int kWarpsPerBlock = kThreads / kWarp;

constexpr double kLnEps = 1e-5;                // torch.nn.LayerNorm's default (as tref)
constexpr double kGeluK = 0.7978845608028654;  // sqrt(2/pi)
constexpr double kGeluC = 0.044715;

__device__ inline float sqrt_of(float x) {
  return sqrtf(x);
}
__device__ inline double sqrt_of(double x) {
  return sqrt(x);
}
__device__ inline float tanh_of(float x) {
  return tanhf(x);
}
__device__ inline double tanh_of(double x) {
  return tanh(x);
}

// Sum / max over the 32 lanes, returned to every lane (butterfly: fixed order).
template <class T>
__device__ T warp_sum(T v) {
  for (int m = kWarp / 2; m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
  return v;
}
template <class T>
__device__ T warp_max(T v) {
  for (int m = kWarp / 2; m > 0; m >>= 1) {
    const T o = __shfl_xor_sync(0xffffffffu, v, m);
    v = o > v ? o : v;
  }
  return v;
}

// Warp-per-row launches: the global warp index and the lane.
__device__ inline size_t warp_index() {
  return (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x) / kWarp;
}
__device__ inline int lane_index() {
  return static_cast<int>(threadIdx.x % kWarp);
}
unsigned warp_blocks(size_t rows) {
  return static_cast<unsigned>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
}

// ---- embedding ------------------------------------------------------------------------

template <class T>
__global__ void embedding_forward_kernel(int n, int Tn, int C, const int32_t* tokens, const T* wte,
                                         const T* wpe, T* x, int32_t* tgt) {
  WB_FOR_EACH_INDEX(q, static_cast<size_t>(n) * Tn * C) {
    const int i = static_cast<int>(q % C);
    const size_t r = q / C;  // row s*Tn + p
    const int p = static_cast<int>(r % Tn);
    const size_t s = r / Tn;
    const int32_t tok = tokens[s * (Tn + 1) + p];
    x[q] = wte[static_cast<size_t>(tok) * C + i] + wpe[static_cast<size_t>(p) * C + i];
    if (tgt && i == 0) tgt[r] = tokens[s * (Tn + 1) + p + 1];
  }
}

// dwte[v, i]: one thread scans every row for token v (V * rows token reads: at the
// shakespeare-char shape 65 x 768, nothing). A 50k-token vocabulary would want llm.c's
// encoder_backward instead: rows bucketed by token on the host, one thread per bucket.
template <class T>
__global__ void embedding_wte_backward_kernel(int n, int Tn, int C, int V, const int32_t* tokens,
                                              const T* dx, T* dwte) {
  WB_FOR_EACH_INDEX(q, static_cast<size_t>(V) * C) {
    const int i = static_cast<int>(q % C);
    const int v = static_cast<int>(q / C);
    T acc = dwte[q];
    for (int s = 0; s < n; ++s)
      for (int p = 0; p < Tn; ++p)
        if (tokens[static_cast<size_t>(s) * (Tn + 1) + p] == v)
          acc += dx[(static_cast<size_t>(s) * Tn + p) * C + i];
    dwte[q] = acc;
  }
}

template <class T>
__global__ void embedding_wpe_backward_kernel(int n, int Tn, int C, const T* dx, T* dwpe) {
  WB_FOR_EACH_INDEX(q, static_cast<size_t>(Tn) * C) {
    const int i = static_cast<int>(q % C);
    const int p = static_cast<int>(q / C);
    T acc = dwpe[q];
    for (int s = 0; s < n; ++s) acc += dx[(static_cast<size_t>(s) * Tn + p) * C + i];
    dwpe[q] = acc;
  }
}

// ---- LayerNorm ------------------------------------------------------------------------

// One warp per row: mean, then the biased variance about it (two passes, as the reference).
template <class T>
__global__ void layernorm_forward_kernel(size_t rows, int C, const T* x, const T* g, const T* b,
                                         T* y, T* xhat, T* rstd) {
  const size_t r = warp_index();
  if (r >= rows) return;  // whole warps leave together (rows are warp-granular)
  const int lane = lane_index();
  const T* xr = x + r * C;
  T s(0);
  for (int i = lane; i < C; i += kWarp) s += xr[i];
  const T mean = warp_sum(s) / T(C);
  T v(0);
  for (int i = lane; i < C; i += kWarp) v += (xr[i] - mean) * (xr[i] - mean);
  const T var = warp_sum(v) / T(C);
  const T rs = T(1) / sqrt_of(var + T(kLnEps));
  if (lane == 0) rstd[r] = rs;
  for (int i = lane; i < C; i += kWarp) {
    const T xh = (xr[i] - mean) * rs;
    xhat[r * C + i] = xh;
    y[r * C + i] = xh * g[i] + b[i];
  }
}

// dx_add[r] += rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat)), dxhat = dy * g.
template <class T>
__global__ void layernorm_dx_kernel(size_t rows, int C, const T* xhat, const T* rstd, const T* g,
                                    const T* dy, T* dx_add) {
  const size_t r = warp_index();
  if (r >= rows) return;
  const int lane = lane_index();
  const T* xh = xhat + r * C;
  const T* d = dy + r * C;
  T m1(0), m2(0);
  for (int i = lane; i < C; i += kWarp) {
    const T dxh = d[i] * g[i];
    m1 += dxh;
    m2 += dxh * xh[i];
  }
  m1 = warp_sum(m1) / T(C);
  m2 = warp_sum(m2) / T(C);
  for (int i = lane; i < C; i += kWarp)
    dx_add[r * C + i] += rstd[r] * (d[i] * g[i] - m1 - xh[i] * m2);
}

// dg[i] += sum_r dy[r,i] xhat[r,i], db[i] += sum_r dy[r,i]: one block per column.
template <class T>
__global__ void layernorm_dgb_kernel(size_t rows, int C, const T* xhat, const T* dy, T* dg, T* db) {
  const int i = static_cast<int>(blockIdx.x);
  T sg(0), sb(0);
  for (size_t r = threadIdx.x; r < rows; r += kThreads) {
    sg += dy[r * C + i] * xhat[r * C + i];
    sb += dy[r * C + i];
  }
  sg = dev::block_sum(sg);
  sb = dev::block_sum(sb);
  if (threadIdx.x == 0) {
    dg[i] += sg;
    db[i] += sb;
  }
}

// ---- GELU and the residual add ---------------------------------------------------------

template <class T>
__global__ void gelu_forward_kernel(size_t count, const T* x, T* y) {
  WB_FOR_EACH_INDEX(i, count) {
    const T xi = x[i];
    const T u = T(kGeluK) * (xi + T(kGeluC) * xi * xi * xi);
    y[i] = T(0.5) * xi * (T(1) + tanh_of(u));
  }
}

// d/dx [0.5 x (1 + t)] = 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2), t = tanh(u).
template <class T>
__global__ void gelu_backward_kernel(size_t count, const T* x, const T* dy, T* dx) {
  WB_FOR_EACH_INDEX(i, count) {
    const T xi = x[i];
    const T u = T(kGeluK) * (xi + T(kGeluC) * xi * xi * xi);
    const T t = tanh_of(u);
    const T du = T(kGeluK) * (T(1) + T(3 * kGeluC) * xi * xi);
    dx[i] = dy[i] * (T(0.5) * (T(1) + t) + T(0.5) * xi * (T(1) - t * t) * du);
  }
}

template <class T>
__global__ void residual_add_kernel(size_t count, T* a, const T* b) {
  WB_FOR_EACH_INDEX(i, count) a[i] += b[i];
}

// ---- attention -------------------------------------------------------------------------
//
// The straightforward form: P = softmax(q k^T / sqrt(hd)) is materialized ([n, H, Tn, Tn],
// 0.8 MB a layer at the shakespeare-char shape) and read again by the backward. One warp
// per query row (s, h, t): lanes take the keys u <= t for the scores and the softmax, then
// the head's hd columns for y = P v. A FlashAttention-style kernel (Dao et al. 2022,
// arXiv:2205.14135, Algorithm 1) would change three things: it tiles Q and K/V through
// shared memory and never writes P to global memory (an online softmax keeps a running
// max and sum per row, rescaling the partial y); it saves only the row's log-sum-exp for
// the backward, which recomputes P tile by tile (Algorithm 4); and its backward accumulates
// dK, dV for a key block in registers across the query blocks, with dQ summed by atomics
// or a second pass. At Tn = 64 and hd = 32 the materialized P is cheap, and this form keeps
// the reference's summation order.

template <class T>
__global__ void attention_forward_kernel(int n, int Tn, int C, int H, T scale, const T* qkv, T* P,
                                         T* y) {
  const size_t row = warp_index();  // ((s * H + h) * Tn + t)
  if (row >= static_cast<size_t>(n) * H * Tn) return;
  const int lane = lane_index();
  const int hd = C / H;
  const int t = static_cast<int>(row % Tn);
  const int h = static_cast<int>(row / Tn % H);
  const size_t s = row / Tn / H;
  const size_t C3 = static_cast<size_t>(3) * C;
  const T* q = qkv + (s * Tn + t) * C3 + static_cast<size_t>(h) * hd;
  T* Prow = P + row * Tn;
  // Scores and their max.
  T mx(0);
  bool any = false;
  for (int u = lane; u <= t; u += kWarp) {
    const T* k = qkv + (s * Tn + u) * C3 + C + static_cast<size_t>(h) * hd;
    T a(0);
    for (int i = 0; i < hd; ++i) a += q[i] * k[i];
    a = a * scale;
    Prow[u] = a;
    mx = (!any || a > mx) ? a : mx;
    any = true;
  }
  // Lanes past t hold no key: they contribute the row's first score (it exists: u = 0).
  __syncwarp();
  if (!any) mx = Prow[0];
  mx = warp_max(mx);
  T sum(0);
  for (int u = lane; u <= t; u += kWarp) {
    const T e = dev::exp_of(Prow[u] - mx);
    Prow[u] = e;
    sum += e;
  }
  sum = warp_sum(sum);
  for (int u = lane; u < Tn; u += kWarp) Prow[u] = u <= t ? Prow[u] / sum : T(0);
  __syncwarp();  // the row's probabilities, written by every lane, are read by every lane
  T* yr = y + (s * Tn + t) * C + static_cast<size_t>(h) * hd;
  for (int i = lane; i < hd; i += kWarp) {
    T acc(0);
    for (int u = 0; u <= t; ++u)
      acc += Prow[u] *
             qkv[(s * Tn + u) * C3 + 2 * static_cast<size_t>(C) + static_cast<size_t>(h) * hd + i];
    yr[i] = acc;
  }
}

// dS[t,u] = scale * P[t,u] (dP[t,u] - sum_u' P[t,u'] dP[t,u']), dP[t,u] = dy_t . v_u; one
// warp per query row, zero above the diagonal.
template <class T>
__global__ void attention_dscore_kernel(int n, int Tn, int C, int H, T scale, const T* qkv,
                                        const T* P, const T* dy, T* dS) {
  const size_t row = warp_index();
  if (row >= static_cast<size_t>(n) * H * Tn) return;
  const int lane = lane_index();
  const int hd = C / H;
  const int t = static_cast<int>(row % Tn);
  const int h = static_cast<int>(row / Tn % H);
  const size_t s = row / Tn / H;
  const size_t C3 = static_cast<size_t>(3) * C;
  const T* dyr = dy + (s * Tn + t) * C + static_cast<size_t>(h) * hd;
  const T* Prow = P + row * Tn;
  T* dSrow = dS + row * Tn;
  T dot(0);
  for (int u = lane; u <= t; u += kWarp) {
    const T* v = qkv + (s * Tn + u) * C3 + 2 * static_cast<size_t>(C) + static_cast<size_t>(h) * hd;
    T dp(0);
    for (int i = 0; i < hd; ++i) dp += dyr[i] * v[i];
    dSrow[u] = dp;  // dP for now; each lane rereads only its own entries
    dot += Prow[u] * dp;
  }
  dot = warp_sum(dot);
  for (int u = lane; u < Tn; u += kWarp)
    dSrow[u] = u <= t ? Prow[u] * (dSrow[u] - dot) * scale : T(0);
}

// One thread per element of dqkv [n*Tn, 3C] (the element's part says which sum):
//   dq[t] = sum_{u <= t} dS[t,u] k[u]     dk[u] = sum_{t >= u} dS[t,u] q[t]
//   dv[u] = sum_{t >= u} P[t,u] dy[t]
// in the reference's order (u ascending for dq, t ascending for dk and dv).
template <class T>
__global__ void attention_dqkv_kernel(int n, int Tn, int C, int H, const T* qkv, const T* P,
                                      const T* dy, const T* dS, T* dqkv) {
  const size_t C3 = static_cast<size_t>(3) * C;
  const int hd = C / H;
  WB_FOR_EACH_INDEX(q, static_cast<size_t>(n) * Tn * C3) {
    const size_t col = q % C3;
    const size_t r = q / C3;
    const int t = static_cast<int>(r % Tn);
    const size_t s = r / Tn;
    const int part = static_cast<int>(col / C);
    const int c = static_cast<int>(col % C);  // h * hd + i
    const int h = c / hd;
    const size_t base = (s * H + h) * Tn;  // this (window, head)'s first P / dS row
    T acc(0);
    if (part == 0) {
      const T* dSrow = dS + (base + t) * Tn;
      for (int u = 0; u <= t; ++u) acc += dSrow[u] * qkv[(s * Tn + u) * C3 + C + c];
    } else if (part == 1) {
      for (int tt = t; tt < Tn; ++tt) acc += dS[(base + tt) * Tn + t] * qkv[(s * Tn + tt) * C3 + c];
    } else {
      for (int tt = t; tt < Tn; ++tt) acc += P[(base + tt) * Tn + t] * dy[(s * Tn + tt) * C + c];
    }
    dqkv[q] = acc;
  }
}

// ---- tied head -------------------------------------------------------------------------

// logits[r, v] = xf[r] . wte[v]
template <class T>
__global__ void head_logits_kernel(size_t rows, int C, int V, const T* xf, const T* wte,
                                   T* logits) {
  WB_FOR_EACH_INDEX(q, rows * V) {
    const int v = static_cast<int>(q % V);
    const size_t r = q / V;
    T a(0);
    for (int i = 0; i < C; ++i) a += xf[r * C + i] * wte[static_cast<size_t>(v) * C + i];
    logits[q] = a;
  }
}

// dxf[r, i] = sum_v dlogits[r, v] wte[v, i]
template <class T>
__global__ void head_dx_kernel(size_t rows, int C, int V, const T* dlogits, const T* wte, T* dxf) {
  WB_FOR_EACH_INDEX(q, rows * C) {
    const int i = static_cast<int>(q % C);
    const size_t r = q / C;
    T a(0);
    for (int v = 0; v < V; ++v) a += dlogits[r * V + v] * wte[static_cast<size_t>(v) * C + i];
    dxf[q] = a;
  }
}

// dwte[v, i] += sum_r dlogits[r, v] xf[r, i], rows ascending
template <class T>
__global__ void head_dw_kernel(size_t rows, int C, int V, const T* dlogits, const T* xf, T* dwte) {
  WB_FOR_EACH_INDEX(q, static_cast<size_t>(V) * C) {
    const int i = static_cast<int>(q % C);
    const int v = static_cast<int>(q / C);
    T a = dwte[q];
    for (size_t r = 0; r < rows; ++r) a += dlogits[r * V + v] * xf[r * C + i];
    dwte[q] = a;
  }
}

}  // namespace

template <class T>
void embedding_forward(int n, int Tn, int C, const int32_t* tokens, const T* wte, const T* wpe,
                       T* x, int32_t* tgt, cudaStream_t stream) {
  const size_t total = static_cast<size_t>(n) * Tn * C;
  if (total == 0) return;
  embedding_forward_kernel<T>
      <<<dev::capped_blocks(total), kThreads, 0, stream>>>(n, Tn, C, tokens, wte, wpe, x, tgt);
  WB_CHECK_LAUNCH("embedding_forward_kernel");
}

template <class T>
void embedding_backward(int n, int Tn, int C, int V, const int32_t* tokens, const T* dx, T* dwte,
                        T* dwpe, cudaStream_t stream) {
  if (static_cast<size_t>(n) * Tn * C == 0) return;
  const size_t nv = static_cast<size_t>(V) * C, np = static_cast<size_t>(Tn) * C;
  embedding_wte_backward_kernel<T>
      <<<dev::capped_blocks(nv), kThreads, 0, stream>>>(n, Tn, C, V, tokens, dx, dwte);
  WB_CHECK_LAUNCH("embedding_wte_backward_kernel");
  embedding_wpe_backward_kernel<T>
      <<<dev::capped_blocks(np), kThreads, 0, stream>>>(n, Tn, C, dx, dwpe);
  WB_CHECK_LAUNCH("embedding_wpe_backward_kernel");
}

template <class T>
void layernorm_forward(size_t rows, int C, const T* x, const T* g, const T* b, T* y, T* xhat,
                       T* rstd, cudaStream_t stream) {
  if (rows == 0) return;
  layernorm_forward_kernel<T>
      <<<warp_blocks(rows), kThreads, 0, stream>>>(rows, C, x, g, b, y, xhat, rstd);
  WB_CHECK_LAUNCH("layernorm_forward_kernel");
}

template <class T>
void layernorm_backward(size_t rows, int C, const T* xhat, const T* rstd, const T* g, const T* dy,
                        T* dx_add, T* dg, T* db, cudaStream_t stream) {
  if (rows == 0) return;
  layernorm_dx_kernel<T>
      <<<warp_blocks(rows), kThreads, 0, stream>>>(rows, C, xhat, rstd, g, dy, dx_add);
  WB_CHECK_LAUNCH("layernorm_dx_kernel");
  layernorm_dgb_kernel<T>
      <<<static_cast<unsigned>(C), kThreads, 0, stream>>>(rows, C, xhat, dy, dg, db);
  WB_CHECK_LAUNCH("layernorm_dgb_kernel");
}

template <class T>
void gelu_forward(size_t count, const T* x, T* y, cudaStream_t stream) {
  if (count == 0) return;
  gelu_forward_kernel<T><<<dev::capped_blocks(count), kThreads, 0, stream>>>(count, x, y);
  WB_CHECK_LAUNCH("gelu_forward_kernel");
}

template <class T>
void gelu_backward(size_t count, const T* x, const T* dy, T* dx, cudaStream_t stream) {
  if (count == 0) return;
  gelu_backward_kernel<T><<<dev::capped_blocks(count), kThreads, 0, stream>>>(count, x, dy, dx);
  WB_CHECK_LAUNCH("gelu_backward_kernel");
}

template <class T>
void residual_add(size_t count, T* a, const T* b, cudaStream_t stream) {
  if (count == 0) return;
  residual_add_kernel<T><<<dev::capped_blocks(count), kThreads, 0, stream>>>(count, a, b);
  WB_CHECK_LAUNCH("residual_add_kernel");
}

template <class T>
void attention_forward(int n, int Tn, int C, int H, const T* qkv, T* P, T* y, cudaStream_t stream) {
  const size_t rows = static_cast<size_t>(n) * H * Tn;
  if (rows == 0) return;
  const T scale(1.0 / std::sqrt(static_cast<double>(C / H)));
  attention_forward_kernel<T>
      <<<warp_blocks(rows), kThreads, 0, stream>>>(n, Tn, C, H, scale, qkv, P, y);
  WB_CHECK_LAUNCH("attention_forward_kernel");
}

template <class T>
void attention_backward(int n, int Tn, int C, int H, const T* qkv, const T* P, const T* dy, T* dqkv,
                        T* dS, cudaStream_t stream) {
  const size_t rows = static_cast<size_t>(n) * H * Tn;
  if (rows == 0) return;
  const T scale(1.0 / std::sqrt(static_cast<double>(C / H)));
  attention_dscore_kernel<T>
      <<<warp_blocks(rows), kThreads, 0, stream>>>(n, Tn, C, H, scale, qkv, P, dy, dS);
  WB_CHECK_LAUNCH("attention_dscore_kernel");
  const size_t total = static_cast<size_t>(n) * Tn * 3 * C;
  attention_dqkv_kernel<T>
      <<<dev::capped_blocks(total), kThreads, 0, stream>>>(n, Tn, C, H, qkv, P, dy, dS, dqkv);
  WB_CHECK_LAUNCH("attention_dqkv_kernel");
}

template <class T>
void tied_head_ce(size_t rows, int C, int V, const T* xf, const T* wte, const int32_t* target,
                  T* logits, T* dxf, T* dwte, double grad_scale, T* loss_sum, cudaStream_t stream) {
  if (rows == 0) return;
  head_logits_kernel<T>
      <<<dev::capped_blocks(rows * V), kThreads, 0, stream>>>(rows, C, V, xf, wte, logits);
  WB_CHECK_LAUNCH("head_logits_kernel");
  // The softmax cross-entropy is the image models' (cuda/softmax_nll_cuda.cu): one block,
  // the row losses summed in row order; its gradient overwrites the logits in place (each
  // thread reads a logit before writing its gradient).
  log_softmax_nll_async<T>(static_cast<int>(rows), V, logits, target, dxf ? logits : nullptr,
                           grad_scale, loss_sum, nullptr, stream);
  if (!dxf) return;
  head_dx_kernel<T>
      <<<dev::capped_blocks(rows * C), kThreads, 0, stream>>>(rows, C, V, logits, wte, dxf);
  WB_CHECK_LAUNCH("head_dx_kernel");
  head_dw_kernel<T><<<dev::capped_blocks(static_cast<size_t>(V) * C), kThreads, 0, stream>>>(
      rows, C, V, logits, xf, dwte);
  WB_CHECK_LAUNCH("head_dw_kernel");
}

#define WB_INSTANTIATE(T)                                                                          \
  template void embedding_forward<T>(int, int, int, const int32_t*, const T*, const T*, T*,        \
                                     int32_t*, cudaStream_t);                                      \
  template void embedding_backward<T>(int, int, int, int, const int32_t*, const T*, T*, T*,        \
                                      cudaStream_t);                                               \
  template void layernorm_forward<T>(size_t, int, const T*, const T*, const T*, T*, T*, T*,        \
                                     cudaStream_t);                                                \
  template void layernorm_backward<T>(size_t, int, const T*, const T*, const T*, const T*, T*, T*, \
                                      T*, cudaStream_t);                                           \
  template void gelu_forward<T>(size_t, const T*, T*, cudaStream_t);                               \
  template void gelu_backward<T>(size_t, const T*, const T*, T*, cudaStream_t);                    \
  template void residual_add<T>(size_t, T*, const T*, cudaStream_t);                               \
  template void attention_forward<T>(int, int, int, int, const T*, T*, T*, cudaStream_t);          \
  template void attention_backward<T>(int, int, int, int, const T*, const T*, const T*, T*, T*,    \
                                      cudaStream_t);                                               \
  template void tied_head_ce<T>(size_t, int, int, const T*, const T*, const int32_t*, T*, T*, T*,  \
                                double, T*, cudaStream_t);
WB_INSTANTIATE(float)
WB_INSTANTIATE(double)
#undef WB_INSTANTIATE

}  // namespace wb::cuda
