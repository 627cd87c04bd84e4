// The char-level GPT's shape (models/gpt.h): its configuration and its tensors' order, names
// and shapes (nanoGPT's state_dict). A room of its own so that the reference model
// (models/gpt.h) and its fast path (models/transformer_fast.h) both build on it without
// including each other.
#pragma once

#include <vector>

#include "models/model.h"

namespace wb::models {

struct GptConfig {
  int layers = 4;
  int heads = 4;
  int d_model = 128;
  int block = 64;
  int vocab = 65;
  int hd() const { return d_model / heads; }
};

// Tensor indices in the layout.
struct GptTensors {
  static constexpr int kPerLayer = 12;
  enum : int { kLn1W, kLn1B, kAttnW, kAttnB, kProjW, kProjB, kLn2W, kLn2B, kFcW, kFcB, kMlpW, kMlpB };
  static int wte() { return 0; }
  static int wpe() { return 1; }
  static int layer(int l, int k) { return 2 + kPerLayer * l + k; }
  static int lnf_w(int layers) { return 2 + kPerLayer * layers; }
  static int lnf_b(int layers) { return 3 + kPerLayer * layers; }
};
std::vector<TensorInfo> gpt_layout(const GptConfig& c);

}  // namespace wb::models
