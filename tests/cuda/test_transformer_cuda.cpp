// The GPT layer kernels (cuda/transformer_cuda.h) against the reference loops of
// models/transformer_layers.h, in double (the same algorithm: atol 1e-10 + rtol 1e-9) and in
// float (llm.c-style atol 1e-4 + rtol 1e-3), at awkward sizes: query rows longer than a warp
// (Tn = 37 and 70: a lane takes several keys), a head wider than a warp (hd = 40), LayerNorm
// rows of 130 (not a multiple of 32), a batch whose rows are not a multiple of the 8 warps of
// a block, and a 5-token vocabulary so that the embedding's scatter-add collides often.
// Parameter-gradient buffers start from random values, so "accumulates" is checked too.
// Then the whole device pass (cuda/gpt_cuda.h) against models::gpt_reference_pass: loss and
// every tensor's gradient, in double and float, and CudaGptModel (the "cuda" device's gpt)
// against the CPU GptModel: loss_grad (one chunk and several) and evaluate.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "core/rng.h"
#include "cuda/gpt_cuda.h"
#include "cuda/layers_cuda.h"
#include "cuda/transformer_cuda.h"
#include "models/gpt.h"
#include "models/transformer_layers.h"
#include "tests/cuda/cuda_test_util.h"

using namespace wb;
using namespace wb::cuda::test;
namespace tref = wb::models::tref;

namespace {

template <class T>
void expect_close(const cuda::DeviceBuffer<T>& got, const std::vector<T>& ref,
                  const std::string& what) {
  check_close(got.to_host(), ref, Tol<T>::atol, Tol<T>::rtol, what);
}

std::vector<int32_t> random_tokens(size_t count, int V, uint64_t seed) {
  core::Rng r(seed);
  std::vector<int32_t> t(count);
  for (auto& x : t) x = static_cast<int32_t>(r.below(static_cast<uint64_t>(V)));
  return t;
}

struct Shape {
  int n, Tn, C, H, V;
};
// (n * Tn rows: 111, 140, 70 -- none a multiple of the 8 warps of a block.)
const std::vector<Shape> kShapes = {
    {3, 37, 48, 3, 5},    // hd 16, keys > one warp, tiny vocabulary (collisions)
    {2, 70, 40, 1, 11},   // one head of 40 columns (> a warp), rows of 70 keys
    {1, 70, 130, 2, 65},  // LayerNorm rows of 130, hd 65, the shakespeare-char vocabulary
};

template <class T>
void check_embedding() {
  uint64_t seed = 300;
  for (const Shape& sh : kShapes) {
    CAPTURE(sh.n);
    CAPTURE(sh.Tn);
    CAPTURE(sh.C);
    const size_t R = static_cast<size_t>(sh.n) * sh.Tn;
    const auto tok = random_tokens(static_cast<size_t>(sh.n) * (sh.Tn + 1), sh.V, ++seed);
    const auto wte = randn<T>(static_cast<size_t>(sh.V) * sh.C, ++seed);
    const auto wpe = randn<T>(static_cast<size_t>(sh.Tn) * sh.C, ++seed);
    const auto dx = randn<T>(R * sh.C, ++seed);
    auto dwte = randn<T>(wte.size(), ++seed), dwpe = randn<T>(wpe.size(), ++seed);
    // The reference: models::gpt_reference_pass's embedding loops (it has no tref function).
    std::vector<T> x(R * sh.C);
    std::vector<int32_t> tgt(R);
    for (int s = 0; s < sh.n; ++s)
      for (int p = 0; p < sh.Tn; ++p) {
        const size_t r = static_cast<size_t>(s) * sh.Tn + p;
        const int32_t t = tok[static_cast<size_t>(s) * (sh.Tn + 1) + p];
        tgt[r] = tok[static_cast<size_t>(s) * (sh.Tn + 1) + p + 1];
        for (int i = 0; i < sh.C; ++i)
          x[r * sh.C + i] =
              wte[static_cast<size_t>(t) * sh.C + i] + wpe[static_cast<size_t>(p) * sh.C + i];
      }
    auto gtok = to_device(tok), gwte = to_device(wte), gwpe = to_device(wpe), gdx = to_device(dx);
    auto gdwte = to_device(dwte), gdwpe = to_device(dwpe);
    cuda::DeviceBuffer<T> gx(x.size());
    cuda::DeviceBuffer<int32_t> gtgt(R);
    cuda::embedding_forward<T>(sh.n, sh.Tn, sh.C, gtok.data(), gwte.data(), gwpe.data(), gx.data(),
                               gtgt.data());
    cuda::embedding_backward<T>(sh.n, sh.Tn, sh.C, sh.V, gtok.data(), gdx.data(), gdwte.data(),
                                gdwpe.data());
    device_sync();
    for (int s = 0; s < sh.n; ++s)
      for (int p = 0; p < sh.Tn; ++p) {
        const size_t r = static_cast<size_t>(s) * sh.Tn + p;
        const int32_t t = tok[static_cast<size_t>(s) * (sh.Tn + 1) + p];
        for (int i = 0; i < sh.C; ++i) {
          dwte[static_cast<size_t>(t) * sh.C + i] += dx[r * sh.C + i];
          dwpe[static_cast<size_t>(p) * sh.C + i] += dx[r * sh.C + i];
        }
      }
    // Single additions in the reference's order: the same bits.
    check_equal(gx.to_host(), x, "embedding_forward x");
    check_equal(gtgt.to_host(), tgt, "embedding_forward targets");
    check_equal(gdwte.to_host(), dwte, "embedding_backward dwte (scatter-add)");
    check_equal(gdwpe.to_host(), dwpe, "embedding_backward dwpe");
  }
}

template <class T>
void check_layernorm() {
  uint64_t seed = 400;
  for (const Shape& sh : kShapes) {
    CAPTURE(sh.C);
    const size_t R = static_cast<size_t>(sh.n) * sh.Tn;
    const size_t C = static_cast<size_t>(sh.C);
    auto x = randn<T>(R * C, ++seed, 2.0);
    for (size_t i = 0; i < x.size(); ++i) x[i] += static_cast<T>(i % 7);  // rows off zero mean
    auto g = randn<T>(C, ++seed), b = randn<T>(C, ++seed), dy = randn<T>(R * C, ++seed);
    for (auto& v : g) v += T(1);
    auto dx = randn<T>(R * C, ++seed), dg = randn<T>(C, ++seed), db = randn<T>(C, ++seed);
    std::vector<T> y(R * C), xhat(R * C), rstd(R);
    auto gx = to_device(x), gg = to_device(g), gb = to_device(b), gdy = to_device(dy);
    auto gdx = to_device(dx), gdg = to_device(dg), gdb = to_device(db);
    cuda::DeviceBuffer<T> gy(y.size()), gxhat(xhat.size()), grstd(R);
    tref::layernorm_forward(R, sh.C, x.data(), g.data(), b.data(), y.data(), xhat.data(),
                            rstd.data());
    tref::layernorm_backward(R, sh.C, xhat.data(), rstd.data(), g.data(), dy.data(), dx.data(),
                             dg.data(), db.data());
    cuda::layernorm_forward<T>(R, sh.C, gx.data(), gg.data(), gb.data(), gy.data(), gxhat.data(),
                               grstd.data());
    cuda::layernorm_backward<T>(R, sh.C, gxhat.data(), grstd.data(), gg.data(), gdy.data(),
                                gdx.data(), gdg.data(), gdb.data());
    device_sync();
    expect_close(gy, y, "layernorm_forward y");
    expect_close(gxhat, xhat, "layernorm_forward xhat");
    expect_close(grstd, rstd, "layernorm_forward rstd");
    expect_close(gdx, dx, "layernorm_backward dx (added)");
    expect_close(gdg, dg, "layernorm_backward dgamma (accumulated)");
    expect_close(gdb, db, "layernorm_backward dbeta (accumulated)");
  }
}

template <class T>
void check_gelu_residual() {
  const size_t count = 10007;
  auto x = randn<T>(count, 501, 3.0), dy = randn<T>(count, 502), a = randn<T>(count, 503);
  std::vector<T> y(count), dx(count), sum(a);
  tref::gelu_forward(count, x.data(), y.data());
  tref::gelu_backward(count, x.data(), dy.data(), dx.data());
  for (size_t i = 0; i < count; ++i) sum[i] += x[i];
  auto gx = to_device(x), gdy = to_device(dy), ga = to_device(a);
  cuda::DeviceBuffer<T> gy(count), gdx(count);
  cuda::gelu_forward<T>(count, gx.data(), gy.data());
  cuda::gelu_backward<T>(count, gx.data(), gdy.data(), gdx.data());
  cuda::residual_add<T>(count, ga.data(), gx.data());
  device_sync();
  expect_close(gy, y, "gelu_forward");
  expect_close(gdx, dx, "gelu_backward");
  check_equal(ga.to_host(), sum, "residual_add");
  // In place (dx aliasing dy), as the header allows.
  cuda::gelu_backward<T>(count, gx.data(), gdy.data(), gdy.data());
  device_sync();
  expect_close(gdy, dx, "gelu_backward in place");
}

// The GPT's products through cuda/linear_cuda.cu (overwriting dW, db) against tref's
// (accumulating into zeros), at the block's shapes C -> 3C and 4C -> C.
template <class T>
void check_linear() {
  uint64_t seed = 600;
  for (const std::array<int, 3>& shape :
       std::vector<std::array<int, 3>>{{111, 48, 144}, {70, 160, 40}}) {
    const int rows = shape[0], in = shape[1], out = shape[2];
    CAPTURE(in);
    CAPTURE(out);
    const size_t R = static_cast<size_t>(rows);
    auto x = randn<T>(R * in, ++seed), W = randn<T>(static_cast<size_t>(out) * in, ++seed, 0.2);
    auto b = randn<T>(static_cast<size_t>(out), ++seed), dy = randn<T>(R * out, ++seed);
    std::vector<T> y(R * out), dx(R * in), dW(W.size(), T(0)), db(b.size(), T(0));
    tref::linear_forward(R, in, out, x.data(), W.data(), b.data(), y.data());
    tref::linear_backward(R, in, out, x.data(), W.data(), dy.data(), dx.data(), dW.data(),
                          db.data());
    auto gx = to_device(x), gW = to_device(W), gb = to_device(b), gdy = to_device(dy);
    cuda::DeviceBuffer<T> gy(y.size()), gdx(dx.size()), gdW(dW.size()), gdb(db.size());
    cuda::linear_forward<T>(rows, in, out, gx.data(), gW.data(), gb.data(), gy.data());
    cuda::linear_backward<T>(rows, in, out, gx.data(), gW.data(), gdy.data(), gdx.data(),
                             gdW.data(), gdb.data());
    device_sync();
    expect_close(gy, y, "linear_forward y");
    expect_close(gdx, dx, "linear_backward dx");
    expect_close(gdW, dW, "linear_backward dW");
    expect_close(gdb, db, "linear_backward db");
  }
}

template <class T>
void check_attention() {
  uint64_t seed = 700;
  for (const Shape& sh : kShapes) {
    CAPTURE(sh.n);
    CAPTURE(sh.Tn);
    CAPTURE(sh.C);
    CAPTURE(sh.H);
    const size_t R = static_cast<size_t>(sh.n) * sh.Tn;
    const size_t PP = static_cast<size_t>(sh.n) * sh.H * sh.Tn * sh.Tn;
    // Scores of a few units: softmax rows neither flat nor one-hot.
    const auto qkv = randn<T>(R * 3 * sh.C, ++seed, 0.6);
    const auto dy = randn<T>(R * sh.C, ++seed);
    std::vector<T> P(PP), y(R * sh.C), dqkv(R * 3 * sh.C);
    tref::attention_forward(sh.n, sh.Tn, sh.C, sh.H, qkv.data(), P.data(), y.data());
    tref::attention_backward(sh.n, sh.Tn, sh.C, sh.H, qkv.data(), P.data(), dy.data(), dqkv.data());
    auto gqkv = to_device(qkv), gdy = to_device(dy);
    // Poison the outputs: every element must be written (P's upper triangle included).
    auto gP = to_device(std::vector<T>(PP, T(7))), gy = to_device(std::vector<T>(y.size(), T(7)));
    auto gdqkv = to_device(std::vector<T>(dqkv.size(), T(7)));
    cuda::DeviceBuffer<T> gdS(PP);
    cuda::attention_forward<T>(sh.n, sh.Tn, sh.C, sh.H, gqkv.data(), gP.data(), gy.data());
    cuda::attention_backward<T>(sh.n, sh.Tn, sh.C, sh.H, gqkv.data(), gP.data(), gdy.data(),
                                gdqkv.data(), gdS.data());
    device_sync();
    expect_close(gP, P, "attention_forward P (causal softmax)");
    expect_close(gy, y, "attention_forward y");
    expect_close(gdqkv, dqkv, "attention_backward dqkv");
  }
}

template <class T>
void check_tied_head() {
  uint64_t seed = 800;
  for (const Shape& sh : kShapes) {
    CAPTURE(sh.V);
    CAPTURE(sh.C);
    const size_t R = static_cast<size_t>(sh.n) * sh.Tn;
    const auto xf = randn<T>(R * sh.C, ++seed);
    const auto wte = randn<T>(static_cast<size_t>(sh.V) * sh.C, ++seed, 0.3);
    const auto tgt = random_tokens(R, sh.V, ++seed);
    const auto dwte0 = randn<T>(wte.size(), ++seed);
    auto dwte = dwte0;
    const double scale = 1.0 / static_cast<double>(R);
    std::vector<T> logits_row(static_cast<size_t>(sh.V)), dxf(R * sh.C);
    const T total = tref::tied_head_ce(R, sh.C, sh.V, xf.data(), wte.data(), tgt.data(),
                                       logits_row.data(), dxf.data(), dwte.data(), scale, nullptr);
    auto gxf = to_device(xf), gwte = to_device(wte), gdwte = to_device(dwte0);
    auto gtgt = to_device(tgt);
    cuda::DeviceBuffer<T> glogits(R * sh.V), gdxf(dxf.size()), gloss(1);
    cuda::tied_head_ce<T>(R, sh.C, sh.V, gxf.data(), gwte.data(), gtgt.data(), glogits.data(),
                          gdxf.data(), gdwte.data(), scale, gloss.data());
    device_sync();
    check_close(gloss.to_host(), std::vector<T>{total}, Tol<T>::atol, Tol<T>::rtol,
                "tied_head_ce loss sum");
    expect_close(gdxf, dxf, "tied_head_ce dxf");
    expect_close(gdwte, dwte, "tied_head_ce dwte (accumulated)");
    // Evaluation form: the loss only, nothing written to the gradients.
    gdwte.upload(dwte0);
    gloss.zero();
    cuda::tied_head_ce<T>(R, sh.C, sh.V, gxf.data(), gwte.data(), gtgt.data(), glogits.data(),
                          nullptr, nullptr, scale, gloss.data());
    device_sync();
    check_close(gloss.to_host(), std::vector<T>{total}, Tol<T>::atol, Tol<T>::rtol,
                "tied_head_ce loss sum (no gradient)");
    check_equal(gdwte.to_host(), dwte0, "tied_head_ce without gradient leaves dwte");
  }
}

// ---- the whole pass ---------------------------------------------------------------------

// Weights far from the initialization (tests/unit/test_gpt.cpp's spread_weights): matrices
// N(0, 0.3^2), LayerNorm gains 1 + N(0, 0.2^2), biases N(0, 0.1^2).
std::vector<double> spread_weights(const models::GptModel& m, uint64_t seed) {
  std::vector<double> w(m.num_params());
  core::Rng rng(seed);
  for (const models::TensorInfo& t : m.tensors()) {
    const bool gain =
        t.name.find("ln_") != std::string::npos && t.name.find("weight") != std::string::npos;
    for (size_t i = t.offset; i < t.offset + t.size; ++i)
      w[i] = gain ? 1.0 + 0.2 * rng.normal() : (t.shape.size() == 1 ? 0.1 : 0.3) * rng.normal();
  }
  return w;
}

models::Batch token_batch(const models::GptConfig& c, int n, uint64_t seed) {
  models::Batch b;
  b.n = n;
  b.label = random_tokens(static_cast<size_t>(n) * (c.block + 1), c.vocab, seed);
  return b;
}

// Worst over tensors of ||got - ref|| / ||ref||, every tensor's value printed.
template <class A>
double worst_tensor_rel(const models::GptModel& m, const std::vector<A>& got,
                        const std::vector<double>& ref, const char* what) {
  double worst = 0;
  std::ostringstream os;
  for (const models::TensorInfo& t : m.tensors()) {
    double dd = 0, rr = 0;
    for (size_t i = t.offset; i < t.offset + t.size; ++i) {
      const double d = static_cast<double>(got[i]) - ref[i];
      dd += d * d;
      rr += ref[i] * ref[i];
    }
    const double rel = std::sqrt(dd) / std::max(1e-300, std::sqrt(rr));
    worst = std::isnan(rel) ? rel : std::max(worst, rel);
    os << "  " << t.name << " " << rel << "\n";
  }
  MESSAGE(std::string(what) << ": worst relative error per tensor " << worst << "\n" << os.str());
  return worst;
}

// A config whose head is wider than a warp and whose rows are not a multiple of 8 warps.
models::GptConfig pass_config() {
  models::GptConfig c;
  c.layers = 2, c.heads = 2, c.d_model = 80, c.block = 37, c.vocab = 23;
  return c;
}

}  // namespace

TEST_CASE_TEMPLATE("cuda gpt embedding forward/backward vs reference (scatter-add)", T, float,
                   double) {
  check_embedding<T>();
}
TEST_CASE_TEMPLATE("cuda gpt layernorm forward/backward vs reference", T, float, double) {
  check_layernorm<T>();
}
TEST_CASE_TEMPLATE("cuda gpt gelu (tanh) forward/backward and residual add vs reference", T, float,
                   double) {
  check_gelu_residual<T>();
}
TEST_CASE_TEMPLATE("cuda gpt linear (c_attn, mlp.c_proj shapes) vs reference", T, float, double) {
  check_linear<T>();
}
TEST_CASE_TEMPLATE("cuda gpt causal attention forward/backward vs reference", T, float, double) {
  check_attention<T>();
}
TEST_CASE_TEMPLATE("cuda gpt tied head + cross-entropy vs reference", T, float, double) {
  check_tied_head<T>();
}

TEST_CASE("cuda gpt device pass vs models::gpt_reference_pass (double and float)") {
  const models::GptConfig c = pass_config();
  const models::GptModel m(c);
  const std::vector<double> wd = spread_weights(m, 61);
  const models::Batch b = token_batch(c, 3, 62);
  std::vector<double> gref(wd.size());
  models::GptActs<double> acts;
  const double lref = models::gpt_reference_pass<double>(c, m.tensors(), wd.data(), b.label.data(),
                                                         b.n, gref.data(), acts);
  cuda::Stream stream;
  auto gtok = to_device(b.label);
  {  // double: the same algorithm as the reference
    cuda::GptDeviceNet<double> net(c, m.tensors(), 4, stream.get());
    auto gw = to_device(wd);
    cuda::DeviceBuffer<double> gg(wd.size());
    const double l = net.pass(gw.data(), gtok.data(), b.n, gg.data());
    CHECK(l == doctest::Approx(lref).epsilon(1e-12));
    const std::vector<double> g = gg.to_host();
    CHECK(worst_tensor_rel(m, g, gref, "device pass (double) vs reference (double)") < 1e-10);
    check_close(g, gref, 1e-12, 1e-8, "device pass (double) gradient");
    models::EvalResult ev;
    const double le = net.pass(gw.data(), gtok.data(), b.n, nullptr, &ev);
    CHECK(le == doctest::Approx(lref).epsilon(1e-12));
    CHECK(ev.count == b.n * c.block);
  }
  {  // float against the double oracle at the same (rounded) weights
    const std::vector<float> wf(wd.begin(), wd.end());
    const std::vector<double> wfd(wf.begin(), wf.end());
    std::vector<double> gref_f(wd.size());
    const double lref_f = models::gpt_reference_pass<double>(
        c, m.tensors(), wfd.data(), b.label.data(), b.n, gref_f.data(), acts);
    cuda::GptDeviceNet<float> net(c, m.tensors(), 3, stream.get());
    auto gw = to_device(wf);
    cuda::DeviceBuffer<float> gg(wf.size());
    const double l = net.pass(gw.data(), gtok.data(), b.n, gg.data());
    CHECK(l == doctest::Approx(lref_f).epsilon(1e-5));
    // The CPU float pass meets 1e-4 against the same oracle (tests/unit/test_gpt.cpp).
    CHECK(worst_tensor_rel(m, gg.to_host(), gref_f, "device pass (float) vs reference (double)") <
          1e-4);
  }
}

TEST_CASE(
    "cuda device: CudaGptModel matches the CPU gpt (loss_grad in one and in several chunks, "
    "evaluate)") {
  models::GptConfig c;  // head width 16: the CPU model runs its fast path
  c.layers = 2, c.heads = 2, c.d_model = 32, c.block = 16, c.vocab = 29;
  const models::GptModel cpu(c);
  const cuda::CudaGptModel gpu(cpu);
  CHECK(gpu.name() == "gpt");
  CHECK(gpu.num_params() == cpu.num_params());
  std::vector<float> w(cpu.num_params());
  cpu.init_params(w, 5);
  {  // away from the near-identity initialization
    const std::vector<double> wd = spread_weights(cpu, 71);
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(0.5 * w[i] + 0.5 * wd[i]);
  }
  const int big = cuda::kGptDeviceChunk + 13;  // two chunks on the device
  auto cws = cpu.make_workspace(big);
  auto gws = gpu.make_workspace(big);
  for (int n : {5, big}) {
    CAPTURE(n);
    const models::Batch b = token_batch(c, n, 72 + n);
    std::vector<float> gc(w.size()), gg(w.size());
    const double lc = cpu.loss_grad(w, b, gc, *cws, 0);
    const double lg = gpu.loss_grad(w, b, gg, *gws, 0);
    CHECK(lg == doctest::Approx(lc).epsilon(1e-5));
    const std::vector<double> gcd(gc.begin(), gc.end());
    CHECK(worst_tensor_rel(cpu, gg, gcd, "CudaGptModel vs GptModel (float)") < 1e-4);
    const models::EvalResult ec = cpu.evaluate(w, b, *cws), eg = gpu.evaluate(w, b, *gws);
    CHECK(eg.count == ec.count);
    CHECK(eg.loss_sum == doctest::Approx(ec.loss_sum).epsilon(1e-5));
    CHECK_FALSE(eg.has_accuracy);
  }
  // A token outside the vocabulary is refused on the host (a kernel could not report it).
  models::Batch bad = token_batch(c, 2, 80);
  bad.label[5] = c.vocab;
  std::vector<float> g(w.size());
  CHECK_THROWS(gpu.loss_grad(w, bad, g, *gws, 0));
}
