// Simulated time (DESIGN.md section 2, "clock"): what a run would take on the modelled
// hardware, independent of how this machine runs the simulation.
//  - compute: a batch costs flops_per_sample(model) x batch / (flops_per_s x speed_k)
//    x jitter for worker k. speed_k comes from `heterogeneity.speeds` (1 = nominal,
//    0.76 = 24% slower, as in the Adaptive SGD paper's GPUs); jitter is a seeded random
//    factor per (worker, draw), so every rank computes every worker's time identically
//    without communication.
//  - communication: alpha-beta model, latency + bytes / bandwidth per message, with
//    separate in-node and cross-node links (`node_size` workers per simulated node). A
//    collective over W workers costs 2 ceil(log2 W) alpha + 2 (W-1)/W bytes / beta
//    (the bandwidth-optimal allreduce bound), on the slower link it crosses.
// A synchronous step costs the slowest worker's compute plus the collective.
//  - batch latency (optional, `batch_latency_s`): a fixed cost per batch that uses no FLOP
//    throughput (kernel launches, host-device syncs on a GPU). It makes small batches
//    less efficient than large ones, and concurrent updaters sharing one device
//    (LAP/LPP-SGD) overlap it: shared_compute_s.
// The numbers above are the default cost model (FormulaCostModel); `profile` names a measured
// or published one instead (sim/cost_model.h: each op priced by its own algorithm,
// piecewise alpha-beta per size segment and link class, compute per model and batch size).
// The clock keeps sim_s's breakdown (compute, communication, waiting on stragglers) and hands
// every priced event to an optional EventSink (sim/timeline.h) for --timeline.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/params.h"
#include "core/rng.h"
#include "sim/comm_ledger.h"
#include "sim/cost_model.h"
#include "sim/timeline.h"

namespace wb::sim {

struct ClockParams {
  double flops_per_s = 5e10;            // one nominal worker's sustained compute rate
  double latency_s = 5e-6;              // alpha across nodes
  double bandwidth_bytes_per_s = 1e10;  // beta across nodes
  int64_t node_size = 0;                // workers per simulated node; 0 = one node for all
  double intra_latency_s = 1e-6;        // alpha inside a node
  double intra_bandwidth_bytes_per_s = 5e10;  // beta inside a node
  double batch_latency_s = 0;           // fixed cost per batch that uses no FLOP throughput
  std::string profile;                  // a cost profile file (calib/*.json); "" = the numbers above
  static void describe(core::ParamSet<ClockParams>& p) {
    // Sane physical ranges: a rate of 1e-320 made every time inf, a latency of
    // 1e300 too. Rates are >= 1 per second (and <= 1e30: "free"), latencies <= an hour, so
    // a simulated time stays finite for any budget.
    p.field("flops_per_s", &ClockParams::flops_per_s, "nominal worker compute rate")
        .min(1)
        .max(1e30);
    p.field("latency_s", &ClockParams::latency_s, "alpha: per-message latency across nodes")
        .min(0)
        .max(3600);
    p.field("bandwidth_bytes_per_s", &ClockParams::bandwidth_bytes_per_s,
            "beta: link bandwidth across nodes")
        .min(1)
        .max(1e30);
    p.field("node_size", &ClockParams::node_size,
            "workers per simulated node (0 = all workers in one node)")
        .min(0)
        .max(1 << 20);
    p.field("intra_latency_s", &ClockParams::intra_latency_s, "alpha inside a node").min(0).max(3600);
    p.field("intra_bandwidth_bytes_per_s", &ClockParams::intra_bandwidth_bytes_per_s,
            "beta inside a node")
        .min(1)
        .max(1e30);
    p.field("batch_latency_s", &ClockParams::batch_latency_s,
            "fixed per-batch latency (kernel launches, host-device syncs) that does not use "
            "the device's FLOP throughput: concurrent updaters on one device overlap it "
            "(LAP/LPP-SGD, shared_compute_s); 0 = pure throughput model")
        .min(0)
        .max(3600);
    p.field("profile", &ClockParams::profile,
            "cost profile JSON (written by `workbench calibrate`, or calib/*.json): replaces "
            "flops_per_s, latencies, bandwidths and batch_latency_s by measured per-op, "
            "per-size costs; \"\" = the formula model of these fields");
    p.check([](const ClockParams& c, const core::Where& w) {
      if (c.profile.empty()) return;
      try {
        (void)cached_cost_profile(c.profile);  // read once: the runs price with these values
      } catch (const UserError& e) {
        w.key("profile").fail(e.what());
      }
    });
  }
};

struct JitterParams {
  std::string dist = "none";  // none | lognormal | uniform
  double sigma = 0.0;
  static void describe(core::ParamSet<JitterParams>& p) {
    p.field("dist", &JitterParams::dist,
            "per-batch compute-time factor: none, lognormal exp(sigma N(0,1) - sigma^2/2) "
            "(mean 1), uniform U[1-sigma, 1+sigma]")
        .one_of({"none", "lognormal", "uniform"});
    p.field("sigma", &JitterParams::sigma, "jitter scale").min(0).max(10);
    p.check([](const JitterParams& j, const core::Where& w) {
      if (j.dist == "uniform" && j.sigma >= 1) w.key("sigma").fail("uniform jitter needs sigma < 1");
    });
  }
};

struct HeterogeneityParams {
  std::vector<double> speeds;  // per worker; empty = all 1; shorter than W: repeated cyclically
  JitterParams jitter;
  static void describe(core::ParamSet<HeterogeneityParams>& p) {
    p.field("speeds", &HeterogeneityParams::speeds,
            "relative worker speeds (1 = nominal); empty = homogeneous; a list shorter than "
            "W repeats cyclically")
        .positive()  // 0 or less: not a speed ("must be > 0")
        .min(1e-3)   // slower than 1/1000: a time that is no longer meaningful
        .max(1e3);
    p.field("jitter", &HeterogeneityParams::jitter, "random per-batch compute-time factor");
  }
};

class SimClock {
 public:
  SimClock() : SimClock(ClockParams{}) {}
  SimClock(const ClockParams& p, const HeterogeneityParams& h = {}, int workers = 1,
           uint64_t seed = 0)
      : p_(p), h_(h), workers_(workers), seed_(seed) {
    if (p.profile.empty())
      model_ = std::make_shared<FormulaCostModel>(p.flops_per_s, p.batch_latency_s, p.latency_s,
                                                  p.bandwidth_bytes_per_s, p.intra_latency_s,
                                                  p.intra_bandwidth_bytes_per_s);
    else
      model_ = std::make_shared<ProfileCostModel>(cached_cost_profile(p.profile).profile, p.profile);
  }
  // The model whose compute this clock prices (its name keys a profile's compute table; its
  // nominal flops per sample turns a batch's flops into samples).
  void bind_model(const std::string& name, double flops_per_sample) {
    model_name_ = name;
    flops_per_sample_ = flops_per_sample;
  }
  double now() const { return t_; }
  // Time that is neither a collective nor a sync step's straggler wait: counted as compute.
  void advance(double s) {
    emit_step(EventKind::kCompute, "compute", s);
    ledger_.fixed(s);
    t_ += s;
  }
  // Moves the clock to an instant the algorithm's own event simulation computed (Adaptive
  // and elastic SGD): the run's communication can no longer be re-priced (CommLedger).
  void set(double t) {
    emit_step(EventKind::kCompute, "compute", t - t_);
    ledger_.opaque("the algorithm moves the clock by its own event simulation");
    t_ = t;
  }
  // A synchronous step's compute phase: every worker runs one batch (times: all W, worker
  // order), the step lasts the slowest. The mean is compute, the rest waiting on stragglers.
  void advance_compute(std::span<const double> times) {
    if (times.empty()) return;
    double slowest = 0, sum = 0;
    for (double x : times) {
      slowest = std::max(slowest, x);
      sum += x;
    }
    const double mean = sum / static_cast<double>(times.size());
    wait_s_ += slowest - mean;
    if (sink_) {
      const size_t n = std::min(times.size(), static_cast<size_t>(kMaxWorkerTracks));
      for (size_t k = 0; k < n; ++k) {
        sink_->event({static_cast<int>(k), EventKind::kCompute, "compute", t_, times[k]});
        if (slowest > times[k])
          sink_->event({static_cast<int>(k), EventKind::kWait, "wait", t_ + times[k], slowest - times[k]});
      }
      sink_->event({kStepTrack, EventKind::kCompute, "step compute (slowest)", t_, slowest});
    }
    ledger_.fixed(slowest);
    t_ += slowest;
  }
  // A blocking communication, priced by the cost model and charged in full (comm/ calls it
  // for every collective it runs with Charge::kClock).
  void charge(const CommCall& c) {
    ledger_.blocking(c);
    advance_comm(model_->comm_s(c, p_.node_size), comm_op_name(c.op));
  }
  // A transfer overlapped with compute (Streaming DiLoCo's fragment rounds, arXiv:2501.18512
  // section 3): it costs sum(coef x price(call)) (summed in the order given), starts when the
  // cross-worker link is free (rounds queue on it) and finishes that cost later;
  // finish_transfer charges the part the compute since its start did not hide (all of it
  // when nothing ran in between). Returns the transfer's ticket.
  int start_transfer(std::span<const CommTerm> terms) {
    double cost = 0;
    for (const CommTerm& t : terms) cost += t.coef * model_->comm_s(t.call, p_.node_size);
    const double start = std::max(t_, link_free_);
    link_free_ = start + cost;
    const int ticket = ledger_.start(terms);
    flights_.push_back({ticket, start, cost});
    return ticket;
  }
  void finish_transfer(int ticket, const char* name) {
    auto it = std::find_if(flights_.begin(), flights_.end(), [&](const Flight& f) { return f.ticket == ticket; });
    WB_ASSERT(it != flights_.end(), "SimClock::finish_transfer: no such transfer");
    const Flight f = *it;
    flights_.erase(it);
    ledger_.finish(ticket);
    if (f.start == t_) advance_comm(f.cost, name);
    else if (f.start + f.cost > t_) advance_comm(f.start + f.cost - t_, name);
  }
  // Communication the algorithm priced itself (its own event simulation: LAP/LPP-SGD): the
  // run's ledger cannot re-price it.
  void ledger_opaque(const char* why) { ledger_.opaque(why); }
  const CommLedger& ledger() const { return ledger_; }
  // sim_s's breakdown: compute + communication + waiting = now().
  double comm_total_s() const { return comm_s_; }
  double wait_total_s() const { return wait_s_; }
  double compute_total_s() const { return t_ - comm_s_ - wait_s_; }

  // Events go to `sink` (nullptr: none); the async engines may emit their own per-worker
  // events through sink() (sim/timeline.h).
  void set_sink(EventSink* sink) { sink_ = sink; }
  EventSink* sink() const { return sink_; }

  double speed(int worker) const {
    if (h_.speeds.empty()) return 1.0;
    return h_.speeds[static_cast<size_t>(worker) % h_.speeds.size()];
  }
  // Random compute-time factor of worker k's draw-th batch (mean 1).
  double jitter(int worker, uint64_t draw) const {
    if (h_.jitter.dist == "none" || h_.jitter.sigma == 0) return 1.0;
    core::Rng r = core::Rng::stream({seed_, 0x717e7ULL, static_cast<uint64_t>(worker), draw});
    const double s = h_.jitter.sigma;
    if (h_.jitter.dist == "lognormal") return std::exp(s * r.normal() - 0.5 * s * s);
    return r.uniform(1.0 - s, 1.0 + s);
  }
  // Nominal compute time of `flops` (no worker factor, no per-batch latency).
  double compute_s(double flops) const { return batch(flops).busy_s; }
  // Worker k's time for its draw-th batch of `flops` (plus the per-batch latency, if any).
  double compute_s(int worker, double flops, uint64_t draw) const {
    const BatchCost b = batch(flops);
    return (b.latency_s + b.busy_s) / speed(worker) * jitter(worker, draw);
  }
  // One batch of `flops` run by one of `streams` concurrent updaters that share worker k's
  // device (LAP/LPP-SGD: U updater processes per GPU, Chatterjee et al., arXiv:2203.06638
  // section 4, "Concurrency on GPUs"). Steady-state processor sharing: a batch needs the
  // latency L (overlappable: it uses no throughput) plus flops/rate of device time, and the
  // device is shared by the streams, so one updater's cycle is
  //     max(L + flops/rate, streams x flops/rate)  (/ speed_k x jitter).
  // streams = 1 is compute_s(). Throughput grows with streams until streams x flops/rate
  // covers L + flops/rate, then stays flat: the saturation the paper's Table 3 shows
  // ("no advantage beyond 6 ... concurrent processes"). With L = 0 (the default) streams
  // only share the device: U updaters run no faster in total than one. With a profile, L is
  // the model's fixed_s and flops/rate its per-sample part (a CPU profile, whose fixed_s is
  // the core's own work, compute_fixed_overlaps = false: L = 0, busy = fixed + per-sample).
  // extra_busy_s: the updater's own work on the shared model besides the pass
  // (shared_model_s: its snapshot read and atomic write), which occupies the device (core)
  // like the pass's busy part.
  double shared_compute_s(int worker, double flops, int streams, uint64_t draw,
                          double extra_busy_s = 0) const {
    const BatchCost b = batch(flops);
    const double busy = b.busy_s + extra_busy_s;
    const double cycle = std::max(b.latency_s + busy, std::max(1, streams) * busy);
    return cycle / speed(worker) * jitter(worker, draw);
  }
  // The slowest of all W workers for one batch each (synchronous step).
  double slowest_compute_s(double flops, uint64_t draw) const {
    double m = 0;
    for (int k = 0; k < workers_; ++k) m = std::max(m, compute_s(k, flops, draw));
    return m;
  }
  // An updater's snapshot read of `floats_read` and atomic write of `floats_written`
  // elements of a shared model (CostModel::shared_model_s; 0 unless a profile measured it).
  double shared_model_s(double floats_read, double floats_written) const {
    return model_->shared_model_s(floats_read, floats_written);
  }
  // Device seconds the runner's rounds and steps take from a worker's updaters
  // (CostModel::runner_device_s; 0 unless a profile says the runner shares the core).
  double runner_device_s(double floats, double rounds, double steps, double collective_s) const {
    return model_->runner_device_s(floats, rounds, steps, collective_s);
  }
  // `passes` element-wise passes over `floats` floats (CostModel::elementwise_s; 0 unless a
  // profile measured it).
  double elementwise_s(double floats, double passes) const { return model_->elementwise_s(floats, passes); }
  // Any communication, priced by the cost model.
  double comm_s(const CommCall& c) const { return model_->comm_s(c, p_.node_size); }
  // An allreduce over `workers` of `bytes` (the default model: the bandwidth-optimal bound).
  double collective_s(int workers, double bytes) const {
    CommCall c;
    c.op = CommOp::kAllreduce;
    c.workers = workers;
    c.bytes = bytes;
    return comm_s(c);
  }
  // One point-to-point message of `bytes` between workers a and b.
  double message_s(int a, int b, double bytes) const {
    CommCall c;
    c.op = CommOp::kP2P;
    c.from = a;
    c.to = b;
    c.bytes = bytes;
    return comm_s(c);
  }
  const ClockParams& params() const { return p_; }
  const HeterogeneityParams& heterogeneity() const { return h_; }
  const CostModel& cost_model() const { return *model_; }

  static constexpr int kMaxWorkerTracks = 64;  // per-worker timeline tracks (the first 64)

 private:
  BatchCost batch(double flops) const {
    const double samples = flops_per_sample_ > 0 ? flops / flops_per_sample_ : 0.0;
    return model_->batch(model_name_, flops, samples);
  }
  void emit_step(EventKind k, const char* name, double dur) {
    if (sink_ && dur > 0) sink_->event({kStepTrack, k, name, t_, dur});
  }
  ClockParams p_;
  HeterogeneityParams h_;
  int workers_ = 1;
  uint64_t seed_ = 0;
  double t_ = 0;
  double comm_s_ = 0, wait_s_ = 0;
  std::shared_ptr<const CostModel> model_;
  std::string model_name_;
  double flops_per_sample_ = 0;
  EventSink* sink_ = nullptr;
  struct Flight {
    int ticket = 0;
    double start = 0, cost = 0;
  };
  std::vector<Flight> flights_;  // transfers started and not yet finished
  double link_free_ = 0;         // when the link finishes the transfers queued on it
  CommLedger ledger_;
  // Charges s seconds of communication (its breakdown and timeline event).
  void advance_comm(double s, const char* name) {
    comm_s_ += s;
    if (sink_) sink_->event({kCollectiveTrack, EventKind::kComm, name, t_, s});
    t_ += s;
  }
};

}  // namespace wb::sim
