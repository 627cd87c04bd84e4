#include "comm/sweep_control.h"

#include <algorithm>

#include "core/error.h"

namespace wb::comm {

std::string broadcast_text(const std::string& text, int root, MPI_Comm comm) {
  int size = 1, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  if (size == 1) return text;
  uint64_t len = text.size();
  WB_CHECK_MPI(MPI_Bcast(&len, 1, MPI_UINT64_T, root, comm));
  std::string out = rank == root ? text : std::string(static_cast<size_t>(len), '\0');
  // In chunks below INT_MAX bytes (MPI counts are int).
  constexpr uint64_t kChunk = 1u << 30;
  for (uint64_t off = 0; off < len; off += kChunk) {
    const int n = static_cast<int>(std::min<uint64_t>(kChunk, len - off));
    WB_CHECK_MPI(MPI_Bcast(out.data() + off, n, MPI_CHAR, root, comm));
  }
  return out;
}

bool same_on_all(uint64_t value, MPI_Comm comm) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  if (size == 1) return true;
  uint64_t lo = 0, hi = 0;
  WB_CHECK_MPI(MPI_Allreduce(&value, &lo, 1, MPI_UINT64_T, MPI_MIN, comm));
  WB_CHECK_MPI(MPI_Allreduce(&value, &hi, 1, MPI_UINT64_T, MPI_MAX, comm));
  return lo == hi;
}

void StopChannel::count_sent(int dest) const {
  if (sent_.empty()) {
    int size = 1;
    MPI_Comm_size(comm_, &size);
    sent_.assign(static_cast<size_t>(size), 0);
  }
  ++sent_[static_cast<size_t>(dest)];
}

void StopChannel::notify_root(int sig) const {
  WB_CHECK_MPI(MPI_Send(&sig, 1, MPI_INT, 0, kStopTag, comm_));
  count_sent(0);
}

void StopChannel::stop_all(int sig, const std::vector<int>& leaders) const {
  int rank = 0;
  MPI_Comm_rank(comm_, &rank);
  for (int r : leaders)
    if (r != rank) {
      WB_CHECK_MPI(MPI_Send(&sig, 1, MPI_INT, r, kStopTag, comm_));
      count_sent(r);
    }
}

int StopChannel::finish() const {
  int size = 1, rank = 0;
  MPI_Comm_size(comm_, &size);
  MPI_Comm_rank(comm_, &rank);
  if (size == 1) return 0;
  std::vector<int> sent(static_cast<size_t>(size), 0), total(static_cast<size_t>(size), 0);
  if (!sent_.empty()) sent = sent_;
  WB_CHECK_MPI(MPI_Allreduce(sent.data(), total.data(), size, MPI_INT, MPI_SUM, comm_));
  int got = 0;
  for (int k = received_; k < total[static_cast<size_t>(rank)]; ++k) {
    int sig = 0;
    WB_CHECK_MPI(MPI_Recv(&sig, 1, MPI_INT, MPI_ANY_SOURCE, kStopTag, comm_, MPI_STATUS_IGNORE));
    if (sig > 0) got = sig;
  }
  received_ = total[static_cast<size_t>(rank)];
  return got;
}

int StopChannel::poll() const {
  int got = 0;
  for (;;) {
    int flag = 0;
    MPI_Status st;
    WB_CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, kStopTag, comm_, &flag, &st));
    if (!flag) return got;
    int sig = 0;
    WB_CHECK_MPI(MPI_Recv(&sig, 1, MPI_INT, st.MPI_SOURCE, kStopTag, comm_, MPI_STATUS_IGNORE));
    ++received_;
    if (sig > 0) got = sig;
  }
}

}  // namespace wb::comm
