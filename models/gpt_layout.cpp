#include "models/gpt_layout.h"

#include <cstdint>
#include <string>
#include <utility>

#include "core/error.h"

namespace wb::models {

std::vector<TensorInfo> gpt_layout(const GptConfig& c) {
  WB_ASSERT(c.layers >= 1 && c.heads >= 1 && c.d_model >= 1 && c.block >= 1 && c.vocab >= 1,
            "gpt: layers, heads, d_model, block and vocab must be positive");
  WB_ASSERT(c.d_model % c.heads == 0, "gpt: d_model must be a multiple of heads");
  const int64_t C = c.d_model;
  std::vector<std::pair<std::string, std::vector<int64_t>>> t;
  t.push_back({"transformer.wte.weight", {c.vocab, C}});
  t.push_back({"transformer.wpe.weight", {c.block, C}});
  for (int l = 0; l < c.layers; ++l) {
    const std::string p = "transformer.h." + std::to_string(l) + ".";
    t.push_back({p + "ln_1.weight", {C}});
    t.push_back({p + "ln_1.bias", {C}});
    t.push_back({p + "attn.c_attn.weight", {3 * C, C}});
    t.push_back({p + "attn.c_attn.bias", {3 * C}});
    t.push_back({p + "attn.c_proj.weight", {C, C}});
    t.push_back({p + "attn.c_proj.bias", {C}});
    t.push_back({p + "ln_2.weight", {C}});
    t.push_back({p + "ln_2.bias", {C}});
    t.push_back({p + "mlp.c_fc.weight", {4 * C, C}});
    t.push_back({p + "mlp.c_fc.bias", {4 * C}});
    t.push_back({p + "mlp.c_proj.weight", {C, 4 * C}});
    t.push_back({p + "mlp.c_proj.bias", {C}});
  }
  t.push_back({"transformer.ln_f.weight", {C}});
  t.push_back({"transformer.ln_f.bias", {C}});
  return make_layout(t);
}

}  // namespace wb::models
