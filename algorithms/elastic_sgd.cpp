// elastic_sgd: elastic model averaging / K-step averaging, the baseline of the Adaptive SGD
// paper (Ma et al., arXiv:2110.07029, section 2.2 and Fig. 3; Zhou & Cong
// 2018). Every worker takes K local SGD steps on static, equal batches, then the W
// replicas are averaged and every worker continues from the average.
//
// One step() = one MEGA-BATCH of M = megabatch x batch_size samples, as for adaptive_sgd,
// so a run's `steps` budget counts mega-batches and the two compare per mega-batch (the
// paper's Fig. 7). Each worker takes M / (W x b) batches of b samples per mega-batch
// (b = batch_size, or batch_size / W with split_batch) and the replicas are averaged every
// K = local_steps of them (0: once, at the end of the mega-batch). An `epochs` budget is
// converted with the samples of one mega-batch per step (samples_per_step).
//
// Gradient aggregation (the paper's TensorFlow baseline, section 5.1: "the batch size is
// decreased proportionally to the number of GPUs"): {"local_steps": 1, "split_batch": true}.
// Averaging the models after one plain SGD step from a common model IS averaging the
// gradients (section 2.2: "gradient and model averaging are equivalent in this case"), so
// this is sync_sgd with batch_size / W per worker, step for step
// (tests/unit/test_adaptive.cpp checks it against sync_sgd), with the same per-mega-batch
// accounting as the other two algorithms and batch costs that see the non-zeros.
//
// Stragglers (Fig. 3): every average waits for the slowest worker, so on the simulated
// clock it costs max_i (sum of worker i's batch times since the last average) plus the
// collective. A batch's time is SimClock::compute_s(i, Model::flops_for_batch(batch), draw)
// (speed, jitter, and the batch's non-zeros for sparse models). The batches and merges are
// events on the event kernel (event_kernel.h): each rank schedules its own workers' batches
// on the simulated clock; one allgather of W doubles at the merge gives every rank the same
// barrier.
//
// gamma: the momentum term of Adaptive SGD's merge (Algorithm 2 line 11) at every average,
// w' = avg_i w_i + gamma (w - w_p). 0 (default) is plain K-step averaging as in Fig. 3;
// gamma = 0.9 gives Elastic SGD adaptive_sgd's default merge rule (an ablation).
//
// Recorded per mega-batch (append_series): workers/batch_size, workers/updates,
// workers/busy_s (rows x W), workers/megabatch_sim_s, workers/megabatch_wall_s.
#include <chrono>
#include <cmath>
#include <tuple>
#include <utility>

#include "algorithms/algorithm.h"
#include "sim/event_kernel.h"

namespace wb::algo {

struct ElasticSgdParams {
  int64_t megabatch = 100;
  int64_t local_steps = 0;
  bool split_batch = false;
  double gamma = 0.0;
  static void describe(core::ParamSet<ElasticSgdParams>& p) {
    p.field("megabatch", &ElasticSgdParams::megabatch,
            "mega-batch size in batches of batch_size (paper: 100): M = megabatch x "
            "batch_size samples per step. One step = one mega-batch")
        .min(1)
        .max(1 << 20);  // batches per mega-batch (1e12 was a bad_alloc)
    p.field("local_steps", &ElasticSgdParams::local_steps,
            "K: local steps between model averages; 0 = one average per mega-batch "
            "(K = M / (W x per-worker batch)); 1 with split_batch = gradient aggregation")
        .min(0);
    p.field("split_batch", &ElasticSgdParams::split_batch,
            "each worker's batch is batch_size / W (the paper's TensorFlow baseline: the "
            "batch divided by the worker count)");
    p.field("gamma", &ElasticSgdParams::gamma,
            "merge momentum w' = avg + gamma (w - w_p) (Algorithm 2 line 11); 0 = plain "
            "K-step averaging (Fig. 3)")
        .min(0)
        .max(1, false);
  }
};

class ElasticSgd final : public Algorithm {
 public:
  explicit ElasticSgd(const ElasticSgdParams& p) : p_(p) {}

  // Per-worker batch and rounds per mega-batch (setup); samples per step = rounds x b x W.
  std::pair<int64_t, int64_t> batch_and_rounds(int64_t B, int64_t W) const {
    const int64_t b = p_.split_batch ? std::max<int64_t>(1, B / W) : B;
    return {b, std::max<int64_t>(1, p_.megabatch * B / (W * b))};
  }
  double samples_per_step(const train::RunConfig& c) const override {
    const auto [b, rounds] = batch_and_rounds(c.batch_size, c.workers);
    return static_cast<double>(rounds) * static_cast<double>(b) * static_cast<double>(c.workers);
  }
  std::string samples_per_step_keys() const override { return "$.algorithm.megabatch x $.batch_size"; }
  // The global model and its previous copy; per-worker segments; series per step.
  Footprint footprint(const train::RunConfig& c, const FootprintInputs& in) const override {
    const double W = static_cast<double>(c.workers);
    Footprint f;
    f.shared = 8.0 * static_cast<double>(in.n) + 24.0 * W;
    f.series_per_step = 3.0 * W + 2.0;
    return f;
  }

  void setup(StepContext& ctx) override {
    std::tie(b_, rounds_) = batch_and_rounds(ctx.cfg.batch_size, ctx.W);
    K_ = p_.local_steps > 0 ? std::min(p_.local_steps, rounds_) : rounds_;
    global_ = ctx.workers[0].w;
    prev_ = global_;
    pspans_ = param_spans(ctx);
    busy_local_.assign(ctx.workers.size(), 0.0);
    seg_local_.assign(ctx.workers.size(), 0.0);
    seg_all_.assign(static_cast<size_t>(ctx.W), 0.0);
    kernel_.on(kBatch, [this](const sim::Event& e) { on_batch(e); });
    kernel_.on(kMerge, [this](const sim::Event& e) { on_merge(e); });
  }

  // One mega-batch on the event kernel (event_kernel.h): every local worker's batches are
  // events on the simulated clock (kBatch: train one batch, the worker's next batch at its
  // end), and the K-th batch of the last local worker schedules the merge (kMerge), after
  // which the next segment's batches start together. Each rank schedules only its own
  // workers; the merge's allgather makes the barrier global.
  void step(StepContext& ctx) override {
    const auto t0 = std::chrono::steady_clock::now();
    const size_t L = ctx.workers.size();
    ctx_ = &ctx;
    loss_.assign(L, 0.0);
    done_.assign(L, 0);
    std::fill(busy_local_.begin(), busy_local_.end(), 0.0);
    mx_ = 0;
    start_segment();
    kernel_.run_until(&ctx.clock, [](const sim::Event&) { return false; });
    ctx_ = nullptr;
    for (size_t j = 0; j < L; ++j) ctx.workers[j].loss = loss_[j] / static_cast<double>(rounds_);
    ctx.step_samples = rounds_ * b_ * ctx.W;
    ctx.update_max_abs = mx_;

    std::vector<double> busy_all(static_cast<size_t>(ctx.W));
    ctx.coll.allgather_worker_values(busy_local_, busy_all);
    for (int i = 0; i < ctx.W; ++i) {
      batch_rows_.push_back(static_cast<double>(b_));
      update_rows_.push_back(static_cast<double>(rounds_));
      busy_rows_.push_back(busy_all[static_cast<size_t>(i)]);
    }
    sim_rows_.push_back(ctx.clock.now());
    wall_rows_.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }

  // A segment: every local worker's first batch at the segment's start.
  void start_segment() {
    seg_start_ = ctx_->clock.now();
    arrived_ = 0;
    for (size_t j = 0; j < ctx_->workers.size(); ++j)
      kernel_.schedule(seg_start_, kBatch, static_cast<int>(j), 0, /*tie=*/static_cast<int>(j));
  }

  // kBatch: local worker e.actor trains one batch of b samples; its next batch starts when
  // this one ends (seg_start + the worker's compute time in the segment), unless the batch
  // is the segment's K-th (or the mega-batch's last).
  void on_batch(const sim::Event& e) {
    StepContext& ctx = *ctx_;
    const auto j = static_cast<size_t>(e.actor);
    train::Worker& wk = ctx.workers[j];
    const auto draw = static_cast<uint64_t>(wk.passes);
    loss_[j] += wk.compute_gradient(ctx.model, ctx.train, static_cast<int>(b_), *ctx.scratch);
    wk.opt->step(wk.w, wk.g, ctx.lr);
    const double c = ctx.clock.compute_s(wk.id, ctx.model.flops_for_batch(ctx.scratch->batch), draw);
    seg_local_[j] += c;
    busy_local_[j] += c;
    const int64_t r = done_[j]++;
    if ((r + 1) % K_ == 0 || r + 1 == rounds_) {
      if (++arrived_ == ctx.workers.size()) kernel_.schedule(e.t, kMerge, 0);
    } else {
      kernel_.schedule(seg_start_ + seg_local_[j], kBatch, e.actor, 0, /*tie=*/e.actor);
    }
  }

  // kMerge: the average (merge()), then the next segment if the mega-batch has batches left.
  void on_merge(const sim::Event&) {
    mx_ = std::max(mx_, merge(*ctx_));
    if (done_[0] < rounds_) start_segment();
  }

  // The merge waits for the slowest worker's batches since the last one (Fig. 3), then
  // averages (bit-identical for any number of ranks) and applies Algorithm 2 line 11's
  // momentum. Returns the largest |change| of the global model.
  double merge(StepContext& ctx) {
    ctx.coll.allgather_worker_values(seg_local_, seg_all_);
    double slowest = 0;
    for (double b : seg_all_) slowest = std::max(slowest, b);
    std::fill(seg_local_.begin(), seg_local_.end(), 0.0);
    // The barrier: the segment's start plus the slowest worker's time (the kernel moved the
    // clock only as far as this rank's own workers).
    ctx.clock.set(seg_start_ + slowest);
    ctx.coll.allreduce<float>(pspans_, comm::ReduceOp::kAverage);  // charges the clock
    const std::span<const float> avg = ctx.workers[0].w;
    double mx = 0;
    for (size_t i = 0; i < global_.size(); ++i) {
      const double nw = static_cast<double>(avg[i]) +
                        p_.gamma * (static_cast<double>(global_[i]) - static_cast<double>(prev_[i]));
      mx = std::max(mx, std::fabs(nw - static_cast<double>(global_[i])));
      prev_[i] = global_[i];
      global_[i] = static_cast<float>(nw);
    }
    if (p_.gamma != 0)
      for (auto& wk : ctx.workers) std::copy(global_.begin(), global_.end(), wk.w.begin());
    return mx;
  }

  std::span<const float> eval_params(StepContext&) override { return global_; }

  void append_series(StepContext& ctx, std::vector<core::Series>& out) override {
    const size_t rows = sim_rows_.size();
    if (rows == 0) return;
    const auto W = static_cast<size_t>(ctx.W);
    auto add = [&](const char* path, const std::vector<double>& d, size_t cols) {
      core::Series s;
      s.path = path;
      s.rows = rows;
      s.cols = cols;
      s.data = d;
      out.push_back(std::move(s));
    };
    add("workers/batch_size", batch_rows_, W);
    add("workers/updates", update_rows_, W);
    add("workers/busy_s", busy_rows_, W);
    add("workers/megabatch_sim_s", sim_rows_, 1);
    add("workers/megabatch_wall_s", wall_rows_, 1);
  }

 private:
  ElasticSgdParams p_;
  int64_t b_ = 1, rounds_ = 1, K_ = 1;
  std::vector<float> global_, prev_;
  std::vector<std::span<float>> pspans_;
  std::vector<double> busy_local_, seg_local_, seg_all_;
  enum : int { kBatch = 0, kMerge = 1 };  // event kinds: batches first at equal times
  sim::EventKernel kernel_;
  StepContext* ctx_ = nullptr;  // the step being run (the callbacks' context)
  double seg_start_ = 0, mx_ = 0;
  size_t arrived_ = 0;  // local workers done with the segment
  std::vector<double> loss_;
  std::vector<int64_t> done_;  // batches of each local worker in this mega-batch
  std::vector<double> batch_rows_, update_rows_, busy_rows_, sim_rows_, wall_rows_;
};

}  // namespace wb::algo

WB_REGISTER_ALGORITHM("elastic_sgd", wb::algo::ElasticSgd, wb::algo::ElasticSgdParams,
                      "elastic model averaging (Adaptive SGD paper, Fig. 3): K local steps on "
                      "equal batches, then average, waiting for stragglers; one step = one "
                      "mega-batch; local_steps 1 + split_batch = gradient aggregation");
