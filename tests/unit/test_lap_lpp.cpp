// lap_sgd / lpp_sgd (the engine algorithms/async_engine*.cpp; lap_sgd.cpp, lpp_sgd.cpp):
//  - simulated mode: the same seed gives bit-identical curves and models (heterogeneous
//    speeds and jitter included), and staleness follows from the cost model;
//  - simulated mode with U = 1 and free communication IS post-local SGD, bit for bit;
//  - real mode ("lap real: ..." -- the cases `make tsan-lap` runs under ThreadSanitizer): no
//    lost updates beyond Hogwild semantics on a model whose gradient is a known constant;
//  - LPP blocks: the partition covers every tensor exactly once, no empty block, balanced;
//    the partial-step gradient equals the full gradient restricted to the block.
#include <doctest/doctest.h>
#include <mpi.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "algorithms/async_common.h"
#include "app/exec/runner.h"
#include "app/exec/training_loop.h"
#include "app/plan/sweep_plan.h"
#include "app/experiment/spec.h"
#include "core/rng.h"
#include "models/lenet.h"
#include "tests/unit/run_spec.h"

using namespace wb;
using test::run_spec;
using test::find;

namespace {

// ---- a model whose gradient is 1 everywhere (loss 1): every SGD update is exactly -lr
struct ConstGradParams {
  int64_t samples = 4096;
  static void describe(core::ParamSet<ConstGradParams>& p) {
    p.field("samples", &ConstGradParams::samples, "training samples").min(1);
  }
};
class ConstData final : public models::Dataset {
 public:
  explicit ConstData(size_t n) : n_(n) {}
  size_t size() const override { return n_; }
  void reserve(models::Batch&, int) const override {}
  void gather(std::span<const uint32_t> idx, models::Batch& b) const override {
    b.n = static_cast<int>(idx.size());
  }

 private:
  size_t n_;
};
class ConstWs final : public models::Workspace {};
class ConstGradModel final : public models::Model {
 public:
  ConstGradModel() : t_(models::make_layout({{"a", {300}}, {"b", {500}}, {"c", {200}}})) {}
  std::string name() const override { return "test_const_grad"; }
  const std::vector<models::TensorInfo>& tensors() const override { return t_; }
  void init_params(std::span<float> w, uint64_t) const override {
    for (auto& x : w) x = 0.f;
  }
  std::unique_ptr<models::Workspace> make_workspace(int) const override {
    return std::make_unique<ConstWs>();
  }
  double loss_grad(std::span<const float>, const models::Batch&, std::span<float> g,
                   models::Workspace&, uint64_t) const override {
    for (auto& x : g) x = 1.f;
    return 1.0;
  }
  models::EvalResult evaluate(std::span<const float>, const models::Batch& b,
                              models::Workspace&) const override {
    models::EvalResult r;
    r.loss_sum = b.n;
    r.count = b.n;
    return r;
  }
  double flops_per_sample() const override { return 100; }

 private:
  std::vector<models::TensorInfo> t_;
};
class ConstGradMaker final : public models::TaskMaker {
 public:
  ConstGradMaker(const ConstGradParams& p, uint64_t) : p_(p) {}
  models::Task make() override {
    models::Task t;
    t.model = std::make_unique<ConstGradModel>();
    t.train = std::make_shared<ConstData>(static_cast<size_t>(p_.samples));
    return t;
  }

 private:
  ConstGradParams p_;
};

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}

const char* kFreeComm =
    R"("clock": {"latency_s": 0, "intra_latency_s": 0, "bandwidth_bytes_per_s": 1e30,
                 "intra_bandwidth_bytes_per_s": 1e30})";
const char* kLenetSmall =
    R"("model": {"name": "lenet5", "train_limit": 512, "test_limit": 64})";

}  // namespace

WB_REGISTER_MODEL("test_const_grad", ConstGradMaker, ConstGradParams,
                  "unit tests only: gradient 1 everywhere");

TEST_CASE("simulated LAP/LPP: the same seed gives bit-identical curves") {
  for (const char* algo : {R"({"name": "lap_sgd", "updaters": 3, "H": 3})",
                           R"({"name": "lpp_sgd", "updaters": 3, "H": 3, "full_fraction": 0.2})"}) {
    for (const char* model : {R"("model": "cubic")", kLenetSmall}) {
      const std::string spec =
          std::string(model) + R"(, "batch_size": 8, "lr": 0.01, "steps": 16, "workers": 3,
          "seed": 11, "eval_every": 4, "optimizer": {"name": "sgd", "momentum": 0.9},
          "clock": {"batch_latency_s": 1e-4},
          "heterogeneity": {"speeds": [1, 0.6], "jitter": {"dist": "lognormal", "sigma": 0.3}},
          "algorithm": )" + algo;
      auto a = run_spec(spec);
      auto b = run_spec(spec);
      INFO(std::string(algo) << " " << model);
      CHECK(a.status == "completed");
      CHECK(same_bits(a.curves.train_loss, b.curves.train_loss));
      CHECK(same_bits(a.curves.sim_s, b.curves.sim_s));
      CHECK(same_bits(a.curves.test_loss, b.curves.test_loss));
      CHECK(same_bits(find(a, "final_params")->data, find(b, "final_params")->data));
      // U = 3 updaters share a worker: their snapshots go stale.
      const auto* st = find(a, "workers/staleness_mean");
      REQUIRE(st);
      for (double x : st->data) CHECK(x > 0);
      const auto* up = find(a, "workers/updates");
      REQUIRE(up);
      for (double x : up->data) CHECK(x == 16);  // every worker does T minibatches
      CHECK(a.summary["samples"].get<int64_t>() == 16 * 3 * 8);
      // A different seed changes the run.
      auto c = run_spec(spec.substr(0, spec.find("\"seed\": 11")) + "\"seed\": 12" +
                        spec.substr(spec.find("\"seed\": 11") + 10));
      CHECK_FALSE(same_bits(a.curves.train_loss, c.curves.train_loss));
    }
  }
}

TEST_CASE("simulated LAP with U = 1 and free averaging equals post-local SGD") {
  for (const char* model : {R"("model": "cubic")", kLenetSmall}) {
    for (const char* opt : {R"("sgd")", R"({"name": "sgd", "momentum": 0.9, "weight_decay": 0.0005})"}) {
      const std::string common = std::string(model) +
                                 R"(, "batch_size": 8, "lr": 0.01, "steps": 20, "workers": 3,
          "seed": 4, "eval_every": 5, "schedule": {"name": "cosine", "warmup_epochs": 0.01},
          "optimizer": )" + opt + ", " + kFreeComm;
      auto lap = run_spec(common + R"(, "algorithm": {"name": "lap_sgd", "updaters": 1, "H": 3, "switch_at": 0.3})");
      auto pl = run_spec(common + R"(, "algorithm": {"name": "post_local_sgd", "H": 3, "switch_at": 0.3})");
      INFO(std::string(model) << " " << opt);
      CHECK(same_bits(lap.curves.train_loss, pl.curves.train_loss));
      CHECK(same_bits(lap.curves.test_loss, pl.curves.test_loss));
      CHECK(same_bits(find(lap, "final_params")->data, find(pl, "final_params")->data));
      // The same number of rounds: post-local's list of rounds vs LAP's count.
      CHECK(find(lap, "workers/averaging_rounds")->data[0] ==
            static_cast<double>(find(pl, "workers/averaged_after_step")->rows));
      for (double x : find(lap, "workers/staleness_mean")->data) CHECK(x == 0);
    }
  }
}

TEST_CASE("simulated LAP with identical updaters: a clock that keeps the cycle's regime keeps the numerics") {
  // The R7/R8 plateau specs rely on this (scripts/lpp_plateau_specs.py): their LAP-SGD runs were
  // made on a hand-set clock and their times come from runs on a profile. Every updater of every
  // worker costs the same per batch, so the order of the events (and with it every bit) depends
  // only on which term of the cycle max(L + busy, U busy) is the larger and on the averaging
  // rounds ending before the next write: a clock that changes neither moves only sim_s; one that
  // changes either reorders the events. (LPP-SGD's blocks cost different amounts: its order, and
  // its numerics, follow the clock.) kLenetSmall, batch 8: busy = 20.8 MFLOP / rate.
  const std::string common = std::string(kLenetSmall) +
                             R"(, "batch_size": 8, "lr": 0.02, "steps": 40, "workers": 2,
      "seed": 5, "eval_every": 10, "optimizer": {"name": "sgd", "momentum": 0.9},
      "algorithm": {"name": "lap_sgd", "updaters": 4, "H": 4, "switch_at": 0.5}, )";
  struct Case {
    const char* ref;
    const char* other;
    bool same;
  };
  // latency-bound (L + busy = 310 us > 4 busy = 42 us), rounds ~50 us
  const char* lat = R"("clock": {"flops_per_s": 2e12, "batch_latency_s": 3e-4, "intra_latency_s": 2e-5})";
  // saturated (4 busy = 42 us > L + busy = 15 us), rounds ~3 us
  const char* sat = R"("clock": {"flops_per_s": 2e12, "batch_latency_s": 5e-6, "intra_latency_s": 1e-6,
      "intra_bandwidth_bytes_per_s": 1e11})";
  const Case cases[] = {
      {lat, R"("clock": {"flops_per_s": 2e12, "batch_latency_s": 6e-4, "intra_latency_s": 2e-5})", true},
      {lat, R"("clock": {"flops_per_s": 1e12, "batch_latency_s": 3e-4, "intra_latency_s": 2e-5})", true},
      {sat, R"("clock": {"flops_per_s": 1.5e12, "batch_latency_s": 2e-6, "intra_latency_s": 1e-6,
          "intra_bandwidth_bytes_per_s": 1e11})", true},
      {lat, R"("clock": {"flops_per_s": 2e12, "batch_latency_s": 0, "intra_latency_s": 2e-5})", false},
      {lat, R"("clock": {"flops_per_s": 2e12, "batch_latency_s": 3e-4, "intra_latency_s": 1e-3})", false},
  };
  for (const Case& c : cases) {
    auto a = run_spec(common + c.ref);
    auto b = run_spec(common + c.other);
    INFO(std::string(c.ref) << " vs " << c.other);
    CHECK(b.status == "completed");
    CHECK(a.sim_s != b.sim_s);  // the clock did change
    CHECK(same_bits(a.curves.train_loss, b.curves.train_loss) == c.same);
    CHECK(same_bits(find(a, "final_params")->data, find(b, "final_params")->data) == c.same);
  }
}

TEST_CASE("simulated LAP: more updaters raise throughput until the device saturates") {
  // shared_compute_s: cycle = max(L + F/rate, U F/rate). With L = 3 F/rate, U = 2 runs 2x
  // the throughput of U = 1, U = 4 saturates at 4x, U = 8 is flat.
  auto sim_time = [](int U) {
    // cubic: 18 flops/sample x 10 = 180 flops per batch at 1e3 flops/s = 0.18 s.
    auto r = run_spec(R"("model": "cubic", "batch_size": 10, "lr": 0.001, "steps": 64,
        "workers": 2, "clock": {"flops_per_s": 1000, "batch_latency_s": 0.54},
        "algorithm": {"name": "lap_sgd", "H": 4, "updaters": )" + std::to_string(U) + "}");
    return r.sim_s;
  };
  const double t1 = sim_time(1), t2 = sim_time(2), t4 = sim_time(4), t8 = sim_time(8);
  CHECK(t1 / t2 == doctest::Approx(2.0).epsilon(0.05));
  CHECK(t1 / t4 == doctest::Approx(4.0).epsilon(0.08));
  CHECK(t4 / t8 == doctest::Approx(1.0).epsilon(0.08));
}

TEST_CASE("simulated LAP prices the shared model's snapshot read and atomic write from the profile") {
  // test_const_grad has n = 1000 parameters; its batch costs the profile's fixed 1 ms. With
  // shared_model = {read 1e-7, atomic add 2e-7} s per float, every update of one updater
  // costs 1e-3 + 1000 x 3e-7 = 1.3 ms (W = 1: no averaging); without it, 1 ms.
  auto run = [](bool shared, bool share_core = false) {
    json prof = json::parse(R"({"links": {"intra": {
        "p2p": [{"max_bytes": 1e18, "alpha_s": 0, "beta_s_per_byte": 0}],
        "allreduce": [{"max_bytes": 1e18, "alpha_s": 0, "beta_s_per_byte": 0}]}},
        "compute": {"test_const_grad": {"fixed_s": 1e-3, "per_sample_s": 0}}})");
    if (shared)
      prof["shared_model"] = {{"read_s_per_float", 1e-7}, {"atomic_add_s_per_float", 2e-7},
                              {"rounds_share_core", share_core}};
    // a new name for each profile: a process reads a profile path once (sim/cost_model.h
    // cached_cost_profile), as a sweep must price every run with one profile
    static int calls = 0;
    const std::string path = "/tmp/wb_test_lap_profile_" + std::to_string(::getpid()) + "_" +
                             std::to_string(++calls) + ".json";
    std::ofstream(path) << prof.dump();
    const auto r = run_spec(R"("model": "test_const_grad", "batch_size": 4, "lr": 0.01, "steps": 40,
        "workers": 1, "clock": {"profile": ")" + path + R"("},
        "algorithm": {"name": "lap_sgd", "updaters": 1, "H": 4})");
    std::remove(path.c_str());
    return r.sim_s;
  };
  CHECK(run(false) == doctest::Approx(40 * 1e-3).epsilon(1e-9));
  CHECK(run(true) == doctest::Approx(40 * (1e-3 + 1000 * 3e-7)).epsilon(1e-9));
  // On a machine whose runner shares the updaters' core, each runner step's publish (a read
  // of the model, 1000 x 1e-7 s) delays the next update too (W = 1: no rounds).
  CHECK(run(true, true) == doctest::Approx(40 * (1e-3 + 1000 * 3e-7 + 1000 * 1e-7)).epsilon(1e-9));
}

TEST_CASE("lap real: no lost updates with a constant gradient (Hogwild, W = 1)") {
  // Every update is exactly -lr on every element (lr = 2^-6, values stay on the 2^-6 grid):
  // lock-free fetch_add loses nothing, so after T updates x = -T lr exactly.
  for (const char* algo : {"lap_sgd", "lpp_sgd"}) {
    const std::string U = std::string(algo) == "lpp_sgd" ? "1" : "4";  // LPP: full steps only
    auto r = run_spec(R"("model": "test_const_grad", "batch_size": 2, "lr": 0.015625,
        "steps": 400, "workers": 1, "algorithm": {"name": ")" + std::string(algo) +
                      R"(", "mode": "real", "H": 4, "updaters": )" + U +
                      (std::string(algo) == "lpp_sgd" ? R"(, "full_fraction": 1})" : "}"));
    REQUIRE(r.status == "completed");
    const auto* fp = find(r, "final_params");
    REQUIRE(fp);
    double sum = 0;
    for (double x : fp->data) {
      CHECK(x == -400 * 0.015625);
      sum += x;
    }
    CHECK(sum == -1000 * 400 * 0.015625);
    CHECK(find(r, "workers/updates")->data[0] == 400);
  }
}

TEST_CASE("lap real: the parameter sum survives concurrent in-place averaging (W = 2)") {
  // Rounds add avg - snapshot to each worker while its updaters keep writing; over the W
  // workers those corrections sum to zero, so the sum of all applied updates is kept: the
  // final common model is -T lr per element (to float rounding of the averages).
  for (int U : {1, 3}) {
    auto r = run_spec(R"("model": "test_const_grad", "batch_size": 2, "lr": 0.015625,
        "steps": 300, "workers": 2, "algorithm": {"name": "lap_sgd", "mode": "real", "H": 4,
        "switch_at": 0.3, "updaters": )" + std::to_string(U) + "}");
    REQUIRE(r.status == "completed");
    const auto* fp = find(r, "final_params");
    REQUIRE(fp);
    for (double x : fp->data) CHECK(x == doctest::Approx(-300 * 0.015625).epsilon(1e-5));
    for (double x : find(r, "workers/updates")->data) CHECK(x == 300);
  }
}

TEST_CASE("lap real: LeNet-5 trains with 2 workers x 2 updaters, LPP too") {
  for (const char* algo : {"lap_sgd", "lpp_sgd"}) {
    auto r = run_spec(std::string(kLenetSmall) + R"(, "batch_size": 16, "lr": 0.02, "steps": 24,
        "workers": 2, "eval_every": 8, "optimizer": {"name": "sgd", "momentum": 0.9},
        "algorithm": {"name": ")" + algo + R"(", "mode": "real", "updaters": 2, "H": 2})");
    INFO(algo);
    CHECK(r.status == "completed");
    for (double l : r.curves.train_loss) CHECK(std::isfinite(l));
    CHECK(std::isfinite(r.summary["final_test_accuracy"].get<double>()));
  }
}

TEST_CASE("LPP blocks cover every tensor exactly once, none empty, balanced") {
  models::ConvNetModel lenet(models::lenet5_spec());
  ConstGradModel three;
  for (const auto* m : {static_cast<const models::Model*>(&lenet), static_cast<const models::Model*>(&three)}) {
    const auto& t = m->tensors();
    for (int k = 1; k <= static_cast<int>(t.size()) + 3; ++k) {
      auto b = algo::partition_blocks(t, k);
      INFO(m->name() << " k=" << k);
      REQUIRE(b.size() == std::min<size_t>(static_cast<size_t>(k), t.size()));
      std::vector<int> cover(t.size(), 0);
      size_t next = 0, params = 0, biggest = 0;
      for (const auto& bl : b) {
        CHECK(bl.first_tensor == next);
        CHECK(bl.end_tensor > bl.first_tensor);  // no empty block
        for (size_t i = bl.first_tensor; i < bl.end_tensor; ++i) ++cover[i];
        CHECK(bl.offset == t[bl.first_tensor].offset);
        params += bl.size;
        biggest = std::max(biggest, bl.size);
        next = bl.end_tensor;
      }
      CHECK(next == t.size());
      for (int c : cover) CHECK(c == 1);
      CHECK(params == m->num_params());
      // Balanced: no contiguous split into the same number of blocks has a smaller largest
      // block (brute force over the cut positions for up to 3 blocks).
      if (b.size() == 2)
        for (size_t c = 1; c < t.size(); ++c)
          CHECK(biggest <= std::max(t[c].offset, m->num_params() - t[c].offset));
    }
  }
  auto b2 = algo::partition_blocks(lenet.tensors(), 2);
  CHECK(b2[0].size == 5280);
  CHECK(b2[1].size == 16560);
  CHECK(lenet.tensors()[b2[1].first_tensor].name == "fc1.weight");
}

TEST_CASE("partial backprop: the gradient equals the full gradient restricted to the block") {
  models::ConvNetModel m(models::lenet5_spec());
  const int n = 12;
  models::Batch b;
  b.n = n;
  core::Rng r(7);
  b.x.resize(static_cast<size_t>(n) * 784);
  for (auto& v : b.x) v = static_cast<float>(r.normal());
  b.label.resize(n);
  for (auto& y : b.label) y = static_cast<int32_t>(r.below(10));
  std::vector<float> w(m.num_params()), full(m.num_params()), part(m.num_params(), 123.f);
  m.init_params(w, 3);
  auto ws = m.make_workspace(n);
  const double lf = m.loss_grad(w, b, full, *ws, 99);
  const auto& t = m.tensors();
  for (size_t first = 0; first <= t.size(); ++first) {
    std::fill(part.begin(), part.end(), 123.f);
    const double lp = m.loss_grad_from(w, b, part, *ws, 99, first);
    INFO("first tensor " << first);
    CHECK(lp == doctest::Approx(lf).epsilon(1e-6));
    for (size_t k = 0; k < t.size(); ++k)
      for (size_t i = t[k].offset; i < t[k].offset + t[k].size; ++i) {
        if (k < first)
          REQUIRE(part[i] == 0.f);
        else
          REQUIRE(std::fabs(part[i] - full[i]) <= 1e-6f + 1e-5f * std::fabs(full[i]));
      }
    // The cost model charges less for a shorter backprop, never more than a full pass.
    CHECK(m.flops_per_sample_from(first) <= m.flops_per_sample() * (1 + 1e-12));
    if (first > 0) CHECK(m.flops_per_sample_from(first) <= m.flops_per_sample_from(first - 1));
  }
  CHECK(m.flops_per_sample_from(0) == m.flops_per_sample());
}
