// The MPI transport of the cross-rank schedules (comm/rvhdd.h): the run's ranks, nonblocking
// point-to-point messages on the run's communicator, the coefficient sums on the level's
// sub-communicator (Algorithm 1 line 16, built once by comm::Collectives).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <span>

#include "comm/collectives_detail.h"
#include "comm/mpi_types.h"
#include "core/error.h"

namespace wb::comm {

struct MpiTransport {
  MPI_Comm comm;
  std::span<const MPI_Comm> level_comms;  // none where no schedule sums over a level

  using Request = MPI_Request;
  template <class T>
  Request isend(int peer, int tag, const T* p, size_t n) {
    MPI_Request r;
    WB_CHECK_MPI(MPI_Isend(p, detail::count_of(n), mpi_type<T>(), peer, tag, comm, &r));
    return r;
  }
  template <class T>
  Request irecv(int peer, int tag, T* p, size_t n) {
    MPI_Request r;
    WB_CHECK_MPI(MPI_Irecv(p, detail::count_of(n), mpi_type<T>(), peer, tag, comm, &r));
    return r;
  }
  void wait(Request& r) { WB_CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE)); }
  void wait_all(Request* r, size_t k) {
    WB_CHECK_MPI(MPI_Waitall(static_cast<int>(k), r, MPI_STATUSES_IGNORE));
  }
  void sum_doubles(size_t level, double* v, size_t n) {
    WB_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, v, detail::count_of(n), MPI_DOUBLE, MPI_SUM, level_comms[level]));
  }
};

}  // namespace wb::comm
