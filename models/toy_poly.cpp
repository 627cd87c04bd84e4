// The Horovod Adasum toy (Horovod's AdaSum guide, "Square and Cubic
// optimization"; DESIGN.md section 7): recover the coefficients of a polynomial from
// noise-free samples x ~ U[-x_max, x_max], MSE loss.
//   quadratic: target y = x^2 - 20 x + 50,        model x^2 + p0 x + p1,  p(0) = (1, -1)
//   cubic:     target y = 10x^3 + 5x^2 - 20x - 5, model 10x^3 + p0 x^2 + p1 x + p2,
//              p(0) = (1, -1, 1)
// The leading coefficient is fixed (as in Horovod's example), so the model is linear in
// its parameters: loss = mean_b (phi(x_b) . p - r_b)^2 with phi = (x, 1) or (x^2, x, 1)
// and r = y - leading term. Gradient 2 mean (phi.p - r) phi; Hessian 2 mean phi phi^T,
// constant in p: the exact-Hessian checks of later diagnostics have a closed form here.
#include <cmath>
#include <memory>

#include "models/model.h"
#include "core/interrupt.h"
#include "core/rng.h"

namespace wb::models {
namespace {

struct ToyParams {
  double x_max = 1.0;
  int64_t train_size = 65536;
  int64_t test_size = 1024;
  int64_t data_seed = 0;
  static void describe(core::ParamSet<ToyParams>& p) {
    p.field("data_seed", &ToyParams::data_seed, "seed of the synthetic data set").min(0);
    p.field("x_max", &ToyParams::x_max, "features x ~ U[-x_max, x_max]").positive();
    p.field("train_size", &ToyParams::train_size, "synthetic training samples").min(1);
    p.field("test_size", &ToyParams::test_size, "synthetic test samples").min(1);
  }
};

class ToyDataset final : public Dataset {
 public:
  ToyDataset(int degree, double x_max, size_t n, uint64_t seed) : degree_(degree) {
    // reserve, not x_(n): zero-filling 10^8 samples up front took ~2 s that no signal
    // could interrupt; the pages are touched here, in the interruptible loop.
    x_.reserve(n);
    y_.reserve(n);
    core::Rng rng(seed);
    for (size_t i = 0; i < n; ++i) {
      if (i % (size_t{1} << 20) == 0) core::throw_if_interrupted();  // 10^9 samples: seconds
      const double x = rng.uniform(-x_max, x_max);
      x_.push_back(static_cast<float>(x));
      const double xf = x_[i];
      y_.push_back(static_cast<float>(degree == 2 ? xf * xf - 20.0 * xf + 50.0
                                                  : 10.0 * xf * xf * xf + 5.0 * xf * xf - 20.0 * xf - 5.0));
    }
  }
  size_t size() const override { return x_.size(); }
  size_t bytes() const override { return sizeof(float) * (x_.size() + y_.size()); }
  void reserve(Batch& b, int max_batch) const override {
    b.x.reserve(static_cast<size_t>(max_batch));
    b.y.reserve(static_cast<size_t>(max_batch));
  }
  void gather(std::span<const uint32_t> idx, Batch& b) const override {
    b.n = static_cast<int>(idx.size());
    b.x.resize(idx.size());
    b.y.resize(idx.size());
    for (size_t i = 0; i < idx.size(); ++i) {
      b.x[i] = x_[idx[i]];
      b.y[i] = y_[idx[i]];
    }
  }
  int degree() const { return degree_; }

 private:
  int degree_;
  std::vector<float> x_, y_;
};

class ToyWorkspace final : public Workspace {};

class ToyPoly final : public Model {
 public:
  explicit ToyPoly(int degree)
      : degree_(degree),
        layout_(make_layout({{"coeffs", {degree == 2 ? 2 : 3}}})) {}
  std::string name() const override { return degree_ == 2 ? "quadratic" : "cubic"; }
  const std::vector<TensorInfo>& tensors() const override { return layout_; }
  void init_params(std::span<float> w, uint64_t) const override {
    // Horovod's example starts from fixed values, not random ones.
    if (degree_ == 2) {
      w[0] = 1.f;
      w[1] = -1.f;
    } else {
      w[0] = 1.f;
      w[1] = -1.f;
      w[2] = 1.f;
    }
  }
  std::unique_ptr<Workspace> make_workspace(int) const override {
    return std::make_unique<ToyWorkspace>();
  }

  template <class S>
  double loss_grad_t(std::span<const S> w, const Batch& b, std::span<S> g) const {
    const int np = degree_ == 2 ? 2 : 3;
    for (int j = 0; j < np; ++j) g[j] = 0;
    double loss = 0;
    for (int i = 0; i < b.n; ++i) {
      S phi[3];
      const S r = residual_target<S>(b.x[i], b.y[i], phi);
      S pred = 0;
      for (int j = 0; j < np; ++j) pred += phi[j] * w[j];
      const S e = pred - r;
      loss += static_cast<double>(e) * static_cast<double>(e);
      for (int j = 0; j < np; ++j) g[j] += S(2) * e * phi[j];
    }
    const S inv = S(1) / static_cast<S>(b.n);
    for (int j = 0; j < np; ++j) g[j] *= inv;
    return loss / b.n;
  }

  double loss_grad(std::span<const float> w, const Batch& b, std::span<float> g, Workspace&,
                   uint64_t) const override {
    return loss_grad_t<float>(w, b, g);
  }
  double loss_grad_f64(std::span<const double> w, const Batch& b, std::span<double> g,
                       uint64_t) const override {
    return loss_grad_t<double>(w, b, g);
  }
  void hvp_f64(std::span<const double>, std::span<const double> v, const Batch& b,
               std::span<double> hv, uint64_t) const override {
    const int np = degree_ == 2 ? 2 : 3;
    for (int j = 0; j < np; ++j) hv[j] = 0;
    for (int i = 0; i < b.n; ++i) {
      double phi[3];
      residual_target<double>(b.x[i], b.y[i], phi);
      double pv = 0;
      for (int j = 0; j < np; ++j) pv += phi[j] * v[j];
      for (int j = 0; j < np; ++j) hv[j] += 2.0 * pv * phi[j] / b.n;
    }
  }
  EvalResult evaluate(std::span<const float> w, const Batch& b, Workspace&) const override {
    EvalResult r;
    std::vector<float> g(static_cast<size_t>(degree_ == 2 ? 2 : 3));
    r.loss_sum = loss_grad_t<float>(w, b, std::span<float>(g)) * b.n;
    r.count = b.n;
    return r;
  }
  double flops_per_sample() const override { return degree_ == 2 ? 12 : 18; }

 private:
  // Features phi(x) and the target minus the fixed leading term.
  template <class S>
  S residual_target(float xf, float yf, S* phi) const {
    const S x = xf, y = yf;
    if (degree_ == 2) {
      phi[0] = x;
      phi[1] = 1;
      return y - x * x;
    }
    phi[0] = x * x;
    phi[1] = x;
    phi[2] = 1;
    return y - S(10) * x * x * x;
  }
  int degree_;
  std::vector<TensorInfo> layout_;
};

template <int Degree>
class ToyMaker final : public TaskMaker {
 public:
  ToyMaker(const ToyParams& p, uint64_t) : p_(p), seed_(static_cast<uint64_t>(p.data_seed)) {}
  Task make() override {
    Task t;
    t.model = std::make_unique<ToyPoly>(Degree);
    t.train = std::make_shared<ToyDataset>(Degree, p_.x_max, static_cast<size_t>(p_.train_size),
                                           core::mix_ids({seed_, 1}));
    t.test = std::make_shared<ToyDataset>(Degree, p_.x_max, static_cast<size_t>(p_.test_size),
                                          core::mix_ids({seed_, 2}));
    return t;
  }

 private:
  ToyParams p_;
  uint64_t seed_;
};

}  // namespace

WB_REGISTER_MODEL("quadratic", ToyMaker<2>, ToyParams,
                  "Horovod Adasum toy: fit p in x^2 + p0 x + p1 to x^2 - 20x + 50 (MSE)");
WB_REGISTER_MODEL("cubic", ToyMaker<3>, ToyParams,
                  "Horovod Adasum toy: fit p in 10x^3 + p0 x^2 + p1 x + p2 to 10x^3 + 5x^2 - 20x - 5");

}  // namespace wb::models
