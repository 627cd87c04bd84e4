// Optimizers: one instance per logical worker (its state is that worker's: momentum
// buffers stay local, as in Horovod and the local-SGD papers' code). Registered by name
// with typed parameters, like algorithms.
//
// Contract: step(w, g, lr) applies one update in place. g is the gradient (or combined
// gradient) for this step; lr comes from the schedule (and any LR scaling rule).
//
// Checkpoints: state() flattens everything the next step depends on (moment buffers,
// step counters, "first step" flags) into floats; set_state() on a fresh instance built
// with the same parameters and OptimizerEnv restores it, so that the two instances then
// produce bit-identical steps. Counters are stored as floats: exact up to 2^24 steps.
//
// Optimizers (train/optimizer_*.cpp, `workbench list` shows their parameters):
//   sgd    torch.optim.SGD + weight_decay_mode coupled|decoupled (SGDW)
//   adam   Kingma & Ba 2015 with bias correction (torch.optim.Adam); adamw = decoupled
//          weight decay (Loshchilov & Hutter 2019, torch.optim.AdamW)
//   lamb   You et al. 2019: Adam direction + per-tensor trust ratio ||w|| / ||update||
//   lars   You et al. 2017: momentum SGD with a per-tensor trust ratio eta ||w|| / ||g||
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "models/model.h"
#include "core/error.h"
#include "core/registry.h"

namespace wb::train {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual void step(std::span<float> w, std::span<const float> g, double lr) = 0;
  // Optimizer state as a flat vector (checkpoints; tests). Empty for stateless ones.
  virtual std::vector<float> state() const { return {}; }
  // Restore a state() taken from an instance with the same parameters and env. The
  // default (stateless optimizers) accepts only an empty state.
  virtual void set_state(std::span<const float> s) {
    if (!s.empty())
      throw InternalError("optimizer: set_state() given " + std::to_string(s.size()) +
                          " values, but this optimizer is stateless");
  }
};

// For set_state() implementations: a state of the wrong length is a checkpoint that
// belongs to another optimizer or model (a bug or a corrupt file, not user input).
inline void check_state_size(std::span<const float> s, size_t want, const char* who) {
  if (s.size() != want)
    throw InternalError(std::string(who) + ": set_state() given " + std::to_string(s.size()) +
                        " values, expected " + std::to_string(want));
}

// The state of the Adam family (Adam, AdamW, LAMB): [t, m..., v...]. One layout for all of
// them, so a checkpoint format change happens in one place.
inline std::vector<float> pack_moments(int64_t t, const std::vector<float>& m, const std::vector<float>& v) {
  std::vector<float> s;
  s.reserve(1 + m.size() + v.size());
  s.push_back(static_cast<float>(t));
  s.insert(s.end(), m.begin(), m.end());
  s.insert(s.end(), v.begin(), v.end());
  return s;
}
inline void unpack_moments(std::span<const float> s, int64_t& t, std::vector<float>& m,
                           std::vector<float>& v, const char* who) {
  check_state_size(s, 1 + m.size() + v.size(), who);
  t = static_cast<int64_t>(s[0]);
  const auto nm = static_cast<std::ptrdiff_t>(m.size());
  std::copy(s.begin() + 1, s.begin() + 1 + nm, m.begin());
  std::copy(s.begin() + 1 + nm, s.end(), v.begin());
}

struct OptimizerEnv {
  size_t num_params = 0;
  const std::vector<models::TensorInfo>* tensors = nullptr;
};

// Tensor boundaries [offset, offset + size) for per-tensor rules (LAMB, LARS): the
// model's tensors, or the whole vector as one tensor when env.tensors is null.
struct TensorRange {
  size_t offset = 0, size = 0;
};
inline std::vector<TensorRange> tensor_ranges(const OptimizerEnv& env) {
  std::vector<TensorRange> r;
  if (env.tensors && !env.tensors->empty()) {
    for (const auto& t : *env.tensors) r.push_back({t.offset, t.size});
  } else {
    r.push_back({0, env.num_params});
  }
  return r;
}

using OptimizerRegistry = core::Registry<Optimizer, const OptimizerEnv&>;
OptimizerRegistry& optimizer_registry();

}  // namespace wb::train

#define WB_REGISTER_OPTIMIZER(NAME, IMPL, PARAMS, DOC) \
  WB_REGISTER(::wb::train::optimizer_registry, NAME, IMPL, PARAMS, DOC)
