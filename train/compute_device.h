// Compute devices: where a run's training and evaluation passes execute ("device" in the run
// config, DESIGN.md section 3's "MPI ranks with CUDA compute"). "cpu" is built in; other
// devices are backends that register themselves from their own translation unit (the CUDA
// backend: cuda/backend_cuda.cpp, linked into the workbench only when the build has CUDA),
// so neither the runtime nor the models carry `#if` for them.
//
// A backend wraps a CPU model (DeviceModel below): the wrapper computes loss_grad/evaluate
// on the device and forwards everything else (layout, init, the f64 oracle, the cost model)
// to the CPU model.
// Parameters, gradients and all communication stay in host memory (host staging: the
// gradient is copied back after each pass), so the collectives, the optimizers and the
// rank-invariance guarantees are those of a CPU run.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>
#include <span>
#include <string>
#include <vector>

#include "models/model.h"

namespace wb::train {

// Base of a backend's models: everything but the passes comes from the CPU model -- the
// layout, initialization, the f64 oracle and exact HVP (the diagnostics' reference stays on
// the CPU), and the cost model of the simulated clock (a device run has the CPU run's
// simulated times). A backend implements make_workspace, loss_grad and evaluate; the
// partial pass loss_grad_from is Model's default (the full device pass, prefix zeroed).
class DeviceModel : public models::Model {
 public:
  explicit DeviceModel(const models::Model& cpu) : cpu_(cpu) {}
  const models::Model& cpu() const { return cpu_; }

  // Grouped passes: the training passes of several logical workers of a rank as ONE device
  // computation (DESIGN.md section 2; train/worker.h compute_gradients_of drives it). Each
  // pass is worker k's: its parameters, its batch (all of one size), its gradient buffer
  // and noise seed; loss receives its mean loss. Results are bit-identical to one
  // loss_grad per pass. A device model that offers it returns a workspace for up to
  // `groups` passes of max_batch samples; nullptr (the default) means "one pass at a time".
  struct GroupPass {
    std::span<const float> w;
    const models::Batch* batch = nullptr;
    std::span<float> g;
    uint64_t noise_seed = 0;
    double loss = 0;  // out
  };
  virtual std::unique_ptr<models::Workspace> make_group_workspace(int /*groups*/,
                                                                  int /*max_batch*/) const {
    return nullptr;
  }
  // The passes (at most the workspace's groups), on a workspace of make_group_workspace.
  virtual void loss_grad_group(std::span<GroupPass> passes, models::Workspace& ws) const;

  std::string name() const override { return cpu_.name(); }
  const std::vector<models::TensorInfo>& tensors() const override { return cpu_.tensors(); }
  void init_params(std::span<float> w, uint64_t seed) const override {
    cpu_.init_params(w, seed);
  }
  double loss_grad_f64(std::span<const double> w, const models::Batch& b, std::span<double> g,
                       uint64_t noise_seed) const override {
    return cpu_.loss_grad_f64(w, b, g, noise_seed);
  }
  void hvp_f64(std::span<const double> w, std::span<const double> v, const models::Batch& b,
               std::span<double> hv, uint64_t noise_seed) const override {
    cpu_.hvp_f64(w, v, b, hv, noise_seed);
  }
  double flops_per_sample() const override { return cpu_.flops_per_sample(); }
  int64_t tokens_per_sample() const override { return cpu_.tokens_per_sample(); }
  double flops_for_batch(const models::Batch& b) const override {
    return cpu_.flops_for_batch(b);
  }
  double flops_per_sample_from(size_t first_tensor) const override {
    return cpu_.flops_per_sample_from(first_tensor);
  }

 private:
  const models::Model& cpu_;
};

class ComputeBackend {
 public:
  virtual ~ComputeBackend() = default;
  virtual std::string name() const = 0;  // the "device" value, e.g. "cuda"
  // One line for `workbench --version` (runtime version, architectures).
  virtual std::string summary() const = 0;
  // Models this device runs (checked when the spec is parsed).
  virtual bool supports(const std::string& model_name) const = 0;
  virtual std::string supported_models() const = 0;  // for messages: "lenet5, lenet5_classic"
  // Collective over comm, once per process before the first run that uses the device: pick
  // this rank's device. Throws UserError (no device visible, ...). Returns a line for the log.
  virtual std::string open(MPI_Comm comm) = 0;
  // The model whose passes run on the device; `cpu` must outlive it.
  virtual std::unique_ptr<models::Model> wrap(const models::Model& cpu) const = 0;
};

// nullptr when no backend of that name is linked in.
ComputeBackend* find_compute_backend(const std::string& name);
// Every device this binary can run on, "cpu" first.
std::vector<std::string> compute_device_names();

// A device model: one backend's implementation of a family of CPU models (e.g. the cuda
// device's CudaNetModel runs every models::ConvNetModel). Registered from the device model's
// own .cpp by a static DeviceModelRegistrar, so a backend lists no model names: it supports
// the models its device models cover and wraps through them (first that accepts).
struct DeviceModelEntry {
  std::string device;                    // the backend's name, e.g. "cuda"
  std::vector<std::string> models;       // the registered CPU model names it runs
  // The device model of `cpu`, or nullptr when cpu is not of this family.
  std::unique_ptr<models::Model> (*wrap)(const models::Model& cpu) = nullptr;
};
const std::vector<DeviceModelEntry>& device_models();
struct DeviceModelRegistrar {
  explicit DeviceModelRegistrar(DeviceModelEntry e);
};
// For backends: whether one of `device`'s device models runs `model`; their names for
// messages ("lenet5, lenet5_classic, sparse_mlp"); and the wrapped model (UserError when
// none accepts `cpu`).
bool device_supports(const std::string& device, const std::string& model);
std::string device_model_names(const std::string& device);
std::unique_ptr<models::Model> wrap_for_device(const std::string& device, const models::Model& cpu);

// Registration (a static object in the backend's .cpp). The scoped form removes it again in
// its destructor (tests register a stand-in backend).
class BackendRegistrar {
 public:
  explicit BackendRegistrar(std::unique_ptr<ComputeBackend> b);
  ~BackendRegistrar();
  BackendRegistrar(const BackendRegistrar&) = delete;
  BackendRegistrar& operator=(const BackendRegistrar&) = delete;

 private:
  std::string name_;
};

}  // namespace wb::train
