// resnet: the CIFAR ResNet of He et al. 2016 (models/resnet.h). Gradients against central
// differences and the exact Hessian-vector product (forward-over-reverse through the
// BatchNorm batch statistics) against central differences of the gradient, over the norm x
// shortcut configurations; the float pass against the double oracle; the running
// statistics; crop-flip augmentation; the CIFAR-10 reader's errors; and the check against
// PyTorch (tests/golden/torch/resnet8_*.f64 from tests/reference/resnet_torch.py).
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "models/image_dataset.h"
#include "models/resnet.h"

using namespace wb;
using namespace wb::models;
namespace fs = std::filesystem;

namespace {

ResnetConfig small_config(NormKind norm, bool shortcut_b) {
  ResnetConfig c;
  c.depth = 8;
  c.width = 4;
  c.norm = norm;
  c.shortcut_b = shortcut_b;
  c.groups = 2;
  c.c = 3, c.h = 8, c.w = 8;
  return c;
}

Batch random_batch(const ResnetConfig& c, int n, uint64_t seed) {
  core::Rng r(seed);
  Batch b;
  b.n = n;
  b.x.resize(static_cast<size_t>(n) * c.c * c.h * c.w);
  for (float& v : b.x) v = static_cast<float>(r.uniform(-1.5, 1.5));
  for (int i = 0; i < n; ++i) b.label.push_back(static_cast<int32_t>(r.below(10)));
  return b;
}

// Initial parameters with the norm affine parameters moved off 1 / 0, so that gamma and beta
// gradients and their Hessian blocks are generic.
std::vector<double> test_params(const ResnetModel& m, uint64_t seed) {
  std::vector<float> wf(m.num_params());
  m.init_params(wf, seed);
  core::Rng r(seed + 99);
  std::vector<double> w(wf.begin(), wf.end());
  for (double& v : w) v += 0.1 * r.uniform(-1, 1);
  return w;
}

const char* norm_name(NormKind k) {
  return k == NormKind::kBatch ? "batch" : k == NormKind::kGroup ? "group" : "none";
}

}  // namespace

TEST_SUITE("resnet") {
  TEST_CASE("resnet: depth 6n+2, the paper's parameter count, PyTorch tensor names") {
    ResnetConfig c;  // ResNet-20, width 16, batch norm, option A, 3x32x32
    ResnetModel m(c);
    // He et al. 2016 Table 6: ResNet-20 has 0.27M parameters.
    CHECK(m.num_params() == 269722);
    CHECK(m.tensors().front().name == "conv1.weight");
    CHECK(m.tensors()[1].name == "bn1.weight");
    CHECK(m.tensors()[3].name == "layer1.0.conv1.weight");
    CHECK(m.tensors().back().name == "linear.bias");
    // 19 BatchNorm layers: running mean + var of 16*7 + 32*6 + 64*6 channels.
    CHECK(m.state_size() == 2 * (16 * 7 + 32 * 6 + 64 * 6));
    ResnetConfig b = c;
    b.shortcut_b = true;
    ResnetModel mb(b);
    CHECK(mb.num_params() == 269722 + (16 * 32 + 64) + (32 * 64 + 128));
    // 19 conv layers + 1 linear: 20 weighted layers; ResNet-8 has 7 + 1.
    int convs = 0;
    for (const TensorInfo& t : m.tensors()) convs += t.shape.size() == 4;
    CHECK(convs == 19);
  }

  TEST_CASE("resnet: gradient = central differences; exact HVP = differences of the gradient") {
    double worst_g = 0, worst_h = 0;
    for (NormKind norm : {NormKind::kBatch, NormKind::kGroup, NormKind::kNone})
      for (bool sb : {false, true}) {
        ResnetModel m(small_config(norm, sb));
        const Batch b = random_batch(m.config(), 5, 7);
        std::vector<double> w = test_params(m, 3), g(w.size());
        m.loss_grad_f64(w, b, g, 0);
        // Gradient: a few coordinates of every tensor.
        double wg = 0;
        for (const TensorInfo& t : m.tensors())
          for (size_t k = 0; k < std::min<size_t>(t.size, 4); ++k) {
            const size_t i = t.offset + (k * 7919) % t.size;
            const double h = 1e-6, w0 = w[i];
            std::vector<double> scratch(w.size());
            w[i] = w0 + h;
            const double lp = m.loss_grad_f64(w, b, scratch, 0);
            w[i] = w0 - h;
            const double lm = m.loss_grad_f64(w, b, scratch, 0);
            w[i] = w0;
            const double fd = (lp - lm) / (2 * h);
            const double rel = std::fabs(fd - g[i]) / std::max(std::fabs(g[i]), 1e-3);
            INFO(norm_name(norm) << (sb ? " B " : " A ") << t.name << "[" << i << "] grad " << g[i]
                                 << " fd " << fd);
            CHECK(rel < 1e-5);
            wg = std::max(wg, rel);
          }
        // HVP along a random direction.
        core::Rng r(11);
        std::vector<double> v(w.size()), hv(w.size()), gp(w.size()), gm(w.size());
        for (double& x : v) x = r.uniform(-1, 1);
        m.hvp_f64(w, v, b, hv, 0);
        const double h = 1e-5;
        std::vector<double> wp(w), wm(w);
        for (size_t i = 0; i < w.size(); ++i) wp[i] += h * v[i], wm[i] -= h * v[i];
        m.loss_grad_f64(wp, b, gp, 0);
        m.loss_grad_f64(wm, b, gm, 0);
        double num = 0, den = 0;
        for (size_t i = 0; i < w.size(); ++i) {
          const double fd = (gp[i] - gm[i]) / (2 * h);
          num += (fd - hv[i]) * (fd - hv[i]);
          den += hv[i] * hv[i];
        }
        const double rel_h = std::sqrt(num / den);
        MESSAGE("resnet-8 norm " << std::string(norm_name(norm)) << " shortcut " << std::string(sb ? "B" : "A")
                                 << ": gradient worst rel. error " << wg << ", HVP rel. error "
                                 << rel_h);
        CHECK(rel_h < 1e-6);
        CHECK(den > 0);
        worst_g = std::max(worst_g, wg);
        worst_h = std::max(worst_h, rel_h);
      }
    MESSAGE("resnet over 6 configs: gradient worst rel " << worst_g << ", HVP worst rel " << worst_h);
  }

  TEST_CASE("resnet: the float pass agrees with the double oracle") {
    for (NormKind norm : {NormKind::kBatch, NormKind::kGroup, NormKind::kNone}) {
      ResnetModel m(small_config(norm, norm == NormKind::kGroup));
      const Batch b = random_batch(m.config(), 6, 5);
      const std::vector<double> w = test_params(m, 4);
      std::vector<double> g(w.size());
      const double l = m.loss_grad_f64(w, b, g, 0);
      std::vector<float> wf(w.begin(), w.end()), gf(w.size());
      auto ws = m.make_workspace(6);
      const double lf = m.loss_grad(wf, b, gf, *ws, 0);
      CHECK(lf == doctest::Approx(l).epsilon(1e-5));
      double num = 0, den = 0;
      for (size_t i = 0; i < g.size(); ++i) {
        num += (gf[i] - g[i]) * (gf[i] - g[i]);
        den += g[i] * g[i];
      }
      CHECK(std::sqrt(num / den) < 1e-4);
    }
  }

  TEST_CASE("resnet: running statistics follow PyTorch's momentum rule; evaluation uses them") {
    ResnetModel m(small_config(NormKind::kBatch, false));
    const Batch b = random_batch(m.config(), 4, 9);
    std::vector<double> wd = test_params(m, 5);
    std::vector<float> w(wd.begin(), wd.end()), g(w.size()), st(m.state_size());
    m.init_state(st);
    auto ws = m.make_workspace(4);
    m.loss_grad_state(w, b, g, *ws, 0, st);
    // The stem's BatchNorm sees the stem convolution's output: its batch mean and unbiased
    // variance, per channel, moved in by momentum 0.1 from (0, 1).
    const ResnetModel::ConvL& sc = m.stem_;
    std::vector<double> y(static_cast<size_t>(4) * sc.g.out_size());
    std::vector<double> xd(b.x.begin(), b.x.end());
    rref::conv_forward<double>(sc.g, 4, xd.data(), wd.data() + sc.w_off, nullptr, y.data());
    const int C = sc.g.cout, HW = sc.g.ho() * sc.g.wo();
    for (int c = 0; c < C; ++c) {
      double s = 0, s2 = 0;
      for (int n = 0; n < 4; ++n)
        for (int p = 0; p < HW; ++p) s += y[(static_cast<size_t>(n) * C + c) * HW + p];
      const double mu = s / (4.0 * HW);
      for (int n = 0; n < 4; ++n)
        for (int p = 0; p < HW; ++p) {
          const double d = y[(static_cast<size_t>(n) * C + c) * HW + p] - mu;
          s2 += d * d;
        }
      CHECK(st[c] == doctest::Approx(0.1 * mu).epsilon(1e-4));
      CHECK(st[C + c] == doctest::Approx(0.9 + 0.1 * s2 / (4.0 * HW - 1)).epsilon(1e-4));
    }
    // Evaluation is per sample with running statistics: one batch = the sum of its halves,
    // and it differs from normalizing by the batch's own statistics.
    Batch h1 = b, h2 = b;
    h1.n = h2.n = 2;
    h2.x.assign(b.x.begin() + b.x.size() / 2, b.x.end());
    h2.label.assign(b.label.begin() + 2, b.label.end());
    const EvalResult all = m.evaluate_state(w, st, b, *ws);
    const EvalResult a = m.evaluate_state(w, st, h1, *ws), c2 = m.evaluate_state(w, st, h2, *ws);
    CHECK(all.count == 4);
    CHECK(all.loss_sum == doctest::Approx(a.loss_sum + c2.loss_sum).epsilon(1e-5));
    CHECK(std::fabs(all.loss_sum - m.evaluate(w, b, *ws).loss_sum) > 1e-4);
  }

  TEST_CASE("resnet: crop_flip is drawn from the noise seed and moves pixels, never invents them") {
    ResnetConfig c = small_config(NormKind::kBatch, false);
    c.crop_flip = true;
    c.fill = -7.f;
    ResnetModel m(c);
    Batch b = random_batch(c, 3, 1);
    std::vector<float> a1, a2, a3;
    m.augment(b, 42, a1);
    m.augment(b, 42, a2);
    m.augment(b, 43, a3);
    CHECK(a1 == a2);
    CHECK(a1 != a3);
    const size_t ss = static_cast<size_t>(c.c) * c.h * c.w;
    int filled = 0;
    for (size_t s = 0; s < 3; ++s)
      for (size_t i = 0; i < ss; ++i) {
        const float v = a1[s * ss + i];
        if (v == -7.f) {
          ++filled;
          continue;
        }
        bool found = false;  // the same channel of the same sample holds it
        const size_t ch = i / (c.h * c.w);
        for (size_t k = ch * c.h * c.w; k < (ch + 1) * c.h * c.w && !found; ++k)
          found = b.x[s * ss + k] == v;
        CHECK(found);
      }
    CHECK(filled > 0);
    // Training passes see the augmented batch: loss_grad differs between seeds.
    std::vector<float> w(m.num_params()), g(w.size());
    m.init_params(w, 1);
    auto ws = m.make_workspace(3);
    CHECK(m.loss_grad(w, b, g, *ws, 42) != m.loss_grad(w, b, g, *ws, 43));
    CHECK(m.loss_grad(w, b, g, *ws, 42) == m.loss_grad(w, b, g, *ws, 42));
  }

  TEST_CASE("resnet: CIFAR-10 binaries load; bad files name the file and the offset") {
    const fs::path dir = fs::temp_directory_path() / ("wb_cifar_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    auto write = [&](const std::string& name, int records, int bad_label_at, int extra_bytes) {
      std::ofstream f(dir / name, std::ios::binary);
      for (int r = 0; r < records; ++r) {
        const char label = static_cast<char>(r == bad_label_at ? 10 : r % 10);
        f.put(label);
        for (int i = 0; i < 3072; ++i) f.put(static_cast<char>((r * 31 + i) & 0xff));
      }
      for (int i = 0; i < extra_bytes; ++i) f.put(0);
    };
    for (int i = 1; i <= 5; ++i) write("data_batch_" + std::to_string(i) + ".bin", 3, -1, 0);
    write("test_batch.bin", 2, -1, 0);
    CifarSplits s = load_cifar10_dir(dir.string(), 0, 0);
    CHECK(s.train->size() == 15);
    CHECK(s.test->size() == 2);
    CHECK(s.train->c == 3);
    CHECK(s.train->pixels[5] == static_cast<uint8_t>(5));
    CHECK(s.train->labels[4] == 1);
    write("data_batch_3.bin", 3, 2, 0);
    try {
      load_cifar10_dir(dir.string(), 0, 0);
      CHECK_MESSAGE(false, "a label of 10 was accepted");
    } catch (const UserError& e) {
      const std::string msg = e.what();
      CHECK(msg.find("data_batch_3.bin") != std::string::npos);
      CHECK(msg.find("offset 6146") != std::string::npos);
    }
    write("data_batch_3.bin", 3, -1, 5);
    try {
      load_cifar10_dir(dir.string(), 0, 0);
      CHECK_MESSAGE(false, "a truncated record was accepted");
    } catch (const UserError& e) {
      const std::string msg = e.what();
      CHECK(msg.find("data_batch_3.bin") != std::string::npos);
      CHECK(msg.find("offset 9219") != std::string::npos);
    }
    fs::remove_all(dir);
  }
}

namespace {

std::vector<double> read_golden(const std::string& name) {
  const fs::path p = fs::path(WB_SOURCE_DIR) / "tests/golden/torch" / name;
  std::ifstream f(p, std::ios::binary);
  std::vector<double> v;
  double x;
  while (f.read(reinterpret_cast<char*>(&x), sizeof x)) v.push_back(x);
  return v;
}

// Relative error of a[off, off+n) against ref: ||a - ref|| / ||ref||.
template <class A>
double rel_err(const A& a, const std::vector<double>& ref, size_t off, size_t n, size_t aoff) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(a[aoff + i]) - ref[off + i];
    num += d * d;
    den += ref[off + i] * ref[off + i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

}  // namespace

TEST_SUITE("resnet") {
  TEST_CASE("resnet: ResNet-8 matches PyTorch (committed golden, tests/reference/resnet_torch.py)") {
    for (const char* opt : {"A", "B"}) {
      const std::string file = std::string("resnet8_") + opt + ".f64";
      const std::vector<double> gold = read_golden(file);
      REQUIRE_MESSAGE(gold.size() > 4, file << " is missing");
      const size_t np = static_cast<size_t>(gold[0]), nx = static_cast<size_t>(gold[1]),
                   nl = static_cast<size_t>(gold[2]), ns = static_cast<size_t>(gold[3]);
      REQUIRE(gold.size() == 4 + np + nx + nl + 1 + np + ns + 1);
      ResnetConfig c;
      c.depth = 8;
      c.width = 4;
      c.c = 3, c.h = 8, c.w = 8;
      c.shortcut_b = opt[0] == 'B';
      ResnetModel m(c);
      REQUIRE(m.num_params() == np);
      REQUIRE(m.state_size() == ns);
      size_t o = 4;
      std::vector<double> wd(gold.begin() + o, gold.begin() + o + np);
      o += np;
      Batch b;
      b.n = static_cast<int>(nl);
      for (size_t i = 0; i < nx; ++i) b.x.push_back(static_cast<float>(gold[o + i]));
      o += nx;
      for (size_t i = 0; i < nl; ++i) b.label.push_back(static_cast<int32_t>(gold[o + i]));
      o += nl;
      const double loss = gold[o++];
      const size_t go = o, so = o + np;
      const double eval_sum = gold[so + ns];

      std::vector<double> gd(np);
      CHECK(m.loss_grad_f64(wd, b, gd, 0) == doctest::Approx(loss).epsilon(1e-12));
      std::vector<float> w(wd.begin(), wd.end()), g(np), st(ns);
      m.init_state(st);
      auto ws = m.make_workspace(b.n);
      CHECK(m.loss_grad_state(w, b, g, *ws, 0, st) == doctest::Approx(loss).epsilon(1e-5));
      double worst_d = 0, worst_f = 0;
      for (const TensorInfo& t : m.tensors()) {
        const double ed = rel_err(gd, gold, go + t.offset, t.size, t.offset);
        const double ef = rel_err(g, gold, go + t.offset, t.size, t.offset);
        INFO(opt << " " << t.name << ": double " << ed << ", float " << ef);
        CHECK(ed < 1e-10);
        CHECK(ef < 1e-4);
        worst_d = std::max(worst_d, ed);
        worst_f = std::max(worst_f, ef);
      }
      const double es = rel_err(st, gold, so, ns, 0);
      CHECK(es < 1e-5);
      const EvalResult ev = m.evaluate_state(w, st, b, *ws);
      CHECK(ev.loss_sum == doctest::Approx(eval_sum).epsilon(1e-5));
      MESSAGE("resnet8 shortcut " << std::string(opt) << " vs PyTorch: loss " << loss
                                  << ", worst per-tensor grad rel. error double " << worst_d
                                  << " float " << worst_f << ", running stats " << es
                                  << ", eval loss " << ev.loss_sum << " vs " << eval_sum);
    }
  }
}

TEST_SUITE("resnet") {
  TEST_CASE("resnet: fast GEMM kernels = reference loops (atol + rtol |ref|), awkward shapes") {
    // 16x16 (aligned panels), 28x28 -> 14x14 -> 7x7 (ragged panels: 784, 196, 49 columns),
    // 11x9 (odd strided sizes); option A and B; width 8 and 6 (row tails of the 8-row blocks).
    struct Case {
      int h, w, width;
      bool b;
      NormKind norm;
    };
    for (const Case& k : {Case{16, 16, 8, false, NormKind::kBatch}, Case{28, 28, 6, true, NormKind::kBatch},
                          Case{11, 9, 8, true, NormKind::kNone}, Case{12, 12, 4, false, NormKind::kGroup}}) {
      ResnetConfig c;
      c.depth = 14;
      c.width = k.width;
      c.groups = 2;
      c.norm = k.norm;
      c.shortcut_b = k.b;
      c.c = 3, c.h = k.h, c.w = k.w;
      ResnetModel m(c);
      const Batch b = random_batch(c, 5, 21);
      std::vector<float> w(m.num_params()), gr(w.size()), gf(w.size());
      m.init_params(w, 8);
      std::vector<float> sr(m.state_size()), sf(m.state_size());
      m.init_state(sr);
      m.init_state(sf);
      const double lr = m.reference_loss_grad(w, b, gr, 0, sr);
      auto ws = m.make_workspace(5);
      const double lf = m.loss_grad_state(w, b, gf, *ws, 0, sf);
      CHECK(lf == doctest::Approx(lr).epsilon(1e-5));
      double gmax = 0;
      for (float v : gr) gmax = std::max(gmax, static_cast<double>(std::fabs(v)));
      int bad = 0;
      for (size_t i = 0; i < w.size(); ++i)
        if (std::fabs(gf[i] - gr[i]) > 1e-5 * gmax + 1e-3 * std::fabs(gr[i])) ++bad;
      INFO(k.h << "x" << k.w << " width " << k.width << ": " << bad << " gradient entries differ");
      CHECK(bad == 0);
      for (size_t i = 0; i < sr.size(); ++i) CHECK(sf[i] == doctest::Approx(sr[i]).epsilon(1e-5));
      // Evaluation (running statistics) through both kernels.
      const EvalResult ef = m.evaluate_state(w, sf, b, *ws);
      CHECK(ef.count == 5);
    }
  }
}
