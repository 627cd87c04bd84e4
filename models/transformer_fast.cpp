#include "models/transformer_fast.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "models/transformer_layers.h"

namespace wb::models {

using fast::gemm_bcast;
using fast::kVL;
using fast::round_up;

namespace tfast {

typedef float vf __attribute__((vector_size(kVL * sizeof(float)), aligned(4)));
typedef int32_t vi __attribute__((vector_size(kVL * sizeof(float)), aligned(4)));

static inline vf splat(float x) {
  vf v;
  for (int i = 0; i < kVL; ++i) v[i] = x;
  return v;
}

// Cephes expf: n = round(x / ln 2), r = x - n ln 2 (two-part ln 2), e^r by a degree-6
// polynomial, times 2^n through the exponent bits.
static inline vf vexp(vf x) {
  const vf hi = splat(88.3762626647949f), lo = splat(-87.3365447504f);
  x = x > hi ? hi : x;
  x = x < lo ? lo : x;
  const vf magic = splat(12582912.0f);  // 1.5 * 2^23: adding it rounds to an integer
  vf n = x * splat(1.44269504088896341f) + magic;
  n = n - magic;
  const vf r = x - n * splat(0.693359375f) - n * splat(-2.12194440e-4f);
  vf p = splat(1.9875691500E-4f);
  p = p * r + splat(1.3981999507E-3f);
  p = p * r + splat(8.3334519073E-3f);
  p = p * r + splat(4.1665795894E-2f);
  p = p * r + splat(1.6666665459E-1f);
  p = p * r + splat(5.0000001201E-1f);
  p = p * r * r + r + splat(1.0f);
  const vi e = (__builtin_convertvector(n, vi) + 127) << 23;
  return p * (vf)e;  // the bits of 2^n
}

static inline vf load(const float* p) { return *reinterpret_cast<const vf*>(p); }
static inline void store(float* p, vf v) { *reinterpret_cast<vf*>(p) = v; }

void exp_inplace(float* x, size_t n) {
  size_t i = 0;
  for (; i + kVL <= n; i += kVL) store(x + i, vexp(load(x + i)));
  if (i < n) {
    vf t = splat(0.0f);
    for (size_t j = i; j < n; ++j) t[j - i] = x[j];
    t = vexp(t);
    for (size_t j = i; j < n; ++j) x[j] = t[j - i];
  }
}

// tanh(u) = 1 - 2 / (exp(2u) + 1).
static inline vf vtanh(vf u) { return splat(1.0f) - splat(2.0f) / (vexp(u + u) + splat(1.0f)); }

void gelu_forward(size_t n, const float* x, float* y) {
  const vf k = splat(static_cast<float>(tref::kGeluK)), c = splat(static_cast<float>(tref::kGeluC));
  size_t i = 0;
  for (; i + kVL <= n; i += kVL) {
    const vf v = load(x + i);
    const vf t = vtanh(k * (v + c * v * v * v));
    store(y + i, splat(0.5f) * v * (splat(1.0f) + t));
  }
  if (i < n) tref::gelu_forward(n - i, x + i, y + i);
}

void gelu_backward(size_t n, const float* x, const float* dy, float* dx) {
  const vf k = splat(static_cast<float>(tref::kGeluK)), c = splat(static_cast<float>(tref::kGeluC));
  const vf c3 = splat(static_cast<float>(3 * tref::kGeluC));
  size_t i = 0;
  for (; i + kVL <= n; i += kVL) {
    const vf v = load(x + i);
    const vf t = vtanh(k * (v + c * v * v * v));
    const vf du = k * (splat(1.0f) + c3 * v * v);
    const vf d = splat(0.5f) * (splat(1.0f) + t) + splat(0.5f) * v * (splat(1.0f) - t * t) * du;
    store(dx + i, load(dy + i) * d);
  }
  if (i < n) tref::gelu_backward(n - i, x + i, dy + i, dx + i);
}

}  // namespace tfast

bool gpt_fast_fits(const GptConfig& c) {
  return c.d_model % c.heads == 0 && c.hd() % kVL == 0;
}

// Offsets (in floats) of every array in the workspace buffer, for n windows.
struct GptFastLayout {
  struct Layer {
    size_t xin, ln1_xhat, ln1_rstd, a, qkv, P, y, xmid, ln2_xhat, ln2_rstd, m, h, gact;
    size_t attnT, projT, fcT, mlpT;  // packed W^T
  };
  std::vector<Layer> layer;
  size_t xL, lnf_xhat, lnf_rstd, xf, logits, dx, dxf, dtmp, dqkv, dh, kt, dP, wteT, total;
  GptFastLayout(const GptConfig& c, int n, int Tp, int Vp) {
    size_t off = 0;
    auto take = [&](size_t count) {
      const size_t at = off;
      off += round_up(count) + kVL;  // whole vectors, one spare
      return at;
    };
    const size_t R = static_cast<size_t>(n) * c.block, C = static_cast<size_t>(c.d_model);
    for (int l = 0; l < c.layers; ++l) {
      Layer L;
      L.xin = take(R * C), L.ln1_xhat = take(R * C), L.ln1_rstd = take(R), L.a = take(R * C);
      L.qkv = take(R * 3 * C), L.P = take(static_cast<size_t>(n) * c.heads * c.block * Tp);
      L.y = take(R * C), L.xmid = take(R * C), L.ln2_xhat = take(R * C), L.ln2_rstd = take(R);
      L.m = take(R * C), L.h = take(R * 4 * C), L.gact = take(R * 4 * C);
      L.attnT = take(3 * C * C), L.projT = take(C * C), L.fcT = take(4 * C * C);
      L.mlpT = take(4 * C * C);
      layer.push_back(L);
    }
    xL = take(R * C), lnf_xhat = take(R * C), lnf_rstd = take(R), xf = take(R * C);
    logits = take(R * Vp), dx = take(R * C), dxf = take(R * C), dtmp = take(R * C);
    dqkv = take(R * 3 * C), dh = take(R * 4 * C);
    kt = take(static_cast<size_t>(c.hd()) * Tp), dP = take(static_cast<size_t>(c.block) * Tp);
    wteT = take(C * Vp);
    total = off;
  }
};

GptFast::GptFast(const GptConfig& c, const std::vector<TensorInfo>& t)
    : c_(c), t_(t), Tp_(static_cast<int>(round_up(c.block))), Vp_(static_cast<int>(round_up(c.vocab))) {}

size_t GptFast::workspace_floats(int max_batch) const {
  return GptFastLayout(c_, std::max(1, max_batch), Tp_, Vp_).total;
}

std::unique_ptr<GptFastWorkspace> GptFast::make_workspace(int max_batch) const {
  auto ws = std::make_unique<GptFastWorkspace>();
  ws->max_batch = std::max(1, max_batch);
  auto lay = std::make_shared<GptFastLayout>(c_, ws->max_batch, Tp_, Vp_);
  ws->buf = fast::Buffer(lay->total);
  ws->layout = lay;
  return ws;
}

namespace {

// WT[i*ldt + o] = W[o*in + i]: W^T as rows of B for the forward products. Columns o >= out
// of WT are left alone (zero from the buffer's creation, never written).
void transpose_into(const float* W, int out, int in, float* WT, long ldt) {
  constexpr int kB = 16;
  for (int o0 = 0; o0 < out; o0 += kB)
    for (int i0 = 0; i0 < in; i0 += kB)
      for (int o = o0; o < std::min(out, o0 + kB); ++o)
        for (int i = i0; i < std::min(in, i0 + kB); ++i) WT[static_cast<long>(i) * ldt + o] = W[static_cast<long>(o) * in + i];
}

// y[R, out] = x[R, in] W^T + b (+ residual), WT packed [in][out].
void linear_fwd(int R, int in, int out, const float* x, const float* WT, const float* b,
                const float* residual, float* y) {
  for (int r = 0; r < R; ++r) {
    float* yr = y + static_cast<long>(r) * out;
    if (residual) {
      const float* rr = residual + static_cast<long>(r) * out;
      for (int o = 0; o < out; ++o) yr[o] = b[o] + rr[o];
    } else {
      std::memcpy(yr, b, sizeof(float) * static_cast<size_t>(out));
    }
  }
  gemm_bcast(R, out, in, x, in, 1, WT, nullptr, out, y, out, nullptr, true);
}

// dx = dy W (overwritten, optional); dW += dy^T x; db += column sums of dy.
void linear_bwd(int R, int in, int out, const float* x, const float* W, const float* dy, float* dx,
                float* dW, float* db) {
  if (dx) gemm_bcast(R, in, out, dy, out, 1, W, nullptr, in, dx, in, nullptr, false);
  gemm_bcast(out, in, R, dy, 1, out, x, nullptr, in, dW, in, nullptr, true);
  for (int r = 0; r < R; ++r) {
    const float* d = dy + static_cast<long>(r) * out;
    for (int o = 0; o < out; ++o) db[o] += d[o];
  }
}

}  // namespace

double GptFast::pass(const float* w, const int32_t* tokens, int n, float* g, GptFastWorkspace& ws,
                     EvalResult* eval) const {
  using GT = GptTensors;
  WB_ASSERT(n >= 1 && n <= ws.max_batch, "gpt fast path: batch larger than the workspace");
  const GptConfig& c = c_;
  const int C = c.d_model, Tn = c.block, V = c.vocab, H = c.heads, hd = c.hd(), Tp = Tp_, Vp = Vp_;
  const int R = n * Tn;
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  // The arrays are laid out for max_batch windows; n windows use a prefix of each.
  WB_ASSERT(ws.layout, "gpt fast path: workspace without a layout");
  const GptFastLayout& lay = *ws.layout;
  float* B = ws.buf.data();
  auto P = [&](int idx) { return w + t_[static_cast<size_t>(idx)].offset; };
  auto G = [&](int idx) { return g + t_[static_cast<size_t>(idx)].offset; };

  // Embeddings.
  float* x0 = B + lay.layer[0].xin;
  for (int s = 0; s < n; ++s)
    for (int p = 0; p < Tn; ++p) {
      const int32_t tok = tokens[static_cast<long>(s) * (Tn + 1) + p];
      WB_ASSERT(tok >= 0 && tok < V, "gpt: token id out of the vocabulary");
      const float* e = P(GT::wte()) + static_cast<long>(tok) * C;
      const float* q = P(GT::wpe()) + static_cast<long>(p) * C;
      float* xr = x0 + (static_cast<long>(s) * Tn + p) * C;
      for (int i = 0; i < C; ++i) xr[i] = e[i] + q[i];
    }
  // Blocks.
  for (int l = 0; l < c.layers; ++l) {
    const GptFastLayout::Layer& L = lay.layer[static_cast<size_t>(l)];
    auto W = [&](int k) { return P(GT::layer(l, k)); };
    float* xin = B + L.xin;
    transpose_into(W(GT::kAttnW), 3 * C, C, B + L.attnT, 3 * C);
    transpose_into(W(GT::kProjW), C, C, B + L.projT, C);
    transpose_into(W(GT::kFcW), 4 * C, C, B + L.fcT, 4 * C);
    transpose_into(W(GT::kMlpW), C, 4 * C, B + L.mlpT, C);
    tref::layernorm_forward<float>(R, C, xin, W(GT::kLn1W), W(GT::kLn1B), B + L.a, B + L.ln1_xhat,
                                   B + L.ln1_rstd);
    linear_fwd(R, C, 3 * C, B + L.a, B + L.attnT, W(GT::kAttnB), nullptr, B + L.qkv);
    // Attention per sequence and head.
    for (int s = 0; s < n; ++s)
      for (int h = 0; h < H; ++h) {
        const float* Q = B + L.qkv + static_cast<long>(s) * Tn * 3 * C + h * hd;
        const float* K = Q + C;
        const float* Vv = Q + 2 * C;
        float* kt = B + lay.kt;
        for (int u = 0; u < Tn; ++u)
          for (int i = 0; i < hd; ++i) kt[static_cast<long>(i) * Tp + u] = K[static_cast<long>(u) * 3 * C + i];
        float* Ph = B + L.P + (static_cast<long>(s) * H + h) * Tn * Tp;
        gemm_bcast(Tn, Tp, hd, Q, 3 * C, 1, kt, nullptr, Tp, Ph, Tp, nullptr, false);
        for (int t = 0; t < Tn; ++t) {
          float* row = Ph + static_cast<long>(t) * Tp;
          float mx = row[0];
          for (int u = 1; u <= t; ++u) mx = std::max(mx, row[u]);
          for (int u = 0; u <= t; ++u) row[u] = (row[u] - mx) * scale;
          tfast::exp_inplace(row, static_cast<size_t>(t) + 1);
          float sum = 0;
          for (int u = 0; u <= t; ++u) sum += row[u];
          const float inv = 1.0f / sum;
          for (int u = 0; u <= t; ++u) row[u] *= inv;
          for (int u = t + 1; u < Tp; ++u) row[u] = 0.0f;
        }
        gemm_bcast(Tn, hd, Tn, Ph, Tp, 1, Vv, nullptr, 3 * C,
                   B + L.y + static_cast<long>(s) * Tn * C + h * hd, C, nullptr, false);
      }
    linear_fwd(R, C, C, B + L.y, B + L.projT, W(GT::kProjB), xin, B + L.xmid);
    tref::layernorm_forward<float>(R, C, B + L.xmid, W(GT::kLn2W), W(GT::kLn2B), B + L.m,
                                   B + L.ln2_xhat, B + L.ln2_rstd);
    linear_fwd(R, C, 4 * C, B + L.m, B + L.fcT, W(GT::kFcB), nullptr, B + L.h);
    tfast::gelu_forward(static_cast<size_t>(R) * 4 * C, B + L.h, B + L.gact);
    float* out = l + 1 < c.layers ? B + lay.layer[static_cast<size_t>(l) + 1].xin : B + lay.xL;
    linear_fwd(R, 4 * C, C, B + L.gact, B + L.mlpT, W(GT::kMlpB), B + L.xmid, out);
  }
  tref::layernorm_forward<float>(R, C, B + lay.xL, P(GT::lnf_w(c.layers)), P(GT::lnf_b(c.layers)),
                                 B + lay.xf, B + lay.lnf_xhat, B + lay.lnf_rstd);
  // Tied head and cross-entropy; dlogits in place.
  transpose_into(P(GT::wte()), V, C, B + lay.wteT, Vp);
  float* logits = B + lay.logits;
  gemm_bcast(R, Vp, C, B + lay.xf, C, 1, B + lay.wteT, nullptr, Vp, logits, Vp, nullptr, false);
  const float gs = 1.0f / static_cast<float>(R);
  double total = 0;
  for (int r = 0; r < R; ++r) {
    float* z = logits + static_cast<long>(r) * Vp;
    const int32_t tgt = tokens[static_cast<long>(r / Tn) * (Tn + 1) + r % Tn + 1];
    WB_ASSERT(tgt >= 0 && tgt < V, "gpt: target token id out of the vocabulary");
    float mx = z[0];
    for (int v = 1; v < V; ++v) mx = std::max(mx, z[v]);
    const float zt = z[tgt];
    for (int v = 0; v < V; ++v) z[v] -= mx;
    tfast::exp_inplace(z, static_cast<size_t>(V));
    double sum = 0;
    for (int v = 0; v < V; ++v) sum += z[v];
    total += std::log(sum) + mx - zt;
    if (g) {
      const float k = gs / static_cast<float>(sum);
      for (int v = 0; v < V; ++v) z[v] *= k;
      z[tgt] -= gs;
      for (int v = V; v < Vp; ++v) z[v] = 0.0f;
    }
  }
  if (eval) {
    eval->loss_sum = total;
    eval->count = R;
    eval->correct = 0;
    eval->has_accuracy = false;
  }
  if (!g) return total / R;

  // Backward.
  std::memset(g, 0, sizeof(float) * layout_size(t_));
  float* dx = B + lay.dx;
  float* dxf = B + lay.dxf;
  gemm_bcast(R, C, V, logits, Vp, 1, P(GT::wte()), nullptr, C, dxf, C, nullptr, false);
  gemm_bcast(V, C, R, logits, 1, Vp, B + lay.xf, nullptr, C, G(GT::wte()), C, nullptr, true);
  std::memset(dx, 0, sizeof(float) * static_cast<size_t>(R) * C);
  tref::layernorm_backward<float>(R, C, B + lay.lnf_xhat, B + lay.lnf_rstd, P(GT::lnf_w(c.layers)),
                                  dxf, dx, G(GT::lnf_w(c.layers)), G(GT::lnf_b(c.layers)));
  float* dtmp = B + lay.dtmp;
  float* dh = B + lay.dh;
  float* dqkv = B + lay.dqkv;
  for (int l = c.layers - 1; l >= 0; --l) {
    const GptFastLayout::Layer& L = lay.layer[static_cast<size_t>(l)];
    auto W = [&](int k) { return P(GT::layer(l, k)); };
    auto D = [&](int k) { return G(GT::layer(l, k)); };
    linear_bwd(R, 4 * C, C, B + L.gact, W(GT::kMlpW), dx, dh, D(GT::kMlpW), D(GT::kMlpB));
    tfast::gelu_backward(static_cast<size_t>(R) * 4 * C, B + L.h, dh, dh);
    linear_bwd(R, C, 4 * C, B + L.m, W(GT::kFcW), dh, dtmp, D(GT::kFcW), D(GT::kFcB));
    tref::layernorm_backward<float>(R, C, B + L.ln2_xhat, B + L.ln2_rstd, W(GT::kLn2W), dtmp, dx,
                                    D(GT::kLn2W), D(GT::kLn2B));
    linear_bwd(R, C, C, B + L.y, W(GT::kProjW), dx, dtmp, D(GT::kProjW), D(GT::kProjB));
    // Attention backward: dtmp holds dY.
    for (int s = 0; s < n; ++s)
      for (int h = 0; h < H; ++h) {
        const long base = static_cast<long>(s) * Tn * 3 * C + h * hd;
        const float* Q = B + L.qkv + base;
        const float* K = Q + C;
        const float* Vv = Q + 2 * C;
        const float* dY = dtmp + static_cast<long>(s) * Tn * C + h * hd;
        const float* Ph = B + L.P + (static_cast<long>(s) * H + h) * Tn * Tp;
        float* vt = B + lay.kt;
        for (int u = 0; u < Tn; ++u)
          for (int i = 0; i < hd; ++i) vt[static_cast<long>(i) * Tp + u] = Vv[static_cast<long>(u) * 3 * C + i];
        float* dP = B + lay.dP;
        gemm_bcast(Tn, Tp, hd, dY, C, 1, vt, nullptr, Tp, dP, Tp, nullptr, false);
        for (int t = 0; t < Tn; ++t) {
          const float* pr = Ph + static_cast<long>(t) * Tp;
          float* dr = dP + static_cast<long>(t) * Tp;
          float dot = 0;
          for (int u = 0; u <= t; ++u) dot += pr[u] * dr[u];
          for (int u = 0; u <= t; ++u) dr[u] = pr[u] * (dr[u] - dot) * scale;
          for (int u = t + 1; u < Tp; ++u) dr[u] = 0.0f;
        }
        gemm_bcast(Tn, hd, Tn, dP, Tp, 1, K, nullptr, 3 * C, dqkv + base, 3 * C, nullptr, false);
        gemm_bcast(Tn, hd, Tn, dP, 1, Tp, Q, nullptr, 3 * C, dqkv + base + C, 3 * C, nullptr, false);
        gemm_bcast(Tn, hd, Tn, Ph, 1, Tp, dY, nullptr, C, dqkv + base + 2 * C, 3 * C, nullptr,
                   false);
      }
    linear_bwd(R, C, 3 * C, B + L.a, W(GT::kAttnW), dqkv, dtmp, D(GT::kAttnW), D(GT::kAttnB));
    tref::layernorm_backward<float>(R, C, B + L.ln1_xhat, B + L.ln1_rstd, W(GT::kLn1W), dtmp, dx,
                                    D(GT::kLn1W), D(GT::kLn1B));
  }
  for (int s = 0; s < n; ++s)
    for (int p = 0; p < Tn; ++p) {
      const int32_t tok = tokens[static_cast<long>(s) * (Tn + 1) + p];
      const float* d = dx + (static_cast<long>(s) * Tn + p) * C;
      float* ge = G(GT::wte()) + static_cast<long>(tok) * C;
      float* gp = G(GT::wpe()) + static_cast<long>(p) * C;
      for (int i = 0; i < C; ++i) ge[i] += d[i], gp[i] += d[i];
    }
  return total / R;
}

}  // namespace wb::models
