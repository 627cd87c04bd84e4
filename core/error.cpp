#include "core/error.h"

#include <mpi.h>

#include <string>

namespace wb {

static int world_rank_or_minus1() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (!init || fin) return -1;
  int r = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

void throw_internal(const char* file, int line, const std::string& what) {
  throw InternalError("rank " + std::to_string(world_rank_or_minus1()) + " " + file + ":" +
                      std::to_string(line) + ": " + what);
}

void throw_mpi(const char* file, int line, const char* call, int code) {
  char buf[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(code, buf, &len);
  throw_internal(file, line, std::string(call) + " failed: " + std::string(buf, len));
}

}  // namespace wb
