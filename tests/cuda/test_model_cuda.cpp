// The "cuda" compute device (cuda/model_cuda.h, cuda/backend_cuda.cpp) against the CPU:
//  - CudaNetModel's loss_grad / evaluate / loss_grad_from against ConvNetModel (the fast path
//    a CPU worker runs) at awkward batch sizes, one workspace reused across sizes;
//  - passes from several host threads at once (the threaded LAP/LPP and Adaptive SGD modes),
//    each on its own workspace: the same results as one after the other;
//  - the whole runtime: one spec swept over "device": ["cpu", "cuda"] (sync SGD and Adasum,
//    4 logical workers, LeNet-5 on a small MNIST-format directory written here) -- same
//    simulated times, training curves and test accuracy within float tolerance.
#include <doctest/doctest.h>
#include <mpi.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "app/exec/runner.h"
#include "app/exec/training_loop.h"
#include "app/plan/sweep_plan.h"
#include "app/experiment/spec.h"
#include "cuda/model_cuda.h"
#include "models/lenet.h"
#include "tests/cuda/cuda_test_util.h"
#include "train/compute_device.h"

using namespace wb;
using namespace wb::cuda::test;
using models::Batch;
using models::ConvNetModel;

namespace {

// A small MNIST-format directory: class c's images are a fixed binary pattern plus noise,
// so 60 steps learn it (sync SGD's loss 2.3 -> 1.4 on the CPU: the curves are real curves).
std::filesystem::path write_mnist_dir(int n_train, int n_test) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("wb_cuda_mnist_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  core::Rng r(7);
  std::vector<uint8_t> pattern(10 * 784);
  for (auto& p : pattern) p = static_cast<uint8_t>(r.below(2) * 192);  // binary class patterns
  auto write = [&](const std::string& name, uint32_t magic, const std::vector<uint32_t>& dims,
                   const std::vector<uint8_t>& data) {
    std::ofstream f(dir / name, std::ios::binary);
    auto be = [&](uint32_t v) {
      for (int s = 24; s >= 0; s -= 8) f.put(static_cast<char>(v >> s));
    };
    be(magic);
    for (uint32_t d : dims) be(d);
    f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  };
  for (const char* split : {"train", "t10k"}) {
    const uint32_t n = static_cast<uint32_t>(std::string(split) == "train" ? n_train : n_test);
    std::vector<uint8_t> px(n * 784), lab(n);
    for (uint32_t i = 0; i < n; ++i) {
      lab[i] = static_cast<uint8_t>(r.below(10));
      for (size_t p = 0; p < 784; ++p) {
        const int v = pattern[lab[i] * 784 + p] + static_cast<int>(r.below(64));
        px[i * 784 + p] = static_cast<uint8_t>(v);
      }
    }
    write(std::string(split) + "-images-idx3-ubyte", 0x803, {n, 28, 28}, px);
    write(std::string(split) + "-labels-idx1-ubyte", 0x801, {n}, lab);
  }
  return dir;
}

}  // namespace

TEST_CASE("cuda device: CudaNetModel passes match the CPU model (lenet5, lenet5_classic)") {
  for (const auto& spec : {models::lenet5_spec(), models::lenet5_classic_spec()}) {
    const ConvNetModel cpu(spec);
    const cuda::CudaNetModel gpu(cpu);
    CHECK(gpu.name() == cpu.name());
    CHECK(gpu.num_params() == cpu.num_params());
    std::vector<float> w(cpu.num_params());
    gpu.init_params(w, 3);
    auto cws = cpu.make_workspace(64);
    auto gws = gpu.make_workspace(64);  // one workspace, reused across batch sizes
    for (int n : {1, 7, 33, 64}) {
      CAPTURE(spec.name);
      CAPTURE(n);
      const Batch b = random_batch(cpu.net(), n, 100 + static_cast<uint64_t>(n));
      std::vector<float> gc(w.size()), gg(w.size(), 123.f);
      const double lc = cpu.loss_grad(w, b, gc, *cws, 55);
      const double lg = gpu.loss_grad(w, b, gg, *gws, 55);
      CHECK(lg == doctest::Approx(lc).epsilon(1e-5));
      check_close(gg, gc, 1e-4, 1e-3, spec.name + " gradient");
      const auto ec = cpu.evaluate(w, b, *cws), eg = gpu.evaluate(w, b, *gws);
      CHECK(eg.count == ec.count);
      CHECK(eg.has_accuracy);
      CHECK(eg.loss_sum == doctest::Approx(ec.loss_sum).epsilon(1e-5));
      CHECK(std::fabs(eg.correct - ec.correct) <= 1.0);  // a near-tie may flip, not more
      // LPP-SGD's partial pass: Model's default, the full pass with the prefix zeroed.
      const size_t first = cpu.tensors().size() / 2;
      std::vector<float> gp(w.size(), 9.f);
      gpu.loss_grad_from(w, b, gp, *gws, 55, first);
      const size_t off = cpu.tensors()[first].offset;
      for (size_t i = 0; i < off; ++i) REQUIRE(gp[i] == 0.f);
      check_close(std::vector<float>(gp.begin() + static_cast<long>(off), gp.end()),
                  std::vector<float>(gc.begin() + static_cast<long>(off), gc.end()), 1e-4, 1e-3,
                  "partial gradient");
    }
  }
}

TEST_CASE("cuda device: passes from several host threads, one workspace each") {
  const ConvNetModel cpu(models::lenet5_spec());
  const cuda::CudaNetModel gpu(cpu);
  std::vector<float> w(cpu.num_params());
  gpu.init_params(w, 4);
  constexpr int kThreads = 4;
  std::vector<Batch> batches;
  std::vector<std::unique_ptr<models::Workspace>> ws;
  std::vector<std::vector<float>> seq(kThreads, std::vector<float>(w.size())),
      par(kThreads, std::vector<float>(w.size()));
  std::vector<double> seq_loss(kThreads), par_loss(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    batches.push_back(random_batch(cpu.net(), 16 + t, 200 + static_cast<uint64_t>(t)));
    ws.push_back(gpu.make_workspace(32));
    seq_loss[t] = gpu.loss_grad(w, batches[t], seq[t], *ws[t], 10 + static_cast<uint64_t>(t));
  }
  std::vector<std::thread> th;
  for (int t = 0; t < kThreads; ++t)
    th.emplace_back([&, t] {
      for (int rep = 0; rep < 5; ++rep)
        par_loss[t] = gpu.loss_grad(w, batches[t], par[t], *ws[t], 10 + static_cast<uint64_t>(t));
    });
  for (auto& x : th) x.join();
  for (int t = 0; t < kThreads; ++t) {
    CHECK(par_loss[t] == seq_loss[t]);  // the same kernels on the same data: the same bits
    check_equal(par[t], seq[t], "thread " + std::to_string(t) + " gradient");
  }
}

TEST_CASE("cuda device: a run swept over device cpu/cuda gives the same curves") {
  train::ComputeBackend* backend = train::find_compute_backend("cuda");
  REQUIRE(backend != nullptr);  // cuda_tests links the backend
  INFO(backend->open(MPI_COMM_WORLD));
  const auto dir = write_mnist_dir(600, 200);
  for (const char* algo : {"\"sync_sgd\"", "\"adasum\""}) {
    CAPTURE(algo);
    const std::string spec = std::string(R"({"name": "t", "base": {"model": {"name": "lenet5",
        "data_dir": ")") + dir.string() + R"("}, "algorithm": )" + algo + R"(,
        "optimizer": {"name": "sgd", "momentum": 0.5}, "workers": 4, "batch_size": 16,
        "lr": 0.02, "steps": 60, "log_every": 5, "eval_every": 30, "seed": 2},
        "sweep": {"device": ["cpu", "cuda"]}})";
    const auto e = app::parse_experiment(spec, "t.json");
    REQUIRE(e.runs.size() == 2);
    REQUIRE(e.runs[0].cfg.device == "cpu");
    REQUIRE(e.runs[1].cfg.device == "cuda");
    app::TaskCache cache;
    const auto& tc = cache.get(e.runs[0].cfg.model.value(), "cpu");
    const auto& tg = cache.get(e.runs[1].cfg.model.value(), "cuda");
    CHECK(tg.train == tc.train);  // the data are loaded once and shared
    CHECK(dynamic_cast<const cuda::CudaNetModel*>(tg.model.get()) != nullptr);
    const auto rc = app::execute_run(e.runs[0], tc, MPI_COMM_SELF, nullptr);
    const auto rg = app::execute_run(e.runs[1], tg, MPI_COMM_SELF, nullptr);
    REQUIRE(rc.status == "completed");
    REQUIRE(rg.status == "completed");
    REQUIRE(rg.curves.size() == rc.curves.size());
    CHECK(rg.curves.sim_s == rc.curves.sim_s);  // the cost model does not depend on the device
    CHECK(rc.curves.train_loss.back() < 0.8 * rc.curves.train_loss.front());  // it learns
    check_close(rg.curves.train_loss, rc.curves.train_loss, 5e-3, 2e-2, "training loss curve");
    const double acc_c = rc.curves.test_accuracy.back(), acc_g = rg.curves.test_accuracy.back();
    CHECK(std::fabs(acc_c - acc_g) <= 0.03);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("cuda device: sparse_mlp runs (Adaptive SGD, sync SGD) match the cpu runs") {
  train::ComputeBackend* backend = train::find_compute_backend("cuda");
  REQUIRE(backend != nullptr);
  INFO(backend->open(MPI_COMM_WORLD));
  for (const char* algo : {"\"sync_sgd\"", R"({"name": "adaptive_sgd", "megabatch": 8})"}) {
    CAPTURE(algo);
    const std::string spec = std::string(R"({"name": "t", "base": {"model": {"name": "sparse_mlp",
        "hidden": [16], "synthetic": {"train_size": 800, "test_size": 200, "features": 300,
        "labels": 20, "nnz": 12}}, "algorithm": )") + algo + R"(, "workers": 3,
        "batch_size": 16, "lr": 0.5, "steps": 30, "log_every": 3, "eval_every": 15, "seed": 4,
        "heterogeneity": {"speeds": [1.0, 0.7, 0.4]}},
        "sweep": {"device": ["cpu", "cuda"]}})";
    const auto e = app::parse_experiment(spec, "t.json");
    REQUIRE(e.runs.size() == 2);
    app::TaskCache cache;
    const auto rc = app::execute_run(e.runs[0], cache.get(e.runs[0].cfg.model.value(), "cpu"),
                                    MPI_COMM_SELF, nullptr);
    const auto rg = app::execute_run(e.runs[1], cache.get(e.runs[1].cfg.model.value(), "cuda"),
                                    MPI_COMM_SELF, nullptr);
    REQUIRE(rc.status == "completed");
    REQUIRE(rg.status == "completed");
    REQUIRE(rg.curves.size() == rc.curves.size());
    CHECK(rg.curves.sim_s == rc.curves.sim_s);      // cost model: the CPU model's
    CHECK(rg.curves.samples == rc.curves.samples);  // the same batches were dispatched
    CHECK(rc.curves.train_loss.back() < 0.9 * rc.curves.train_loss.front());
    check_close(rg.curves.train_loss, rc.curves.train_loss, 1e-3, 1e-2, "training loss curve");
    CHECK(std::fabs(rg.curves.test_accuracy.back() - rc.curves.test_accuracy.back()) <= 0.02);
  }
}
