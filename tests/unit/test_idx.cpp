// IDX reader and image data sets: raw and gzip files, and every malformed file is a
// wb::UserError naming the file (the CLI turns it into one line and exit code 2).
#include <doctest/doctest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "models/idx.h"
#include "models/image_dataset.h"
#include "core/error.h"

using namespace wb;
using namespace wb::models;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("wb_idx_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

std::vector<uint8_t> idx_bytes(uint32_t magic, const std::vector<uint32_t>& dims,
                               const std::vector<uint8_t>& data) {
  std::vector<uint8_t> b;
  auto be = [&](uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(v >> s));
  };
  be(magic);
  for (uint32_t d : dims) be(d);
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

void write_raw(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

void write_gz(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) ==
          static_cast<int>(bytes.size()));
  gzclose(f);
}

std::vector<uint8_t> pixels(uint32_t n, uint32_t h, uint32_t w) {
  std::vector<uint8_t> p(static_cast<size_t>(n) * h * w);
  for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<uint8_t>(i * 31 + 7);
  return p;
}

// The message of the UserError thrown by f (fails the test if none is thrown).
template <class F>
std::string user_error(F&& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  FAIL("expected a wb::UserError");
  return "";
}

}  // namespace

TEST_SUITE("idx") {
  TEST_CASE("idx: reads raw and gzip files; a prefix with max_items") {
    TempDir d;
    const auto px = pixels(5, 3, 4);
    write_raw(d / "img", idx_bytes(0x803, {5, 3, 4}, px));
    write_gz(d / "img.gz", idx_bytes(0x803, {5, 3, 4}, px));
    for (const char* name : {"img", "img.gz"}) {
      IdxArray a = read_idx_u8(d / name, 3, "image");
      CHECK(a.dims == std::vector<uint32_t>{5, 3, 4});
      CHECK(a.data == px);
    }
    IdxArray a = read_idx_u8(d / "img.gz", 3, "image", 2);
    CHECK(a.dims == std::vector<uint32_t>{2, 3, 4});
    CHECK(a.data == std::vector<uint8_t>(px.begin(), px.begin() + 24));
    // Larger than the reader's first 64 KiB read (the buffer grows as data arrives).
    const auto big = pixels(7, 211, 223);  // 329371 bytes
    write_raw(d / "big", idx_bytes(0x803, {7, 211, 223}, big));
    write_gz(d / "big.gz", idx_bytes(0x803, {7, 211, 223}, big));
    for (const char* name : {"big", "big.gz"}) {
      IdxArray b = read_idx_u8(d / name, 3, "image");
      CHECK(b.dims == std::vector<uint32_t>{7, 211, 223});
      CHECK(b.data == big);
      IdxArray p = read_idx_u8(d / name, 3, "image", 3);
      CHECK(p.dims == std::vector<uint32_t>{3, 211, 223});
      CHECK(p.data == std::vector<uint8_t>(big.begin(), big.begin() + 3 * 211 * 223));
    }
  }

  TEST_CASE("idx: truncated files name the file and the byte counts") {
    TempDir d;
    auto bytes = idx_bytes(0x803, {10, 28, 28}, pixels(10, 28, 28));
    bytes.resize(16 + 1000);  // header + 1000 of 7840 data bytes
    write_raw(d / "t-images", bytes);
    write_gz(d / "t-images.gz", bytes);
    for (const char* name : {"t-images", "t-images.gz"}) {
      const std::string path = d / name;
      const std::string msg = user_error([&] { read_idx_u8(path, 3, "image"); });
      CHECK(msg == path + ": truncated: expected 7840 bytes of image data, got 1000");
    }
    // A gzip stream cut in the middle (not a complete gzip of a short file).
    {
      write_gz(d / "full.gz", idx_bytes(0x803, {10, 28, 28}, pixels(10, 28, 28)));
      std::ifstream f(d / "full.gz", std::ios::binary);
      std::vector<uint8_t> gz((std::istreambuf_iterator<char>(f)),
                              std::istreambuf_iterator<char>());
      gz.resize(gz.size() / 2);
      write_raw(d / "cut.gz", gz);
      const std::string msg = user_error([&] { read_idx_u8(d / "cut.gz", 3, "image"); });
      CHECK(msg.find(d / "cut.gz") == 0);
      CHECK(msg.find("truncated") != std::string::npos);
    }
    // Header cut inside the dimensions.
    write_raw(d / "short", {0, 0, 8, 3, 0, 0});
    CHECK(user_error([&] { read_idx_u8(d / "short", 3, "image"); }).find("truncated") !=
          std::string::npos);
    write_raw(d / "empty", {});
    CHECK(user_error([&] { read_idx_u8(d / "empty", 1, "label"); }).find("truncated") !=
          std::string::npos);
    // A header announcing ~4 GB (fuzz_idx regression, tests/fuzz/corpus_idx/
    // regress-oom-huge-header-count.idx1): "truncated" after reading the 5 bytes there
    // are, without allocating what the header claims.
    write_raw(d / "huge", {0, 0, 8, 1, 0xfe, 0xff, 0xff, 0x04, 1, 2, 3, 4, 5});
    write_gz(d / "huge.gz", {0, 0, 8, 1, 0xfe, 0xff, 0xff, 0x04, 1, 2, 3, 4, 5});
    for (const char* name : {"huge", "huge.gz"}) {
      const std::string path = d / name;
      CHECK(user_error([&] { read_idx_u8(path, 1, "label"); }) ==
            path + ": truncated: expected 4278189828 bytes of label data, got 5");
    }
    // The same for a prefix read (max_items): 1000 items of 16 MiB announced, 2 bytes there.
    write_raw(d / "huge3", idx_bytes(0x803, {1000, 4096, 4096}, {7, 7}));
    CHECK(user_error([&] { read_idx_u8(d / "huge3", 3, "image", 10); }) ==
          (d / "huge3") + ": truncated: expected 167772160 bytes of image data, got 2");
  }

  TEST_CASE("idx: wrong magic, element type, dimension count, trailing bytes, missing file") {
    TempDir d;
    write_raw(d / "png", {0x89, 'P', 'N', 'G', 0, 0, 0, 1});
    std::string msg = user_error([&] { read_idx_u8(d / "png", 3, "image"); });
    CHECK(msg.find(d / "png") == 0);
    CHECK(msg.find("wrong magic 0x89504e47") != std::string::npos);
    CHECK(msg.find("0x00000803") != std::string::npos);

    write_raw(d / "float", idx_bytes(0x0D03, {1, 2, 2}, std::vector<uint8_t>(16)));
    CHECK(user_error([&] { read_idx_u8(d / "float", 3, "image"); }).find("not unsigned byte") !=
          std::string::npos);

    write_raw(d / "labels", idx_bytes(0x801, {4}, {1, 2, 3, 4}));
    msg = user_error([&] { read_idx_u8(d / "labels", 3, "image"); });  // labels given as images
    CHECK(msg.find("1 dimensions, expected 3") != std::string::npos);

    auto extra = idx_bytes(0x801, {4}, {1, 2, 3, 4});
    extra.push_back(9);
    write_raw(d / "extra", extra);
    CHECK(user_error([&] { read_idx_u8(d / "extra", 1, "label"); }).find("trailing bytes") !=
          std::string::npos);

    msg = user_error([&] { read_idx_u8(d / "nope.gz", 1, "label"); });
    CHECK(msg.find(d / "nope.gz") == 0);
    CHECK(msg.find("cannot open") != std::string::npos);
  }

  TEST_CASE("idx: image/label pairs: count mismatch, label range, directory errors") {
    TempDir d;
    write_gz(d / "img.gz", idx_bytes(0x803, {6, 28, 28}, pixels(6, 28, 28)));
    write_gz(d / "lab.gz", idx_bytes(0x801, {5}, {0, 1, 2, 3, 4}));
    std::string msg = user_error([&] { load_idx_pair(d / "img.gz", d / "lab.gz", 10); });
    CHECK(msg.find(d / "img.gz") == 0);
    CHECK(msg.find("count mismatch: 6 images but 5 labels") != std::string::npos);

    write_gz(d / "lab6.gz", idx_bytes(0x801, {6}, {0, 1, 2, 3, 4, 10}));
    msg = user_error([&] { load_idx_pair(d / "img.gz", d / "lab6.gz", 10); });
    CHECK(msg.find("label 10 of sample 5 is outside [0, 10)") != std::string::npos);

    auto ok = load_idx_pair(d / "img.gz", d / "lab6.gz", 11);
    CHECK(ok->size() == 6);
    CHECK(ok->h == 28);

    msg = user_error([&] { load_mnist_dir(d / "missing", 10, 0, 0); });
    CHECK(msg.find(d / "missing") == 0);
    CHECK(msg.find("scripts/install-deps.sh") != std::string::npos);
    msg = user_error([&] { load_mnist_dir(d.path.string(), 10, 0, 0); });  // no train-* files
    INFO(msg);
    CHECK(msg.find("train-images-idx3-ubyte") != std::string::npos);
    CHECK(msg.find("scripts/install-deps.sh") != std::string::npos);
  }

  TEST_CASE("idx: ImageDataset normalizes like ToTensor+Normalize and gathers without allocating") {
    auto data = std::make_shared<ImageData>();
    data->h = 2, data->w = 2;
    data->pixels = {0, 255, 128, 1, 10, 20, 30, 40, 5, 6, 7, 8};
    data->labels = {3, 1, 4};
    ImageDataset ds(data, 0.5, 0.25);
    CHECK(ds.size() == 3);
    Batch b;
    ds.reserve(b, 2);
    const float* px = b.x.data();
    const size_t cap = b.x.capacity();
    const std::vector<uint32_t> i1 = {2, 0};
    ds.gather(i1, b);
    CHECK(b.n == 2);
    CHECK(b.label == std::vector<int32_t>{4, 3});
    CHECK(b.x[0] == doctest::Approx((5 / 255.0 - 0.5) / 0.25));
    CHECK(b.x[5] == doctest::Approx((255 / 255.0 - 0.5) / 0.25));
    const std::vector<uint32_t> i2 = {1};
    ds.gather(i2, b);
    CHECK(b.n == 1);
    CHECK(b.x.size() == 4);
    CHECK(b.x.data() == px);  // no reallocation
    CHECK(b.x.capacity() == cap);
    CHECK_THROWS_AS(ImageDataset(data, 0.1, 0.0), UserError);
  }

}  // TEST_SUITE("idx")
