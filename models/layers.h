// Layers of the image models (conv2d, max-pool, ReLU, dropout/dropout2d, linear,
// log-softmax + NLL) as PLAIN REFERENCE LOOPS templated on the scalar type, and a
// small sequential network description (NetSpec) with a reference executor.
//
// Why templated: the same loops run in
//   - float:         the reference for the fast kernels (models/layers_fast.h) and bench;
//   - double:        the precision oracle (Model::loss_grad_f64);
//   - Dual<double>:  forward-over-reverse exact Hessian-vector products (Model::hvp_f64,
//                    models/dual.h).
// These loops are the test oracle: keep them obvious. Speed lives in layers_fast.cpp.
//
// Semantics follow PyTorch 1.13 (torch.nn.functional):
//   conv2d      y[n,o,i,j] = b[o] + sum_{c,u,v} w[o,c,u,v] x[n,c,i+u-pad,j+v-pad] (zero padding)
//   max_pool2d  kernel 2, stride 2, floor mode; the gradient goes to the first maximum in
//               row-major window order (PyTorch's `val > maxval` scan)
//   relu        relu'(0) = 0
//   dropout     keep with probability 1-p, scale kept values by 1/(1-p) (inverted dropout);
//   dropout2d   the same per (sample, channel): whole feature maps are zeroed
//   linear      y = x W^T + b, W is [out, in]
//   loss        log_softmax + nll_loss(reduction='mean')
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "models/conv_shape.h"
#include "models/dual.h"
#include "models/model.h"

namespace wb::models {

namespace ref {

// Output columns j whose input column j + v - pad lies inside the image: [j0, j1).
inline void conv_valid_cols(const ConvShape& s, int v, int& j0, int& j1) {
  j0 = s.pad - v > 0 ? s.pad - v : 0;
  j1 = s.w + s.pad - v < s.wo() ? s.w + s.pad - v : s.wo();
}

template <class T>
void conv2d_forward(const ConvShape& s, int n, const T* x, const T* w, const T* b, T* y) {
  const int ho = s.ho(), wo = s.wo(), kk = s.k * s.k;
  for (int in = 0; in < n; ++in) {
    for (int o = 0; o < s.cout; ++o) {
      T* yo = y + (static_cast<size_t>(in) * s.cout + o) * ho * wo;
      for (int p = 0; p < ho * wo; ++p) yo[p] = b[o];
      for (int c = 0; c < s.cin; ++c) {
        const T* xc = x + (static_cast<size_t>(in) * s.cin + c) * s.h * s.w;
        for (int u = 0; u < s.k; ++u)
          for (int v = 0; v < s.k; ++v) {
            const T wv = w[(o * s.cin + c) * kk + u * s.k + v];
            int j0, j1;
            conv_valid_cols(s, v, j0, j1);
            for (int i = 0; i < ho; ++i) {
              const int yi = i + u - s.pad;
              if (yi < 0 || yi >= s.h) continue;
              const int xb = yi * s.w + v - s.pad;  // xc[xb + j] = x[yi][j + v - pad]
              T* yr = yo + i * wo;
              for (int j = j0; j < j1; ++j) yr[j] += wv * xc[xb + j];
            }
          }
      }
    }
  }
}

// dx (optional) and dw, db are OVERWRITTEN.
template <class T>
void conv2d_backward(const ConvShape& s, int n, const T* x, const T* w, const T* dy, T* dx, T* dw,
                     T* db) {
  const int ho = s.ho(), wo = s.wo(), kk = s.k * s.k;
  for (int i = 0; i < s.cout * s.kdim(); ++i) dw[i] = T(0);
  for (int o = 0; o < s.cout; ++o) db[o] = T(0);
  if (dx)
    for (size_t i = 0; i < static_cast<size_t>(n) * s.cin * s.h * s.w; ++i) dx[i] = T(0);
  for (int in = 0; in < n; ++in) {
    for (int o = 0; o < s.cout; ++o) {
      const T* dyo = dy + (static_cast<size_t>(in) * s.cout + o) * ho * wo;
      for (int p = 0; p < ho * wo; ++p) db[o] += dyo[p];
      for (int c = 0; c < s.cin; ++c) {
        const size_t xoff = (static_cast<size_t>(in) * s.cin + c) * s.h * s.w;
        for (int u = 0; u < s.k; ++u)
          for (int v = 0; v < s.k; ++v) {
            const int widx = (o * s.cin + c) * kk + u * s.k + v;
            int j0, j1;
            conv_valid_cols(s, v, j0, j1);
            T acc(0);
            for (int i = 0; i < ho; ++i) {
              const int yi = i + u - s.pad;
              if (yi < 0 || yi >= s.h) continue;
              // x[xb + j] = x[n][c][yi][j + v - pad]
              const std::ptrdiff_t xb = static_cast<ptrdiff_t>(xoff) + yi * s.w + v - s.pad;
              const T* dyr = dyo + i * wo;
              for (int j = j0; j < j1; ++j) acc += dyr[j] * x[xb + j];  // dL/dw
              if (dx)
                for (int j = j0; j < j1; ++j) dx[xb + j] += w[widx] * dyr[j];  // dL/dx
            }
            dw[widx] += acc;
          }
      }
    }
  }
}

// 2x2 max-pool, stride 2, floor mode. idx[out] = flat index of the max inside the plane.
template <class T>
void maxpool2_forward(int n, int c, int h, int w, const T* x, T* y, int32_t* idx) {
  const int ph = h / 2, pw = w / 2;
  for (size_t plane = 0; plane < static_cast<size_t>(n) * c; ++plane) {
    const T* xp = x + plane * h * w;
    for (int i = 0; i < ph; ++i)
      for (int j = 0; j < pw; ++j) {
        int best = (2 * i) * w + 2 * j;
        for (int u = 0; u < 2; ++u)
          for (int v = 0; v < 2; ++v) {
            const int q = (2 * i + u) * w + 2 * j + v;
            if (value_of(xp[q]) > value_of(xp[best])) best = q;
          }
        y[plane * ph * pw + i * pw + j] = xp[best];
        idx[plane * ph * pw + i * pw + j] = best;
      }
  }
}

// dx OVERWRITTEN (zero except at the argmax of each window).
template <class T>
void maxpool2_backward(int n, int c, int h, int w, const T* dy, const int32_t* idx, T* dx) {
  const int ph = h / 2, pw = w / 2;
  for (size_t i = 0; i < static_cast<size_t>(n) * c * h * w; ++i) dx[i] = T(0);
  for (size_t plane = 0; plane < static_cast<size_t>(n) * c; ++plane)
    for (int q = 0; q < ph * pw; ++q)
      dx[plane * h * w + idx[plane * ph * pw + q]] += dy[plane * ph * pw + q];
}

template <class T>
void relu_forward(size_t count, const T* x, T* y) {
  for (size_t i = 0; i < count; ++i) y[i] = value_of(x[i]) > 0 ? x[i] : T(0);
}
// Uses the layer INPUT x: relu'(x) = [x > 0].
template <class T>
void relu_backward(size_t count, const T* x, const T* dy, T* dx) {
  for (size_t i = 0; i < count; ++i) dx[i] = value_of(x[i]) > 0 ? dy[i] : T(0);
}

// keep[u] for each of `units` units (n*channels for dropout2d, n*features for dropout);
// every unit covers unit_size consecutive values. Forward and backward are the same map.
template <class T>
void dropout_apply(size_t units, size_t unit_size, const uint8_t* keep, double p, const T* x,
                   T* y) {
  const T scale(1.0 / (1.0 - p));
  for (size_t u = 0; u < units; ++u)
    for (size_t i = 0; i < unit_size; ++i)
      y[u * unit_size + i] = keep[u] ? x[u * unit_size + i] * scale : T(0);
}

template <class T>
void linear_forward(int n, int in, int out, const T* x, const T* w, const T* b, T* y) {
  for (int s = 0; s < n; ++s)
    for (int o = 0; o < out; ++o) {
      T acc = b[o];
      for (int i = 0; i < in; ++i) acc += w[o * in + i] * x[s * in + i];
      y[s * out + o] = acc;
    }
}

// dx (optional), dw, db OVERWRITTEN.
template <class T>
void linear_backward(int n, int in, int out, const T* x, const T* w, const T* dy, T* dx, T* dw,
                     T* db) {
  for (int i = 0; i < out * in; ++i) dw[i] = T(0);
  for (int o = 0; o < out; ++o) db[o] = T(0);
  for (int s = 0; s < n; ++s)
    for (int o = 0; o < out; ++o) {
      const T d = dy[s * out + o];
      db[o] += d;
      for (int i = 0; i < in; ++i) dw[o * in + i] += d * x[s * in + i];
    }
  if (dx)
    for (int s = 0; s < n; ++s)
      for (int i = 0; i < in; ++i) {
        T acc(0);
        for (int o = 0; o < out; ++o) acc += dy[s * out + o] * w[o * in + i];
        dx[s * in + i] = acc;
      }
}

// log_softmax + NLL. Returns the SUM of per-sample losses; `correct` counts argmax hits.
// dlogits (optional) = grad_scale * (softmax - onehot), grad_scale = 1/N for the mean loss.
template <class T>
T log_softmax_nll(int n, int classes, const T* logits, const int32_t* label, T* dlogits,
                  double grad_scale, int64_t* correct) {
  T total(0);
  for (int s = 0; s < n; ++s) {
    const T* z = logits + s * classes;
    int arg = 0;
    for (int c = 1; c < classes; ++c)
      if (value_of(z[c]) > value_of(z[arg])) arg = c;
    if (correct && arg == label[s]) ++*correct;
    const T zmax = z[arg];  // shift for stability; the gradient does not depend on it
    T sum(0);
    for (int c = 0; c < classes; ++c) sum += exp_of(z[c] - zmax);
    const T lse = zmax + log_of(sum);
    total += lse - z[label[s]];
    if (dlogits)
      for (int c = 0; c < classes; ++c)
        dlogits[s * classes + c] =
            (exp_of(z[c] - lse) - T(c == label[s] ? 1.0 : 0.0)) * T(grad_scale);
  }
  return total;
}

}  // namespace ref

// ---- a small sequential network description ---------------------------------------

enum class LayerKind { kConv, kMaxPool2, kRelu, kDropout2d, kDropout, kLinear };

struct LayerSpec {
  LayerKind kind = LayerKind::kRelu;
  std::string name;              // parameter prefix for conv/linear ("conv1" -> conv1.weight)
  int cout = 0, k = 0, pad = 0;  // conv
  int out = 0;                   // linear
  double p = 0.5;                // dropout probability (of zeroing)
};

// Readable constructors: conv("conv1", 10, 5), max_pool2(), relu(), dropout2d(0.5),
// linear("fc1", 50), dropout(0.5).
inline LayerSpec conv(std::string name, int cout, int k, int pad = 0) {
  LayerSpec s;
  s.kind = LayerKind::kConv, s.name = std::move(name), s.cout = cout, s.k = k, s.pad = pad;
  return s;
}
inline LayerSpec linear(std::string name, int out) {
  LayerSpec s;
  s.kind = LayerKind::kLinear, s.name = std::move(name), s.out = out;
  return s;
}
inline LayerSpec max_pool2() {
  LayerSpec s;
  s.kind = LayerKind::kMaxPool2;
  return s;
}
inline LayerSpec relu() {
  LayerSpec s;
  s.kind = LayerKind::kRelu;
  return s;
}
inline LayerSpec dropout2d(double p) {
  LayerSpec s;
  s.kind = LayerKind::kDropout2d, s.p = p;
  return s;
}
inline LayerSpec dropout(double p) {
  LayerSpec s;
  s.kind = LayerKind::kDropout, s.p = p;
  return s;
}

// Input image (c, h, w); layers in PyTorch forward order; the last layer is the Linear
// producing the class logits, followed by log_softmax + NLL (mean).
struct NetSpec {
  std::string name;
  int c = 1, h = 28, w = 28;
  std::vector<LayerSpec> layers;
};

// Shapes and parameter offsets derived from a NetSpec.
struct LayerInfo {
  LayerSpec spec;
  int c = 0, h = 0, w = 0;     // input shape (h = w = 1 after the flatten before Linear)
  int oc = 0, oh = 0, ow = 0;  // output shape
  size_t in_size() const { return static_cast<size_t>(c) * h * w; }
  size_t out_size() const { return static_cast<size_t>(oc) * oh * ow; }
  size_t w_off = 0, b_off = 0;  // conv/linear parameters in the flat buffer
  ConvShape conv() const { return {c, h, w, spec.cout, spec.k, spec.pad}; }
};

struct NetInfo {
  NetSpec spec;
  std::vector<LayerInfo> layers;
  std::vector<TensorInfo> tensors;  // PyTorch order: conv1.weight, conv1.bias, ...
  int classes = 0;
  size_t num_params = 0;
  double flops_per_sample = 0;  // forward + backward multiply-adds x 2
};
NetInfo analyze(const NetSpec& spec);

// A batch of n random images (N(0,1) pixels, in_size floats each) with uniform labels in
// [0, classes), from the seed: the common input of the kernel tests and benchmarks (the
// values only have to exercise every path; training data come from the datasets).
Batch random_image_batch(int n, size_t in_size, int classes, uint64_t seed);

// PyTorch default init (torch.nn.Conv2d / Linear reset_parameters):
// weight ~ kaiming_uniform(a = sqrt(5)) = U(-1/sqrt(fan_in), 1/sqrt(fan_in)),
// bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)); one Rng stream per tensor, so adding a layer
// does not change the others' initial values.
void init_params(const NetInfo& net, std::span<float> w, uint64_t seed);

// Dropout keep-masks for one training pass: one byte per unit, drawn from (noise_seed,
// layer index). The fast path, the float/double reference and the HVP all call this, so
// the same noise_seed gives the same masks everywhere.
void dropout_mask(uint64_t noise_seed, int layer_index, size_t units, double p, uint8_t* keep);

// Reference pass over the network. Returns the MEAN loss over the n samples; if g is not
// null it receives the gradient (overwritten). train=true applies dropout with masks from
// noise_seed. eval (optional) receives loss sum and correct count.
template <class T>
T reference_pass(const NetInfo& net, const T* w, const float* x, const int32_t* label, int n, T* g,
                 bool train, uint64_t noise_seed, EvalResult* eval = nullptr);

extern template float reference_pass<float>(const NetInfo&, const float*, const float*,
                                            const int32_t*, int, float*, bool, uint64_t,
                                            EvalResult*);
extern template double reference_pass<double>(const NetInfo&, const double*, const float*,
                                              const int32_t*, int, double*, bool, uint64_t,
                                              EvalResult*);
extern template Dual<double> reference_pass<Dual<double>>(const NetInfo&, const Dual<double>*,
                                                          const float*, const int32_t*, int,
                                                          Dual<double>*, bool, uint64_t,
                                                          EvalResult*);

}  // namespace wb::models
