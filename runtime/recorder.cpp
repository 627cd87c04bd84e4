#include "runtime/recorder.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <climits>
#include <cstring>
#include <signal.h>

#include <cerrno>
#include <hdf5.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <chrono>
#include <ctime>
#include <filesystem>

#include "runtime/core/error.h"
#include "runtime/result_codec.h"
#include "wb_config.h"

namespace wb::rt {
namespace fs = std::filesystem;

namespace {

#define WB_H5(expr)                                                  \
  ([&]() {                                                             \
    auto wb_h5_rc_ = (expr);                                           \
    if (wb_h5_rc_ < 0) ::wb::throw_internal(__FILE__, __LINE__, "HDF5: " #expr); \
    return wb_h5_rc_;                                                  \
  }())

struct Quiet {  // HDF5 prints its own error stack by default; we report our own.
  Quiet() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }
};
const Quiet quiet_once;

hid_t str_type() {
  hid_t t = WB_H5(H5Tcopy(H5T_C_S1));
  WB_H5(H5Tset_size(t, H5T_VARIABLE));
  WB_H5(H5Tset_cset(t, H5T_CSET_UTF8));
  return t;
}

void attr_str(hid_t loc, const char* name, const std::string& v) {
  hid_t t = str_type(), s = WB_H5(H5Screate(H5S_SCALAR));
  if (H5Aexists(loc, name) > 0) WB_H5(H5Adelete(loc, name));
  hid_t a = WB_H5(H5Acreate2(loc, name, t, s, H5P_DEFAULT, H5P_DEFAULT));
  const char* p = v.c_str();
  WB_H5(H5Awrite(a, t, &p));
  H5Aclose(a);
  H5Sclose(s);
  H5Tclose(t);
}

void attr_str_list(hid_t loc, const char* name, const std::vector<std::string>& v) {
  hid_t t = str_type();
  hsize_t n = v.size();
  hid_t s = WB_H5(H5Screate_simple(1, &n, nullptr));
  hid_t a = WB_H5(H5Acreate2(loc, name, t, s, H5P_DEFAULT, H5P_DEFAULT));
  std::vector<const char*> p;
  for (auto& x : v) p.push_back(x.c_str());
  if (n) WB_H5(H5Awrite(a, t, p.data()));
  H5Aclose(a);
  H5Sclose(s);
  H5Tclose(t);
}

template <class T>
void attr_num(hid_t loc, const char* name, T v) {
  hid_t mt = std::is_floating_point_v<T> ? H5T_NATIVE_DOUBLE : H5T_NATIVE_INT64;
  hid_t s = WB_H5(H5Screate(H5S_SCALAR));
  hid_t a = WB_H5(H5Acreate2(loc, name, mt, s, H5P_DEFAULT, H5P_DEFAULT));
  if constexpr (std::is_floating_point_v<T>) {
    double d = v;
    WB_H5(H5Awrite(a, mt, &d));
  } else {
    int64_t d = v;
    WB_H5(H5Awrite(a, mt, &d));
  }
  H5Aclose(a);
  H5Sclose(s);
}

std::string read_attr_str(hid_t loc, const char* name) {
  if (H5Aexists(loc, name) <= 0) return "";
  hid_t a = WB_H5(H5Aopen(loc, name, H5P_DEFAULT));
  hid_t t = str_type();
  char* p = nullptr;
  std::string out;
  if (H5Aread(a, t, &p) >= 0 && p) {
    out = p;
    H5free_memory(p);
  }
  H5Tclose(t);
  H5Aclose(a);
  return out;
}

void dataset(hid_t loc, const std::string& name, const double* data, size_t rows, size_t cols) {
  hsize_t dims[2] = {rows, cols};
  const int rank = cols == 1 ? 1 : 2;
  hid_t s = WB_H5(H5Screate_simple(rank, dims, nullptr));
  hid_t lcpl = WB_H5(H5Pcreate(H5P_LINK_CREATE));
  WB_H5(H5Pset_create_intermediate_group(lcpl, 1));
  hid_t d = WB_H5(H5Dcreate2(loc, name.c_str(), H5T_NATIVE_DOUBLE, s, lcpl, H5P_DEFAULT,
                               H5P_DEFAULT));
  if (rows * cols != 0) WB_H5(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data));
  H5Dclose(d);
  H5Pclose(lcpl);
  H5Sclose(s);
}

void dataset_i64(hid_t loc, const std::string& name, const std::vector<double>& v) {
  std::vector<int64_t> iv(v.size());
  for (size_t i = 0; i < v.size(); ++i) iv[i] = static_cast<int64_t>(v[i]);
  hsize_t n = v.size();
  hid_t s = WB_H5(H5Screate_simple(1, &n, nullptr));
  hid_t d = WB_H5(H5Dcreate2(loc, name.c_str(), H5T_NATIVE_INT64, s, H5P_DEFAULT, H5P_DEFAULT,
                               H5P_DEFAULT));
  if (n) WB_H5(H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, iv.data()));
  H5Dclose(d);
  H5Sclose(s);
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string hostname() {
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

herr_t collect_run(hid_t g, const char* name, const H5L_info_t*, void* op) {
  auto* out = static_cast<std::vector<std::string>*>(op);
  out->push_back(name);
  (void)g;
  return 0;
}

std::vector<std::string> run_names(hid_t f) {
  std::vector<std::string> names;
  if (H5Lexists(f, "runs", H5P_DEFAULT) <= 0) return names;
  hid_t g = WB_H5(H5Gopen2(f, "runs", H5P_DEFAULT));
  WB_H5(H5Literate(g, H5_INDEX_NAME, H5_ITER_NATIVE, nullptr, collect_run, &names));
  H5Gclose(g);
  return names;
}

// /summary is derived data: rebuilt from every run group's summary_json on each write.
void rebuild_summary(hid_t f) {
  struct Row {
    char* id;
    int64_t index;
    char* status;
    int64_t steps, samples;
    double wall_s, sim_s, sim_compute_s, sim_comm_s, sim_wait_s, final_train_loss, min_train_loss, final_test_loss, final_test_accuracy,
        best_test_accuracy;
    int64_t converged_step;
  };
  std::vector<std::string> ids = run_names(f), statuses;
  std::vector<Row> rows;
  std::vector<json> sums;
  for (auto& id : ids) {
    hid_t g = WB_H5(H5Gopen2(f, ("runs/" + id).c_str(), H5P_DEFAULT));
    statuses.push_back(read_attr_str(g, "status"));
    std::string sj = read_attr_str(g, "summary_json");
    sums.push_back(sj.empty() ? json::object() : json::parse(sj));
    H5Gclose(g);
  }
  auto num = [](const json& j, const char* k) {
    return j.contains(k) && j[k].is_number() ? j[k].get<double>() : NAN;
  };
  auto inum = [](const json& j, const char* k, int64_t dflt) {
    return j.contains(k) && j[k].is_number() ? j[k].get<int64_t>() : dflt;
  };
  for (size_t i = 0; i < ids.size(); ++i) {
    const json& s = sums[i];
    rows.push_back(Row{ids[i].data(), inum(s, "index", -1), statuses[i].data(),
                       inum(s, "steps", 0), inum(s, "samples", 0), num(s, "wall_s"),
                       num(s, "sim_s"), num(s, "sim_compute_s"), num(s, "sim_comm_s"),
                       num(s, "sim_wait_s"), num(s, "final_train_loss"), num(s, "min_train_loss"),
                       num(s, "final_test_loss"), num(s, "final_test_accuracy"),
                       num(s, "best_test_accuracy"), inum(s, "converged_step", -1)});
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.index < b.index; });
  hid_t st = str_type();
  hid_t ct = WB_H5(H5Tcreate(H5T_COMPOUND, sizeof(Row)));
#define F(name, type) WB_H5(H5Tinsert(ct, #name, HOFFSET(Row, name), type))
  F(id, st);
  F(index, H5T_NATIVE_INT64);
  F(status, st);
  F(steps, H5T_NATIVE_INT64);
  F(samples, H5T_NATIVE_INT64);
  F(wall_s, H5T_NATIVE_DOUBLE);
  F(sim_s, H5T_NATIVE_DOUBLE);
  F(sim_compute_s, H5T_NATIVE_DOUBLE);  // sim_s's breakdown (runtime/core/clock.h)
  F(sim_comm_s, H5T_NATIVE_DOUBLE);
  F(sim_wait_s, H5T_NATIVE_DOUBLE);
  F(final_train_loss, H5T_NATIVE_DOUBLE);
  F(min_train_loss, H5T_NATIVE_DOUBLE);
  F(final_test_loss, H5T_NATIVE_DOUBLE);
  F(final_test_accuracy, H5T_NATIVE_DOUBLE);
  F(best_test_accuracy, H5T_NATIVE_DOUBLE);
  F(converged_step, H5T_NATIVE_INT64);
#undef F
  if (H5Lexists(f, "summary", H5P_DEFAULT) > 0) WB_H5(H5Ldelete(f, "summary", H5P_DEFAULT));
  hsize_t n = rows.size();
  hid_t s = WB_H5(H5Screate_simple(1, &n, nullptr));
  hid_t d = WB_H5(H5Dcreate2(f, "summary", ct, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  if (n) WB_H5(H5Dwrite(d, ct, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data()));
  H5Dclose(d);
  H5Sclose(s);
  H5Tclose(ct);
  H5Tclose(st);
}

void fsync_path(const std::string& p) {
  int fd = ::open(p.c_str(), O_RDONLY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

double mono_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string errno_text(int e) { return std::strerror(e); }

// File access in memory (the core driver, no backing store): the HDF5 library never writes
// the results file itself, so a full disk is our own write(2) failing with ENOSPC, never
// an HDF5 flush half-done (which crashed in H5F__close_cb). HDF5's own file locking is
// off: the workbench's <out>.lock is the lock.
hid_t memory_fapl() {
  hid_t fapl = WB_H5(H5Pcreate(H5P_FILE_ACCESS));
  WB_H5(H5Pset_fapl_core(fapl, 1 << 20, 0));
  WB_H5(H5Pset_file_locking(fapl, 0, 1));
  return fapl;
}

void write_run_group(hid_t f, const RunResult& r) {
  const std::string gname = "runs/" + r.id;
  if (H5Lexists(f, gname.c_str(), H5P_DEFAULT) > 0) WB_H5(H5Ldelete(f, gname.c_str(), H5P_DEFAULT));
  hid_t g = WB_H5(H5Gcreate2(f, gname.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  attr_str(g, "config_json", r.config.dump());
  attr_str(g, "status", r.status);
  attr_str(g, "error", r.error);
  attr_num<double>(g, "wall_s", r.wall_s);
  attr_num<double>(g, "sim_s", r.sim_s);
  attr_num<int64_t>(g, "index", r.index);
  json s = r.summary;
  s["index"] = r.index;
  attr_str(g, "summary_json", s.dump());

  hid_t c = WB_H5(H5Gcreate2(g, "curves", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  const Curves& cv = r.curves;
  const size_t n = cv.size();
  dataset_i64(c, "step", cv.step);
  dataset(c, "epoch", cv.epoch.data(), n, 1);
  dataset_i64(c, "samples", cv.samples);
  dataset(c, "wall_s", cv.wall_s.data(), n, 1);
  dataset(c, "sim_s", cv.sim_s.data(), n, 1);
  dataset(c, "lr", cv.lr.data(), n, 1);
  dataset(c, "train_loss", cv.train_loss.data(), n, 1);
  if (r.has_test) dataset(c, "test_loss", cv.test_loss.data(), n, 1);
  if (r.has_accuracy) dataset(c, "test_accuracy", cv.test_accuracy.data(), n, 1);
  H5Gclose(c);

  for (const Series& se : r.series) {
    dataset(g, se.path, se.data.data(), se.rows, se.cols);
    if (!se.string_list_attrs.empty()) {
      hid_t d = WB_H5(H5Dopen2(g, se.path.c_str(), H5P_DEFAULT));
      for (auto& [k, v] : se.string_list_attrs) attr_str_list(d, k.c_str(), v);
      H5Dclose(d);
    }
  }
  H5Gclose(g);
}

// Every run's index is its position in the spec now describing the file.
void reindex_runs(hid_t f, const std::map<std::string, int>& index_of) {
  for (const std::string& id : run_names(f)) {
    auto it = index_of.find(id);
    if (it == index_of.end()) continue;
    hid_t g = WB_H5(H5Gopen2(f, ("runs/" + id).c_str(), H5P_DEFAULT));
    if (H5Aexists(g, "index") > 0) WB_H5(H5Adelete(g, "index"));
    attr_num<int64_t>(g, "index", it->second);
    const std::string sj = read_attr_str(g, "summary_json");
    json sum = sj.empty() ? json::object() : json::parse(sj);
    sum["index"] = it->second;
    attr_str(g, "summary_json", sum.dump());
    H5Gclose(g);
  }
}

// The image of the results file after adding `runs`: the existing file (unless `fresh`)
// plus the runs, /summary rebuilt. Built entirely in memory.
std::vector<char> build_image(const std::string& path, bool fresh, const FileInfo& info,
                              const std::vector<RunResult>& runs) {
  hid_t fapl = memory_fapl();
  hid_t f;
  if (fresh) {
    // A unique name: the core driver without backing store never creates it.
    const std::string mem = path + ".mem" + std::to_string(::getpid());
    f = WB_H5(H5Fcreate(mem.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl));
    attr_str(f, "workbench_version", WB_VERSION);
    attr_str(f, "git_commit", WB_GIT_COMMIT);
    attr_str(f, "experiment_json", info.experiment_json);
    attr_str(f, "created_utc", utc_now());
    attr_num<int64_t>(f, "mpi_ranks", info.mpi_ranks);
    attr_str(f, "host", hostname());
    attr_str(f, "devices", info.devices);
    H5Gclose(WB_H5(H5Gcreate2(f, "runs", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
  } else {
    // The old file is read, never opened for writing: its image in memory gets the new
    // runs (a read-only results file can be extended; the new one replaces it by rename).
    std::vector<char> old;
    int err = 0;
    {
      const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) err = errno;
      char chunk[1 << 16];
      while (fd >= 0) {
        const ssize_t n = ::read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) err = errno;
        if (n <= 0) break;
        old.insert(old.end(), chunk, chunk + n);
      }
      if (fd >= 0) ::close(fd);
    }
    // The core driver refuses an image under the name of a file that exists: a name that
    // does not (no backing store: nothing is created under it).
    const std::string mem = path + ".mem" + std::to_string(::getpid());
    if (!err) WB_H5(H5Pset_file_image(fapl, old.data(), old.size()));
    f = err ? -1 : H5Fopen(mem.c_str(), H5F_ACC_RDWR, fapl);
    if (f < 0) {
      H5Pclose(fapl);
      throw WriteError(path + ": cannot read the results file to add runs to it" +
                       (err ? ": " + errno_text(err) : std::string(" (not a valid HDF5 file)")));
    }
    // --resume checked that every stored run is one of this spec's, with its config: the
    // spec (which may extend the sweep) now describes the whole file.
    if (!info.experiment_json.empty()) attr_str(f, "experiment_json", info.experiment_json);
  }
  H5Pclose(fapl);
  std::vector<char> img;
  try {
    for (const RunResult& r : runs) write_run_group(f, r);
    if (!info.index_of.empty()) reindex_runs(f, info.index_of);
    rebuild_summary(f);
    WB_H5(H5Fflush(f, H5F_SCOPE_GLOBAL));
    const ssize_t n = WB_H5(H5Fget_file_image(f, nullptr, 0));
    img.resize(static_cast<size_t>(n));
    WB_H5(H5Fget_file_image(f, img.data(), img.size()));
  } catch (...) {
    H5Fclose(f);
    throw;
  }
  H5Fclose(f);
  return img;
}

// Write `bytes` to <path>.tmp<pid>, fsync, rename over `path`, fsync the directory. On any
// failure the tmp file is removed and `path` is untouched.
void replace_file(const std::string& path, const std::vector<char>& bytes) {
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  // O_EXCL | O_NOFOLLOW: a file (or a symbolic link) someone else put at this name is never
  // written through nor replaced (a link planted in a shared directory would otherwise
  // receive the results image, and the rename would make <out> that link).
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST)
      throw WriteError(tmp + ": exists and was not written by this process (a link or another "
                             "user's file?): it is left as it is; move it away, then --resume");
    throw WriteError(tmp + ": cannot create: " + errno_text(errno));
  }
  // The new file keeps the permissions of the file it replaces (a results file made read-only
  // stays read-only after --resume adds runs to it).
  struct stat old {};
  if (::stat(path.c_str(), &old) == 0) (void)::fchmod(fd, old.st_mode & 07777);
  size_t off = 0;
  int err = 0;
  while (off < bytes.size()) {
    const ssize_t w = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (w < 0) {
      if (errno == EINTR) continue;
      err = errno;
      break;
    }
    off += static_cast<size_t>(w);
  }
  if (!err && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && !err) err = errno;
  if (!err && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err) {
    ::unlink(tmp.c_str());
    throw WriteError(path + ": cannot write the results file: " + errno_text(err));
  }
  fsync_path(fs::absolute(path).parent_path().string());
}

// ---- the journal: framed records -------------------------------------------------
// record = "WBR1" | u32 type | u64 length | CBOR payload | u64 FNV-1a of the payload.
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

struct JournalContents {
  json header;                   // null when absent
  std::vector<RunResult> runs;   // in append order
  uint64_t valid_bytes = 0;      // up to the end of the last intact record
  int damaged = 0;               // damaged records skipped (not the torn tail of a crash)
  bool foreign = false;          // non-empty and not a journal at all (no record at offset 0)
};

JournalContents read_journal(const std::string& path) {
  JournalContents jc;
  std::vector<uint8_t> buf;
  {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return jc;
    uint8_t chunk[1 << 16];
    for (;;) {
      const ssize_t n = ::read(fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      buf.insert(buf.end(), chunk, chunk + n);
    }
    ::close(fd);
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

bool is_result(const std::string& status) { return status == "completed" || status == "diverged"; }

std::string lock_holder(const std::string& lock) {
  std::string pid;
  if (FILE* f = std::fopen(lock.c_str(), "r")) {
    char buf[64] = {0};
    if (std::fgets(buf, sizeof buf, f)) pid = buf;
    std::fclose(f);
  }
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid.empty() ? "another process" : "process " + pid;
}

}  // namespace

// ---- Recorder ----------------------------------------------------------------------

Recorder::Recorder(std::string path, Mode mode, const std::string& where, bool dry_run)
    : path_(std::move(path)), mode_(mode), dry_run_(dry_run) {
  try {
    open(where);
  } catch (...) {
    release();  // a refused start leaves nothing behind
    throw;
  }
}

void Recorder::open(const std::string& where) {
  const Mode mode = mode_;
  check_output_writable(path_, where, mode == Mode::kForce);
  // An existing file that --resume adds to (or --force replaces) must be readable, and
  // replaceable: an immutable or append-only file (chattr +i/+a) cannot be renamed over, and
  // that is found now, not after every run has executed.
  {
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0 && errno != ENOENT && mode == Mode::kResume)
      throw UserError(where, path_ + ": cannot read the results file to resume it: " + errno_text(errno));
    if (fd >= 0) {
      int flags = 0;
      if (::ioctl(fd, FS_IOC_GETFLAGS, &flags) != 0) flags = 0;
      ::close(fd);
      if (flags & (FS_IMMUTABLE_FL | FS_APPEND_FL))
        throw UserError(where, path_ + " is " + ((flags & FS_IMMUTABLE_FL) ? "immutable" : "append-only") +
                                   " (chattr +" + ((flags & FS_IMMUTABLE_FL) ? "i" : "a") +
                                   "): it cannot be replaced; chattr -i it, or use another -o");
    }
  }
  // Follow a symlink to an existing file: the results go where it points.
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(path_, ec)) && fs::exists(path_, ec))
    path_ = fs::canonical(path_, ec).string();
  journal_ = path_ + ".journal";
  lock_ = path_ + ".lock";

  // Companions are ours or refused: never a symbolic link (opened with O_NOFOLLOW), a
  // regular file of this user with one link (a hard link would write into another file),
  // and for an existing lock or journal, contents the workbench writes.
  check_companion(lock_, where);
  check_companion(journal_, where);
  check_companion(path_ + ".tmp" + std::to_string(::getpid()), where, /*must_be_absent=*/true);
  // The lock: flock on <out>.lock. The file may be unlinked by its previous holder between
  // our open and our flock; then we hold a lock on a dead inode, so check and retry.
  std::string stale_pid;  // the pid a crashed writer left in the lock
  for (int attempt = 0;; ++attempt) {
    const int fd = ::open(lock_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno == ELOOP)
      throw UserError(where, lock_ + " is a symbolic link: refusing to write through it (remove it)");
    if (fd < 0) throw UserError(where, "cannot create the lock file " + lock_ + ": " + errno_text(errno));
    if (!companion_ok(fd)) {
      ::close(fd);
      throw UserError(where, lock_ + " is not a workbench lock file (" + companion_problem_ +
                                 "): refusing to touch it; remove it or use another -o");
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      throw UserError(path_, "is being written by " + lock_holder(lock_) + " (it holds " + lock_ +
                                 "); wait for it, or use another -o");
    }
    struct stat a {}, b {};
    if (::fstat(fd, &a) == 0 && ::stat(lock_.c_str(), &b) == 0 && a.st_ino == b.st_ino &&
        a.st_dev == b.st_dev) {
      lock_fd_ = fd;
      break;
    }
    ::close(fd);
    if (attempt > 100) throw UserError(path_, "cannot take the lock " + lock_);
  }
  {
    char buf[32] = {0};
    const ssize_t n = ::pread(lock_fd_, buf, sizeof buf - 1, 0);
    if (n > 0) stale_pid = std::string(buf, static_cast<size_t>(n));
    while (!stale_pid.empty() && (stale_pid.back() == '\n' || stale_pid.back() == ' ')) stale_pid.pop_back();
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(lock_fd_, 0) == 0) (void)!::write(lock_fd_, pid.data(), pid.size());

  // A writer killed during a fold leaves <out>.tmp<its pid>, and its pid in the lock: that
  // file (and no other) was written by the workbench, with O_EXCL; remove it if it is still
  // a regular file of ours. A user's own <out>.tmp99 is never touched.
  const fs::path abs = fs::absolute(path_);
  if (!stale_pid.empty() && stale_pid.size() <= 9 &&
      stale_pid.find_first_not_of("0123456789") == std::string::npos &&
      stale_pid != std::to_string(::getpid())) {
    const std::string t = path_ + ".tmp" + stale_pid;
    struct stat ts {};
    if (::lstat(t.c_str(), &ts) == 0 && S_ISREG(ts.st_mode) && ts.st_uid == ::geteuid() &&
        ts.st_nlink == 1 && (::kill(static_cast<pid_t>(std::stol(stale_pid)), 0) != 0 && errno == ESRCH))
      ::unlink(t.c_str());
  }

  // A journal a crash left behind: its runs are completed results that are not in <out> yet.
  const bool had_journal = fs::exists(fs::symlink_status(journal_, ec));
  JournalContents jc = had_journal ? read_journal(journal_) : JournalContents{};
  if (jc.foreign)
    throw UserError(where, journal_ + " exists and is not a workbench journal: refusing to "
                                      "replace it; move it away or use another -o");
  damaged_records_ = jc.damaged;
  if (!jc.runs.empty() && mode == Mode::kNew)
    throw UserError(path_, "an interrupted sweep left " + std::to_string(jc.runs.size()) +
                               " finished run(s) in " + journal_ +
                               ": pass --resume to keep them or --force to discard them");
  if (mode == Mode::kNew && fs::exists(path_, ec))
    throw UserError(path_, "already exists: pass --resume to continue it or --force to overwrite");
  if (dry_run_) {
    // --dry-run changes nothing: report what --resume would keep, fold nothing.
    if (mode == Mode::kResume) {
      stored_ = existing_runs(path_);
      for (const auto& r : jc.runs) stored_[r.id] = StoredRun{r.status, r.config.dump()};
    }
    return;
  }
  if (mode == Mode::kResume && !jc.runs.empty()) {
    // Fold what the crash left, exactly as the crashed process would have.
    const bool jfresh = jc.header.is_object() && jc.header.value("fresh", false);
    int results = 0;
    for (const auto& r : jc.runs) results += is_result(r.status);
    if (!(jfresh && fs::exists(path_, ec) && results == 0)) {
      FileInfo fi;
      if (jc.header.is_object()) {
        fi.experiment_json = jc.header.value("experiment_json", "");
        fi.mpi_ranks = jc.header.value("mpi_ranks", 1);
        fi.devices = jc.header.value("devices", "cpu");
        if (jc.header.contains("index_of") && jc.header["index_of"].is_object())
          fi.index_of = jc.header["index_of"].get<std::map<std::string, int>>();
      }
      try {
        replace_file(path_, build_image(path_, jfresh || !fs::exists(path_, ec), fi, jc.runs));
      } catch (const WriteError& e) {
        throw UserError(path_, std::string("cannot fold the runs of ") + journal_ + ": " + e.what());
      }
    }
  }
  if (mode == Mode::kResume) stored_ = existing_runs(path_);
  fresh_ = mode == Mode::kForce || !fs::exists(path_, ec);
  // Start this sweep's journal empty (a --force discards a crash's journal on purpose; a
  // --resume has folded it).
  // (checked above: absent, or a journal of ours; replaced by a new file, never written
  // through).
  if (had_journal) ::unlink(journal_.c_str());
  journal_fd_ = ::open(journal_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (journal_fd_ < 0) throw UserError(where, "cannot create " + journal_ + ": " + errno_text(errno));
  fsync_path(abs.parent_path().string());
}

void Recorder::write_run(const RunResult& r) {
  if (journal_fd_ < 0) throw WriteError(journal_ + ": the journal is closed after an earlier error");
  const off_t before = ::lseek(journal_fd_, 0, SEEK_END);
  try {
    if (!header_written_) {
      json h = {{"fresh", fresh_},
                {"experiment_json", info_.experiment_json},
                {"mpi_ranks", info_.mpi_ranks},
                {"devices", info_.devices},
                {"index_of", info_.index_of},
                {"pid", static_cast<int64_t>(::getpid())}};
      write_all(journal_fd_, frame(kHeader, json::to_cbor(h)), journal_);
    }
    write_all(journal_fd_, frame(kRun, pack_result(r)), journal_);
  } catch (const WriteError&) {
    // A torn record would only be dropped on reading; cut it now so that later records
    // (after space is freed) are not hidden behind it.
    if (before >= 0 && ::ftruncate(journal_fd_, before) != 0) {}
    throw;
  }
  header_written_ = true;
  ++journal_runs_;
  journal_results_ += is_result(r.status);
  // write(2) alone survives a kill -9 (the kernel has the data); fdatasync makes it survive
  // a power cut too. At ~5 ms per sync, syncing each of 10,000 one-step runs would take
  // 50 s: sync when the last sync is kJournalSyncS old (and at the fold).
  const double now = mono_s();
  if (now - last_sync_ >= kJournalSyncS) {
    if (::fdatasync(journal_fd_) != 0) throw WriteError(journal_ + ": " + errno_text(errno));
    last_sync_ = now;
  }
}

bool Recorder::fold() {
  if (journal_fd_ < 0) return false;
  std::error_code ec;
  bool wrote = false;
  if (journal_runs_ > 0) {
    if (::fdatasync(journal_fd_) != 0) throw WriteError(journal_ + ": " + errno_text(errno));
    // An interrupted --force sweep with nothing completed leaves the old file as it was.
    if (!(fresh_ && journal_results_ == 0 && fs::exists(path_, ec))) {
      const JournalContents jc = read_journal(journal_);
      replace_file(path_, build_image(path_, fresh_, info_, jc.runs));
      fresh_ = false;
      wrote = true;
    }
  }
  ::close(journal_fd_);
  journal_fd_ = -1;
  ::unlink(journal_.c_str());
  fsync_path(fs::absolute(path_).parent_path().string());
  journal_runs_ = journal_results_ = 0;
  return wrote;
}

bool Recorder::companion_ok(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return companion_problem_ = errno_text(errno), false;
  if (!S_ISREG(st.st_mode)) return companion_problem_ = "not a regular file", false;
  if (st.st_uid != ::geteuid()) return companion_problem_ = "owned by another user", false;
  if (st.st_nlink != 1)
    return companion_problem_ = "it has " + std::to_string(st.st_nlink) + " hard links", false;
  // A lock holds a pid and a newline (or nothing).
  char buf[32] = {0};
  const ssize_t n = ::pread(fd, buf, sizeof buf, 0);
  if (n < 0) return companion_problem_ = errno_text(errno), false;
  for (ssize_t i = 0; i < n; ++i)
    if (!(buf[i] >= '0' && buf[i] <= '9') && buf[i] != '\n')
      return companion_problem_ = "its contents are not a process id", false;
  if (n == static_cast<ssize_t>(sizeof buf)) return companion_problem_ = "too long for a lock", false;
  return true;
}

void Recorder::check_companion(const std::string& p, const std::string& where, bool must_be_absent) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) return;  // absent: it will be created with O_EXCL
  if (S_ISLNK(st.st_mode))
    throw UserError(where, p + " is a symbolic link: refusing to write through it (the workbench "
                              "creates its companion files itself; remove the link)");
  if (must_be_absent)
    throw UserError(where, p + " exists and was not written by this process: refusing to replace "
                              "it; move it away");
  if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || st.st_nlink != 1)
    throw UserError(where, p + " is not a companion file of this workbench (" +
                               (!S_ISREG(st.st_mode) ? std::string("not a regular file")
                                : st.st_uid != ::geteuid() ? std::string("owned by another user")
                                                           : std::string("it has several hard links")) +
                               "): refusing to touch it; move it away or use another -o");
}

Recorder::~Recorder() { release(); }

void Recorder::release() {
  if (journal_fd_ >= 0) {
    ::close(journal_fd_);
    // An empty journal is nothing to keep; one with runs stays for --resume.
    if (journal_runs_ == 0) ::unlink(journal_.c_str());
    journal_fd_ = -1;
  }
  if (lock_fd_ >= 0) {
    ::unlink(lock_.c_str());  // while holding it: a waiter re-checks the inode
    ::close(lock_fd_);
    lock_fd_ = -1;
  }
}

std::map<std::string, StoredRun> existing_runs(const std::string& path) {
  std::map<std::string, StoredRun> out;
  std::error_code ec;
  if (!fs::exists(path, ec)) return out;
  if (H5Fis_hdf5(path.c_str()) <= 0)
    throw UserError(path, "exists but is not an HDF5 file (not a workbench results file): move "
                          "it away, or --force to replace it");
  hid_t fapl = WB_H5(H5Pcreate(H5P_FILE_ACCESS));
  WB_H5(H5Pset_file_locking(fapl, 0, 1));
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl);
  H5Pclose(fapl);
  if (f < 0)
    throw UserError(path, "is corrupt or truncated (HDF5 cannot open it; a copy cut short?): "
                          "restore it, move it away, or --force to replace it");
  auto not_ours = [&](const std::string& why) {
    H5Fclose(f);
    throw UserError(path, "is not a workbench results file (" + why +
                              "): use another -o, or --force to replace it");
  };
  if (H5Aexists(f, "workbench_version") <= 0) not_ours("no workbench_version attribute");
  if (H5Lexists(f, "runs", H5P_DEFAULT) > 0) {
    H5O_info_t oi;
    if (H5Oget_info_by_name(f, "runs", &oi, H5P_DEFAULT) < 0 || oi.type != H5O_TYPE_GROUP)
      not_ours("/runs is not a group");
  }
  for (auto& id : run_names(f)) {
    hid_t g = H5Gopen2(f, ("runs/" + id).c_str(), H5P_DEFAULT);
    if (g < 0) not_ours("/runs/" + id + " is not a group");
    out[id] = StoredRun{read_attr_str(g, "status"), read_attr_str(g, "config_json")};
    H5Gclose(g);
  }
  H5Fclose(f);
  return out;
}

void check_output_writable(const std::string& path, const std::string& where, bool force) {
  std::error_code ec;
  fs::path p = fs::absolute(path);
  const fs::file_status ls = fs::symlink_status(p, ec);
  if (fs::is_symlink(ls)) {
    if (!fs::exists(p, ec)) {
      if (!force)
        throw UserError(where, "output " + p.string() + " is a dangling symbolic link (to " +
                                   fs::read_symlink(p, ec).string() + "): pass --force to replace it");
    } else {
      p = fs::canonical(p, ec);
    }
  }
  const fs::path dir = p.parent_path();
  if (!fs::is_directory(dir, ec))
    throw UserError(where, "output directory " + dir.string() + " does not exist");
  const fs::file_status st = fs::status(p, ec);
  if (fs::exists(st) && !fs::is_regular_file(st)) {
    const char* kind = fs::is_directory(st) ? "a directory" : fs::is_fifo(st) ? "a FIFO"
                       : fs::is_socket(st) ? "a socket" : fs::is_character_file(st) || fs::is_block_file(st)
                       ? "a device" : "not a regular file";
    throw UserError(where, "output " + p.string() + " is " + kind +
                               ": results go to a regular file (or a new name)");
  }
  // Name limits, with the companions' suffixes: ".tmp" + pid (up to 10 digits), ".journal".
  const long name_max = ::pathconf(dir.c_str(), _PC_NAME_MAX);
  const size_t longest = p.filename().string().size() + 14;
  if (name_max > 0 && longest > static_cast<size_t>(name_max))
    throw UserError(where, "output name " + p.filename().string().substr(0, 40) + "... is " +
                               std::to_string(p.filename().string().size()) +
                               " characters; with the .tmp<pid>/.journal companions it must stay "
                               "within the file system's " + std::to_string(name_max) + " (use a shorter name)");
  if (p.string().size() + 14 >= PATH_MAX)
    throw UserError(where, "output path is " + std::to_string(p.string().size()) +
                               " characters, beyond the system's limit (" + std::to_string(PATH_MAX) + ")");
  // Probe by creating a file: access(W_OK) says yes to root even on read-only mounts.
  const fs::path probe = dir / (".wb-probe-" + std::to_string(::getpid()));
  const int fd = ::open(probe.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600);
  if (fd < 0) throw UserError(where, "output directory " + dir.string() + " is not writable");
  ::close(fd);
  ::unlink(probe.c_str());
}

}  // namespace wb::rt
