// Does the MPI library accept device pointers (CUDA-aware MPI)? Asked at run time: MPICH >= 4
// and Open MPI both answer MPIX_Query_cuda_support() (MPICH also needs MPIR_CVAR_ENABLE_GPU=1
// and a GPU-enabled build; Debian's MPICH is not one, so it answers 0).
//
// The workbench reports the answer (`workbench --version`, the run log) but does not depend
// on it: parameters and gradients live in host memory (cuda/model_cuda.h), so every MPI call
// gets host buffers -- the host-staged path, which works with any MPI.
#pragma once

namespace wb::cuda {

// False before MPI_Init, after MPI_Finalize, or when the library has no such query.
bool mpi_cuda_aware();

}  // namespace wb::cuda
