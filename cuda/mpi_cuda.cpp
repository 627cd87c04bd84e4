#include "cuda/mpi_cuda.h"

#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>  // Open MPI declares its MPIX_ extensions here
#endif

namespace wb::cuda {

bool mpi_cuda_aware() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (!init || fin) return false;
#if (defined(MPICH_NUMVERSION) && MPICH_NUMVERSION >= 40000000) || \
    (defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT)
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

}  // namespace wb::cuda
