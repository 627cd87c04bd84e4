// Errors. Two kinds, kept apart on purpose (DESIGN.md section 10):
//  - wb::UserError: the user's input is wrong (JSON, data file, parameter range, layout).
//    The CLI prints exactly one line "workbench: error: <where>: <what>" and exits 2.
//    <where> names the file and the JSON path ("spec.json: $.base.workers") or line.
//  - everything else (MPI/HDF5 failures, violated invariants) is a bug or an
//    environment failure: reported with rank, file and line, exit code 1.
#pragma once

#include <stdexcept>
#include <string>

namespace wb {

class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& msg) : std::runtime_error(msg), detail(msg) {}
  // where: "file: $.json.path" or "file:line"; what: the problem and what was expected.
  UserError(const std::string& where_, const std::string& what_)
      : std::runtime_error(where_.empty() ? what_ : where_ + ": " + what_),
        where(where_),
        detail(what_) {}
  std::string where;   // may be empty
  std::string detail;  // the message without the location
};

// An internal failure (MPI, HDF5, invariant). Carries its origin.
class InternalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void throw_internal(const char* file, int line, const std::string& what);
[[noreturn]] void throw_mpi(const char* file, int line, const char* call, int code);

}  // namespace wb

#define WB_ASSERT(cond, msg)                                                        \
  do {                                                                              \
    if (!(cond)) ::wb::throw_internal(__FILE__, __LINE__, std::string("assertion `" \
                                      #cond "` failed: ") + (msg));                 \
  } while (0)

// Every MPI call goes through this: a failure names the rank, the call, file and line.
#define WB_CHECK_MPI(call)                                                 \
  do {                                                                     \
    int wb_mpi_rc_ = (call);                                               \
    if (wb_mpi_rc_ != 0) ::wb::throw_mpi(__FILE__, __LINE__, #call, wb_mpi_rc_); \
  } while (0)
