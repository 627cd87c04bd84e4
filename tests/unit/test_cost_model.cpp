// The cost model behind the simulated clock (sim/cost_model.h): per-op pricing from
// per-level piecewise alpha-beta tables, the OLS fit, profile files, sim_s's breakdown.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "app/calibrate/calibrate.h"
#include "app/plan/run_plan.h"
#include "core/error.h"
#include "models/model.h"
#include "sim/clock.h"
#include "sim/cost_model.h"

using namespace wb;

namespace {

sim::Piecewise line(double alpha, double beta) { return sim::Piecewise{{{1e18, alpha, beta}}}; }

sim::CostProfile toy_profile() {
  sim::CostProfile p;
  p.ranks = 2;
  p.links["intra"]["p2p"] = line(1e-6, 1e-9);
  p.links["intra"]["allreduce"] = line(1e-5, 2e-9);
  p.links["intra"]["adasum"] = line(2e-5, 3e-9);
  p.links["intra"]["adasum_split"] = line(3e-5, 3e-9);
  p.links["intra"]["broadcast"] = line(4e-6, 1e-9);
  p.links["cross"]["p2p"] = line(1e-5, 1e-8);
  p.links["cross"]["allreduce"] = line(1e-4, 2e-8);
  p.compute["toy"] = {1e-3, 1e-4};
  return p;
}

std::string write_tmp(const std::string& text) {
  static int k = 0;
  const std::string path = "/tmp/wb_test_profile_" + std::to_string(::getpid()) + "_" + std::to_string(k++) + ".json";
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("piecewise alpha-beta picks the segment of the size") {
  sim::Piecewise pw{{{1024, 1e-6, 1e-9}, {1e18, 5e-6, 5e-10}}};
  CHECK(pw(100) == doctest::Approx(1e-6 + 1e-7));
  CHECK(pw(1024) == doctest::Approx(1e-6 + 1024e-9));
  CHECK(pw(1e6) == doctest::Approx(5e-6 + 5e-4));
}

TEST_CASE("OLS per segment recovers exact lines and reports residuals") {
  std::vector<double> x, t;
  for (double b = 4; b <= 1 << 20; b *= 2) {
    x.push_back(b);
    t.push_back(b <= 4096 ? 2e-6 + 1e-10 * b : 8e-6 + 3e-10 * b);
  }
  std::vector<double> res;
  const sim::Piecewise pw = sim::fit_piecewise(x, t, {4096}, &res);
  REQUIRE(pw.segments.size() == 2);
  CHECK(pw.segments[0].alpha_s == doctest::Approx(2e-6));
  CHECK(pw.segments[0].beta_s_per_byte == doctest::Approx(1e-10));
  CHECK(pw.segments[1].alpha_s == doctest::Approx(8e-6));
  CHECK(pw.segments[1].beta_s_per_byte == doctest::Approx(3e-10));
  for (double r : res) CHECK(std::fabs(r) < 1e-9);
  // A noisy point shows up in its residual.
  t[3] *= 1.5;
  sim::fit_piecewise(x, t, {4096}, &res);
  CHECK(std::fabs(res[3]) > 0.1);
}

TEST_CASE("segments placed by the fit: a protocol switch between two sizes becomes a break") {
  // Three exact lines: small messages, an eager protocol up to 16 KB, a rendezvous one from 32 KB
  // (the jump MPICH over UCX makes on the Zen 5 reference), sizes 4 B .. 64 MB by factors of 2.
  auto truth = [](double b) {
    return b <= 1024 ? 1.4e-6 + 0.1e-9 * b : b <= 16384 ? 1.0e-6 + 0.15e-9 * b : 8e-6 + 0.19e-9 * b;
  };
  std::vector<double> x, t;
  for (double b = 4; b <= double(64 << 20); b *= 2) {
    x.push_back(b);
    t.push_back(truth(b));
  }
  std::vector<double> res;
  const sim::Piecewise pw = sim::fit_piecewise_auto(x, t, 7, 3, &res);
  for (double r : res) CHECK(std::fabs(r) < 1e-9);
  // The switch is a break strictly between 16 KB and 32 KB; no segment straddles it.
  bool split = false;
  for (const auto& sg : pw.segments) split = split || (sg.max_bytes > 16384 && sg.max_bytes < 32768);
  CHECK(split);
  // Exact data needs no more segments than lines: ties go to the fewer.
  CHECK(pw.segments.size() == 3);
  // The fixed breaks the fit replaced (1 KB, 32 KB, ...) put the switch inside (1 KB, 32 KB]:
  // that segment's worst point is far off, which the placed breaks avoid.
  std::vector<double> fixed_res;
  sim::fit_piecewise(x, t, {1024, 32768, 262144, 1048576, 4194304, 16777216}, &fixed_res);
  double worst = 0;
  for (double r : fixed_res) worst = std::max(worst, std::fabs(r));
  CHECK(worst > 0.2);
  // Noise on one point shows in its residual; every segment keeps at least 3 sizes.
  t[12] *= 1.5;
  const sim::Piecewise noisy = sim::fit_piecewise_auto(x, t, 7, 3, &res);
  CHECK(std::fabs(res[12]) > 0.05);
  double lo = 0;
  for (const auto& sg : noisy.segments) {
    int k = 0;
    for (double b : x) k += b > lo && b <= sg.max_bytes;
    CHECK(k >= 3);
    lo = sg.max_bytes;
  }
  // Fewer points than a segment needs: one line through them.
  CHECK(sim::fit_piecewise_auto({4, 8}, {1e-6, 2e-6}, 7, 3, nullptr).segments.size() == 1);
}

TEST_CASE("rel_line: exact lines, and the relative error it minimizes") {
  const auto [a, b] = sim::rel_line({1, 2, 4, 8}, {3, 5, 9, 17});
  CHECK(a == doctest::Approx(1));
  CHECK(b == doctest::Approx(2));
  // Points 1000x apart: OLS fits the large one and misses the small one by far more than
  // the relative fit does.
  const std::vector<double> x{1e3, 2e3, 1e6}, t{1.2e-6, 1.0e-6, 2e-4};
  auto worst = [&](std::pair<double, double> l) {
    double w = 0;
    for (size_t i = 0; i < x.size(); ++i) w = std::max(w, std::fabs((l.first + l.second * x[i] - t[i]) / t[i]));
    return w;
  };
  CHECK(worst(sim::rel_line(x, t)) < worst(sim::ols_line(x, t)));
  // Falling times (noise among tiny messages): the constant, the weighted mean.
  const auto [ac, bc] = sim::rel_line({4, 8, 16}, {2e-6, 1e-6, 1e-6});
  CHECK(bc == 0.0);
  CHECK(ac == doctest::Approx((2e-6 / 4e-12 + 1e-6 / 1e-12 + 1e-6 / 1e-12) / (1 / 4e-12 + 2 / 1e-12)));
}

TEST_CASE("average's division and an uneven aligned Adasum are priced") {
  sim::CostProfile p = toy_profile();
  sim::CommCall c;
  c.op = sim::CommOp::kAllreduce;
  c.workers = 4;
  c.bytes = 4000;
  const double sum = sim::ProfileCostModel(p, "toy").comm_s(c, 0);
  c.average = true;
  // No division entry (a profile timed before it): the average costs what its level says.
  CHECK(sim::ProfileCostModel(p, "toy").comm_s(c, 0) == sum);
  p.average_divide_s_per_float = 1e-10;
  CHECK(sim::ProfileCostModel(p, "toy").comm_s(c, 0) == doctest::Approx(sum + 1000 * 1e-10));
  c.elem_bytes = 8;  // doubles: half the elements
  CHECK(sim::ProfileCostModel(p, "toy").comm_s(c, 0) == doctest::Approx(sum + 500 * 1e-10));
  const std::string path = write_tmp(sim::cost_profile_json(p).dump());
  CHECK(sim::load_cost_profile(path).average_divide_s_per_float == 1e-10);
  std::remove(path.c_str());
  // Aligned Adasum: level l priced at the given bytes instead of bytes / 2^l.
  const sim::ProfileCostModel m(toy_profile(), "toy");
  sim::CommCall a;
  a.op = sim::CommOp::kAdasum;
  a.workers = 4;
  a.bytes = 1e6;
  a.schedule = sim::AdasumSchedule::kAligned;
  const double even = m.comm_s(a, 0);
  CHECK(even == doctest::Approx(2 * 2e-5 + 3e-9 * (1e6 + 5e5)));
  const std::vector<double> lb{1.5e6, 9e5};
  a.level_bytes = lb;
  CHECK(m.comm_s(a, 0) == doctest::Approx(2 * 2e-5 + 3e-9 * (1.5e6 + 9e5)));
  a.schedule = sim::AdasumSchedule::kSplit;  // the split schedule halves evenly: no level bytes
  a.pieces = 1;
  a.level_bytes = {};
  const double split = m.comm_s(a, 0);
  a.level_bytes = lb;
  CHECK(m.comm_s(a, 0) == split);
}

TEST_CASE("the non-negative fit: the constrained least-squares optimum, not the OLS line clamped") {
  // Zen 5 LeNet-5 batches 64 and 128 (2.0237 and 4.7306 ms): the OLS line has intercept
  // -0.6832 ms. The constrained optimum goes through the origin with slope sum xt / sum xx;
  // the old clamp (intercept 0, OLS slope kept) priced 64 at 2.707 ms, +34%.
  const std::vector<double> x{64, 128}, t{2.0237e-3, 4.7306e-3};
  const auto [a_ols, b_ols] = sim::ols_line(x, t);
  REQUIRE(a_ols < 0);
  const auto [a, b] = sim::nonneg_line(x, t);
  CHECK(a == 0.0);
  CHECK(b == doctest::Approx((64 * 2.0237e-3 + 128 * 4.7306e-3) / (64.0 * 64 + 128.0 * 128)));
  // Optimal on the quadrant: no feasible neighbour has a smaller squared error.
  auto sse = [&](double aa, double bb) {
    double s = 0;
    for (size_t i = 0; i < x.size(); ++i) s += (aa + bb * x[i] - t[i]) * (aa + bb * x[i] - t[i]);
    return s;
  };
  for (double da : {0.0, 1e-6, 1e-5})
    for (double db : {-1e-7, 0.0, 1e-7}) CHECK(sse(a + da, b + db) >= sse(a, b) - 1e-18);
  std::vector<double> res;
  const sim::Piecewise pw = sim::fit_piecewise(x, t, {}, &res, /*nonneg=*/true);
  CHECK(pw(64) == doctest::Approx(64 * b));
  CHECK(std::fabs(res[0]) < 0.15);  // 2.30 vs 2.02 ms
  CHECK(std::fabs(res[1]) < 0.05);
  // A falling line (negative slope) becomes the constant mean; a feasible line is the OLS one.
  const auto [ac, bc] = sim::nonneg_line({1, 2, 3}, {3e-3, 2e-3, 1e-3});
  CHECK(bc == 0.0);
  CHECK(ac == doctest::Approx(2e-3));
  const auto [af, bf] = sim::nonneg_line({1, 2, 3}, {2e-3, 3e-3, 4e-3});
  CHECK(af == doctest::Approx(1e-3));
  CHECK(bf == doctest::Approx(1e-3));
}

TEST_CASE("each op prices itself by its algorithm over levels") {
  const sim::ProfileCostModel m(toy_profile(), "toy");
  sim::CommCall c;
  c.bytes = 1 << 20;
  // W = 2: exactly one level of each op.
  c.workers = 2;
  c.op = sim::CommOp::kAllreduce;
  CHECK(m.comm_s(c, 0) == doctest::Approx(1e-5 + 2e-9 * (1 << 20)));
  // W = 8: RVHDD, level l on n / 2^l bytes.
  c.workers = 8;
  const double n = 1 << 20;
  CHECK(m.comm_s(c, 0) == doctest::Approx(3e-5 + 2e-9 * (n + n / 2 + n / 4)));
  // W = 6: P = 4 positions plus fold and unfold of n bytes (p2p).
  c.workers = 6;
  CHECK(m.comm_s(c, 0) == doctest::Approx(2 * (1e-6 + 1e-9 * n) + 2e-5 + 2e-9 * (n + n / 2)));
  // Adasum: whole (<= 32 KB) swaps the whole vector every level; split adds dot-product rounds.
  c.workers = 8;
  c.op = sim::CommOp::kAdasum;
  c.bytes = 16384;
  c.schedule = sim::AdasumSchedule::kWhole;
  CHECK(m.comm_s(c, 0) == doctest::Approx(3 * (2e-5 + 3e-9 * 16384)));
  c.bytes = n;
  c.schedule = sim::AdasumSchedule::kAligned;
  const double aligned = m.comm_s(c, 0);
  CHECK(aligned == doctest::Approx(3 * 2e-5 + 3e-9 * (n + n / 2 + n / 4)));
  c.schedule = sim::AdasumSchedule::kSplit;
  c.pieces = 10;
  // levels use the split table (alpha 3e-5), plus 0 + 1 + 2 extra rounds of 240 bytes.
  CHECK(m.comm_s(c, 0) == doctest::Approx(3 * 3e-5 + 3e-9 * (n + n / 2 + n / 4) + 3 * (1e-6 + 240e-9)));
  CHECK(m.comm_s(c, 0) > aligned);
  // Broadcast: a binomial tree, ceil(log2 W) messages of n.
  c.op = sim::CommOp::kBroadcast;
  c.workers = 5;
  CHECK(m.comm_s(c, 0) == doctest::Approx(3 * (4e-6 + 1e-9 * n)));
  // Link classes: with 2 workers per node, level 0 is intra, levels 1.. cross.
  c.op = sim::CommOp::kAllreduce;
  c.workers = 4;
  CHECK(m.comm_s(c, 2) == doctest::Approx(1e-5 + 2e-9 * n + 1e-4 + 2e-8 * n / 2));
  c.op = sim::CommOp::kP2P;
  c.from = 1;
  c.to = 2;
  CHECK(m.comm_s(c, 2) == doctest::Approx(1e-5 + 1e-8 * n));
  c.to = 0;
  CHECK(m.comm_s(c, 2) == doctest::Approx(1e-6 + 1e-9 * n));
}

TEST_CASE("the default formula model keeps the old alpha-beta bound for every op") {
  sim::ClockParams p;
  p.intra_latency_s = 1e-6;
  p.intra_bandwidth_bytes_per_s = 1e10;
  sim::SimClock c(p, {}, 4);
  sim::CommCall k;
  k.workers = 4;
  k.bytes = 1e6;
  for (auto op : {sim::CommOp::kAllreduce, sim::CommOp::kAdasum, sim::CommOp::kWeightedAverage,
                  sim::CommOp::kBroadcast}) {
    k.op = op;
    CHECK(c.comm_s(k) == doctest::Approx(4e-6 + 1.5e-4));
  }
}

TEST_CASE("a profile prices compute per model: fixed + per-sample") {
  const std::string path = write_tmp(sim::cost_profile_json(toy_profile()).dump());
  sim::ClockParams p;
  p.profile = path;
  sim::SimClock c(p, {}, 2);
  c.bind_model("toy", 1000.0);  // 1000 flops per sample
  CHECK(c.compute_s(0, 32000.0, 0) == doctest::Approx(1e-3 + 32 * 1e-4));
  // Concurrent updaters overlap the fixed part (shared_compute_s): cycle max(L + busy, U busy).
  CHECK(c.shared_compute_s(0, 32000.0, 4, 0) == doctest::Approx(std::max(1e-3 + 3.2e-3, 4 * 3.2e-3)));
  // Batch-size segments: a second segment from batch 64 on.
  json q = sim::cost_profile_json(toy_profile());
  q["compute"]["toy"] = json::parse(R"([{"max_batch": 63, "fixed_s": 1e-3, "per_sample_s": 1e-4},
                                            {"max_batch": 1e18, "fixed_s": 2e-3, "per_sample_s": 2e-4}])");
  const std::string path2 = write_tmp(q.dump());
  p.profile = path2;
  sim::SimClock c2(p, {}, 2);
  c2.bind_model("toy", 1000.0);
  CHECK(c2.compute_s(0, 32000.0, 0) == doctest::Approx(1e-3 + 32 * 1e-4));
  CHECK(c2.compute_s(0, 64000.0, 0) == doctest::Approx(2e-3 + 64 * 2e-4));
  std::remove(path2.c_str());
  c.bind_model("unknown", 1000.0);
  CHECK_THROWS_AS(c.compute_s(0, 1000.0, 0), wb::UserError);
  std::remove(path.c_str());
}

TEST_CASE("a profile's shared_model entry prices element-wise shared-model access") {
  sim::CostProfile p = toy_profile();
  // Unpriced by default (and by the formula model): 0, so a spec without the entry keeps
  // its simulated times bit for bit.
  CHECK(sim::ProfileCostModel(p, "toy").shared_model_s(1000, 500) == 0.0);
  CHECK(sim::FormulaCostModel(1e9, 0, 1e-6, 1e9, 1e-6, 1e9).shared_model_s(1000, 500) == 0.0);
  p.shared_model = {1e-9, 4e-9};
  CHECK(sim::ProfileCostModel(p, "toy").shared_model_s(1000, 500) == doctest::Approx(1000 * 1e-9 + 500 * 4e-9));
  // It survives the JSON round trip, and bad values are refused with their path.
  const std::string path = write_tmp(sim::cost_profile_json(p).dump());
  const sim::CostProfile q = sim::load_cost_profile(path);
  CHECK(q.shared_model.read_s_per_float == 1e-9);
  CHECK(q.shared_model.atomic_add_s_per_float == 4e-9);
  std::remove(path.c_str());
  json bad = sim::cost_profile_json(p);
  bad["shared_model"]["atomic_add_s_per_float"] = -1;
  const std::string bpath = write_tmp(bad.dump());
  std::string m;
  try {
    sim::load_cost_profile(bpath);
  } catch (const wb::UserError& e) {
    m = e.what();
  }
  std::remove(bpath.c_str());
  CHECK(m.find("$.shared_model.atomic_add_s_per_float") != std::string::npos);
  // The clock adds it to an updater's busy part: cycle max(L + busy + e, U (busy + e)).
  const std::string cpath = write_tmp(sim::cost_profile_json(toy_profile()).dump());
  sim::ClockParams cp;
  cp.profile = cpath;
  sim::SimClock c(cp, {}, 2);
  c.bind_model("toy", 1000.0);
  CHECK(c.shared_compute_s(0, 32000.0, 4, 0, 1e-3) == doctest::Approx(std::max(1e-3 + 4.2e-3, 4 * 4.2e-3)));
  CHECK(c.shared_compute_s(0, 32000.0, 1, 0, 1e-3) == doctest::Approx(1e-3 + 4.2e-3));
  std::remove(cpath.c_str());
  // A CPU profile's fixed cost is the core's work: U updaters cannot overlap it, so the
  // cycle is U x (fixed + per-sample) (a single batch costs the same either way).
  sim::CostProfile cpu = toy_profile();
  cpu.compute_fixed_overlaps = false;
  const std::string ppath = write_tmp(sim::cost_profile_json(cpu).dump());
  CHECK(sim::load_cost_profile(ppath).compute_fixed_overlaps == false);
  cp.profile = ppath;
  sim::SimClock cc(cp, {}, 2);
  cc.bind_model("toy", 1000.0);
  CHECK(cc.compute_s(0, 32000.0, 0) == doctest::Approx(1e-3 + 3.2e-3));
  CHECK(cc.shared_compute_s(0, 32000.0, 4, 0) == doctest::Approx(4 * (1e-3 + 3.2e-3)));
  std::remove(ppath.c_str());
  // The runner's rounds and steps on a shared core: only priced when the profile says so.
  sim::CostProfile sh = toy_profile();
  sh.shared_model = {1e-9, 4e-9, false};
  CHECK(sim::ProfileCostModel(sh, "t").runner_device_s(1000, 2, 3, 1e-4) == 0.0);
  sh.shared_model.rounds_share_core = true;
  CHECK(sim::ProfileCostModel(sh, "t").runner_device_s(1000, 2, 3, 1e-4) ==
        doctest::Approx(2 * (2000 * 1e-9 + 1000 * 4e-9 + 1e-4) + 3 * 1000 * 1e-9));
}

TEST_CASE("a profile's elementwise entry prices element-wise passes; none without it") {
  sim::CostProfile p = toy_profile();
  CHECK(sim::ProfileCostModel(p, "toy").elementwise_s(1000, 3) == 0.0);
  CHECK(sim::FormulaCostModel(1e9, 0, 1e-6, 1e9, 1e-6, 1e9).elementwise_s(1000, 3) == 0.0);
  p.elementwise_s_per_float = 2e-9;
  CHECK(sim::ProfileCostModel(p, "toy").elementwise_s(1000, 3) == doctest::Approx(3 * 1000 * 2e-9));
  const std::string path = write_tmp(sim::cost_profile_json(p).dump());
  CHECK(sim::load_cost_profile(path).elementwise_s_per_float == 2e-9);
  std::remove(path.c_str());
  json bad = sim::cost_profile_json(p);
  bad["elementwise"]["s_per_float"] = -1;
  const std::string bpath = write_tmp(bad.dump());
  std::string m;
  try {
    sim::load_cost_profile(bpath);
  } catch (const wb::UserError& e) {
    m = e.what();
  }
  std::remove(bpath.c_str());
  CHECK(m.find("$.elementwise.s_per_float") != std::string::npos);
}

TEST_CASE("a profile's compute_models: the config each compute entry was measured on, round trip and errors") {
  sim::CostProfile p = toy_profile();
  p.compute["cubic"] = {1e-3, 1e-5};
  // Without the entry (every profile written before): nothing written, nothing read.
  CHECK_FALSE(sim::cost_profile_json(p).contains("compute_models"));
  p.compute_models["cubic"] = json::parse(R"({"name": "cubic", "x_max": 2.0, "train_size": 64})");
  p.compute_models["toy"] = "toy";
  const json j = sim::cost_profile_json(p);
  REQUIRE(j.contains("compute_models"));
  const std::string path = write_tmp(j.dump());
  const sim::CostProfile q = sim::load_cost_profile(path);
  std::remove(path.c_str());
  CHECK(q.compute_models.size() == 2);
  CHECK(q.compute_models.at("cubic") == p.compute_models.at("cubic"));
  CHECK(q.compute_models.at("toy") == "toy");
  CHECK(sim::cost_profile_json(q) == j);  // written back as read
  auto msg = [&](const json& cm) {
    json b = j;
    b["compute_models"] = cm;
    const std::string bp = write_tmp(b.dump());
    std::string m;
    try {
      sim::load_cost_profile(bp);
    } catch (const wb::UserError& e) {
      m = e.what();
    }
    std::remove(bp.c_str());
    return m;
  };
  CHECK(msg(json::array()).find(": $.compute_models: expected an object") != std::string::npos);
  CHECK(msg(json::parse(R"({"cubic": 3})")).find("$.compute_models.cubic: expected a model config") !=
        std::string::npos);
  CHECK(msg(json::parse(R"({"cubic": {"x_max": 2}})")).find("$.compute_models.cubic: expected a model config") !=
        std::string::npos);
  CHECK(msg(json::parse(R"({"cubic": {"name": "quadratic"}})"))
            .find("$.compute_models.cubic: names model \"quadratic\", not \"cubic\"") != std::string::npos);
  CHECK(msg(json::parse(R"({"quadratic": "quadratic"})"))
            .find("$.compute_models.quadratic: no compute entry for model \"quadratic\"") != std::string::npos);
}

TEST_CASE("a run's model against the config its profile entry was measured on") {
  sim::CostProfile p = toy_profile();
  p.compute["cubic"] = {1e-3, 1e-5};
  p.compute_models["cubic"] = json::parse(R"({"x_max": 2, "name": "cubic"})");
  p.compute["quadratic"] = {1e-3, 1e-5};
  p.compute["lenet5"] = {1e-3, 1e-5};  // no recorded config
  p.compute_models["quadratic"] = "quadratic";
  const std::string path = write_tmp(sim::cost_profile_json(p).dump());
  auto resolved = [](const char* text) {
    return models::model_registry().resolve(json::parse(text), core::Where{"t", "$.model"});
  };
  auto msg = [&](const char* model) {
    std::string m;
    try {
      app::check_profile_model(path, resolved(model));
    } catch (const wb::UserError& e) {
      m = e.what();
    }
    return m;
  };
  // The same config whatever the order of its keys and whichever defaults it spells out; a
  // name recorded alone is the model at its defaults.
  CHECK(msg(R"({"name": "cubic", "x_max": 2})").empty());
  CHECK(msg(R"({"x_max": 2.0, "data_seed": 0, "name": "cubic"})").empty());
  CHECK(msg(R"("quadratic")").empty());
  CHECK(msg(R"({"name": "quadratic", "x_max": 1})").empty());
  // A model the profile recorded no config for: priced by its name, as before.
  CHECK(msg(R"({"name": "lenet5", "train_limit": 5})").empty());
  const std::string m = msg(R"({"name": "cubic", "x_max": 3, "train_size": 100})");
  CHECK(m.find(path + ": $.compute_models.cubic: measured cubic as {\"name\":\"cubic\",\"x_max\":2.0}") !=
        std::string::npos);
  CHECK(m.find("this run's model is {\"name\":\"cubic\",\"x_max\":3.0,\"train_size\":100}") != std::string::npos);
  CHECK(m.find("(differs in x_max)") != std::string::npos);
  // Keys that choose the samples (how many, which file, which seed), not a step's cost, are not
  // compared: a profile measured on one data set prices the same model on another.
  CHECK(msg(R"({"name": "cubic", "x_max": 2, "train_size": 100, "data_seed": 7})").empty());
  CHECK(m.find("run workbench calibrate --model '{\"name\":\"cubic\",\"x_max\":3.0,\"train_size\":100}'") !=
        std::string::npos);
  CHECK(m.find('\n') == std::string::npos);
  CHECK(msg(R"({"name": "quadratic", "x_max": 4})").find("differs in x_max") != std::string::npos);
  // Without defaults: what the messages show, which resolves back to the same config.
  const json shown = app::model_without_defaults(resolved(R"({"name": "cubic", "x_max": 2, "data_seed": 0})"));
  CHECK(shown == json::parse(R"({"name": "cubic", "x_max": 2.0})"));
  CHECK(app::same_model(resolved(shown.dump().c_str()), resolved(R"({"name": "cubic", "x_max": 2})")));
  std::remove(path.c_str());
}

TEST_CASE("bad profiles: one error naming the file and JSON path") {
  auto msg = [](const std::string& text) {
    const std::string path = write_tmp(text);
    std::string m;
    try {
      sim::load_cost_profile(path);
    } catch (const wb::UserError& e) {
      m = e.what();
    }
    std::remove(path.c_str());
    return m;
  };
  CHECK(msg("{not json").find("not valid JSON") != std::string::npos);
  CHECK(msg("{}").find("$: missing key \"links\"") != std::string::npos);
  CHECK(msg(R"({"links": {"intra": {"p2p": [{"max_bytes": 1, "alpha_s": "x", "beta_s_per_byte": 0}]}}, "compute": {}})")
            .find("$.links.intra.p2p[0].alpha_s: expected a number") != std::string::npos);
  CHECK(msg(R"({"links": {"intra": {"p2p": [{"max_bytes": 1, "alpha_s": 0, "beta_s_per_byte": 0}]}}, "compute": {}})")
            .find("missing op \"allreduce\"") != std::string::npos);
  CHECK(msg(R"({"links": {"moon": {}}, "compute": {}})").find("$.links.moon") != std::string::npos);
  std::string missing;
  try {
    sim::load_cost_profile("/nonexistent/p.json");
  } catch (const wb::UserError& e) {
    missing = e.what();
  }
  CHECK(missing.find("/nonexistent/p.json: cannot open") != std::string::npos);
}

TEST_CASE("sim_s breakdown: compute + communication + straggler wait, and the events sum to it") {
  struct Sink : sim::EventSink {
    std::vector<sim::SimEvent> ev;
    void event(const sim::SimEvent& e) override { ev.push_back(e); }
  } sink;
  sim::ClockParams p;
  p.intra_latency_s = 0.25;  // an allreduce of 0 bytes over 2 workers: 2 x 1 level x 0.25 s
  sim::SimClock c(p);
  c.set_sink(&sink);
  const std::vector<double> times = {1.0, 3.0};
  c.advance_compute(times);  // slowest 3: compute mean 2, wait 1
  sim::CommCall k;
  k.workers = 2;
  c.charge(k);
  c.advance(0.25);
  CHECK(c.now() == doctest::Approx(3.75));
  CHECK(c.comm_total_s() == doctest::Approx(0.5));
  CHECK(c.wait_total_s() == doctest::Approx(1.0));
  CHECK(c.compute_total_s() == doctest::Approx(2.25));
  double run_tracks = 0, worker0 = 0, worker1 = 0;
  for (const auto& e : sink.ev) {
    if (e.track < 0) run_tracks += e.dur_s;
    if (e.track == 0) worker0 += e.dur_s;
    if (e.track == 1) worker1 += e.dur_s;
  }
  CHECK(run_tracks == doctest::Approx(c.now()));
  CHECK(worker0 == doctest::Approx(3.0));  // 1 compute + 2 waiting for worker 1
  CHECK(worker1 == doctest::Approx(3.0));
}

// The validation's ordering statistics (app/calibrate/calibrate.h).
TEST_CASE("validation ordering: Kendall tau-b, and tau over the pairs the measurement separates") {
  // tau-b: same order 1, reversed -1, one swapped pair of 4 (6 pairs): (5 - 1) / 6.
  CHECK(app::kendall_tau({1, 2, 3, 4}, {10, 20, 30, 40}) == doctest::Approx(1.0));
  CHECK(app::kendall_tau({1, 2, 3, 4}, {40, 30, 20, 10}) == doctest::Approx(-1.0));
  CHECK(app::kendall_tau({1, 2, 3, 4}, {10, 30, 20, 40}) == doctest::Approx(4.0 / 6.0));
  // Separated pairs: configs 0 and 1 overlap (their order is noise), 2 is apart from both.
  const std::vector<double> lo = {1.0, 1.1, 2.0}, hi = {1.2, 1.3, 2.2};
  app::SeparatedTau s = app::separated_tau(lo, hi, {5.0, 4.0, 9.0});  // 0 > 1 in the model: not asked
  CHECK(s.all_pairs == 3);
  CHECK(s.pairs == 2);
  CHECK(s.concordant == 2);
  CHECK(s.tau == doctest::Approx(1.0));
  CHECK(s.wrong.empty());
  s = app::separated_tau(lo, hi, {5.0, 4.0, 4.5});  // 2 priced between 0 and 1: one pair opposite
  CHECK(s.concordant == 1);
  CHECK(s.discordant == 1);
  CHECK(s.tau == doctest::Approx(0.0));
  REQUIRE(s.wrong.size() == 1);  // the pair named: 0 measured faster than 2, priced slower
  CHECK(s.wrong[0] == std::pair<size_t, size_t>{0, 2});
  s = app::separated_tau(lo, hi, {5.0, 5.0, 5.0});  // a model that cannot tell them apart
  CHECK(s.model_ties == 2);
  CHECK(s.tau == doctest::Approx(0.0));
  CHECK(s.wrong == std::vector<std::pair<size_t, size_t>>{{0, 2}, {1, 2}});
  // Nothing separated: nothing contradicts the model.
  CHECK(app::separated_tau({1, 1}, {2, 2}, {1, 2}).tau == doctest::Approx(1.0));
}
