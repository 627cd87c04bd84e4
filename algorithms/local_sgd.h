// Local SGD and post-local SGD (Lin et al. 2020; Chatterjee et al., arXiv:2203.06638's PL-SGD
// baseline): LocalSgd is defined in local_sgd.cpp (registers "local_sgd"); post_local_sgd.cpp
// registers "post_local_sgd" = LocalSgd with a switch point.
#pragma once

#include <span>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/async_common.h"

namespace wb::algo {

// ---------------------------------------------------------------- local / post-local SGD
struct LocalConfig {
  int64_t H = 8;          // local steps between averaging rounds (after the switch)
  double switch_at = 0;   // fraction of the step budget averaged every step (SyncFrequency)
  // bn_stats "averaged": the model state (BatchNorm running statistics) is averaged with the
  // parameters at every round; "local": each worker keeps its own.
  bool average_state = false;
};

// Every worker takes H local optimizer steps on its own batches, then the models (only
// the parameters: momentum buffers and other optimizer state stay local, as in Lin et
// al.'s code and the LPP paper's PL-SGD) are averaged with one allreduce. Simulated time:
// a local step costs the slowest worker (every worker waits for the round anyway, and
// between rounds the fast ones idle at the next one), an averaging round one collective.
class LocalSgd : public Algorithm {
 public:
  explicit LocalSgd(const LocalConfig& c) : c_(c) {}
  void setup(StepContext& ctx) override;
  void step(StepContext& ctx) override;
  // The average of the W models (between rounds they differ; Lin et al. evaluate the
  // averaged model). Right after a round it is every worker's model.
  std::span<const float> eval_params(StepContext& ctx) override;
  // bn_stats averaged: the average of the W states (as the parameters); local: worker 0's.
  std::span<const float> eval_state(StepContext& ctx) override;
  void append_series(StepContext& ctx, std::vector<core::Series>& out) override;

 private:
  LocalConfig c_;
  std::vector<std::vector<float>> eval_;
  SyncFrequency freq_;
  int64_t s_pre_ = 0;
  std::vector<std::span<float>> wspans_, sspans_;
  std::vector<double> rounds_at_;  // s_cur of every averaging round (workers... HDF5)
};

}  // namespace wb::algo
