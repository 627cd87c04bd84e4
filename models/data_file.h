// Data files are regular files: opening a FIFO blocks until a
// writer appears (the run hangs in open(), deaf to SIGTERM), and a device or a directory is
// never a data set. Checked with stat() before any open; a symlink to a regular file is fine.
#pragma once

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "core/error.h"

namespace wb::models {

inline void require_regular_file(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw UserError(path, "cannot open the " + what + ": " + std::strerror(errno));
  if (S_ISREG(st.st_mode)) return;
  const char* kind = S_ISFIFO(st.st_mode)  ? "a FIFO"
                     : S_ISDIR(st.st_mode) ? "a directory"
                     : S_ISCHR(st.st_mode) ? "a character device"
                     : S_ISBLK(st.st_mode) ? "a block device"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                                            : "not a regular file";
  throw UserError(path, std::string("is ") + kind + ": the " + what +
                            " must be a regular file (a FIFO would block the run)");
}

}  // namespace wb::models
