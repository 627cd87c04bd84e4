#include "cuda/device.h"

#include <cuda_runtime_api.h>

#include "cuda/check.h"
#include "core/error.h"

namespace wb::cuda {

std::string DeviceStatus::describe() const {
  if (!ok) return reason;
  return "GPU " + std::to_string(device) + " of " + std::to_string(count) + " (" + name +
         ") for local rank " + std::to_string(local_rank) + " of " + std::to_string(local_size);
}

DeviceStatus select_device(MPI_Comm comm) {
  DeviceStatus st;
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) {
    int rank = 0;
    MPI_Comm local = MPI_COMM_NULL;
    WB_CHECK_MPI(MPI_Comm_rank(comm, &rank));
    WB_CHECK_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local));
    WB_CHECK_MPI(MPI_Comm_rank(local, &st.local_rank));
    WB_CHECK_MPI(MPI_Comm_size(local, &st.local_size));
    WB_CHECK_MPI(MPI_Comm_free(&local));
  }
  // No device, no driver, a driver older than the runtime: all "no CUDA device" here.
  const cudaError_t rc = cudaGetDeviceCount(&st.count);
  if (rc != cudaSuccess || st.count == 0) {
    st.count = 0;
    st.reason = rc != cudaSuccess ? std::string("no CUDA device: cudaGetDeviceCount failed: ") +
                                        cudaGetErrorName(rc) + ": " + cudaGetErrorString(rc)
                                  : std::string("no CUDA device: cudaGetDeviceCount returned 0");
    cudaGetLastError();  // reset the runtime's last-error state
    return st;
  }
  st.device = st.local_rank % st.count;
  WB_CHECK_CUDA(cudaSetDevice(st.device));
  cudaDeviceProp prop{};
  WB_CHECK_CUDA(cudaGetDeviceProperties(&prop, st.device));
  st.name = prop.name;
  st.ok = true;
  return st;
}

int current_device() {
  int d = 0;
  WB_CHECK_CUDA(cudaGetDevice(&d));
  return d;
}

}  // namespace wb::cuda
