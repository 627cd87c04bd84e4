#include "app/results/results_layout.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <stdexcept>

#include "app/results/build_info.h"
#include "app/results/hdf5_handle.h"
#include "app/results/host_info.h"
#include "app/results/output_guard.h"
#include "app/results/result_schema.h"
#include "core/error.h"
#include "wb_config.h"

namespace wb::app {
namespace fs = std::filesystem;

namespace {

struct Quiet {  // HDF5 prints its own error stack by default; we report our own.
  Quiet() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }
};
const Quiet quiet_once;

H5Type str_type() {
  H5Type t(WB_H5(H5Tcopy(H5T_C_S1)));
  WB_H5(H5Tset_size(t, H5T_VARIABLE));
  WB_H5(H5Tset_cset(t, H5T_CSET_UTF8));
  return t;
}

void attr_str(hid_t loc, const char* name, const std::string& v) {
  const H5Type t = str_type();
  const H5Space s(WB_H5(H5Screate(H5S_SCALAR)));
  if (H5Aexists(loc, name) > 0) WB_H5(H5Adelete(loc, name));
  const H5Attr a(WB_H5(H5Acreate2(loc, name, t, s, H5P_DEFAULT, H5P_DEFAULT)));
  const char* p = v.c_str();
  WB_H5(H5Awrite(a, t, &p));
}

void attr_str_list(hid_t loc, const char* name, const std::vector<std::string>& v) {
  const H5Type t = str_type();
  hsize_t n = v.size();
  const H5Space s(WB_H5(H5Screate_simple(1, &n, nullptr)));
  const H5Attr a(WB_H5(H5Acreate2(loc, name, t, s, H5P_DEFAULT, H5P_DEFAULT)));
  std::vector<const char*> p;
  for (auto& x : v) p.push_back(x.c_str());
  if (n) WB_H5(H5Awrite(a, t, p.data()));
}

template <class T>
void attr_num(hid_t loc, const char* name, T v) {
  hid_t mt = std::is_floating_point_v<T> ? H5T_NATIVE_DOUBLE : H5T_NATIVE_INT64;
  const H5Space s(WB_H5(H5Screate(H5S_SCALAR)));
  const H5Attr a(WB_H5(H5Acreate2(loc, name, mt, s, H5P_DEFAULT, H5P_DEFAULT)));
  if constexpr (std::is_floating_point_v<T>) {
    double d = v;
    WB_H5(H5Awrite(a, mt, &d));
  } else {
    int64_t d = v;
    WB_H5(H5Awrite(a, mt, &d));
  }
}

std::string read_attr_str(hid_t loc, const char* name) {
  if (H5Aexists(loc, name) <= 0) return "";
  const H5Attr a(WB_H5(H5Aopen(loc, name, H5P_DEFAULT)));
  const H5Type t = str_type();
  char* p = nullptr;
  std::string out;
  if (H5Aread(a, t, &p) >= 0 && p) {
    out = p;
    H5free_memory(p);
  }
  return out;
}

void dataset(hid_t loc, const std::string& name, const double* data, size_t rows, size_t cols) {
  hsize_t dims[2] = {rows, cols};
  const int rank = cols == 1 ? 1 : 2;
  const H5Space s(WB_H5(H5Screate_simple(rank, dims, nullptr)));
  const H5Plist lcpl(WB_H5(H5Pcreate(H5P_LINK_CREATE)));
  WB_H5(H5Pset_create_intermediate_group(lcpl, 1));
  const H5Dataset d(WB_H5(H5Dcreate2(loc, name.c_str(), H5T_NATIVE_DOUBLE, s, lcpl, H5P_DEFAULT,
                                      H5P_DEFAULT)));
  if (rows * cols != 0) WB_H5(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data));
}

void dataset_i64(hid_t loc, const std::string& name, const std::vector<double>& v) {
  std::vector<int64_t> iv(v.size());
  for (size_t i = 0; i < v.size(); ++i) iv[i] = static_cast<int64_t>(v[i]);
  hsize_t n = v.size();
  const H5Space s(WB_H5(H5Screate_simple(1, &n, nullptr)));
  const H5Dataset d(WB_H5(H5Dcreate2(loc, name.c_str(), H5T_NATIVE_INT64, s, H5P_DEFAULT, H5P_DEFAULT,
                                      H5P_DEFAULT)));
  if (n) WB_H5(H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, iv.data()));
}

// Series of counts, written as int64 (W x classes): the realised data partition's
// label_counts (app/exec/training_loop.cpp; docs/results.md). Counts travel as doubles in a
// Series, exact below 2^53.
bool is_count_series(const std::string& path) { return path == "partition/label_counts"; }

void dataset_counts(hid_t loc, const std::string& name, const std::vector<double>& v, size_t rows,
                    size_t cols) {
  std::vector<int64_t> iv(v.size());
  for (size_t i = 0; i < v.size(); ++i) iv[i] = static_cast<int64_t>(v[i]);
  hsize_t dims[2] = {rows, cols};
  const H5Space s(WB_H5(H5Screate_simple(cols == 1 ? 1 : 2, dims, nullptr)));
  const H5Plist lcpl(WB_H5(H5Pcreate(H5P_LINK_CREATE)));
  WB_H5(H5Pset_create_intermediate_group(lcpl, 1));
  const H5Dataset d(WB_H5(H5Dcreate2(loc, name.c_str(), H5T_NATIVE_INT64, s, lcpl, H5P_DEFAULT,
                                      H5P_DEFAULT)));
  if (rows * cols != 0) WB_H5(H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, iv.data()));
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
  const H5Group g(WB_H5(H5Gopen2(f, "runs", H5P_DEFAULT)));
  WB_H5(H5Literate(g, H5_INDEX_NAME, H5_ITER_NATIVE, nullptr, collect_run, &names));
  return names;
}

// /summary is derived data: rebuilt from every run group's summary_json on each write. Its
// compound row is the declared summary fields with in_table (result_schema.h), in order: a
// string is a char* (variable-length), an int an int64, a float a double.
void rebuild_summary(hid_t f) {
  std::vector<const ResultColumn*> fields;
  for (const auto& fd : summary_fields())
    if (fd.in_table) fields.push_back(&fd);
  const size_t row_bytes = 8 * fields.size();
  static_assert(sizeof(char*) == 8 && sizeof(int64_t) == 8 && sizeof(double) == 8);
  std::vector<std::string> ids = run_names(f), statuses;
  std::vector<json> sums;
  for (auto& id : ids) {
    const H5Group g(WB_H5(H5Gopen2(f, ("runs/" + id).c_str(), H5P_DEFAULT)));
    statuses.push_back(read_attr_str(g, "status"));
    std::string sj = read_attr_str(g, "summary_json");
    sums.push_back(sj.empty() ? json::object() : json::parse(sj));
  }
  // Row i of the table, in index order (the index is in summary_json).
  std::vector<size_t> order(ids.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto index_of = [&](size_t i) {
    const json& s = sums[i];
    return s.contains("index") && s["index"].is_number() ? s["index"].get<int64_t>() : int64_t{-1};
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return index_of(a) < index_of(b); });
  std::vector<unsigned char> rows(row_bytes * ids.size());
  for (size_t r = 0; r < order.size(); ++r) {
    const size_t i = order[r];
    const json& s = sums[i];
    for (size_t k = 0; k < fields.size(); ++k) {
      unsigned char* at = rows.data() + r * row_bytes + 8 * k;
      const ResultColumn& fd = *fields[k];
      if (fd.type == ColumnType::kString) {
        const char* p = fd.name == "id" ? ids[i].data() : fd.name == "status" ? statuses[i].data() : "";
        std::memcpy(at, &p, 8);
      } else if (fd.type == ColumnType::kInt) {
        const int64_t dflt = fd.empty.is_number() ? fd.empty.get<int64_t>() : -1;
        const int64_t v = s.contains(fd.name) && s[fd.name].is_number() ? s[fd.name].get<int64_t>() : dflt;
        std::memcpy(at, &v, 8);
      } else {
        const double v = s.contains(fd.name) && s[fd.name].is_number() ? s[fd.name].get<double>() : NAN;
        std::memcpy(at, &v, 8);
      }
    }
  }
  const H5Type st = str_type();
  const H5Type ct(WB_H5(H5Tcreate(H5T_COMPOUND, row_bytes)));
  for (size_t k = 0; k < fields.size(); ++k) {
    const ColumnType t = fields[k]->type;
    WB_H5(H5Tinsert(ct, fields[k]->name.c_str(), 8 * k,
                    t == ColumnType::kString ? st : t == ColumnType::kInt ? H5T_NATIVE_INT64
                                                                         : H5T_NATIVE_DOUBLE));
  }
  if (H5Lexists(f, "summary", H5P_DEFAULT) > 0) WB_H5(H5Ldelete(f, "summary", H5P_DEFAULT));
  hsize_t n = ids.size();
  const H5Space sp(WB_H5(H5Screate_simple(1, &n, nullptr)));
  const H5Dataset d(WB_H5(H5Dcreate2(f, "summary", ct, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
  if (n) WB_H5(H5Dwrite(d, ct, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data()));
}

// File access in memory (the core driver, no backing store): the HDF5 library never writes
// the results file itself, so a full disk is our own write(2) failing with ENOSPC, never
// an HDF5 flush half-done (which crashed in H5F__close_cb). HDF5's own file locking is
// off: the workbench's <out>.lock is the lock.
H5Plist memory_fapl() {
  H5Plist fapl(WB_H5(H5Pcreate(H5P_FILE_ACCESS)));
  WB_H5(H5Pset_fapl_core(fapl, 1 << 20, 0));
  WB_H5(H5Pset_file_locking(fapl, 0, 1));
  return fapl;
}

void write_run_group(hid_t f, const RunResult& r) {
  const std::string gname = "runs/" + r.id;
  if (H5Lexists(f, gname.c_str(), H5P_DEFAULT) > 0) WB_H5(H5Ldelete(f, gname.c_str(), H5P_DEFAULT));
  const H5Group g(WB_H5(H5Gcreate2(f, gname.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
  attr_str(g, "config_json", r.config.dump());
  attr_str(g, "status", r.status);
  attr_str(g, "error", r.error);
  attr_num<double>(g, "wall_s", r.wall_s);
  attr_num<double>(g, "sim_s", r.sim_s);
  attr_num<int64_t>(g, "index", r.index);
  json s = r.summary;
  s["index"] = r.index;
  attr_str(g, "summary_json", s.dump());
  if (!r.provenance.empty()) attr_str(g, "provenance_json", r.provenance.dump());
  if (!r.comm.empty()) attr_str(g, "comm_json", r.comm.dump());

  H5Group c(WB_H5(H5Gcreate2(g, "curves", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
  // The declared curve columns (result_schema.h) the training loop pushed into Curves;
  // the others arrive as series "curves/<name>".
  const size_t n = r.curves.size();
  for (const ResultColumn& col : curve_columns()) {
    if (!col.member) continue;
    if ((col.when == Presence::kTest && !r.has_test) ||
        (col.when == Presence::kAccuracy && !r.has_accuracy))
      continue;
    const std::vector<double>& v = r.curves.*col.member;
    if (col.type == ColumnType::kInt) dataset_i64(c, col.name, v);
    else dataset(c, col.name, v.data(), n, 1);
  }
  c.reset();

  for (const core::Series& se : r.series) {
    if (se.path.rfind("curves/", 0) == 0 &&
        std::none_of(curve_columns().begin(), curve_columns().end(),
                     [&](const ResultColumn& col) { return "curves/" + col.name == se.path; }))
      throw std::logic_error(se.path + " is not a declared curve column (app/results/result_schema.cpp)");
    if (is_count_series(se.path)) dataset_counts(g, se.path, se.data, se.rows, se.cols);
    else dataset(g, se.path, se.data.data(), se.rows, se.cols);
    if (!se.string_list_attrs.empty()) {
      const H5Dataset d(WB_H5(H5Dopen2(g, se.path.c_str(), H5P_DEFAULT)));
      for (auto& [k, v] : se.string_list_attrs) attr_str_list(d, k.c_str(), v);
    }
  }
}

// Runs written before per-run provenance existed get the file's root attributes (their
// writer's, since until a --resume added runs every run of a file had the same writer),
// marked from = "file header": an extended file then still says who made each run.
void backfill_provenance(hid_t f) {
  json p = {{"from", "file header"}};
  bool read = false;
  for (const std::string& id : run_names(f)) {
    const H5Group g(WB_H5(H5Gopen2(f, ("runs/" + id).c_str(), H5P_DEFAULT)));
    if (H5Aexists(g, "provenance_json") > 0) continue;
    if (!read) {
      for (const char* k : {"workbench_version", "git_commit", "devices", "host", "cpu"}) {
        const std::string v = read_attr_str(f, k);
        p[k] = v.empty() ? "unknown" : v;
      }
      int64_t ranks = -1;
      if (H5Aexists(f, "mpi_ranks") > 0) {
        const H5Attr a(WB_H5(H5Aopen(f, "mpi_ranks", H5P_DEFAULT)));
        WB_H5(H5Aread(a, H5T_NATIVE_INT64, &ranks));
      }
      p["mpi_ranks"] = ranks;
      p["file_created_utc"] = read_attr_str(f, "created_utc");
      read = true;
    }
    attr_str(g, "provenance_json", p.dump());
  }
}

// Every run's index is its position in the spec now describing the file.
void reindex_runs(hid_t f, const std::map<std::string, int>& index_of) {
  for (const std::string& id : run_names(f)) {
    auto it = index_of.find(id);
    if (it == index_of.end()) continue;
    const H5Group g(WB_H5(H5Gopen2(f, ("runs/" + id).c_str(), H5P_DEFAULT)));
    if (H5Aexists(g, "index") > 0) WB_H5(H5Adelete(g, "index"));
    attr_num<int64_t>(g, "index", it->second);
    const std::string sj = read_attr_str(g, "summary_json");
    json sum = sj.empty() ? json::object() : json::parse(sj);
    sum["index"] = it->second;
    attr_str(g, "summary_json", sum.dump());
  }
}

}  // namespace

std::vector<char> build_image(const std::string& path, bool fresh, const FileInfo& info,
                              const std::vector<RunResult>& runs, int dirfd) {
  H5Plist fapl = memory_fapl();
  H5File f;
  if (fresh) {
    // A unique name: the core driver without backing store never creates it.
    const std::string mem = path + ".mem" + std::to_string(::getpid());
    f = H5File(WB_H5(H5Fcreate(mem.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl)));
    attr_str(f, "workbench_version", WB_VERSION);
    attr_str(f, "git_commit", build_git_commit());
    attr_str(f, "experiment_json", info.experiment_json);
    attr_str(f, "created_utc", utc_now());
    attr_num<int64_t>(f, "mpi_ranks", info.mpi_ranks);
    attr_str(f, "host", hostname());
    attr_str(f, "cpu", host_cpu_text());
    attr_str(f, "devices", info.devices);
    attr_str(f, "result_schema_json", result_schema_json().dump());
    const H5Group runs_group(WB_H5(H5Gcreate2(f, "runs", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
  } else {
    // The old file is read, never opened for writing: its image in memory gets the new
    // runs (a read-only results file can be extended; the new one replaces it by rename).
    std::vector<char> old;
    int err = 0;
    {
      const int fd = ::openat(dirfd, path.c_str(), O_RDONLY | O_CLOEXEC);
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
    if (!err) f = H5File(H5Fopen(mem.c_str(), H5F_ACC_RDWR, fapl));
    if (!f.valid()) {
      throw WriteError(path + ": cannot read the results file to add runs to it" +
                       (err ? ": " + errno_text(err) : std::string(" (not a valid HDF5 file)")));
    }
    // --resume checked that every stored run is one of this spec's, with its config: the
    // spec (which may extend the sweep) now describes the whole file.
    if (!info.experiment_json.empty()) attr_str(f, "experiment_json", info.experiment_json);
    attr_str(f, "result_schema_json", result_schema_json().dump());  // this writer's columns
  }
  fapl.reset();
  std::vector<char> img;
  if (!fresh) backfill_provenance(f);
  for (const RunResult& r : runs) write_run_group(f, r);
  if (!info.index_of.empty()) reindex_runs(f, info.index_of);
  rebuild_summary(f);
  WB_H5(H5Fflush(f, H5F_SCOPE_GLOBAL));
  const ssize_t n = WB_H5(H5Fget_file_image(f, nullptr, 0));
  img.resize(static_cast<size_t>(n));
  WB_H5(H5Fget_file_image(f, img.data(), img.size()));
  return img;
}

json writer_provenance(const FileInfo& info) {
  static const std::string host = hostname();  // one per process: not a syscall per run
  return {{"from", "writer"},          {"workbench_version", WB_VERSION},
          {"git_commit", build_git_commit()}, {"mpi_ranks", info.mpi_ranks},
          {"devices", info.devices},    {"host", host},
          {"cpu", host_cpu_text()},     {"finished_utc", utc_now()}};
}

json header_provenance(const json& h) {
  json p = {{"from", "journal header"}};
  for (const char* k : {"workbench_version", "git_commit", "devices", "host", "cpu"})
    p[k] = h.is_object() && h.contains(k) && h[k].is_string() ? h[k].get<std::string>() : "unknown";
  p["mpi_ranks"] = h.is_object() ? h.value("mpi_ranks", -1) : -1;
  return p;
}

void replace_file(const std::string& path, const std::vector<char>& bytes, const std::string& what,
                  int dirfd) {
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  // O_EXCL | O_NOFOLLOW: a file (or a symbolic link) someone else put at this name is never
  // written through nor replaced (a link planted in a shared directory would otherwise
  // receive the results image, and the rename would make <out> that link).
  const int fd = ::openat(dirfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST)
      throw WriteError(tmp + ": exists and was not written by this process (a link or another "
                             "user's file?): it is left as it is; move it away, then --resume");
    throw WriteError(tmp + ": cannot create: " + errno_text(errno));
  }
  // The new file keeps the permissions of the file it replaces (a results file made read-only
  // stays read-only after --resume adds runs to it).
  struct stat old {};
  if (::fstatat(dirfd, path.c_str(), &old, 0) == 0) (void)::fchmod(fd, old.st_mode & 07777);
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
  if (!err && ::renameat(dirfd, tmp.c_str(), dirfd, path.c_str()) != 0) err = errno;
  if (err) {
    ::unlinkat(dirfd, tmp.c_str(), 0);
    throw WriteError(path + ": cannot write " + what + ": " + errno_text(err));
  }
  if (dirfd == AT_FDCWD) fsync_path(fs::absolute(path).parent_path().string());
  else (void)::fsync(dirfd);
}

std::map<std::string, StoredRun> existing_runs(const std::string& path, bool as_output) {
  std::map<std::string, StoredRun> out;
  std::error_code ec;
  if (!fs::exists(path, ec)) return out;
  if (H5Fis_hdf5(path.c_str()) <= 0)
    throw UserError(path, std::string("exists but is not an HDF5 file (not a workbench results file)") +
                              (as_output ? ": move it away, or --force to replace it" : ""));
  H5Plist fapl(WB_H5(H5Pcreate(H5P_FILE_ACCESS)));
  WB_H5(H5Pset_file_locking(fapl, 0, 1));
  const H5File f(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl));
  fapl.reset();
  if (!f.valid())
    throw UserError(path, std::string("is corrupt or truncated (HDF5 cannot open it; a copy cut short?)") +
                              (as_output ? ": restore it, move it away, or --force to replace it" : ""));
  auto not_ours = [&](const std::string& why) {
    throw UserError(path, "is not a workbench results file (" + why + ")" +
                              (as_output ? ": use another -o, or --force to replace it" : ""));
  };
  if (H5Aexists(f, "workbench_version") <= 0) not_ours("no workbench_version attribute");
  if (H5Lexists(f, "runs", H5P_DEFAULT) > 0) {
    H5O_info_t oi;
    if (H5Oget_info_by_name(f, "runs", &oi, H5P_DEFAULT) < 0 || oi.type != H5O_TYPE_GROUP)
      not_ours("/runs is not a group");
  }
  for (auto& id : run_names(f)) {
    const H5Group g(H5Gopen2(f, ("runs/" + id).c_str(), H5P_DEFAULT));
    if (!g.valid()) not_ours("/runs/" + id + " is not a group");
    out[id] = StoredRun{read_attr_str(g, "status"), read_attr_str(g, "config_json"),
                        read_attr_str(g, "summary_json"), read_attr_str(g, "comm_json")};
  }
  return out;
}

}  // namespace wb::app
