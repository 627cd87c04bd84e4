#include "models/image_dataset.h"

#include <sys/stat.h>

#include <map>
#include <mutex>

#include "models/idx.h"
#include "core/error.h"

namespace wb::models {

std::shared_ptr<const ImageData> load_idx_pair(const std::string& images_path,
                                               const std::string& labels_path, int classes,
                                               uint64_t limit) {
  IdxArray img = read_idx_u8(images_path, 3, "image", limit);
  IdxArray lab = read_idx_u8(labels_path, 1, "label", limit);
  if (img.dims[0] != lab.dims[0])
    throw UserError(images_path, "image/label count mismatch: " + std::to_string(img.dims[0]) +
                                     " images but " + std::to_string(lab.dims[0]) + " labels in " +
                                     labels_path);
  if (img.dims[0] == 0) throw UserError(images_path, "no images in the file");
  auto d = std::make_shared<ImageData>();
  d->source = images_path;
  d->h = static_cast<int>(img.dims[1]);
  d->w = static_cast<int>(img.dims[2]);
  d->pixels = std::move(img.data);
  d->labels.resize(lab.data.size());
  for (size_t i = 0; i < lab.data.size(); ++i) {
    if (lab.data[i] >= classes)
      throw UserError(labels_path, "label " + std::to_string(lab.data[i]) + " of sample " +
                                       std::to_string(i) + " is outside [0, " +
                                       std::to_string(classes) + ")");
    d->labels[i] = lab.data[i];
  }
  return d;
}

namespace {

bool exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

// "<dir>/<base>.gz" if present, else "<dir>/<base>"; missing -> UserError naming both.
std::string find_file(const std::string& dir, const std::string& base) {
  const std::string raw = dir + "/" + base, gz = raw + ".gz";
  if (exists(gz)) return gz;
  if (exists(raw)) return raw;
  throw UserError(gz, "missing data file (neither " + gz + " nor " + raw +
                          " exists); the default Fashion-MNIST comes with "
                          "scripts/install-deps.sh (Debian package dataset-fashion-mnist)");
}

std::shared_ptr<const ImageData> cached_pair(const std::string& images, const std::string& labels,
                                             int classes, uint64_t limit) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<const ImageData>> cache;
  const std::string key =
      images + "|" + labels + "|" + std::to_string(classes) + "|" + std::to_string(limit);
  std::lock_guard<std::mutex> lock(mu);
  if (auto hit = cache[key].lock()) return hit;
  auto d = load_idx_pair(images, labels, classes, limit);
  cache[key] = d;
  return d;
}

}  // namespace

ImageSplits load_mnist_dir(const std::string& dir, int classes, uint64_t train_limit,
                           uint64_t test_limit) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw UserError(dir,
                    "data directory not found; the default Fashion-MNIST comes with "
                    "scripts/install-deps.sh (Debian package dataset-fashion-mnist), or set "
                    "data_dir to an MNIST-format directory");
  // Look the four files up in a fixed order, so the first missing one is reported.
  const std::string train_images = find_file(dir, "train-images-idx3-ubyte");
  const std::string train_labels = find_file(dir, "train-labels-idx1-ubyte");
  const std::string test_images = find_file(dir, "t10k-images-idx3-ubyte");
  const std::string test_labels = find_file(dir, "t10k-labels-idx1-ubyte");
  ImageSplits s;
  s.train = cached_pair(train_images, train_labels, classes, train_limit);
  s.test = cached_pair(test_images, test_labels, classes, test_limit);
  if (s.train->h != s.test->h || s.train->w != s.test->w)
    throw UserError(dir, "train images are " + std::to_string(s.train->h) + "x" +
                             std::to_string(s.train->w) + " but test images " +
                             std::to_string(s.test->h) + "x" + std::to_string(s.test->w));
  return s;
}

ImageDataset::ImageDataset(std::shared_ptr<const ImageData> data, double mean, double std)
    : data_(std::move(data)) {
  if (!(std > 0)) throw UserError("", "normalization std must be > 0");
  for (int v = 0; v < 256; ++v) lut_[v] = static_cast<float>((v / 255.0 - mean) / std);
}

void ImageDataset::reserve(Batch& b, int max_batch) const {
  b.x.reserve(static_cast<size_t>(max_batch) * data_->sample_size());
  b.label.reserve(static_cast<size_t>(max_batch));
}

void ImageDataset::gather(std::span<const uint32_t> idx, Batch& b) const {
  const size_t ss = data_->sample_size();
  b.n = static_cast<int>(idx.size());
  b.x.resize(idx.size() * ss);
  b.label.resize(idx.size());
  for (size_t i = 0; i < idx.size(); ++i) {
    WB_ASSERT(idx[i] < data_->size(), "sample index out of range");
    const uint8_t* src = data_->pixels.data() + static_cast<size_t>(idx[i]) * ss;
    float* dst = b.x.data() + i * ss;
    for (size_t k = 0; k < ss; ++k) dst[k] = lut_[src[k]];
    b.label[i] = data_->labels[idx[i]];
  }
}

}  // namespace wb::models
