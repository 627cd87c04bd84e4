// diloco (algorithms/diloco.cpp, arXiv:2311.08105 Algorithm 1):
//  - outer SGD with lr 1 gives back the replicas' mean: DiLoCo is then local SGD with period
//    H = sync_every, bit for bit in the training curve, the simulated time and the rounds; the
//    evaluated model too where W is a power of two: local_sgd evaluates the average of its W
//    replicas, which right after a round are equal, and the float mean of W equal values is
//    that value exactly only then (W = 5 rounds in the last bit: parameters rel <= 1e-6, the
//    test loss of a cubic toy rel <= 1e-5);
//  - with one worker and H = 1 the outer gradient is lr_inner x g, so outer Nesterov is
//    PyTorch's SGD(nesterov=True) on g at lr_outer x lr_inner and outer Adam (inner lr 1) is
//    Adam on g: a run of sync_sgd with that optimizer is the reference, up to the rounding of
//    the float replica theta - lr g that the outer gradient is read from (rel <= 1e-3 after 40
//    steps), while heavy-ball momentum instead of Nesterov is off by more than 1e-2;
//  - outer_lr 0 never moves the model;
//  - the outer steps fall every sync_every steps and at the last step.
#include <doctest/doctest.h>
#include <mpi.h>

#include <cmath>
#include <string>
#include <vector>

#include "runtime/runner.h"
#include "runtime/spec.h"
#include "runtime/sweep_plan.h"
#include "runtime/training_loop.h"

using namespace wb;

namespace {

rt::RunResult run_spec(const std::string& base_fields) {
  const std::string spec = R"({"name": "t", "base": {)" + base_fields + "}}";
  auto e = rt::parse_experiment(spec, "t.json");
  REQUIRE(e.runs.size() == 1);
  rt::TaskCache cache;
  return rt::execute_run(e.runs[0], cache.get(e.runs[0].cfg.model.value), MPI_COMM_SELF, nullptr);
}

const rt::Series* find(const rt::RunResult& r, const std::string& path) {
  for (const auto& s : r.series)
    if (s.path == path) return &s;
  return nullptr;
}

double rel(double a, double b) {
  const double d = std::fabs(a - b), s = std::max(std::fabs(a), std::fabs(b));
  return s == 0 ? d : d / s;
}

}  // namespace

TEST_CASE("diloco with outer SGD at lr 1 is local_sgd, bit for bit") {
  for (const char* model : {"quadratic", "cubic"}) {
    for (int W : {1, 2, 3, 5}) {
      for (int H : {1, 4, 7}) {
        for (const char* opt : {R"("sgd")", R"({"name": "sgd", "momentum": 0.9})", R"({"name": "adam"})"}) {
          const std::string common = std::string(R"("model": ")") + model +
                                     R"(", "batch_size": 3, "lr": 0.02, "steps": 30, "seed": 11, "eval_every": )" +
                                     std::to_string(H) + R"(, "workers": )" + std::to_string(W) +
                                     R"(, "optimizer": )" + opt;
          auto loc = run_spec(common + R"(, "algorithm": {"name": "local_sgd", "H": )" + std::to_string(H) + "}");
          auto dil = run_spec(common + R"(, "algorithm": {"name": "diloco", "sync_every": )" + std::to_string(H) +
                              R"(, "outer": "sgd", "outer_lr": 1.0})");
          INFO(model << " W=" << W << " H=" << H << " optimizer " << opt);
          REQUIRE(loc.curves.size() == dil.curves.size());
          for (size_t i = 0; i < loc.curves.size(); ++i) {
            CHECK(loc.curves.train_loss[i] == dil.curves.train_loss[i]);
            CHECK(loc.curves.sim_s[i] == dil.curves.sim_s[i]);
          }
          const bool exact_mean = (W & (W - 1)) == 0;
          for (size_t i = 0; i < loc.curves.size(); ++i) {
            const double x = loc.curves.test_loss[i], y = dil.curves.test_loss[i];
            CHECK(std::isnan(x) == std::isnan(y));
            if (!std::isnan(x)) CHECK((exact_mean ? x == y : rel(x, y) <= 1e-5));
          }
          const auto* a = find(loc, "final_params");
          const auto* b = find(dil, "final_params");
          REQUIRE(a);
          REQUIRE(b);
          REQUIRE(a->data.size() == b->data.size());
          for (size_t j = 0; j < a->data.size(); ++j)
            CHECK((exact_mean ? a->data[j] == b->data[j] : rel(a->data[j], b->data[j]) <= 1e-6));
          const auto* la = find(loc, "workers/averaged_after_step");
          const auto* lb = find(dil, "workers/outer_step_after_step");
          REQUIRE(la);
          REQUIRE(lb);
          CHECK(la->data == lb->data);
        }
      }
    }
  }
}

TEST_CASE("diloco's outer Nesterov and Adam at W = 1, H = 1 are the optimizers on the gradient") {
  for (const char* model : {"quadratic", "cubic"}) {
    const std::string common = std::string(R"("model": ")") + model +
                               R"(", "batch_size": 4, "steps": 40, "seed": 3, "workers": 1)";
    // Nesterov: Delta = eta g, so theta -= a (Delta + mu b) is SGD(nesterov) at lr a x eta
    auto ref = run_spec(common + R"(, "lr": 0.035, "optimizer": {"name": "sgd", "momentum": 0.8, "nesterov": true},
                        "algorithm": {"name": "sync_sgd", "combine": "average"})");
    auto dil = run_spec(common + R"(, "lr": 0.05, "optimizer": "sgd",
                        "algorithm": {"name": "diloco", "sync_every": 1, "outer": "nesterov", "outer_lr": 0.7,
                                      "outer_momentum": 0.8})");
    INFO(model << " nesterov");
    const auto* a = find(ref, "final_params");
    const auto* b = find(dil, "final_params");
    REQUIRE(a);
    REQUIRE(b);
    double worst = 0, heavy = 0;
    for (size_t j = 0; j < a->data.size(); ++j) worst = std::max(worst, rel(a->data[j], b->data[j]));
    for (size_t i = 0; i < ref.curves.size(); ++i)
      worst = std::max(worst, rel(ref.curves.train_loss[i], dil.curves.train_loss[i]));
    CHECK(worst <= 1e-3);
    // the control: heavy-ball momentum is what a Nesterov written wrong would compute
    auto hb = run_spec(common + R"(, "lr": 0.035, "optimizer": {"name": "sgd", "momentum": 0.8},
                       "algorithm": {"name": "sync_sgd", "combine": "average"})");
    const auto* h = find(hb, "final_params");
    REQUIRE(h);
    for (size_t j = 0; j < h->data.size(); ++j) heavy = std::max(heavy, rel(h->data[j], b->data[j]));
    CHECK(heavy > 1e-2);
    MESSAGE(std::string(model) << ": outer Nesterov vs SGD(nesterov) worst rel " << worst << ", vs heavy-ball " << heavy);
    // Adam: with inner lr 1, Delta = g
    auto refa = run_spec(common + R"(, "lr": 0.01, "optimizer": {"name": "adam", "beta1": 0.9, "beta2": 0.999,
                         "eps": 1e-8}, "algorithm": {"name": "sync_sgd", "combine": "average"})");
    auto dila = run_spec(common + R"(, "lr": 1.0, "optimizer": "sgd",
                         "algorithm": {"name": "diloco", "sync_every": 1, "outer": "adam", "outer_lr": 0.01,
                                       "outer_momentum": 0.9})");
    INFO(model << " adam");
    const auto* c = find(refa, "final_params");
    const auto* d = find(dila, "final_params");
    REQUIRE(c);
    REQUIRE(d);
    double worst_a = 0;
    for (size_t j = 0; j < c->data.size(); ++j) worst_a = std::max(worst_a, rel(c->data[j], d->data[j]));
    CHECK(worst_a <= 1e-3);
    MESSAGE(std::string(model) << ": outer Adam vs Adam worst rel " << worst_a);
  }
}

TEST_CASE("diloco with outer_lr 0 keeps the initial model; outer steps every sync_every and at the end") {
  const std::string common = R"("model": "quadratic", "batch_size": 2, "lr": 0.05, "steps": 23, "seed": 2, "workers": 3)";
  auto still = run_spec(common + R"(, "algorithm": {"name": "diloco", "sync_every": 5, "outer_lr": 0.0})");
  auto zero_steps = run_spec(R"("model": "quadratic", "batch_size": 2, "lr": 1e-12, "steps": 1, "seed": 2,
                             "workers": 3, "algorithm": {"name": "diloco", "sync_every": 5, "outer_lr": 0.0})");
  const auto* a = find(still, "final_params");
  const auto* b = find(zero_steps, "final_params");
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a->data == b->data);
  const auto* r = find(still, "workers/outer_step_after_step");
  REQUIRE(r);
  CHECK(r->data == std::vector<double>{5, 10, 15, 20, 23});
}
