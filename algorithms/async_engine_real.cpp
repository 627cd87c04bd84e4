// The asynchronous engine, real mode (async_engine.cpp has the whole description).
// ============================================================ mode = "real"
// Real threads on the shared models, wall clock. U threads per local worker (the event
// kernel's ActorThreads, event_kernel.h) run the updater loop; x^q is read with std::atomic_ref<float>::load(relaxed) and written with
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

#include <chrono>
#include <thread>

#include "algorithms/async_engine.h"

namespace wb::algo {

// ============================================================ real mode
// The kernel's threads (ActorThreads), one actor per (local worker li, updater u): actor
// li x U + u. A thread's error stops the others and reaches the runner's thread at its next
// poll (step()).
void AsyncLocalSgd::real_start(StepContext&) {
  actors_.start(L_ * U_, [this](int a) { real_updater(a / U_, a % U_); });
}

// One updater's loop: the same read (claim + snapshot), compute (compute_update, through the
// worker) and write as the simulated mode's callbacks, on the shared model through relaxed
// atomics.
void AsyncLocalSgd::real_updater(int li, int u) {
  Local& lw = *local_[static_cast<size_t>(li)];
  Updater& up = lw.upd[static_cast<size_t>(u)];
  auto& x = lw.x;
  while (!actors_.stopping()) {
    const int64_t s = lw.claimed.fetch_add(1, std::memory_order_relaxed);  // line 2
    if (s >= T_) break;
    const int block = choose_block(u, s, up.after_tst);
    up.read_version = lw.version.load(std::memory_order_relaxed);
    const double t0 = thread_cpu_s();
    for (size_t i = 0; i < n_; ++i) up.v[i] = load_relaxed(x[i]);  // line 3
    const double t1 = thread_cpu_s();
    compute_update(up, lw.q, s, block);                               // lines 4-5
    const double t2 = thread_cpu_s();
    for (size_t i = up.lo; i < up.hi; ++i) add_relaxed(x[i], up.v2[i] - up.v[i]);  // line 6
    const double t3 = thread_cpu_s();
    const uint64_t stale = lw.version.fetch_add(1, std::memory_order_relaxed) - up.read_version;
    {
      std::lock_guard<std::mutex> lock(lw.stats_mu);
      lw.loss_sum += up.loss;
      ++lw.loss_cnt;
      lw.stale_sum += static_cast<double>(stale);
      ++lw.updates;
      lw.read_cpu_s += t1 - t0;
      lw.floats_read += static_cast<double>(n_);
      lw.write_cpu_s += t3 - t2;
      lw.floats_written += static_cast<double>(up.hi - up.lo);
      if (!lw.has_loss) lw.has_loss = true;
    }
    lw.done.fetch_add(1, std::memory_order_release);
    {  // the runner may be between its check and its wait: take the mutex before notifying
      std::lock_guard<std::mutex> lock(progress_mu_);
    }
    progress_cv_.notify_one();
  }
}

void AsyncLocalSgd::real_join_threads() { actors_.join(); }

// exact: the updaters have stopped (final round): x = avg, no concurrent writes to keep.
void AsyncLocalSgd::real_round_start(StepContext& ctx, bool exact) {
  ++rounds_;
  if (W_ == 1) return;  // nothing to average (the round is still counted)
  for (auto& lw : local_) {  // line 13
    const double t0 = thread_cpu_s();
    for (size_t i = 0; i < n_; ++i) lw->snap[i] = load_relaxed(lw->x[i]);
    const double t1 = thread_cpu_s();
    std::lock_guard<std::mutex> lock(lw->stats_mu);
    lw->read_cpu_s += t1 - t0;
    lw->floats_read += static_cast<double>(n_);
  }
  if (R_ == 1) {  // line 14 in-rank: the tree average over the local workers
    std::vector<std::span<float>> spans;
    for (auto& lw : local_) {
      std::copy(lw->snap.begin(), lw->snap.end(), lw->avg.begin());
      spans.emplace_back(lw->avg);
    }
    if (W_ > 1) ctx.coll.allreduce<float>(spans, comm::ReduceOp::kAverage, comm::Charge::kNone);
    real_round_apply(exact);
    return;
  }
  // Across ranks: this rank's sum (one worker: its snapshot, no pass), then one non-blocking
  // allreduce, in float: a sum in double sends twice the bytes of the round simulated mode
  // prices (collective_s of 4n bytes) and takes two passes more (the zeroing and the sum),
  // which made real mode's rounds on the sparse MLP [128] ~0.5 ms dearer than the model's.
  if (L_ == 1) {
    round_->start(local_[0]->snap, rsum_);
  } else {
    std::copy(local_[0]->snap.begin(), local_[0]->snap.end(), sum_.begin());
    for (size_t l = 1; l < local_.size(); ++l)
      for (size_t i = 0; i < n_; ++i) sum_[i] += local_[l]->snap[i];
    round_->start(sum_, rsum_);
  }
  round_exact_ = exact;
}

bool AsyncLocalSgd::real_round_poll(bool wait) {
  while (round_ && round_->pending()) {
    if (round_->test()) {
      for (auto& lw : local_)
        for (size_t i = 0; i < n_; ++i) lw->avg[i] = rsum_[i] / static_cast<float>(W_);
      real_round_apply(round_exact_);
      return true;
    }
    if (!wait) return false;
    // Poll gently: a busy wait would take a core from the updaters.
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  return false;
}

void AsyncLocalSgd::real_publish(StepContext& ctx) {
  for (int li = 0; li < L_; ++li) {
    auto& lw = *local_[static_cast<size_t>(li)];
    auto& w = ctx.workers[static_cast<size_t>(li)].w;
    if (actors_.joined())
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
      const double t0 = thread_cpu_s();
      for (size_t i = 0; i < n_; ++i) add_relaxed(x[i], lw.avg[i] - lw.snap[i]);
      const double t1 = thread_cpu_s();
      lw.version.fetch_add(1, std::memory_order_relaxed);
      std::lock_guard<std::mutex> lock(lw.stats_mu);
      lw.write_cpu_s += t1 - t0;
      lw.floats_written += static_cast<double>(n_);
    }
  }
}

}  // namespace wb::algo
