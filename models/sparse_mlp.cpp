#include "models/sparse_mlp.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "models/xml_data.h"
#include "core/error.h"
#include "core/rng.h"

namespace wb::models {

template <class S>
struct SparseMlp::Scratch {
  S* act = nullptr;    // hidden activations, n x sum(h), layer j at act_off[j]
  S* probs = nullptr;  // n x L: logits, then softmax probabilities
  S* dz_a = nullptr;   // n x max(h, L): gradient w.r.t. a layer's pre-activation
  S* dz_b = nullptr;
  int max_batch = 0;
};

namespace {

class MlpWorkspace final : public Workspace {
 public:
  MlpWorkspace(size_t act, size_t probs, size_t dz, int max_batch)
      : act_(act), probs_(probs), dz_a_(dz), dz_b_(dz) {
    s.act = act_.data();
    s.probs = probs_.data();
    s.dz_a = dz_a_.data();
    s.dz_b = dz_b_.data();
    s.max_batch = max_batch;
  }
  SparseMlp::Scratch<float> s;

 private:
  std::vector<float> act_, probs_, dz_a_, dz_b_;
};

template <class S>
inline void axpy(S* y, const S* x, S a, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}
template <class S>
inline S dot(const S* x, const S* y, int64_t n) {
  S s = 0;
  for (int64_t i = 0; i < n; ++i) s += x[i] * y[i];
  return s;
}

}  // namespace

SparseMlp::SparseMlp(int64_t features, std::vector<int64_t> hidden, int64_t labels,
                     double mean_nnz, int eval_k)
    : mean_nnz_(mean_nnz), eval_k_(eval_k) {
  dims_.push_back(features);
  dims_.insert(dims_.end(), hidden.begin(), hidden.end());
  dims_.push_back(labels);
  std::vector<std::pair<std::string, std::vector<int64_t>>> t;
  const size_t nl = dims_.size() - 1;
  for (size_t j = 0; j < nl; ++j) {
    const std::string nm = j + 1 == nl ? "out" : "fc" + std::to_string(j);
    t.push_back({nm + ".weight", {dims_[j], dims_[j + 1]}});
    t.push_back({nm + ".bias", {dims_[j + 1]}});
  }
  layout_ = make_layout(t);
}

void SparseMlp::init_params(std::span<float> w, uint64_t seed) const {
  // Glorot-uniform weights (fan_in + fan_out), zero biases; one Rng stream per tensor.
  for (size_t j = 0; j + 1 < dims_.size(); ++j) {
    const TensorInfo& W = layout_[2 * j];
    const TensorInfo& B = layout_[2 * j + 1];
    const double lim = std::sqrt(6.0 / static_cast<double>(dims_[j] + dims_[j + 1]));
    core::Rng r = core::Rng::stream({seed, 0x3b1fULL, j});
    for (size_t i = 0; i < W.size; ++i) w[W.offset + i] = static_cast<float>(r.uniform(-lim, lim));
    for (size_t i = 0; i < B.size; ++i) w[B.offset + i] = 0.f;
  }
}

namespace {
// The workspace's buffer sizes in floats: activations n x sum(h), probabilities n x L, two
// pre-activation gradients n x max(h, L) each.
struct MlpWorkspaceSizes {
  size_t act, probs, dz;
};
MlpWorkspaceSizes mlp_workspace_sizes(const std::vector<int64_t>& dims, int64_t labels, int max_batch) {
  int64_t hsum = 0, dmax = 0;
  for (size_t j = 1; j < dims.size(); ++j) {
    if (j + 1 < dims.size()) hsum += dims[j];
    dmax = std::max(dmax, dims[j]);
  }
  const auto n = static_cast<size_t>(std::max(1, max_batch));
  return {n * static_cast<size_t>(std::max<int64_t>(hsum, 1)), n * static_cast<size_t>(labels),
          n * static_cast<size_t>(dmax)};
}
}  // namespace

std::unique_ptr<Workspace> SparseMlp::make_workspace(int max_batch) const {
  const MlpWorkspaceSizes z = mlp_workspace_sizes(dims_, labels(), max_batch);
  return std::make_unique<MlpWorkspace>(z.act, z.probs, z.dz, max_batch);
}

size_t SparseMlp::workspace_bytes(int max_batch) const {
  const MlpWorkspaceSizes z = mlp_workspace_sizes(dims_, labels(), max_batch);
  return sizeof(float) * (z.act + z.probs + 2 * z.dz);
}

template <class S>
double precision_at_k(const S* z, int64_t L, const int32_t* y, int64_t ny, int k) {
  // top-k by repeated arg-max (k is small); ties go to the lower label id.
  int hits = 0;
  int32_t chosen[16];
  const int kk = static_cast<int>(std::min<int64_t>(std::min(k, 16), L));
  for (int t = 0; t < kk; ++t) {
    int32_t best = -1;
    for (int64_t l = 0; l < L; ++l) {
      bool taken = false;
      for (int u = 0; u < t; ++u) taken = taken || chosen[u] == l;
      if (!taken && (best < 0 || z[l] > z[best])) best = static_cast<int32_t>(l);
    }
    chosen[t] = best;
    for (int64_t p = 0; p < ny; ++p) hits += y[p] == best;
  }
  return static_cast<double>(hits) / k;
}
template double precision_at_k<float>(const float*, int64_t, const int32_t*, int64_t, int);
template double precision_at_k<double>(const double*, int64_t, const int32_t*, int64_t, int);

// One forward pass, and the backward pass when g != null. Returns the mean loss over the
// labelled rows; adds loss/precision@k sums to *ev when ev != null.
template <class S>
double SparseMlp::pass(const S* w, const Batch& b, S* g, const Scratch<S>& s, EvalResult* ev,
                       int k) const {
  const int n = b.n;
  WB_ASSERT(n <= s.max_batch, "sparse_mlp: batch larger than the workspace");
  const size_t nl = dims_.size() - 1;
  // Offsets of the hidden activations in s.act.
  int64_t act_off[64];
  WB_ASSERT(nl < 64, "sparse_mlp: too many layers");
  {
    int64_t o = 0;
    for (size_t j = 1; j < nl; ++j) {
      act_off[j] = o;
      o += static_cast<int64_t>(n) * dims_[j];
    }
  }
  auto layer_out = [&](size_t j) -> S* {  // output of layer j (0-based): act j+1 or logits
    return j + 1 == nl ? s.probs : s.act + act_off[j + 1];
  };

  // ---- forward
  for (size_t j = 0; j < nl; ++j) {
    const int64_t din = dims_[j], dout = dims_[j + 1];
    const S* W = w + layout_[2 * j].offset;
    const S* bias = w + layout_[2 * j + 1].offset;
    S* out = layer_out(j);
    const S* in = j == 0 ? nullptr : s.act + act_off[j];
    for (int i = 0; i < n; ++i) {
      S* o = out + static_cast<int64_t>(i) * dout;
      std::copy(bias, bias + dout, o);
      if (j == 0) {  // sparse rows of W: only the non-zeros of x_i
        for (int64_t p = b.x_ptr[i]; p < b.x_ptr[i + 1]; ++p)
          axpy(o, W + static_cast<int64_t>(b.x_idx[p]) * dout, static_cast<S>(b.x_val[p]), dout);
      } else {
        const S* a = in + static_cast<int64_t>(i) * din;
        for (int64_t q = 0; q < din; ++q)
          if (a[q] != S(0)) axpy(o, W + q * dout, a[q], dout);  // ReLU zeros are skipped
      }
      if (j + 1 < nl)
        for (int64_t q = 0; q < dout; ++q) o[q] = o[q] > S(0) ? o[q] : S(0);
    }
  }

  // ---- loss, softmax, precision@k
  const int64_t L = labels();
  int m = 0;  // labelled rows
  for (int i = 0; i < n; ++i) m += b.y_ptr[i + 1] > b.y_ptr[i];
  double loss_sum = 0, correct = 0;
  for (int i = 0; i < n; ++i) {
    S* z = s.probs + static_cast<int64_t>(i) * L;
    const int64_t y0 = b.y_ptr[i], y1 = b.y_ptr[i + 1];
    if (ev && k > 0 && y1 > y0) correct += precision_at_k(z, L, b.y_idx.data() + y0, y1 - y0, k);
    S mx = z[0];
    for (int64_t l = 1; l < L; ++l) mx = std::max(mx, z[l]);
    S se = 0;
    for (int64_t l = 0; l < L; ++l) se += std::exp(z[l] - mx);
    const S lse = mx + std::log(se);
    if (y1 > y0) {
      S zy = 0;
      for (int64_t p = y0; p < y1; ++p) zy += z[b.y_idx[p]];
      loss_sum += static_cast<double>(lse - zy / static_cast<S>(y1 - y0));
    }
    if (g)
      for (int64_t l = 0; l < L; ++l) z[l] = std::exp(z[l] - lse);
  }
  if (ev) {
    ev->loss_sum += loss_sum;
    ev->correct += correct;
    ev->count += n;
    ev->has_accuracy = true;
  }
  if (!g) return m ? loss_sum / m : 0.0;

  // ---- backward: dz = (p - t) / m on the logits
  S* dz = s.dz_a;
  S* dprev = s.dz_b;
  const S inv_m = m ? S(1) / static_cast<S>(m) : S(0);
  for (int i = 0; i < n; ++i) {
    const S* p = s.probs + static_cast<int64_t>(i) * L;
    S* d = dz + static_cast<int64_t>(i) * L;
    const int64_t y0 = b.y_ptr[i], y1 = b.y_ptr[i + 1];
    if (y1 == y0) {
      std::fill(d, d + L, S(0));
      continue;
    }
    for (int64_t l = 0; l < L; ++l) d[l] = p[l] * inv_m;
    const S t = inv_m / static_cast<S>(y1 - y0);
    for (int64_t q = y0; q < y1; ++q) d[b.y_idx[q]] -= t;
  }
  for (size_t j = nl; j-- > 0;) {
    const int64_t din = dims_[j], dout = dims_[j + 1];
    const S* W = w + layout_[2 * j].offset;
    S* dW = g + layout_[2 * j].offset;
    S* db = g + layout_[2 * j + 1].offset;
    std::fill(dW, dW + din * dout, S(0));
    std::fill(db, db + dout, S(0));
    const S* in = j == 0 ? nullptr : s.act + act_off[j];
    for (int i = 0; i < n; ++i) {
      const S* d = dz + static_cast<int64_t>(i) * dout;
      axpy(db, d, S(1), dout);
      if (j == 0) {
        for (int64_t p = b.x_ptr[i]; p < b.x_ptr[i + 1]; ++p)
          axpy(dW + static_cast<int64_t>(b.x_idx[p]) * dout, d, static_cast<S>(b.x_val[p]), dout);
      } else {
        const S* a = in + static_cast<int64_t>(i) * din;
        S* dp = dprev + static_cast<int64_t>(i) * din;
        for (int64_t q = 0; q < din; ++q) {
          if (a[q] != S(0)) {
            axpy(dW + q * dout, d, a[q], dout);
            dp[q] = dot(d, W + q * dout, dout);  // ReLU: gradient flows where a > 0
          } else {
            dp[q] = S(0);
          }
        }
      }
    }
    std::swap(dz, dprev);
  }
  return m ? loss_sum / m : 0.0;
}

double SparseMlp::loss_grad(std::span<const float> w, const Batch& b, std::span<float> g,
                            Workspace& ws, uint64_t) const {
  return pass<float>(w.data(), b, g.data(), static_cast<MlpWorkspace&>(ws).s, nullptr, 0);
}

EvalResult SparseMlp::evaluate(std::span<const float> w, const Batch& b, Workspace& ws) const {
  return evaluate_at_k(w, b, ws, eval_k_);
}

EvalResult SparseMlp::evaluate_at_k(std::span<const float> w, const Batch& b, Workspace& ws,
                                    int k) const {
  EvalResult ev;
  pass<float>(w.data(), b, nullptr, static_cast<MlpWorkspace&>(ws).s, &ev, k);
  return ev;
}

double SparseMlp::loss_grad_f64(std::span<const double> w, const Batch& b, std::span<double> g,
                                uint64_t) const {
  int64_t hsum = 0, dmax = 0;
  for (size_t j = 1; j < dims_.size(); ++j) {
    if (j + 1 < dims_.size()) hsum += dims_[j];
    dmax = std::max(dmax, dims_[j]);
  }
  const auto n = static_cast<size_t>(std::max(1, b.n));
  std::vector<double> act(n * static_cast<size_t>(std::max<int64_t>(hsum, 1))),
      probs(n * static_cast<size_t>(labels())), da(n * static_cast<size_t>(dmax)),
      db(n * static_cast<size_t>(dmax));
  Scratch<double> s{act.data(), probs.data(), da.data(), db.data(), b.n};
  return pass<double>(w.data(), b, g.data(), s, nullptr, 0);
}

double SparseMlp::flops(double nnz, double n) const {
  double dense = 0;  // multiply-adds per sample of the dense layers (incl. the output)
  for (size_t j = 1; j + 1 < dims_.size(); ++j) dense += static_cast<double>(dims_[j] * dims_[j + 1]);
  const double h1 = static_cast<double>(dims_[1]);
  return 4.0 * nnz * h1 + 6.0 * n * dense + 5.0 * n * static_cast<double>(labels());
}

double SparseMlp::flops_per_sample() const { return flops(mean_nnz_, 1.0); }

double SparseMlp::flops_for_batch(const Batch& b) const {
  const double nnz = b.n > 0 ? static_cast<double>(b.x_ptr[b.n] - b.x_ptr[0]) : 0.0;
  return flops(nnz, b.n);
}

// ---- registration ---------------------------------------------------------------------------
namespace {

struct SparseMlpParams {
  std::vector<int64_t> hidden = {128};
  std::string data = "synthetic";
  std::string train_file = "train.txt";
  std::string test_file = "test.txt";
  int64_t train_limit = 0;
  int64_t test_limit = 0;
  int64_t eval_k = 1;
  XmlSyntheticParams synthetic;
  static void describe(core::ParamSet<SparseMlpParams>& p) {
    p.field("hidden", &SparseMlpParams::hidden,
            "hidden layer sizes (ReLU); [] = softmax regression. SLIDE/HeteroGPU: [128]")
        .min(1);
    p.field("data", &SparseMlpParams::data,
            "\"synthetic\" (the embedded Bibtex-sized generator) or a directory holding "
            "Extreme Classification Repository text files (e.g. ../shared/data/xml/bibtex)");
    p.field("train_file", &SparseMlpParams::train_file, "training file inside `data`");
    p.field("test_file", &SparseMlpParams::test_file, "test file inside `data`");
    p.field("train_limit", &SparseMlpParams::train_limit,
            "use only the first N training rows (0 = all)")
        .min(0);
    p.field("test_limit", &SparseMlpParams::test_limit, "use only the first N test rows (0 = all)")
        .min(0);
    p.field("eval_k", &SparseMlpParams::eval_k,
            "test_accuracy is precision@k (1 = precision@1, the paper's top-1 accuracy)")
        .min(1)
        .max(16);
    p.field("synthetic", &SparseMlpParams::synthetic,
            "the synthetic sparse multi-label generator (used when data = \"synthetic\")");
  }
};

std::shared_ptr<const XmlData> truncated(std::shared_ptr<const XmlData> d, int64_t limit) {
  if (limit <= 0 || static_cast<size_t>(limit) >= d->size()) return d;
  auto t = std::make_shared<XmlData>(*d);
  const auto k = static_cast<size_t>(limit);
  t->x_ptr.resize(k + 1);
  t->y_ptr.resize(k + 1);
  t->x_idx.resize(static_cast<size_t>(t->x_ptr.back()));
  t->x_val.resize(static_cast<size_t>(t->x_ptr.back()));
  t->y_idx.resize(static_cast<size_t>(t->y_ptr.back()));
  return t;
}

class SparseMlpMaker final : public TaskMaker {
 public:
  SparseMlpMaker(const SparseMlpParams& p, uint64_t) : p_(p) {}
  Task make() override {
    XmlSplits s;
    if (p_.data == "synthetic") {
      s = make_synthetic_xml(p_.synthetic);
      s.train = truncated(s.train, p_.train_limit);
      s.test = truncated(s.test, p_.test_limit);
    } else {
      s = load_xml_dir(p_.data, p_.train_file, p_.test_file,
                       static_cast<uint64_t>(p_.train_limit), static_cast<uint64_t>(p_.test_limit));
    }
    if (p_.eval_k > s.train->labels)
      throw UserError("", "sparse_mlp: eval_k = " + std::to_string(p_.eval_k) + " exceeds the " +
                              std::to_string(s.train->labels) + " labels");
    Task t;
    t.model = std::make_unique<SparseMlp>(s.train->features, p_.hidden, s.train->labels,
                                          s.train->mean_nnz(), static_cast<int>(p_.eval_k));
    t.train = std::make_shared<XmlDataset>(s.train);
    t.test = s.test->size() ? std::make_shared<XmlDataset>(s.test) : nullptr;
    return t;
  }

 private:
  SparseMlpParams p_;
};

}  // namespace

WB_REGISTER_MODEL("sparse_mlp", SparseMlpMaker, SparseMlpParams,
                  "extreme multi-label MLP (SLIDE/HeteroGPU): CSR input -> hidden ReLU -> "
                  "softmax over labels, 1/|y| cross-entropy, precision@k");

}  // namespace wb::models
