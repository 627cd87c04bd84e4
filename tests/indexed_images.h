// A deterministic image data set for tests of the runtime's passes: sample i's 28x28 pixels
// (N(0,1) from Rng(1000 + i)) and label (i mod 10) are functions of i alone, so any two code
// paths that draw the same indices see the same batches. Used by the grouped-pass tests on
// the CPU (tests/unit/test_group_passes.cpp) and on the GPU (tests/cuda/test_group_cuda.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/rng.h"
#include "models/model.h"

namespace wb::test {

class IndexedImages final : public models::Dataset {
 public:
  explicit IndexedImages(size_t n) : n_(n) {}
  size_t size() const override { return n_; }
  void reserve(models::Batch& b, int max_batch) const override {
    b.x.reserve(static_cast<size_t>(max_batch) * 784);
    b.label.reserve(static_cast<size_t>(max_batch));
  }
  void gather(std::span<const uint32_t> idx, models::Batch& b) const override {
    b.n = static_cast<int>(idx.size());
    b.x.resize(idx.size() * 784);
    b.label.resize(idx.size());
    for (size_t s = 0; s < idx.size(); ++s) {
      core::Rng r(1000 + idx[s]);
      for (size_t p = 0; p < 784; ++p) b.x[s * 784 + p] = static_cast<float>(r.normal());
      b.label[s] = static_cast<int32_t>(idx[s] % 10);
    }
  }

 private:
  size_t n_;
};

}  // namespace wb::test
