// docs/extending.md "How to add a model": this file IS the manual's example (tests/examples/
// check_readme.sh keeps them identical); example_tests compiles, registers and trains it.
#include <cmath>

#include "models/model.h"
#include "core/rng.h"

namespace wb::models {

struct LinRegParams {
  int64_t dim = 4;
  int64_t train_size = 256;
  double noise = 0.1;
  static void describe(core::ParamSet<LinRegParams>& p) {
    p.field("dim", &LinRegParams::dim, "input dimension d").min(1).max(1024);
    p.field("train_size", &LinRegParams::train_size, "training samples").min(1).max(1 << 24);
    p.field("noise", &LinRegParams::noise, "std of the label noise").min(0);
  }
};

// y = a . x + noise, x ~ N(0, I): the data set, generated from the data seed.
class LinRegData final : public Dataset {
 public:
  LinRegData(const LinRegParams& p, uint64_t seed) : d_(static_cast<int>(p.dim)) {
    core::Rng r = core::Rng::stream({seed, 0x11e4ULL});
    const size_t n = static_cast<size_t>(p.train_size);
    x_.resize(n * static_cast<size_t>(d_));
    y_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      double s = 0;
      for (int j = 0; j < d_; ++j) {
        const double v = r.normal();
        x_[i * static_cast<size_t>(d_) + static_cast<size_t>(j)] = static_cast<float>(v);
        s += (j + 1) * v;  // the true coefficients a_j = j + 1
      }
      y_[i] = static_cast<float>(s + p.noise * r.normal());
    }
  }
  size_t size() const override { return y_.size(); }
  void reserve(Batch& b, int max_batch) const override {
    b.x.reserve(static_cast<size_t>(max_batch) * static_cast<size_t>(d_));
    b.y.reserve(static_cast<size_t>(max_batch));
  }
  void gather(std::span<const uint32_t> idx, Batch& b) const override {
    b.n = static_cast<int>(idx.size());
    b.x.resize(idx.size() * static_cast<size_t>(d_));
    b.y.resize(idx.size());
    for (size_t k = 0; k < idx.size(); ++k) {
      std::copy_n(&x_[idx[k] * static_cast<size_t>(d_)], d_, &b.x[k * static_cast<size_t>(d_)]);
      b.y[k] = y_[idx[k]];
    }
  }

 private:
  int d_;
  std::vector<float> x_, y_;
};

// Mean squared error 1/(2n) sum (w . x - y)^2; its gradient in closed form.
class LinRegModel final : public Model {
 public:
  explicit LinRegModel(int d) : d_(d), tensors_(make_layout({{"linear.weight", {d}}})) {}
  std::string name() const override { return "linreg"; }
  const std::vector<TensorInfo>& tensors() const override { return tensors_; }
  void init_params(std::span<float> w, uint64_t) const override { std::fill(w.begin(), w.end(), 0.f); }
  std::unique_ptr<Workspace> make_workspace(int) const override { return std::make_unique<Workspace>(); }
  double loss_grad(std::span<const float> w, const Batch& b, std::span<float> g, Workspace&,
                   uint64_t) const override {
    std::fill(g.begin(), g.end(), 0.f);
    double loss = 0;
    for (int i = 0; i < b.n; ++i) {
      const float* x = &b.x[static_cast<size_t>(i) * static_cast<size_t>(d_)];
      double r = -b.y[static_cast<size_t>(i)];
      for (int j = 0; j < d_; ++j) r += static_cast<double>(w[static_cast<size_t>(j)]) * x[j];
      loss += 0.5 * r * r;
      for (int j = 0; j < d_; ++j) g[static_cast<size_t>(j)] += static_cast<float>(r * x[j] / b.n);
    }
    return loss / b.n;
  }
  EvalResult evaluate(std::span<const float> w, const Batch& b, Workspace& ws) const override {
    std::vector<float> g(w.size());
    EvalResult ev;
    ev.loss_sum = loss_grad(w, b, g, ws, 0) * b.n;
    ev.count = b.n;
    return ev;
  }
  double flops_per_sample() const override { return 6.0 * d_; }  // forward + backward

 private:
  int d_;
  std::vector<TensorInfo> tensors_;
};

// The factory the registry calls with the resolved parameters and the data seed.
class LinRegMaker final : public TaskMaker {
 public:
  LinRegMaker(const LinRegParams& p, uint64_t data_seed) : p_(p), seed_(data_seed) {}
  Task make() override {
    return Task{std::make_unique<LinRegModel>(static_cast<int>(p_.dim)),
                std::make_shared<LinRegData>(p_, seed_), nullptr};
  }

 private:
  LinRegParams p_;
  uint64_t seed_;
};

}  // namespace wb::models

WB_REGISTER_MODEL("linreg", wb::models::LinRegMaker, wb::models::LinRegParams,
                  "least-squares linear regression on Gaussian data (docs/extending.md example)");
