// Dual numbers for forward-mode differentiation: x = v + d*eps with eps^2 = 0.
//
// Why: the exact Hessian-vector product (DESIGN.md section 7) is computed
// forward-over-reverse. The reference kernels are templated on the scalar type; running
// the reverse pass (backward) on Dual<double> parameters seeded with w + v*eps gives
//   grad(w + v*eps) = grad(w) + (H(w) v) * eps,
// so the tangent part of the gradient is exactly H v (Pearlmutter 1994, "Fast exact
// multiplication by the Hessian"), one pass, no finite-difference error. The Adasum
// paper's sequential emulation (Maleki et al., arXiv:2006.02924 section 3.7) needs exactly this.
//
// Piecewise-linear operations (ReLU, max-pool) branch on the value part only
// (value_of); their second derivative is zero almost everywhere, as in PyTorch's
// double-backward.
#pragma once

#include <cmath>

namespace wb::models {

template <class T>
struct Dual {
  T v{};  // value
  T d{};  // tangent (directional derivative)

  constexpr Dual() = default;
  constexpr Dual(T value) : v(value), d(0) {}  // NOLINT: implicit, constants lift to duals
  constexpr Dual(T value, T tangent) : v(value), d(tangent) {}

  Dual& operator+=(const Dual& o) {
    v += o.v;
    d += o.d;
    return *this;
  }
  Dual& operator-=(const Dual& o) {
    v -= o.v;
    d -= o.d;
    return *this;
  }
  Dual& operator*=(const Dual& o) {
    d = d * o.v + v * o.d;
    v *= o.v;
    return *this;
  }
  Dual& operator/=(const Dual& o) { return *this = *this / o; }

  friend Dual operator+(Dual a, const Dual& b) { return a += b; }
  friend Dual operator-(Dual a, const Dual& b) { return a -= b; }
  friend Dual operator-(const Dual& a) { return {-a.v, -a.d}; }
  friend Dual operator*(const Dual& a, const Dual& b) { return {a.v * b.v, a.d * b.v + a.v * b.d}; }
  friend Dual operator/(const Dual& a, const Dual& b) {
    const T inv = T(1) / b.v;
    return {a.v * inv, (a.d - a.v * inv * b.d) * inv};
  }
};

template <class T>
Dual<T> exp(const Dual<T>& a) {
  const T e = std::exp(a.v);
  return {e, e * a.d};
}
template <class T>
Dual<T> log(const Dual<T>& a) {
  return {std::log(a.v), a.d / a.v};
}

// The value part, used for branching (ReLU, max-pool argmax, log-sum-exp shift).
inline float value_of(float x) {
  return x;
}
inline double value_of(double x) {
  return x;
}
template <class T>
T value_of(const Dual<T>& x) {
  return x.v;
}

// Uniform spelling of exp/log for float, double and Dual in templated kernels.
inline float exp_of(float x) {
  return std::exp(x);
}
inline double exp_of(double x) {
  return std::exp(x);
}
template <class T>
Dual<T> exp_of(const Dual<T>& x) {
  return exp(x);
}
inline float log_of(float x) {
  return std::log(x);
}
inline double log_of(double x) {
  return std::log(x);
}
template <class T>
Dual<T> log_of(const Dual<T>& x) {
  return log(x);
}

// sqrt for LayerNorm's and BatchNorm's 1/sqrt(var + eps): d sqrt(x) = dx / (2 sqrt(x)).
inline float sqrt_of(float x) {
  return std::sqrt(x);
}
inline double sqrt_of(double x) {
  return std::sqrt(x);
}
template <class T>
Dual<T> sqrt_of(const Dual<T>& x) {
  const T s = std::sqrt(x.v);
  return {s, x.d / (T(2) * s)};
}

}  // namespace wb::models
