// Layers of the char-level GPT (models/gpt.h) as PLAIN REFERENCE LOOPS templated on the
// scalar type, as models/layers.h does for the image models:
//   - float:         the oracle of the fast kernels (models/transformer_fast.h);
//   - double:        the precision oracle (Model::loss_grad_f64);
//   - Dual<double>:  the exact Hessian-vector product, forward-over-reverse through softmax,
//                    LayerNorm and GELU (models/dual.h; Pearlmutter 1994).
// Keep them obvious; speed lives in transformer_fast.cpp.
//
// Semantics follow PyTorch 1.13 / nanoGPT (github.com/karpathy/nanoGPT, model.py):
//   layer_norm  y = (x - mean) / sqrt(var + 1e-5) * gamma + beta, var the biased variance
//   linear      y = x W^T + b, W is [out, in] (nn.Linear)
//   gelu        tanh approximation, GPT-2's (Hendrycks & Gimpel arXiv:1606.08415, eq. in
//               section 2; nn.GELU(approximate='tanh')):
//               0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
//   attention   causal scaled dot product, softmax(q k^T / sqrt(head_dim)) v per head, q, k,
//               v the three C-wide column blocks of c_attn's output (nanoGPT's split), head h
//               the columns [h*hd, (h+1)*hd) of each
//   head + loss logits = x_f wte^T (the tied head), cross_entropy(reduction='mean')
// Parameter gradients ACCUMULATE (the caller zeroes the gradient buffer once); data
// gradients are overwritten unless the name says "add".
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "models/dual.h"

namespace wb::models::tref {

inline float tanh_of(float x) {
  return std::tanh(x);
}
inline double tanh_of(double x) {
  return std::tanh(x);
}
template <class T>
Dual<T> tanh_of(const Dual<T>& x) {
  const T t = std::tanh(x.v);
  return {t, x.d * (T(1) - t * t)};
}

constexpr double kLnEps = 1e-5;                     // torch.nn.LayerNorm's default
constexpr double kGeluK = 0.7978845608028654;       // sqrt(2/pi)
constexpr double kGeluC = 0.044715;

// rows x C: y = xhat * g + b, xhat and rstd kept for the backward.
template <class T>
void layernorm_forward(size_t rows, int C, const T* x, const T* g, const T* b, T* y, T* xhat,
                       T* rstd) {
  for (size_t r = 0; r < rows; ++r) {
    const T* xr = x + r * C;
    T mean(0);
    for (int i = 0; i < C; ++i) mean += xr[i];
    mean = mean / T(C);
    T var(0);
    for (int i = 0; i < C; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var = var / T(C);
    const T rs = T(1) / sqrt_of(var + T(kLnEps));
    rstd[r] = rs;
    for (int i = 0; i < C; ++i) {
      const T xh = (xr[i] - mean) * rs;
      xhat[r * C + i] = xh;
      y[r * C + i] = xh * g[i] + b[i];
    }
  }
}

// dx_add += dL/dx; dg, db accumulate.
template <class T>
void layernorm_backward(size_t rows, int C, const T* xhat, const T* rstd, const T* g, const T* dy,
                        T* dx_add, T* dg, T* db) {
  for (size_t r = 0; r < rows; ++r) {
    const T* xh = xhat + r * C;
    const T* d = dy + r * C;
    T m1(0), m2(0);  // mean(dxhat), mean(dxhat * xhat)
    for (int i = 0; i < C; ++i) {
      const T dxh = d[i] * g[i];
      m1 += dxh;
      m2 += dxh * xh[i];
      dg[i] += d[i] * xh[i];
      db[i] += d[i];
    }
    m1 = m1 / T(C);
    m2 = m2 / T(C);
    for (int i = 0; i < C; ++i) dx_add[r * C + i] += rstd[r] * (d[i] * g[i] - m1 - xh[i] * m2);
  }
}

// y[rows, out] = x[rows, in] W^T + b (b may be null).
template <class T>
void linear_forward(size_t rows, int in, int out, const T* x, const T* W, const T* b, T* y) {
  for (size_t r = 0; r < rows; ++r)
    for (int o = 0; o < out; ++o) {
      T acc = b ? b[o] : T(0);
      for (int i = 0; i < in; ++i) acc += x[r * in + i] * W[static_cast<size_t>(o) * in + i];
      y[r * out + o] = acc;
    }
}

// dx (optional) OVERWRITTEN; dW, db (optional) accumulate.
template <class T>
void linear_backward(size_t rows, int in, int out, const T* x, const T* W, const T* dy, T* dx,
                     T* dW, T* db) {
  for (size_t r = 0; r < rows; ++r)
    for (int o = 0; o < out; ++o) {
      const T d = dy[r * out + o];
      if (db) db[o] += d;
      for (int i = 0; i < in; ++i) dW[static_cast<size_t>(o) * in + i] += d * x[r * in + i];
    }
  if (dx)
    for (size_t r = 0; r < rows; ++r)
      for (int i = 0; i < in; ++i) {
        T acc(0);
        for (int o = 0; o < out; ++o) acc += dy[r * out + o] * W[static_cast<size_t>(o) * in + i];
        dx[r * in + i] = acc;
      }
}

template <class T>
void gelu_forward(size_t count, const T* x, T* y) {
  for (size_t i = 0; i < count; ++i) {
    const T u = T(kGeluK) * (x[i] + T(kGeluC) * x[i] * x[i] * x[i]);
    y[i] = T(0.5) * x[i] * (T(1) + tanh_of(u));
  }
}

// dx OVERWRITTEN: d/dx [0.5 x (1 + t)] = 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2).
template <class T>
void gelu_backward(size_t count, const T* x, const T* dy, T* dx) {
  for (size_t i = 0; i < count; ++i) {
    const T u = T(kGeluK) * (x[i] + T(kGeluC) * x[i] * x[i] * x[i]);
    const T t = tanh_of(u);
    const T du = T(kGeluK) * (T(1) + T(3 * kGeluC) * x[i] * x[i]);
    dx[i] = dy[i] * (T(0.5) * (T(1) + t) + T(0.5) * x[i] * (T(1) - t * t) * du);
  }
}

// Causal multi-head attention over n sequences of Tn positions. qkv [n*Tn, 3C];
// P [n, H, Tn, Tn] receives the softmax (zero above the diagonal); y [n*Tn, C].
template <class T>
void attention_forward(int n, int Tn, int C, int H, const T* qkv, T* P, T* y) {
  const int hd = C / H;
  const T scale(1.0 / std::sqrt(static_cast<double>(hd)));
  for (int s = 0; s < n; ++s)
    for (int h = 0; h < H; ++h) {
      T* Ph = P + (static_cast<size_t>(s) * H + h) * Tn * Tn;
      for (int t = 0; t < Tn; ++t) {
        const T* q = qkv + (static_cast<size_t>(s) * Tn + t) * 3 * C + h * hd;
        T* row = Ph + static_cast<size_t>(t) * Tn;
        for (int u = 0; u <= t; ++u) {
          const T* k = qkv + (static_cast<size_t>(s) * Tn + u) * 3 * C + C + h * hd;
          T a(0);
          for (int i = 0; i < hd; ++i) a += q[i] * k[i];
          row[u] = a * scale;
        }
        int arg = 0;  // the shift does not change the softmax: branch on the value part
        for (int u = 1; u <= t; ++u)
          if (value_of(row[u]) > value_of(row[arg])) arg = u;
        const T mx = row[arg];
        T sum(0);
        for (int u = 0; u <= t; ++u) {
          row[u] = exp_of(row[u] - mx);
          sum += row[u];
        }
        for (int u = 0; u <= t; ++u) row[u] = row[u] / sum;
        for (int u = t + 1; u < Tn; ++u) row[u] = T(0);
        T* yr = y + (static_cast<size_t>(s) * Tn + t) * C + h * hd;
        for (int i = 0; i < hd; ++i) yr[i] = T(0);
        for (int u = 0; u <= t; ++u) {
          const T* v = qkv + (static_cast<size_t>(s) * Tn + u) * 3 * C + 2 * C + h * hd;
          for (int i = 0; i < hd; ++i) yr[i] += row[u] * v[i];
        }
      }
    }
}

// dqkv OVERWRITTEN. dP = dy v^T, dS = P (dP - rowsum(P dP)), dq = scale dS k, dk = scale dS^T q,
// dv = P^T dy.
template <class T>
void attention_backward(int n, int Tn, int C, int H, const T* qkv, const T* P, const T* dy,
                        T* dqkv) {
  const int hd = C / H;
  const T scale(1.0 / std::sqrt(static_cast<double>(hd)));
  for (size_t i = 0; i < static_cast<size_t>(n) * Tn * 3 * C; ++i) dqkv[i] = T(0);
  for (int s = 0; s < n; ++s)
    for (int h = 0; h < H; ++h) {
      const T* Ph = P + (static_cast<size_t>(s) * H + h) * Tn * Tn;
      auto at = [&](int t, int part) { return (static_cast<size_t>(s) * Tn + t) * 3 * C + part * C + h * hd; };
      for (int t = 0; t < Tn; ++t) {
        const T* row = Ph + static_cast<size_t>(t) * Tn;
        const T* dyr = dy + (static_cast<size_t>(s) * Tn + t) * C + h * hd;
        T dot(0);
        // dP[t,u] and sum_u P dP
        for (int u = 0; u <= t; ++u) {
          T dp(0);
          for (int i = 0; i < hd; ++i) dp += dyr[i] * qkv[at(u, 2) + i];
          dot += row[u] * dp;
        }
        for (int u = 0; u <= t; ++u) {
          T dp(0);
          for (int i = 0; i < hd; ++i) dp += dyr[i] * qkv[at(u, 2) + i];
          const T ds = row[u] * (dp - dot) * scale;
          for (int i = 0; i < hd; ++i) {
            dqkv[at(t, 0) + i] += ds * qkv[at(u, 1) + i];
            dqkv[at(u, 1) + i] += ds * qkv[at(t, 0) + i];
            dqkv[at(u, 2) + i] += row[u] * dyr[i];
          }
        }
      }
    }
}

// The tied head and mean cross-entropy: logits[r] = xf[r] wte^T over V tokens, target[r].
// Returns the SUM of the row losses; dxf (OVERWRITTEN) and dwte (accumulated) receive
// grad_scale * (softmax - onehot) propagated through the head, when not null. correct
// (optional) counts argmax hits.
template <class T>
T tied_head_ce(size_t rows, int C, int V, const T* xf, const T* wte, const int32_t* target,
               T* logits_row, T* dxf, T* dwte, double grad_scale, int64_t* correct) {
  T total(0);
  for (size_t r = 0; r < rows; ++r) {
    const T* x = xf + r * C;
    for (int v = 0; v < V; ++v) {
      T a(0);
      for (int i = 0; i < C; ++i) a += x[i] * wte[static_cast<size_t>(v) * C + i];
      logits_row[v] = a;
    }
    int arg = 0;
    for (int v = 1; v < V; ++v)
      if (value_of(logits_row[v]) > value_of(logits_row[arg])) arg = v;
    if (correct && arg == target[r]) ++*correct;
    const T mx = logits_row[arg];
    T sum(0);
    for (int v = 0; v < V; ++v) sum += exp_of(logits_row[v] - mx);
    const T lse = mx + log_of(sum);
    total += lse - logits_row[target[r]];
    if (dxf) {
      T* dx = dxf + r * C;
      for (int i = 0; i < C; ++i) dx[i] = T(0);
      for (int v = 0; v < V; ++v) {
        const T d = (exp_of(logits_row[v] - lse) - T(v == target[r] ? 1.0 : 0.0)) * T(grad_scale);
        for (int i = 0; i < C; ++i) {
          dx[i] += d * wte[static_cast<size_t>(v) * C + i];
          dwte[static_cast<size_t>(v) * C + i] += d * x[i];
        }
      }
    }
  }
  return total;
}

}  // namespace wb::models::tref
