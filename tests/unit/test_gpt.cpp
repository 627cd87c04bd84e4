// gpt: nanoGPT's layout and initialization, the gradient of the reference loops against
// central differences (double), the exact Hessian-vector product (Dual forward-over-reverse)
// against central differences of the gradient, float against double, the byte corpus and
// its windows and errors, and the check against PyTorch's loss and gradients (a committed
// golden file written by tests/golden/torch/make_gpt_golden.py; no torch needed here).
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/rng.h"
#include "models/gpt.h"
#include "models/text_data.h"
#include "models/transformer_fast.h"
#include "models/transformer_layers.h"

using namespace wb;
using namespace wb::models;
namespace fs = std::filesystem;

namespace {

GptConfig tiny_config() {
  GptConfig c;
  c.layers = 2, c.heads = 2, c.d_model = 8, c.block = 6, c.vocab = 11;
  return c;
}

// Weights far from the initialization (which makes every block nearly the identity): every
// matrix N(0, 0.3^2), LayerNorm gains 1 + N(0, 0.2^2), biases N(0, 0.1^2).
std::vector<double> spread_weights(const GptModel& m, uint64_t seed) {
  std::vector<double> w(m.num_params());
  core::Rng rng(seed);
  for (const TensorInfo& t : m.tensors()) {
    const bool gain = t.name.find("ln_") != std::string::npos && t.name.find("weight") != std::string::npos;
    for (size_t i = t.offset; i < t.offset + t.size; ++i)
      w[i] = gain ? 1.0 + 0.2 * rng.normal() : (t.shape.size() == 1 ? 0.1 : 0.3) * rng.normal();
  }
  return w;
}

Batch token_batch(const GptConfig& c, int n, uint64_t seed) {
  Batch b;
  b.n = n;
  core::Rng rng(seed);
  for (int i = 0; i < n * (c.block + 1); ++i)
    b.label.push_back(static_cast<int32_t>(rng.below(static_cast<uint64_t>(c.vocab))));
  return b;
}

double norm(const std::vector<double>& v, size_t off, size_t n) {
  double s = 0;
  for (size_t i = off; i < off + n; ++i) s += v[i] * v[i];
  return std::sqrt(s);
}

// max over tensors of ||a - b|| / ||b|| (per tensor), with the per-tensor values printed.
double worst_tensor_rel(const GptModel& m, const std::vector<double>& a,
                        const std::vector<double>& b, const char* what) {
  double worst = 0;
  std::ostringstream os;
  for (const TensorInfo& t : m.tensors()) {
    std::vector<double> d(t.size);
    for (size_t i = 0; i < t.size; ++i) d[i] = a[t.offset + i] - b[t.offset + i];
    const double rel = norm(d, 0, t.size) / std::max(1e-300, norm(b, t.offset, t.size));
    worst = std::max(worst, rel);
    os << "  " << t.name << " " << rel << "\n";
  }
  MESSAGE(std::string(what) << ": worst relative error per tensor " << worst << "\n" << os.str());
  return worst;
}

fs::path golden_path() { return fs::path(WB_SOURCE_DIR) / "tests/golden/torch/gpt_tiny.json"; }

struct TempFile {
  fs::path path;
  explicit TempFile(const std::string& content) {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("wb_gpt_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + ".txt");
    std::ofstream(path, std::ios::binary) << content;
  }
  ~TempFile() {
    std::error_code ec;
    fs::remove(path, ec);
  }
};

}  // namespace

TEST_SUITE("gpt") {
  TEST_CASE("gpt: nanoGPT tensor names, shapes, order and initialization") {
    GptConfig c;
    c.layers = 3, c.heads = 4, c.d_model = 32, c.block = 16, c.vocab = 65;
    GptModel m(c);
    const auto& t = m.tensors();
    REQUIRE(t.size() == 2 + 12 * 3 + 2);
    CHECK(t[0].name == "transformer.wte.weight");
    CHECK(t[0].shape == std::vector<int64_t>{65, 32});
    CHECK(t[1].shape == std::vector<int64_t>{16, 32});
    CHECK(t[2].name == "transformer.h.0.ln_1.weight");
    CHECK(t[4].name == "transformer.h.0.attn.c_attn.weight");
    CHECK(t[4].shape == std::vector<int64_t>{96, 32});
    CHECK(t[12].shape == std::vector<int64_t>{32, 128});  // mlp.c_proj.weight
    CHECK(t.back().name == "transformer.ln_f.bias");
    // 12 C^2 + 13 C per block, V C + T C embeddings, 2 C final LayerNorm.
    CHECK(m.num_params() == static_cast<size_t>(3 * (12 * 32 * 32 + 13 * 32) + 65 * 32 + 16 * 32 + 64));
    std::vector<float> w(m.num_params());
    m.init_params(w, 7);
    std::vector<float> w2(m.num_params());
    m.init_params(w2, 7);
    CHECK(w == w2);
    auto stdev = [&](const TensorInfo& ti) {
      double s = 0, s2 = 0;
      for (size_t i = ti.offset; i < ti.offset + ti.size; ++i) s += w[i], s2 += double(w[i]) * w[i];
      const double mean = s / ti.size;
      return std::sqrt(s2 / ti.size - mean * mean);
    };
    CHECK(stdev(t[0]) == doctest::Approx(0.02).epsilon(0.05));
    CHECK(stdev(t[4]) == doctest::Approx(0.02).epsilon(0.05));
    // Residual projections: 0.02 / sqrt(2 * layers) (GPT-2 section 2.3, nanoGPT).
    CHECK(stdev(t[6]) == doctest::Approx(0.02 / std::sqrt(6.0)).epsilon(0.08));
    CHECK(stdev(t[12]) == doctest::Approx(0.02 / std::sqrt(6.0)).epsilon(0.05));
    for (size_t i = t[2].offset; i < t[2].offset + t[2].size; ++i) CHECK(w[i] == 1.0f);
    for (size_t i = t[3].offset; i < t[3].offset + t[3].size; ++i) CHECK(w[i] == 0.0f);
    // At initialization the loss is close to uniform guessing, ln V.
    Batch b = token_batch(c, 4, 3);
    auto ws = m.make_workspace(4);
    std::vector<float> g(m.num_params());
    const double loss = m.loss_grad(w, b, g, *ws, 0);
    CHECK(loss == doctest::Approx(std::log(65.0)).epsilon(0.02));
  }

  TEST_CASE("gpt: gradient (double) matches central differences for every parameter") {
    const GptConfig c = tiny_config();
    GptModel m(c);
    std::vector<double> w = spread_weights(m, 11);
    const Batch b = token_batch(c, 3, 12);
    std::vector<double> g(w.size()), fd(w.size()), gtmp(w.size());
    m.loss_grad_f64(w, b, g, 0);
    const double h = 1e-5;
    for (size_t i = 0; i < w.size(); ++i) {
      const double w0 = w[i];
      w[i] = w0 + h;
      const double lp = m.loss_grad_f64(w, b, gtmp, 0);
      w[i] = w0 - h;
      const double lm = m.loss_grad_f64(w, b, gtmp, 0);
      w[i] = w0;
      fd[i] = (lp - lm) / (2 * h);
    }
    CHECK(worst_tensor_rel(m, g, fd, "gradient vs central differences (h 1e-5)") < 1e-7);
  }

  TEST_CASE("gpt: exact HVP (Dual forward-over-reverse) matches differences of the gradient") {
    const GptConfig c = tiny_config();
    GptModel m(c);
    const std::vector<double> w = spread_weights(m, 21);
    const Batch b = token_batch(c, 3, 22);
    for (uint64_t vs : {31u, 32u}) {
      core::Rng rng(vs);
      std::vector<double> v(w.size()), hv(w.size()), fd(w.size()), gp(w.size()), gm(w.size());
      for (double& x : v) x = rng.normal();
      m.hvp_f64(w, v, b, hv, 0);
      const double h = 1e-5;
      std::vector<double> wp(w), wm(w);
      for (size_t i = 0; i < w.size(); ++i) wp[i] += h * v[i], wm[i] -= h * v[i];
      m.loss_grad_f64(wp, b, gp, 0);
      m.loss_grad_f64(wm, b, gm, 0);
      for (size_t i = 0; i < w.size(); ++i) fd[i] = (gp[i] - gm[i]) / (2 * h);
      CHECK(worst_tensor_rel(m, hv, fd, "HVP vs central differences of the gradient (h 1e-5)") <
            1e-5);
      // The gradient part of the dual pass is the plain gradient.
      std::vector<double> g(w.size());
      m.loss_grad_f64(w, b, g, 0);
      CHECK(std::isfinite(hv[0]));
    }
    // The full Hessian of a smaller net is symmetric (H = H^T, exactly as an HVP matrix
    // only when every layer's second derivative is right).
    GptConfig s;
    s.layers = 1, s.heads = 2, s.d_model = 4, s.block = 3, s.vocab = 5;
    GptModel ms(s);
    const std::vector<double> ws = spread_weights(ms, 41);
    const Batch bs = token_batch(s, 2, 42);
    const std::vector<double> H = hessian_f64(ms, ws, bs, 0);
    const size_t n = ms.num_params();
    double asym = 0, scale = 0;
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j) {
        asym = std::max(asym, std::fabs(H[i * n + j] - H[j * n + i]));
        scale = std::max(scale, std::fabs(H[i * n + j]));
      }
    MESSAGE("Hessian (" << n << " params) max |H - H^T| " << asym << ", max |H| " << scale);
    CHECK(asym < 1e-10 * scale);
  }

  TEST_CASE("gpt: float training pass agrees with the double oracle; evaluation sums tokens") {
    GptConfig c;
    c.layers = 2, c.heads = 4, c.d_model = 16, c.block = 12, c.vocab = 20;
    GptModel m(c);
    const std::vector<double> wd = spread_weights(m, 51);
    const std::vector<float> wf(wd.begin(), wd.end());
    std::vector<double> wdf(wf.begin(), wf.end());  // the same (rounded) weights in double
    const Batch b = token_batch(c, 5, 52);
    std::vector<double> gd(wd.size());
    const double ld = m.loss_grad_f64(wdf, b, gd, 0);
    auto ws = m.make_workspace(8);
    std::vector<float> gf(wd.size());
    const double lf = m.loss_grad(wf, b, gf, *ws, 0);
    CHECK(lf == doctest::Approx(ld).epsilon(1e-5));
    std::vector<double> gfd(gf.begin(), gf.end());
    CHECK(worst_tensor_rel(m, gfd, gd, "float training pass vs double") < 1e-4);
    const EvalResult ev = m.evaluate(wf, b, *ws);
    CHECK(ev.count == 5 * 12);
    CHECK(ev.loss_sum / ev.count == doctest::Approx(ld).epsilon(1e-5));
    CHECK_FALSE(ev.has_accuracy);
    // The reference loops in float are the same computation as the training pass.
    std::vector<float> gr(wd.size());
    CHECK(m.reference_loss_grad(wf, b, gr) == doctest::Approx(lf).epsilon(1e-6));
  }

  TEST_CASE("gpt: vectorized exp and GELU match the reference loops") {
    std::vector<float> x, e;
    for (int i = 0; i < 1000; ++i) x.push_back(-90.0f + 0.18f * i);
    e = x;
    tfast::exp_inplace(e.data(), e.size());
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i)
      if (x[i] > -87.0f && x[i] < 88.0f)
        worst = std::max(worst, std::fabs(e[i] - std::exp(double(x[i]))) / std::exp(double(x[i])));
    CHECK(worst < 3e-7);
    std::vector<float> g(x.size()), gr(x.size()), dy(x.size(), 1.0f), d(x.size()), dr(x.size());
    for (float& v : x) v *= 0.1f;  // [-9, 9]: both tails and the middle of GELU
    tfast::gelu_forward(x.size() - 3, x.data(), g.data());  // a ragged tail: reference loops
    tref::gelu_forward(x.size() - 3, x.data(), gr.data());
    tfast::gelu_backward(x.size() - 3, x.data(), dy.data(), d.data());
    tref::gelu_backward(x.size() - 3, x.data(), dy.data(), dr.data());
    double wg = 0, wd = 0;
    for (size_t i = 0; i < x.size() - 3; ++i) {
      wg = std::max(wg, double(std::fabs(g[i] - gr[i])));
      wd = std::max(wd, double(std::fabs(d[i] - dr[i])));
    }
    MESSAGE("exp worst relative error " << worst << ", GELU " << wg << ", GELU' " << wd);
    CHECK(wg < 1e-6);
    CHECK(wd < 1e-5);  // float 1 - t^2 near |t| = 1 on both sides
  }

  TEST_CASE("gpt: fast kernels match the reference loops (padded block and vocabulary)") {
    GptConfig c;
    c.layers = 2, c.heads = 2, c.d_model = 2 * fast::kVL, c.block = 10, c.vocab = 13;
    GptModel m(c);
    REQUIRE(m.has_fast_path());
    const std::vector<double> wd = spread_weights(m, 61);
    const std::vector<float> w(wd.begin(), wd.end());
    for (int n : {1, 3}) {
      const Batch b = token_batch(c, n, 62 + n);
      auto ws = m.make_workspace(4);
      std::vector<float> gf(w.size()), gr(w.size());
      const double lf = m.loss_grad(w, b, gf, *ws, 0);
      const double lr = m.reference_loss_grad(w, b, gr);
      CHECK(lf == doctest::Approx(lr).epsilon(1e-5));
      const std::vector<double> gfd(gf.begin(), gf.end()), grd(gr.begin(), gr.end());
      CHECK(worst_tensor_rel(m, gfd, grd, "fast vs reference loops (float)") < 1e-4);
      // A second pass through the same workspace gives the same bits (nothing stale).
      std::vector<float> g2(w.size());
      CHECK(m.loss_grad(w, b, g2, *ws, 0) == lf);
      CHECK(g2 == gf);
      const EvalResult ev = m.evaluate(w, b, *ws);
      CHECK(ev.count == n * c.block);
      CHECK(ev.loss_sum / ev.count == doctest::Approx(lr).epsilon(1e-5));
    }
    auto ws = m.make_workspace(2);
    std::vector<float> g(w.size());
    CHECK_THROWS(m.loss_grad(w, token_batch(c, 3, 1), g, *ws, 0));
    // Batches beyond the fast buffers' 32 windows run in chunks: the same mean loss,
    // gradient and evaluation sums as the reference over the whole batch.
    const Batch big = token_batch(c, 70, 99);
    auto wsb = m.make_workspace(70);
    std::vector<float> gb(w.size()), gbr(w.size());
    const double lb = m.loss_grad(w, big, gb, *wsb, 0);
    CHECK(lb == doctest::Approx(m.reference_loss_grad(w, big, gbr)).epsilon(1e-5));
    const std::vector<double> gbd(gb.begin(), gb.end()), gbrd(gbr.begin(), gbr.end());
    CHECK(worst_tensor_rel(m, gbd, gbrd, "fast in chunks (70 windows) vs reference") < 1e-4);
    const EvalResult evb = m.evaluate(w, big, *wsb);
    CHECK(evb.count == 70 * c.block);
    CHECK(evb.loss_sum / evb.count == doctest::Approx(lb).epsilon(1e-5));
    CHECK(m.workspace_bytes(256) < m.workspace_bytes(32) + 4 * m.num_params() + 64 * 1024);
  }

  TEST_CASE("gpt: byte corpus, vocabulary, 90/10 split and windows") {
    std::string text;
    for (int i = 0; i < 200; ++i) text += "abcab\n"[i % 6];
    auto c = make_text_corpus(text, 0, 8, "mem");
    CHECK(c->vocab == 4);  // '\n' a b c
    CHECK(c->bytes_of == std::vector<uint8_t>{'\n', 'a', 'b', 'c'});
    CHECK(c->train_end == 180);
    auto tr = make_text_windows(c, TextSplit::kTrain, 8);
    auto va = make_text_windows(c, TextSplit::kValidation, 8);
    CHECK(tr->size() == 180 - 9 + 1);  // every start position whose window stays in training
    CHECK(va->size() == (20 - 1) / 8);
    CHECK(make_text_windows(c, TextSplit::kValidation, 8, 1)->size() == 1);  // eval_windows
    Batch b;
    tr->reserve(b, 2);
    const uint32_t idx[2] = {0, 171};
    tr->gather(idx, b);
    REQUIRE(b.label.size() == 18);
    for (int j = 0; j < 9; ++j) {
      CHECK(b.label[j] == c->tokens[j]);
      CHECK(b.label[9 + j] == c->tokens[171 + j]);
    }
    CHECK(171 + 9 == 180);  // the last training window ends at the split
    const uint32_t vidx[1] = {1};
    va->gather(vidx, b);
    for (int j = 0; j < 9; ++j) CHECK(b.label[j] == c->tokens[180 + 8 + j]);
    auto c256 = make_text_corpus(text, 256, 8, "mem");
    CHECK(c256->vocab == 256);
    CHECK(c256->tokens[0] == 'a');
  }

  TEST_CASE("gpt: empty, too short, missing and directory text files are one-line errors") {
    TempFile empty(""), shortf(std::string(50, 'x'));
    auto msg = [](const std::string& path, int block) {
      try {
        load_text_corpus(path, 0, block);
      } catch (const UserError& e) {
        return std::string(e.what());
      }
      return std::string("no error");
    };
    const std::string e1 = msg(empty.path.string(), 8);
    CHECK(e1.find(empty.path.string()) == 0);
    CHECK(e1.find("empty") != std::string::npos);
    const std::string e2 = msg(shortf.path.string(), 8);  // 5 validation bytes < 9
    CHECK(e2.find(shortf.path.string()) == 0);
    CHECK(e2.find("too short") != std::string::npos);
    CHECK(msg(shortf.path.string(), 3) == "no error");  // 5 >= 4
    CHECK(msg("/nonexistent/kjv.txt", 8).find("/nonexistent/kjv.txt") == 0);
    CHECK(msg(fs::temp_directory_path().string(), 8).find("directory") != std::string::npos);
    for (const std::string& e : {e1, e2}) CHECK(e.find('\n') == std::string::npos);
  }

  TEST_CASE("gpt: loss and gradients match PyTorch (committed golden, make_gpt_golden.py)") {
    // Written by tests/golden/torch/make_gpt_golden.py from a PyTorch model of the same
    // architecture (float64): config, weights by tensor name, one batch of token windows,
    // the loss and every gradient. Compared here without torch.
    std::ifstream f(golden_path());
    REQUIRE_MESSAGE(f.good(), golden_path().string() << " is missing");
    const nlohmann::json j = nlohmann::json::parse(f);
    GptConfig c;
    c.layers = j["config"]["layers"], c.heads = j["config"]["heads"];
    c.d_model = j["config"]["d_model"], c.block = j["config"]["block"];
    c.vocab = j["config"]["vocab"];
    GptModel m(c);
    std::vector<double> w(m.num_params()), gt(m.num_params());
    for (const TensorInfo& t : m.tensors()) {
      REQUIRE_MESSAGE(j["weights"].contains(t.name), "golden file lacks " << t.name);
      const std::vector<double> v = j["weights"][t.name].get<std::vector<double>>();
      const std::vector<double> gv = j["grads"][t.name].get<std::vector<double>>();
      REQUIRE(v.size() == t.size);
      REQUIRE(gv.size() == t.size);
      std::copy(v.begin(), v.end(), w.begin() + static_cast<std::ptrdiff_t>(t.offset));
      std::copy(gv.begin(), gv.end(), gt.begin() + static_cast<std::ptrdiff_t>(t.offset));
    }
    Batch b;
    b.label = j["tokens"].get<std::vector<int32_t>>();
    b.n = static_cast<int>(b.label.size() / (c.block + 1));
    REQUIRE(b.label.size() == static_cast<size_t>(b.n) * (c.block + 1));
    const double torch_loss = j["loss"];
    std::vector<double> g(w.size());
    const double ld = m.loss_grad_f64(w, b, g, 0);
    CHECK(ld == doctest::Approx(torch_loss).epsilon(1e-12));
    CHECK(worst_tensor_rel(m, g, gt, "double vs PyTorch (float64)") < 1e-10);
    const std::vector<float> wf(w.begin(), w.end());
    auto ws = m.make_workspace(b.n);
    std::vector<float> gf(w.size());
    const double lf = m.loss_grad(wf, b, gf, *ws, 0);
    CHECK(lf == doctest::Approx(torch_loss).epsilon(1e-5));
    const std::vector<double> gfd(gf.begin(), gf.end());
    CHECK(worst_tensor_rel(m, gfd, gt, "float training pass vs PyTorch (float64)") < 1e-4);
  }
}  // TEST_SUITE("gpt")

// Needs /usr/bin/python3 with torch: CTest runs this suite as `unit_torch_live`, reported as
// skipped (exit 77) where torch is absent. It reruns make_gpt_golden.py now and checks the
// committed golden file against it (the same weights, batch, loss and gradients).
TEST_SUITE("needs_torch") {
  TEST_CASE("gpt: the committed golden file agrees with a live PyTorch run (make_gpt_golden.py)") {
    REQUIRE_MESSAGE(std::system("/usr/bin/python3 -c 'import torch' > /dev/null 2>&1") == 0,
                    "/usr/bin/python3 has no torch: run this suite through ctest");
    const fs::path out = fs::temp_directory_path() / ("wb_gpt_golden_" + std::to_string(::getpid()) + ".json");
    const std::string cmd = "/usr/bin/python3 " + std::string(WB_SOURCE_DIR) +
                            "/tests/golden/torch/make_gpt_golden.py " + out.string() + " 2>&1";
    REQUIRE_MESSAGE(std::system(cmd.c_str()) == 0, "failed: " << cmd);
    std::ifstream fl(out), fc(golden_path());
    const nlohmann::json live = nlohmann::json::parse(fl), committed = nlohmann::json::parse(fc);
    std::error_code ec;
    fs::remove(out, ec);
    CHECK(live["config"] == committed["config"]);
    CHECK(live["tokens"] == committed["tokens"]);
    CHECK(live["loss"].get<double>() == doctest::Approx(committed["loss"].get<double>()).epsilon(1e-12));
    double dn = 0, tn = 0;
    for (const char* part : {"weights", "grads"})
      for (auto it = committed[part].begin(); it != committed[part].end(); ++it) {
        REQUIRE(live[part].contains(it.key()));
        const auto a = live[part][it.key()].get<std::vector<double>>();
        const auto b = it.value().get<std::vector<double>>();
        REQUIRE(a.size() == b.size());
        for (size_t i = 0; i < a.size(); ++i) dn += (a[i] - b[i]) * (a[i] - b[i]), tn += b[i] * b[i];
      }
    INFO("live torch vs committed: relative difference " << std::sqrt(dn / tn));
    CHECK(std::sqrt(dn / tn) < 1e-12);
  }
}  // TEST_SUITE("needs_torch")
