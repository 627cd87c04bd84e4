// Byte-level text corpora for the language models (models/gpt.h).
//
//  - The default corpus is the King James Bible as Debian's bible-kjv + bible-kjv-text
//    packages print it (`bible "Gen1:1-Rev22:21"`, 4.3 MB, 73 distinct bytes, public
//    domain). It is exported once into a cache file, $XDG_CACHE_HOME/psgd-workbench/kjv.txt
//    (or ~/.cache/psgd-workbench/kjv.txt), written to a temporary name and renamed, so a
//    concurrent or interrupted export never leaves a partial file behind.
//  - Any other text file is named by the model's `data_path`.
// Tokens are bytes: vocab 0 maps the distinct bytes of the text, sorted, to 0..V-1 (nanoGPT's
// shakespeare_char/prepare.py does the same with characters); vocab 256 keeps byte values.
// The last 10% of the text by position is the validation split, never trained on.
//
// Samples are windows of block + 1 tokens (inputs 0..block-1, targets 1..block):
//  - training: one window per start position of the training part, so the worker's sampler
//    (its own RNG stream, train/worker.h) draws random windows, and a run with unshuffled
//    data walks contiguous windows of its shard;
//  - validation: non-overlapping windows (stride block) covering the validation part, so
//    every validation token is predicted once (the last < block tokens are left out).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/model.h"

namespace wb::models {

struct TextCorpus {
  std::string source;            // the file, for messages
  std::vector<uint8_t> tokens;   // token ids
  std::vector<uint8_t> bytes_of; // bytes_of[id] = the byte of token id
  int vocab = 0;
  size_t train_end = 0;          // tokens [0, train_end) train, [train_end, size) validation
};

// Where the exported King James Bible lives (not created).
std::string kjv_cache_path();
// The exported text's path, exporting it first if the cache file is missing. UserError
// (naming the cache file) when `bible` fails or prints nothing.
std::string ensure_kjv_text();

// Loads `path` ("" = the King James Bible) with vocab 0 or 256. UserError naming the file
// when it is unreadable, empty, or too short for one training and one validation window of
// block + 1 tokens. Loaded corpora are cached per (path, vocab) for the life of the process.
std::shared_ptr<const TextCorpus> load_text_corpus(const std::string& path, int vocab, int block);
// The same from bytes in memory (tests).
std::shared_ptr<const TextCorpus> make_text_corpus(const std::string& text, int vocab, int block,
                                                   const std::string& source);

enum class TextSplit { kTrain, kValidation };
// limit > 0 keeps the first `limit` windows (a quick validation estimate).
std::shared_ptr<const Dataset> make_text_windows(std::shared_ptr<const TextCorpus> corpus,
                                                 TextSplit split, int block, size_t limit = 0);

}  // namespace wb::models
