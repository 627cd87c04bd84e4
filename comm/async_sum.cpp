#include "comm/async_sum.h"

#include "core/error.h"

namespace wb::comm {

AsyncSum::AsyncSum(const Collectives& coll) { WB_CHECK_MPI(MPI_Comm_dup(coll.comm(), &comm_)); }

AsyncSum::~AsyncSum() {
  if (pending_) MPI_Wait(&req_, MPI_STATUS_IGNORE);
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void AsyncSum::start(std::span<const float> in, std::span<float> out) {
  WB_ASSERT(!pending_, "AsyncSum::start while a sum is pending");
  WB_ASSERT(in.size() == out.size(), "AsyncSum: in and out differ in size");
  WB_CHECK_MPI(MPI_Iallreduce(in.data(), out.data(), static_cast<int>(in.size()), MPI_FLOAT,
                              MPI_SUM, comm_, &req_));
  pending_ = true;
}

bool AsyncSum::test() {
  if (!pending_) return false;
  int flag = 0;
  WB_CHECK_MPI(MPI_Test(&req_, &flag, MPI_STATUS_IGNORE));
  if (flag) pending_ = false;
  return flag != 0;
}

void AsyncSum::wait() {
  if (!pending_) return;
  WB_CHECK_MPI(MPI_Wait(&req_, MPI_STATUS_IGNORE));
  pending_ = false;
}

}  // namespace wb::comm
