// docs/extending.md "How to add an asynchronous algorithm": this file IS the manual's example
// (tests/examples/check_readme.sh keeps them identical); example_tests runs it.
//
// Asynchronous SGD on a parameter server with bounded staleness: the Stale Synchronous
// Parallel model (Ho et al., "More Effective Distributed ML via a Stale Synchronous Parallel
// Parameter Server", NIPS 2013, section 2). Each worker pulls the server's model, computes
// the gradient of its own batch there and pushes it; the server applies it at once,
// x -= lr g. A worker more than `staleness` iterations ahead of the slowest one waits before
// its next pull, so a fast worker cannot run away from a slow one, and every update is at most
// (W - 1)(2s + 1) server writes stale (each other worker pushes at most 2s + 1 times between
// a worker's pull and its push).
//
// It runs on the event kernel (sim/event_kernel.h): two callbacks, pull and push, on
// the simulated clock; the kernel orders them (pushes before pulls at equal times: a pull
// sees every push of its instant) and moves the clock. Every rank replays every worker's
// timing; the worker that owns the gradient broadcasts it at its push, so each rank's copy
// of the server model is the same. Simulated mode only (a real mode would run the same pull
// and push on ActorThreads, algorithms/actor_threads.h).
#include <algorithm>

#include "algorithms/algorithm.h"
#include "sim/event_kernel.h"

namespace wb::algo {

struct MySspParams {
  int64_t staleness = 2;
  static void describe(core::ParamSet<MySspParams>& p) {
    p.field("staleness", &MySspParams::staleness,
            "s: a worker may be at most s iterations ahead of the slowest (SSP, section 2); "
            "0 = bulk synchronous")
        .min(0);
  }
};

class MySsp final : public Algorithm {
 public:
  explicit MySsp(const MySspParams& p) : p_(p) {}

  void setup(StepContext& ctx) override {
    x_ = ctx.workers[0].w;  // the server's model (every worker starts from the same init)
    recv_.assign(ctx.workers.size(), std::vector<float>(x_.size()));
    const auto W = static_cast<size_t>(ctx.W);
    iter_.assign(W, 0);
    read_version_.assign(W, 0);
    waiting_.assign(W, false);
    draws_.assign(W, 0);
    budget_ = ctx.run.total_steps * ctx.W;  // pushes in the run: W per runner step
    kernel_.on(kPush, [this](const sim::Event& e) { push(e); });
    kernel_.on(kPull, [this](const sim::Event& e) { pull(e); });
    for (int k = 0; k < ctx.W; ++k) kernel_.schedule(0.0, kPull, k, 0, /*tie=*/k);
  }

  // One runner step = W pushes (W x batch_size samples, as for the synchronous algorithms).
  void step(StepContext& ctx) override {
    ctx_ = &ctx;
    const int64_t before = pushes_, target = std::min(budget_, (ctx.step + 1) * ctx.W);
    kernel_.run_until(&ctx.clock, [&](const sim::Event&) { return pushes_ >= target; });
    ctx.step_samples = (pushes_ - before) * ctx.cfg.batch_size;
  }

  std::span<const float> eval_params(StepContext&) override { return x_; }

  void append_series(StepContext&, std::vector<core::Series>& out) override {
    for (auto [path, v] : {std::pair{"workers/max_staleness", max_stale_},
                           std::pair{"workers/max_iteration_gap", max_gap_}}) {
      core::Series s;
      s.path = path;
      s.rows = s.cols = 1;
      s.data = {static_cast<double>(v)};
      out.push_back(std::move(s));
    }
  }

 private:
  enum : int { kPush = 0, kPull = 1 };  // pushes first at equal times

  int64_t slowest() const { return *std::min_element(iter_.begin(), iter_.end()); }

  // pull(k): snapshot the server's model, compute the gradient there (the worker's own batch
  // and noise stream), push when the batch and the message are done.
  void pull(const sim::Event& e) {
    StepContext& ctx = *ctx_;
    const auto k = static_cast<size_t>(e.actor);
    if (claimed_ >= budget_) return;  // the run's updates are all handed out
    ++claimed_;
    max_gap_ = std::max(max_gap_, iter_[k] - slowest());
    read_version_[k] = version_;
    const int j = e.actor - ctx.coll.first_local();
    if (j >= 0 && j < static_cast<int>(ctx.workers.size())) {
      train::Worker& wk = ctx.workers[static_cast<size_t>(j)];
      wk.w = x_;
      wk.compute_gradient(ctx.model, ctx.train, static_cast<int>(ctx.cfg.batch_size), *ctx.scratch);
    }
    // A dense model's cost is known on every rank (a sparse one's depends on the batch).
    const double flops = ctx.model.flops_per_sample() * static_cast<double>(ctx.cfg.batch_size);
    const double t = e.t + ctx.clock.compute_s(e.actor, flops, draws_[k]++) +
                     ctx.clock.message_s(e.actor, 0, 4.0 * static_cast<double>(x_.size()));
    kernel_.schedule(t, kPush, e.actor);
  }

  // push(k): the server applies k's gradient; k pulls again unless it is s iterations
  // ahead of the slowest; a push of the slowest may release the workers waiting for it.
  void push(const sim::Event& e) {
    StepContext& ctx = *ctx_;
    const auto k = static_cast<size_t>(e.actor);
    max_stale_ = std::max(max_stale_, static_cast<int64_t>(version_ - read_version_[k]));
    std::vector<std::span<float>> spans;  // k's gradient onto every rank
    for (size_t j = 0; j < ctx.workers.size(); ++j) {
      if (ctx.workers[j].id == e.actor) recv_[j] = ctx.workers[j].g;
      spans.emplace_back(recv_[j]);
    }
    ctx.coll.broadcast<float>(spans, e.actor, comm::Charge::kNone);  // priced in pull()
    for (size_t i = 0; i < x_.size(); ++i) x_[i] -= static_cast<float>(ctx.lr) * recv_[0][i];
    ++version_;
    ++pushes_;
    ++iter_[k];
    const int64_t low = slowest();
    for (size_t q = 0; q < iter_.size(); ++q) {
      const bool self = q == k;
      if ((self || waiting_[q]) && iter_[q] - low <= p_.staleness) {
        waiting_[q] = false;
        kernel_.schedule(e.t, kPull, static_cast<int>(q), 0, static_cast<int>(q));
      } else if (self) {
        waiting_[q] = true;
      }
    }
  }

  MySspParams p_;
  sim::EventKernel kernel_;
  StepContext* ctx_ = nullptr;
  std::vector<float> x_;
  std::vector<std::vector<float>> recv_;
  std::vector<int64_t> iter_;          // pushes of each worker (its SSP clock)
  std::vector<uint64_t> read_version_;  // server version at each worker's last pull
  std::vector<uint64_t> draws_;        // batches of each worker (its jitter draws)
  std::vector<bool> waiting_;
  uint64_t version_ = 0;
  int64_t budget_ = 0, claimed_ = 0, pushes_ = 0, max_stale_ = 0, max_gap_ = 0;
};

}  // namespace wb::algo

WB_REGISTER_ALGORITHM("my_ssp", wb::algo::MySsp, wb::algo::MySspParams,
                      "asynchronous SGD with bounded staleness (SSP) on a parameter server "
                      "(docs/extending.md example)");
