// Whole networks on the GPU (cuda/net_cuda.h) against the CPU models (models/lenet.h):
//  - one LeNet-5 (and lenet5_classic) forward + backward on the same parameters, batch and
//    dropout noise seed: loss and gradient against ConvNetModel::reference_loss_grad
//    (float) and loss_grad_f64 (double), evaluation (no dropout) against reference_pass;
//  - the exact HVP (DeviceNet<DualD>) against ConvNetModel::hvp_f64 on a tiny net with every
//    layer kind;
//  - 200 steps of momentum SGD on LeNet-5 from the same initialization, the CPU fast path
//    (what a CPU worker runs) against the GPU: loss curves within tolerance.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "cuda/comm_cuda.h"
#include "cuda/net_cuda.h"
#include "models/lenet.h"
#include "tests/cuda/cuda_test_util.h"

using namespace wb;
using namespace wb::cuda::test;
using models::Batch;
using models::ConvNetModel;

namespace {

// A learnable task: class c's images are a fixed random template plus noise.
Batch template_batch(const models::NetInfo& net, int n, uint64_t seed) {
  const size_t in = net.layers[0].in_size();
  std::vector<std::vector<float>> tmpl(net.classes);
  for (int c = 0; c < net.classes; ++c) tmpl[c] = randn<float>(in, 9000 + c);
  core::Rng r(seed);
  Batch b;
  b.n = n;
  b.x.resize(static_cast<size_t>(n) * in);
  b.label.resize(n);
  for (int i = 0; i < n; ++i) {
    b.label[i] = static_cast<int32_t>(r.below(net.classes));
    for (size_t k = 0; k < in; ++k)
      b.x[i * in + k] = tmpl[b.label[i]][k] + static_cast<float>(0.5 * r.normal());
  }
  return b;
}

void check_float_pass(const models::NetSpec& spec, int n) {
  CAPTURE(spec.name);
  CAPTURE(n);
  const ConvNetModel m(spec);
  std::vector<float> w(m.num_params()), g(w.size());
  m.init_params(w, 11);
  const Batch b = random_batch(m.net(), n, 12);
  const double loss = m.reference_loss_grad(w, b, g, 42);

  cuda::DeviceNet<float> dn(m.net(), n);
  dn.set_batch(b.x.data(), b.label.data(), n);
  auto gw = to_device(w);
  cuda::DeviceBuffer<float> gg(w.size());
  const float gloss = dn.pass(gw.data(), gg.data(), true, 42);
  CHECK(gloss == doctest::Approx(loss).epsilon(1e-5));
  check_close(gg.to_host(), g, 1e-4, 1e-3, spec.name + " gradient (float)");

  // Evaluation: no dropout, loss sum and correct count.
  models::EvalResult ev, gev;
  models::reference_pass<float>(m.net(), w.data(), b.x.data(), b.label.data(), n, nullptr, false, 0,
                                &ev);
  dn.pass(gw.data(), nullptr, false, 0, &gev);
  CHECK(gev.count == n);
  CHECK(gev.correct == ev.correct);
  CHECK(gev.loss_sum == doctest::Approx(ev.loss_sum).epsilon(1e-5));

  // Double: the precision oracle's own path.
  std::vector<double> wd(w.begin(), w.end()), gd(w.size());
  const double lossd = m.loss_grad_f64(wd, b, gd, 42);
  cuda::DeviceNet<double> dnd(m.net(), n);
  dnd.set_batch(b.x.data(), b.label.data(), n);
  auto gwd = to_device(wd);
  cuda::DeviceBuffer<double> ggd(wd.size());
  const double glossd = dnd.pass(gwd.data(), ggd.data(), true, 42);
  CHECK(glossd == doctest::Approx(lossd).epsilon(1e-12));
  check_close(ggd.to_host(), gd, 1e-12, 1e-9, spec.name + " gradient (double)");
}

}  // namespace

TEST_CASE("cuda LeNet-5 forward+backward vs the CPU model") {
  check_float_pass(models::lenet5_spec(), 13);
  check_float_pass(models::lenet5_spec(), 32);
  check_float_pass(models::lenet5_classic_spec(), 5);
  check_float_pass(models::tiny_every_layer_spec(), 7);
}

TEST_CASE("cuda exact HVP (DualD) vs ConvNetModel::hvp_f64") {
  for (const models::NetSpec& spec : {models::tiny_every_layer_spec(), models::lenet5_spec()}) {
    CAPTURE(spec.name);
    const ConvNetModel m(spec);
    std::vector<float> wf(m.num_params());
    m.init_params(wf, 21);
    std::vector<double> w(wf.begin(), wf.end()), v = randn<double>(w.size(), 22), hv(w.size()),
                                                 ghv(w.size());
    const Batch b = random_batch(m.net(), 6, 23);
    m.hvp_f64(w, v, b, hv, 5);
    cuda::hvp_f64(m.net(), w, v, b.x.data(), b.label.data(), b.n, ghv, 5);
    double scale = 0;
    for (double x : hv) scale = std::max(scale, std::fabs(x));
    check_close(ghv, hv, 1e-10 * scale, 1e-8, spec.name + " Hv");
  }
}

TEST_CASE("cuda LeNet-5: 200 momentum-SGD steps, CPU fast path vs GPU, same curves") {
  const ConvNetModel m(models::lenet5_spec());
  const int n = 32, steps = 200;
  const float lr = 0.01f, mu = 0.5f;
  std::vector<float> w(m.num_params()), g(w.size()), buf(w.size(), 0.0f);
  m.init_params(w, 1);
  const std::vector<float> w0 = w;
  auto ws = m.make_workspace(n);

  cuda::DeviceNet<float> dn(m.net(), n);
  auto gw = to_device(w0);
  cuda::DeviceBuffer<float> gg(w.size()), gbuf(w.size());
  gbuf.zero();

  std::vector<double> cpu_loss(steps), gpu_loss(steps);
  for (int s = 0; s < steps; ++s) {
    const Batch b = template_batch(m.net(), n, 100 + s);
    const uint64_t noise = 1000 + s;
    cpu_loss[s] = m.loss_grad(w, b, g, *ws, noise);
    for (size_t i = 0; i < w.size(); ++i) {  // PyTorch SGD: buf = mu*buf + g; w -= lr*buf
      buf[i] = mu * buf[i] + g[i];
      w[i] -= lr * buf[i];
    }
    dn.set_batch(b.x.data(), b.label.data(), n);
    gpu_loss[s] = dn.pass(gw.data(), gg.data(), true, noise);
    cuda::combine<float>(gbuf.data(), gbuf.data(), gg.data(), w.size(), mu, 1.0);
    cuda::combine<float>(gw.data(), gw.data(), gbuf.data(), w.size(), 1.0, -lr);
  }
  device_sync();
  INFO("loss at step 0: cpu " << cpu_loss[0] << " gpu " << gpu_loss[0] << "; at step " << steps - 1
                              << ": cpu " << cpu_loss[steps - 1] << " gpu " << gpu_loss[steps - 1]);
  CHECK(cpu_loss[steps - 1] < 0.5 * cpu_loss[0]);  // the task is learnable: a real curve
  check_close(gpu_loss, cpu_loss, 5e-3, 2e-2, "training loss curve");
  // Parameters after 200 steps: relative distance.
  const std::vector<float> wg = gw.to_host();
  double diff = 0, norm = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    diff += (static_cast<double>(wg[i]) - w[i]) * (static_cast<double>(wg[i]) - w[i]);
    norm += (static_cast<double>(w[i]) - w0[i]) * (static_cast<double>(w[i]) - w0[i]);
  }
  INFO("||w_gpu - w_cpu|| / ||w_cpu - w0|| = " << std::sqrt(diff / norm));
  CHECK(std::sqrt(diff / norm) < 2e-2);
}
