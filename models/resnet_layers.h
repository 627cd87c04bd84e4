// The layers of the CIFAR ResNet (He et al. 2016, "Deep Residual Learning for Image
// Recognition", section 4.2) as PLAIN REFERENCE LOOPS templated on the scalar type, as
// models/layers.h does for LeNet-5:
//   - float:         the reference of the fast kernels (models/resnet_fast.h);
//   - double:        the precision oracle (Model::loss_grad_f64);
//   - Dual<double>:  forward-over-reverse exact Hessian-vector products (models/dual.h). The
//                    batch statistics of BatchNorm are functions of the weights like any other
//                    activation, so the Dual pass differentiates through them: the HVP is the
//                    one of the training-mode loss, as PyTorch's double-backward gives it.
// Keep them obvious: they are the test oracle.
//
// Semantics follow PyTorch 1.13:
//   conv2d      y[n,o,i,j] = sum_{c,u,v} w[o,c,u,v] x[n,c,i*s+u-p,j*s+v-p] (zero padding),
//               output size (h + 2p - k) / s + 1; the ResNet's convolutions have no bias
//               (BatchNorm's beta takes its place); with norm none a bias is added.
//   batch_norm  training: per channel over (n, h, w), xhat = (x - mean) / sqrt(var + eps)
//               with the biased variance, y = gamma * xhat + beta; the running statistics
//               move by momentum 0.1: r = 0.9 r + 0.1 batch, the running variance taking the
//               UNBIASED batch variance (m / (m - 1)); evaluation normalizes by the running
//               statistics. eps = 1e-5.
//   group_norm  per (sample, group of C/G channels) over (C/G, h, w), per-channel affine;
//               the same in training and evaluation (no running statistics; Wu & He 2018).
//   shortcut A  x[:, :, ::2, ::2] with the new channels zero, placed symmetrically
//               (planes/4 on each side: the widely used CIFAR ResNet code's
//               F.pad(x[:, :, ::2, ::2], (0, 0, 0, 0, planes // 4, planes // 4))); the paper
//               says "extra zero entries padded for increasing dimensions".
//   avgpool     the mean over the whole feature map (adaptive_avg_pool2d(1)).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "models/dual.h"

namespace wb::models {

// The geometry of one strided convolution (NCHW, square kernel, no dilation, no groups).
struct ConvGeom {
  int cin = 1, h = 1, w = 1;
  int cout = 1, k = 3, stride = 1, pad = 1;
  int ho() const { return (h + 2 * pad - k) / stride + 1; }
  int wo() const { return (w + 2 * pad - k) / stride + 1; }
  int kdim() const { return cin * k * k; }
  size_t in_size() const { return static_cast<size_t>(cin) * h * w; }
  size_t out_size() const { return static_cast<size_t>(cout) * ho() * wo(); }
  size_t w_size() const { return static_cast<size_t>(cout) * kdim(); }
};

namespace rref {

// y OVERWRITTEN; b may be null (no bias).
template <class T>
void conv_forward(const ConvGeom& g, int n, const T* x, const T* w, const T* b, T* y) {
  const int ho = g.ho(), wo = g.wo(), kk = g.k * g.k;
  for (int s = 0; s < n; ++s)
    for (int o = 0; o < g.cout; ++o) {
      T* yo = y + (static_cast<size_t>(s) * g.cout + o) * ho * wo;
      for (int p = 0; p < ho * wo; ++p) yo[p] = b ? b[o] : T(0);
      for (int c = 0; c < g.cin; ++c) {
        const T* xc = x + (static_cast<size_t>(s) * g.cin + c) * g.h * g.w;
        for (int u = 0; u < g.k; ++u)
          for (int v = 0; v < g.k; ++v) {
            const T wv = w[(o * g.cin + c) * kk + u * g.k + v];
            for (int i = 0; i < ho; ++i) {
              const int yi = i * g.stride + u - g.pad;
              if (yi < 0 || yi >= g.h) continue;
              for (int j = 0; j < wo; ++j) {
                const int xj = j * g.stride + v - g.pad;
                if (xj < 0 || xj >= g.w) continue;
                yo[i * wo + j] += wv * xc[yi * g.w + xj];
              }
            }
          }
      }
    }
}

// dw (and db when non-null) OVERWRITTEN; dx (optional) OVERWRITTEN.
template <class T>
void conv_backward(const ConvGeom& g, int n, const T* x, const T* w, const T* dy, T* dx, T* dw,
                   T* db) {
  const int ho = g.ho(), wo = g.wo(), kk = g.k * g.k;
  for (size_t i = 0; i < g.w_size(); ++i) dw[i] = T(0);
  if (db)
    for (int o = 0; o < g.cout; ++o) db[o] = T(0);
  if (dx)
    for (size_t i = 0; i < static_cast<size_t>(n) * g.in_size(); ++i) dx[i] = T(0);
  for (int s = 0; s < n; ++s)
    for (int o = 0; o < g.cout; ++o) {
      const T* dyo = dy + (static_cast<size_t>(s) * g.cout + o) * ho * wo;
      if (db)
        for (int p = 0; p < ho * wo; ++p) db[o] += dyo[p];
      for (int c = 0; c < g.cin; ++c) {
        const size_t xoff = (static_cast<size_t>(s) * g.cin + c) * g.h * g.w;
        for (int u = 0; u < g.k; ++u)
          for (int v = 0; v < g.k; ++v) {
            const int widx = (o * g.cin + c) * kk + u * g.k + v;
            T acc(0);
            for (int i = 0; i < ho; ++i) {
              const int yi = i * g.stride + u - g.pad;
              if (yi < 0 || yi >= g.h) continue;
              for (int j = 0; j < wo; ++j) {
                const int xj = j * g.stride + v - g.pad;
                if (xj < 0 || xj >= g.w) continue;
                const size_t xi = xoff + static_cast<size_t>(yi) * g.w + xj;
                acc += dyo[i * wo + j] * x[xi];
                if (dx) dx[xi] += w[widx] * dyo[i * wo + j];
              }
            }
            dw[widx] += acc;
          }
      }
    }
}

// Batch normalization, training mode: statistics over (n, hw) per channel. mean/invstd [c]
// are written (the backward needs them); y OVERWRITTEN.
template <class T>
void bn_forward_train(int n, int c, int hw, const T* x, const T* gamma, const T* beta, T* y,
                      T* mean, T* invstd, double eps = 1e-5) {
  const double m = static_cast<double>(n) * hw;
  for (int ch = 0; ch < c; ++ch) {
    T sum(0);
    for (int s = 0; s < n; ++s)
      for (int p = 0; p < hw; ++p) sum += x[(static_cast<size_t>(s) * c + ch) * hw + p];
    const T mu = sum / T(m);
    T sq(0);
    for (int s = 0; s < n; ++s)
      for (int p = 0; p < hw; ++p) {
        const T d = x[(static_cast<size_t>(s) * c + ch) * hw + p] - mu;
        sq += d * d;
      }
    const T var = sq / T(m);  // biased: what normalizes in training
    const T is = T(1) / sqrt_of(var + T(eps));
    mean[ch] = mu;
    invstd[ch] = is;
    for (int s = 0; s < n; ++s)
      for (int p = 0; p < hw; ++p) {
        const size_t i = (static_cast<size_t>(s) * c + ch) * hw + p;
        y[i] = gamma[ch] * ((x[i] - mu) * is) + beta[ch];
      }
  }
}

// The running statistics after one training pass (PyTorch: momentum 0.1, unbiased variance).
// Float state: what a worker keeps between passes.
template <class T>
void bn_update_running(int n, int c, int hw, const T* mean, const T* invstd, float* run_mean,
                       float* run_var, double eps = 1e-5, double momentum = 0.1) {
  const double m = static_cast<double>(n) * hw;
  const double unbias = m > 1 ? m / (m - 1) : 1.0;
  for (int ch = 0; ch < c; ++ch) {
    const double is = static_cast<double>(value_of(invstd[ch]));
    const double var = 1.0 / (is * is) - eps;
    run_mean[ch] = static_cast<float>((1 - momentum) * run_mean[ch] +
                                      momentum * static_cast<double>(value_of(mean[ch])));
    run_var[ch] = static_cast<float>((1 - momentum) * run_var[ch] + momentum * var * unbias);
  }
}

// Batch normalization, evaluation mode: the running statistics. y OVERWRITTEN.
template <class T>
void bn_forward_eval(int n, int c, int hw, const T* x, const T* gamma, const T* beta,
                     const float* run_mean, const float* run_var, T* y, double eps = 1e-5) {
  for (int ch = 0; ch < c; ++ch) {
    const T is = T(1.0 / std::sqrt(static_cast<double>(run_var[ch]) + eps));
    const T mu = T(static_cast<double>(run_mean[ch]));
    for (int s = 0; s < n; ++s)
      for (int p = 0; p < hw; ++p) {
        const size_t i = (static_cast<size_t>(s) * c + ch) * hw + p;
        y[i] = gamma[ch] * ((x[i] - mu) * is) + beta[ch];
      }
  }
}

// Backward of training-mode batch norm (through the batch statistics):
//   dxhat = dy * gamma,  dx = invstd / m * (m dxhat - sum dxhat - xhat sum(dxhat xhat)).
// dx, dgamma, dbeta OVERWRITTEN.
template <class T>
void bn_backward(int n, int c, int hw, const T* x, const T* gamma, const T* mean, const T* invstd,
                 const T* dy, T* dx, T* dgamma, T* dbeta) {
  const double m = static_cast<double>(n) * hw;
  for (int ch = 0; ch < c; ++ch) {
    T sdy(0), sdyx(0);
    for (int s = 0; s < n; ++s)
      for (int p = 0; p < hw; ++p) {
        const size_t i = (static_cast<size_t>(s) * c + ch) * hw + p;
        const T xh = (x[i] - mean[ch]) * invstd[ch];
        sdy += dy[i];
        sdyx += dy[i] * xh;
      }
    dgamma[ch] = sdyx;
    dbeta[ch] = sdy;
    const T k = gamma[ch] * invstd[ch] / T(m);
    for (int s = 0; s < n; ++s)
      for (int p = 0; p < hw; ++p) {
        const size_t i = (static_cast<size_t>(s) * c + ch) * hw + p;
        const T xh = (x[i] - mean[ch]) * invstd[ch];
        dx[i] = k * (T(m) * dy[i] - sdy - xh * sdyx);
      }
  }
}

// Group normalization: statistics per (sample, group). mean/invstd [n * groups]. y OVERWRITTEN.
template <class T>
void gn_forward(int n, int c, int hw, int groups, const T* x, const T* gamma, const T* beta, T* y,
                T* mean, T* invstd, double eps = 1e-5) {
  const int cg = c / groups;
  const double m = static_cast<double>(cg) * hw;
  for (int s = 0; s < n; ++s)
    for (int g = 0; g < groups; ++g) {
      const size_t base = (static_cast<size_t>(s) * c + g * cg) * hw;
      T sum(0);
      for (size_t i = 0; i < static_cast<size_t>(cg) * hw; ++i) sum += x[base + i];
      const T mu = sum / T(m);
      T sq(0);
      for (size_t i = 0; i < static_cast<size_t>(cg) * hw; ++i) {
        const T d = x[base + i] - mu;
        sq += d * d;
      }
      const T is = T(1) / sqrt_of(sq / T(m) + T(eps));
      mean[s * groups + g] = mu;
      invstd[s * groups + g] = is;
      for (int cc = 0; cc < cg; ++cc) {
        const int ch = g * cg + cc;
        for (int p = 0; p < hw; ++p) {
          const size_t i = base + static_cast<size_t>(cc) * hw + p;
          y[i] = gamma[ch] * ((x[i] - mu) * is) + beta[ch];
        }
      }
    }
}

// dx, dgamma, dbeta OVERWRITTEN.
template <class T>
void gn_backward(int n, int c, int hw, int groups, const T* x, const T* gamma, const T* mean,
                 const T* invstd, const T* dy, T* dx, T* dgamma, T* dbeta) {
  const int cg = c / groups;
  const double m = static_cast<double>(cg) * hw;
  for (int ch = 0; ch < c; ++ch) dgamma[ch] = dbeta[ch] = T(0);
  for (int s = 0; s < n; ++s)
    for (int g = 0; g < groups; ++g) {
      const size_t base = (static_cast<size_t>(s) * c + g * cg) * hw;
      const T mu = mean[s * groups + g], is = invstd[s * groups + g];
      T sdxh(0), sdxhx(0);  // sums of dxhat and dxhat * xhat over the group
      for (int cc = 0; cc < cg; ++cc) {
        const int ch = g * cg + cc;
        for (int p = 0; p < hw; ++p) {
          const size_t i = base + static_cast<size_t>(cc) * hw + p;
          const T xh = (x[i] - mu) * is;
          const T dxh = dy[i] * gamma[ch];
          sdxh += dxh;
          sdxhx += dxh * xh;
          dgamma[ch] += dy[i] * xh;
          dbeta[ch] += dy[i];
        }
      }
      const T k = is / T(m);
      for (int cc = 0; cc < cg; ++cc) {
        const int ch = g * cg + cc;
        for (int p = 0; p < hw; ++p) {
          const size_t i = base + static_cast<size_t>(cc) * hw + p;
          const T xh = (x[i] - mu) * is;
          dx[i] = k * (T(m) * dy[i] * gamma[ch] - sdxh - xh * sdxhx);
        }
      }
    }
}

// Option A shortcut: y[s, c + cpad, i, j] = x[s, c, 2i, 2j] (stride 2) or x[s, c, i, j]
// (stride 1), zero elsewhere; cout = cin + 2 cpad. y OVERWRITTEN.
template <class T>
void shortcut_a_forward(int n, int cin, int h, int w, int stride, int cout, const T* x, T* y) {
  const int ho = (h - 1) / stride + 1, wo = (w - 1) / stride + 1, cpad = (cout - cin) / 2;
  for (size_t i = 0; i < static_cast<size_t>(n) * cout * ho * wo; ++i) y[i] = T(0);
  for (int s = 0; s < n; ++s)
    for (int c = 0; c < cin; ++c)
      for (int i = 0; i < ho; ++i)
        for (int j = 0; j < wo; ++j)
          y[((static_cast<size_t>(s) * cout + c + cpad) * ho + i) * wo + j] =
              x[((static_cast<size_t>(s) * cin + c) * h + i * stride) * w + j * stride];
}

// dx += the shortcut's share of dy (ACCUMULATES).
template <class T>
void shortcut_a_backward(int n, int cin, int h, int w, int stride, int cout, const T* dy, T* dx) {
  const int ho = (h - 1) / stride + 1, wo = (w - 1) / stride + 1, cpad = (cout - cin) / 2;
  for (int s = 0; s < n; ++s)
    for (int c = 0; c < cin; ++c)
      for (int i = 0; i < ho; ++i)
        for (int j = 0; j < wo; ++j)
          dx[((static_cast<size_t>(s) * cin + c) * h + i * stride) * w + j * stride] +=
              dy[((static_cast<size_t>(s) * cout + c + cpad) * ho + i) * wo + j];
}

// Global average pool: y[s, c] = mean over hw. y OVERWRITTEN.
template <class T>
void avgpool_forward(int n, int c, int hw, const T* x, T* y) {
  for (size_t sc = 0; sc < static_cast<size_t>(n) * c; ++sc) {
    T acc(0);
    for (int p = 0; p < hw; ++p) acc += x[sc * hw + p];
    y[sc] = acc / T(static_cast<double>(hw));
  }
}
template <class T>
void avgpool_backward(int n, int c, int hw, const T* dy, T* dx) {
  for (size_t sc = 0; sc < static_cast<size_t>(n) * c; ++sc)
    for (int p = 0; p < hw; ++p) dx[sc * hw + p] = dy[sc] / T(static_cast<double>(hw));
}

}  // namespace rref
}  // namespace wb::models
