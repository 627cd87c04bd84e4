// Header-only pieces shared by diloco.cpp and streaming_diloco.cpp (and their tests):
//  - OuterOptimizer: DiLoCo's outer step on theta_outer from the averaged outer gradient
//    (Douillard et al., arXiv:2311.08105, Algorithm 1 lines 12-14);
//  - the outer-gradient codecs of Streaming DiLoCo (Douillard et al., arXiv:2501.18512,
//    section 2.3): bf16, a scaled 8-bit integer and a scaled 4-bit E3M0, each as the round
//    trip a receiver sees (quantize, then dequantize to float), and the bytes each puts on
//    the wire;
//  - mix_fragment: the fragment merge theta_k <- alpha theta_k + (1 - alpha) theta_outer
//    (arXiv:2501.18512 section 2.2), with torch.lerp's rounding (torchft's
//    _merge_parameters is p.lerp_(local, alpha) on the outer parameters).
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace wb::algo {

// The outer optimizer of DiLoCo on a range [lo, hi) of theta_outer (a fragment, or the whole
// model), from d(i) = the outer gradient of element i in double (theta_outer - mean of the
// replicas, or the mean of the workers' decoded outer gradients):
//   sgd       theta <- theta - lr d                 (lr 1: the replicas' mean, i.e. local SGD)
//   nesterov  b <- mu b + d;  theta <- theta - lr (d + mu b)   (torch.optim.SGD(nesterov=True))
//   adam      m <- mu m + (1 - mu) d;  v <- 0.999 v + 0.001 d^2;
//             theta <- theta - lr mhat / (sqrt(vhat) + 1e-8), bias-corrected by step t
// State is per element, in double; the caller counts t per range (a fragment's own outer
// steps: torch.optim keeps Adam's step count per parameter, so a fragment's count is its own).
class OuterOptimizer {
 public:
  void init(const std::string& kind, double lr, double mu, size_t n) {
    kind_ = kind == "sgd" ? Kind::kSgd : kind == "nesterov" ? Kind::kNesterov : Kind::kAdam;
    lr_ = lr;
    mu_ = mu;
    buf_.assign(kind_ == Kind::kSgd ? 0 : n, 0.0);
    v_.assign(kind_ == Kind::kAdam ? n : 0, 0.0);
  }
  // Doubles of state per parameter (the planner's footprint).
  static int state_doubles(const std::string& kind) {
    return kind == "sgd" ? 0 : kind == "nesterov" ? 1 : 2;
  }
  // t: this range's outer step number, from 1.
  template <class D>
  void step(std::span<float> theta, size_t lo, size_t hi, int64_t t, D d_of) {
    const double lr = lr_, mu = mu_;
    if (kind_ == Kind::kSgd) {
      for (size_t i = lo; i < hi; ++i) {
        const double th = theta[i], d = d_of(i);
        theta[i] = static_cast<float>(th - lr * d);
      }
    } else if (kind_ == Kind::kNesterov) {
      for (size_t i = lo; i < hi; ++i) {
        const double th = theta[i], d = d_of(i);
        buf_[i] = mu * buf_[i] + d;
        theta[i] = static_cast<float>(th - lr * (d + mu * buf_[i]));
      }
    } else {
      constexpr double b2 = 0.999, eps = 1e-8;
      const double c1 = 1.0 - std::pow(mu, static_cast<double>(t)),
                   c2 = 1.0 - std::pow(b2, static_cast<double>(t));
      for (size_t i = lo; i < hi; ++i) {
        const double th = theta[i], d = d_of(i);
        buf_[i] = mu * buf_[i] + (1.0 - mu) * d;
        v_[i] = b2 * v_[i] + (1.0 - b2) * d * d;
        const double mhat = buf_[i] / c1, vhat = v_[i] / c2;
        theta[i] = static_cast<float>(th - lr * mhat / (std::sqrt(vhat) + eps));
      }
    }
  }

 private:
  enum class Kind { kSgd, kNesterov, kAdam };
  Kind kind_ = Kind::kSgd;
  double lr_ = 0, mu_ = 0;
  std::vector<double> buf_, v_;  // momentum / Adam's first moment; Adam's second moment
};

// ------------------------------------------------------------------ outer-gradient codecs
// bfloat16 round-to-nearest-even, as the bit pattern a float keeps (the upper 16 bits):
// add 0x7FFF plus the lowest kept bit, then clear the low half. A tie (low half 0x8000)
// goes to the even kept pattern; a carry out of the mantissa steps the exponent up, and
// past the largest finite bf16 to infinity, which is what IEEE rounding does. NaN stays a
// (quiet) NaN: the carry could otherwise turn a NaN whose payload sits in the low half into
// infinity.
inline float bf16_round(float x) {
  uint32_t u = std::bit_cast<uint32_t>(x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return std::bit_cast<float>((u | 0x00400000u) & 0xFFFF0000u);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return std::bit_cast<float>(u & 0xFFFF0000u);
}

// Scaled symmetric 8-bit integer: s = max |x| over the fragment (sent as one float),
// q = round-half-even(x / s x 127) in [-127, 127], decoded q s / 127. (torchft's
// should_quantize sends fp8 E4M3 with a per-row float scale; an integer grid of the same
// bytes is the scheme written here.)
inline void int8_round_trip(std::span<float> x) {
  double s = 0;
  for (float v : x) s = std::max(s, std::fabs(static_cast<double>(v)));
  if (!(s > 0) || !std::isfinite(s)) return;  // all zero: exact; non-finite: left to diverge
  for (float& v : x) {
    const double q = std::clamp(std::nearbyint(static_cast<double>(v) / s * 127.0), -127.0, 127.0);
    v = static_cast<float>(q * s / 127.0);
  }
}

// 4 bits, E3M0 (arXiv:2501.18512 section 2.3: 1 sign bit, 3 exponent bits, no mantissa),
// scaled per fragment: the paper names the format, not its exponent bias or a scale, so this
// is the scheme written here. s = max |x| over the fragment (sent as one float); the 3-bit
// field c codes 0 (c = 0) or s 2^(c - 7) (c = 1..7: s/64 ... s), so the largest element is
// exact and every element is rounded to the nearest of {0, s/64, s/32, ..., s/2, s} (the
// midpoint between 2^(e-1) and 2^e is 0.75 x 2^e, between 0 and s/64 it is s/128); a tie
// goes to the larger magnitude.
// Worked example, s = 1: 0.74 -> 0.5, 0.75 -> 1, 0.2 -> 0.25, 0.0078125 (= 1/128) -> 1/64,
// 0.0078 -> 0.
inline void e3m0_round_trip(std::span<float> x) {
  double s = 0;
  for (float v : x) s = std::max(s, std::fabs(static_cast<double>(v)));
  if (!(s > 0) || !std::isfinite(s)) return;
  for (float& v : x) {
    const double r = std::fabs(static_cast<double>(v)) / s;  // in [0, 1]
    double m = 0;
    if (r >= std::ldexp(1.0, -7)) {
      int k = 0;
      (void)std::frexp(r, &k);  // 2^(k-1) <= r < 2^k
      int e = r >= 0.75 * std::ldexp(1.0, k) ? k : k - 1;
      e = std::clamp(e, -6, 0);
      m = std::ldexp(1.0, e);
    }
    v = static_cast<float>(std::copysign(m * s, static_cast<double>(v)));
  }
}

// What a worker sends for m elements at `bits` (32: none; 16: bf16; 8, 4: the scaled codes
// above), decoded in place to the floats every receiver adds.
inline void round_trip(std::span<float> x, int bits) {
  if (bits == 16)
    for (float& v : x) v = bf16_round(v);
  else if (bits == 8)
    int8_round_trip(x);
  else if (bits == 4)
    e3m0_round_trip(x);
}

// Bytes on the wire for m elements at `bits`: the codes plus, for 8 and 4, the float scale.
inline double wire_bytes(size_t m, int bits) {
  const double n = static_cast<double>(m);
  if (bits == 32) return 4 * n;
  if (bits == 16) return 2 * n;
  if (bits == 8) return n + 4;
  return std::ceil(n / 2) + 4;
}

// theta_k <- alpha theta_k + (1 - alpha) theta_outer for one element, as torch.lerp rounds
// it (lerp(start = outer, end = local, w = alpha): start + w (end - start) for w < 0.5, else
// end - (end - start)(1 - w)), here in double: alpha 0 gives the outer value and alpha 1 the
// local one exactly.
inline float mix_fragment(float outer, float local, double alpha) {
  if (alpha == 0) return outer;
  if (alpha == 1) return local;
  const double o = outer, l = local;
  return static_cast<float>(alpha < 0.5 ? o + alpha * (l - o) : l - (l - o) * (1.0 - alpha));
}

}  // namespace wb::algo
