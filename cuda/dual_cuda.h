// The scalar types of the device layer kernels: float (training), double (oracle) and
// DualD, the device twin of models::Dual<double> (models/dual.h), so the GPU runs the same
// forward-over-reverse exact Hessian-vector product as the CPU reference (DESIGN.md
// section 7): backward on w + v*eps gives grad(w) + (H v) eps.
//
// Why a twin rather than models::Dual<double> itself: that type's operators are host-only,
// and its default member initializers make it non-trivial, which __shared__ arrays
// (block reductions) do not allow. Same layout {value, tangent} and the same formulas.
//
// Host header, also read by nvcc: WB_HD marks what device code may call.
#pragma once

#if defined(__CUDACC__)
#define WB_HD __host__ __device__
#else
#define WB_HD
#endif

namespace wb::cuda {

struct DualD {
  double v;                                                // value
  double d;                                                // tangent
  DualD() = default;                                       // trivial: usable in __shared__ memory
  WB_HD constexpr DualD(double value) : v(value), d(0) {}  // NOLINT: constants lift to duals
  WB_HD constexpr DualD(double value, double tangent) : v(value), d(tangent) {}

  WB_HD DualD& operator+=(const DualD& o) {
    v += o.v;
    d += o.d;
    return *this;
  }
  WB_HD DualD& operator-=(const DualD& o) {
    v -= o.v;
    d -= o.d;
    return *this;
  }
  WB_HD DualD& operator*=(const DualD& o) {
    d = d * o.v + v * o.d;
    v *= o.v;
    return *this;
  }
  WB_HD friend DualD operator+(DualD a, const DualD& b) { return a += b; }
  WB_HD friend DualD operator-(DualD a, const DualD& b) { return a -= b; }
  WB_HD friend DualD operator-(const DualD& a) { return {-a.v, -a.d}; }
  WB_HD friend DualD operator*(const DualD& a, const DualD& b) {
    return {a.v * b.v, a.d * b.v + a.v * b.d};
  }
};

}  // namespace wb::cuda
