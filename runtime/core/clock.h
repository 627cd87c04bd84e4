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
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/params.h"
#include "runtime/core/rng.h"

namespace wb::rt {

struct ClockParams {
  double flops_per_s = 5e10;            // one nominal worker's sustained compute rate
  double latency_s = 5e-6;              // alpha across nodes
  double bandwidth_bytes_per_s = 1e10;  // beta across nodes
  int64_t node_size = 0;                // workers per simulated node; 0 = one node for all
  double intra_latency_s = 1e-6;        // alpha inside a node
  double intra_bandwidth_bytes_per_s = 5e10;  // beta inside a node
  double batch_latency_s = 0;           // fixed cost per batch that uses no FLOP throughput
  static void describe(ParamSet<ClockParams>& p) {
    // Sane physical ranges (issue 18): a rate of 1e-320 made every time inf, a latency of
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
  }
};

struct JitterParams {
  std::string dist = "none";  // none | lognormal | uniform
  double sigma = 0.0;
  static void describe(ParamSet<JitterParams>& p) {
    p.field("dist", &JitterParams::dist,
            "per-batch compute-time factor: none, lognormal exp(sigma N(0,1) - sigma^2/2) "
            "(mean 1), uniform U[1-sigma, 1+sigma]")
        .one_of({"none", "lognormal", "uniform"});
    p.field("sigma", &JitterParams::sigma, "jitter scale").min(0).max(10);
    p.check([](const JitterParams& j, const Where& w) {
      if (j.dist == "uniform" && j.sigma >= 1) w.key("sigma").fail("uniform jitter needs sigma < 1");
    });
  }
};

struct HeterogeneityParams {
  std::vector<double> speeds;  // per worker; empty = all 1; shorter than W: repeated cyclically
  JitterParams jitter;
  static void describe(ParamSet<HeterogeneityParams>& p) {
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
  SimClock() = default;
  SimClock(const ClockParams& p, const HeterogeneityParams& h = {}, int workers = 1,
           uint64_t seed = 0)
      : p_(p), h_(h), workers_(workers), seed_(seed) {}
  double now() const { return t_; }
  void advance(double s) { t_ += s; }
  void set(double t) { t_ = t; }

  double speed(int worker) const {
    if (h_.speeds.empty()) return 1.0;
    return h_.speeds[static_cast<size_t>(worker) % h_.speeds.size()];
  }
  // Random compute-time factor of worker k's draw-th batch (mean 1).
  double jitter(int worker, uint64_t draw) const {
    if (h_.jitter.dist == "none" || h_.jitter.sigma == 0) return 1.0;
    Rng r = Rng::stream({seed_, 0x717e7ULL, static_cast<uint64_t>(worker), draw});
    const double s = h_.jitter.sigma;
    if (h_.jitter.dist == "lognormal") return std::exp(s * r.normal() - 0.5 * s * s);
    return r.uniform(1.0 - s, 1.0 + s);
  }
  // Nominal compute time of `flops` (no worker factor).
  double compute_s(double flops) const { return flops / p_.flops_per_s; }
  // Worker k's time for its draw-th batch of `flops` (plus the per-batch latency, if any).
  double compute_s(int worker, double flops, uint64_t draw) const {
    return (p_.batch_latency_s + flops / p_.flops_per_s) / speed(worker) * jitter(worker, draw);
  }
  // One batch of `flops` run by one of `streams` concurrent updaters that share worker k's
  // device (LAP/LPP-SGD: U updater processes per GPU, papers/lpp-sgd-scaling-the-wild.txt
  // section 4, "Concurrency on GPUs"). Steady-state processor sharing: a batch needs the
  // latency L (overlappable: it uses no throughput) plus flops/rate of device time, and the
  // device is shared by the streams, so one updater's cycle is
  //     max(L + flops/rate, streams x flops/rate)  (/ speed_k x jitter).
  // streams = 1 is compute_s(). Throughput grows with streams until streams x flops/rate
  // covers L + flops/rate, then stays flat: the saturation the paper's Table 3 shows
  // ("no advantage beyond 6 ... concurrent processes"). With L = 0 (the default) streams
  // only share the device: U updaters run no faster in total than one.
  double shared_compute_s(int worker, double flops, int streams, uint64_t draw) const {
    const double busy = flops / p_.flops_per_s;
    const double cycle = std::max(p_.batch_latency_s + busy, std::max(1, streams) * busy);
    return cycle / speed(worker) * jitter(worker, draw);
  }
  // The slowest of all W workers for one batch each (synchronous step).
  double slowest_compute_s(double flops, uint64_t draw) const {
    double m = 0;
    for (int k = 0; k < workers_; ++k) m = std::max(m, compute_s(k, flops, draw));
    return m;
  }
  double collective_s(int workers, double bytes) const {
    if (workers <= 1) return 0;
    const bool cross = p_.node_size > 0 && workers > p_.node_size;
    const double alpha = cross ? p_.latency_s : p_.intra_latency_s;
    const double beta = cross ? p_.bandwidth_bytes_per_s : p_.intra_bandwidth_bytes_per_s;
    const double steps = std::ceil(std::log2(static_cast<double>(workers)));
    return 2 * steps * alpha + 2.0 * (workers - 1) / workers * bytes / beta;
  }
  // One point-to-point message of `bytes` between workers a and b.
  double message_s(int a, int b, double bytes) const {
    const bool cross = p_.node_size > 0 && a / p_.node_size != b / p_.node_size;
    return cross ? p_.latency_s + bytes / p_.bandwidth_bytes_per_s
                 : p_.intra_latency_s + bytes / p_.intra_bandwidth_bytes_per_s;
  }
  const ClockParams& params() const { return p_; }
  const HeterogeneityParams& heterogeneity() const { return h_; }

 private:
  ClockParams p_;
  HeterogeneityParams h_;
  int workers_ = 1;
  uint64_t seed_ = 0;
  double t_ = 0;
};

}  // namespace wb::rt
