#include "models/lenet.h"

#include <algorithm>

#include "models/image_dataset.h"
#include "core/error.h"

namespace wb::models {

NetSpec lenet5_spec() {
  // Horovod examples/pytorch/pytorch_mnist.py, Net.forward:
  //   x = F.relu(F.max_pool2d(self.conv1(x), 2))
  //   x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
  //   x = x.view(-1, 320); x = F.relu(self.fc1(x))
  //   x = F.dropout(x, training=self.training); x = self.fc2(x); F.log_softmax(x)
  NetSpec s;
  s.name = "lenet5";
  s.c = 1, s.h = 28, s.w = 28;
  s.layers = {conv("conv1", 10, 5),
              max_pool2(),
              relu(),
              conv("conv2", 20, 5),
              dropout2d(0.5),
              max_pool2(),
              relu(),
              linear("fc1", 50),
              relu(),
              dropout(0.5),
              linear("fc2", 10)};
  return s;
}

NetSpec tiny_every_layer_spec() {
  NetSpec s;
  s.name = "tiny";
  s.c = 1, s.h = 6, s.w = 6;
  s.layers = {conv("conv1", 2, 3, 1), relu(), max_pool2(),  dropout2d(0.5),
              linear("fc1", 5),       relu(), dropout(0.3), linear("fc2", 3)};
  return s;
}

NetSpec lenet5_classic_spec() {
  NetSpec s;
  s.name = "lenet5_classic";
  s.c = 1, s.h = 28, s.w = 28;
  s.layers = {conv("conv1", 6, 5, 2),
              relu(),
              max_pool2(),
              conv("conv2", 16, 5),
              relu(),
              max_pool2(),
              linear("fc1", 120),
              relu(),
              linear("fc2", 84),
              relu(),
              linear("fc3", 10)};
  return s;
}

ConvNetModel::ConvNetModel(const NetSpec& spec) : net_(analyze(spec)), fast_(net_) {}

void ConvNetModel::init_params(std::span<float> w, uint64_t seed) const {
  models::init_params(net_, w, seed);
}

std::unique_ptr<Workspace> ConvNetModel::make_workspace(int max_batch) const {
  return fast_.make_workspace(max_batch);
}

void ConvNetModel::check_batch(const Batch& b, size_t w_size) const {
  WB_ASSERT(w_size == net_.num_params, name() + ": parameter buffer of " + std::to_string(w_size) +
                                           " floats, expected " + std::to_string(net_.num_params));
  WB_ASSERT(b.n >= 0 && b.x.size() >= static_cast<size_t>(b.n) * net_.layers[0].in_size() &&
                b.label.size() >= static_cast<size_t>(b.n),
            name() + ": batch holds fewer inputs/labels than b.n");
}

double ConvNetModel::loss_grad(std::span<const float> w, const Batch& b, std::span<float> g,
                               Workspace& ws, uint64_t noise_seed) const {
  check_batch(b, w.size());
  WB_ASSERT(g.size() == w.size(), "gradient buffer size");
  auto* fw = dynamic_cast<FastWorkspace*>(&ws);
  WB_ASSERT(fw, name() + ": workspace was not made by this model");
  return fast_.loss_grad(w.data(), b.x.data(), b.label.data(), b.n, g.data(), *fw, noise_seed);
}

// Partial backpropagation for LPP-SGD (Chatterjee et al., arXiv:2203.06638, Algorithm 1
// line 5): the fast path's backward loop runs from the loss down to the stage (conv/linear
// layer) that owns first_tensor and stops there -- no weight gradients below it and no data
// gradient out of it. The prefix of g (all tensors before first_tensor, including the
// owning layer's weight when first_tensor is its bias) is zeroed, as Model's contract says.
double ConvNetModel::loss_grad_from(std::span<const float> w, const Batch& b, std::span<float> g,
                                    Workspace& ws, uint64_t noise_seed, size_t first_tensor) const {
  const auto& t = net_.tensors;
  if (first_tensor == 0) return loss_grad(w, b, g, ws, noise_seed);
  check_batch(b, w.size());
  WB_ASSERT(g.size() == w.size(), "gradient buffer size");
  auto* fw = dynamic_cast<FastWorkspace*>(&ws);
  WB_ASSERT(fw, name() + ": workspace was not made by this model");
  const size_t off = first_tensor < t.size() ? t[first_tensor].offset : g.size();
  // Stage s owns tensors [w_off, b_off + size): the last stage whose weight starts at or
  // before off is the first one whose gradient is needed.
  const auto& st = fast_.stages();
  int first_stage = static_cast<int>(st.size());
  for (size_t s = 0; s < st.size(); ++s)
    if (net_.layers[static_cast<size_t>(st[s].layer)].w_off <= off) first_stage = static_cast<int>(s);
  if (off >= g.size()) first_stage = static_cast<int>(st.size()) - 1;  // loss only: last stage
  const double loss = fast_.loss_grad(w.data(), b.x.data(), b.label.data(), b.n, g.data(), *fw,
                                      noise_seed, first_stage);
  std::fill(g.begin(), g.begin() + static_cast<std::ptrdiff_t>(off), 0.0f);
  return loss;
}

// The cost of that pass, counted as analyze() counts flops_per_sample: every forward MAC,
// then for each stage from the last down to the first needed one its weight gradient and,
// except at that first needed stage (and layer 0), its data gradient.
double ConvNetModel::flops_per_sample_from(size_t first_tensor) const {
  if (first_tensor == 0) return flops_per_sample();
  const size_t off = first_tensor < net_.tensors.size() ? net_.tensors[first_tensor].offset
                                                        : net_.num_params;
  std::vector<double> macs;
  std::vector<size_t> w_off;
  for (const LayerInfo& li : net_.layers) {
    if (li.spec.kind == LayerKind::kConv)
      macs.push_back(static_cast<double>(li.out_size()) * li.conv().kdim());
    else if (li.spec.kind == LayerKind::kLinear)
      macs.push_back(static_cast<double>(li.c) * li.spec.out);
    else
      continue;
    w_off.push_back(li.w_off);
  }
  size_t first = macs.size() - 1;
  for (size_t s = 0; s < macs.size(); ++s)
    if (w_off[s] <= off) first = s;
  double fwd = 0, bwd = 0;
  for (size_t s = 0; s < macs.size(); ++s) {
    fwd += macs[s];
    if (s > first) bwd += 2 * macs[s];
    if (s == first) bwd += macs[s];
  }
  return 2.0 * (fwd + bwd);
}

EvalResult ConvNetModel::evaluate(std::span<const float> w, const Batch& b, Workspace& ws) const {
  check_batch(b, w.size());
  auto* fw = dynamic_cast<FastWorkspace*>(&ws);
  WB_ASSERT(fw, name() + ": workspace was not made by this model");
  return fast_.evaluate(w.data(), b.x.data(), b.label.data(), b.n, *fw);
}

double ConvNetModel::reference_loss_grad(std::span<const float> w, const Batch& b,
                                         std::span<float> g, uint64_t noise_seed) const {
  check_batch(b, w.size());
  return reference_pass<float>(net_, w.data(), b.x.data(), b.label.data(), b.n, g.data(), true,
                               noise_seed);
}

double ConvNetModel::loss_grad_f64(std::span<const double> w, const Batch& b, std::span<double> g,
                                   uint64_t noise_seed) const {
  check_batch(b, w.size());
  WB_ASSERT(g.size() == w.size(), "gradient buffer size");
  return reference_pass<double>(net_, w.data(), b.x.data(), b.label.data(), b.n, g.data(), true,
                                noise_seed);
}

void ConvNetModel::hvp_f64(std::span<const double> w, std::span<const double> v, const Batch& b,
                           std::span<double> hv, uint64_t noise_seed) const {
  check_batch(b, w.size());
  WB_ASSERT(v.size() == w.size() && hv.size() == w.size(), "hvp buffer sizes");
  // Forward-over-reverse: gradient at w + v*eps; its eps part is H v (models/dual.h).
  std::vector<Dual<double>> wd(w.size()), gd(w.size());
  for (size_t i = 0; i < w.size(); ++i) wd[i] = Dual<double>(w[i], v[i]);
  reference_pass<Dual<double>>(net_, wd.data(), b.x.data(), b.label.data(), b.n, gd.data(), true,
                               noise_seed);
  for (size_t i = 0; i < w.size(); ++i) hv[i] = gd[i].d;
}

Task make_image_task(const NetSpec& spec, const LenetParams& p) {
  Task t;
  auto model = std::make_unique<ConvNetModel>(spec);
  const int classes = model->net().classes;
  ImageSplits s = load_mnist_dir(p.data_dir, classes, static_cast<uint64_t>(p.train_limit),
                                 static_cast<uint64_t>(p.test_limit));
  const NetInfo& net = model->net();
  if (s.train->h != net.spec.h || s.train->w != net.spec.w)
    throw UserError(s.train->source, spec.name + " expects " + std::to_string(net.spec.h) + "x" +
                                         std::to_string(net.spec.w) + " images, the file has " +
                                         std::to_string(s.train->h) + "x" +
                                         std::to_string(s.train->w));
  t.train = std::make_shared<ImageDataset>(s.train, p.normalize_mean, p.normalize_std);
  t.test = std::make_shared<ImageDataset>(s.test, p.normalize_mean, p.normalize_std);
  t.model = std::move(model);
  return t;
}

namespace {

class Lenet5Maker : public TaskMaker {
 public:
  Lenet5Maker(const LenetParams& p, uint64_t /*data_seed: data order is the sampler's*/) : p_(p) {}
  Task make() override { return make_image_task(lenet5_spec(), p_); }

 private:
  LenetParams p_;
};

class LenetClassicMaker : public TaskMaker {
 public:
  LenetClassicMaker(const LenetParams& p, uint64_t) : p_(p) {}
  Task make() override { return make_image_task(lenet5_classic_spec(), p_); }

 private:
  LenetParams p_;
};

}  // namespace

WB_REGISTER_MODEL("lenet5", Lenet5Maker, LenetParams,
                  "Horovod's PyTorch MNIST net (Adasum paper's LeNet-5, 21,840 params) on "
                  "Fashion-MNIST/MNIST-format images");
WB_REGISTER_MODEL("lenet5_classic", LenetClassicMaker, LenetParams,
                  "LeCun 1998 LeNet-5 shape (ReLU, max-pool, 61,706 params) on 28x28 images "
                  "padded by 2");

}  // namespace wb::models
