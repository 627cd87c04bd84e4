#include "comm/process_group.h"

#include "core/error.h"

namespace wb::comm {

int rank_of(MPI_Comm comm) {
  int r = 0;
  MPI_Comm_rank(comm, &r);
  return r;
}

int size_of(MPI_Comm comm) {
  int s = 1;
  MPI_Comm_size(comm, &s);
  return s;
}

MPI_Comm split_group(MPI_Comm comm, int color, int key) {
  MPI_Comm out = MPI_COMM_NULL;
  WB_CHECK_MPI(MPI_Comm_split(comm, color < 0 ? MPI_UNDEFINED : color, key, &out));
  return out;
}

void free_group(MPI_Comm& group, MPI_Comm parent) {
  if (group != parent && group != MPI_COMM_NULL) MPI_Comm_free(&group);
}

void broadcast_flags(std::vector<char>& flags, int root, MPI_Comm comm) {
  if (size_of(comm) > 1 && !flags.empty())
    WB_CHECK_MPI(MPI_Bcast(flags.data(), static_cast<int>(flags.size()), MPI_CHAR, root, comm));
}

int broadcast_int(int value, int root, MPI_Comm comm) {
  if (size_of(comm) > 1) WB_CHECK_MPI(MPI_Bcast(&value, 1, MPI_INT, root, comm));
  return value;
}

int max_over(int value, MPI_Comm comm) {
  int out = value;
  if (size_of(comm) > 1) WB_CHECK_MPI(MPI_Allreduce(&value, &out, 1, MPI_INT, MPI_MAX, comm));
  return out;
}

void ResultChannel::send(const std::vector<uint8_t>& bytes) const {
  WB_CHECK_MPI(MPI_Send(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, 0, kResultTag, comm_));
}

void ResultChannel::send_done() const {
  WB_CHECK_MPI(MPI_Send(nullptr, 0, MPI_BYTE, 0, kResultTag, comm_));
}

std::optional<std::vector<uint8_t>> ResultChannel::receive(bool block) const {
  int flag = 0;
  MPI_Status st;
  if (block) {
    WB_CHECK_MPI(MPI_Probe(MPI_ANY_SOURCE, kResultTag, comm_, &st));
    flag = 1;
  } else {
    WB_CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, kResultTag, comm_, &flag, &st));
  }
  if (!flag) return std::nullopt;
  int bytes = 0;
  MPI_Get_count(&st, MPI_BYTE, &bytes);
  std::vector<uint8_t> buf(static_cast<size_t>(bytes));
  WB_CHECK_MPI(MPI_Recv(buf.data(), bytes, MPI_BYTE, st.MPI_SOURCE, kResultTag, comm_,
                        MPI_STATUS_IGNORE));
  return buf;
}

}  // namespace wb::comm
