// Image classification data in memory: uint8 pixels + int32 labels, normalized on the fly
// in gather() (x = (pixel/255 - mean) / std, as torchvision's ToTensor + Normalize).
// Pixels stay bytes (47 MB for the 60k Fashion-MNIST training images instead of 188 MB of
// floats); one loaded copy is shared by every worker and every run of a sweep.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "models/model.h"

namespace wb::models {

struct ImageData {
  std::string source;  // the images file, for messages
  int c = 1, h = 0, w = 0;
  std::vector<uint8_t> pixels;  // n x c x h x w
  std::vector<int32_t> labels;  // n
  size_t size() const { return labels.size(); }
  size_t sample_size() const { return static_cast<size_t>(c) * h * w; }
};

// Loads an IDX images/labels pair (gz or raw). limit > 0 keeps the first `limit` samples.
// UserError: missing/truncated/wrong-magic files, image/label count mismatch, labels
// outside [0, classes).
std::shared_ptr<const ImageData> load_idx_pair(const std::string& images_path,
                                               const std::string& labels_path, int classes,
                                               uint64_t limit = 0);

// An MNIST-format directory: {train,t10k}-{images-idx3,labels-idx1}-ubyte, each with or
// without .gz. Loaded data are cached per (path, limit) for the life of the process (a
// sweep of hundreds of runs reads the files once).
struct ImageSplits {
  std::shared_ptr<const ImageData> train, test;
};
ImageSplits load_mnist_dir(const std::string& dir, int classes, uint64_t train_limit,
                           uint64_t test_limit);

class ImageDataset : public Dataset {
 public:
  ImageDataset(std::shared_ptr<const ImageData> data, double mean, double std);
  size_t size() const override { return data_->size(); }
  void reserve(Batch& b, int max_batch) const override;
  // No allocation when b was reserved for idx.size() samples.
  void gather(std::span<const uint32_t> idx, Batch& b) const override;
  const ImageData& data() const { return *data_; }
  std::span<const int32_t> class_labels() const override { return data_->labels; }
  size_t bytes() const override {
    return data_->pixels.size() + sizeof(int32_t) * data_->labels.size();
  }

 private:
  std::shared_ptr<const ImageData> data_;
  float lut_[256];  // normalized value of each byte
};

}  // namespace wb::models
