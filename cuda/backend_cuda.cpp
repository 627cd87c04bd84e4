// The "cuda" compute device (runtime/compute_device.h): registered when the CUDA objects are
// linked into the workbench (cmake/cuda.cmake), absent otherwise -- then a spec asking for
// "device": "cuda" is refused at parse time with exit code 2.
#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "cuda/device.h"
#include "cuda/model_cuda.h"
#include "cuda/mpi_cuda.h"
#include "cuda/sparse_model_cuda.h"
#include "models/lenet.h"
#include "runtime/compute_device.h"
#include "runtime/error.h"

namespace wb::cuda {

namespace {

class CudaBackend final : public rt::ComputeBackend {
 public:
  std::string name() const override { return "cuda"; }
  std::string summary() const override {
    int rt = 0;
    cudaRuntimeGetVersion(&rt);
    return "CUDA runtime " + std::to_string(rt / 1000) + "." + std::to_string(rt % 1000 / 10) +
           ", MPI " + (mpi_cuda_aware() ? "CUDA-aware" : "host-staged");
  }
  // The image networks (DeviceNet runs any models::NetSpec) and the sparse MLP.
  bool supports(const std::string& model) const override {
    return model == "lenet5" || model == "lenet5_classic" || model == "sparse_mlp";
  }
  std::string supported_models() const override { return "lenet5, lenet5_classic, sparse_mlp"; }

  std::string open(MPI_Comm comm) override {
    const DeviceStatus st = select_device(comm);  // collective: local rank -> GPU
    if (!st.ok)
      throw UserError("", st.reason + " (\"device\": \"cuda\" needs a GPU visible to every rank;"
                          " CUDA_VISIBLE_DEVICES, or run with \"device\": \"cpu\")");
    return st.describe() + "; MPI buffers staged through host memory" +
           (mpi_cuda_aware() ? " (the MPI library is CUDA-aware; unused: parameters live on the host)"
                             : "");
  }

  std::unique_ptr<models::Model> wrap(const models::Model& cpu) const override {
    if (const auto* net = dynamic_cast<const models::ConvNetModel*>(&cpu))
      return std::make_unique<CudaNetModel>(*net);
    if (const auto* mlp = dynamic_cast<const models::SparseMlp*>(&cpu))
      return std::make_unique<CudaSparseMlp>(*mlp);
    throw UserError("", "model \"" + cpu.name() + "\" has no CUDA implementation (cuda runs " +
                              supported_models() + ")");
  }
};

const rt::BackendRegistrar kRegister{std::make_unique<CudaBackend>()};

}  // namespace

}  // namespace wb::cuda
