#include "comm/async_sum.h"

#include "core/error.h"

namespace wb::comm {

namespace {
constexpr int kTagRound = 1;  // the only tag on the duplicated communicator
}

AsyncSum::AsyncSum(const Collectives& coll) {
  WB_CHECK_MPI(MPI_Comm_dup(coll.comm(), &comm_));
  int rank = 0;
  WB_CHECK_MPI(MPI_Comm_size(comm_, &ranks_));
  WB_CHECK_MPI(MPI_Comm_rank(comm_, &rank));
  if (ranks_ == 2) peer_ = 1 - rank;
}

AsyncSum::~AsyncSum() {
  if (pending_) MPI_Waitall(2, reqs_.data(), MPI_STATUSES_IGNORE);
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void AsyncSum::start(std::span<const float> in, std::span<float> out) {
  WB_ASSERT(!pending_, "AsyncSum::start while a sum is pending");
  WB_ASSERT(in.size() == out.size(), "AsyncSum: in and out differ in size");
  const int n = static_cast<int>(in.size());
  if (peer_ >= 0) {
    in_ = in;
    out_ = out;
    got_.resize(in.size());
    WB_CHECK_MPI(MPI_Irecv(got_.data(), n, MPI_FLOAT, peer_, kTagRound, comm_, &reqs_[0]));
    WB_CHECK_MPI(MPI_Isend(in.data(), n, MPI_FLOAT, peer_, kTagRound, comm_, &reqs_[1]));
  } else {
    WB_CHECK_MPI(MPI_Iallreduce(in.data(), out.data(), n, MPI_FLOAT, MPI_SUM, comm_, &reqs_[0]));
  }
  pending_ = true;
}

void AsyncSum::finish() {
  pending_ = false;
  if (peer_ < 0) return;
  // Rank order, as MPI_SUM over two ranks: the same bits on both (float + is commutative).
  const bool first = peer_ == 1;
  for (size_t i = 0; i < out_.size(); ++i) out_[i] = first ? in_[i] + got_[i] : got_[i] + in_[i];
}

bool AsyncSum::test() {
  if (!pending_) return false;
  int flag = 0;
  // Both requests: `in` is the caller's again only once the send has completed too.
  WB_CHECK_MPI(MPI_Testall(2, reqs_.data(), &flag, MPI_STATUSES_IGNORE));
  if (flag) finish();
  return flag != 0;
}

void AsyncSum::wait() {
  if (!pending_) return;
  WB_CHECK_MPI(MPI_Waitall(2, reqs_.data(), MPI_STATUSES_IGNORE));
  finish();
}

}  // namespace wb::comm
