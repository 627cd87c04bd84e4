// The asynchronous engine, simulated mode (async_engine.cpp has the whole description).
// ============================================================ mode = "simulated"
// A discrete-event simulation on the event kernel's queue (event_kernel.h), deterministic for a seed, any W x U on
// one core. Events, ordered by (time, kind, sequence number):
//   read(q,u)  at t: claim s, snapshot x^q AS IT IS AT t, compute the update (the numerics
//              happen here), schedule write(q,u) at t + cost, cost = SimClock::
//              shared_compute_s(q, flops(block) x B, U, draw, shared_model_s(n, written)):
//              U updaters share q's device; the snapshot read and the atomic write are
//              priced when the profile has measured them (0 otherwise), and so is the
//              device time the runner's last rounds and steps took from q
//              (runner_device_s, when the profile's machine runs them on the updaters' cores).
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
#include "algorithms/async_engine.h"

namespace wb::algo {

// ============================================================ simulated mode
// The event kernel (event_kernel.h) holds the queue and orders the events; this file is the
// three callbacks (read, write, round) and when a runner step ends.

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
    kernel_.schedule(tj + clock_collective_, kRound, 0, 0);
  }
}

// read(q,u): lines 1-5 -- claim s, snapshot x^q as it is now, compute the update.
void AsyncLocalSgd::sim_read(const sim::Event& e) {
  SimWorker& sw = sim_[static_cast<size_t>(e.actor)];
  SimUpd& su = sw.upd[static_cast<size_t>(e.sub)];
  if (sw.claimed >= T_) return;  // this updater is done (line 1)
  const int64_t s = sw.claimed++;
  su.block = choose_block(e.sub, s, su.after_tst);
  su.read_version = sw.version;
  // Besides the pass, the update reads the whole shared model (line 3) and adds into the
  // range it writes (line 6, the block's in LPP-SGD): priced when the profile measured the
  // per-float costs of real mode's relaxed loads and atomic adds.
  const double written = su.block >= 0 ? static_cast<double>(blocks_[static_cast<size_t>(su.block)].size)
                                        : static_cast<double>(n_);
  const double cost = ctx_->clock.shared_compute_s(
                         e.actor, batch_flops(su.block), U_,
                         (static_cast<uint64_t>(e.sub) << 40) | static_cast<uint64_t>(su.k++),
                         ctx_->clock.shared_model_s(static_cast<double>(n_), written)) +
                     su.runner_debt_s;
  su.runner_debt_s = 0;
  if (Local* lw = local_of(e.actor)) {
    Updater& up = lw->upd[static_cast<size_t>(e.sub)];
    const auto& x = workers_[static_cast<size_t>(e.actor - first_)].w;
    std::copy(x.begin(), x.end(), up.v.begin());
    compute_update(up, e.actor, s, su.block);
    if (!lw->has_loss) {
      workers_[static_cast<size_t>(e.actor - first_)].loss = up.loss;
      lw->has_loss = true;
    }
  }
  kernel_.schedule(e.t + cost, kWrite, e.actor, e.sub);
}

// write(q,u): line 6 -- x^q += v' - v; the averager of q may join a round.
void AsyncLocalSgd::sim_write(const sim::Event& e) {
  SimWorker& sw = sim_[static_cast<size_t>(e.actor)];
  SimUpd& su = sw.upd[static_cast<size_t>(e.sub)];
  const bool untouched = sw.version == su.read_version;
  sw.stale_sum += static_cast<double>(sw.version - su.read_version);
  ++sw.updates;
  ++sw.version;
  if (Local* lw = local_of(e.actor)) {
    Updater& up = lw->upd[static_cast<size_t>(e.sub)];
    auto& x = workers_[static_cast<size_t>(e.actor - first_)].w;
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
  kernel_.schedule(e.t, kRead, e.actor, e.sub);
  sim_try_join(e.actor, e.t);
}

// round: lines 14-16 for every worker.
void AsyncLocalSgd::sim_round(const sim::Event& e) {
  round_pending_ = false;
  ++rounds_;
  if (W_ > 1) {
    std::vector<std::span<float>> spans;
    for (auto& lw : local_) {
      std::copy(lw->snap.begin(), lw->snap.end(), lw->avg.begin());
      spans.emplace_back(lw->avg);
    }
    ctx_->coll.allreduce<float>(spans, comm::ReduceOp::kAverage, comm::Charge::kNone);
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
    if (W_ > 1) {
      ++sw.version;
      // The round (snapshot, collective, apply) runs on the runner's thread; where that
      // thread shares the core with the updaters (a profile's rounds_share_core), the next
      // update waits for it.
      const double d = ctx_->clock.runner_device_s(static_cast<double>(n_), 1, 0, clock_collective_);
      for (auto& su : sw.upd) su.runner_debt_s += d;
    }
    sw.s_pre = sw.join_done;
    sw.joined = false;
  }
  for (int q = 0; q < W_; ++q) sim_try_join(q, e.t);
}

void AsyncLocalSgd::sim_run_step(StepContext& ctx) {
  ctx_ = &ctx;
  clock_collective_ = ctx.coll.cost_s<float>(n_);
  ctx.clock.ledger_opaque("LAP/LPP-SGD price their rounds in their own event simulation");
  // The runner's own step (real mode: it publishes each worker's model) on a shared core.
  const double publish = ctx.clock.runner_device_s(static_cast<double>(n_), 0, 1, 0);
  if (publish > 0)
    for (auto& sw : sim_)
      for (auto& su : sw.upd) su.runner_debt_s += publish;
  const bool last = ctx.step + 1 >= T_;
  const int64_t target = (ctx.step + 1) * W_;
  double t_stop = -1;
  while (!kernel_.empty()) {
    const sim::Event& top = kernel_.next();
    if (!last && t_stop >= 0 && (top.t > t_stop || top.kind == kRead)) break;
    const sim::Event e = kernel_.dispatch(&ctx.clock);
    // Finish what happens at the same instant (writes, rounds) before ending the step.
    if (!last && t_stop < 0 && done_sum_ >= target) t_stop = e.t;
  }
  ctx_ = nullptr;
}

}  // namespace wb::algo
