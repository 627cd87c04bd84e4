// The "cuda" compute device (train/compute_device.h): registered when the CUDA objects are
// linked into the workbench (cmake/cuda.cmake), absent otherwise -- then a spec asking for
// "device": "cuda" is refused at parse time with exit code 2.
#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "cuda/device.h"
#include "cuda/mpi_cuda.h"
#include "train/compute_device.h"
#include "core/error.h"

namespace wb::cuda {

namespace {

class CudaBackend final : public train::ComputeBackend {
 public:
  std::string name() const override { return "cuda"; }
  std::string summary() const override {
    int rt = 0;
    cudaRuntimeGetVersion(&rt);
    return "CUDA runtime " + std::to_string(rt / 1000) + "." + std::to_string(rt % 1000 / 10) +
           ", MPI " + (mpi_cuda_aware() ? "CUDA-aware" : "host-staged");
  }
  // The models the cuda device models cover (they register themselves: model_cuda.cpp,
  // sparse_model_cuda.cpp).
  bool supports(const std::string& model) const override { return train::device_supports("cuda", model); }
  std::string supported_models() const override { return train::device_model_names("cuda"); }

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
    return train::wrap_for_device("cuda", cpu);
  }
};

const train::BackendRegistrar kRegister{std::make_unique<CudaBackend>()};

}  // namespace

}  // namespace wb::cuda
