#include "app/results/journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "app/results/output_guard.h"
#include "app/results/result_codec.h"

namespace wb::app {

namespace {

constexpr char kMagic[4] = {'W', 'B', 'R', '1'};
constexpr uint32_t kHeader = 0, kRun = 1;

uint64_t fnv1a(const uint8_t* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

std::vector<uint8_t> frame(uint32_t type, const std::vector<uint8_t>& payload) {
  const uint64_t len = payload.size(), h = fnv1a(payload.data(), payload.size());
  std::vector<uint8_t> out(16 + payload.size() + 8);
  std::memcpy(out.data(), kMagic, 4);
  std::memcpy(out.data() + 4, &type, 4);
  std::memcpy(out.data() + 8, &len, 8);
  if (!payload.empty()) std::memcpy(out.data() + 16, payload.data(), payload.size());
  std::memcpy(out.data() + 16 + payload.size(), &h, 8);
  return out;
}

}  // namespace

JournalContents read_journal(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return JournalContents{};
  JournalContents jc = read_journal_fd(fd);
  ::close(fd);
  return jc;
}

JournalContents read_journal_fd(int fd) {
  JournalContents jc;
  std::vector<uint8_t> buf;
  {
    uint8_t chunk[1 << 16];
    for (;;) {
      const ssize_t n = ::pread(fd, chunk, sizeof chunk, static_cast<off_t>(buf.size()));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      buf.insert(buf.end(), chunk, chunk + n);
    }
  }
  jc.foreign = !buf.empty() && (buf.size() < 4 || std::memcmp(buf.data(), kMagic, 4) != 0);
  if (jc.foreign) return jc;
  // A damaged record (bad checksum, bad length, payload that does not decode) is skipped: the
  // reader resynchronises at the next record magic, so one bad record in the middle loses
  // that run only. A damaged last record is the torn tail of a crash (not counted).
  auto next_magic = [&](size_t from) {
    for (size_t i = from; i + 4 <= buf.size(); ++i)
      if (std::memcmp(buf.data() + i, kMagic, 4) == 0) return i;
    return buf.size();
  };
  size_t off = 0;
  int bad = 0;
  while (off + 16 <= buf.size()) {
    bool ok = std::memcmp(buf.data() + off, kMagic, 4) == 0;
    uint32_t type = 0;
    uint64_t len = 0, h = 0;
    if (ok) {
      std::memcpy(&type, buf.data() + off + 4, 4);
      std::memcpy(&len, buf.data() + off + 8, 8);
      ok = len <= buf.size() && off + 16 + len + 8 <= buf.size();
    }
    const uint8_t* p = buf.data() + off + 16;
    if (ok) {
      std::memcpy(&h, p + len, 8);
      ok = h == fnv1a(p, len) && (type == kHeader || type == kRun);
    }
    if (ok) {
      const std::vector<uint8_t> payload(p, p + len);
      try {
        if (type == kHeader) jc.header = json::from_cbor(payload);
        else jc.runs.push_back(unpack_result(payload));
      } catch (const std::exception&) {
        ok = false;
      }
    }
    if (!ok) {
      const size_t nxt = next_magic(off + 1);
      if (nxt >= buf.size()) break;  // nothing intact after it: a torn tail
      ++bad;
      off = nxt;
      continue;
    }
    off += 16 + len + 8;
    jc.valid_bytes = off;
  }
  jc.damaged = bad;
  return jc;
}

void write_all(int fd, const std::vector<uint8_t>& b, const std::string& what) {
  size_t off = 0;
  while (off < b.size()) {
    const ssize_t w = ::write(fd, b.data() + off, b.size() - off);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw WriteError(what + ": " + errno_text(errno));
    }
    off += static_cast<size_t>(w);
  }
}

std::vector<uint8_t> journal_header_record(const json& header) {
  return frame(kHeader, json::to_cbor(header));
}
std::vector<uint8_t> journal_run_record(const RunResult& r, const json* provenance) {
  return frame(kRun, pack_result(r, provenance));
}

}  // namespace wb::app
