#include "models/resnet.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <mutex>

#include "core/error.h"
#include "core/rng.h"
#include "models/image_dataset.h"
#include "models/layers.h"
#include "models/resnet_fast.h"

namespace wb::models {

// ---------------------------------------------------------------- the plan
ResnetModel::ResnetModel(const ResnetConfig& cfg) : cfg_(cfg) {
  WB_ASSERT(cfg.depth >= 8 && (cfg.depth - 2) % 6 == 0, "resnet depth must be 6n+2, n >= 1");
  WB_ASSERT(cfg.width >= 1 && cfg.c >= 1 && cfg.h >= 1 && cfg.w >= 1, "resnet shape");
  const int nb = (cfg.depth - 2) / 6;
  const bool has_norm = cfg.norm != NormKind::kNone;
  const std::string nn = cfg.norm == NormKind::kGroup ? "gn" : "bn";
  std::vector<std::pair<std::string, std::vector<int64_t>>> t;
  std::vector<size_t*> offs;  // filled after make_layout, in the order of t
  size_t state = 0;
  auto add_conv = [&](ConvL& L, const std::string& name, ConvGeom g) {
    L.g = g;
    t.push_back({name + ".weight", {g.cout, g.cin, g.k, g.k}});
    offs.push_back(&L.w_off);
    if (!has_norm) {
      t.push_back({name + ".bias", {g.cout}});
      offs.push_back(&L.b_off);
    }
  };
  auto add_norm = [&](NormL& L, const std::string& name, int c, int hw) {
    L.c = c;
    L.hw = hw;
    if (!has_norm) return;
    t.push_back({name + ".weight", {c}});
    offs.push_back(&L.g_off);
    t.push_back({name + ".bias", {c}});
    offs.push_back(&L.b_off);
    if (cfg.norm == NormKind::kBatch) {
      L.state_off = state;
      state += 2 * static_cast<size_t>(c);
    } else if (c % cfg.groups != 0) {
      throw UserError("", "resnet: groups " + std::to_string(cfg.groups) +
                              " does not divide the channel count " + std::to_string(c));
    }
  };
  int h = cfg.h, w = cfg.w, cin = cfg.c;
  add_conv(stem_, "conv1", ConvGeom{cin, h, w, cfg.width, 3, 1, 1});
  add_norm(stem_norm_, nn + "1", cfg.width, h * w);
  cin = cfg.width;
  blocks_.resize(static_cast<size_t>(3 * nb));
  for (int s = 0; s < 3; ++s)
    for (int b = 0; b < nb; ++b) {
      Block& B = blocks_[static_cast<size_t>(s * nb + b)];
      const int planes = cfg.width << s, stride = (s > 0 && b == 0) ? 2 : 1;
      const std::string pre = "layer" + std::to_string(s + 1) + "." + std::to_string(b) + ".";
      add_conv(B.c1, pre + "conv1", ConvGeom{cin, h, w, planes, 3, stride, 1});
      const int ho = B.c1.g.ho(), wo = B.c1.g.wo();
      add_norm(B.n1, pre + nn + "1", planes, ho * wo);
      add_conv(B.c2, pre + "conv2", ConvGeom{planes, ho, wo, planes, 3, 1, 1});
      add_norm(B.n2, pre + nn + "2", planes, ho * wo);
      if (stride != 1 || cin != planes) {
        if (cfg.shortcut_b) {
          B.shortcut = 2;
          add_conv(B.sc, pre + "shortcut.0", ConvGeom{cin, h, w, planes, 1, stride, 0});
          add_norm(B.scn, pre + "shortcut.1", planes, ho * wo);
        } else {
          B.shortcut = 1;
          WB_ASSERT((planes - cin) % 2 == 0, "option A pads an even number of channels");
          B.sc.g = ConvGeom{cin, h, w, planes, 1, stride, 0};  // the geometry only
        }
      }
      cin = planes;
      h = ho;
      w = wo;
    }
  feat_c_ = cin;
  feat_hw_ = h * w;
  t.push_back({"linear.weight", {cfg.classes, cin}});
  offs.push_back(&lin_w_);
  t.push_back({"linear.bias", {cfg.classes}});
  offs.push_back(&lin_b_);
  tensors_ = make_layout(t);
  for (size_t i = 0; i < offs.size(); ++i) *offs[i] = tensors_[i].offset;
  state_size_ = state;
  // Forward MACs; backward costs twice (data and weight gradients): 6 FLOPs per MAC.
  double macs = static_cast<double>(stem_.g.out_size()) * stem_.g.kdim();
  for (const Block& B : blocks_) {
    macs += static_cast<double>(B.c1.g.out_size()) * B.c1.g.kdim();
    macs += static_cast<double>(B.c2.g.out_size()) * B.c2.g.kdim();
    if (B.shortcut == 2) macs += static_cast<double>(B.sc.g.out_size()) * B.sc.g.kdim();
  }
  macs += static_cast<double>(feat_c_) * cfg.classes;
  flops_per_sample_ = 6.0 * macs;
}

void ResnetModel::init_params(std::span<float> w, uint64_t seed) const {
  WB_ASSERT(w.size() == num_params(), "resnet init_params: buffer size");
  for (size_t t = 0; t < tensors_.size(); ++t) {
    const TensorInfo& ti = tensors_[t];
    core::Rng r = core::Rng::stream({seed, 0x696e6974ULL /* "init" */, t});
    const bool is_linear = ti.name.rfind("linear.", 0) == 0;
    const bool is_norm = ti.shape.size() == 1 && ti.name.find("conv") == std::string::npos &&
                         !is_linear && ti.name.find("shortcut.0") == std::string::npos;
    float* p = w.data() + ti.offset;
    if (is_norm) {  // gamma 1, beta 0
      const bool gamma = ti.name.size() > 7 && ti.name.compare(ti.name.size() - 7, 7, ".weight") == 0;
      std::fill(p, p + ti.size, gamma ? 1.f : 0.f);
      continue;
    }
    // fan_in of the layer: the weight's (a bias follows its weight).
    const TensorInfo& wt = ti.shape.size() > 1 ? ti : tensors_[t - 1];
    int64_t fan_in = 1;
    for (size_t d = 1; d < wt.shape.size(); ++d) fan_in *= wt.shape[d];
    if (ti.shape.size() == 4) {  // He et al. 2015: N(0, 2 / fan_in)
      const double sd = std::sqrt(2.0 / static_cast<double>(fan_in));
      for (size_t i = 0; i < ti.size; ++i) p[i] = static_cast<float>(sd * r.normal());
    } else {  // PyTorch's default for linear layers and biases
      const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
      for (size_t i = 0; i < ti.size; ++i) p[i] = static_cast<float>(r.uniform(-bound, bound));
    }
  }
}

void ResnetModel::init_state(std::span<float> s) const {
  WB_ASSERT(s.size() == state_size_, "resnet init_state: buffer size");
  auto init = [&](const NormL& L) {
    std::fill_n(s.data() + L.state_off, L.c, 0.f);
    std::fill_n(s.data() + L.state_off + L.c, L.c, 1.f);
  };
  if (cfg_.norm != NormKind::kBatch) return;
  init(stem_norm_);
  for (const Block& B : blocks_) {
    init(B.n1);
    init(B.n2);
    if (B.shortcut == 2) init(B.scn);
  }
}

void ResnetModel::augment(const Batch& b, uint64_t noise_seed, std::vector<float>& out) const {
  const int C = cfg_.c, H = cfg_.h, W = cfg_.w;
  const size_t ss = static_cast<size_t>(C) * H * W;
  out.resize(static_cast<size_t>(b.n) * ss);
  if (!cfg_.crop_flip) {
    std::copy(b.x.begin(), b.x.begin() + static_cast<std::ptrdiff_t>(out.size()), out.begin());
    return;
  }
  core::Rng r = core::Rng::stream({noise_seed, 0x63726f70ULL /* "crop" */});
  for (int s = 0; s < b.n; ++s) {
    // torchvision RandomCrop(size, padding=4) then RandomHorizontalFlip: the crop's corner
    // (oy, ox) in the padded image is in [0, 8]^2.
    const int oy = static_cast<int>(r.below(9)) - 4, ox = static_cast<int>(r.below(9)) - 4;
    const bool flip = r.below(2) == 1;
    const float* src = b.x.data() + s * ss;
    float* dst = out.data() + s * ss;
    for (int c = 0; c < C; ++c)
      for (int i = 0; i < H; ++i)
        for (int j = 0; j < W; ++j) {
          const int yi = i + oy, xj = (flip ? W - 1 - j : j) + ox;
          dst[(c * H + i) * W + j] =
              (yi < 0 || yi >= H || xj < 0 || xj >= W) ? cfg_.fill : src[(c * H + yi) * W + xj];
        }
  }
}

// ---------------------------------------------------------------- the pass
enum class NormMode { kBatchStats, kRunning };

// The convolution kernels a pass runs: the reference loops (any scalar type) or the fast
// float GEMM kernels (models/resnet_fast.h), which keep their scratch.
struct RefKernels {
  template <class T>
  void conv_forward(const ConvGeom& g, int n, const T* x, const T* w, const T* b, T* y) {
    rref::conv_forward(g, n, x, w, b, y);
  }
  template <class T>
  void conv_backward(const ConvGeom& g, int n, const T* x, const T* w, const T* dy, T* dx, T* dw,
                     T* db) {
    rref::conv_backward(g, n, x, w, dy, dx, dw, db);
  }
};
struct FastKernels {
  fast::ConvScratch s;
  void conv_forward(const ConvGeom& g, int n, const float* x, const float* w, const float* b,
                    float* y) {
    fast::conv_forward(g, n, x, w, b, y, s);
  }
  void conv_backward(const ConvGeom& g, int n, const float* x, const float* w, const float* dy,
                     float* dx, float* dw, float* db) {
    fast::conv_backward(g, n, x, w, dy, dx, dw, db, s);
  }
};

template <class T, class Kern>
struct ResnetPass {
  Kern kern;
  using NormL = ResnetModel::NormL;
  using ConvL = ResnetModel::ConvL;
  const ResnetModel* m = nullptr;
  int n = 0;
  std::vector<T> x0, a0, x1, pooled, logits, dlogits, dpooled;
  std::vector<T> mean0, is0;
  struct Saved {
    std::vector<T> a1, r1, a2, sa, out, mean1, is1, mean2, is2, means, iss;
  };
  std::vector<Saved> blk;
  std::vector<T> tmp, tmp2, tmp3, dcur, dnext, sc;

  size_t stats_size(const NormL& L) const {
    return m->cfg_.norm == NormKind::kGroup ? static_cast<size_t>(n) * m->cfg_.groups
                                            : static_cast<size_t>(L.c);
  }
  void norm_fwd(const NormL& L, const T* w, const T* x, T* y, std::vector<T>& mean,
                std::vector<T>& is, NormMode mode, float* state) {
    const ResnetConfig& c = m->cfg_;
    const size_t len = static_cast<size_t>(n) * L.c * L.hw;
    switch (c.norm) {
      case NormKind::kNone:
        std::copy(x, x + len, y);
        return;
      case NormKind::kGroup:
        mean.resize(stats_size(L));
        is.resize(stats_size(L));
        rref::gn_forward(n, L.c, L.hw, c.groups, x, w + L.g_off, w + L.b_off, y, mean.data(),
                         is.data());
        return;
      case NormKind::kBatch:
        if (mode == NormMode::kRunning) {
          rref::bn_forward_eval(n, L.c, L.hw, x, w + L.g_off, w + L.b_off, state + L.state_off,
                                state + L.state_off + L.c, y);
          return;
        }
        mean.resize(static_cast<size_t>(L.c));
        is.resize(static_cast<size_t>(L.c));
        rref::bn_forward_train(n, L.c, L.hw, x, w + L.g_off, w + L.b_off, y, mean.data(),
                               is.data());
        if (state)
          rref::bn_update_running(n, L.c, L.hw, mean.data(), is.data(), state + L.state_off,
                                  state + L.state_off + L.c);
        return;
    }
  }
  void norm_bwd(const NormL& L, const T* w, const T* x, const std::vector<T>& mean,
                const std::vector<T>& is, const T* dy, T* dx, T* g) {
    const ResnetConfig& c = m->cfg_;
    switch (c.norm) {
      case NormKind::kNone:
        std::copy(dy, dy + static_cast<size_t>(n) * L.c * L.hw, dx);
        return;
      case NormKind::kGroup:
        rref::gn_backward(n, L.c, L.hw, c.groups, x, w + L.g_off, mean.data(), is.data(), dy, dx,
                          g + L.g_off, g + L.b_off);
        return;
      case NormKind::kBatch:
        rref::bn_backward(n, L.c, L.hw, x, w + L.g_off, mean.data(), is.data(), dy, dx,
                          g + L.g_off, g + L.b_off);
        return;
    }
  }
  static const T* bias(const ConvL& L, const T* w) {
    return L.b_off == SIZE_MAX ? nullptr : w + L.b_off;
  }
  static T* dbias(const ConvL& L, T* g) { return L.b_off == SIZE_MAX ? nullptr : g + L.b_off; }
  static void relu(T* x, size_t len) {
    for (size_t i = 0; i < len; ++i)
      if (!(value_of(x[i]) > 0)) x[i] = T(0);
  }

  // Returns the SUM of the per-sample losses; g (optional) gets the gradient of the MEAN.
  T run(const T* w, const float* xin, const int32_t* label, int nn, T* g, NormMode mode,
        float* state, int64_t* correct) {
    n = nn;
    const ResnetConfig& c = m->cfg_;
    const size_t N = static_cast<size_t>(n);
    blk.resize(m->blocks_.size());
    size_t maxact = m->stem_.g.out_size();
    for (const auto& B : m->blocks_) maxact = std::max(maxact, B.c1.g.out_size());
    for (auto* v : {&tmp, &tmp2, &tmp3, &dcur, &dnext, &sc}) v->resize(N * maxact);

    x0.resize(N * m->stem_.g.in_size());
    for (size_t i = 0; i < x0.size(); ++i) x0[i] = T(xin[i]);
    a0.resize(N * m->stem_.g.out_size());
    x1.resize(a0.size());
    kern.conv_forward(m->stem_.g, n, x0.data(), w + m->stem_.w_off, bias(m->stem_, w), a0.data());
    norm_fwd(m->stem_norm_, w, a0.data(), x1.data(), mean0, is0, mode, state);
    relu(x1.data(), x1.size());
    const T* in = x1.data();
    for (size_t k = 0; k < m->blocks_.size(); ++k) {
      const auto& B = m->blocks_[k];
      Saved& S = blk[k];
      const size_t len = N * B.c1.g.out_size();
      S.a1.resize(len);
      S.r1.resize(len);
      S.a2.resize(len);
      S.out.resize(len);
      kern.conv_forward(B.c1.g, n, in, w + B.c1.w_off, bias(B.c1, w), S.a1.data());
      norm_fwd(B.n1, w, S.a1.data(), S.r1.data(), S.mean1, S.is1, mode, state);
      relu(S.r1.data(), len);
      kern.conv_forward(B.c2.g, n, S.r1.data(), w + B.c2.w_off, bias(B.c2, w), S.a2.data());
      norm_fwd(B.n2, w, S.a2.data(), S.out.data(), S.mean2, S.is2, mode, state);
      if (B.shortcut == 0) {
        for (size_t i = 0; i < len; ++i) S.out[i] += in[i];
      } else {
        if (B.shortcut == 1) {
          rref::shortcut_a_forward(n, B.sc.g.cin, B.sc.g.h, B.sc.g.w, B.sc.g.stride, B.sc.g.cout,
                                   in, sc.data());
        } else {
          S.sa.resize(len);
          kern.conv_forward(B.sc.g, n, in, w + B.sc.w_off, bias(B.sc, w), S.sa.data());
          norm_fwd(B.scn, w, S.sa.data(), sc.data(), S.means, S.iss, mode, state);
        }
        for (size_t i = 0; i < len; ++i) S.out[i] += sc[i];
      }
      relu(S.out.data(), len);
      in = S.out.data();
    }
    const int C = m->feat_c_, K = c.classes;
    pooled.resize(N * C);
    logits.resize(N * K);
    rref::avgpool_forward(n, C, m->feat_hw_, in, pooled.data());
    ref::linear_forward(n, C, K, pooled.data(), w + m->lin_w_, w + m->lin_b_, logits.data());
    if (g) dlogits.resize(N * K);
    const T loss = ref::log_softmax_nll(n, K, logits.data(), label, g ? dlogits.data() : nullptr,
                                        1.0 / n, correct);
    if (!g) return loss;

    // ---- backward
    dpooled.resize(N * C);
    ref::linear_backward(n, C, K, pooled.data(), w + m->lin_w_, dlogits.data(), dpooled.data(),
                         g + m->lin_w_, g + m->lin_b_);
    rref::avgpool_backward(n, C, m->feat_hw_, dpooled.data(), dcur.data());
    for (size_t k = m->blocks_.size(); k-- > 0;) {
      const auto& B = m->blocks_[k];
      Saved& S = blk[k];
      const T* bin = k == 0 ? x1.data() : blk[k - 1].out.data();
      const size_t len = N * B.c1.g.out_size();
      T* dz = dcur.data();
      for (size_t i = 0; i < len; ++i)
        if (!(value_of(S.out[i]) > 0)) dz[i] = T(0);
      T* dx = dnext.data();
      // main path
      norm_bwd(B.n2, w, S.a2.data(), S.mean2, S.is2, dz, tmp.data(), g);
      kern.conv_backward(B.c2.g, n, S.r1.data(), w + B.c2.w_off, tmp.data(), tmp2.data(),
                          g + B.c2.w_off, dbias(B.c2, g));
      for (size_t i = 0; i < len; ++i)
        if (!(value_of(S.r1[i]) > 0)) tmp2[i] = T(0);
      norm_bwd(B.n1, w, S.a1.data(), S.mean1, S.is1, tmp2.data(), tmp.data(), g);
      kern.conv_backward(B.c1.g, n, bin, w + B.c1.w_off, tmp.data(), dx, g + B.c1.w_off,
                          dbias(B.c1, g));
      // shortcut
      const size_t in_len = N * B.c1.g.in_size();
      if (B.shortcut == 0) {
        for (size_t i = 0; i < in_len; ++i) dx[i] += dz[i];
      } else if (B.shortcut == 1) {
        rref::shortcut_a_backward(n, B.sc.g.cin, B.sc.g.h, B.sc.g.w, B.sc.g.stride, B.sc.g.cout,
                                  dz, dx);
      } else {
        norm_bwd(B.scn, w, S.sa.data(), S.means, S.iss, dz, tmp.data(), g);
        kern.conv_backward(B.sc.g, n, bin, w + B.sc.w_off, tmp.data(), tmp3.data(),
                            g + B.sc.w_off, dbias(B.sc, g));
        for (size_t i = 0; i < in_len; ++i) dx[i] += tmp3[i];
      }
      std::swap(dcur, dnext);
    }
    T* d1 = dcur.data();
    for (size_t i = 0; i < x1.size(); ++i)
      if (!(value_of(x1[i]) > 0)) d1[i] = T(0);
    norm_bwd(m->stem_norm_, w, a0.data(), mean0, is0, d1, tmp.data(), g);
    kern.conv_backward(m->stem_.g, n, x0.data(), w + m->stem_.w_off, tmp.data(),
                        static_cast<T*>(nullptr), g + m->stem_.w_off, dbias(m->stem_, g));
    return loss;
  }
};

class ResnetWorkspace : public Workspace {
 public:
  ResnetPass<float, FastKernels> pass;
  std::vector<float> input;
};

std::unique_ptr<Workspace> ResnetModel::make_workspace(int max_batch) const {
  auto ws = std::make_unique<ResnetWorkspace>();
  ws->pass.m = this;
  ws->input.reserve(static_cast<size_t>(max_batch) * cfg_.c * cfg_.h * cfg_.w);
  return ws;
}

size_t ResnetModel::workspace_bytes(int max_batch) const {
  size_t per = stem_.g.in_size() + 2 * stem_.g.out_size();
  size_t maxact = stem_.g.out_size();
  for (const Block& B : blocks_) {
    per += (B.shortcut == 2 ? 5 : 4) * B.c1.g.out_size();
    maxact = std::max(maxact, B.c1.g.out_size());
  }
  per += 6 * maxact + stem_.g.in_size();
  return sizeof(float) * per * static_cast<size_t>(max_batch);
}

namespace {
ResnetWorkspace& resnet_ws(Workspace& ws) {
  auto* r = dynamic_cast<ResnetWorkspace*>(&ws);
  WB_ASSERT(r, "resnet: workspace was not made by this model");
  return *r;
}
void check_batch(const ResnetModel& m, const Batch& b, size_t w_size) {
  const ResnetConfig& c = m.config();
  WB_ASSERT(w_size == m.num_params(), "resnet: parameter buffer of " + std::to_string(w_size) +
                                          " floats, expected " + std::to_string(m.num_params()));
  WB_ASSERT(b.n >= 1 && b.x.size() >= static_cast<size_t>(b.n) * c.c * c.h * c.w &&
                b.label.size() >= static_cast<size_t>(b.n),
            "resnet: batch holds fewer inputs/labels than b.n");
}
}  // namespace

double ResnetModel::loss_grad(std::span<const float> w, const Batch& b, std::span<float> g,
                              Workspace& ws, uint64_t noise_seed) const {
  return loss_grad_state(w, b, g, ws, noise_seed, {});
}

double ResnetModel::loss_grad_state(std::span<const float> w, const Batch& b, std::span<float> g,
                                    Workspace& ws, uint64_t noise_seed,
                                    std::span<float> state) const {
  check_batch(*this, b, w.size());
  WB_ASSERT(g.size() == w.size(), "gradient buffer size");
  WB_ASSERT(state.empty() || state.size() == state_size_, "resnet: state size");
  ResnetWorkspace& r = resnet_ws(ws);
  augment(b, noise_seed, r.input);
  const float loss = r.pass.run(w.data(), r.input.data(), b.label.data(), b.n, g.data(),
                                NormMode::kBatchStats, state.empty() ? nullptr : state.data(),
                                nullptr);
  return static_cast<double>(loss) / b.n;
}

double ResnetModel::reference_loss_grad(std::span<const float> w, const Batch& b,
                                        std::span<float> g, uint64_t noise_seed,
                                        std::span<float> state) const {
  check_batch(*this, b, w.size());
  std::vector<float> x;
  augment(b, noise_seed, x);
  ResnetPass<float, RefKernels> p;
  p.m = this;
  return static_cast<double>(p.run(w.data(), x.data(), b.label.data(), b.n, g.data(),
                                   NormMode::kBatchStats,
                                   state.empty() ? nullptr : state.data(), nullptr)) /
         b.n;
}

EvalResult ResnetModel::evaluate(std::span<const float> w, const Batch& b, Workspace& ws) const {
  check_batch(*this, b, w.size());
  // Group norm and no norm are per sample: the chunked pass of evaluate_state.
  if (cfg_.norm != NormKind::kBatch) return evaluate_state(w, {}, b, ws);
  ResnetWorkspace& r = resnet_ws(ws);
  int64_t correct = 0;
  const float loss = r.pass.run(w.data(), b.x.data(), b.label.data(), b.n, nullptr,
                                NormMode::kBatchStats, nullptr, &correct);
  EvalResult ev;
  ev.loss_sum = loss;
  ev.correct = static_cast<double>(correct);
  ev.count = b.n;
  ev.has_accuracy = true;
  return ev;
}

EvalResult ResnetModel::evaluate_state(std::span<const float> w, std::span<const float> state,
                                       const Batch& b, Workspace& ws) const {
  if (cfg_.norm != NormKind::kBatch) {
    // Group norm and no norm evaluate per sample: the same pass, no state.
    check_batch(*this, b, w.size());
  } else {
    WB_ASSERT(state.size() == state_size_, "resnet: evaluation needs the running statistics");
  }
  ResnetWorkspace& r = resnet_ws(ws);
  EvalResult ev;
  ev.has_accuracy = true;
  // Evaluation is per sample (running statistics): chunks of 128 keep the workspace small
  // whatever the caller's evaluation chunk.
  constexpr int kChunk = 128;
  const size_t ss = static_cast<size_t>(cfg_.c) * cfg_.h * cfg_.w;
  for (int s0 = 0; s0 < b.n; s0 += kChunk) {
    const int cn = std::min(kChunk, b.n - s0);
    int64_t correct = 0;
    const float loss = r.pass.run(w.data(), b.x.data() + s0 * ss, b.label.data() + s0, cn,
                                  nullptr, NormMode::kRunning,
                                  const_cast<float*>(state.data()),  // read only in kRunning
                                  &correct);
    ev.loss_sum += loss;
    ev.correct += static_cast<double>(correct);
    ev.count += cn;
  }
  return ev;
}

double ResnetModel::loss_grad_f64(std::span<const double> w, const Batch& b, std::span<double> g,
                                  uint64_t noise_seed) const {
  check_batch(*this, b, w.size());
  WB_ASSERT(g.size() == w.size(), "gradient buffer size");
  std::vector<float> x;
  augment(b, noise_seed, x);
  ResnetPass<double, RefKernels> p;
  p.m = this;
  return p.run(w.data(), x.data(), b.label.data(), b.n, g.data(), NormMode::kBatchStats, nullptr,
               nullptr) /
         b.n;
}

void ResnetModel::hvp_f64(std::span<const double> w, std::span<const double> v, const Batch& b,
                          std::span<double> hv, uint64_t noise_seed) const {
  check_batch(*this, b, w.size());
  WB_ASSERT(v.size() == w.size() && hv.size() == w.size(), "hvp buffer sizes");
  std::vector<float> x;
  augment(b, noise_seed, x);
  // Forward-over-reverse (models/dual.h): the gradient at w + v eps has tangent H v. The
  // batch statistics are Dual too, so the product is the one of the training-mode loss.
  std::vector<Dual<double>> wd(w.size()), gd(w.size());
  for (size_t i = 0; i < w.size(); ++i) wd[i] = Dual<double>(w[i], v[i]);
  ResnetPass<Dual<double>, RefKernels> p;
  p.m = this;
  p.run(wd.data(), x.data(), b.label.data(), b.n, gd.data(), NormMode::kBatchStats, nullptr,
        nullptr);
  for (size_t i = 0; i < w.size(); ++i) hv[i] = gd[i].d;
}

// ---------------------------------------------------------------- data
namespace {

std::shared_ptr<const ImageData> read_cifar_files(const std::vector<std::string>& files,
                                                  uint64_t limit) {
  constexpr size_t kRec = 1 + 3 * 32 * 32;
  auto d = std::make_shared<ImageData>();
  d->source = files.front();
  d->c = 3, d->h = 32, d->w = 32;
  for (const std::string& f : files) {
    if (limit > 0 && d->labels.size() >= limit) break;
    std::ifstream in(f, std::ios::binary);
    if (!in) throw UserError(f, "cannot open the CIFAR-10 file");
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
    if (bytes.empty() || bytes.size() % kRec != 0)
      throw UserError(f, "at byte offset " + std::to_string(bytes.size() / kRec * kRec) +
                             ": truncated record (the file has " + std::to_string(bytes.size()) +
                             " bytes, not a multiple of the 3,073-byte CIFAR-10 record)");
    for (size_t off = 0; off < bytes.size(); off += kRec) {
      if (limit > 0 && d->labels.size() >= limit) break;
      if (bytes[off] >= 10)
        throw UserError(f, "at byte offset " + std::to_string(off) + ": label " +
                               std::to_string(bytes[off]) + " is outside [0, 10)");
      d->labels.push_back(bytes[off]);
      d->pixels.insert(d->pixels.end(), bytes.begin() + static_cast<std::ptrdiff_t>(off + 1),
                       bytes.begin() + static_cast<std::ptrdiff_t>(off + kRec));
    }
  }
  return d;
}

}  // namespace

CifarSplits load_cifar10_dir(const std::string& dir, uint64_t train_limit, uint64_t test_limit) {
  std::vector<std::string> train;
  for (int i = 1; i <= 5; ++i) train.push_back(dir + "/data_batch_" + std::to_string(i) + ".bin");
  CifarSplits s;
  s.train = read_cifar_files(train, train_limit);
  s.test = read_cifar_files({dir + "/test_batch.bin"}, test_limit);
  return s;
}

std::shared_ptr<const ImageData> pad_images(const ImageData& d, int pad) {
  auto o = std::make_shared<ImageData>();
  o->source = d.source;
  o->c = d.c, o->h = d.h + 2 * pad, o->w = d.w + 2 * pad;
  o->labels = d.labels;
  o->pixels.assign(d.size() * o->sample_size(), 0);
  for (size_t s = 0; s < d.size(); ++s)
    for (int c = 0; c < d.c; ++c)
      for (int i = 0; i < d.h; ++i)
        std::copy_n(d.pixels.data() + ((s * d.c + c) * d.h + i) * d.w, d.w,
                    o->pixels.data() + ((s * o->c + c) * o->h + i + pad) * o->w + pad);
  return o;
}

void ResnetParams::describe(core::ParamSet<ResnetParams>& p) {
  p.field("depth", &ResnetParams::depth, "6n+2 layers (8, 14, 20, 32, ...)").min(8);
  p.field("width", &ResnetParams::width, "channels of the first stage (16 = the paper)").min(1);
  p.field("norm", &ResnetParams::norm, "normalization after each convolution")
      .one_of({"batch", "group", "none"});
  p.field("shortcut", &ResnetParams::shortcut,
          "A: strided subsampling + zero channels (the paper's CIFAR choice); B: 1x1 conv + norm")
      .one_of({"A", "B"});
  p.field("groups", &ResnetParams::groups, "GroupNorm groups (norm group)").min(1);
  p.field("dataset", &ResnetParams::dataset,
          "idx: an MNIST-format directory; cifar10: the CIFAR-10 binary format")
      .one_of({"idx", "cifar10"});
  p.field("data_dir", &ResnetParams::data_dir,
          "idx: {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]; cifar10: data_batch_1..5.bin, "
          "test_batch.bin");
  p.field("pad", &ResnetParams::pad, "zero pixels added around each image (28x28 + 2 = 32x32)")
      .min(0);
  p.field("normalize_mean", &ResnetParams::normalize_mean, "x = (pixel/255 - mean) / std");
  p.field("normalize_std", &ResnetParams::normalize_std, "x = (pixel/255 - mean) / std")
      .positive();
  p.field("augment", &ResnetParams::augment,
          "crop_flip: 4-pixel zero-padded random crop + horizontal flip (training passes)")
      .one_of({"none", "crop_flip"});
  p.field("train_limit", &ResnetParams::train_limit, "use only the first N training samples")
      .min(0);
  p.field("test_limit", &ResnetParams::test_limit, "use only the first N test samples").min(0);
}

Task make_resnet_task(const ResnetParams& p) {
  if ((p.depth - 2) % 6 != 0)
    throw UserError("", "resnet depth " + std::to_string(p.depth) + " is not 6n+2 (8, 14, 20, ...)");
  std::shared_ptr<const ImageData> train, test;
  if (p.dataset == "cifar10") {
    auto s = load_cifar10_dir(p.data_dir, static_cast<uint64_t>(p.train_limit),
                              static_cast<uint64_t>(p.test_limit));
    train = s.train;
    test = s.test;
  } else {
    auto s = load_mnist_dir(p.data_dir, 10, static_cast<uint64_t>(p.train_limit),
                            static_cast<uint64_t>(p.test_limit));
    train = s.train;
    test = s.test;
  }
  if (p.pad > 0) {
    train = pad_images(*train, static_cast<int>(p.pad));
    test = pad_images(*test, static_cast<int>(p.pad));
  }
  ResnetConfig c;
  c.depth = static_cast<int>(p.depth);
  c.width = static_cast<int>(p.width);
  c.norm = p.norm == "group" ? NormKind::kGroup : p.norm == "none" ? NormKind::kNone : NormKind::kBatch;
  c.shortcut_b = p.shortcut == "B";
  c.groups = static_cast<int>(p.groups);
  c.c = train->c, c.h = train->h, c.w = train->w;
  c.crop_flip = p.augment == "crop_flip";
  c.fill = static_cast<float>((0.0 - p.normalize_mean) / p.normalize_std);
  Task t;
  t.model = std::make_unique<ResnetModel>(c);
  t.train = std::make_shared<ImageDataset>(train, p.normalize_mean, p.normalize_std);
  t.test = std::make_shared<ImageDataset>(test, p.normalize_mean, p.normalize_std);
  return t;
}

namespace {
class ResnetMaker : public TaskMaker {
 public:
  ResnetMaker(const ResnetParams& p, uint64_t /*data_seed: data order is the sampler's*/) : p_(p) {}
  Task make() override { return make_resnet_task(p_); }

 private:
  ResnetParams p_;
};
}  // namespace

WB_REGISTER_MODEL("resnet", ResnetMaker, ResnetParams,
                  "He et al. 2016 CIFAR ResNet (6n+2 layers, BatchNorm/GroupNorm, shortcut A/B) "
                  "on Fashion-MNIST (padded to 32x32), any IDX set or CIFAR-10 binaries");

}  // namespace wb::models
