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
// streaming_diloco (algorithms/streaming_diloco.cpp, arXiv:2501.18512):
//  - one fragment, no delay, alpha 0 and 32 bits is diloco bit for bit (curves, clock, model);
//  - the rounds fall where the closed form puts them (fragment p at floor((p+1) H / P) + k H,
//    applied tau steps later, the last step ending every round), for several (H, P, tau, T);
//    fragments are runs of whole tensors when the model has enough of them;
//  - a 2-worker quadratic toy whose workers each see one fixed sample, so every gradient is a
//    known function of the parameters: the curve and the final model against a re-computation
//    in double of the rounds (delay, merge, Nesterov outer step), and the simulated time against
//    the overlap written out by hand (each round hides its transfer behind tau steps' compute
//    and charges only what sticks out; 16 bits halves the transfer, 8 bits pays the scale);
//  - alpha 1 with one fragment: the workers never take the outer model, so the training curve
//    is that of local SGD averaging only at the end, and outer SGD at lr 1 ends on its model;
//  - the codecs: bf16 against an independent round-to-nearest-even on the bit patterns, the
//    8-bit and E3M0 grids against a brute-force nearest point.
#include <doctest/doctest.h>
#include <mpi.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/diloco_common.h"
#include "app/exec/runner.h"
#include "app/exec/training_loop.h"
#include "app/plan/sweep_plan.h"
#include "app/experiment/spec.h"
#include "core/rng.h"
#include "models/model.h"
#include "tests/unit/run_spec.h"
#include "train/worker.h"

using namespace wb;
using test::run_spec;
using test::find;

namespace {

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

// ============================================================ streaming_diloco

namespace {

// The rows of workers/fragment_syncs: [fragment, start step, applied step].
std::vector<std::vector<int>> sync_rows(const app::RunResult& r) {
  const auto* s = find(r, "workers/fragment_syncs");
  REQUIRE(s);
  REQUIRE(s->cols == 3);
  std::vector<std::vector<int>> out;
  for (size_t i = 0; i < s->rows; ++i)
    out.push_back({static_cast<int>(s->data[3 * i]), static_cast<int>(s->data[3 * i + 1]),
                   static_cast<int>(s->data[3 * i + 2])});
  return out;
}

// The schedule written from its definition: fragment p's rounds start after the steps
// s = floor((p+1) H / P) + k H < T and land at s + tau (the last step lands them all); at the
// last step T every fragment whose last round started before T and did not land at T
// synchronizes. Rows in the order they are applied.
std::vector<std::vector<int>> expected_rows(int H, int P, int tau, int T) {
  struct R { int p, start, applied; };
  std::vector<R> rounds;
  for (int s = 1; s < T; ++s)
    for (int p = 0; p < P; ++p) {
      const int o = (p + 1) * H / P;
      if (s >= o && (s - o) % H == 0) rounds.push_back({p, s, std::min(s + tau, T)});
    }
  std::vector<std::vector<int>> out;
  for (int s = 1; s <= T; ++s)
    for (const R& r : rounds)
      if (r.applied == s) out.push_back({r.p, r.start, r.applied});
  for (int p = 0; p < P; ++p) {
    int last = 0;
    bool landed_at_T = false;
    for (const R& r : rounds)
      if (r.p == p) {
        last = r.start;
        landed_at_T = r.applied == T;
      }
    if (!landed_at_T && last < T) out.push_back({p, T, T});
  }
  return out;
}

}  // namespace

TEST_CASE("streaming_diloco with one fragment, no delay, alpha 0, 32 bits is diloco, bit for bit") {
  for (const char* model : {"quadratic", "cubic"}) {
    for (int W : {1, 2, 3, 5}) {
      for (int H : {1, 4, 7}) {
        for (const char* outer : {"sgd", "nesterov", "adam"}) {
          const std::string common = std::string(R"("model": ")") + model +
                                     R"(", "batch_size": 3, "lr": 0.02, "steps": 30, "seed": 5, "eval_every": 4,
                                     "optimizer": {"name": "adam"}, "workers": )" + std::to_string(W);
          const std::string keys = std::string(R"("sync_every": )") + std::to_string(H) + R"(, "outer": ")" +
                                   outer + R"(", "outer_lr": 0.6, "outer_momentum": 0.8)";
          auto dil = run_spec(common + R"(, "algorithm": {"name": "diloco", )" + keys + "}");
          auto str = run_spec(common + R"(, "algorithm": {"name": "streaming_diloco", "num_fragments": 1,
                              "fragment_sync_delay": 0, "fragment_update_alpha": 0.0, "quantize_bits": 32, )" +
                              keys + "}");
          INFO(model << " W=" << W << " H=" << H << " outer " << outer);
          REQUIRE(dil.curves.size() == str.curves.size());
          for (size_t i = 0; i < dil.curves.size(); ++i) {
            CHECK(dil.curves.train_loss[i] == str.curves.train_loss[i]);
            CHECK(dil.curves.sim_s[i] == str.curves.sim_s[i]);
            const double x = dil.curves.test_loss[i], y = str.curves.test_loss[i];
            CHECK(std::isnan(x) == std::isnan(y));
            if (!std::isnan(x)) CHECK(x == y);
          }
          const auto* a = find(dil, "final_params");
          const auto* b = find(str, "final_params");
          REQUIRE(a);
          REQUIRE(b);
          CHECK(a->data == b->data);
          const auto* rounds = find(dil, "workers/outer_step_after_step");
          REQUIRE(rounds);
          std::vector<double> applied;
          for (const auto& row : sync_rows(str)) applied.push_back(row[2]);
          CHECK(rounds->data == applied);
        }
      }
    }
  }
}

TEST_CASE("streaming_diloco's rounds fall on the staggered schedule; fragments follow the tensors") {
  // Worked example (H = 4, P = 2, tau = 1, T = 19): fragment 0 at 2, 6, 10, 14, 18; fragment 1
  // at 4, 8, 12, 16; each applied one step later; the round started at 18 lands at 19 and
  // fragment 1 synchronizes at the last step.
  CHECK(expected_rows(4, 2, 1, 19) ==
        std::vector<std::vector<int>>{{0, 2, 3}, {1, 4, 5}, {0, 6, 7}, {1, 8, 9}, {0, 10, 11}, {1, 12, 13},
                                      {0, 14, 15}, {1, 16, 17}, {0, 18, 19}, {1, 19, 19}});
  struct Case { int H, P, tau, T; };
  for (const Case c : {Case{4, 2, 1, 19}, Case{4, 2, 0, 19}, Case{6, 3, 4, 25}, Case{5, 2, 4, 17}, Case{3, 3, 2, 3},
                       Case{7, 3, 6, 30}, Case{1, 1, 0, 5}}) {
    const std::string spec = R"("model": "cubic", "batch_size": 2, "lr": 0.01, "steps": )" + std::to_string(c.T) +
                             R"(, "seed": 4, "workers": 3, "algorithm": {"name": "streaming_diloco", "sync_every": )" +
                             std::to_string(c.H) + R"(, "num_fragments": )" + std::to_string(c.P) +
                             R"(, "fragment_sync_delay": )" + std::to_string(c.tau) +
                             R"(, "fragment_update_alpha": 0.5})";
    auto r = run_spec(spec);
    INFO("H=" << c.H << " P=" << c.P << " tau=" << c.tau << " T=" << c.T);
    REQUIRE(r.status == "completed");
    CHECK(sync_rows(r) == expected_rows(c.H, c.P, c.tau, c.T));
    // cubic: one tensor of 3 floats, so P fragments of floats: [p 3 / P, (p+1) 3 / P)
    const auto* f = find(r, "workers/fragments");
    REQUIRE(f);
    REQUIRE(f->rows == static_cast<size_t>(c.P));
    for (int p = 0; p < c.P; ++p) {
      CHECK(f->data[2 * p] == p * 3 / c.P);
      CHECK(f->data[2 * p + 1] == (p + 1) * 3 / c.P - p * 3 / c.P);
    }
  }
  // The sparse MLP has 4 tensors (w1, b1, w2, b2): 2 fragments are runs of whole tensors that
  // cover the model, the larger one as small as a cut on a tensor boundary can make it.
  auto r = run_spec(R"("model": {"name": "sparse_mlp", "hidden": [16], "synthetic": {"train_size": 200,
                    "test_size": 50, "features": 100, "labels": 10, "nnz": 8}}, "batch_size": 4, "lr": 0.05,
                    "steps": 6, "seed": 1, "workers": 2,
                    "algorithm": {"name": "streaming_diloco", "sync_every": 2, "num_fragments": 2})");
  REQUIRE(r.status == "completed");
  const auto* f = find(r, "workers/fragments");
  REQUIRE(f);
  REQUIRE(f->rows == 2);
  const double w1 = 100 * 16, b1 = 16, w2 = 16 * 10, b2 = 10;
  CHECK(f->data[0] == 0);
  CHECK(f->data[1] == w1);  // {w1} | {b1, w2, b2}: any other cut leaves a fragment >= w1 + b1
  CHECK(f->data[2] == w1);
  CHECK(f->data[3] == b1 + w2 + b2);
}

namespace {

models::Task toy_task(const char* name, int train_size) {
  json cfg = {{"name", name}, {"x_max", 1.0}, {"train_size", train_size}};
  auto resolved = models::model_registry().resolve(cfg, core::Where{});
  return models::model_registry().create(resolved, 0)->make();
}

// Streaming DiLoCo written out in double for W workers whose every batch is one fixed sample
// (worker k's gradient is a known function of its parameters): inner SGD, rounds by the
// closed-form schedule, outer Nesterov, the alpha merge. Returns the training curve (mean
// worker loss before each step) and theta_outer at the end.
struct Reference {
  std::vector<double> loss, theta;
};
Reference reference_run(const models::Task& t, std::span<const models::Batch> batch, std::vector<double> w0,
                        double lr, int H, int P, int tau, double alpha, double olr, double mu, int T) {
  const size_t n = w0.size();
  const int W = static_cast<int>(batch.size());
  std::vector<std::vector<double>> w(static_cast<size_t>(W), w0);
  std::vector<double> theta = w0, buf(n, 0.0), g(n);
  struct Flight { int p, apply; std::vector<double> mean; };
  std::vector<Flight> flights;
  std::vector<int> last(static_cast<size_t>(P), 0);
  auto lo = [&](int p) { return static_cast<size_t>(p) * n / static_cast<size_t>(P); };
  auto snapshot = [&](int p) {
    std::vector<double> m(n, 0.0);
    for (size_t i = lo(p); i < lo(p + 1); ++i) {
      for (int k = 0; k < W; ++k) m[i] += w[static_cast<size_t>(k)][i];
      m[i] /= W;
    }
    return m;
  };
  auto apply = [&](const Flight& f) {
    for (size_t i = lo(f.p); i < lo(f.p + 1); ++i) {
      const double d = theta[i] - f.mean[i];
      buf[i] = mu * buf[i] + d;
      theta[i] -= olr * (d + mu * buf[i]);
      for (auto& wk : w) wk[i] = alpha * wk[i] + (1 - alpha) * theta[i];
    }
  };
  Reference out;
  for (int s = 1; s <= T; ++s) {
    double loss = 0;
    for (int k = 0; k < W; ++k) {
      auto& wk = w[static_cast<size_t>(k)];
      loss += t.model->loss_grad_f64(wk, batch[static_cast<size_t>(k)], g, 0);
      for (size_t i = 0; i < n; ++i) wk[i] -= lr * g[i];
    }
    out.loss.push_back(loss / W);
    if (s == T) {
      std::vector<bool> landed(static_cast<size_t>(P), false);
      for (const Flight& f : flights) {
        apply(f);
        landed[static_cast<size_t>(f.p)] = true;
      }
      for (int p = 0; p < P; ++p)
        if (!landed[static_cast<size_t>(p)] && last[static_cast<size_t>(p)] < T) apply({p, T, snapshot(p)});
      break;
    }
    while (!flights.empty() && flights.front().apply == s) {
      apply(flights.front());
      flights.erase(flights.begin());
    }
    for (int p = 0; p < P; ++p) {
      const int o = (p + 1) * H / P;
      if (s < o || (s - o) % H != 0) continue;
      last[static_cast<size_t>(p)] = s;
      Flight f{p, s + tau, snapshot(p)};
      if (tau == 0)
        apply(f);
      else
        flights.push_back(f);
    }
  }
  out.theta = theta;
  return out;
}

}  // namespace

TEST_CASE("streaming_diloco with a delay: 2 workers on the quadratic toy against the rounds in double, and the "
          "overlap on the clock by hand") {
  // train_size 2 and 2 workers: each worker's shard is one sample, so every batch of worker k
  // is its sample and its gradient a known function of its parameters.
  const int seed = 7, T = 11, H = 4, P = 2, tau = 1;
  const double lr = 0.01, alpha = 0.5, olr = 0.7, mu = 0.9;
  const auto task = toy_task("quadratic", 2);
  std::vector<models::Batch> batch(2);
  for (int k = 0; k < 2; ++k) {
    train::Sampler smp(2, 2, k, seed);
    std::vector<uint32_t> idx(1);
    smp.next(1, idx);
    task.train->reserve(batch[static_cast<size_t>(k)], 1);
    task.train->gather(idx, batch[static_cast<size_t>(k)]);
  }
  CHECK(batch[0].x[0] != batch[1].x[0]);  // the workers differ: the average is exercised
  std::vector<float> w0f(task.model->num_params());
  task.model->init_params(w0f, seed);
  const std::vector<double> w0(w0f.begin(), w0f.end());
  // The clock by hand: 12 flops per sample at 12 flops/s = 1 s per step; W = 2 in one node, so
  // a round of b bytes costs 2 x 0 + 2 (1/2) b / 2.5 = b / 2.5 s (the formula model).
  const std::string common = R"("model": {"name": "quadratic", "x_max": 1.0, "train_size": 2}, "workers": 2,
      "batch_size": 1, "lr": 0.01, "steps": 11, "seed": 7, "clock": {"flops_per_s": 12, "intra_latency_s": 0,
      "intra_bandwidth_bytes_per_s": 2.5}, "algorithm": {"name": "streaming_diloco", "sync_every": 4,
      "num_fragments": 2, "fragment_sync_delay": 1, "fragment_update_alpha": 0.5, "outer": "nesterov",
      "outer_lr": 0.7, "outer_momentum": 0.9, "quantize_bits": )";
  auto r = run_spec(common + "32}");
  REQUIRE(r.status == "completed");
  const Reference ref = reference_run(task, batch, w0, lr, H, P, tau, alpha, olr, mu, T);
  REQUIRE(r.curves.size() == static_cast<size_t>(T));
  for (int s = 0; s < T; ++s) CHECK(rel(r.curves.train_loss[static_cast<size_t>(s)], ref.loss[static_cast<size_t>(s)]) <= 1e-5);
  const auto* fp = find(r, "final_params");
  REQUIRE(fp);
  for (size_t i = 0; i < ref.theta.size(); ++i) CHECK(rel(fp->data[i], ref.theta[i]) <= 1e-5);
  // Controls: no delay, or no merge, is another run (the comparison above can fail).
  const Reference no_delay = reference_run(task, batch, w0, lr, H, P, 0, alpha, olr, mu, T);
  const Reference no_merge = reference_run(task, batch, w0, lr, H, P, tau, 0.0, olr, mu, T);
  CHECK(rel(no_delay.theta[0], ref.theta[0]) > 1e-3);
  CHECK(rel(no_merge.theta[0], ref.theta[0]) > 1e-3);
  // Rounds start after steps 2 (fragment 0), 4 (1), 6, 8, 10 and land one step later; each
  // fragment is one float. 32 bits: C = 4 / 2.5 = 1.6 s, of which the next step's 1 s hides
  // 1 s: 0.6 s per round; fragment 1 synchronizes at the last step, blocking: 1.6 s.
  CHECK(r.curves.sim_s.back() == doctest::Approx(11 + 5 * 0.6 + 1.6).epsilon(1e-12));
  // 16 bits: C = 2 / 2.5 = 0.8 s, hidden entirely; the last round 0.8 s.
  auto r16 = run_spec(common + "16}");
  CHECK(r16.curves.sim_s.back() == doctest::Approx(11 + 0.8).epsilon(1e-12));
  // 8 bits: one code byte + the 4-byte scale = 5 bytes, C = 2 s: 1 s per round sticks out.
  auto r8 = run_spec(common + "8}");
  CHECK(r8.curves.sim_s.back() == doctest::Approx(11 + 5 * 1.0 + 2.0).epsilon(1e-12));
  // No delay: every round blocks for all of C.
  auto r0 = run_spec(std::string(common).replace(common.find("\"fragment_sync_delay\": 1"), 24,
                                                 "\"fragment_sync_delay\": 0") + "32}");
  CHECK(r0.curves.sim_s.back() == doctest::Approx(11 + 7 * 1.6).epsilon(1e-12));
}

TEST_CASE("streaming_diloco with alpha 1 and one fragment: the workers never take the outer model") {
  for (int W : {2, 4}) {
    const std::string common = R"("model": "cubic", "batch_size": 3, "lr": 0.02, "steps": 24, "seed": 9,
        "optimizer": {"name": "sgd", "momentum": 0.9}, "workers": )" + std::to_string(W);
    // local SGD that averages only after the last step: W independent trainings
    auto alone = run_spec(common + R"(, "algorithm": {"name": "local_sgd", "H": 24})");
    for (const char* outer : {R"("outer": "sgd", "outer_lr": 1.0)", R"("outer": "nesterov")"}) {
      auto s = run_spec(common + R"(, "algorithm": {"name": "streaming_diloco", "sync_every": 5,
                        "fragment_update_alpha": 1.0, )" + outer + "}");
      INFO("W=" << W << " " << outer);
      CHECK(s.curves.train_loss == alone.curves.train_loss);
      CHECK(sync_rows(s).size() == 5);  // the outer model did move: 4 rounds + the last step
    }
    // outer SGD at lr 1 takes the replicas' mean, which at the end is local SGD's average
    // (W a power of two: the float mean of the replicas is the same tree sum / W)
    auto s = run_spec(common + R"(, "algorithm": {"name": "streaming_diloco", "sync_every": 5,
                      "fragment_update_alpha": 1.0, "outer": "sgd", "outer_lr": 1.0})");
    CHECK(find(s, "final_params")->data == find(alone, "final_params")->data);
    // the control: alpha 0 takes the outer model, a different training
    auto taken = run_spec(common + R"(, "algorithm": {"name": "streaming_diloco", "sync_every": 5,
                          "fragment_update_alpha": 0.0, "outer": "sgd", "outer_lr": 1.0})");
    CHECK(taken.curves.train_loss != alone.curves.train_loss);
  }
}

namespace {

// Round-to-nearest-even to bf16 from the definition: the two bf16 neighbours of x (the
// truncated pattern and the next one away from zero; past the largest finite bf16 that one is
// 2^128, which rounds on to infinity), the nearer one, on a tie the one whose last kept bit is 0.
uint32_t bf16_reference(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  const uint32_t down = u & 0xFFFF0000u, up = down + 0x10000u;
  const double xd = x, dd = std::bit_cast<float>(down);
  const bool up_overflows = (up & 0x7F800000u) == 0x7F800000u;
  const double ud = up_overflows ? std::copysign(std::ldexp(1.0, 128), xd) : std::bit_cast<float>(up);
  const double ed = std::fabs(xd - dd), eu = std::fabs(ud - xd);
  if (ed < eu) return down;
  if (eu < ed) return up;
  return ((down >> 16) & 1u) == 0 ? down : up;
}

}  // namespace

TEST_CASE("outer-gradient codecs: bf16 is round-to-nearest-even; the 8-bit and E3M0 grids round to the nearest point") {
  using algo::bf16_round;
  auto bits = [](float f) { return std::bit_cast<uint32_t>(f); };
  auto flt = [](uint32_t u) { return std::bit_cast<float>(u); };
  // Ties go to the even pattern, both ways; the largest floats overflow; subnormals round too.
  CHECK(bits(bf16_round(flt(0x3F808000u))) == 0x3F800000u);
  CHECK(bits(bf16_round(flt(0x3F818000u))) == 0x3F820000u);
  CHECK(bits(bf16_round(flt(0xBF808000u))) == 0xBF800000u);
  CHECK(bits(bf16_round(flt(0x3F808001u))) == 0x3F810000u);
  CHECK(bits(bf16_round(FLT_MAX)) == 0x7F800000u);
  CHECK(bits(bf16_round(flt(0x00008000u))) == 0x00000000u);
  CHECK(bits(bf16_round(flt(0x00018000u))) == 0x00020000u);
  CHECK(std::isnan(bf16_round(flt(0x7F800001u))));
  CHECK(std::isinf(bf16_round(INFINITY)));
  core::Rng rng(123);
  int checked = 0;
  for (int i = 0; i < 200000; ++i) {
    uint32_t u = static_cast<uint32_t>(rng.next());
    if (i % 4 == 0) u = (u & 0xFFFF0000u) | 0x8000u;  // a tie every fourth draw
    if ((u & 0x7F800000u) == 0x7F800000u) continue;   // inf / NaN: above
    INFO("x bits " << u);
    CHECK(bits(bf16_round(flt(u))) == bf16_reference(flt(u)));
    ++checked;
  }
  CHECK(checked > 190000);

  // 8 bits and 4 bits against every point of their grid (s = max |x|).
  for (int trial = 0; trial < 200; ++trial) {
    const size_t m = 1 + static_cast<size_t>(rng.below(300));
    const double scale = std::ldexp(1.0, static_cast<int>(rng.below(40)) - 20);
    std::vector<float> x(m);
    for (auto& v : x) v = static_cast<float>(scale * rng.normal());
    double s = 0;
    for (float v : x) s = std::max(s, std::fabs(static_cast<double>(v)));
    std::vector<float> q8 = x, q4 = x;
    algo::round_trip(q8, 8);
    algo::round_trip(q4, 4);
    for (size_t i = 0; i < m; ++i) {
      const double xi = x[i];
      double best8 = INFINITY;  // nearest q s / 127, ties to even q
      float pick8 = 0;
      for (int q = -127; q <= 127; ++q) {
        const float g = static_cast<float>(q * s / 127.0);
        const double e = std::fabs(xi - q * s / 127.0);
        if (e < best8 || (e == best8 && q % 2 == 0)) {
          best8 = e;
          pick8 = g;
        }
      }
      CHECK(q8[i] == pick8);
      double best4 = std::fabs(xi);  // nearest of 0, +-s 2^-6 .. +-s, ties to the larger magnitude
      float pick4 = 0;
      for (int e = -6; e <= 0; ++e)
        for (double sign : {-1.0, 1.0}) {
          const double gd = sign * std::ldexp(s, e);
          const double err = std::fabs(xi - gd);
          if (err < best4 || (err == best4 && std::fabs(gd) > std::fabs(pick4))) {
            best4 = err;
            pick4 = static_cast<float>(gd);
          }
        }
      CHECK(q4[i] == pick4);
    }
  }
  // The bytes on the wire: codes plus a float scale below 16 bits.
  CHECK(algo::wire_bytes(10, 32) == 40);
  CHECK(algo::wire_bytes(10, 16) == 20);
  CHECK(algo::wire_bytes(10, 8) == 14);
  CHECK(algo::wire_bytes(11, 4) == 10);
}

TEST_CASE("streaming_diloco refuses what its schedule cannot do, naming the key") {
  auto refuse = [](const std::string& algo, const std::string& key) {
    const std::string spec = R"({"name": "t", "base": {"model": "cubic", "steps": 5, "algorithm": )" + algo + "}}";
    try {
      (void)app::parse_experiment(spec, "t.json");
      FAIL("accepted " << algo);
    } catch (const UserError& e) {
      CHECK(std::string(e.what()).find("$.base.algorithm." + key) != std::string::npos);
    }
  };
  refuse(R"({"name": "streaming_diloco", "sync_every": 4, "num_fragments": 5})", "num_fragments");
  refuse(R"({"name": "streaming_diloco", "sync_every": 4, "fragment_sync_delay": 4})", "fragment_sync_delay");
  refuse(R"({"name": "streaming_diloco", "quantize_bits": 12})", "quantize_bits");
  refuse(R"({"name": "streaming_diloco", "fragment_update_alpha": 1.5})", "fragment_update_alpha");
}
