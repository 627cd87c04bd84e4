// lap_sgd: locally-asynchronous parallel SGD (papers/lpp-sgd-scaling-the-wild.txt,
// Algorithm 1 with the full-model block x_0 only, section 3 "Block Selection Rule").
// This file also holds the engine shared with lpp_sgd.cpp (partial backpropagation).
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
// MPI_Iallreduce (sum of the rank's snapshots, double) on a duplicated communicator,
// completed by polling at later steps while the updaters keep going: non-blocking, and the
// runner's own collectives on the run communicator cannot interleave with it. MPI is
// called from the runner's thread only (MPI_THREAD_FUNNELED semantics); the updaters never
// call MPI. In real mode x^q is the algorithm's own buffer, accessed only through
// std::atomic_ref while the updaters run; worker.w receives a copy at the end of every step
// (what the runner scans for divergence and what is evaluated). sim_s in real mode is the cost model's steady-state estimate (the slowest
// worker's updater cycle / U per step; rounds overlap); use mode = simulated for the
// event-level simulated time.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "algorithms/async_local.h"
#include "runtime/optimizer.h"

namespace wb::algo {

namespace {
float load_relaxed(float& x) { return std::atomic_ref<float>(x).load(std::memory_order_relaxed); }
void add_relaxed(float& x, float d) {
  std::atomic_ref<float>(x).fetch_add(d, std::memory_order_relaxed);
}
}  // namespace

AsyncLocalSgd::~AsyncLocalSgd() {
  stop_.store(true);
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  // Every rank started the pending round at the same runner step, so it completes.
  if (req_pending_) MPI_Wait(&req_, MPI_STATUS_IGNORE);
  if (avg_comm_ != MPI_COMM_NULL) MPI_Comm_free(&avg_comm_);
}

void AsyncLocalSgd::setup(StepContext& ctx) {
  if (ctx.observer)
    throw UserError("", c_.name + " does not support metrics (they need synchronous "
                                  "gradients): remove \"metrics\"");
  real_ = c_.mode == "real";
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
  T_ = rt::total_steps(ctx.cfg, N_);
  freq_ = SyncFrequency(T_, c_.switch_at, c_.H);
  t_st_ = static_cast<int64_t>(std::llround(c_.full_fraction * static_cast<double>(T_)));
  sched_ = rt::schedule_registry().create(ctx.cfg.schedule.value);
  base_lr_ = ctx.cfg.lr;

  const auto& tensors = ctx.model.tensors();
  if (c_.partial) {
    if (static_cast<size_t>(U_) > tensors.size() && ctx.coll.rank() == 0)
      std::fprintf(stderr,
                   "%s: %d updaters but the model has %zu tensors: using %zu blocks (updater u "
                   "takes block u mod %zu)\n",
                   c_.name.c_str(), U_, tensors.size(), tensors.size(), tensors.size());
    blocks_ = partition_blocks(tensors, U_);
  }

  local_.clear();
  for (int li = 0; li < L_; ++li) {
    auto lw = std::make_unique<Local>();
    lw->q = first_ + li;
    if (real_) lw->x = ctx.workers[static_cast<size_t>(li)].w;
    lw->snap.assign(n_, 0.f);
    lw->avg.assign(n_, 0.f);
    lw->upd.resize(static_cast<size_t>(U_));
    for (int u = 0; u < U_; ++u) {
      Updater& up = lw->upd[static_cast<size_t>(u)];
      up.u = u;
      up.v.assign(n_, 0.f);
      up.v2.assign(n_, 0.f);
      up.g.assign(n_, 0.f);
      for (const auto& t : tensors) {
        const rt::OptimizerEnv env{t.size, nullptr};  // the tensor is the whole vector
        up.opt.push_back(rt::optimizer_registry().create(ctx.cfg.optimizer.value, env));
      }
      up.ws = ctx.model.make_workspace(B_);
      ctx.train.reserve(up.batch, B_);
      up.idx.resize(static_cast<size_t>(B_));
      up.sampler = rt::Sampler(N_, W_ * U_, lw->q * U_ + u, seed_);
    }
    local_.push_back(std::move(lw));
  }
  eval_.assign(static_cast<size_t>(L_), std::vector<float>(n_));

  if (!real_) {
    sim_.assign(static_cast<size_t>(W_), SimWorker{});
    for (auto& sw : sim_) sw.upd.assign(static_cast<size_t>(U_), SimUpd{});
    for (int q = 0; q < W_; ++q)
      for (int u = 0; u < U_; ++u) push(0.0, kRead, q, u);
  } else if (R_ > 1) {
    WB_CHECK_MPI(MPI_Comm_dup(ctx.coll.comm(), &avg_comm_));
    sum_.assign(n_, 0.0);
    rsum_.assign(n_, 0.0);
  }
}

double AsyncLocalSgd::lr_at(int64_t s) const {
  // alpha_s (Algorithm 1 line 6) from the run's schedule at "step" s, with the runner's
  // progress arithmetic: minibatch s of every worker is runner step s.
  const double per_step = static_cast<double>(W_) * B_;
  rt::Progress p{s, T_, s * per_step / static_cast<double>(N_),
                 T_ * per_step / static_cast<double>(N_)};
  return sched_->lr(base_lr_, p);
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
// up.loss. The caller has copied the snapshot into up.v.
void AsyncLocalSgd::compute_update(Updater& up, int q, int64_t s, int block) {
  up.sampler.next(B_, std::span<uint32_t>(up.idx.data(), static_cast<size_t>(B_)));
  train_->gather(std::span<const uint32_t>(up.idx.data(), static_cast<size_t>(B_)), up.batch);
  // u = 0 uses the logical worker's own noise stream (runtime/worker.cpp), so U = 1 is
  // bit-identical to local SGD; further updaters get their own streams.
  const uint64_t noise =
      up.u == 0 ? rt::mix_ids({seed_, 0xd50ULL, static_cast<uint64_t>(q), static_cast<uint64_t>(up.passes)})
                : rt::mix_ids({seed_, 0xd51ULL, static_cast<uint64_t>(q), static_cast<uint64_t>(up.u),
                               static_cast<uint64_t>(up.passes)});
  ++up.passes;
  const auto& tensors = model_->tensors();
  size_t t0 = 0, t1 = tensors.size();
  if (block < 0) {
    up.loss = model_->loss_grad(up.v, up.batch, up.g, *up.ws, noise);
  } else {
    const Block& b = blocks_[static_cast<size_t>(block)];
    t0 = b.first_tensor;
    t1 = b.end_tensor;
    up.loss = model_->loss_grad_from(up.v, up.batch, up.g, *up.ws, noise, t0);
  }
  const double lr = lr_at(s);
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

void AsyncLocalSgd::take_loss(Local& lw, rt::Worker& wk) {
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
    if (!started_) real_start(ctx);
    const int64_t target = std::min(T_, ctx.step + 1);
    for (;;) {
      rethrow_thread_error();
      real_round_poll(false);
      bool ready = true;
      for (auto& lw : local_) ready = ready && lw->done.load(std::memory_order_acquire) >= target;
      if (ready) break;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    const bool last = ctx.step + 1 >= T_;
    if (last) real_join_threads();
    const int64_t s_cur = ctx.step + 1;
    if (freq_.due(s_cur, s_pre_)) {
      real_round_poll(true);  // at most one round in flight
      real_round_start(ctx, joined_);
      s_pre_ = s_cur;
    }
    if (last) real_round_poll(true);
    real_publish(ctx);
    // Steady-state cost-model estimate of one runner step (see the header).
    double f = model_->flops_per_sample() * B_;
    if (c_.partial && ctx.step > t_st_) {
      double part = 0;
      for (int u = 0; u < U_; ++u) part += batch_flops(u % static_cast<int>(blocks_.size()));
      f = 0.5 * (f + part / U_);
    }
    double slowest = 0;
    for (int q = 0; q < W_; ++q)
      slowest = std::max(slowest, ctx.clock.shared_compute_s(q, f, U_, static_cast<uint64_t>(ctx.step)));
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
  if (W_ > 1) ctx.coll.allreduce<float>(spans, comm::ReduceOp::kAverage);
  return eval_[0];
}

void AsyncLocalSgd::append_series(StepContext& ctx, std::vector<rt::Series>& out) {
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
    rt::Series s;
    s.path = path;
    s.rows = 1;
    s.cols = d.size();
    s.data = std::move(d);
    out.push_back(std::move(s));
  };
  row("workers/updates", upd);
  row("workers/staleness_mean", stale);
  row("workers/averaging_rounds", {static_cast<double>(rounds_)});
  if (c_.partial) {
    std::vector<double> b;
    for (const auto& bl : blocks_) b.push_back(static_cast<double>(bl.first_tensor));
    row("workers/block_first_tensor", b);
  }
}

// ============================================================ simulated mode
void AsyncLocalSgd::push(double t, int kind, int q, int u) { q_.push(Ev{t, kind, seq_++, q, u}); }

bool AsyncLocalSgd::sim_due(int q) const {
  const SimWorker& sw = sim_[static_cast<size_t>(q)];
  if (sw.done < T_) return freq_.due(sw.done, sw.s_pre);
  if (sw.s_pre < T_) return true;  // the final round
  for (const auto& o : sim_)
    if (o.done < T_ || o.s_pre < T_) return true;  // keep peers' rounds going
  return false;
}

void AsyncLocalSgd::sim_try_join(int q, double t) {
  SimWorker& sw = sim_[static_cast<size_t>(q)];
  if (sw.joined || !sim_due(q)) return;
  sw.joined = true;
  sw.join_t = t;
  sw.join_done = sw.done;  // Algorithm 1 line 12: s_pre := s_cur
  sw.join_version = sw.version;
  if (Local* lw = local_of(q)) {  // line 13: the snapshot v^{q,j}
    const auto& x = workers_[static_cast<size_t>(q - first_)].w;
    std::copy(x.begin(), x.end(), lw->snap.begin());
  }
  if (!round_pending_) {
    double tj = 0;
    for (const auto& o : sim_) {
      if (!o.joined) return;
      tj = std::max(tj, o.join_t);
    }
    round_pending_ = true;
    push(tj + clock_collective_, kRound, 0, 0);
  }
}

void AsyncLocalSgd::sim_handle(StepContext& ctx, const Ev& e) {
  if (e.kind == kRead) {
    SimWorker& sw = sim_[static_cast<size_t>(e.q)];
    SimUpd& su = sw.upd[static_cast<size_t>(e.u)];
    if (sw.claimed >= T_) return;  // this updater is done (line 1)
    const int64_t s = sw.claimed++;
    su.block = choose_block(e.u, s, su.after_tst);
    su.read_version = sw.version;
    const double cost = ctx.clock.shared_compute_s(
        e.q, batch_flops(su.block), U_, (static_cast<uint64_t>(e.u) << 40) | static_cast<uint64_t>(su.k++));
    if (Local* lw = local_of(e.q)) {
      Updater& up = lw->upd[static_cast<size_t>(e.u)];
      const auto& x = workers_[static_cast<size_t>(e.q - first_)].w;
      std::copy(x.begin(), x.end(), up.v.begin());
      compute_update(up, e.q, s, su.block);
      if (!lw->has_loss) {
        workers_[static_cast<size_t>(e.q - first_)].loss = up.loss;
        lw->has_loss = true;
      }
    }
    push(e.t + cost, kWrite, e.q, e.u);
  } else if (e.kind == kWrite) {
    SimWorker& sw = sim_[static_cast<size_t>(e.q)];
    SimUpd& su = sw.upd[static_cast<size_t>(e.u)];
    const bool untouched = sw.version == su.read_version;
    sw.stale_sum += static_cast<double>(sw.version - su.read_version);
    ++sw.updates;
    ++sw.version;
    if (Local* lw = local_of(e.q)) {
      Updater& up = lw->upd[static_cast<size_t>(e.u)];
      auto& x = workers_[static_cast<size_t>(e.q - first_)].w;
      // x += v' - v; when nothing wrote x since the snapshot, x == v and the result is v'
      // exactly (no rounding of (v' - v) + v).
      if (untouched)
        std::copy(up.v2.begin() + static_cast<std::ptrdiff_t>(up.lo),
                  up.v2.begin() + static_cast<std::ptrdiff_t>(up.hi),
                  x.begin() + static_cast<std::ptrdiff_t>(up.lo));
      else
        for (size_t i = up.lo; i < up.hi; ++i) x[i] += up.v2[i] - up.v[i];
      lw->loss_sum += up.loss;
      ++lw->loss_cnt;
      ++lw->updates;
    }
    ++sw.done;
    ++done_sum_;
    push(e.t, kRead, e.q, e.u);
    sim_try_join(e.q, e.t);
  } else {  // kRound: lines 14-16 for every worker
    round_pending_ = false;
    ++rounds_;
    if (W_ > 1) {
      std::vector<std::span<float>> spans;
      for (auto& lw : local_) {
        std::copy(lw->snap.begin(), lw->snap.end(), lw->avg.begin());
        spans.emplace_back(lw->avg);
      }
      ctx.coll.allreduce<float>(spans, comm::ReduceOp::kAverage);
    }
    for (int q = 0; q < W_; ++q) {
      SimWorker& sw = sim_[static_cast<size_t>(q)];
      if (Local* lw = local_of(q); lw && W_ > 1) {
        auto& x = workers_[static_cast<size_t>(q - first_)].w;
        if (sw.version == sw.join_version)
          std::copy(lw->avg.begin(), lw->avg.end(), x.begin());
        else
          for (size_t i = 0; i < n_; ++i) x[i] += lw->avg[i] - lw->snap[i];
      }
      if (W_ > 1) ++sw.version;
      sw.s_pre = sw.join_done;
      sw.joined = false;
    }
    for (int q = 0; q < W_; ++q) sim_try_join(q, e.t);
  }
}

void AsyncLocalSgd::sim_run_step(StepContext& ctx) {
  clock_collective_ = ctx.clock.collective_s(W_, 4.0 * static_cast<double>(n_));
  const bool last = ctx.step + 1 >= T_;
  const int64_t target = (ctx.step + 1) * W_;
  double t_stop = -1;
  while (!q_.empty()) {
    const Ev& top = q_.top();
    if (!last && t_stop >= 0 && (top.t > t_stop || top.kind == kRead)) break;
    const Ev e = top;
    q_.pop();
    ctx.clock.set(std::max(ctx.clock.now(), e.t));
    sim_handle(ctx, e);
    // Finish what happens at the same instant (writes, rounds) before ending the step.
    if (!last && t_stop < 0 && done_sum_ >= target) t_stop = e.t;
  }
}

// ============================================================ real mode
void AsyncLocalSgd::rethrow_thread_error() {
  std::lock_guard<std::mutex> lock(err_mu_);
  if (err_) {
    auto e = err_;
    err_ = nullptr;
    std::rethrow_exception(e);
  }
}

void AsyncLocalSgd::real_start(StepContext&) {
  started_ = true;
  for (int li = 0; li < L_; ++li)
    for (int u = 0; u < U_; ++u) threads_.emplace_back([this, li, u] { real_updater(li, u); });
}

void AsyncLocalSgd::real_updater(int li, int u) {
  Local& lw = *local_[static_cast<size_t>(li)];
  Updater& up = lw.upd[static_cast<size_t>(u)];
  auto& x = lw.x;
  try {
    while (!stop_.load(std::memory_order_relaxed)) {
      const int64_t s = lw.claimed.fetch_add(1, std::memory_order_relaxed);  // line 2
      if (s >= T_) break;
      const int block = choose_block(u, s, up.after_tst);
      up.read_version = lw.version.load(std::memory_order_relaxed);
      for (size_t i = 0; i < n_; ++i) up.v[i] = load_relaxed(x[i]);  // line 3
      compute_update(up, lw.q, s, block);                               // lines 4-5
      for (size_t i = up.lo; i < up.hi; ++i) add_relaxed(x[i], up.v2[i] - up.v[i]);  // line 6
      const uint64_t stale = lw.version.fetch_add(1, std::memory_order_relaxed) - up.read_version;
      {
        std::lock_guard<std::mutex> lock(lw.stats_mu);
        lw.loss_sum += up.loss;
        ++lw.loss_cnt;
        lw.stale_sum += static_cast<double>(stale);
        ++lw.updates;
        if (!lw.has_loss) lw.has_loss = true;
      }
      lw.done.fetch_add(1, std::memory_order_release);
    }
  } catch (...) {
    std::lock_guard<std::mutex> lock(err_mu_);
    if (!err_) err_ = std::current_exception();
    stop_.store(true);
  }
}

void AsyncLocalSgd::real_join_threads() {
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  joined_ = true;
  rethrow_thread_error();
}

// exact: the updaters have stopped (final round): x = avg, no concurrent writes to keep.
void AsyncLocalSgd::real_round_start(StepContext& ctx, bool exact) {
  ++rounds_;
  if (W_ == 1) return;  // nothing to average (the round is still counted)
  for (auto& lw : local_)  // line 13
    for (size_t i = 0; i < n_; ++i) lw->snap[i] = load_relaxed(lw->x[i]);
  if (R_ == 1) {  // line 14 in-rank: the tree average over the local workers
    std::vector<std::span<float>> spans;
    for (auto& lw : local_) {
      std::copy(lw->snap.begin(), lw->snap.end(), lw->avg.begin());
      spans.emplace_back(lw->avg);
    }
    if (W_ > 1) ctx.coll.allreduce<float>(spans, comm::ReduceOp::kAverage);
    real_round_apply(exact);
    return;
  }
  // Across ranks: this rank's sum, then one non-blocking allreduce.
  std::fill(sum_.begin(), sum_.end(), 0.0);
  for (auto& lw : local_)
    for (size_t i = 0; i < n_; ++i) sum_[i] += lw->snap[i];
  WB_CHECK_MPI(MPI_Iallreduce(sum_.data(), rsum_.data(), static_cast<int>(n_), MPI_DOUBLE, MPI_SUM,
                              avg_comm_, &req_));
  req_pending_ = true;
  round_exact_ = exact;
}

bool AsyncLocalSgd::real_round_poll(bool wait) {
  while (req_pending_) {
    int flag = 0;
    WB_CHECK_MPI(MPI_Test(&req_, &flag, MPI_STATUS_IGNORE));
    if (flag) {
      req_pending_ = false;
      for (auto& lw : local_)
        for (size_t i = 0; i < n_; ++i) lw->avg[i] = static_cast<float>(rsum_[i] / W_);
      real_round_apply(round_exact_);
      return true;
    }
    if (!wait) return false;
    // Poll gently: a busy MPI_Wait would take a core from the updaters.
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  return false;
}

void AsyncLocalSgd::real_publish(StepContext& ctx) {
  for (int li = 0; li < L_; ++li) {
    auto& lw = *local_[static_cast<size_t>(li)];
    auto& w = ctx.workers[static_cast<size_t>(li)].w;
    if (joined_)
      std::copy(lw.x.begin(), lw.x.end(), w.begin());
    else
      for (size_t i = 0; i < n_; ++i) w[i] = load_relaxed(lw.x[i]);
  }
}

void AsyncLocalSgd::real_round_apply(bool exact) {  // lines 15-16
  if (W_ == 1) return;  // one worker: avg = snapshot, the correction is zero
  for (auto& lwp : local_) {
    auto& lw = *lwp;
    auto& x = lw.x;
    if (exact) {
      std::copy(lw.avg.begin(), lw.avg.end(), x.begin());
    } else {
      for (size_t i = 0; i < n_; ++i) add_relaxed(x[i], lw.avg[i] - lw.snap[i]);
      lw.version.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

// ============================================================ registration
struct LapSgdParams {
  int64_t updaters = 4;
  int64_t H = 16;
  double switch_at = 0.5;
  std::string mode = "simulated";
  static void describe(rt::ParamSet<LapSgdParams>& p) {
    describe_async_params(p);
  }
};

class LapSgd final : public AsyncLocalSgd {
 public:
  explicit LapSgd(const LapSgdParams& p)
      : AsyncLocalSgd(AsyncConfig{p.updaters, p.H, p.switch_at, p.mode, false, 0.0, "lap_sgd"}) {}
};

}  // namespace wb::algo

WB_REGISTER_ALGORITHM("lap_sgd", wb::algo::LapSgd, wb::algo::LapSgdParams,
                      "LAP-SGD: U lock-free (Hogwild) updaters per worker on a shared model, "
                      "non-blocking in-place model averaging (post-local frequency)");
