#include "runtime/training_loop.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>

#include "algorithms/algorithm.h"
#include "comm/collectives.h"
#include "runtime/core/error.h"
#include "runtime/core/interrupt.h"
#include "runtime/core/progress.h"
#include "runtime/diagnostics.h"
#include "runtime/result_schema.h"
#include "runtime/run_table.h"
#include "runtime/timeline_writer.h"
#include "runtime/train/optimizer.h"
#include "runtime/train/run_facts.h"
#include "runtime/train/schedule.h"
#include "runtime/train/worker.h"

namespace wb::rt {

namespace {

// Samples [begin, end) of a data set (the whole test set; the train-accuracy subset; the
// validation tail) are evaluated in chunks of `chunk` samples on one grid, whatever the
// number of ranks; each rank takes a contiguous block of whole chunks, and the chunks' sums
// are added in chunk order on every rank. So the result is the same bits at -n 1 and -n 2
// (per-rank partial sums added in rank order differed in the last bits), and at -n 1 it is
// the sequential sum it always was.
models::EvalResult evaluate_distributed(const models::Model& m, std::span<const float> w,
                                        const models::Dataset& test, comm::Collectives& coll,
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
    const models::EvalResult ev = m.evaluate(w, b, ws);
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

// The training part of a train/validation split (issue 20): the first n samples of the
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

 private:
  const models::Dataset& d_;
  size_t n_;
};

}  // namespace

size_t validation_count(size_t N, double fraction) {
  return fraction > 0 ? static_cast<size_t>(std::floor(static_cast<double>(N) * fraction)) : 0;
}

size_t training_samples(const RunConfig& c, size_t N) {
  return N - validation_count(N, c.metrics.validation_fraction);
}

namespace {
std::function<void()> g_step_hook;
TimelineWriter* g_timeline = nullptr;
}  // namespace

void set_step_hook(std::function<void()> hook) { g_step_hook = std::move(hook); }
void set_timeline(TimelineWriter* t) { g_timeline = t; }

RunResult execute_run(const RunSpec& rs, const models::Task& task, MPI_Comm comm,
                      ProgressLine* progress) {
  using SteadyClock = std::chrono::steady_clock;
  const auto t0 = SteadyClock::now();
  const RunConfig& c = rs.cfg;
  const int W = static_cast<int>(c.workers);
  const int B = static_cast<int>(c.batch_size);
  const models::Model& m = *task.model;
  const size_t n = m.num_params();
  // The validation tail is cut off here; with validation_fraction 0 the run trains on
  // task.train itself (bit-identical to before the option existed).
  const size_t n_val = validation_count(task.train->size(), c.metrics.validation_fraction);
  const PrefixView train_view(*task.train, task.train->size() - n_val);
  const models::Dataset& train_set =
      n_val > 0 ? static_cast<const models::Dataset&>(train_view) : *task.train;
  const size_t N = train_set.size();
  if (N < static_cast<size_t>(W))
    throw UserError("run " + rs.id, "the training set has " + std::to_string(N) +
                                        " samples, fewer than the " + std::to_string(W) +
                                        " workers (each needs a shard)");

  comm::Collectives coll(comm, W);
  std::vector<float> w0(n);
  std::vector<Worker> workers(static_cast<size_t>(coll.local_count()));
  const OptimizerEnv env{n, &m.tensors()};
  // The scratch of the training passes: this rank steps its workers one after the other,
  // so they share one workspace (DESIGN.md section 3; threaded modes make their own).
  PassScratch scratch;
  auto algorithm = algo::algorithm_registry().create(c.algorithm.value);
  auto schedule = schedule_registry().create(c.schedule.value);
  SimClock clock(c.clock, c.heterogeneity, W, static_cast<uint64_t>(c.seed));
  coll.attach_clock(&clock);  // the training's collectives charge it (comm/collectives.h)
  clock.bind_model(m.name(), m.flops_per_sample());  // a profile prices compute per model
  if (g_timeline && coll.rank() == 0) clock.set_sink(g_timeline->begin_run(rs.id, rs.index));
  algo::StepContext ctx{workers, coll, m, train_set, c, clock};
  ctx.scratch = &scratch;
  ctx.W = W;
  std::unique_ptr<Diagnostics> diag;
  if (c.metrics.any()) {
    diag = std::make_unique<Diagnostics>(c.metrics, m, W);
    ctx.observer = diag.get();
  }
  // The budget, in steps and epochs (the schedules' total), from the algorithm's step size:
  // owned here, handed to the algorithm (StepContext::run) before setup.
  const double per_step = algorithm->samples_per_step(c);
  const int64_t total = budget_steps(c, N, per_step);
  ctx.run = RunFacts(total, per_step, N, c.lr, schedule.get());
  // Setup: local work that takes seconds at large W (65,536 workers' states and samplers, LAP
  // updaters) and answers a signal by throwing rt::Interrupted from its loops (issue 18,
  // defect 12). An algorithm's setup does its collectives before any loop that may throw, so
  // the ranks can agree once, here after setup: an interrupted setup is a run with status
  // "interrupted" and no steps, on every rank.
  bool setup_interrupted = false;
  try {
    m.init_params(w0, static_cast<uint64_t>(c.seed));
    // Every shard is a block of one seeded permutation: computed once here, not per worker.
    const std::vector<uint32_t> perm = Sampler::global_permutation(N, static_cast<uint64_t>(c.seed));
    for (int k = 0; k < coll.local_count(); ++k) {
      throw_if_interrupted();
      Worker& wk = workers[static_cast<size_t>(k)];
      wk.id = coll.first_local() + k;
      wk.w = w0;
      wk.g.assign(n, 0.f);
      wk.opt = optimizer_registry().create(c.optimizer.value, env);
      wk.idx.reserve(static_cast<size_t>(B));
      wk.seed = static_cast<uint64_t>(c.seed);
      wk.sampler = Sampler(perm, W, wk.id, static_cast<uint64_t>(c.seed));
    }
    scratch = PassScratch(m, train_set, B);
    algorithm->setup(ctx);
  } catch (const Interrupted&) {
    setup_interrupted = true;
  }
  if (coll.any_over_ranks(setup_interrupted || interrupt_requested())) {
    RunResult res;
    res.id = rs.id;
    res.index = rs.index;
    res.config = rs.resolved;
    res.has_test = task.test != nullptr;
    res.status = "interrupted";
    res.error = "interrupted by signal during setup, before step 1";
    res.wall_s = std::chrono::duration<double>(SteadyClock::now() - t0).count();
    res.summary = empty_summary();  // the declared fields (result_schema.h), none measured
    res.summary["wall_s"] = res.wall_s;
    res.summary["sim_s"] = 0.0;
    return res;
  }
  Progress prog{0, total, 0, ctx.run.total_epochs};

  // Evaluation scratch (kEvalChunk samples: ~40 MB for LeNet-5), made at the first
  // evaluation rather than here, so that the time to the first step is the workers' alone.
  std::unique_ptr<models::Workspace> eval_ws;
  models::Batch eval_batch, train_eval_batch;
  bool train_eval_reserved = false;
  // Train accuracy on the fixed subset [0, n_tr_eval) of the training part and the
  // validation tail [N, N + n_val), at the evaluation points (NaN elsewhere, one row per
  // curve point): written as curves/train_* and curves/val_* through res.series.
  const size_t n_tr_eval = std::min(N, static_cast<size_t>(c.metrics.train_eval_samples));
  std::vector<double> tr_acc, tr_loss, va_acc, va_loss;
  double final_tr_acc = NAN, final_tr_loss = NAN, final_va_loss = NAN, final_va_acc = NAN,
         best_va_acc = NAN;

  RunResult res;
  res.id = rs.id;
  res.index = rs.index;
  res.config = rs.resolved;
  res.has_test = task.test != nullptr;
  std::vector<double> local_loss(workers.size()), all_loss(static_cast<size_t>(W));
  int64_t samples = 0, zero_streak = 0, converged_step = -1, steps_done = 0;
  double min_loss = INFINITY, best_acc = NAN, final_test_loss = NAN, final_acc = NAN,
         train_loss = NAN;
  auto last_hook = SteadyClock::now();
  for (int64_t step = 0; step < total; ++step) {
    prog.step = step;
    // Epochs from the samples actually processed: Adaptive SGD's and Elastic SGD's steps are
    // mega-batches / rounds of other sizes than W x batch_size (for the synchronous
    // algorithms it is the same number).
    prog.epoch = ctx.run.epoch_at(static_cast<double>(samples));
    ctx.step = step;
    ctx.epoch = prog.epoch;
    ctx.lr = schedule->lr(c.lr, prog);
    ctx.lr_applied = ctx.lr;  // unless the algorithm scales it (curves/lr)
    ctx.update_max_abs = NAN;
    ctx.step_samples = 0;
    algorithm->step(ctx);
    samples += ctx.step_samples;
    steps_done = step + 1;

    for (size_t k = 0; k < workers.size(); ++k) local_loss[k] = workers[k].loss;
    coll.allgather_worker_values(local_loss, all_loss);
    double sum = 0;
    for (double l : all_loss) sum += l;
    train_loss = sum / W;
    bool diverged = !std::isfinite(train_loss) ||
                    (!std::isnan(ctx.update_max_abs) && !std::isfinite(ctx.update_max_abs)) ||
                    (c.max_loss > 0 && train_loss > c.max_loss);
    // The sweep's own business between steps (other rank groups' results, stop notices).
    if (g_step_hook) {
      const auto now = SteadyClock::now();
      if (now - last_hook >= std::chrono::milliseconds(10)) {
        last_hook = now;
        g_step_hook();
      }
    }
    // Interruption must be agreed by every rank of the run (they step together).
    const bool stop = coll.any_over_ranks(interrupt_requested());
    if (std::isfinite(train_loss)) min_loss = std::min(min_loss, train_loss);
    bool converged = false;
    if (c.converge.enabled && !diverged && !std::isnan(ctx.update_max_abs)) {
      zero_streak = ctx.update_max_abs <= c.converge.tol ? zero_streak + 1 : 0;
      if (zero_streak >= c.converge.consecutive) {
        converged = true;
        converged_step = step + 1;
      }
    }
    const bool last = step + 1 == total || diverged || converged || stop;
    const bool do_eval = task.test && !diverged &&
                         ((c.eval_every > 0 && (step + 1) % c.eval_every == 0) || last);
    const bool do_log = (step + 1) % c.log_every == 0 || last || do_eval || step == 0;
    if (do_log) {
      double te = NAN, acc = NAN, tr_ev_acc = NAN, tr_ev_loss = NAN, va_ev_acc = NAN,
             va_ev_loss = NAN;
      if (do_eval) {
        if (!eval_ws) {
          eval_ws = m.make_workspace(kEvalChunk);
          task.test->reserve(eval_batch, kEvalChunk);
        }
        auto ev = evaluate_distributed(m, algorithm->eval_params(ctx), *task.test, coll, *eval_ws,
                                       eval_batch, kEvalChunk);
        te = ev.loss_sum / std::max<int64_t>(1, ev.count);
        final_test_loss = te;
        if (ev.has_accuracy) {
          acc = ev.correct / std::max<int64_t>(1, ev.count);
          res.has_accuracy = true;
          final_acc = acc;
          best_acc = std::isnan(best_acc) ? acc : std::max(best_acc, acc);
        }
        // Train subset (classification models: LPP Table 1's Tr.A.) and validation tail.
        if ((ev.has_accuracy && n_tr_eval > 0) || n_val > 0) {
          if (!train_eval_reserved) task.train->reserve(train_eval_batch, kEvalChunk);
          train_eval_reserved = true;
          const auto wp = algorithm->eval_params(ctx);
          if (ev.has_accuracy && n_tr_eval > 0) {
            auto tv = evaluate_distributed(m, wp, *task.train, coll, *eval_ws, train_eval_batch,
                                           kEvalChunk, 0, n_tr_eval);
            final_tr_loss = tv.loss_sum / std::max<int64_t>(1, tv.count);
            final_tr_acc = tv.correct / std::max<int64_t>(1, tv.count);
            tr_ev_loss = final_tr_loss;
            tr_ev_acc = final_tr_acc;
          }
          if (n_val > 0) {
            auto vv = evaluate_distributed(m, wp, *task.train, coll, *eval_ws, train_eval_batch,
                                           kEvalChunk, N, N + n_val);
            final_va_loss = vv.loss_sum / std::max<int64_t>(1, vv.count);
            va_ev_loss = final_va_loss;
            if (vv.has_accuracy) {
              final_va_acc = vv.correct / std::max<int64_t>(1, vv.count);
              va_ev_acc = final_va_acc;
              best_va_acc = std::isnan(best_va_acc) ? final_va_acc
                                                     : std::max(best_va_acc, final_va_acc);
            }
          }
        }
      }
      tr_acc.push_back(tr_ev_acc);
      tr_loss.push_back(tr_ev_loss);
      va_acc.push_back(va_ev_acc);
      va_loss.push_back(va_ev_loss);
      const double wall = std::chrono::duration<double>(SteadyClock::now() - t0).count();
      res.curves.push(static_cast<double>(step + 1), ctx.run.epoch_at(static_cast<double>(samples)),
                      static_cast<double>(samples), wall, clock.now(), ctx.lr_applied, train_loss,
                      te, acc);
    }
    if (progress) progress->update(step + 1, total, train_loss);
    if (do_log && !diverged) {
      // A NaN/Inf in the model is divergence too (cheap: at log points only).
      int bad = 0;
      for (const auto& wk : workers)
        for (float x : wk.w)
          if (!std::isfinite(x)) {
            bad = 1;
            break;
          }
      diverged = coll.any_over_ranks(bad != 0);
    }
    if (diverged) {
      res.status = "diverged";
      res.error = std::isfinite(train_loss) && c.max_loss > 0 && train_loss > c.max_loss
                      ? "training loss " + fmt_num(train_loss) + " above max_loss at step " +
                            std::to_string(step + 1)
                      : "non-finite training loss, update or model at step " +
                            std::to_string(step + 1);
      break;
    }
    if (stop) {
      res.status = "interrupted";
      res.error = "interrupted by signal at step " + std::to_string(step + 1);
      break;
    }
    if (converged) break;
  }
  res.wall_s = std::chrono::duration<double>(SteadyClock::now() - t0).count();
  res.sim_s = clock.now();
  auto num_or_null = [](double x) { return std::isfinite(x) ? json(x) : json(nullptr); };
  res.summary = empty_summary();  // the declared fields (result_schema.h), in their order
  res.summary["steps"] = steps_done;
  res.summary["samples"] = samples;
  res.summary["wall_s"] = res.wall_s;
  res.summary["sim_s"] = res.sim_s;
  // sim_s = compute + communication + waiting on stragglers (runtime/core/clock.h).
  // (a wait of equal times can round to -1e-18: the mean of equal values above their max)
  const double sim_wait = std::max(0.0, clock.wait_total_s()), sim_comm = clock.comm_total_s();
  const double sim_compute = res.sim_s - sim_comm - sim_wait;
  res.summary["sim_compute_s"] = sim_compute;
  res.summary["sim_comm_s"] = sim_comm;
  res.summary["sim_wait_s"] = sim_wait;
  if (clock.sink()) g_timeline->end_run(res.sim_s, sim_compute, sim_comm, sim_wait);
  res.summary["final_train_loss"] = num_or_null(train_loss);
  res.summary["min_train_loss"] = num_or_null(min_loss);
  res.summary["final_test_loss"] = num_or_null(final_test_loss);
  res.summary["final_test_accuracy"] = num_or_null(final_acc);
  res.summary["best_test_accuracy"] = num_or_null(best_acc);
  res.summary["converged_step"] = converged_step;
  // Train subset and validation split (issue 20): keys present only when measured, so a
  // run without them keeps its summary as before.
  auto add_curve = [&res](const char* path, const std::vector<double>& v) {
    Series s;
    s.path = path;
    s.rows = v.size();
    s.data = v;
    res.series.push_back(std::move(s));
  };
  if (res.has_accuracy && n_tr_eval > 0) {
    res.summary["train_eval_samples"] = static_cast<int64_t>(n_tr_eval);
    res.summary["final_train_accuracy"] = num_or_null(final_tr_acc);
    res.summary["final_train_eval_loss"] = num_or_null(final_tr_loss);
    add_curve("curves/train_accuracy", tr_acc);
    add_curve("curves/train_eval_loss", tr_loss);
  }
  if (n_val > 0) {
    res.summary["validation_samples"] = static_cast<int64_t>(n_val);
    res.summary["final_val_loss"] = num_or_null(final_va_loss);
    res.summary["final_val_accuracy"] = num_or_null(final_va_acc);
    res.summary["best_val_accuracy"] = num_or_null(best_va_acc);
    add_curve("curves/val_loss", va_loss);
    if (res.has_accuracy) add_curve("curves/val_accuracy", va_acc);
  }
  if (diag) diag->append_series(res.series);
  algorithm->append_series(ctx, res.series);
  // Final parameters of the evaluated model, for small models (toys: the coefficients).
  if (n <= 100000) {
    auto fp = algorithm->eval_params(ctx);
    Series s;
    s.path = "final_params";
    s.rows = fp.size();
    s.data.assign(fp.begin(), fp.end());
    res.series.push_back(std::move(s));
  }
  return res;
}

}  // namespace wb::rt
