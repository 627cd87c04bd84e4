// The communication ledger (sim/comm_ledger.h) and the bandwidth answer built on it
// (app/cli/bandwidth.h): replaying a run's ledger with its own cost model gives back its
// simulated time, with another model the time a clock of that model would have reached on
// the same operations, and the bandwidth for a compute utilization is the closed form of a
// run with one collective every H steps.
#include <cmath>
#include <vector>

#include <doctest/doctest.h>
#include "app/cli/bandwidth.h"
#include "core/rng.h"
#include "run_spec.h"
#include "sim/clock.h"
#include "sim/comm_ledger.h"

using namespace wb;

namespace {

json clock_json(const sim::ClockParams& p) {
  return json{{"flops_per_s", p.flops_per_s},
              {"latency_s", p.latency_s},
              {"bandwidth_bytes_per_s", p.bandwidth_bytes_per_s},
              {"node_size", p.node_size},
              {"intra_latency_s", p.intra_latency_s},
              {"intra_bandwidth_bytes_per_s", p.intra_bandwidth_bytes_per_s},
              {"batch_latency_s", p.batch_latency_s},
              {"profile", ""}};
}

sim::CommCall allreduce(int W, double bytes) {
  sim::CommCall k;
  k.op = sim::CommOp::kAllreduce;
  k.workers = W;
  k.bytes = bytes;
  return k;
}

// A random sequence of clock operations (compute, blocking collectives of a few sizes,
// overlapped transfers started and finished in order), applied to `c`.
void random_ops(sim::SimClock& c, uint64_t seed, int W) {
  core::Rng r = core::Rng::stream({seed, 0xb1ULL});
  std::vector<int> open;
  for (int i = 0; i < 400; ++i) {
    const double u = r.uniform(0, 1);
    if (u < 0.45) {
      std::vector<double> t(static_cast<size_t>(W));
      for (double& x : t) x = r.uniform(1e-4, 3e-3);
      c.advance_compute(t);
    } else if (u < 0.6) {
      c.charge(allreduce(W, std::floor(r.uniform(1, 4)) * 1e5));
    } else if (u < 0.65) {
      c.advance(r.uniform(0, 1e-3));
    } else if (u < 0.85 && open.size() < 3) {
      const double n = std::floor(r.uniform(1, 5)) * 2.5e5;
      sim::CommCall sum = allreduce(W, n), avg = allreduce(W, n), q = allreduce(W, n / 4);
      avg.average = true;
      const std::vector<sim::CommTerm> terms = {{avg, 1.0}, {sum, -1.0}, {q, 1.0}};
      open.push_back(c.start_transfer(terms));
    } else if (!open.empty()) {
      c.finish_transfer(open.front(), "allreduce");
      open.erase(open.begin());
    }
  }
  for (int t : open) c.finish_transfer(t, "allreduce");
}

}  // namespace

TEST_CASE("comm ledger: replay with the clock's model gives its time; with another model, that model's clock") {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    sim::ClockParams p;
    p.node_size = 1;  // every worker its own node: the cross link
    p.latency_s = 2e-5;
    p.bandwidth_bytes_per_s = 1e9;
    sim::SimClock a(p, {}, 4);
    random_ops(a, seed, 4);
    REQUIRE(a.ledger().replayable());
    CHECK(a.ledger().replay(a.cost_model(), p.node_size) == doctest::Approx(a.now()).epsilon(1e-12));
    // Re-priced at a tenth of the bandwidth = the same operations on a clock of that bandwidth
    // (the overlapped transfers hide less, queue longer): a ledger that lost the order of the
    // transfers or their terms fails this.
    sim::ClockParams slow = p;
    slow.bandwidth_bytes_per_s = 1e8;
    sim::SimClock b(slow, {}, 4);
    random_ops(b, seed, 4);
    const auto model = app::model_with_bandwidth(clock_json(p), "cross", 1e8);
    CHECK(a.ledger().replay(*model, p.node_size) == doctest::Approx(b.now()).epsilon(1e-12));
    CHECK(b.now() > a.now());
    // The record survives its JSON form (HDF5 comm_json).
    const sim::CommLedger back = sim::CommLedger::from_json(a.ledger().to_json(), core::Where{"t", "$"});
    CHECK(back.replay(*model, p.node_size) == doctest::Approx(b.now()).epsilon(1e-12));
    CHECK(back.bytes_sent_per_worker() == a.ledger().bytes_sent_per_worker());
  }
}

TEST_CASE("bandwidth for a compute utilization: the closed form of one allreduce every H steps") {
  // W workers, S steps of compute c each, an allreduce of n bytes every H steps on the cross
  // link (alpha, B): T(B) = S c + (S/H) (2 ceil(log2 W) alpha + 2 (W-1)/W n / B), and
  // CU = S c / T(B) gives B = 2 (W-1)/W n (S/H) / (S c / CU - S c - (S/H) 2 ceil(log2 W) alpha).
  const int W = 8, S = 600, H = 50;
  const double c = 2e-3, n = 4.0 * 1.2e6, alpha = 3e-5;
  sim::ClockParams p;
  p.node_size = 1;
  p.latency_s = alpha;
  p.bandwidth_bytes_per_s = 1e8;
  sim::SimClock clk(p, {}, W);
  const std::vector<double> times(W, c);
  for (int s = 1; s <= S; ++s) {
    clk.advance_compute(times);
    if (s % H == 0) clk.charge(allreduce(W, n));
  }
  const double R = static_cast<double>(S) / H, compute = S * c;
  CHECK(clk.ledger().bytes_sent_per_worker() == doctest::Approx(R * 2.0 * (W - 1) / W * n));
  for (double cu : {0.5, 0.9, 0.99}) {
    const double closed = 2.0 * (W - 1) / W * n * R / (compute / cu - compute - R * 2 * 3 * alpha);
    const double got = app::bandwidth_for(clk.ledger(), clock_json(p), "cross", p.node_size, compute, cu);
    CHECK(got == doctest::Approx(closed).epsilon(1e-9));
  }
  // Latency alone: at most S c / (S c + R 2 ceil(log2 W) alpha).
  const double ceiling = compute / (compute + R * 6 * alpha);
  CHECK(std::isinf(app::bandwidth_for(clk.ledger(), clock_json(p), "cross", p.node_size, compute,
                                     0.5 * (ceiling + 1))));
}

TEST_CASE("comm ledger of real runs: every algorithm that keeps one replays to its sim_s") {
  const char* algos[] = {
      R"("algorithm": {"name": "sync_sgd", "combine": "average"})",
      R"("algorithm": "adasum")",
      R"("algorithm": {"name": "local_sgd", "H": 4})",
      R"("algorithm": {"name": "diloco", "sync_every": 5})",
      R"("algorithm": {"name": "streaming_diloco", "sync_every": 6, "num_fragments": 2, "fragment_sync_delay": 2, "quantize_bits": 8})",
  };
  for (const char* a : algos) {
    CAPTURE(a);
    const app::RunResult r = test::run_spec(std::string(R"("model": "cubic", "workers": 4, "batch_size": 8, "steps": 40, "lr": 0.01, "clock": {"node_size": 1, "bandwidth_bytes_per_s": 1e8}, )") + a);
    REQUIRE(r.status == "completed");
    const sim::CommLedger l = sim::CommLedger::from_json(r.comm, core::Where{"t", "$"});
    REQUIRE(l.replayable());
    sim::ClockParams p;
    p.node_size = 1;
    p.bandwidth_bytes_per_s = 1e8;
    const sim::SimClock own(p);
    CHECK(l.replay(own.cost_model(), 1) == doctest::Approx(r.sim_s).epsilon(1e-12));
    CHECK(r.summary["bytes_sent_per_worker"].get<double>() == l.bytes_sent_per_worker());
    CHECK(l.bytes_sent_per_worker() > 0);
    CHECK(r.summary["compute_utilization"].get<double>() ==
          doctest::Approx(r.summary["sim_compute_s"].get<double>() / r.sim_s));
  }
  // Sync SGD: one allreduce of the gradient per step, 2 (W-1)/W of its bytes per worker.
  const app::RunResult s = test::run_spec(R"("model": "cubic", "workers": 4, "batch_size": 8, "steps": 40, "lr": 0.01)");
  CHECK(s.summary["bytes_sent_per_worker"].get<double>() == doctest::Approx(40 * 2.0 * 3 / 4 * 4 * 3));
}

TEST_CASE("comm ledger: an algorithm that moves the clock itself is not re-priced") {
  const app::RunResult r = test::run_spec(
      R"("model": "cubic", "workers": 4, "batch_size": 8, "steps": 40, "lr": 0.01, "algorithm": {"name": "lap_sgd", "updaters": 2, "H": 4})");
  REQUIRE(r.status == "completed");
  const sim::CommLedger l = sim::CommLedger::from_json(r.comm, core::Where{"t", "$"});
  CHECK_FALSE(l.replayable());
  CHECK(l.why_not().find("own event simulation") != std::string::npos);
  CHECK(r.summary["bytes_sent_per_worker"].is_null());
}
