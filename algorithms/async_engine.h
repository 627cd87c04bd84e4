// The asynchronous engine of LAP-SGD and LPP-SGD (AsyncLocalSgd), defined in
// async_engine.cpp (+ _sim, _real) on the event kernel (event_kernel.h: the simulated mode's
// event queue, the real mode's threads); lap_sgd.cpp and lpp_sgd.cpp register its two
// configurations. (Every other .cpp in algorithms/ registers an algorithm of its name,
// tests/unit/test_registry.cpp; the async_engine*.cpp files are the engine.)
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "algorithms/actor_threads.h"
#include "algorithms/algorithm.h"
#include "algorithms/async_common.h"
#include "comm/async_sum.h"
#include "core/params.h"
#include "sim/event_kernel.h"
#include "train/schedule.h"

namespace wb::algo {

// ---------------------------------------------------------------- LAP-SGD / LPP-SGD
// The parameters lap_sgd and lpp_sgd share (Chatterjee et al., arXiv:2203.06638,
// Algorithm 1 and "Synchronization frequency"): P has members updaters, H, switch_at, mode.
template <class P>
void describe_async_params(core::ParamSet<P>& p) {
  p.field("updaters", &P::updaters, "U: concurrent updaters per worker").min(1).max(256);
  p.field("H", &P::H, "averaging period K after the switch (paper: 8, 16)").min(1);
  p.field("switch_at", &P::switch_at, "fraction of the budget with K = 1 (paper: T/2 -> 0.5)")
      .min(0)
      .max(1);
  p.field("mode", &P::mode,
          "simulated: deterministic discrete-event run on the simulated clock; real: threads, "
          "wall clock")
      .one_of({"simulated", "real"});
}

struct AsyncConfig {
  int64_t updaters = 4;        // U: concurrent updaters per worker
  int64_t H = 16;              // averaging period after the switch
  double switch_at = 0.5;      // SyncFrequency (paper: T/2)
  std::string mode = "simulated";  // "simulated" | "real"
  bool partial = false;        // LPP-SGD: block selection rule with partial backprop
  double full_fraction = 0.1;  // LPP-SGD: T_st / T (paper: s <= T/10)
  std::string name = "lap_sgd";
};

class AsyncLocalSgd : public Algorithm {
 public:
  explicit AsyncLocalSgd(const AsyncConfig& c) : c_(c) {}
  ~AsyncLocalSgd() override;
  void setup(StepContext& ctx) override;
  void step(StepContext& ctx) override;
  std::span<const float> eval_params(StepContext& ctx) override;
  void append_series(StepContext& ctx, std::vector<core::Series>& out) override;
  // Per worker: snap + avg (+ x in real mode); per updater v, v2, g and an optimizer.
  double state_floats_per_worker(const train::RunConfig&, size_t n,
                                 size_t opt_floats) const override {
    const double U = static_cast<double>(c_.updaters);
    return static_cast<double>(n) * (c_.mode == "real" ? 3 : 2) + U * updater_floats(n, opt_floats);
  }
  // One updater's v, v2, g and optimizer state.
  static double updater_floats(size_t n, size_t opt_floats) {
    return 3.0 * static_cast<double>(n) + static_cast<double>(opt_floats);
  }

  // async_engine.cpp setup: per worker U updaters (v, v2, g and the optimizers are in
  // state_floats_per_worker), each with its own batch buffer, indices, data shard (one of
  // W x U) and, in real mode, its own thread (stack) and workspace; one evaluation copy per
  // worker. Simulated mode replays the timing of all W x U updaters on every rank.
  Footprint footprint(const train::RunConfig& c, const FootprintInputs& in) const override {
    const double U = static_cast<double>(c_.updaters), W = static_cast<double>(c.workers),
                 B = static_cast<double>(c.batch_size), nf = static_cast<double>(in.n);
    const bool real = c_.mode == "real";
    Footprint f;
    f.shards_per_worker = c_.updaters;
    f.shards_key = "algorithm.updaters";
    f.shard_owner = "updater";
    double per_updater = in.batch_bytes + 4.0 * B + 4.0 * std::ceil(in.train_size / (W * U)) + 640.0 +
                         128.0 * static_cast<double>(in.tensors);  // + the objects and allocator overhead
    if (real) per_updater += in.workspace_bytes + 256e3;       // + the thread's stack
    f.per_worker = 4.0 * nf + U * per_updater + 256.0;
    // With several updaters they drive the worker's bytes: their buffers and their state.
    if (c_.updaters > 1) {
      f.dominant_key = "algorithm.updaters";
      f.dominant_per_worker = U * (per_updater + 4.0 * updater_floats(in.n, in.opt_floats));
    }
    if (real)
      f.shared = 16.0 * nf;  // the round's sums in double (R > 1)
    else
      f.shared = in.workspace_bytes + W * (128.0 + U * (40.0 + 2.0 * 48.0));  // SimWorker/SimUpd + events
    f.series_fixed = 2.0 * W + 1.0 + static_cast<double>(in.tensors);
    return f;
  }

  // The blocks an LPP run uses (tests): block b is updated by updaters u with u % B == b.
  const std::vector<Block>& blocks() const { return blocks_; }

 private:
  struct Updater {
    int u = 0;
    std::vector<float> v, v2, g;  // snapshot, snapshot after the optimizer step, gradient
    std::vector<std::unique_ptr<train::Optimizer>> opt;  // one per tensor (partial steps)
    std::unique_ptr<models::Workspace> ws;  // real mode only: this updater thread's scratch
    models::Batch batch;
    std::vector<uint32_t> idx;
    train::Sampler sampler;
    int64_t passes = 0;     // gradient passes (dropout noise stream)
    int64_t after_tst = 0;  // block-rule iterations after T_st (real mode)
    size_t lo = 0, hi = 0;  // parameter range the last update writes
    double loss = 0;
    uint64_t read_version = 0;
  };
  // One logical worker of this rank. The shared model x^q is worker.w in simulated mode;
  // in real mode it is x below (only touched through std::atomic_ref while the updaters
  // run), and worker.w is the copy published to the runner at the end of every step, so
  // the runner's own reads of worker.w (divergence scan) never race with the updaters.
  struct Local {
    int q = 0;    // global worker id
    std::vector<float> x;  // real mode: the shared model x^q
    std::vector<Updater> upd;
    std::vector<float> snap, avg;  // averaging round: snapshot v^{q,j}, then the average
    uint64_t snap_version = 0;
    // real mode: Algorithm 1's shared counter C^q (claimed: line 2) and the count of
    // applied updates (what the averaging process reads, see async_engine.cpp)
    std::atomic<int64_t> claimed{0}, done{0};
    std::atomic<uint64_t> version{0};  // model writes so far (staleness)
    std::mutex stats_mu;
    double loss_sum = 0, stale_sum = 0;
    int64_t loss_cnt = 0, updates = 0;
    bool has_loss = false;
    // real mode, in situ (under stats_mu): thread CPU seconds of the element-wise loops on
    // x^q and the floats they touched -- the updaters' snapshots (relaxed loads) and writes
    // (atomic adds), and the runner's round snapshots and applies. `workbench calibrate`
    // prices the profile's shared_model from these (workers/shared_*_ns_per_float).
    double read_cpu_s = 0, write_cpu_s = 0, floats_read = 0, floats_written = 0;
  };
  // Simulated mode: the timing state of EVERY worker (all ranks replay the same schedule).
  struct SimUpd {
    // Device seconds the runner's rounds and steps took from the worker's (shared) device
    // since this updater's last read (SimClock::runner_device_s): its next update waits as
    // long, as every updater on that device does.
    double runner_debt_s = 0;
    int64_t k = 0, after_tst = 0;
    uint64_t read_version = 0;
    int block = -1;
  };
  struct SimWorker {
    int64_t claimed = 0, done = 0, s_pre = 0, join_done = 0;
    uint64_t version = 0, join_version = 0;
    bool joined = false;
    double join_t = 0, stale_sum = 0;
    int64_t updates = 0;
    std::vector<SimUpd> upd;
  };
  // The kernel's event kinds, in their order at equal times (async_engine_sim.cpp).
  enum EvKind : int { kWrite = 0, kRound = 1, kRead = 2 };

  int choose_block(int u, int64_t s, int64_t& after_tst) const;
  double batch_flops(int block) const;
  void compute_update(Updater& up, int q, int64_t s, int block);
  void take_loss(Local& lw, train::Worker& wk);
  Local* local_of(int q) { return q >= first_ && q < first_ + L_ ? local_[q - first_].get() : nullptr; }
  // simulated mode
  void sim_run_step(StepContext& ctx);
  void sim_read(const sim::Event& e);
  void sim_write(const sim::Event& e);
  void sim_round(const sim::Event& e);
  bool sim_due(int q) const;
  void sim_try_join(int q, double t);
  // real mode
  void real_start(StepContext& ctx);
  void real_updater(int li, int u);
  void real_round_start(StepContext& ctx, bool exact);
  bool real_round_poll(bool wait);
  void real_round_apply(bool exact);
  void real_join_threads();
  void real_publish(StepContext& ctx);

  AsyncConfig c_;
  bool real_ = false;
  int W_ = 1, L_ = 1, first_ = 0, U_ = 1, B_ = 1, R_ = 1;
  int64_t T_ = 0, t_st_ = 0;
  size_t n_ = 0, N_ = 0;
  uint64_t seed_ = 0;
  SyncFrequency freq_;
  std::vector<Block> blocks_;
  train::RunFacts run_;  // the runner's budget and schedule (StepContext::run)
  const models::Model* model_ = nullptr;
  const models::Dataset* train_ = nullptr;
  std::span<train::Worker> workers_;
  std::vector<std::unique_ptr<Local>> local_;
  std::unique_ptr<models::Workspace> sim_ws_;  // simulated mode: the one workspace of all passes
  std::vector<std::vector<float>> eval_;
  int64_t rounds_ = 0;
  // simulated
  std::vector<SimWorker> sim_;
  sim::EventKernel kernel_;
  StepContext* ctx_ = nullptr;  // the step being simulated (the callbacks' context)
  int64_t done_sum_ = 0;
  bool round_pending_ = false;
  double clock_collective_ = 0;  // one round's collective_s
  // real: the kernel's threads, one actor per (local worker, updater)
  ActorThreads actors_;
  int64_t s_pre_ = 0;
  std::unique_ptr<comm::AsyncSum> round_;  // real mode, R > 1: the in-flight round's sum
  bool round_exact_ = false;
  // real mode, R > 1: this rank's sum of its workers' snapshots (L > 1; L = 1 sends the
  // snapshot itself) and the round's sum over the ranks
  std::vector<float> sum_, rsum_;
  // The runner sleeps here until an updater finishes an update (real mode): on a machine
  // without a spare core, a runner that woke every 50 us to look took ~10-20% of the
  // updaters' core (calibrate --validate, LAP rows).
  std::mutex progress_mu_;
  std::condition_variable progress_cv_;
};

}  // namespace wb::algo
