// A CPU image model (models::ConvNetModel: lenet5, lenet5_classic) with its training and
// evaluation passes on the GPU -- what a run with "device": "cuda" trains
// (train/compute_device.h; registered by cuda/backend_cuda.cpp).
//
// Host staging: parameters and gradients stay in the worker's host buffers, as
// in a CPU run. loss_grad() uploads w (one copy per pass: 87 KB for LeNet-5), runs
// DeviceNet<float>::pass, downloads g; the collectives, the optimizers and the simulated
// clock are the CPU ones, so a GPU run keeps every guarantee of the runtime (rank invariance,
// determinism) and differs from the CPU run only by the kernels' float rounding.
//
// Logical workers: each worker's Workspace owns a CUDA stream, a DeviceNet and its w/g
// buffers on the rank's GPU, so workers never share device scratch. The synchronous
// algorithms' steps (algorithms/algorithm.cpp compute_gradients) run a rank's workers as
// grouped passes (loss_grad_group below: one launch sequence for all of them); the
// threaded modes (LAP/LPP "real", Adaptive SGD) call loss_grad from several host threads at
// once, each on its own workspace and stream (the device is set per call: cudaSetDevice is
// per host thread). bench_gpu measures the alternatives (one stream per worker in parallel,
// one batched pass over all workers' samples).
//
// Delegated to the CPU model (train::DeviceModel): the layout, initialization, the f64 oracle
// and exact HVP, and the cost model of the simulated clock. loss_grad_from (LPP-SGD) is
// Model's default: the full GPU pass with the prefix zeroed (the device pass does not stop
// early).
#pragma once

#include <memory>
#include <span>

#include "models/lenet.h"
#include "models/model.h"
#include "train/compute_device.h"

namespace wb::cuda {

class CudaNetModel final : public train::DeviceModel {
 public:
  explicit CudaNetModel(const models::ConvNetModel& cpu) : DeviceModel(cpu), net_(cpu) {}

  // On the current device (select_device set it for this thread).
  std::unique_ptr<models::Workspace> make_workspace(int max_batch) const override;
  double loss_grad(std::span<const float> w, const models::Batch& b, std::span<float> g,
                   models::Workspace& ws, uint64_t noise_seed) const override;
  models::EvalResult evaluate(std::span<const float> w, const models::Batch& b,
                              models::Workspace& ws) const override;
  // Grouped passes (train::DeviceModel): the workers' parameters packed into one strided
  // device buffer, their batches into one, ONE DeviceNet::group_pass, the gradients back:
  // three transfers and one launch sequence for the whole chunk, instead of three transfers
  // and a launch sequence per worker.
  std::unique_ptr<models::Workspace> make_group_workspace(int groups,
                                                          int max_batch) const override;
  void loss_grad_group(std::span<GroupPass> passes, models::Workspace& ws) const override;
  // Elements between consecutive workers' parameter sets in the strided buffers: the
  // parameter count rounded up to 64 floats (256 bytes), so every set starts aligned.
  size_t group_stride() const;
  const models::ConvNetModel& cpu_net() const { return net_; }

 private:
  const models::ConvNetModel& net_;
};

}  // namespace wb::cuda
