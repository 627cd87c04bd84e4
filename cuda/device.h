// GPU selection: one GPU per MPI rank, chosen by the rank's index among the ranks of its
// node (MPI_Comm_split_type MPI_COMM_TYPE_SHARED), round-robin when a node runs more ranks
// than it has GPUs. The logical workers of a rank share that GPU.
//
// No GPU is a status, not an error: select_device() returns ok = false with the reason
// (cudaGetDeviceCount returned 0, or failed, e.g. no driver), and the GPU tests and
// bench_gpu turn that into exit code 77 = "skipped" (CTest SKIP_RETURN_CODE).
#pragma once

#include <mpi.h>

#include <string>

namespace wb::cuda {

inline constexpr int kSkipExitCode = 77;

struct DeviceStatus {
  bool ok = false;
  int device = -1;     // CUDA ordinal set with cudaSetDevice (ok only)
  int count = 0;       // devices visible to this process
  int local_rank = 0;  // this rank's index among the ranks of its node
  int local_size = 1;
  std::string name;              // cudaDeviceProp::name (ok only)
  std::string reason;            // why not ok: "no CUDA device: ..."
  std::string describe() const;  // one line for logs
};

// Collective over `comm` when MPI is initialized (every rank of comm must call it);
// without MPI the process counts as local rank 0 of 1. Sets the device on success.
DeviceStatus select_device(MPI_Comm comm);

// The calling host thread's current device (cudaGetDevice). The device is per host thread:
// a workspace records it at creation and sets it again in every pass, so threads started
// later (the threaded LAP/LPP and Adaptive SGD modes) use the rank's GPU too.
int current_device();

}  // namespace wb::cuda
