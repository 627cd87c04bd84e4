// libFuzzer target: the IDX reader (raw and gzip). Input bytes become a file (memfd);
// the reader must return a well-formed array or raise wb::UserError.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "models/idx.h"
#include "core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = memfd_create("idx", 0);
  if (fd < 0) return 0;
  if (size && write(fd, data, size) != static_cast<ssize_t>(size)) {
    close(fd);
    return 0;
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  for (int ndims : {1, 3}) {
    try {
      auto a = wb::models::read_idx_u8(path, ndims, ndims == 1 ? "label" : "image");
      size_t n = 1;
      for (auto d : a.dims) n *= d;
      if (n != a.data.size()) __builtin_trap();  // the reader's own invariant
    } catch (const wb::UserError&) {
    }
  }
  close(fd);
  return 0;
}
