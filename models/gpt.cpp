#include "models/gpt.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "core/rng.h"
#include "models/text_data.h"
#include "models/transformer_fast.h"
#include "models/transformer_layers.h"

namespace wb::models {

template <class T>
void GptActs<T>::resize(const GptConfig& c, int n_windows) {
  n = n_windows;
  const size_t R = static_cast<size_t>(n) * c.block, C = static_cast<size_t>(c.d_model);
  layer.resize(static_cast<size_t>(c.layers));
  for (Layer& L : layer) {
    L.xin.resize(R * C), L.ln1_xhat.resize(R * C), L.ln1_rstd.resize(R), L.a.resize(R * C);
    L.qkv.resize(R * 3 * C);
    L.P.resize(static_cast<size_t>(n) * c.heads * c.block * c.block);
    L.y.resize(R * C), L.xmid.resize(R * C), L.ln2_xhat.resize(R * C), L.ln2_rstd.resize(R);
    L.m.resize(R * C), L.h.resize(R * 4 * C), L.gact.resize(R * 4 * C);
  }
  xL.resize(R * C), lnf_xhat.resize(R * C), lnf_rstd.resize(R), xf.resize(R * C);
  logits_row.resize(static_cast<size_t>(c.vocab));
  dx.resize(R * C), dxf.resize(R * C), dtmp.resize(R * C), dqkv.resize(R * 3 * C);
  dh.resize(R * 4 * C), dgact.resize(R * 4 * C);
  tgt.resize(R);
}
template struct GptActs<float>;
template struct GptActs<double>;
template struct GptActs<Dual<double>>;

template <class T>
T gpt_reference_pass(const GptConfig& c, const std::vector<TensorInfo>& t, const T* w,
                     const int32_t* tokens, int n, T* g, GptActs<T>& A, EvalResult* eval) {
  using GT = GptTensors;
  const int C = c.d_model, Tn = c.block, V = c.vocab, H = c.heads;
  const size_t R = static_cast<size_t>(n) * Tn;
  if (A.n != n || A.layer.size() != static_cast<size_t>(c.layers)) A.resize(c, n);
  auto P = [&](int idx) { return w + t[static_cast<size_t>(idx)].offset; };
  auto G = [&](int idx) { return g + t[static_cast<size_t>(idx)].offset; };
  // Embeddings and targets.
  T* x = A.layer[0].xin.data();
  for (int s = 0; s < n; ++s)
    for (int p = 0; p < Tn; ++p) {
      const int32_t tok = tokens[static_cast<size_t>(s) * (Tn + 1) + p];
      WB_ASSERT(tok >= 0 && tok < V, "gpt: token id out of the vocabulary");
      A.tgt[static_cast<size_t>(s) * Tn + p] = tokens[static_cast<size_t>(s) * (Tn + 1) + p + 1];
      const T* e = P(GT::wte()) + static_cast<size_t>(tok) * C;
      const T* q = P(GT::wpe()) + static_cast<size_t>(p) * C;
      T* xr = x + (static_cast<size_t>(s) * Tn + p) * C;
      for (int i = 0; i < C; ++i) xr[i] = e[i] + q[i];
    }
  // Blocks.
  for (int l = 0; l < c.layers; ++l) {
    auto& L = A.layer[static_cast<size_t>(l)];
    auto W = [&](int k) { return P(GT::layer(l, k)); };
    tref::layernorm_forward(R, C, L.xin.data(), W(GT::kLn1W), W(GT::kLn1B), L.a.data(),
                            L.ln1_xhat.data(), L.ln1_rstd.data());
    tref::linear_forward(R, C, 3 * C, L.a.data(), W(GT::kAttnW), W(GT::kAttnB), L.qkv.data());
    tref::attention_forward(n, Tn, C, H, L.qkv.data(), L.P.data(), L.y.data());
    tref::linear_forward(R, C, C, L.y.data(), W(GT::kProjW), W(GT::kProjB), L.xmid.data());
    for (size_t i = 0; i < R * C; ++i) L.xmid[i] += L.xin[i];
    tref::layernorm_forward(R, C, L.xmid.data(), W(GT::kLn2W), W(GT::kLn2B), L.m.data(),
                            L.ln2_xhat.data(), L.ln2_rstd.data());
    tref::linear_forward(R, C, 4 * C, L.m.data(), W(GT::kFcW), W(GT::kFcB), L.h.data());
    tref::gelu_forward(R * 4 * C, L.h.data(), L.gact.data());
    T* out = l + 1 < c.layers ? A.layer[static_cast<size_t>(l) + 1].xin.data() : A.xL.data();
    tref::linear_forward(R, 4 * C, C, L.gact.data(), W(GT::kMlpW), W(GT::kMlpB), out);
    for (size_t i = 0; i < R * C; ++i) out[i] += L.xmid[i];
  }
  tref::layernorm_forward(R, C, A.xL.data(), P(GT::lnf_w(c.layers)), P(GT::lnf_b(c.layers)),
                          A.xf.data(), A.lnf_xhat.data(), A.lnf_rstd.data());
  if (g)
    for (size_t i = 0; i < layout_size(t); ++i) g[i] = T(0);
  int64_t correct = 0;
  const T total = tref::tied_head_ce(R, C, V, A.xf.data(), P(GT::wte()), A.tgt.data(),
                                     A.logits_row.data(), g ? A.dxf.data() : nullptr,
                                     g ? G(GT::wte()) : nullptr, 1.0 / static_cast<double>(R),
                                     eval ? &correct : nullptr);
  if (eval) {
    eval->loss_sum = static_cast<double>(value_of(total));
    eval->count = static_cast<int64_t>(R);
    eval->correct = 0;
    eval->has_accuracy = false;
  }
  if (!g) return total / T(static_cast<double>(R));
  // Backward.
  std::fill(A.dx.begin(), A.dx.begin() + static_cast<std::ptrdiff_t>(R * C), T(0));
  tref::layernorm_backward(R, C, A.lnf_xhat.data(), A.lnf_rstd.data(), P(GT::lnf_w(c.layers)),
                           A.dxf.data(), A.dx.data(), G(GT::lnf_w(c.layers)),
                           G(GT::lnf_b(c.layers)));
  for (int l = c.layers - 1; l >= 0; --l) {
    auto& L = A.layer[static_cast<size_t>(l)];
    auto W = [&](int k) { return P(GT::layer(l, k)); };
    auto D = [&](int k) { return G(GT::layer(l, k)); };
    // MLP: dx is the gradient at the block output = at xmid (residual) + through the MLP.
    tref::linear_backward(R, 4 * C, C, L.gact.data(), W(GT::kMlpW), A.dx.data(), A.dgact.data(),
                          D(GT::kMlpW), D(GT::kMlpB));
    tref::gelu_backward(R * 4 * C, L.h.data(), A.dgact.data(), A.dh.data());
    tref::linear_backward(R, C, 4 * C, L.m.data(), W(GT::kFcW), A.dh.data(), A.dtmp.data(),
                          D(GT::kFcW), D(GT::kFcB));
    tref::layernorm_backward(R, C, L.ln2_xhat.data(), L.ln2_rstd.data(), W(GT::kLn2W),
                             A.dtmp.data(), A.dx.data(), D(GT::kLn2W), D(GT::kLn2B));
    // Attention: dx is now the gradient at xmid = at xin (residual) + through attention.
    tref::linear_backward(R, C, C, L.y.data(), W(GT::kProjW), A.dx.data(), A.dtmp.data(),
                          D(GT::kProjW), D(GT::kProjB));
    tref::attention_backward(n, Tn, C, H, L.qkv.data(), L.P.data(), A.dtmp.data(),
                             A.dqkv.data());
    tref::linear_backward(R, C, 3 * C, L.a.data(), W(GT::kAttnW), A.dqkv.data(), A.dtmp.data(),
                          D(GT::kAttnW), D(GT::kAttnB));
    tref::layernorm_backward(R, C, L.ln1_xhat.data(), L.ln1_rstd.data(), W(GT::kLn1W),
                             A.dtmp.data(), A.dx.data(), D(GT::kLn1W), D(GT::kLn1B));
  }
  for (int s = 0; s < n; ++s)
    for (int p = 0; p < Tn; ++p) {
      const int32_t tok = tokens[static_cast<size_t>(s) * (Tn + 1) + p];
      const T* d = A.dx.data() + (static_cast<size_t>(s) * Tn + p) * C;
      T* ge = G(GT::wte()) + static_cast<size_t>(tok) * C;
      T* gp = G(GT::wpe()) + static_cast<size_t>(p) * C;
      for (int i = 0; i < C; ++i) ge[i] += d[i], gp[i] += d[i];
    }
  return total / T(static_cast<double>(R));
}

template float gpt_reference_pass<float>(const GptConfig&, const std::vector<TensorInfo>&,
                                         const float*, const int32_t*, int, float*,
                                         GptActs<float>&, EvalResult*);
template double gpt_reference_pass<double>(const GptConfig&, const std::vector<TensorInfo>&,
                                           const double*, const int32_t*, int, double*,
                                           GptActs<double>&, EvalResult*);
template Dual<double> gpt_reference_pass<Dual<double>>(const GptConfig&,
                                                       const std::vector<TensorInfo>&,
                                                       const Dual<double>*, const int32_t*, int,
                                                       Dual<double>*, GptActs<Dual<double>>&,
                                                       EvalResult*);

// ---- the model ----------------------------------------------------------------------

namespace {

// The fast path's buffers, or the reference loops' activations where it does not fit.
// The fast buffers hold at most kFastChunk windows (~3 MB a window at the shakespeare-char
// shape: every activation is kept for the backward): a larger batch (the evaluation's
// chunks of 256 windows) runs in fixed chunks, so the workspace stays ~100 MB instead of
// growing with the batch.
constexpr int kFastChunk = 32;
struct GptWorkspace final : Workspace {
  std::unique_ptr<GptFastWorkspace> fast;
  std::vector<float> gchunk;  // a chunk's gradient, when batches exceed kFastChunk
  GptActs<float> acts;
  int max_batch = 0;
};

}  // namespace

GptModel::GptModel(const GptConfig& c) : c_(c), layout_(gpt_layout(c)) {
  if (gpt_fast_fits(c_)) fast_ = std::make_unique<GptFast>(c_, layout_);
}
GptModel::~GptModel() = default;

void GptModel::init_params(std::span<float> w, uint64_t seed) const {
  WB_ASSERT(w.size() == num_params(), "gpt init_params: buffer size");
  const double resid_std = 0.02 / std::sqrt(2.0 * c_.layers);
  for (size_t i = 0; i < layout_.size(); ++i) {
    const TensorInfo& ti = layout_[i];
    float* p = w.data() + ti.offset;
    const std::string& nm = ti.name;
    const auto ends = [&](const char* suf) {
      const std::string s(suf);
      return nm.size() >= s.size() && nm.compare(nm.size() - s.size(), s.size(), s) == 0;
    };
    // One stream per tensor (as the image models): a new layer leaves the others' values.
    core::Rng rng = core::Rng::stream({seed, 0x677074ULL /* "gpt" */, i});
    if (ends("ln_1.weight") || ends("ln_2.weight") || ends("ln_f.weight")) {
      std::fill(p, p + ti.size, 1.0f);
    } else if (ti.shape.size() == 1) {
      std::fill(p, p + ti.size, 0.0f);  // biases (LayerNorm and Linear)
    } else {
      const double std = ends("c_proj.weight") ? resid_std : 0.02;
      for (size_t k = 0; k < ti.size; ++k) p[k] = static_cast<float>(std * rng.normal());
    }
  }
}

std::unique_ptr<Workspace> GptModel::make_workspace(int max_batch) const {
  auto ws = std::make_unique<GptWorkspace>();
  ws->max_batch = std::max(1, max_batch);
  if (fast_) {
    ws->fast = fast_->make_workspace(std::min(ws->max_batch, kFastChunk));
    if (ws->max_batch > kFastChunk) ws->gchunk.resize(num_params());
  } else
    ws->acts.resize(c_, ws->max_batch);
  return ws;
}

size_t GptModel::workspace_bytes(int max_batch) const {
  if (fast_)
    return sizeof(float) * (fast_->workspace_floats(std::min(max_batch, kFastChunk)) +
                            (max_batch > kFastChunk ? num_params() : 0));
  const size_t R = static_cast<size_t>(std::max(1, max_batch)) * c_.block,
               C = static_cast<size_t>(c_.d_model);
  const size_t per_layer = R * C * 7 + R * 2 + R * 3 * C + R * 8 * C +
                           static_cast<size_t>(std::max(1, max_batch)) * c_.heads * c_.block * c_.block;
  return sizeof(float) * (per_layer * c_.layers + R * C * 8 + R * 11 * C) + 4 * R;
}

void GptModel::check_batch(const Batch& b, size_t w_size) const {
  WB_ASSERT(w_size == num_params(), "gpt: parameter buffer of " + std::to_string(w_size) +
                                        " floats, expected " + std::to_string(num_params()));
  WB_ASSERT(b.n >= 1 && b.label.size() >= static_cast<size_t>(b.n) * (c_.block + 1),
            "gpt: batch holds fewer than n * (block + 1) tokens");
}

double GptModel::loss_grad(std::span<const float> w, const Batch& b, std::span<float> g,
                           Workspace& ws, uint64_t) const {
  check_batch(b, w.size());
  WB_ASSERT(g.size() == w.size(), "gradient buffer size");
  auto* gw = dynamic_cast<GptWorkspace*>(&ws);
  WB_ASSERT(gw && b.n <= gw->max_batch, "gpt: workspace not made by this model or too small");
  if (gw->fast) {
    if (b.n <= kFastChunk) return fast_->pass(w.data(), b.label.data(), b.n, g.data(), *gw->fast);
    // Fixed chunks of kFastChunk windows: the mean loss and its gradient are the chunks'
    // weighted by their share of the windows (the same chunks every time: deterministic).
    std::fill(g.begin(), g.end(), 0.0f);
    double loss = 0;
    for (int s0 = 0; s0 < b.n; s0 += kFastChunk) {
      const int nk = std::min(kFastChunk, b.n - s0);
      const double share = static_cast<double>(nk) / b.n;
      loss += share * fast_->pass(w.data(), b.label.data() + static_cast<size_t>(s0) * (c_.block + 1),
                                  nk, gw->gchunk.data(), *gw->fast);
      const float sf = static_cast<float>(share);
      for (size_t i = 0; i < g.size(); ++i) g[i] += sf * gw->gchunk[i];
    }
    return loss;
  }
  gw->acts.n = b.n;  // the buffers hold max_batch windows: no reallocation
  return gpt_reference_pass<float>(c_, layout_, w.data(), b.label.data(), b.n, g.data(),
                                   gw->acts);
}

EvalResult GptModel::evaluate(std::span<const float> w, const Batch& b, Workspace& ws) const {
  check_batch(b, w.size());
  auto* gw = dynamic_cast<GptWorkspace*>(&ws);
  WB_ASSERT(gw && b.n <= gw->max_batch, "gpt: workspace not made by this model or too small");
  EvalResult ev;
  if (gw->fast) {
    for (int s0 = 0; s0 < b.n; s0 += kFastChunk) {  // sums: chunks add up
      EvalResult part;
      fast_->pass(w.data(), b.label.data() + static_cast<size_t>(s0) * (c_.block + 1),
                  std::min(kFastChunk, b.n - s0), nullptr, *gw->fast, &part);
      ev.add(part);
    }
    return ev;
  }
  gw->acts.n = b.n;
  gpt_reference_pass<float>(c_, layout_, w.data(), b.label.data(), b.n, nullptr, gw->acts, &ev);
  return ev;
}

double GptModel::reference_loss_grad(std::span<const float> w, const Batch& b,
                                     std::span<float> g) const {
  check_batch(b, w.size());
  GptActs<float> acts;
  return gpt_reference_pass<float>(c_, layout_, w.data(), b.label.data(), b.n, g.data(), acts);
}

double GptModel::loss_grad_f64(std::span<const double> w, const Batch& b, std::span<double> g,
                               uint64_t) const {
  check_batch(b, w.size());
  WB_ASSERT(g.size() == w.size(), "gradient buffer size");
  GptActs<double> acts;
  return gpt_reference_pass<double>(c_, layout_, w.data(), b.label.data(), b.n, g.data(), acts);
}

void GptModel::hvp_f64(std::span<const double> w, std::span<const double> v, const Batch& b,
                       std::span<double> hv, uint64_t) const {
  check_batch(b, w.size());
  WB_ASSERT(v.size() == w.size() && hv.size() == w.size(), "hvp buffer sizes");
  // Forward-over-reverse: the gradient at w + v*eps; its eps part is H v (models/dual.h).
  std::vector<Dual<double>> wd(w.size()), gd(w.size());
  for (size_t i = 0; i < w.size(); ++i) wd[i] = Dual<double>(w[i], v[i]);
  GptActs<Dual<double>> acts;
  gpt_reference_pass<Dual<double>>(c_, layout_, wd.data(), b.label.data(), b.n, gd.data(), acts);
  for (size_t i = 0; i < w.size(); ++i) hv[i] = gd[i].d;
}

double GptModel::flops_per_sample() const {
  const double C = c_.d_model, Tn = c_.block, V = c_.vocab;
  // Per token and layer: qkv 3C^2, projection C^2, MLP 8C^2; attention scores and the
  // weighted sum: C multiply-adds per attended key each, (Tn + 1) / 2 keys on average.
  const double fwd_tok = c_.layers * (12 * C * C + 2 * C * (Tn + 1) / 2) + V * C;
  // Backward: weight and data gradient of every product (2x forward).
  return 2.0 * 3.0 * fwd_tok * Tn;
}

// ---- registration ---------------------------------------------------------------------

void GptParams::describe(core::ParamSet<GptParams>& p) {
  p.field("layers", &GptParams::layers, "transformer blocks").min(1);
  p.field("heads", &GptParams::heads, "attention heads per block").min(1);
  p.field("d_model", &GptParams::d_model, "embedding width (a multiple of heads)").min(1);
  p.field("block", &GptParams::block, "context length in bytes (a window is block + 1 bytes)")
      .min(1);
  p.field("vocab", &GptParams::vocab,
          "0: the distinct bytes of the text (sorted), 256: every byte value");
  p.field("data_path", &GptParams::data_path,
          "text file; empty: the King James Bible exported once from Debian's bible-kjv");
  p.field("eval_windows", &GptParams::eval_windows,
          "evaluate on the first N validation windows only (0 = all of them)")
      .min(0);
  p.check([](const GptParams& s, const core::Where& w) {
    if (s.d_model % s.heads != 0) w.key("d_model").fail("must be a multiple of heads");
    if (s.vocab != 0 && s.vocab != 256) w.key("vocab").fail("must be 0 or 256");
  });
}

namespace {

class GptMaker final : public TaskMaker {
 public:
  GptMaker(const GptParams& p, uint64_t /*data order is the sampler's*/) : p_(p) {}
  Task make() override {
    auto corpus = load_text_corpus(p_.data_path, p_.vocab, p_.block);
    GptConfig c;
    c.layers = p_.layers, c.heads = p_.heads, c.d_model = p_.d_model, c.block = p_.block;
    c.vocab = corpus->vocab;
    Task t;
    t.model = std::make_unique<GptModel>(c);
    t.train = make_text_windows(corpus, TextSplit::kTrain, p_.block);
    t.test = make_text_windows(corpus, TextSplit::kValidation, p_.block,
                               static_cast<size_t>(p_.eval_windows));
    return t;
  }

 private:
  GptParams p_;
};

}  // namespace

WB_REGISTER_MODEL("gpt", GptMaker, GptParams,
                  "char-level GPT-2-layout transformer (pre-LN, tied head; nanoGPT init) on the "
                  "KJV Bible or a text file, last 10% validation");

}  // namespace wb::models
