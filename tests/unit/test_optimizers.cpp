// Optimizers (train/optimizer_*.cpp): the first three steps of each on a 3-parameter
// problem against values derived by hand from the update formulas (written next to each
// case), a golden test against torch.optim (tests/reference/torch_optimizers.py, skipped
// when torch is absent), and state()/set_state() round trips.
//
// The 3-parameter problem: w0 = (1, -2, 0.5), split into two tensors a = w[0..2) and
// b = w[2..3) (for the per-tensor trust ratios), with the gradient sequence
//   g1 = (0.5, -1, 2),  g2 = (0.25, 0.5, -1),  g3 = (-0.5, 1.5, 0.5).
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "train/optimizer.h"
#include "core/params.h"

using namespace wb;

namespace {

const std::vector<float> kW0 = {1.f, -2.f, 0.5f};
const std::vector<std::vector<float>> kGrads = {{0.5f, -1.f, 2.f}, {0.25f, 0.5f, -1.f}, {-0.5f, 1.5f, 0.5f}};
const std::vector<models::TensorInfo> kTensors = {{"a", 0, 2, {2}}, {"b", 2, 1, {1}}};

std::unique_ptr<train::Optimizer> make_opt(const std::string& spec,
                                           const train::OptimizerEnv& env) {
  auto resolved = train::optimizer_registry().resolve(json::parse(spec), core::Where{});
  return train::optimizer_registry().create(resolved, env);
}

// Runs 3 steps from w0 and checks every step against `expected` (float rounding: 2e-6 rel).
void check_three_steps(const std::string& spec, double lr, const std::vector<std::vector<double>>& expected,
                       std::vector<float> w0 = kW0) {
  const train::OptimizerEnv env{3, &kTensors};
  auto opt = make_opt(spec, env);
  std::vector<float> w = w0;
  for (size_t t = 0; t < 3; ++t) {
    opt->step(w, kGrads[t], lr);
    for (size_t i = 0; i < 3; ++i) {
      INFO(spec << " step " << t + 1 << " w[" << i << "]");
      CHECK(w[i] == doctest::Approx(expected[t][i]).epsilon(2e-6));
    }
  }
}

}  // namespace

TEST_CASE("sgd: plain, momentum with dampening and coupled decay, Nesterov, SGDW") {
  // Plain: w <- w - lr g, lr = 0.1.
  //   (1, -2, .5) - .1 (.5, -1, 2)  = (.95, -1.9, .3)
  //   - .1 (.25, .5, -1)             = (.925, -1.95, .4)
  //   - .1 (-.5, 1.5, .5)            = (.975, -2.1, .35)
  check_three_steps(R"({"name": "sgd"})", 0.1, {{0.95, -1.9, 0.3}, {0.925, -1.95, 0.4}, {0.975, -2.1, 0.35}});

  // momentum .9, dampening .1, coupled wd .01, lr .1: g' = g + .01 w;
  // buf1 = g'1, buf_t = .9 buf + .9 g'_t; w -= .1 buf.
  //   g'1 = (.51, -1.02, 2.005)                          -> w1 = (.949, -1.898, .2995)
  //   g'2 = (.25949, .48102, -.997005); buf2 = .9 buf1 + .9 g'2 = (.692541, -.485082, .9072855)
  //                                                       -> w2 = (.8797459, -1.8494918, .20878045)
  //   g'3 = (-.491202541, 1.481505082, .5020878045); buf3 = .9 buf2 + .9 g'3
  //       = (.1812870131, .8967463238, 1.26842598)       -> w3 = (.8616254387, -1.939169877, .0819449526)
  check_three_steps(R"({"name": "sgd", "momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01})", 0.1,
                    {{0.949, -1.898, 0.2995},
                     {0.8797459, -1.8494918, 0.20878045},
                     {0.8616254387, -1.939169877, 0.0819449526}});

  // Nesterov .9, lr .1: buf_t = .9 buf + g_t (buf1 = g1), d = g + .9 buf.
  //   buf1 = (.5, -1, 2),       d1 = 1.9 g1 = (.95, -1.9, 3.8)        -> w1 = (.905, -1.81, .12)
  //   buf2 = (.7, -.4, .8),     d2 = (.88, .14, -.28)                 -> w2 = (.817, -1.824, .148)
  //   buf3 = (.13, 1.14, 1.22), d3 = (-.383, 2.526, 1.598)            -> w3 = (.8553, -2.0766, -.0118)
  check_three_steps(R"({"name": "sgd", "momentum": 0.9, "nesterov": true})", 0.1,
                    {{0.905, -1.81, 0.12}, {0.817, -1.824, 0.148}, {0.8553, -2.0766, -0.0118}});

  // SGDW: momentum .9, decoupled wd .1, lr .1: w <- w (1 - .01) - .1 buf, buf on g only.
  //   buf1 = g1:                 w1 = .99 w0 - .1 g1 = (.94, -1.88, .295)
  //   buf2 = (.7, -.4, .8):      w2 = .99 w1 - .1 buf2 = (.8606, -1.8212, .21205)
  //   buf3 = (.13, 1.14, 1.22):  w3 = .99 w2 - .1 buf3 = (.838994, -1.916988, .0879295)
  check_three_steps(R"({"name": "sgd", "momentum": 0.9, "weight_decay": 0.1, "weight_decay_mode": "decoupled"})",
                    0.1, {{0.94, -1.88, 0.295}, {0.8606, -1.8212, 0.21205}, {0.838994, -1.916988, 0.0879295}});
}

TEST_CASE("adam and adamw: bias correction, coupled and decoupled weight decay") {
  // Adam, lr .01, beta (.9, .999), eps 1e-8:
  //   m_t = .9 m + .1 g,  v_t = .999 v + .001 g^2,  w -= lr/(1-.9^t) m / (sqrt(v)/sqrt(1-.999^t) + eps)
  //   t=1: m_hat = g, v_hat = g^2: step = lr g/(|g| + eps) = lr sign(g) (1 - eps/|g|)
  //        -> w1 = (1 - .01(1 - 2e-8), -1.99, .49)
  //   t=2: m = .9 (.05, -.1, .2) + .1 g2 = (.07, -.04, .08); for w[0]:
  //        v = .999 * .00025 + .001 * .0625 = .00031225, v_hat = v / .001999 = .1562031,
  //        m_hat = .07 / .19 = .3684211, m_hat / sqrt(v_hat) = .9321847
  //        -> w2[0] = .99 - .01 * .9321847 = .9806782
  //   t=3: the same recursion (bias corrections 1 - .9^3 = .271, 1 - .999^3 = .002997003).
  check_three_steps(R"({"name": "adam"})", 0.01,
                    {{0.9900000002, -1.99, 0.49},
                     {0.980678204, -1.98733663, 0.4873366297},
                     {0.9795703734, -1.991230528, 0.4839323382}});
  // Coupled (L2) wd .1: g' = g + .1 w enters m and v. t=1 is again lr sign(g'):
  // the same w1; later steps differ.
  check_three_steps(R"({"name": "adam", "weight_decay": 0.1})", 0.01,
                    {{0.9900000002, -1.99, 0.49},
                     {0.9804658275, -1.985312259, 0.4870549657},
                     {0.9772928153, -1.987449071, 0.4833342502}});
  // AdamW wd .1: w <- w (1 - .01 * .1) first, then the Adam step on g:
  //   w1 = .999 w0 - .01 sign(g1) = (.989, -1.988, .4895) (up to eps)
  const std::vector<std::vector<double>> adamw = {{0.9890000002, -1.988, 0.4895},
                                                  {0.978689204, -1.98334863, 0.4863471297},
                                                  {0.9766026842, -1.985259179, 0.4824564911}};
  check_three_steps(R"({"name": "adamw", "weight_decay": 0.1})", 0.01, adamw);
  check_three_steps(R"({"name": "adam", "weight_decay": 0.1, "weight_decay_mode": "decoupled"})", 0.01, adamw);
}

TEST_CASE("lamb: Adam direction with a per-tensor trust ratio; ratio 1 on a zero tensor") {
  // lr .1, wd .01, eps 1e-6. t=1: u = m_hat/(sqrt(v_hat)+eps) + wd w = sign(g1) + .01 w0
  //   (up to eps) = (1.01, -1.02, 1.005).
  //   tensor a: ||w|| = sqrt(5) = 2.2360680, ||u|| = sqrt(1.01^2 + 1.02^2) = 1.4354442,
  //             ratio = 1.5577623 -> w1a = w0a - .1 * 1.5577623 * u_a = (.842667, -1.841109)
  //   tensor b: ratio = .5 / 1.005 -> w1b = .5 - .1 * .5 = .45 (a 1-element tensor moves by
  //             lr |w| whatever the gradient: the trust ratio normalizes the update)
  check_three_steps(R"({"name": "lamb", "weight_decay": 0.01})", 0.1,
                    {{0.8426669915, -1.84110908, 0.45},
                     {0.6488735316, -1.782442242, 0.405},
                     {0.5917813285, -1.963334067, 0.3645}});
  // Tensor b starts at 0: ||w_b|| = 0 -> ratio 1 (the documented clamp), so b moves by
  // lr u_b = .1 * (1 - 1e-6/2) at t=1 instead of staying at zero forever; from t=2 on
  // ||w_b|| > 0 and b again moves by lr |w_b| per step (-.1, -.11, -.121).
  check_three_steps(R"({"name": "lamb"})", 0.1,
                    {{0.841886196, -1.841886038, -0.09999995},
                     {0.6471611978, -1.786250254, -0.109999945},
                     {0.5951722618, -1.968985654, -0.1209999395}},
                    {1.f, -2.f, 0.f});
}

TEST_CASE("lars: per-tensor local lr eta ||w|| / (||g|| + wd ||w||) with momentum") {
  // lr 1, eta .1, momentum .9, wd .01: v = .9 v + lr * local * (g + wd w); w -= v.
  //   t=1, a: ||w|| = sqrt5, ||g|| = sqrt(1.25), local = .1 sqrt5 / (sqrt1.25 + .01 sqrt5)
  //           = .1960784; g + wd w = (.51, -1.02) -> v = (.1, -.2) -> w1a = (.9, -1.8)
  //        b: local = .1 * .5 / (2 + .005) = .0249377; g + wd w = 2.005 -> v = .05 -> .45
  //   t=2, t=3: the same recursion with the new norms.
  check_three_steps(R"({"name": "lars", "trust_coefficient": 0.1, "weight_decay": 0.01})", 1.0,
                    {{0.9, -1.8, 0.45},
                     {0.72, -1.787490347, 0.4495968143},
                     {0.6173379598, -1.954694078, 0.4042742658}});
}

TEST_CASE("state() / set_state() round trip: a restored optimizer continues bit for bit") {
  const train::OptimizerEnv env{3, &kTensors};
  for (const char* spec :
       {R"({"name": "sgd"})", R"({"name": "sgd", "momentum": 0.9, "dampening": 0.5})",
        R"({"name": "sgd", "momentum": 0.9, "nesterov": true, "weight_decay": 0.1, "weight_decay_mode": "decoupled"})",
        R"({"name": "adam", "weight_decay": 0.1})", R"({"name": "adamw"})",
        R"({"name": "lamb", "weight_decay": 0.01})", R"({"name": "lars"})"}) {
    INFO(spec);
    for (int split : {0, 1, 2}) {  // save after `split` steps (0: before the first step)
      auto a = make_opt(spec, env);
      std::vector<float> wa = kW0;
      for (int t = 0; t < split; ++t) a->step(wa, kGrads[static_cast<size_t>(t)], 0.05);
      auto b = make_opt(spec, env);
      b->set_state(a->state());
      CHECK(b->state() == a->state());
      std::vector<float> wb = wa;
      for (int t = split; t < 3; ++t) {
        a->step(wa, kGrads[static_cast<size_t>(t)], 0.05);
        b->step(wb, kGrads[static_cast<size_t>(t)], 0.05);
      }
      CHECK(wa == wb);
    }
  }
  // Wrong-length states are refused (a checkpoint of another model or optimizer).
  auto adam = make_opt(R"({"name": "adam"})", env);
  CHECK_THROWS_AS(adam->set_state(std::vector<float>(4)), InternalError);
  auto sgd = make_opt(R"({"name": "sgd"})", env);
  CHECK(sgd->state().empty());
  CHECK_THROWS_AS(sgd->set_state(std::vector<float>(1)), InternalError);
}

TEST_CASE("optimizer parameters are validated and listed") {
  for (const char* n : {"sgd", "adam", "adamw", "lamb", "lars"}) CHECK(train::optimizer_registry().has(n));
  CHECK_THROWS_AS(train::optimizer_registry().resolve(json::parse(R"({"name": "adam", "beta1": 1.0})"),
                                                      core::Where{}),
                  UserError);
  CHECK_THROWS_AS(train::optimizer_registry().resolve(
                      json::parse(R"({"name": "sgd", "weight_decay_mode": "l2"})"), core::Where{}),
                  UserError);
  auto adamw = train::optimizer_registry().resolve(json("adamw"), core::Where{});
  CHECK(adamw["weight_decay_mode"] == "decoupled");
  CHECK(adamw["weight_decay"].get<double>() == doctest::Approx(0.01));
}

namespace {

// tests/golden/torch/optimizers.json was written by tests/reference/torch_optimizers.py
// (torch.optim); this replays its start point, gradients and per-step learning rates through
// the workbench optimizer named in each case and compares the parameters after every step.
void check_optimizers_against(const json& ref) {
  const auto w0 = ref["w0"].get<std::vector<float>>();
  const auto grads = ref["grads"].get<std::vector<std::vector<float>>>();
  const train::OptimizerEnv env{w0.size(), nullptr};
  REQUIRE(ref["cases"].size() >= 10);
  for (const auto& c : ref["cases"]) {
    const std::string name = c["name"].get<std::string>();
    auto opt = make_opt(c["optimizer"].dump(), env);
    std::vector<float> w = w0;
    const auto lrs = c["lrs"].get<std::vector<double>>();
    for (size_t t = 0; t < grads.size(); ++t) {
      opt->step(w, grads[t], lrs[t]);
      const auto exp = c["expected"][t].get<std::vector<double>>();
      for (size_t i = 0; i < w.size(); ++i) {
        INFO(name << " (torch " << ref["torch"].get<std::string>() << ") step " << t + 1 << " w[" << i << "]");
        CHECK(std::fabs(w[i] - exp[i]) <= 1e-6 + 1e-5 * std::fabs(exp[i]));
      }
    }
  }
}

std::filesystem::path optimizers_golden() {
  return std::filesystem::path(WB_SOURCE_DIR) / "tests/golden/torch/optimizers.json";
}

json read_json(const std::filesystem::path& p) {
  std::ifstream f(p);
  REQUIRE_MESSAGE(f.good(), "cannot read " << p.string());
  return json::parse(f);
}

}  // namespace

TEST_CASE("golden: sgd/momentum/nesterov/adam/adamw agree with torch.optim (committed golden)") {
  check_optimizers_against(read_json(optimizers_golden()));
}

// Needs /usr/bin/python3 with torch: CTest runs this suite as `unit_torch_live` (skipped, exit
// 77, where torch is absent). WB_REGENERATE_GOLDEN=1 rewrites the committed file.
TEST_SUITE("needs_torch") {
TEST_CASE("golden: the committed torch.optim file agrees with a live torch run") {
  namespace fs = std::filesystem;
  const fs::path script = fs::path(WB_SOURCE_DIR) / "tests/reference/torch_optimizers.py";
  const fs::path out = fs::temp_directory_path() / ("wb_torch_optimizers_" + std::to_string(::getpid()) + ".json");
  const std::string cmd = "/usr/bin/python3 '" + script.string() + "' '" + out.string() + "'";
  const int rc = std::system(cmd.c_str());
  const int status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  REQUIRE_MESSAGE(status == 0, "reference script failed (77: no torch): " << cmd);
  const json live = read_json(out);
  check_optimizers_against(live);
  if (std::getenv("WB_REGENERATE_GOLDEN")) {
    fs::copy_file(out, optimizers_golden(), fs::copy_options::overwrite_existing);
    MESSAGE("rewrote " << optimizers_golden().string());
  } else {
    const json committed = read_json(optimizers_golden());
    CHECK(committed["w0"] == live["w0"]);
    CHECK(committed["grads"] == live["grads"]);
    REQUIRE(committed["cases"].size() == live["cases"].size());
    for (size_t k = 0; k < live["cases"].size(); ++k) {
      const auto a = committed["cases"][k]["expected"].get<std::vector<std::vector<double>>>();
      const auto b = live["cases"][k]["expected"].get<std::vector<std::vector<double>>>();
      REQUIRE(a.size() == b.size());
      for (size_t t = 0; t < a.size(); ++t)
        for (size_t i = 0; i < a[t].size(); ++i)
          CHECK(std::fabs(a[t][i] - b[t][i]) <= 1e-7 * (1 + std::fabs(b[t][i])));
    }
  }
  fs::remove(out);
}
}  // TEST_SUITE("needs_torch")
