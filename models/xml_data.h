// Extreme multi-label (XML) data: sparse features + sparse label sets, in CSR form
// (DESIGN.md section 7; Ma et al., arXiv:2110.07029, Table 1).
//
// The Extreme Classification Repository text format (Bhatia et al., "The Extreme
// Classification Repository"), 0-based indices:
//
//   N F L                       header: rows, features, labels
//   l1,l2,... f:v f:v ...       one row per sample: comma-separated labels, then
//    f:v f:v ...                feature:value pairs; a row without labels starts with
//                               the features (a leading space, as the repository writes it)
//
// The reader streams the file line by line straight into CSR. Every malformed row is a
// wb::UserError "<path>:<line>: <what>" (exit code 2): bad tokens, labels/features outside
// [0, L) / [0, F), duplicate indices, non-finite values, and a row count that does not
// match the header. Trailing blank lines are ignored.
//
// The synthetic generator (embedded default, no files needed) draws power-law (Zipf)
// feature and label frequencies, like real XML text data: a few very frequent words and
// tags, a long tail. Labels are learnable: each label owns a random "signature" of
// features, and a fraction `signal` of a row's non-zeros comes from its labels'
// signatures, the rest is Zipf noise. nnz per row is log-normal around `nnz`, so batches
// differ in their non-zeros (the paper's second source of heterogeneity). The defaults
// have Bibtex's shape (N = 4880 + 2515, F = 1836, L = 159, ~69 nnz and ~2.4 labels per row).
#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "models/model.h"
#include "core/params.h"

namespace wb::models {

struct XmlData {
  std::string source;  // file or "synthetic", for messages
  int64_t features = 0, labels = 0;
  std::vector<int64_t> x_ptr{0};  // rows + 1
  std::vector<int32_t> x_idx;
  std::vector<float> x_val;
  std::vector<int64_t> y_ptr{0};  // rows + 1
  std::vector<int32_t> y_idx;
  size_t size() const { return x_ptr.size() - 1; }
  double mean_nnz() const {
    return size() ? static_cast<double>(x_idx.size()) / static_cast<double>(size()) : 0.0;
  }
  int64_t max_row_nnz() const;
  int64_t max_row_labels() const;
  // Every buffer's size (the memory estimate, app/plan/sweep_plan.h).
  size_t bytes() const {
    return sizeof(int64_t) * (x_ptr.capacity() + y_ptr.capacity()) +
           sizeof(int32_t) * (x_idx.capacity() + y_idx.capacity()) + sizeof(float) * x_val.capacity();
  }
};

// Parse the repository format. `name` labels errors ("<name>:<line>: ..."). limit > 0
// keeps the first `limit` rows (the header's N is still checked against the file).
XmlData parse_xml(std::istream& in, const std::string& name, uint64_t limit = 0);
XmlData read_xml_file(const std::string& path, uint64_t limit = 0);

struct XmlSyntheticParams {
  int64_t train_size = 4880;
  int64_t test_size = 2515;
  int64_t features = 1836;
  int64_t labels = 159;
  double nnz = 68.6;            // mean non-zeros per row
  double nnz_sigma = 0.6;       // log-normal spread of the row nnz
  double labels_per_row = 2.4;  // mean labels per row (1 + Poisson(labels_per_row - 1))
  double feature_zipf = 1.0;    // P(feature rank r) ~ 1 / r^s
  double label_zipf = 1.0;      // P(label rank r) ~ 1 / r^s
  int64_t signature = 24;       // features per label signature
  double signal = 0.08;         // fraction of a row's nnz drawn from its labels' signatures
  int64_t data_seed = 0;
  static void describe(core::ParamSet<XmlSyntheticParams>& p);
};

struct XmlSplits {
  std::shared_ptr<const XmlData> train, test;
};
// Deterministic for a given parameter set (the Rng, never std distributions).
XmlSplits make_synthetic_xml(const XmlSyntheticParams& p);
// dir/train_file and dir/test_file; the test header must agree with the train header on
// F and L. Cached per (paths, limits) for the life of the process (a sweep reads once).
XmlSplits load_xml_dir(const std::string& dir, const std::string& train_file,
                       const std::string& test_file, uint64_t train_limit, uint64_t test_limit);

// Batches for sparse_mlp: CSR features (x_ptr/x_idx/x_val) and labels (y_ptr/y_idx).
class XmlDataset final : public Dataset {
 public:
  explicit XmlDataset(std::shared_ptr<const XmlData> d) : d_(std::move(d)) {}
  size_t size() const override { return d_->size(); }
  // Capacity for max_batch of the longest rows: gather() never allocates afterwards.
  void reserve(Batch& b, int max_batch) const override;
  void gather(std::span<const uint32_t> idx, Batch& b) const override;
  size_t bytes() const override { return d_->bytes(); }
  const XmlData& data() const { return *d_; }

 private:
  std::shared_ptr<const XmlData> d_;
};

}  // namespace wb::models
