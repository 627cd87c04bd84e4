// A small MNIST-format directory written by the test itself, so that runs of a labelled model
// (lenet5, data_dir) need no installed data set: n_train + n_test 28x28 images of seeded
// noise, labels drawn from Rng(seed) over 10 classes (uneven class sizes, in no order),
// raw (not gzipped) IDX files as models/idx.cpp reads them. Used by the data-partition tests
// (tests/unit/test_partition.cpp, tests/mpi/test_partition_ranks.cpp).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/rng.h"

namespace wb::test {

inline void write_be32(std::ofstream& f, uint32_t v) {
  const unsigned char b[4] = {static_cast<unsigned char>(v >> 24), static_cast<unsigned char>(v >> 16),
                              static_cast<unsigned char>(v >> 8), static_cast<unsigned char>(v)};
  f.write(reinterpret_cast<const char*>(b), 4);
}

inline void write_idx_pair(const std::string& dir, const std::string& prefix, uint32_t n, uint64_t seed) {
  core::Rng r(seed);
  std::ofstream im(dir + "/" + prefix + "-images-idx3-ubyte", std::ios::binary);
  write_be32(im, 0x00000803);
  write_be32(im, n);
  write_be32(im, 28);
  write_be32(im, 28);
  std::vector<char> px(28 * 28);
  std::vector<char> labels(n);
  for (uint32_t i = 0; i < n; ++i) {
    // Classes of uneven size: class c with weight c + 1.
    const uint64_t u = r.below(55);
    int c = 0;
    for (uint64_t next = 1; u >= next; next += static_cast<uint64_t>(c) + 1) ++c;
    labels[i] = static_cast<char>(c);
    for (auto& p : px) p = static_cast<char>(r.below(256));
    // A class-dependent bright square, so that the classes are learnable.
    for (int y = 0; y < 6; ++y)
      for (int x = 0; x < 6; ++x) px[static_cast<size_t>((2 * c + y) * 28 + 4 + x)] = static_cast<char>(255);
    im.write(px.data(), static_cast<std::streamsize>(px.size()));
  }
  std::ofstream lb(dir + "/" + prefix + "-labels-idx1-ubyte", std::ios::binary);
  write_be32(lb, 0x00000801);
  write_be32(lb, n);
  lb.write(labels.data(), static_cast<std::streamsize>(labels.size()));
}

// A fresh directory under the temporary directory holding the two splits; removed by the
// caller (std::filesystem::remove_all).
inline std::string make_labelled_idx_dir(uint32_t n_train, uint32_t n_test, uint64_t seed = 7) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "wb_idx_XXXXXX").string();
  const char* d = ::mkdtemp(tmpl.data());
  if (!d) return "";
  write_idx_pair(tmpl, "train", n_train, seed);
  write_idx_pair(tmpl, "t10k", n_test, seed + 1);
  return tmpl;
}

}  // namespace wb::test
