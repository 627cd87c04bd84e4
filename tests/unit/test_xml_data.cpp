// The Extreme Classification Repository reader (models/xml_data.h): well-formed input,
// every malformed-input error with its line number, the synthetic generator, and the real
// Bibtex files when they are present (skipped otherwise).
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>

#include "models/xml_data.h"
#include "core/error.h"

using namespace wb;
using wb::models::parse_xml;

namespace {

std::string error_of(const std::string& text) {
  std::istringstream in(text);
  try {
    parse_xml(in, "t.txt");
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

}  // namespace

TEST_CASE("xml reader: labels, features, rows without labels, CRLF, trailing blank lines") {
  std::istringstream in("4 5 4\n0,2 1:1 3:0.5\n 0:2\n3\r\n1 4:1 2:-1.5e-1\n\n\n");
  const models::XmlData d = parse_xml(in, "t.txt");
  REQUIRE(d.size() == 4);
  CHECK(d.features == 5);
  CHECK(d.labels == 4);
  CHECK(d.x_ptr == std::vector<int64_t>{0, 2, 3, 3, 5});
  CHECK(d.x_idx == std::vector<int32_t>{1, 3, 0, 2, 4});  // sorted within a row
  CHECK(d.x_val == std::vector<float>{1.f, 0.5f, 2.f, -0.15f, 1.f});
  CHECK(d.y_ptr == std::vector<int64_t>{0, 2, 2, 3, 4});
  CHECK(d.y_idx == std::vector<int32_t>{0, 2, 3, 1});
  CHECK(d.max_row_nnz() == 2);
  CHECK(d.mean_nnz() == doctest::Approx(5.0 / 4));
}

TEST_CASE("xml reader: malformed input -> UserError naming file:line") {
  const std::pair<const char*, const char*> cases[] = {
      {"", "t.txt:1: empty file"},
      {"3 5\n", "t.txt:1: malformed header \"3 5\""},
      {"x 5 4\n", "t.txt:1: malformed header"},
      {"1 0 4\n", "t.txt:1: malformed header"},
      {"2 5 4\n0 1:1\n1 x:1\n", "t.txt:3: malformed feature index in \"x:1\""},
      {"1 5 4\n0 1:abc\n", "t.txt:2: malformed feature value in \"1:abc\""},
      {"1 5 4\n0 1:nan\n", "t.txt:2: malformed feature value"},
      {"1 5 4\n0 1:1 7\n", "t.txt:2: malformed feature \"7\": expected index:value"},
      {"1 5 4\n0,,1 1:1\n", "t.txt:2: malformed label \"\" in \"0,,1\""},
      {"1 5 4\na 1:1\n", "t.txt:2: malformed label \"a\""},
      {"2 5 4\n0 1:1\n0 5:1\n", "t.txt:3: feature 5 out of range [0, 5)"},
      {"1 5 4\n0 -1:1\n", "t.txt:2: feature -1 out of range [0, 5)"},
      {"1 5 4\n4 1:1\n", "t.txt:2: label 4 out of range [0, 4)"},
      {"1 5 4\n-1 1:1\n", "t.txt:2: label -1 out of range [0, 4)"},
      {"1 5 4\n0 1:1 1:2\n", "t.txt:2: duplicate feature 1"},
      {"1 5 4\n2,2 1:1\n", "t.txt:2: duplicate label 2"},
      {"3 5 4\n0 1:1\n1 2:1\n", "t.txt:1: header says N = 3 rows, the file has 2"},
      {"1 5 4\n0 1:1\n1 2:1\n", "t.txt:3: more rows than the header's N = 1"},
      {"2 5 4\n0 1:1\n\n1 2:1\n", "t.txt:3: empty row"},
  };
  for (auto [text, want] : cases) {
    INFO("input: " << text);
    const std::string got = error_of(text);
    CHECK_MESSAGE(starts_with(got, want), "got: " << got);
  }
}

TEST_CASE("xml reader: limit keeps the first rows and still checks the header count") {
  std::istringstream in("3 5 4\n0 1:1\n1 2:1\n2 3:1\n");
  const auto d = parse_xml(in, "t.txt", 2);
  CHECK(d.size() == 2);
  CHECK(d.y_idx == std::vector<int32_t>{0, 1});
  CHECK(starts_with(error_of("3 5 4\n0 1:1\n1 2:1\n"), "t.txt:1: header says N = 3"));
  std::istringstream short_in("3 5 4\n0 1:1\n");
  CHECK_THROWS_AS(parse_xml(short_in, "t.txt", 1), UserError);
}

TEST_CASE("xml reader: a missing file is a UserError naming the path") {
  try {
    models::read_xml_file("/nonexistent/train.txt");
    FAIL("no error");
  } catch (const UserError& e) {
    CHECK(e.where == "/nonexistent/train.txt");
  }
}

TEST_CASE("XmlDataset: gather fills CSR batches without allocating after reserve") {
  models::XmlSyntheticParams p;
  p.train_size = 300;
  p.test_size = 10;
  const auto s = models::make_synthetic_xml(p);
  models::XmlDataset ds(s.train);
  models::Batch b;
  ds.reserve(b, 64);
  const auto cap_idx = b.x_idx.capacity(), cap_y = b.y_idx.capacity();
  const auto* data_before = b.x_idx.data();
  std::vector<uint32_t> idx(64);
  for (uint32_t round = 0; round < 4; ++round) {
    for (uint32_t i = 0; i < 64; ++i) idx[i] = (i * 37 + round * 11) % 300;
    ds.gather(idx, b);
    CHECK(b.n == 64);
    CHECK(b.x_idx.capacity() == cap_idx);
    CHECK(b.y_idx.capacity() == cap_y);
    CHECK(b.x_idx.data() == data_before);
    // Row 5 of the batch is data row idx[5].
    const auto& d = *s.train;
    const uint32_t r = idx[5];
    CHECK(b.x_ptr[6] - b.x_ptr[5] == d.x_ptr[r + 1] - d.x_ptr[r]);
    CHECK(b.x_idx[static_cast<size_t>(b.x_ptr[5])] == d.x_idx[static_cast<size_t>(d.x_ptr[r])]);
    CHECK(b.y_ptr[6] - b.y_ptr[5] == d.y_ptr[r + 1] - d.y_ptr[r]);
  }
}

TEST_CASE("synthetic XML data: Bibtex shape, deterministic, power-law labels, varying nnz") {
  models::XmlSyntheticParams p;  // defaults: Bibtex-sized
  const auto a = models::make_synthetic_xml(p);
  const auto b = models::make_synthetic_xml(p);
  CHECK(a.train->size() == 4880);
  CHECK(a.test->size() == 2515);
  CHECK(a.train->features == 1836);
  CHECK(a.train->labels == 159);
  CHECK(a.train->x_idx == b.train->x_idx);
  CHECK(a.test->y_idx == b.test->y_idx);
  CHECK(a.train->mean_nnz() == doctest::Approx(68.6).epsilon(0.1));
  const double labels_per_row =
      static_cast<double>(a.train->y_idx.size()) / static_cast<double>(a.train->size());
  CHECK(labels_per_row == doctest::Approx(2.4).epsilon(0.1));
  // Power law: the most frequent label is far above the median one.
  std::vector<int> freq(159, 0);
  for (int32_t l : a.train->y_idx) ++freq[static_cast<size_t>(l)];
  std::sort(freq.begin(), freq.end());
  CHECK(freq.back() > 8 * std::max(1, freq[freq.size() / 2]));
  // Row lengths vary (heterogeneous batch costs).
  CHECK(a.train->max_row_nnz() > 2 * 68);
  p.data_seed = 1;
  CHECK(models::make_synthetic_xml(p).train->x_idx != a.train->x_idx);
}

// Needs the real Bibtex set beside the checkout (../shared/data/xml/bibtex): CTest runs this
// suite as `unit_bibtex`, reported as skipped (exit 77) where it is absent.
TEST_SUITE("needs_bibtex") {
TEST_CASE("Bibtex (Extreme Classification Repository) loads") {
  const std::string dir = std::string(WB_SOURCE_DIR) + "/../shared/data/xml/bibtex";
  REQUIRE_MESSAGE(std::filesystem::exists(dir + "/train.txt"),
                  dir << " is absent: run this suite through ctest, which skips it");
  const auto s = models::load_xml_dir(dir, "train.txt", "test.txt", 0, 0);
  CHECK(s.train->size() == 4880);
  CHECK(s.test->size() == 2515);
  CHECK(s.train->features == 1836);
  CHECK(s.train->labels == 159);
  CHECK(s.train->mean_nnz() == doctest::Approx(68.58).epsilon(0.01));
  // Cached: the second load returns the same object.
  CHECK(models::load_xml_dir(dir, "train.txt", "test.txt", 0, 0).train == s.train);
}
}  // TEST_SUITE("needs_bibtex")
