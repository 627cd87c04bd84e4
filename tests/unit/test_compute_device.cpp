// The "device" key and the compute-backend seam (train/compute_device.h): what a build
// without a backend says, how a backend's model reaches the runs, and that a device that
// cannot be opened stops the experiment before the results file exists. The CUDA backend
// itself is tested on a GPU (tests/cuda/test_model_cuda.cpp); here a stand-in backend named
// "cuda" is registered for the duration of a test (unit_tests never links cuda/).
#include <doctest/doctest.h>
#include <mpi.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>

#include "app/exec/runner.h"
#include "app/exec/training_loop.h"
#include "app/plan/sweep_plan.h"
#include "app/experiment/spec.h"
#include "core/error.h"
#include "models/model.h"
#include "train/compute_device.h"

using namespace wb;

namespace {

const char* kSpec = R"({"name": "t", "base": {"model": "quadratic", "device": "cuda",
    "workers": 3, "batch_size": 4, "steps": 12, "seed": 5}})";

// A stand-in device model: the passes run on the CPU model, counted.
class CountingModel final : public train::DeviceModel {
 public:
  CountingModel(const models::Model& cpu, std::atomic<int>* passes)
      : DeviceModel(cpu), passes_(passes) {}
  std::unique_ptr<models::Workspace> make_workspace(int b) const override {
    return cpu().make_workspace(b);
  }
  double loss_grad(std::span<const float> w, const models::Batch& b, std::span<float> g,
                   models::Workspace& ws, uint64_t seed) const override {
    ++*passes_;
    return cpu().loss_grad(w, b, g, ws, seed);
  }
  models::EvalResult evaluate(std::span<const float> w, const models::Batch& b,
                              models::Workspace& ws) const override {
    return cpu().evaluate(w, b, ws);
  }

 private:
  std::atomic<int>* passes_;
};

struct StandIn final : train::ComputeBackend {
  std::atomic<int>* passes;
  std::atomic<int>* opens;
  bool fail_open;
  StandIn(std::atomic<int>* p, std::atomic<int>* o, bool fail) : passes(p), opens(o), fail_open(fail) {}
  std::string name() const override { return "cuda"; }
  std::string summary() const override { return "stand-in"; }
  bool supports(const std::string& m) const override { return m == "quadratic"; }
  std::string supported_models() const override { return "quadratic"; }
  std::string open(MPI_Comm) override {
    ++*opens;
    if (fail_open) throw UserError("", "no CUDA device: stand-in");
    return "stand-in device";
  }
  std::unique_ptr<models::Model> wrap(const models::Model& cpu) const override {
    return std::make_unique<CountingModel>(cpu, passes);
  }
};

}  // namespace

TEST_CASE("device: a build without the backend refuses \"cuda\" when the spec is parsed") {
  REQUIRE(train::find_compute_backend("cuda") == nullptr);
  CHECK(train::compute_device_names() == std::vector<std::string>{"cpu"});
  CHECK_THROWS_WITH_AS(app::parse_experiment(kSpec, "t.json"),
                       doctest::Contains("t.json: $.base.device: this workbench was built without cuda support"),
                       UserError);
  CHECK_THROWS_WITH_AS(
      app::parse_experiment(R"({"name": "t", "base": {"device": "gpu"}})", "t.json"),
      doctest::Contains("t.json: $.base.device: expected one of cpu|cuda, got \"gpu\""), UserError);
  // The default is the CPU, and the resolved config (HDF5 config_json) names it.
  const auto e = app::parse_experiment(R"({"name": "t", "base": {}})", "t.json");
  CHECK(e.runs[0].cfg.device == "cpu");
  CHECK(e.runs[0].resolved().at("device") == "cpu");
}

TEST_CASE("device: a registered backend's model runs the passes, with the CPU run's results") {
  std::atomic<int> passes{0}, opens{0};
  train::BackendRegistrar reg(std::make_unique<StandIn>(&passes, &opens, false));
  CHECK(train::compute_device_names() == std::vector<std::string>{"cpu", "cuda"});
  // Models the backend does not run are refused at parse time, naming the key.
  CHECK_THROWS_WITH_AS(
      app::parse_experiment(R"({"name": "t", "base": {"model": "cubic", "device": "cuda"}})", "t.json"),
      doctest::Contains("$.base.device: model \"cubic\" has no cuda implementation (cuda runs quadratic)"),
      UserError);
  const auto e = app::parse_experiment(
      R"({"name": "t", "base": {"model": "quadratic", "workers": 3, "batch_size": 4, "steps": 12,
          "seed": 5}, "sweep": {"device": ["cpu", "cuda"]}})", "t.json");
  REQUIRE(e.runs.size() == 2);
  app::TaskCache cache;
  const auto& cpu = cache.get(e.runs[0].cfg.model.value(), e.runs[0].cfg.device);
  const auto& dev = cache.get(e.runs[1].cfg.model.value(), e.runs[1].cfg.device);
  CHECK(dev.model.get() != cpu.model.get());
  CHECK(dev.train == cpu.train);  // the data are shared, loaded once
  const auto rc = app::execute_run(e.runs[0], cpu, MPI_COMM_SELF, nullptr);
  CHECK(passes == 0);
  const auto rd = app::execute_run(e.runs[1], dev, MPI_COMM_SELF, nullptr);
  CHECK(passes == 3 * 12);  // every worker's every step went through the device's model
  CHECK(rd.curves.train_loss == rc.curves.train_loss);
  CHECK(rd.curves.sim_s == rc.curves.sim_s);
}

TEST_CASE("device: a device that cannot be opened stops the run before the output exists") {
  std::atomic<int> passes{0}, opens{0};
  train::BackendRegistrar reg(std::make_unique<StandIn>(&passes, &opens, true));
  const auto out = std::filesystem::temp_directory_path() /
                   ("wb_device_" + std::to_string(::getpid()) + ".h5");
  std::filesystem::remove(out);
  const auto e = app::parse_experiment(kSpec, "t.json");
  app::RunOptions opt;
  opt.output = out.string();
  opt.quiet = true;
  CHECK_THROWS_WITH_AS(app::run_experiment(e, opt, MPI_COMM_SELF),
                       doctest::Contains("t.json: run base: $.device: no CUDA device: stand-in"),
                       UserError);
  CHECK(opens == 1);
  CHECK(passes == 0);
  CHECK_FALSE(std::filesystem::exists(out));
}
