// The asynchronous engine (AsyncLocalSgd) of LAP-SGD and LPP-SGD
// (Chatterjee et al., arXiv:2203.06638, Algorithm 1): lap_sgd.cpp and lpp_sgd.cpp are two
// configurations of it (AsyncConfig: LAP updates the full-model block x_0 only; LPP adds
// partial backpropagation on blocks, section 3 "Block Selection Rule"). This file: setup,
// the updaters' numerics, the runner's step and the series; async_engine_sim.cpp the
// simulated mode (three callbacks on the event kernel's queue, event_kernel.h),
// async_engine_real.cpp the real mode (the same read / compute / write on the kernel's
// threads). Gradients are the logical worker's (train::Worker::gradient_at).
//
// Per logical worker q: a shared model x^q, U updaters and one averaging process.
//   updater  (Algorithm 1 lines 1-6): s := read&inc(C^q); snapshot v := x^q (lock-free);
//            pick a block (LAP: the whole model); gradient of a minibatch at v; optimizer
//            step on the snapshot, v' = opt(v, g, alpha_s); x^q[e] += v'[e] - v[e] for e in
//            the block (lock-free, element-wise). With plain SGD v' - v = -alpha_s g, the
//            paper's line 6. The optimizer is per updater and per tensor: momentum buffers
//            are process-local, as PyTorch processes sharing a model keep their own
//            optimizer state, and a partial step leaves the other tensors' state untouched
//            (PyTorch skips parameters without .grad).
//   averager (lines 8-16): when the count of applied updates advanced by K_j since the
//            last round (SyncFrequency: K_j = 1 until switch_at x T, then H), snapshot
//            v^{q,j} := x^q, average the snapshots over all W workers, and x^q += avg - v^{q,j}
//            IN PLACE while the updaters go on. Updates that land between the snapshot and
//            the correction survive it (they are not overwritten by the average).
// Deviation, on purpose: the averager watches the count of APPLIED updates (incremented
// after line 6), not C^q (incremented at line 2): a round then never counts an update
// whose gradient is still being computed. C^q still drives the budget, alpha_s and the
// block rule. The last update of every worker is followed by a final round, so the run
// ends on one common model (the evaluated one).
//
// Data and noise: updater u of worker q samples from shard q*U + u of W*U (its own stream,
// seeded by (seed, shard)); the updaters of q together cover worker q's shard of the
// local-SGD split, and with U = 1 the stream is exactly local SGD's (same batches, same
// dropout masks): LAP with U = 1 and free averaging IS post-local SGD (the unit test).
//
// ============================================================ mode = "simulated"
// A discrete-event simulation on the simulated clock, deterministic for a seed, any W x U on
// one core. Events, ordered by (time, kind, sequence number):
//   read(q,u)  at t: claim s, snapshot x^q AS IT IS AT t, compute the update (the numerics
//              happen here), schedule write(q,u) at t + cost, cost = SimClock::
//              shared_compute_s(q, flops(block) x B, U, draw): U updaters share q's device.
//   write(q,u) at t: x^q += v' - v (staleness = model writes since the read), done^q++,
//              schedule read(q,u) at t; the averager of q may join a round.
//   round      at max(join times) + collective_s(W, 4n): average of the snapshots taken at
//              each worker's join time, x^q += avg - snapshot for every q.
// At equal times writes go first, then rounds, then reads: with U = 1 and free
// communication a round sits exactly between a worker's step and its next read, as in
// local SGD. Every rank replays the timing of ALL W workers (costs depend only on (seed,
// worker, draw) and the block rule) and computes the numerics of its own; rounds are
// ctx.coll.allreduce calls, which every rank reaches in the same event order -- so curves
// do not depend on the number of ranks. A worker that finished its T updates keeps joining
// rounds (with its final model) until every worker has finished and synchronized, so
// nobody waits for a peer that left.
// A runner step (the HDF5 row) ends when the W workers have applied (step+1) x W updates in
// total (samples = W x batch per step, as for the synchronous algorithms); sim_s is the
// event time.
//
// ============================================================ mode = "real"
// Real threads on the shared models, wall clock. U std::threads per local worker run the
// updater loop; x^q is read with std::atomic_ref<float>::load(relaxed) and written with
// std::atomic_ref<float>::fetch_add(relaxed) (a CAS loop on x86): Hogwild's lock-free
// element-wise updates without a C++ data race (TSan-clean), and no update is lost (every
// fetch_add lands; only the snapshot a gradient was computed on may be stale or torn
// across elements -- Hogwild semantics). The runner's thread is the averaging process of
// all this rank's workers (the paper's parent process, section 4 "Locally-asynchronous
// Implementation"): runner step s waits until every local worker has applied s + 1
// updates, and starts a round when SyncFrequency says so for s_cur = s + 1 (the same on
// every rank, so every rank joins the same rounds). Across ranks a round is ONE
// non-blocking sum (comm::AsyncSum: the rank's snapshots summed in float, the models'
// type, 4 bytes a parameter as simulated mode prices it; on its own communicator), completed by polling at later steps while the updaters keep going, so the
// runner's own collectives cannot interleave with it. Communication happens on the runner's
// thread only (funneled threading); the updaters never communicate. In real mode x^q is the algorithm's own buffer, accessed only through
// std::atomic_ref while the updaters run; worker.w receives a copy at the end of every step
// (what the runner scans for divergence and what is evaluated). sim_s in real mode is the cost model's steady-state estimate (the slowest
// worker's updater cycle / U per step; rounds overlap); use mode = simulated for the
// event-level simulated time.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include "algorithms/async_engine.h"
#include "core/interrupt.h"
#include "train/optimizer.h"

namespace wb::algo {


AsyncLocalSgd::~AsyncLocalSgd() {
  actors_.halt();  // the updater threads use local_: stop them before any member goes
  // round_ (destroyed after this body) waits for a pending round: every rank started it
  // at the same runner step, so it completes.
}

void AsyncLocalSgd::setup(StepContext& ctx) {
  if (ctx.observer)
    throw UserError("", c_.name + " does not support metrics (they need synchronous "
                                  "gradients): remove \"metrics\"");
  // The updaters of a worker share its model and run concurrently (Hogwild): there is no one
  // pass sequence to move BatchNorm running statistics along, so models with state are
  // refused rather than evaluated with statistics nobody updated.
  if (ctx.model.state_size() > 0)
    throw UserError("", c_.name + " keeps no BatchNorm running statistics (its updaters share "
                                  "one model): use resnet with norm group or none");
  real_ = c_.mode == "real";
  // Real mode: the runner's per-step exchanges must not spin on a core the updaters need
  // (MPICH busy-polls while it waits for the other ranks' runners).
  if (real_) ctx.coll.set_yielding_waits(true);
  model_ = &ctx.model;
  train_ = &ctx.train;
  workers_ = ctx.workers;
  W_ = ctx.W;
  L_ = static_cast<int>(ctx.workers.size());
  first_ = ctx.coll.first_local();
  R_ = ctx.coll.ranks();
  U_ = static_cast<int>(c_.updaters);
  B_ = static_cast<int>(ctx.cfg.batch_size);
  N_ = ctx.train.size();
  n_ = ctx.model.num_params();
  seed_ = static_cast<uint64_t>(ctx.cfg.seed);
  T_ = ctx.run.total_steps;
  freq_ = SyncFrequency(T_, c_.switch_at, c_.H);
  t_st_ = static_cast<int64_t>(std::llround(c_.full_fraction * static_cast<double>(T_)));
  run_ = ctx.run;

  const auto& tensors = ctx.model.tensors();
  if (c_.partial) {
    if (static_cast<size_t>(U_) > tensors.size() && ctx.coll.rank() == 0)
      std::fprintf(stderr,
                   "%s: %d updaters but the model has %zu tensors: using %zu blocks (updater u "
                   "takes block u mod %zu)\n",
                   c_.name.c_str(), U_, tensors.size(), tensors.size(), tensors.size());
    blocks_ = partition_blocks(tensors, U_);
  }

  // The one collective of setup comes first (real mode, R > 1: the rounds' communicator):
  // the loops below are local and throw core::Interrupted on a signal (65,536 workers x 256
  // updaters take seconds); the runner agrees across ranks after setup (training_loop.cpp),
  // so a rank leaving here early never strands another inside a collective.
  if (real_ && R_ > 1) {
    round_ = std::make_unique<comm::AsyncSum>(ctx.coll);
    if (L_ > 1) sum_.assign(n_, 0.f);
    rsum_.assign(n_, 0.f);
  }
  local_.clear();
  if (!real_) sim_ws_ = ctx.model.make_workspace(B_);
  // Updater u of worker q samples part u of U of the worker's part of the run's partition
  // (iid: block q x U + u of the W x U blocks of one permutation, as before partitions).
  train::DataPartition own;
  const train::DataPartition& part = run_partition(ctx, own);
  for (int li = 0; li < L_; ++li) {
    auto lw = std::make_unique<Local>();
    lw->q = first_ + li;
    if (real_) lw->x = ctx.workers[static_cast<size_t>(li)].w;
    lw->snap.assign(n_, 0.f);
    lw->avg.assign(n_, 0.f);
    lw->upd.resize(static_cast<size_t>(U_));
    for (int u = 0; u < U_; ++u) {
      core::throw_if_interrupted();
      Updater& up = lw->upd[static_cast<size_t>(u)];
      up.u = u;
      up.v.assign(n_, 0.f);
      up.v2.assign(n_, 0.f);
      up.g.assign(n_, 0.f);
      for (const auto& t : tensors) {
        const train::OptimizerEnv env{t.size, nullptr};  // the tensor is the whole vector
        up.opt.push_back(train::optimizer_registry().create(ctx.cfg.optimizer.value(), env));
      }
      // Scratch belongs to the thread that runs the pass: in real mode every updater is a
      // thread of its own; in simulated mode the runner's thread runs every pass, one at a
      // time, on the engine's one workspace (sim_ws_).
      if (real_) up.ws = ctx.model.make_workspace(B_);
      ctx.train.reserve(up.batch, B_);
      up.idx.resize(static_cast<size_t>(B_));
      up.sampler = part.sampler(lw->q, U_, u);
    }
    local_.push_back(std::move(lw));
  }
  eval_.assign(static_cast<size_t>(L_), std::vector<float>(n_));

  if (!real_) {
    sim_.assign(static_cast<size_t>(W_), SimWorker{});
    for (auto& sw : sim_) sw.upd.assign(static_cast<size_t>(U_), SimUpd{});
    kernel_.on(kWrite, [this](const sim::Event& e) { sim_write(e); });
    kernel_.on(kRound, [this](const sim::Event& e) { sim_round(e); });
    kernel_.on(kRead, [this](const sim::Event& e) { sim_read(e); });
    for (int q = 0; q < W_; ++q) {
      if (q % 256 == 0) core::throw_if_interrupted();
      for (int u = 0; u < U_; ++u) kernel_.schedule(0.0, kRead, q, u);
    }
  }
}

// Block Selection Rule (section 3): the full model while s <= T_st, then alternately the
// full model and the updater's own block x_{rank(u)} (first the full one). -1 = full model.
int AsyncLocalSgd::choose_block(int u, int64_t s, int64_t& after_tst) const {
  if (!c_.partial || s <= t_st_) return -1;
  const int64_t k = after_tst++;
  if (k % 2 == 0) return -1;
  return u % static_cast<int>(blocks_.size());
}

double AsyncLocalSgd::batch_flops(int block) const {
  const double f = block < 0 ? model_->flops_per_sample()
                             : model_->flops_per_sample_from(blocks_[static_cast<size_t>(block)].first_tensor);
  return f * B_;
}

// Lines 4-5 and the optimizer part of line 6 on the snapshot up.v: fills up.v2, up.lo/hi,
// up.loss. The caller has copied the snapshot into up.v. The gradient is the logical
// worker's (train::Worker::gradient_at, the one gradient entry): updater u = 0 uses the worker's
// own noise stream, so U = 1 is bit-identical to local SGD; further updaters get their own
// streams. Called by the simulated mode's read callback and by the real mode's updater
// threads alike.
void AsyncLocalSgd::compute_update(Updater& up, int q, int64_t s, int block) {
  const std::span<const uint32_t> idx(up.idx.data(), static_cast<size_t>(B_));
  up.sampler.next(B_, std::span<uint32_t>(up.idx.data(), static_cast<size_t>(B_)));
  const auto& tensors = model_->tensors();
  models::Workspace& ws = up.ws ? *up.ws : *sim_ws_;
  size_t t0 = 0, t1 = tensors.size();
  if (block >= 0) {
    const Block& b = blocks_[static_cast<size_t>(block)];
    t0 = b.first_tensor;
    t1 = b.end_tensor;
  }
  const train::Worker& wk = workers_[static_cast<size_t>(q - first_)];
  up.loss = wk.gradient_at(*model_, *train_, up.v, idx, up.g, up.batch, ws, up.u, up.passes,
                           block < 0 ? -1 : static_cast<int>(t0));
  ++up.passes;
  // alpha_s (Algorithm 1 line 6): minibatch s of every worker is runner step s.
  const double lr = run_.lr_at(s);
  for (size_t t = t0; t < t1; ++t) {
    const size_t off = tensors[t].offset, len = tensors[t].size;
    std::copy_n(up.v.begin() + static_cast<std::ptrdiff_t>(off), len,
                up.v2.begin() + static_cast<std::ptrdiff_t>(off));
    up.opt[t]->step(std::span<float>(up.v2.data() + off, len),
                    std::span<const float>(up.g.data() + off, len), lr);
  }
  up.lo = tensors[t0].offset;
  up.hi = tensors[t1 - 1].offset + tensors[t1 - 1].size;
}

void AsyncLocalSgd::take_loss(Local& lw, train::Worker& wk) {
  std::lock_guard<std::mutex> lock(lw.stats_mu);
  if (lw.loss_cnt > 0) {
    wk.loss = lw.loss_sum / static_cast<double>(lw.loss_cnt);
    lw.loss_sum = 0;
    lw.loss_cnt = 0;
  }
  // else: no update of this worker finished during the step; keep the previous value.
}

void AsyncLocalSgd::step(StepContext& ctx) {
  if (real_) {
    if (!actors_.started()) real_start(ctx);
    const int64_t target = std::min(T_, ctx.step + 1);
    auto ready = [&] {
      for (auto& lw : local_)
        if (lw->done.load(std::memory_order_acquire) < target) return false;
      return true;
    };
    for (;;) {
      actors_.rethrow();
      real_round_poll(false);
      std::unique_lock<std::mutex> lock(progress_mu_);
      if (ready()) break;
      // Woken by the updaters (real_updater notifies under the mutex: no lost wake-up); the
      // timeout only serves a round in flight (MPI progress) and an updater's error.
      const bool in_flight = round_ && round_->pending();
      if (progress_cv_.wait_for(lock, std::chrono::microseconds(in_flight ? 100 : 2000), ready)) break;
    }
    const bool last = ctx.step + 1 >= T_;
    if (last) real_join_threads();
    const int64_t s_cur = ctx.step + 1;
    if (freq_.due(s_cur, s_pre_)) {
      real_round_poll(true);  // at most one round in flight
      real_round_start(ctx, actors_.joined());
      s_pre_ = s_cur;
    }
    if (last) real_round_poll(true);
    real_publish(ctx);
    // Steady-state cost-model estimate of one runner step (see the header).
    double f = model_->flops_per_sample() * B_;
    double written = static_cast<double>(n_);
    if (c_.partial && ctx.step > t_st_) {
      double part = 0, part_n = 0;
      for (int u = 0; u < U_; ++u) {
        const int b = u % static_cast<int>(blocks_.size());
        part += batch_flops(b);
        part_n += static_cast<double>(blocks_[static_cast<size_t>(b)].size);
      }
      f = 0.5 * (f + part / U_);
      written = 0.5 * (written + part_n / U_);
    }
    const double shared = ctx.clock.shared_model_s(static_cast<double>(n_), written);
    double slowest = 0;
    for (int q = 0; q < W_; ++q)
      slowest = std::max(slowest, ctx.clock.shared_compute_s(q, f, U_, static_cast<uint64_t>(ctx.step), shared));
    ctx.clock.ledger_opaque("LAP/LPP-SGD price their rounds in their own event simulation");
    ctx.clock.advance(slowest / U_);
    ctx.step_samples = static_cast<int64_t>(W_) * B_;
  } else {
    const int64_t before = done_sum_;
    sim_run_step(ctx);
    ctx.step_samples = (done_sum_ - before) * B_;
  }
  for (int li = 0; li < L_; ++li) take_loss(*local_[static_cast<size_t>(li)], ctx.workers[static_cast<size_t>(li)]);
  ctx.update_max_abs = NAN;
}

std::span<const float> AsyncLocalSgd::eval_params(StepContext& ctx) {
  // The average of the W current models (after the final round they are all equal).
  std::vector<std::span<float>> spans;
  for (int li = 0; li < L_; ++li) {
    // Real mode: worker.w is the model published at the end of the last step.
    const auto& x = ctx.workers[static_cast<size_t>(li)].w;
    auto& e = eval_[static_cast<size_t>(li)];
    std::copy(x.begin(), x.end(), e.begin());
    spans.emplace_back(e);
  }
  if (W_ > 1) ctx.coll.allreduce<float>(spans, comm::ReduceOp::kAverage, comm::Charge::kNone);
  return eval_[0];
}

void AsyncLocalSgd::append_series(StepContext& ctx, std::vector<core::Series>& out) {
  // Per worker: updates applied and mean staleness (model writes -- other updaters' and
  // averaging rounds' -- between an update's snapshot and its write); the round count.
  std::vector<double> upd(static_cast<size_t>(W_)), stale(static_cast<size_t>(W_));
  if (!real_) {
    for (int q = 0; q < W_; ++q) {
      const auto& sw = sim_[static_cast<size_t>(q)];
      upd[static_cast<size_t>(q)] = static_cast<double>(sw.updates);
      stale[static_cast<size_t>(q)] = sw.updates ? sw.stale_sum / static_cast<double>(sw.updates) : 0;
    }
  } else {
    std::vector<double> lu(static_cast<size_t>(L_)), ls(static_cast<size_t>(L_));
    for (int li = 0; li < L_; ++li) {
      auto& lw = *local_[static_cast<size_t>(li)];
      std::lock_guard<std::mutex> lock(lw.stats_mu);
      lu[static_cast<size_t>(li)] = static_cast<double>(lw.updates);
      ls[static_cast<size_t>(li)] = lw.updates ? lw.stale_sum / static_cast<double>(lw.updates) : 0;
    }
    ctx.coll.allgather_worker_values(lu, upd);
    ctx.coll.allgather_worker_values(ls, stale);
  }
  auto row = [&](const char* path, std::vector<double> d) {
    core::Series s;
    s.path = path;
    s.rows = 1;
    s.cols = d.size();
    s.data = std::move(d);
    out.push_back(std::move(s));
  };
  if (real_) {  // in situ costs of the shared model (Local::read_cpu_s), ns per float
    std::vector<double> lr(static_cast<size_t>(L_)), lwr(static_cast<size_t>(L_));
    for (int li = 0; li < L_; ++li) {
      auto& lw = *local_[static_cast<size_t>(li)];
      std::lock_guard<std::mutex> lock(lw.stats_mu);
      lr[static_cast<size_t>(li)] = lw.floats_read > 0 ? 1e9 * lw.read_cpu_s / lw.floats_read : 0;
      lwr[static_cast<size_t>(li)] = lw.floats_written > 0 ? 1e9 * lw.write_cpu_s / lw.floats_written : 0;
    }
    std::vector<double> r(static_cast<size_t>(W_)), w(static_cast<size_t>(W_));
    ctx.coll.allgather_worker_values(lr, r);
    ctx.coll.allgather_worker_values(lwr, w);
    row("workers/shared_read_ns_per_float", r);
    row("workers/shared_write_ns_per_float", w);
  }
  row("workers/updates", upd);
  row("workers/staleness_mean", stale);
  row("workers/averaging_rounds", {static_cast<double>(rounds_)});
  if (c_.partial) {
    std::vector<double> b;
    for (const auto& bl : blocks_) b.push_back(static_cast<double>(bl.first_tensor));
    row("workers/block_first_tensor", b);
  }
}

}  // namespace wb::algo
