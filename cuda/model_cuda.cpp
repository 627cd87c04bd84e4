#include "cuda/model_cuda.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <string>
#include <vector>

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

// A chunk of workers' grouped passes: one DeviceNet with room for `groups` replicas, the
// strided parameter and gradient buffers on the device, and pinned host staging.
struct CudaNetGroupWorkspace final : models::Workspace {
  CudaNetGroupWorkspace(const models::NetInfo& net, int groups, int max_batch, size_t stride)
      : device(current_device()),
        groups(groups),
        max_batch(max_batch),
        stride(stride),
        dn(net, max_batch, stream.get(), groups),
        w(groups * stride),
        g(groups * stride),
        hw(groups * stride),
        hg(groups * stride),
        hx(static_cast<size_t>(groups) * max_batch * net.layers[0].in_size()),
        hlabel(static_cast<size_t>(groups) * max_batch),
        seeds(static_cast<size_t>(groups)),
        loss(static_cast<size_t>(groups)) {
    // The padding between sets is never read as a parameter; zero it once so that no
    // uninitialized value ever travels.
    std::fill(hw.data(), hw.data() + hw.size(), 0.0f);
  }
  int device, groups, max_batch;
  size_t stride;
  Stream stream;
  DeviceNet<float> dn;
  DeviceBuffer<float> w, g;
  PinnedBuffer<float> hw, hg, hx;
  PinnedBuffer<int32_t> hlabel;
  std::vector<uint64_t> seeds;
  std::vector<float> loss;
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

size_t CudaNetModel::group_stride() const {
  const size_t np = net_.net().num_params;
  return (np + 63) / 64 * 64;
}

std::unique_ptr<models::Workspace> CudaNetModel::make_group_workspace(int groups,
                                                                      int max_batch) const {
  WB_ASSERT(groups >= 1 && max_batch >= 1, name() + ": group workspace of " +
                                               std::to_string(groups) + " x " +
                                               std::to_string(max_batch));
  return std::make_unique<CudaNetGroupWorkspace>(net_.net(), groups, max_batch, group_stride());
}

void CudaNetModel::loss_grad_group(std::span<GroupPass> passes, models::Workspace& ws) const {
  auto* cw = dynamic_cast<CudaNetGroupWorkspace*>(&ws);
  WB_ASSERT(cw, name() + ": workspace was not made by make_group_workspace");
  WB_CHECK_CUDA(cudaSetDevice(cw->device));
  const int G = static_cast<int>(passes.size());
  WB_ASSERT(G >= 1 && G <= cw->groups, name() + ": " + std::to_string(G) +
                                           " grouped passes, workspace for " +
                                           std::to_string(cw->groups));
  const models::NetInfo& net = net_.net();
  const size_t np = net.num_params, in0 = net.layers[0].in_size();
  const int n = passes[0].batch->n;
  WB_ASSERT(n >= 1 && n <= cw->max_batch, name() + ": grouped batch of " + std::to_string(n) +
                                              " samples, workspace for " +
                                              std::to_string(cw->max_batch));
  // Pack: worker k's parameters at k * stride, its samples at k * n.
  for (int k = 0; k < G; ++k) {
    const GroupPass& p = passes[static_cast<size_t>(k)];
    check_batch(*this, *p.batch, p.w.size());
    WB_ASSERT(p.batch->n == n, name() + ": grouped passes need one batch size");
    WB_ASSERT(p.g.size() == np, "gradient buffer size");
    std::copy(p.w.begin(), p.w.end(), cw->hw.data() + static_cast<size_t>(k) * cw->stride);
    std::copy_n(p.batch->x.data(), static_cast<size_t>(n) * in0,
                cw->hx.data() + static_cast<size_t>(k) * n * in0);
    std::copy_n(p.batch->label.data(), n, cw->hlabel.data() + static_cast<size_t>(k) * n);
    cw->seeds[static_cast<size_t>(k)] = p.noise_seed;
  }
  const cudaStream_t st = cw->stream.get();
  const size_t set_bytes = static_cast<size_t>(G) * cw->stride * sizeof(float);
  WB_CHECK_CUDA(cudaMemcpyAsync(cw->w.data(), cw->hw.data(), set_bytes, cudaMemcpyHostToDevice, st));
  cw->dn.set_group_batches(cw->hx.data(), cw->hlabel.data(), G, n);  // synchronizes the stream
  cw->dn.group_pass(cw->w.data(), cw->g.data(), cw->stride, cw->seeds.data(), cw->loss.data());
  WB_CHECK_CUDA(cudaMemcpyAsync(cw->hg.data(), cw->g.data(), set_bytes, cudaMemcpyDeviceToHost, st));
  WB_CHECK_CUDA(cudaStreamSynchronize(st));
  for (int k = 0; k < G; ++k) {
    GroupPass& p = passes[static_cast<size_t>(k)];
    std::copy_n(cw->hg.data() + static_cast<size_t>(k) * cw->stride, np, p.g.data());
    p.loss = cw->loss[static_cast<size_t>(k)];
  }
}

namespace {
// The cuda device runs every image network (models::ConvNetModel: any NetSpec).
std::unique_ptr<models::Model> wrap_net(const models::Model& cpu) {
  const auto* net = dynamic_cast<const models::ConvNetModel*>(&cpu);
  return net ? std::make_unique<CudaNetModel>(*net) : nullptr;
}
const train::DeviceModelRegistrar kRegisterNet{{"cuda", {"lenet5", "lenet5_classic"}, &wrap_net}};
}  // namespace

}  // namespace wb::cuda
