#include "models/text_data.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <map>
#include <mutex>
#include <sstream>

#include "core/error.h"
#include "models/data_file.h"

namespace wb::models {

std::string kjv_cache_path() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  std::string base;
  if (xdg && *xdg) {
    base = xdg;
  } else {
    const char* home = std::getenv("HOME");
    base = std::string(home && *home ? home : "/tmp") + "/.cache";
  }
  return base + "/psgd-workbench/kjv.txt";
}

std::string ensure_kjv_text() {
  const std::string path = kjv_cache_path();
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec) && std::filesystem::file_size(path, ec) > 0)
    return path;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (ec) throw UserError(path, "cannot create the cache directory: " + ec.message());
  // A unique temporary name in the same directory, renamed into place once complete.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  FILE* in = ::popen("bible \"Gen1:1-Rev22:21\" 2>/dev/null", "r");
  if (!in) throw UserError(path, "cannot run `bible` to export the King James Bible");
  std::string text;
  char buf[1 << 16];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, in)) > 0) text.append(buf, got);
  const int rc = ::pclose(in);
  if (rc != 0 || text.empty())
    throw UserError(path, "`bible \"Gen1:1-Rev22:21\"` failed (install bible-kjv and "
                          "bible-kjv-text: scripts/install-deps.sh), or set model.data_path");
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.close();
    if (!out) {
      std::filesystem::remove(tmp, ec);
      throw UserError(path, "cannot write the exported text: " + std::string(std::strerror(errno)));
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw UserError(path, "cannot rename the exported text into place: " + ec.message());
  }
  return path;
}

std::shared_ptr<const TextCorpus> make_text_corpus(const std::string& text, int vocab, int block,
                                                   const std::string& source) {
  WB_ASSERT(vocab == 0 || vocab == 256, "text corpus: vocab must be 0 or 256");
  if (text.empty()) throw UserError(source, "the text file is empty");
  auto c = std::make_shared<TextCorpus>();
  c->source = source;
  int id_of[256];
  if (vocab == 256) {
    for (int b = 0; b < 256; ++b) id_of[b] = b, c->bytes_of.push_back(static_cast<uint8_t>(b));
  } else {
    bool seen[256] = {};
    for (unsigned char ch : text) seen[ch] = true;
    for (int b = 0; b < 256; ++b) {
      id_of[b] = -1;
      if (seen[b]) id_of[b] = static_cast<int>(c->bytes_of.size()), c->bytes_of.push_back(static_cast<uint8_t>(b));
    }
  }
  c->vocab = static_cast<int>(c->bytes_of.size());
  c->tokens.resize(text.size());
  for (size_t i = 0; i < text.size(); ++i)
    c->tokens[i] = static_cast<uint8_t>(id_of[static_cast<unsigned char>(text[i])]);
  const size_t n_val = text.size() / 10;
  c->train_end = text.size() - n_val;
  const size_t need = static_cast<size_t>(block) + 1;
  if (c->train_end < need || n_val < need)
    throw UserError(source, "the text holds " + std::to_string(text.size()) +
                                " bytes: too short for one window of block + 1 = " +
                                std::to_string(need) + " bytes in both the training part (90%) "
                                "and the validation part (the last 10%); need at least " +
                                std::to_string(need * 10) + " bytes");
  return c;
}

std::shared_ptr<const TextCorpus> load_text_corpus(const std::string& path_in, int vocab,
                                                   int block) {
  static std::mutex mu;
  static std::map<std::pair<std::string, int>, std::shared_ptr<const TextCorpus>> cache;
  const std::string path = path_in.empty() ? ensure_kjv_text() : path_in;
  std::lock_guard<std::mutex> lock(mu);
  std::shared_ptr<const TextCorpus> c;
  auto it = cache.find({path, vocab});
  if (it != cache.end()) {
    c = it->second;
  } else {
    require_regular_file(path, "text file");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw UserError(path, "cannot open the text file: " + std::string(std::strerror(errno)));
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) throw UserError(path, "cannot read the text file");
    c = make_text_corpus(ss.str(), vocab, block, path);
    cache[{path, vocab}] = c;
  }
  // The length check depends on block: re-run it on the cached corpus.
  const size_t need = static_cast<size_t>(block) + 1;
  if (c->train_end < need || c->tokens.size() - c->train_end < need)
    throw UserError(path, "the text holds " + std::to_string(c->tokens.size()) +
                              " bytes: too short for one window of block + 1 = " +
                              std::to_string(need) + " bytes in both the training part (90%) "
                              "and the validation part (the last 10%)");
  return c;
}

namespace {

class TextWindows final : public Dataset {
 public:
  TextWindows(std::shared_ptr<const TextCorpus> c, TextSplit split, int block, size_t limit)
      : c_(std::move(c)), block_(block) {
    const size_t w = static_cast<size_t>(block) + 1;
    if (split == TextSplit::kTrain) {
      begin_ = 0, stride_ = 1;
      count_ = c_->train_end - w + 1;
    } else {
      begin_ = c_->train_end, stride_ = static_cast<size_t>(block);
      const size_t len = c_->tokens.size() - c_->train_end;
      count_ = (len - 1) / stride_;  // window k spans [k*block, k*block + block + 1)
    }
    if (limit > 0) count_ = std::min(count_, limit);
  }
  size_t size() const override { return count_; }
  void reserve(Batch& b, int max_batch) const override {
    b.label.reserve(static_cast<size_t>(max_batch) * (block_ + 1));
  }
  void gather(std::span<const uint32_t> idx, Batch& b) const override {
    const size_t w = static_cast<size_t>(block_) + 1;
    b.n = static_cast<int>(idx.size());
    b.label.resize(idx.size() * w);
    for (size_t i = 0; i < idx.size(); ++i) {
      const uint8_t* src = c_->tokens.data() + begin_ + static_cast<size_t>(idx[i]) * stride_;
      for (size_t j = 0; j < w; ++j) b.label[i * w + j] = src[j];
    }
  }
  size_t bytes() const override { return c_->tokens.size(); }

 private:
  std::shared_ptr<const TextCorpus> c_;
  int block_;
  size_t begin_ = 0, stride_ = 1, count_ = 0;
};

}  // namespace

std::shared_ptr<const Dataset> make_text_windows(std::shared_ptr<const TextCorpus> corpus,
                                                 TextSplit split, int block, size_t limit) {
  return std::make_shared<TextWindows>(std::move(corpus), split, block, limit);
}

}  // namespace wb::models
