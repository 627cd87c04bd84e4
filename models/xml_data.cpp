#include "models/xml_data.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>

#include "models/data_file.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/rng.h"

namespace wb::models {

void XmlSyntheticParams::describe(core::ParamSet<XmlSyntheticParams>& p) {
  p.field("train_size", &XmlSyntheticParams::train_size, "training rows (Bibtex: 4880)").min(1);
  p.field("test_size", &XmlSyntheticParams::test_size, "test rows (Bibtex: 2515)").min(1);
  p.field("features", &XmlSyntheticParams::features, "feature dimension F (Bibtex: 1836)").min(1);
  p.field("labels", &XmlSyntheticParams::labels, "label count L (Bibtex: 159)").min(2);
  p.field("nnz", &XmlSyntheticParams::nnz, "mean non-zero features per row (Bibtex: 68.6)")
      .min(1);
  p.field("nnz_sigma", &XmlSyntheticParams::nnz_sigma,
          "log-normal spread of the per-row nnz (0 = every row has ~nnz)")
      .min(0)
      .max(3);
  p.field("labels_per_row", &XmlSyntheticParams::labels_per_row,
          "mean labels per row: 1 + Poisson(labels_per_row - 1) (Bibtex: 2.4)")
      .min(1);
  p.field("feature_zipf", &XmlSyntheticParams::feature_zipf,
          "power-law exponent of feature frequencies (P(rank r) ~ r^-s)")
      .min(0);
  p.field("label_zipf", &XmlSyntheticParams::label_zipf,
          "power-law exponent of label frequencies (P(rank r) ~ r^-s)")
      .min(0);
  p.field("signature", &XmlSyntheticParams::signature,
          "features per label signature (what makes labels learnable)")
      .min(1);
  p.field("signal", &XmlSyntheticParams::signal,
          "fraction of a row's non-zeros drawn from its labels' signatures (rest: Zipf noise)")
      .min(0)
      .max(1);
  p.field("data_seed", &XmlSyntheticParams::data_seed, "seed of the synthetic data set").min(0);
  p.check([](const XmlSyntheticParams& s, const core::Where& w) {
    if (s.signature > s.features)
      w.key("signature").fail("must be <= features (" + std::to_string(s.features) + ")");
    if (s.nnz > static_cast<double>(s.features))
      w.key("nnz").fail("must be <= features (" + std::to_string(s.features) + ")");
    if (s.labels_per_row > static_cast<double>(s.labels))
      w.key("labels_per_row").fail("must be <= labels (" + std::to_string(s.labels) + ")");
  });
}

int64_t XmlData::max_row_nnz() const {
  int64_t m = 0;
  for (size_t i = 0; i + 1 < x_ptr.size(); ++i) m = std::max(m, x_ptr[i + 1] - x_ptr[i]);
  return m;
}
int64_t XmlData::max_row_labels() const {
  int64_t m = 0;
  for (size_t i = 0; i + 1 < y_ptr.size(); ++i) m = std::max(m, y_ptr[i + 1] - y_ptr[i]);
  return m;
}

// ---- reader ---------------------------------------------------------------------------
namespace {

bool is_space(char c) { return c == ' ' || c == '\t'; }

template <class I>
bool parse_int(std::string_view s, I& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool parse_float(std::string_view s, float& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && std::isfinite(out);
}

// A token of the file, quoted for an error line: at most 40 bytes, control characters (a NUL
// inside a row, a stray carriage return) written as \u00XX as the spec errors do, so the
// message is one printable line and does not stop at a NUL.
std::string quote(std::string_view s) {
  std::string q = "\"";
  for (const char ch : s.substr(0, 40)) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04X", c);
      q += buf;
    } else if (c == '"' || c == '\\') {
      q += '\\';
      q += ch;
    } else {
      q += ch;
    }
  }
  if (s.size() > 40) q += "...";
  return q + "\"";
}

}  // namespace

XmlData parse_xml(std::istream& in, const std::string& name, uint64_t limit) {
  XmlData d;
  d.source = name;
  auto fail = [&](int64_t line, const std::string& what) -> void {
    throw UserError(name + ":" + std::to_string(line), what);
  };
  std::string line;
  int64_t lineno = 0;
  auto next_line = [&]() -> bool {
    if (!std::getline(in, line)) return false;
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return true;
  };

  // Header "N F L".
  if (!next_line()) fail(1, "empty file: expected the header \"N F L\" (rows features labels)");
  int64_t N = -1;
  {
    std::vector<std::string_view> tok;
    std::string_view s(line);
    size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && is_space(s[i])) ++i;
      size_t j = i;
      while (j < s.size() && !is_space(s[j])) ++j;
      if (j > i) tok.push_back(s.substr(i, j - i));
      i = j;
    }
    int64_t F = 0, L = 0;
    if (tok.size() != 3 || !parse_int(tok[0], N) || !parse_int(tok[1], F) ||
        !parse_int(tok[2], L) || N < 0 || F < 1 || L < 1 ||
        F > std::numeric_limits<int32_t>::max() || L > std::numeric_limits<int32_t>::max())
      fail(1, "malformed header " + quote(line) +
                  ": expected \"N F L\" (rows, features >= 1, labels >= 1)");
    d.features = F;
    d.labels = L;
  }

  std::vector<std::pair<int32_t, float>> feats;
  std::vector<int32_t> labs;
  int64_t rows = 0, first_blank = 0;
  const uint64_t keep = limit > 0 ? limit : std::numeric_limits<uint64_t>::max();
  while (next_line()) {
    if (lineno % 4096 == 0) core::throw_if_interrupted();
    std::string_view s(line);
    size_t i = 0;
    while (i < s.size() && is_space(s[i])) ++i;
    if (i == s.size()) {  // blank: fine at the end of the file, an error before a row
      if (first_blank == 0) first_blank = lineno;
      continue;
    }
    if (first_blank != 0) fail(first_blank, "empty row (a row needs labels and/or features)");
    if (rows == N)
      fail(lineno, "more rows than the header's N = " + std::to_string(N) + " (line 1)");
    ++rows;
    if (static_cast<uint64_t>(rows) > keep) continue;  // counted only: the header is checked

    feats.clear();
    labs.clear();
    // Labels: the first token when the row does not start with whitespace and the token
    // has no ':' (a row without labels starts with its features).
    bool first = true;
    while (i < s.size()) {
      size_t j = i;
      while (j < s.size() && !is_space(s[j])) ++j;
      const std::string_view tok = s.substr(i, j - i);
      const size_t colon = tok.find(':');
      if (first && colon == std::string_view::npos && i == 0) {
        size_t a = 0;
        while (a <= tok.size()) {
          size_t b = tok.find(',', a);
          if (b == std::string_view::npos) b = tok.size();
          const std::string_view lt = tok.substr(a, b - a);
          int64_t l = 0;
          if (!parse_int(lt, l))
            fail(lineno, "malformed label " + quote(lt) + " in " + quote(tok) +
                             ": expected comma-separated integers");
          if (l < 0 || l >= d.labels)
            fail(lineno, "label " + std::to_string(l) + " out of range [0, " +
                             std::to_string(d.labels) + ")");
          labs.push_back(static_cast<int32_t>(l));
          a = b + 1;
        }
      } else {
        if (colon == std::string_view::npos)
          fail(lineno, "malformed feature " + quote(tok) + ": expected index:value" +
                           (first ? "" : " (labels come first, comma-separated, no spaces)"));
        int64_t f = 0;
        float v = 0;
        if (!parse_int(tok.substr(0, colon), f))
          fail(lineno, "malformed feature index in " + quote(tok) + ": expected an integer");
        if (!parse_float(tok.substr(colon + 1), v))
          fail(lineno, "malformed feature value in " + quote(tok) + ": expected a finite number");
        if (f < 0 || f >= d.features)
          fail(lineno, "feature " + std::to_string(f) + " out of range [0, " +
                           std::to_string(d.features) + ")");
        feats.emplace_back(static_cast<int32_t>(f), v);
      }
      first = false;
      i = j;
      while (i < s.size() && is_space(s[i])) ++i;
    }
    std::sort(feats.begin(), feats.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t k = 1; k < feats.size(); ++k)
      if (feats[k].first == feats[k - 1].first)
        fail(lineno, "duplicate feature " + std::to_string(feats[k].first));
    std::sort(labs.begin(), labs.end());
    for (size_t k = 1; k < labs.size(); ++k)
      if (labs[k] == labs[k - 1]) fail(lineno, "duplicate label " + std::to_string(labs[k]));
    for (auto& [f, v] : feats) {
      d.x_idx.push_back(f);
      d.x_val.push_back(v);
    }
    d.x_ptr.push_back(static_cast<int64_t>(d.x_idx.size()));
    d.y_idx.insert(d.y_idx.end(), labs.begin(), labs.end());
    d.y_ptr.push_back(static_cast<int64_t>(d.y_idx.size()));
  }
  if (in.bad()) throw UserError(name, "read error");
  if (rows != N)
    fail(1, "header says N = " + std::to_string(N) + " rows, the file has " +
                std::to_string(rows));
  return d;
}

XmlData read_xml_file(const std::string& path, uint64_t limit) {
  require_regular_file(path, "XML data file");
  std::ifstream in(path);
  if (!in) throw UserError(path, "cannot open the XML data file (no such file or unreadable)");
  return parse_xml(in, path, limit);
}

XmlSplits load_xml_dir(const std::string& dir, const std::string& train_file,
                       const std::string& test_file, uint64_t train_limit, uint64_t test_limit) {
  static std::mutex mu;
  static std::map<std::string, XmlSplits> cache;
  const std::string tr = dir.empty() ? train_file : dir + "/" + train_file;
  const std::string te = dir.empty() ? test_file : dir + "/" + test_file;
  const std::string key = tr + "\n" + te + "\n" + std::to_string(train_limit) + "\n" +
                          std::to_string(test_limit);
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  XmlSplits s;
  s.train = std::make_shared<const XmlData>(read_xml_file(tr, train_limit));
  s.test = std::make_shared<const XmlData>(read_xml_file(te, test_limit));
  if (s.test->features != s.train->features || s.test->labels != s.train->labels)
    throw UserError(te + ":1", "header has F = " + std::to_string(s.test->features) +
                                   ", L = " + std::to_string(s.test->labels) +
                                   " but the training file " + tr + " has F = " +
                                   std::to_string(s.train->features) +
                                   ", L = " + std::to_string(s.train->labels));
  if (s.train->size() == 0) throw UserError(tr + ":1", "no training rows");
  cache.emplace(key, s);
  return s;
}

// ---- synthetic generator ----------------------------------------------------------------
namespace {

// Inverse-CDF sampling of a Zipf law over ranks 0..n-1, mapped through a random
// permutation so that the frequent ids are scattered (as word ids are in real data).
class ZipfSampler {
 public:
  ZipfSampler(int64_t n, double s, core::Rng& rng)
      : cdf_(static_cast<size_t>(n)), id_(cdf_.size()) {
    double acc = 0;
    for (size_t r = 0; r < cdf_.size(); ++r) {
      acc += 1.0 / std::pow(static_cast<double>(r + 1), s);
      cdf_[r] = acc;
    }
    for (auto& c : cdf_) c /= acc;
    for (size_t i = 0; i < id_.size(); ++i) id_[i] = static_cast<int32_t>(i);
    rng.shuffle(std::span<int32_t>(id_));
  }
  int32_t draw(core::Rng& rng) const {
    const double u = rng.uniform();
    size_t r = static_cast<size_t>(std::upper_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin());
    if (r >= cdf_.size()) r = cdf_.size() - 1;
    return id_[r];
  }

 private:
  std::vector<double> cdf_;
  std::vector<int32_t> id_;
};

int64_t poisson(double mean, core::Rng& rng) {  // Knuth's method (small means only)
  const double limit = std::exp(-mean);
  int64_t k = 0;
  double prod = rng.uniform();
  while (prod > limit && k < 1000) {
    ++k;
    prod *= rng.uniform();
  }
  return k;
}

XmlData synth_split(const XmlSyntheticParams& p, int64_t rows, const ZipfSampler& feat,
                    const ZipfSampler& lab, const std::vector<std::vector<int32_t>>& sig,
                    uint64_t stream) {
  XmlData d;
  d.source = "synthetic";
  d.features = p.features;
  d.labels = p.labels;
  core::Rng rng = core::Rng::stream({static_cast<uint64_t>(p.data_seed), 0x786d6cULL, stream});
  std::vector<char> seen(static_cast<size_t>(p.features), 0), lseen(static_cast<size_t>(p.labels), 0);
  std::vector<int32_t> row, labs;
  const double mu = std::log(p.nnz) - 0.5 * p.nnz_sigma * p.nnz_sigma;  // mean nnz = p.nnz
  d.x_ptr.reserve(static_cast<size_t>(rows) + 1);
  d.y_ptr.reserve(static_cast<size_t>(rows) + 1);
  for (int64_t i = 0; i < rows; ++i) {
    if (i % 1024 == 0) core::throw_if_interrupted();
    // Labels: 1 + Poisson(m - 1) distinct labels from the label Zipf law.
    const int64_t k = std::min<int64_t>(p.labels, 1 + poisson(p.labels_per_row - 1.0, rng));
    labs.clear();
    for (int64_t tries = 0; static_cast<int64_t>(labs.size()) < k && tries < 100 * k; ++tries) {
      const int32_t l = lab.draw(rng);
      if (!lseen[static_cast<size_t>(l)]) {
        lseen[static_cast<size_t>(l)] = 1;
        labs.push_back(l);
      }
    }
    for (int32_t l : labs) lseen[static_cast<size_t>(l)] = 0;
    std::sort(labs.begin(), labs.end());
    // Features: log-normal row length; each slot from a label signature (prob. signal)
    // or from the Zipf noise; duplicates are redrawn (bounded tries).
    const double len = std::exp(mu + p.nnz_sigma * rng.normal());
    const int64_t target =
        std::clamp<int64_t>(static_cast<int64_t>(std::llround(len)), 1, p.features);
    row.clear();
    for (int64_t tries = 0; static_cast<int64_t>(row.size()) < target && tries < 20 * target;
         ++tries) {
      int32_t f;
      if (rng.uniform() < p.signal) {
        const auto& s = sig[static_cast<size_t>(labs[rng.below(labs.size())])];
        f = s[rng.below(s.size())];
      } else {
        f = feat.draw(rng);
      }
      if (!seen[static_cast<size_t>(f)]) {
        seen[static_cast<size_t>(f)] = 1;
        row.push_back(f);
      }
    }
    for (int32_t f : row) seen[static_cast<size_t>(f)] = 0;
    std::sort(row.begin(), row.end());
    d.x_idx.insert(d.x_idx.end(), row.begin(), row.end());
    d.x_val.insert(d.x_val.end(), row.size(), 1.0f);  // binary bag of words, like Bibtex
    d.x_ptr.push_back(static_cast<int64_t>(d.x_idx.size()));
    d.y_idx.insert(d.y_idx.end(), labs.begin(), labs.end());
    d.y_ptr.push_back(static_cast<int64_t>(d.y_idx.size()));
  }
  return d;
}

}  // namespace

XmlSplits make_synthetic_xml(const XmlSyntheticParams& p) {
  core::Rng rng = core::Rng::stream({static_cast<uint64_t>(p.data_seed), 0x786d6cULL, 0});
  const ZipfSampler feat(p.features, p.feature_zipf, rng);
  const ZipfSampler lab(p.labels, p.label_zipf, rng);
  // Signatures: `signature` distinct features per label, uniform over all features (the
  // discriminative words of a tag are mostly mid- and low-frequency ones).
  std::vector<std::vector<int32_t>> sig(static_cast<size_t>(p.labels));
  std::vector<int32_t> all(static_cast<size_t>(p.features));
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int32_t>(i);
  for (auto& s : sig) {
    for (int64_t j = 0; j < p.signature; ++j)  // partial Fisher-Yates
      std::swap(all[static_cast<size_t>(j)],
                all[static_cast<size_t>(j) + rng.below(all.size() - static_cast<size_t>(j))]);
    s.assign(all.begin(), all.begin() + p.signature);
  }
  XmlSplits out;
  out.train = std::make_shared<const XmlData>(synth_split(p, p.train_size, feat, lab, sig, 1));
  out.test = std::make_shared<const XmlData>(synth_split(p, p.test_size, feat, lab, sig, 2));
  return out;
}

// ---- dataset ------------------------------------------------------------------------------
void XmlDataset::reserve(Batch& b, int max_batch) const {
  const size_t n = static_cast<size_t>(max_batch);
  b.x_ptr.reserve(n + 1);
  b.y_ptr.reserve(n + 1);
  b.x_idx.reserve(n * static_cast<size_t>(d_->max_row_nnz()));
  b.x_val.reserve(n * static_cast<size_t>(d_->max_row_nnz()));
  b.y_idx.reserve(n * static_cast<size_t>(d_->max_row_labels()));
}

void XmlDataset::gather(std::span<const uint32_t> idx, Batch& b) const {
  const XmlData& d = *d_;
  b.n = static_cast<int>(idx.size());
  size_t nnz = 0, nl = 0;
  for (uint32_t i : idx) {
    nnz += static_cast<size_t>(d.x_ptr[i + 1] - d.x_ptr[i]);
    nl += static_cast<size_t>(d.y_ptr[i + 1] - d.y_ptr[i]);
  }
  b.x_ptr.resize(idx.size() + 1);
  b.y_ptr.resize(idx.size() + 1);
  b.x_idx.resize(nnz);
  b.x_val.resize(nnz);
  b.y_idx.resize(nl);
  size_t xo = 0, yo = 0;
  b.x_ptr[0] = 0;
  b.y_ptr[0] = 0;
  for (size_t k = 0; k < idx.size(); ++k) {
    const uint32_t i = idx[k];
    const auto x0 = static_cast<size_t>(d.x_ptr[i]), x1 = static_cast<size_t>(d.x_ptr[i + 1]);
    std::copy(d.x_idx.begin() + static_cast<std::ptrdiff_t>(x0),
              d.x_idx.begin() + static_cast<std::ptrdiff_t>(x1), b.x_idx.begin() + static_cast<std::ptrdiff_t>(xo));
    std::copy(d.x_val.begin() + static_cast<std::ptrdiff_t>(x0),
              d.x_val.begin() + static_cast<std::ptrdiff_t>(x1), b.x_val.begin() + static_cast<std::ptrdiff_t>(xo));
    xo += x1 - x0;
    const auto y0 = static_cast<size_t>(d.y_ptr[i]), y1 = static_cast<size_t>(d.y_ptr[i + 1]);
    std::copy(d.y_idx.begin() + static_cast<std::ptrdiff_t>(y0),
              d.y_idx.begin() + static_cast<std::ptrdiff_t>(y1), b.y_idx.begin() + static_cast<std::ptrdiff_t>(yo));
    yo += y1 - y0;
    b.x_ptr[k + 1] = static_cast<int64_t>(xo);
    b.y_ptr[k + 1] = static_cast<int64_t>(yo);
  }
}

}  // namespace wb::models
