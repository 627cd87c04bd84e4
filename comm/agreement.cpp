#include "comm/agreement.h"

#include <string>

#include "core/error.h"
#include "core/interrupt.h"

namespace wb::comm {

void agree_on_errors(MPI_Comm comm, const std::function<void()>& fn) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int kind = 0;  // 0 ok, 1 user error, 2 other, 3 interrupted by a signal
  std::string msg, where, detail;
  try {
    fn();
  } catch (const core::Interrupted&) {
    kind = 3;
  } catch (const UserError& e) {
    kind = 1;
    msg = e.what();
    where = e.where;
    detail = e.detail;
  } catch (const std::exception& e) {
    kind = 2;
    msg = std::string("rank ") + std::to_string(rank) + ": " + e.what();
  }
  if (size == 1) {
    if (kind == 3) throw core::Interrupted();
    if (kind == 1) throw UserError(where, detail);
    if (kind == 2) throw InternalError(msg);
    return;
  }
  int mine = kind ? rank : size, first = size;
  WB_CHECK_MPI(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm));
  if (first == size) return;
  int k = kind;
  WB_CHECK_MPI(MPI_Bcast(&k, 1, MPI_INT, first, comm));
  auto bcast_str = [&](std::string& s) {
    int len = static_cast<int>(s.size());
    WB_CHECK_MPI(MPI_Bcast(&len, 1, MPI_INT, first, comm));
    s.resize(static_cast<size_t>(len));
    if (len) WB_CHECK_MPI(MPI_Bcast(s.data(), len, MPI_CHAR, first, comm));
  };
  bcast_str(msg);
  bcast_str(where);
  bcast_str(detail);
  if (k == 1) throw UserError(where, detail);
  if (k == 3) throw core::Interrupted();
  throw InternalError(msg);
}

}  // namespace wb::comm
