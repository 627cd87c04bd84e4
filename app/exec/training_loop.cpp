#include "app/exec/training_loop.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numbers>

#include "algorithms/algorithm.h"
#include "app/metrics/diagnostics.h"
#include "app/results/host_info.h"
#include "app/results/result_schema.h"
#include "app/results/run_table.h"
#include "comm/collectives.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/progress.h"
#include "train/optimizer.h"
#include "train/run_facts.h"
#include "train/schedule.h"
#include "train/worker.h"

namespace wb::app {

namespace {

// Samples [begin, end) of a data set (the whole test set; the train-accuracy subset; the
// validation tail) are evaluated in chunks of `chunk` samples on one grid, whatever the
// number of ranks; each rank takes a contiguous block of whole chunks, and the chunks' sums
// are added in chunk order on every rank. So the result is the same bits at -n 1 and -n 2
// (per-rank partial sums added in rank order differed in the last bits), and at -n 1 it is
// the sequential sum it always was.
models::EvalResult evaluate_distributed(const models::Model& m, std::span<const float> w,
                                        std::span<const float> state, const models::Dataset& test, comm::Collectives& coll,
                                        models::Workspace& ws, models::Batch& b, int chunk,
                                        size_t begin = 0, size_t end = SIZE_MAX) {
  end = std::min(end, test.size());
  begin = std::min(begin, end);
  const size_t C = static_cast<size_t>(chunk), N = end - begin, R = static_cast<size_t>(coll.ranks()),
               r = static_cast<size_t>(coll.rank());
  const size_t chunks = (N + C - 1) / C;
  const size_t c_lo = chunks * r / R, c_hi = chunks * (r + 1) / R;
  // Per chunk: loss sum, correct; then count and has_accuracy (exact in double).
  std::vector<double> part(2 * chunks + 2, 0.0);
  std::vector<uint32_t> idx(C);
  for (size_t k = c_lo; k < c_hi; ++k) {
    const size_t s = begin + k * C, e = std::min(end, s + C);
    for (size_t i = s; i < e; ++i) idx[i - s] = static_cast<uint32_t>(i);
    test.gather(std::span<const uint32_t>(idx.data(), e - s), b);
    const models::EvalResult ev = state.empty() ? m.evaluate(w, b, ws) : m.evaluate_state(w, state, b, ws);
    part[2 * k] = ev.loss_sum;
    part[2 * k + 1] = ev.correct;
    part[2 * chunks] += static_cast<double>(ev.count);
    part[2 * chunks + 1] += ev.has_accuracy ? 1.0 : 0.0;
  }
  // Each chunk's entries are non-zero on one rank only: the sum over ranks is that value.
  coll.sum_over_ranks(std::span<double>(part));
  models::EvalResult tot;
  for (size_t k = 0; k < chunks; ++k) {
    tot.loss_sum += part[2 * k];
    tot.correct += part[2 * k + 1];
  }
  tot.count = static_cast<int64_t>(part[2 * chunks]);
  tot.has_accuracy = part[2 * chunks + 1] > 0;
  return tot;
}

// The training part of a train/validation split: the first n samples of the
// training set, the tail [n, N) held back. Indices pass through unchanged, so the
// samplers, shards and batches of a run are those of a run on a data set that simply ends
// at n: the held-back samples can never be drawn.
class PrefixView final : public models::Dataset {
 public:
  PrefixView(const models::Dataset& d, size_t n) : d_(d), n_(n) {}
  size_t size() const override { return n_; }
  void reserve(models::Batch& b, int max_batch) const override { d_.reserve(b, max_batch); }
  void gather(std::span<const uint32_t> idx, models::Batch& b) const override {
    d_.gather(idx, b);
  }
  size_t bytes() const override { return d_.bytes(); }
  std::span<const int32_t> class_labels() const override {
    const auto l = d_.class_labels();
    return l.empty() ? l : l.first(n_);
  }

 private:
  const models::Dataset& d_;
  size_t n_;
};


// One run's execution: setup() builds what the run's steps use (workers, collectives,
// schedule, clock, the plan's algorithm set up), step() does one global step with its
// divergence, convergence and interruption checks, evaluate() measures the evaluated model
// at an evaluation point, summarize() makes the run's result. Every fact the run needs
// beyond the config (the budget, the training samples, the algorithm instance) is the
// plan's (app/plan/run_plan.h); nothing here works one out again.
class RunExecution {
 public:
  using SteadyClock = std::chrono::steady_clock;

  RunExecution(RunPlan& plan, const models::Task& task, MPI_Comm comm, core::ProgressLine* progress,
               RunObserver* observer)
      : t0_(SteadyClock::now()),
        observer_(observer),
        rs_(*plan.run),
        c_(rs_.cfg),
        task_(task),
        m_(*task.model),
        W_(static_cast<int>(c_.workers)),
        n_val_(plan.budget.validation),
        train_view_(*task.train, plan.budget.train_size),
        // The validation tail is cut off here; with validation_fraction 0 the run trains on
        // task.train itself (bit-identical to before the option existed).
        train_set_(n_val_ > 0 ? static_cast<const models::Dataset&>(train_view_) : *task.train),
        N_(train_set_.size()),  // >= W: the planner checked every worker's shard
        total_(plan.budget.steps),
        progress_(progress),
        coll_(comm, W_),
        workers_(static_cast<size_t>(coll_.local_count())),
        algorithm_(std::move(plan.algorithm)),
        schedule_(train::schedule_registry().create(c_.schedule.value())),
        clock_(c_.clock, c_.heterogeneity, W_, static_cast<uint64_t>(c_.seed)),
        ctx_{workers_, coll_, m_, train_set_, c_, clock_},
        // Train accuracy on the fixed subset [0, n_tr_eval) of the training part and the
        // validation tail [N, N + n_val), at the evaluation points (NaN elsewhere, one row
        // per curve point): written as curves/train_* and curves/val_* through res.series.
        n_tr_eval_(std::min(N_, static_cast<size_t>(c_.metrics.train_eval_samples))),
        local_loss_(workers_.size()),
        all_loss_(static_cast<size_t>(W_)),
        last_hook_(t0_) {
    coll_.attach_clock(&clock_);  // the training's collectives charge it (comm/collectives.h)
    clock_.bind_model(m_.name(), m_.flops_per_sample());  // a profile prices compute per model
    if (observer_ && coll_.rank() == 0)
      clock_.set_sink(observer_->begin_timeline(rs_.id, rs_.index));
    ctx_.scratch = &scratch_;
    ctx_.W = W_;
    if (c_.metrics.any()) {
      diag_ = std::make_unique<Diagnostics>(c_.metrics, m_, W_);
      ctx_.observer = diag_.get();
    }
    // The plan's budget, in steps and epochs (the schedules' total), handed to the algorithm
    // (StepContext::run) before setup.
    ctx_.run = train::RunFacts(total_, plan.budget.samples_per_step, N_, c_.lr, schedule_.get());
    res_.id = rs_.id;
    res_.index = rs_.index;
    res_.config = rs_.resolved();
    res_.has_test = task.test != nullptr;
  }

  // Setup: local work that takes seconds at large W (65,536 workers' states and samplers, LAP
  // updaters) and answers a signal by throwing core::Interrupted from its loops. An algorithm's
  // setup does its collectives before any loop that may throw, so the ranks can agree once,
  // here after setup. Returns false (on every rank) when it was interrupted.
  bool setup() {
    const size_t n = m_.num_params();
    const int B = static_cast<int>(c_.batch_size);
    const train::OptimizerEnv env{n, &m_.tensors()};
    bool setup_interrupted = false;
    try {
      std::vector<float> w0(n);
      m_.init_params(w0, static_cast<uint64_t>(c_.seed));
      // Every worker's shard is its part of the run's partition (train/partition.h; the
      // default iid: blocks of one seeded permutation), made once here, not per worker, and
      // the same on every rank. An "epoch" of the run stays samples / N: each worker passes
      // over its own part with its own batch size, reshuffling it when exhausted (FedAvg's
      // convention, McMahan et al. 2017 section 3), so with parts of different sizes the
      // small ones are passed over more often in a run's epoch.
      partition_ = make_run_partition(c_, *task_.train, N_);
      if (const auto labels = train_set_.class_labels(); !labels.empty())
        label_counts_ = partition_.label_counts(labels, class_count(*task_.train));
      for (int k = 0; k < coll_.local_count(); ++k) {
        core::throw_if_interrupted();
        train::Worker& wk = workers_[static_cast<size_t>(k)];
        wk.id = coll_.first_local() + k;
        wk.w = w0;
        wk.g.assign(n, 0.f);
        wk.opt = train::optimizer_registry().create(c_.optimizer.value(), env);
        wk.state.resize(m_.state_size());
        m_.init_state(wk.state);
        wk.idx.reserve(static_cast<size_t>(B));
        wk.seed = static_cast<uint64_t>(c_.seed);
        wk.clip_norm = c_.clip_norm;
        wk.sampler = partition_.sampler(wk.id);
      }
      // The scratch of the training passes: this rank steps its workers one after the other,
      // so they share one workspace (DESIGN.md section 3; threaded modes make their own).
      scratch_ = train::PassScratch(m_, train_set_, B);
      // Algorithms that sample for a worker themselves read the partition in setup; it is
      // released after (N indices, held by every worker's sampler already).
      ctx_.partition = &partition_;
      algorithm_->setup(ctx_);
      ctx_.partition = nullptr;
      partition_ = train::DataPartition{};
    } catch (const core::Interrupted&) {
      setup_interrupted = true;
    }
    return !coll_.any_over_ranks(setup_interrupted || core::interrupt_requested());
  }

  // An interrupted setup is a run with status "interrupted" and no steps, on every rank.
  RunResult interrupted_in_setup() {
    RunResult res = std::move(res_);
    res.status = "interrupted";
    res.error = "interrupted by signal during setup, before step 1";
    res.wall_s = std::chrono::duration<double>(SteadyClock::now() - t0_).count();
    res.summary = empty_summary();  // the declared fields (result_schema.h), none measured
    res.summary["wall_s"] = res.wall_s;
    res.summary["sim_s"] = 0.0;
    return res;
  }

  // The steps to the plan's budget, or to divergence, convergence or a stop.
  void run_steps() {
    for (int64_t s = 0; s < total_; ++s)
      if (!step(s)) break;
  }

  RunResult summarize();

 private:
  // One global step at 0-based step s; false when the run ends here (diverged, converged,
  // interrupted).
  bool step(int64_t step);
  // The evaluated model on the test set, the train subset and the validation tail (at an
  // evaluation point).
  struct Eval {
    double te = NAN, acc = NAN, tr_acc = NAN, tr_loss = NAN, va_acc = NAN, va_loss = NAN;
  };
  Eval evaluate();

  const SteadyClock::time_point t0_;
  RunObserver* const observer_;  // nullptr: none
  const RunSpec& rs_;
  const train::RunConfig& c_;
  const models::Task& task_;
  const models::Model& m_;
  const int W_;
  const size_t n_val_;
  const PrefixView train_view_;
  const models::Dataset& train_set_;
  const size_t N_;
  const int64_t total_;
  core::ProgressLine* progress_;
  comm::Collectives coll_;
  std::vector<train::Worker> workers_;
  train::PassScratch scratch_;
  const std::shared_ptr<algo::Algorithm> algorithm_;
  const std::unique_ptr<train::Schedule> schedule_;
  sim::SimClock clock_;
  train::DataPartition partition_;     // during setup
  std::vector<int64_t> label_counts_;  // W x classes of the partition (labelled data)
  algo::StepContext ctx_;
  std::unique_ptr<Diagnostics> diag_;

  // Evaluation scratch (kEvalChunk samples: ~40 MB for LeNet-5), made at the first
  // evaluation rather than in setup, so that the time to the first step is the workers' alone.
  std::unique_ptr<models::Workspace> eval_ws_;
  models::Batch eval_batch_, train_eval_batch_;
  bool train_eval_reserved_ = false;
  const size_t n_tr_eval_;
  std::vector<double> tr_acc_, tr_loss_, va_acc_, va_loss_;
  double final_tr_acc_ = NAN, final_tr_loss_ = NAN, final_va_loss_ = NAN, final_va_acc_ = NAN,
         best_va_acc_ = NAN;

  RunResult res_;
  std::vector<double> local_loss_, all_loss_;
  int64_t samples_ = 0, zero_streak_ = 0, converged_step_ = -1, steps_done_ = 0;
  double min_loss_ = INFINITY, best_acc_ = NAN, final_test_loss_ = NAN, final_acc_ = NAN,
         train_loss_ = NAN, eval_wall_s_ = 0;
  SteadyClock::time_point last_hook_;
};

bool RunExecution::step(int64_t step) {
  const train::RunConfig& c = c_;
  // Epochs from the samples actually processed: Adaptive SGD's and Elastic SGD's steps are
  // mega-batches / rounds of other sizes than W x batch_size (for the synchronous
  // algorithms it is the same number). The lr is the run's one formula (RunFacts::lr_after).
  ctx_.step = step;
  ctx_.epoch = ctx_.run.epoch_at(static_cast<double>(samples_));
  ctx_.lr = ctx_.run.lr_after(step, static_cast<double>(samples_));
  ctx_.lr_applied = ctx_.lr;  // unless the algorithm scales it (curves/lr)
  ctx_.update_max_abs = NAN;
  ctx_.step_samples = 0;
  algorithm_->step(ctx_);
  samples_ += ctx_.step_samples;
  steps_done_ = step + 1;

  // The sweep's own business between steps (other rank groups' results, stop notices).
  if (observer_) {
    const auto now = SteadyClock::now();
    if (now - last_hook_ >= std::chrono::milliseconds(10)) {
      last_hook_ = now;
      observer_->between_steps();
    }
  }
  // The workers' losses and the interruption, which every rank of the run must agree on
  // (they step together), in one exchange.
  for (size_t k = 0; k < workers_.size(); ++k) local_loss_[k] = workers_[k].loss;
  const bool stop = coll_.allgather_worker_values_any(local_loss_, all_loss_, core::interrupt_requested());
  double sum = 0;
  for (double l : all_loss_) sum += l;
  train_loss_ = sum / W_;
  bool diverged = !std::isfinite(train_loss_) ||
                  (!std::isnan(ctx_.update_max_abs) && !std::isfinite(ctx_.update_max_abs)) ||
                  (c.max_loss > 0 && train_loss_ > c.max_loss);
  if (std::isfinite(train_loss_)) min_loss_ = std::min(min_loss_, train_loss_);
  bool converged = false;
  if (c.converge.enabled && !diverged && !std::isnan(ctx_.update_max_abs)) {
    zero_streak_ = ctx_.update_max_abs <= c.converge.tol ? zero_streak_ + 1 : 0;
    if (zero_streak_ >= c.converge.consecutive) {
      converged = true;
      converged_step_ = step + 1;
    }
  }
  const bool last = step + 1 == total_ || diverged || converged || stop;
  const bool do_eval = task_.test && !diverged &&
                       ((c.eval_every > 0 && (step + 1) % c.eval_every == 0) || last);
  const bool do_log = (step + 1) % c.log_every == 0 || last || do_eval || step == 0;
  if (do_log) {
    const auto e0 = SteadyClock::now();
    const Eval ev = do_eval ? evaluate() : Eval{};
    eval_wall_s_ += std::chrono::duration<double>(SteadyClock::now() - e0).count();
    tr_acc_.push_back(ev.tr_acc);
    tr_loss_.push_back(ev.tr_loss);
    va_acc_.push_back(ev.va_acc);
    va_loss_.push_back(ev.va_loss);
    const double wall = std::chrono::duration<double>(SteadyClock::now() - t0_).count();
    res_.curves.push(static_cast<double>(step + 1), ctx_.run.epoch_at(static_cast<double>(samples_)),
                     static_cast<double>(samples_), wall, clock_.now(), ctx_.lr_applied, train_loss_,
                     ev.te, ev.acc);
  }
  if (progress_) progress_->update(step + 1, total_, train_loss_);
  if (do_log && !diverged) {
    // A NaN/Inf in the model is divergence too (cheap: at log points only).
    int bad = 0;
    for (const auto& wk : workers_)
      for (float x : wk.w)
        if (!std::isfinite(x)) {
          bad = 1;
          break;
        }
    diverged = coll_.any_over_ranks(bad != 0);
  }
  if (diverged) {
    res_.status = "diverged";
    res_.error = std::isfinite(train_loss_) && c.max_loss > 0 && train_loss_ > c.max_loss
                     ? "training loss " + fmt_num(train_loss_) + " above max_loss at step " +
                           std::to_string(step + 1)
                     : "non-finite training loss, update or model at step " +
                           std::to_string(step + 1);
    return false;
  }
  if (stop) {
    res_.status = "interrupted";
    res_.error = "interrupted by signal at step " + std::to_string(step + 1);
    return false;
  }
  return !converged;
}

RunExecution::Eval RunExecution::evaluate() {
  Eval r;
  if (!eval_ws_) {
    eval_ws_ = m_.make_workspace(kEvalChunk);
    task_.test->reserve(eval_batch_, kEvalChunk);
  }
  const auto ws_state = algorithm_->eval_state(ctx_);
  auto ev = evaluate_distributed(m_, algorithm_->eval_params(ctx_), ws_state, *task_.test, coll_, *eval_ws_,
                                 eval_batch_, kEvalChunk);
  r.te = ev.loss_sum / std::max<int64_t>(1, ev.count);
  final_test_loss_ = r.te;
  if (ev.has_accuracy) {
    r.acc = ev.correct / std::max<int64_t>(1, ev.count);
    res_.has_accuracy = true;
    final_acc_ = r.acc;
    best_acc_ = std::isnan(best_acc_) ? r.acc : std::max(best_acc_, r.acc);
  }
  // Train subset (classification models: LPP Table 1's Tr.A.) and validation tail.
  if ((ev.has_accuracy && n_tr_eval_ > 0) || n_val_ > 0) {
    if (!train_eval_reserved_) task_.train->reserve(train_eval_batch_, kEvalChunk);
    train_eval_reserved_ = true;
    const auto wp = algorithm_->eval_params(ctx_);
    if (ev.has_accuracy && n_tr_eval_ > 0) {
      auto tv = evaluate_distributed(m_, wp, ws_state, *task_.train, coll_, *eval_ws_, train_eval_batch_,
                                     kEvalChunk, 0, n_tr_eval_);
      final_tr_loss_ = tv.loss_sum / std::max<int64_t>(1, tv.count);
      final_tr_acc_ = tv.correct / std::max<int64_t>(1, tv.count);
      r.tr_loss = final_tr_loss_;
      r.tr_acc = final_tr_acc_;
    }
    if (n_val_ > 0) {
      auto vv = evaluate_distributed(m_, wp, ws_state, *task_.train, coll_, *eval_ws_, train_eval_batch_,
                                     kEvalChunk, N_, N_ + n_val_);
      final_va_loss_ = vv.loss_sum / std::max<int64_t>(1, vv.count);
      r.va_loss = final_va_loss_;
      if (vv.has_accuracy) {
        final_va_acc_ = vv.correct / std::max<int64_t>(1, vv.count);
        r.va_acc = final_va_acc_;
        best_va_acc_ = std::isnan(best_va_acc_) ? final_va_acc_ : std::max(best_va_acc_, final_va_acc_);
      }
    }
  }
  return r;
}

RunResult RunExecution::summarize() {
  RunResult res = std::move(res_);
  res.wall_s = std::chrono::duration<double>(SteadyClock::now() - t0_).count();
  res.sim_s = clock_.now();
  auto num_or_null = [](double x) { return std::isfinite(x) ? json(x) : json(nullptr); };
  res.summary = empty_summary();  // the declared fields (result_schema.h), in their order
  res.summary["steps"] = steps_done_;
  res.summary["samples"] = samples_;
  res.summary["wall_s"] = res.wall_s;
  res.summary["sim_s"] = res.sim_s;
  // sim_s = compute + communication + waiting on stragglers (sim/clock.h).
  // (a wait of equal times can round to -1e-18: the mean of equal values above their max)
  const double sim_wait = std::max(0.0, clock_.wait_total_s()), sim_comm = clock_.comm_total_s();
  const double sim_compute = res.sim_s - sim_comm - sim_wait;
  res.summary["sim_compute_s"] = sim_compute;
  res.summary["sim_comm_s"] = sim_comm;
  res.summary["sim_wait_s"] = sim_wait;
  // Null where the algorithm priced its communication itself (its ledger is opaque).
  res.summary["bytes_sent_per_worker"] =
      clock_.ledger().replayable() ? json(clock_.ledger().bytes_sent_per_worker()) : json(nullptr);
  res.summary["compute_utilization"] = res.sim_s > 0 ? json(sim_compute / res.sim_s) : json(nullptr);
  // Whose machine priced sim_s: a profile from another CPU says so in every run it priced.
  if (!c_.clock.profile.empty())
    res.summary["profile_host"] = profile_host_word(sim::cached_cost_profile(c_.clock.profile).profile.machine);
  res.comm = clock_.ledger().to_json();
  res.summary["eval_wall_s"] = eval_wall_s_;
  if (clock_.sink()) observer_->end_timeline(res.sim_s, sim_compute, sim_comm, sim_wait);
  res.summary["final_train_loss"] = num_or_null(train_loss_);
  res.summary["min_train_loss"] = num_or_null(min_loss_);
  res.summary["final_test_loss"] = num_or_null(final_test_loss_);
  res.summary["final_test_accuracy"] = num_or_null(final_acc_);
  res.summary["best_test_accuracy"] = num_or_null(best_acc_);
  res.summary["converged_step"] = converged_step_;
  // Sequence models (result_schema.cpp, Presence::kSequence): tokens and bits per token.
  if (const int64_t tps = m_.tokens_per_sample(); tps > 0) {
    res.summary["tokens"] = samples_ * tps;
    res.summary["final_test_bpc"] = num_or_null(final_test_loss_ / std::numbers::ln2);
  }
  // Train subset and validation split: keys present only when measured, so a run without
  // them keeps its summary as before.
  auto add_curve = [&res](const char* path, const std::vector<double>& v) {
    core::Series s;
    s.path = path;
    s.rows = v.size();
    s.data = v;
    res.series.push_back(std::move(s));
  };
  if (res.has_accuracy && n_tr_eval_ > 0) {
    res.summary["train_eval_samples"] = static_cast<int64_t>(n_tr_eval_);
    res.summary["final_train_accuracy"] = num_or_null(final_tr_acc_);
    res.summary["final_train_eval_loss"] = num_or_null(final_tr_loss_);
    add_curve("curves/train_accuracy", tr_acc_);
    add_curve("curves/train_eval_loss", tr_loss_);
  }
  if (n_val_ > 0) {
    res.summary["validation_samples"] = static_cast<int64_t>(n_val_);
    res.summary["final_val_loss"] = num_or_null(final_va_loss_);
    res.summary["final_val_accuracy"] = num_or_null(final_va_acc_);
    res.summary["best_val_accuracy"] = num_or_null(best_va_acc_);
    add_curve("curves/val_loss", va_loss_);
    if (res.has_accuracy) add_curve("curves/val_accuracy", va_acc_);
  }
  // The realised partition: how many samples of each class each worker's part holds (W x
  // classes, written as int64: app/results/results_layout.cpp), for models with class labels.
  if (!label_counts_.empty()) {
    core::Series s;
    s.path = "partition/label_counts";
    s.rows = static_cast<size_t>(W_);
    s.cols = label_counts_.size() / s.rows;
    s.data.assign(label_counts_.begin(), label_counts_.end());
    res.series.push_back(std::move(s));
  }
  if (diag_) diag_->append_series(res.series);
  algorithm_->append_series(ctx_, res.series);
  // Final parameters of the evaluated model, for small models (toys: the coefficients).
  if (m_.num_params() <= kMaxFinalParams) {
    auto fp = algorithm_->eval_params(ctx_);
    core::Series s;
    s.path = "final_params";
    s.rows = fp.size();
    s.data.assign(fp.begin(), fp.end());
    res.series.push_back(std::move(s));
  }
  return res;
}

}  // namespace

RunResult execute_run(const RunSpec& rs, const models::Task& task, MPI_Comm comm,
                      core::ProgressLine* progress, RunObserver* observer) {
  return execute_run(plan_single(rs, task), task, comm, progress, observer);
}

RunResult execute_run(RunPlan plan, const models::Task& task, MPI_Comm comm,
                      core::ProgressLine* progress, RunObserver* observer) {
  RunExecution run(plan, task, comm, progress, observer);
  if (!run.setup()) return run.interrupted_in_setup();
  run.run_steps();
  return run.summarize();
}

}  // namespace wb::app
