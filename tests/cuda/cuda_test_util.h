// Helpers of the GPU tests: host <-> device copies, random inputs from the project's Rng,
// and the llm.c-style comparison |got - ref| <= atol + rtol*|ref| with a report of the
// worst element.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cuda/check.h"
#include "models/layers.h"
#include "models/model.h"
#include "core/rng.h"

namespace wb::cuda::test {

template <class T>
DeviceBuffer<T> to_device(const std::vector<T>& v) {
  return DeviceBuffer<T>(std::span<const T>(v));
}

template <class T>
std::vector<T> randn(size_t n, uint64_t seed, double scale = 1.0) {
  core::Rng r(seed);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(scale * r.normal());
  return v;
}

// N(0,1) images and uniform labels for an image network (models::random_image_batch).
inline models::Batch random_batch(const models::NetInfo& net, int n, uint64_t seed) {
  return models::random_image_batch(n, net.layers[0].in_size(), net.classes, seed);
}

inline void device_sync() {
  WB_CHECK_CUDA(cudaDeviceSynchronize());
}

// Counts elements outside atol + rtol*|ref| and CHECKs that there are none, naming the worst.
// Device against CPU reference, per element type: float kernels reduce in a different order than the
// reference's sequential sums (a tree per block), so atol covers cancellation near zero and rtol the
// reordering's rounding (m 2^-24 relative at worst for m <= a few thousand terms); double the same
// argument with 2^-53.
template <class T>
struct Tol;
template <>
struct Tol<float> {
  static constexpr double atol = 1e-4, rtol = 1e-3;
};
template <>
struct Tol<double> {
  static constexpr double atol = 1e-10, rtol = 1e-9;
};

template <class A, class B>
void check_close(const std::vector<A>& got, const std::vector<B>& ref, double atol, double rtol,
                 const std::string& what) {
  REQUIRE(got.size() == ref.size());
  size_t bad = 0, worst = 0;
  double worst_ratio = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double g = static_cast<double>(got[i]), r = static_cast<double>(ref[i]);
    const double ratio = std::fabs(g - r) / (atol + rtol * std::fabs(r));
    if (!(ratio <= 1.0)) ++bad;  // NaN counts as bad
    if (!(ratio <= worst_ratio)) {
      worst_ratio = ratio;
      worst = i;
    }
  }
  INFO(what << ": " << bad << " of " << ref.size() << " elements outside atol " << atol
            << " + rtol " << rtol << "*|ref|; worst [" << worst << "]: got "
            << (ref.empty() ? 0.0 : static_cast<double>(got[worst])) << ", ref "
            << (ref.empty() ? 0.0 : static_cast<double>(ref[worst])));
  CHECK(bad == 0);
}

template <class T>
void check_equal(const std::vector<T>& got, const std::vector<T>& ref, const std::string& what) {
  REQUIRE(got.size() == ref.size());
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < ref.size(); ++i)
    if (!(got[i] == ref[i])) {
      if (bad++ == 0) first = i;
    }
  INFO(what << ": " << bad << " of " << ref.size() << " elements differ; first at [" << first
            << "]");
  CHECK(bad == 0);
}

}  // namespace wb::cuda::test
