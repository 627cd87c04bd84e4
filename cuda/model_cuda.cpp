#include "cuda/model_cuda.h"

#include <cuda_runtime_api.h>

#include <string>

#include "cuda/check.h"
#include "cuda/device.h"
#include "cuda/net_cuda.h"
#include "core/error.h"

namespace wb::cuda {

namespace {

struct CudaNetWorkspace final : models::Workspace {
  CudaNetWorkspace(const models::NetInfo& net, int max_batch)
      : device(current_device()),
        dn(net, max_batch, stream.get()),
        w(net.num_params),
        g(net.num_params) {}
  int device;
  Stream stream;
  DeviceNet<float> dn;
  DeviceBuffer<float> w, g;
};

CudaNetWorkspace& workspace_of(const CudaNetModel& m, models::Workspace& ws) {
  auto* cw = dynamic_cast<CudaNetWorkspace*>(&ws);
  WB_ASSERT(cw, m.name() + ": workspace was not made by the CUDA model");
  WB_CHECK_CUDA(cudaSetDevice(cw->device));  // this host thread may be a fresh one
  return *cw;
}

void check_batch(const CudaNetModel& m, const models::Batch& b, size_t w_size) {
  const models::NetInfo& net = m.cpu_net().net();
  WB_ASSERT(w_size == net.num_params, m.name() + ": parameter buffer of " +
                                          std::to_string(w_size) + " floats, expected " +
                                          std::to_string(net.num_params));
  WB_ASSERT(b.n >= 1 && b.x.size() >= static_cast<size_t>(b.n) * net.layers[0].in_size() &&
                b.label.size() >= static_cast<size_t>(b.n),
            m.name() + ": batch holds fewer inputs/labels than b.n");
}

}  // namespace

std::unique_ptr<models::Workspace> CudaNetModel::make_workspace(int max_batch) const {
  return std::make_unique<CudaNetWorkspace>(net_.net(), max_batch);
}

double CudaNetModel::loss_grad(std::span<const float> w, const models::Batch& b,
                               std::span<float> g, models::Workspace& ws,
                               uint64_t noise_seed) const {
  check_batch(*this, b, w.size());
  WB_ASSERT(g.size() == w.size(), "gradient buffer size");
  CudaNetWorkspace& cw = workspace_of(*this, ws);
  const cudaStream_t st = cw.stream.get();
  // Host staging: w in, the pass, g out; set_batch and pass synchronize the stream.
  WB_CHECK_CUDA(
      cudaMemcpyAsync(cw.w.data(), w.data(), w.size_bytes(), cudaMemcpyHostToDevice, st));
  cw.dn.set_batch(b.x.data(), b.label.data(), b.n);
  const float loss = cw.dn.pass(cw.w.data(), cw.g.data(), true, noise_seed);
  WB_CHECK_CUDA(
      cudaMemcpyAsync(g.data(), cw.g.data(), g.size_bytes(), cudaMemcpyDeviceToHost, st));
  WB_CHECK_CUDA(cudaStreamSynchronize(st));
  return loss;
}

models::EvalResult CudaNetModel::evaluate(std::span<const float> w, const models::Batch& b,
                                          models::Workspace& ws) const {
  models::EvalResult ev;
  if (b.n == 0) return ev;
  check_batch(*this, b, w.size());
  CudaNetWorkspace& cw = workspace_of(*this, ws);
  WB_CHECK_CUDA(cudaMemcpyAsync(cw.w.data(), w.data(), w.size_bytes(), cudaMemcpyHostToDevice,
                                cw.stream.get()));
  cw.dn.set_batch(b.x.data(), b.label.data(), b.n);
  cw.dn.pass(cw.w.data(), nullptr, false, 0, &ev);
  return ev;
}

namespace {
// The cuda device runs every image network (models::ConvNetModel: any NetSpec).
std::unique_ptr<models::Model> wrap_net(const models::Model& cpu) {
  const auto* net = dynamic_cast<const models::ConvNetModel*>(&cpu);
  return net ? std::make_unique<CudaNetModel>(*net) : nullptr;
}
const rt::DeviceModelRegistrar kRegisterNet{{"cuda", {"lenet5", "lenet5_classic"}, &wrap_net}};
}  // namespace

}  // namespace wb::cuda
