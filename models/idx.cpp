#include "models/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "models/data_file.h"
#include "core/error.h"
#include "core/interrupt.h"

namespace wb::models {
namespace {

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using Gz = std::unique_ptr<gzFile_s, GzCloser>;

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

// Reads up to n bytes; returns the count read. A corrupt gzip stream is an error; a
// stream that simply ends early returns fewer bytes (the caller reports truncation).
size_t read_bytes(gzFile f, const std::string& path, uint8_t* dst, size_t n) {
  size_t got = 0;
  while (got < n) {
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - got, 1u << 30));
    const int r = gzread(f, dst + got, chunk);
    if (r < 0) {
      int errnum = 0;
      const char* msg = gzerror(f, &errnum);
      if (errnum == Z_BUF_ERROR) break;  // gzip stream cut short: the caller says truncated
      throw UserError(
          path, std::string("read error: ") + (errnum == Z_ERRNO ? std::strerror(errno) : msg));
    }
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return got;
}

}  // namespace

IdxArray read_idx_u8(const std::string& path, int ndims, const std::string& what,
                     uint64_t max_items) {
  require_regular_file(path, "IDX " + what + " file");
  errno = 0;
  Gz f(gzopen(path.c_str(), "rb"));
  if (!f)
    throw UserError(
        path, std::string("cannot open: ") + (errno ? std::strerror(errno) : "out of memory"));
  uint8_t head[4];
  if (read_bytes(f.get(), path, head, 4) < 4)
    throw UserError(path, "truncated: not an IDX file (shorter than its 4-byte magic)");
  const uint32_t magic =
      (uint32_t{head[0]} << 24) | (uint32_t{head[1]} << 16) | (uint32_t{head[2]} << 8) | head[3];
  const uint32_t expected = 0x00000800u | static_cast<uint32_t>(ndims);
  if (head[0] != 0 || head[1] != 0)
    throw UserError(path, "wrong magic " + hex32(magic) + ": not an IDX file (expected " +
                              hex32(expected) + " for " + what + " data)");
  if (head[2] != 0x08)
    throw UserError(path, "wrong magic " + hex32(magic) + ": IDX element type " + hex32(head[2]) +
                              " is not unsigned byte (0x08); expected " + hex32(expected) +
                              " for " + what + " data");
  if (head[3] != ndims)
    throw UserError(path, "wrong magic " + hex32(magic) + ": " + std::to_string(head[3]) +
                              " dimensions, expected " + std::to_string(ndims) + " (" +
                              hex32(expected) + ") for " + what + " data");
  IdxArray a;
  a.dims.resize(ndims);
  for (int d = 0; d < ndims; ++d) {
    uint8_t b[4];
    if (read_bytes(f.get(), path, b, 4) < 4)
      throw UserError(path, "truncated: header ends inside dimension " + std::to_string(d));
    a.dims[d] = (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
  }
  uint64_t item = 1;
  for (int d = 1; d < ndims; ++d) item *= a.dims[d];
  const uint64_t items = a.dims[0];
  if (item == 0 || item > (1u << 24))
    throw UserError(path, "implausible " + what + " size " + std::to_string(item) +
                              " bytes per item in the IDX header");
  const uint64_t total = items * item;
  const uint64_t keep = max_items > 0 && max_items < items ? max_items : items;
  // The buffer grows with the bytes actually read (doubling from 64 KiB), never sized
  // from the header up front: a corrupt header announcing gigabytes is a "truncated"
  // error after reading what the file has, not a multi-GB allocation (found by fuzz_idx).
  const uint64_t want = keep * item;
  size_t got = 0;
  while (got < want) {
    core::throw_if_interrupted();  // a chunk is <= the bytes read so far: polls stay frequent
    const size_t step = static_cast<size_t>(std::min<uint64_t>(
        want - got, std::min<uint64_t>(uint64_t{1} << 24, std::max<uint64_t>(uint64_t{1} << 16, got))));
    a.data.resize(got + step);
    const size_t r = read_bytes(f.get(), path, a.data.data() + got, step);
    got += r;
    if (r < step) break;
  }
  if (got < want) {
    throw UserError(path, "truncated: expected " +
                              std::to_string(keep == items ? total : keep * item) + " bytes of " +
                              what + " data, got " + std::to_string(got));
  }
  if (keep == items) {
    uint8_t extra;
    if (read_bytes(f.get(), path, &extra, 1) != 0)
      throw UserError(path, "trailing bytes after the " + std::to_string(total) + " bytes of " +
                                what + " data announced by the IDX header");
  }
  a.dims[0] = static_cast<uint32_t>(keep);
  return a;
}

}  // namespace wb::models
