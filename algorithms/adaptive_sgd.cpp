// adaptive_sgd: Adaptive elastic SGD for heterogeneous workers
// (Ma et al., arXiv:2110.07029, section 3, Algorithms 1 and 2, Fig. 4).
//
// One step() = ONE MEGA-BATCH of M = megabatch x batch_size samples (batch_size is b_max,
// the paper's initial batch size; megabatch = 100 batches by default, section 5.2.2). A
// run's `steps` budget therefore counts mega-batches, and an `epochs` budget is converted
// with M samples per step (samples_per_step); the recorded epoch column counts the samples
// processed. Per mega-batch:
//
//   1. dispatch (Fig. 4, section 3.1): the mega-batch is cut into batches that go one by
//      one to whichever worker is free first, each with that worker's own batch size b_i
//      and learning rate lr_i; worker i counts its updates u_i. Every replica starts the
//      mega-batch from the global model and takes local SGD steps.
//   2. merge (Algorithm 2): alpha_i = b_i / sum b if every u_i is equal, else u_i / sum u;
//      perturbation alpha_r *= 1 + delta, alpha_s *= 1 - delta (r, s = most / least
//      updated) when every replica's ||w_i||_2 / |w| < pert_thr; then
//      w' = sum_i alpha_i w_i + gamma (w - w_p), and every replica restarts from w'.
//   3. batch-size scaling (Algorithm 1) for the next mega-batch: b_i +- beta (u_i - mu)
//      within [b_min, b_max], lr_i scaled linearly with b_i.
//   Defaults (section 5.1): b_i = b_max initially, b_min = b_max / 8, beta = b_min / 2,
//   pert_thr = delta = 0.1, gamma = 0.9; lr (the run's `lr`) is the rate for b_max.
//
// mode "simulated" (default): a discrete-event simulation on the simulated clock. Worker
// i's batch costs SimClock::compute_s(i, Model::flops_for_batch(batch), draw) -- speed
// factor, seeded jitter, and the batch's non-zeros for sparse models: the paper's two
// sources of heterogeneity (section 1). The schedule depends only on (seed, worker, draw)
// and the data order, so EVERY rank simulates the whole schedule identically: it draws
// each batch from a replica of the dispatched worker's sampler (the same seeded shard
// stream the worker would use) to know its cost. Then each rank trains only its own
// workers on the batches they were given, and the merge is one allreduce(sum) of the
// alpha-scaled replicas over all W workers (ctx.coll) plus one allgather of W norms.
// Results do not depend on the number of ranks (bit-identical: the schedule is exact and
// the allreduce follows one reduction tree for every R); the merge barrier is the last
// batch's end time, plus the collective's cost.
//
// mode "real": a throughput check with real dynamic dispatch. Each rank runs one thread per
// local worker; the threads claim batches from a shared counter until the rank's share of
// the mega-batch (M x local workers / W samples) is used up, so faster threads take more
// batches. Time is wall time (the simulated clock advances by the slowest rank's
// mega-batch wall time). With emulate_speeds, a worker with speed s and jitter j sleeps
// (j / s - 1) x its compute time after each batch, so heterogeneity shows up on
// homogeneous cores. Not deterministic: dispatch follows the OS scheduler; merging and
// Algorithm 1 are the same code as in simulated mode.
//
// Recorded per mega-batch (append_series, rows = mega-batches; identical on every rank
// except the wall times): workers/batch_size, workers/updates, workers/samples,
// workers/merge_weight (alpha after perturbation), workers/lr, workers/l2_per_param,
// workers/busy_s (rows x W); workers/perturbed (1 when lines 8-9 fired),
// workers/megabatch_sim_s (clock after the merge), workers/megabatch_wall_s; and
// workers/speed (W, the configured speed factors). Test precision@1 per mega-batch is the
// runner's test_accuracy curve with eval_every = 1.
#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>

#include "algorithms/actor_threads.h"
#include "algorithms/adaptive_core.h"
#include "algorithms/algorithm.h"
#include "sim/event_kernel.h"

namespace wb::algo {

struct AdaptiveSgdParams {
  int64_t megabatch = 100;
  int64_t b_min = 0;
  double beta = 0;
  int64_t initial_batch = 0;
  double pert_thr = 0.1;
  double delta = 0.1;
  double gamma = 0.9;
  bool scaling = true;
  bool clamp = false;
  bool renormalize = false;
  std::string pert_gate = "paper";
  std::string mode = "simulated";
  bool emulate_speeds = true;
  static void describe(core::ParamSet<AdaptiveSgdParams>& p) {
    p.field("megabatch", &AdaptiveSgdParams::megabatch,
            "mega-batch size in batches of b_max = batch_size: M = megabatch x batch_size "
            "samples between merges (section 5.2.2: 100). One step = one mega-batch")
        .min(1)
        .max(1 << 20);  // batches per mega-batch (1e12 was a bad_alloc)
    p.field("b_min", &AdaptiveSgdParams::b_min,
            "smallest batch size (Algorithm 1); 0 = batch_size / 8 (section 5.1)")
        .min(0);
    p.field("beta", &AdaptiveSgdParams::beta,
            "batch-size scaling step per update of deviation (Algorithm 1); 0 = b_min / 2")
        .min(0);
    p.field("initial_batch", &AdaptiveSgdParams::initial_batch,
            "initial batch size of every worker, LR scaled linearly; 0 = b_max = batch_size")
        .min(0);
    p.field("pert_thr", &AdaptiveSgdParams::pert_thr,
            "perturb when every replica's ||w||_2 / |w| is below this (Algorithm 2 line 7)")
        .min(0);
    p.field("delta", &AdaptiveSgdParams::delta,
            "perturbation factor on the max/min weights (Algorithm 2 line 9)")
        .min(0)
        .max(1, false);
    p.field("gamma", &AdaptiveSgdParams::gamma,
            "merge momentum w' = sum alpha_i w_i + gamma (w - w_p) (Algorithm 2 line 11)")
        .min(0)
        .max(1, false);
    p.field("scaling", &AdaptiveSgdParams::scaling,
            "run Algorithm 1 after each mega-batch (false: batch sizes stay fixed, ablation)");
    p.field("clamp", &AdaptiveSgdParams::clamp,
            "ablation: Algorithm 1 moves a batch size that would leave [b_min, b_max] to the "
            "bound (the paper leaves it unchanged)");
    p.field("renormalize", &AdaptiveSgdParams::renormalize,
            "ablation: rescale the perturbed merge weights to sum 1 (the paper keeps them "
            "denormalized)");
    // Ablation: ||w||_2 / |w| (Algorithm 2 line 7, literally) depends on the model
    // size (it is RMS(w) / sqrt(|w|)), so the paper's 0.1 never blocks at our scale and
    // perturbation fires at every merge. "relative_init" gates on ||w_i||_2 / ||w_0||_2
    // (equivalently the RMS weight relative to the initial RMS weight): a threshold in the
    // model's own units.
    p.field("pert_gate", &AdaptiveSgdParams::pert_gate,
            "paper: the Algorithm 2 line 7 gate as written, ||w_i||_2 / |w| < pert_thr "
            "(default); relative_init (ablation): ||w_i||_2 / ||w_0||_2 < pert_thr, i.e. the "
            "RMS weight relative to the initial RMS weight")
        .one_of({"paper", "relative_init"});
    p.field("mode", &AdaptiveSgdParams::mode,
            "simulated: deterministic discrete-event dispatch on the simulated clock; real: "
            "one thread per local worker, real dynamic dispatch, wall clock (throughput)")
        .one_of({"simulated", "real"});
    p.field("emulate_speeds", &AdaptiveSgdParams::emulate_speeds,
            "real mode: slow workers sleep (jitter / speed - 1) x their compute time");
  }
};

class AdaptiveSgd final : public Algorithm {
 public:
  explicit AdaptiveSgd(const AdaptiveSgdParams& p) : p_(p) {}

  // One step = one mega-batch of M = megabatch x b_max samples.
  double samples_per_step(const train::RunConfig& c) const override {
    return static_cast<double>(p_.megabatch) * static_cast<double>(c.batch_size);
  }
  std::string samples_per_step_keys() const override { return "$.algorithm.megabatch x $.batch_size"; }

  // setup()/step(): every local worker reserves the indices of a whole mega-batch
  // (M = megabatch x batch_size); the global model and its previous copy; simulated mode
  // keeps a shadow sampler of every worker (together one copy of the training indices), a
  // cost batch and one pending event per worker; real mode a pass scratch per thread.
  Footprint footprint(const train::RunConfig& c, const FootprintInputs& in) const override {
    const double W = static_cast<double>(c.workers), B = static_cast<double>(c.batch_size),
                 M = static_cast<double>(p_.megabatch) * B;
    Footprint f;
    f.dominant_key = "algorithm.megabatch";
    f.dominant_per_worker = 4.0 * M;
    f.per_worker = f.dominant_per_worker;
    if (p_.mode == "real")
      f.per_worker += in.workspace_bytes + in.batch_bytes;
    else
      f.shared += 4.0 * in.train_size + 64.0 * W + in.batch_bytes + 4.0 * B;
    f.shared += 8.0 * static_cast<double>(in.n) + 64.0 * W;  // global + previous model; per-step vectors
    f.series_per_step = 7.0 * W + 3.0;
    return f;
  }

  void setup(StepContext& ctx) override {
    const int W = ctx.W;
    b_max_ = ctx.cfg.batch_size;
    b_min_ = p_.b_min > 0 ? p_.b_min : std::max<int64_t>(1, b_max_ / 8);
    beta_ = p_.beta > 0 ? p_.beta : static_cast<double>(b_min_) / 2.0;
    const int64_t b0 = p_.initial_batch > 0 ? p_.initial_batch : b_max_;
    if (b_min_ > b_max_)
      throw UserError("", "adaptive_sgd: b_min = " + std::to_string(b_min_) +
                              " exceeds b_max = batch_size = " + std::to_string(b_max_));
    if (b0 > b_max_)
      throw UserError("", "adaptive_sgd: initial_batch = " + std::to_string(b0) +
                              " exceeds b_max = batch_size = " + std::to_string(b_max_));
    M_ = p_.megabatch * b_max_;
    b_.assign(static_cast<size_t>(W), b0);
    // lr_i relative to the run's lr (the rate for b_max): the linear rule (section 5.1).
    lr_factor_.assign(static_cast<size_t>(W), static_cast<double>(b0) / static_cast<double>(b_max_));
    draws_.assign(static_cast<size_t>(W), 0);
    global_ = ctx.workers[0].w;
    prev_ = global_;
    double s2 = 0;
    for (float x : global_) s2 += static_cast<double>(x) * static_cast<double>(x);
    init_norm_ = std::sqrt(s2);
    pspans_ = param_spans(ctx);
    const size_t L = ctx.workers.size();
    local_idx_.assign(L, {});
    for (auto& v : local_idx_) v.reserve(static_cast<size_t>(M_));
    if (p_.mode == "simulated") {
      train::DataPartition own;
      const train::DataPartition& part = run_partition(ctx, own);
      shadow_.reserve(static_cast<size_t>(W));
      for (int k = 0; k < W; ++k) shadow_.push_back(part.sampler(k));
      ctx.train.reserve(cost_batch_, static_cast<int>(b_max_));
      tmp_idx_.resize(static_cast<size_t>(b_max_));
    } else {
      // Real mode runs local worker j's passes on thread j: threads 1.. need scratch of
      // their own (thread 0 is the runner's, with ctx.scratch).
      thread_scratch_.resize(L);
      for (size_t j = 1; j < L; ++j)
        thread_scratch_[j] = train::PassScratch(ctx.model, ctx.train, static_cast<int>(b_max_));
    }
    for (int k = 0; k < W; ++k) speeds_.push_back(ctx.clock.speed(k));
  }

  void step(StepContext& ctx) override {
    const auto t_wall = std::chrono::steady_clock::now();
    const int W = ctx.W;
    const size_t L = ctx.workers.size();
    std::vector<int64_t> u(static_cast<size_t>(W)), samples(static_cast<size_t>(W));
    std::vector<double> busy(static_cast<size_t>(W));
    std::vector<double> loss_local(L, 0.0), loss_all(static_cast<size_t>(W));
    const std::vector<int64_t> b_used = b_;
    std::vector<double> lr_used(static_cast<size_t>(W));
    for (int i = 0; i < W; ++i) lr_used[static_cast<size_t>(i)] = ctx.lr * lr_factor_[static_cast<size_t>(i)];

    if (p_.mode == "simulated")
      sim_megabatch(ctx, lr_used, u, samples, busy, loss_local);
    else
      real_megabatch(ctx, lr_used, u, samples, busy, loss_local);

    // Train loss of the mega-batch: the sample-weighted mean over all its batches.
    ctx.coll.allgather_worker_values(loss_local, loss_all);
    double lsum = 0;
    for (double x : loss_all) lsum += x;
    const double mb_loss = lsum / static_cast<double>(M_);
    for (auto& wk : ctx.workers) wk.loss = mb_loss;
    ctx.step_samples = M_;

    // 3. Algorithm 2: weights from (u, b), regularization from every replica's norm.
    std::vector<double> l2_local(L), l2_all(static_cast<size_t>(W));
    const double n_params = static_cast<double>(global_.size());
    for (size_t j = 0; j < L; ++j) {
      double s2 = 0;
      for (float x : ctx.workers[j].w) s2 += static_cast<double>(x) * static_cast<double>(x);
      // workers/l2_per_param records the gate's statistic (paper: / |w|; ablation: / ||w_0||).
      l2_local[j] = std::sqrt(s2) / (p_.pert_gate == "relative_init" ? init_norm_ : n_params);
    }
    ctx.coll.allgather_worker_values(l2_local, l2_all);
    const adaptive::MergeWeights mw =
        adaptive::merge_weights(u, b_used, l2_all, p_.pert_thr, p_.delta, p_.renormalize);
    // sum_i alpha_i w_i as an allreduce(sum) of the alpha-scaled replicas: the sum follows
    // one reduction tree for every (W, R), so the merge is bit-identical for any number of
    // ranks, and the weights stay denormalized after a perturbation (section 3.3).
    for (auto& wk : ctx.workers) {
      const double a = mw.alpha[static_cast<size_t>(wk.id)];
      for (float& x : wk.w) x = static_cast<float>(a * static_cast<double>(x));
    }
    ctx.coll.allreduce<float>(pspans_, comm::ReduceOp::kSum);  // charges the clock
    const std::span<const float> merged = ctx.workers[0].w;
    double mx = 0;
    for (size_t i = 0; i < global_.size(); ++i) {  // line 11
      const double nw = static_cast<double>(merged[i]) +
                        p_.gamma * (static_cast<double>(global_[i]) - static_cast<double>(prev_[i]));
      mx = std::max(mx, std::fabs(nw - static_cast<double>(global_[i])));
      prev_[i] = global_[i];  // line 12
      global_[i] = static_cast<float>(nw);
    }
    for (auto& wk : ctx.workers) std::copy(global_.begin(), global_.end(), wk.w.begin());
    ctx.update_max_abs = mx;

    // 4. Algorithm 1 for the next mega-batch.
    if (p_.scaling) adaptive::scale_batch_sizes(b_, lr_factor_, u, beta_, b_min_, b_max_, p_.clamp);

    for (int i = 0; i < W; ++i) {
      const auto k = static_cast<size_t>(i);
      rows_.batch.push_back(static_cast<double>(b_used[k]));
      rows_.updates.push_back(static_cast<double>(u[k]));
      rows_.samples.push_back(static_cast<double>(samples[k]));
      rows_.alpha.push_back(mw.alpha[k]);
      rows_.lr.push_back(lr_used[k]);
      rows_.l2.push_back(l2_all[k]);
      rows_.busy.push_back(busy[k]);
    }
    rows_.perturbed.push_back(mw.perturbed ? 1.0 : 0.0);
    rows_.sim.push_back(ctx.clock.now());
    rows_.wall.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t_wall).count());
  }

  std::span<const float> eval_params(StepContext&) override { return global_; }

  void append_series(StepContext& ctx, std::vector<core::Series>& out) override {
    const size_t rows = rows_.sim.size();
    const auto W = static_cast<size_t>(ctx.W);
    auto add = [&](const char* path, const std::vector<double>& d, size_t r, size_t cols) {
      core::Series s;
      s.path = path;
      s.rows = r;
      s.cols = cols;
      s.data = d;
      out.push_back(std::move(s));
    };
    add("workers/speed", speeds_, W, 1);
    if (rows == 0) return;
    add("workers/batch_size", rows_.batch, rows, W);
    add("workers/updates", rows_.updates, rows, W);
    add("workers/samples", rows_.samples, rows, W);
    add("workers/merge_weight", rows_.alpha, rows, W);
    add("workers/lr", rows_.lr, rows, W);
    add("workers/l2_per_param", rows_.l2, rows, W);
    add("workers/busy_s", rows_.busy, rows, W);
    add("workers/perturbed", rows_.perturbed, rows, 1);
    add("workers/megabatch_sim_s", rows_.sim, rows, 1);
    add("workers/megabatch_wall_s", rows_.wall, rows, 1);
  }

 private:
  // One local SGD step of worker wk on the samples idx (the worker's one gradient entry,
  // so dropout-style models replay identically).
  static double train_batch(StepContext& ctx, train::Worker& wk, std::span<const uint32_t> idx,
                            double lr) {
    wk.gradient_on(ctx.model, ctx.train, idx, *ctx.scratch);
    wk.opt->step(wk.w, wk.g, lr);
    return wk.loss;
  }

  // mode "simulated": Fig. 4 on the event kernel (event_kernel.h). Every worker has one
  // pending "free" event, at the time its last batch ends; handling it dispatches the worker's
  // next batch (b_i samples, the last one cut to what is left of M), draws the batch from a
  // replica of the worker's sampler to price it (every rank knows every worker's cost, so
  // every rank replays the same schedule), trains it if the worker is this rank's, and
  // schedules the worker's next free event at the batch's end. Events at equal times go to
  // the lower worker id (the kernel's tie key), so the next batch goes to the worker free
  // first, ties to the lower id: adaptive::schedule_megabatch, the reference
  // (tests/unit/test_event_kernel.cpp checks that the kernel's order reproduces it, ties
  // included). The mega-batch ends when M samples are dispatched; the merge barrier is the
  // last batch's end.
  void sim_megabatch(StepContext& ctx, const std::vector<double>& lr_used,
                     std::vector<int64_t>& u, std::vector<int64_t>& samples,
                     std::vector<double>& busy, std::vector<double>& loss_local) {
    const int W = ctx.W;
    const size_t L = ctx.workers.size();
    const int first = ctx.coll.first_local();
    for (size_t j = 0; j < L; ++j) local_idx_[j].clear();
    const double t0 = ctx.clock.now();
    std::vector<double> free_at(static_cast<size_t>(W), t0);
    int64_t left = M_;
    kernel_.on(kFree, [&](const sim::Event& e) {
      const auto k = static_cast<size_t>(e.actor);
      const int64_t n = std::min<int64_t>(b_[k] > 0 ? b_[k] : 1, left);
      const int j = e.actor - first;
      const bool local = j >= 0 && j < static_cast<int>(L);
      uint32_t* dst = tmp_idx_.data();
      if (local) {
        auto& v = local_idx_[static_cast<size_t>(j)];  // reserved for M: no reallocation
        v.resize(v.size() + static_cast<size_t>(n));
        dst = v.data() + v.size() - static_cast<size_t>(n);
      }
      const std::span<uint32_t> idx(dst, static_cast<size_t>(n));
      shadow_[k].next(static_cast<int>(n), idx);
      ctx.train.gather(idx, cost_batch_);
      const double c = ctx.clock.compute_s(e.actor, ctx.model.flops_for_batch(cost_batch_), draws_[k]++);
      free_at[k] += c;
      u[k] += 1;
      samples[k] += n;
      busy[k] += c;
      left -= n;
      if (local) {
        train::Worker& wk = ctx.workers[static_cast<size_t>(j)];
        loss_local[static_cast<size_t>(j)] +=
            train_batch(ctx, wk, idx, lr_used[k]) * static_cast<double>(n);
      }
      if (left > 0) kernel_.schedule(free_at[k], kFree, e.actor, 0, /*tie=*/e.actor);
    });
    for (int k = 0; k < W; ++k) kernel_.schedule(t0, kFree, k, 0, /*tie=*/k);
    kernel_.run_until(&ctx.clock, [&](const sim::Event&) { return left == 0; });
    kernel_.clear();  // the workers' next free events: the mega-batch is dispatched
    double end = t0;
    for (double t : free_at) end = std::max(end, t);
    ctx.clock.set(end);
  }

  // mode "real": one thread per local worker (the kernel's ActorThreads), batches claimed from
  // a shared counter.
  void real_megabatch(StepContext& ctx, const std::vector<double>& lr_used,
                      std::vector<int64_t>& u, std::vector<int64_t>& samples,
                      std::vector<double>& busy, std::vector<double>& loss_local) {
    using Clock = std::chrono::steady_clock;
    const int W = ctx.W;
    const size_t L = ctx.workers.size();
    const int64_t first = ctx.coll.first_local();
    const int64_t lo = M_ * first / W, hi = M_ * (first + static_cast<int64_t>(L)) / W;
    const int64_t share = hi - lo;  // this rank's part of the mega-batch
    std::atomic<int64_t> next{0};
    std::vector<double> u_loc(L, 0), s_loc(L, 0), busy_loc(L, 0), end_loc(L, 0);
    const auto t0 = Clock::now();
    auto work = [&](size_t j) {
      train::Worker& wk = ctx.workers[j];
      train::PassScratch& ws = j == 0 ? *ctx.scratch : thread_scratch_[j];
      const auto id = static_cast<size_t>(wk.id);
      const int64_t bk = b_[id];
      double ls = 0;
      for (;;) {
        const int64_t s = next.fetch_add(bk);
        if (s >= share) break;
        const int64_t n = std::min(bk, share - s);
        const auto a = Clock::now();
        const double loss = wk.compute_gradient(ctx.model, ctx.train, static_cast<int>(n), ws);
        wk.opt->step(wk.w, wk.g, lr_used[id]);
        double el = std::chrono::duration<double>(Clock::now() - a).count();
        if (p_.emulate_speeds) {
          const double extra =
              el * (ctx.clock.jitter(wk.id, draws_[id]) / ctx.clock.speed(wk.id) - 1.0);
          if (extra > 0) std::this_thread::sleep_for(std::chrono::duration<double>(extra));
          el += std::max(0.0, extra);
        }
        ++draws_[id];
        u_loc[j] += 1;
        s_loc[j] += static_cast<double>(n);
        busy_loc[j] += el;
        ls += loss * static_cast<double>(n);
      }
      loss_local[j] = ls;
      end_loc[j] = std::chrono::duration<double>(Clock::now() - t0).count();
    };
    // The kernel's threads: local worker 0 on the runner's thread (ctx.scratch), the others on
    // threads of their own; the first error stops the rest and is rethrown here.
    ActorThreads actors;
    actors.run_all(static_cast<int>(L), [&](int a) { work(static_cast<size_t>(a)); });
    std::vector<double> all(static_cast<size_t>(W));
    ctx.coll.allgather_worker_values(u_loc, all);
    for (int i = 0; i < W; ++i) u[static_cast<size_t>(i)] = std::llround(all[static_cast<size_t>(i)]);
    ctx.coll.allgather_worker_values(s_loc, all);
    for (int i = 0; i < W; ++i) samples[static_cast<size_t>(i)] = std::llround(all[static_cast<size_t>(i)]);
    ctx.coll.allgather_worker_values(busy_loc, busy);
    ctx.coll.allgather_worker_values(end_loc, all);
    double wall = 0;
    for (double x : all) wall = std::max(wall, x);
    ctx.clock.advance(wall);
  }

  AdaptiveSgdParams p_;
  int64_t b_max_ = 0, b_min_ = 0, M_ = 0;
  double beta_ = 0;
  double init_norm_ = 1;  // ||w_0||_2, the relative_init gate's unit
  std::vector<int64_t> b_;
  std::vector<double> lr_factor_, speeds_;
  std::vector<uint64_t> draws_;
  std::vector<float> global_, prev_;
  std::vector<std::span<float>> pspans_;
  std::vector<train::Sampler> shadow_;
  std::vector<train::PassScratch> thread_scratch_;  // real mode: per thread (0: ctx.scratch)
  models::Batch cost_batch_;
  std::vector<uint32_t> tmp_idx_;
  std::vector<std::vector<uint32_t>> local_idx_;
  enum : int { kFree = 0 };  // simulated mode: worker e.actor is free (its last batch ended)
  sim::EventKernel kernel_;
  struct Rows {
    std::vector<double> batch, updates, samples, alpha, lr, l2, busy, perturbed, sim, wall;
  } rows_;
};

}  // namespace wb::algo

WB_REGISTER_ALGORITHM("adaptive_sgd", wb::algo::AdaptiveSgd, wb::algo::AdaptiveSgdParams,
                      "Adaptive SGD (Ma et al.): dynamic batch dispatch by worker speed, "
                      "batch-size scaling (Alg. 1), normalized merging with perturbation and "
                      "momentum (Alg. 2); one step = one mega-batch");
