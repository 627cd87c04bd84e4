#include "runtime/recorder.h"

#include <fcntl.h>
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
    double wall_s, sim_s, final_train_loss, min_train_loss, final_test_loss, final_test_accuracy,
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
                       num(s, "sim_s"), num(s, "final_train_loss"), num(s, "min_train_loss"),
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

}  // namespace

Recorder::Recorder(std::string path, FileInfo info, bool fresh)
    : path_(std::move(path)), info_(std::move(info)), fresh_(fresh) {
  // A process killed between copy and rename leaves <out>.tmp<pid>: remove those whose
  // process is gone (never another live writer's).
  std::error_code ec;
  const fs::path abs = fs::absolute(path_);
  const std::string prefix = abs.filename().string() + ".tmp";
  for (const auto& ent : fs::directory_iterator(abs.parent_path(), ec)) {
    const std::string name = ent.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string pid = name.substr(prefix.size());
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    if (::kill(static_cast<pid_t>(std::stol(pid)), 0) != 0 && errno == ESRCH) fs::remove(ent.path(), ec);
  }
}

namespace {
double mono_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

void Recorder::write_run(const RunResult& r) {
  pending_.push_back(r);
  // The first finished run is written at once (the file exists as soon as there is a
  // result to look at); later ones are batched.
  if (last_flush_ == 0 || mono_s() - last_flush_ >= flush_interval_s) flush();
}

void Recorder::flush() {
  if (pending_.empty()) return;
  write_batch(pending_);
  pending_.clear();
  last_flush_ = mono_s();
}

Recorder::~Recorder() {
  try {
    flush();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "workbench: could not write %s: %s\n", path_.c_str(), e.what());
  }
}

void Recorder::write_batch(const std::vector<RunResult>& runs) {
  const std::string tmp = path_ + ".tmp" + std::to_string(::getpid());
  std::error_code ec;
  fs::remove(tmp, ec);
  hid_t f;
  if (fresh_ || !fs::exists(path_)) {
    f = H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) throw UserError(tmp, "cannot create the results file (directory writable?)");
    attr_str(f, "workbench_version", WB_VERSION);
    attr_str(f, "git_commit", WB_GIT_COMMIT);
    attr_str(f, "experiment_json", info_.experiment_json);
    attr_str(f, "created_utc", utc_now());
    attr_num<int64_t>(f, "mpi_ranks", info_.mpi_ranks);
    attr_str(f, "host", hostname());
    attr_str(f, "devices", info_.devices);
    H5Gclose(WB_H5(H5Gcreate2(f, "runs", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
  } else {
    fs::copy_file(path_, tmp, fs::copy_options::overwrite_existing, ec);
    if (ec) throw UserError(path_, "cannot copy the results file: " + ec.message());
    f = H5Fopen(tmp.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    if (f < 0)
      throw UserError(path_, "cannot open as HDF5 for writing (not an HDF5 file, or locked by "
                             "another process writing it)");
  }
  for (const RunResult& r : runs) {
  const std::string gname = "runs/" + r.id;
  if (H5Lexists(f, gname.c_str(), H5P_DEFAULT) > 0)
    WB_H5(H5Ldelete(f, gname.c_str(), H5P_DEFAULT));
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
  rebuild_summary(f);
  WB_H5(H5Fflush(f, H5F_SCOPE_GLOBAL));
  WB_H5(H5Fclose(f));
  fsync_path(tmp);
  fs::rename(tmp, path_, ec);
  if (ec) throw UserError(path_, "cannot replace the results file: " + ec.message());
  fsync_path(fs::absolute(path_).parent_path().string());
  fresh_ = false;
}

std::map<std::string, std::string> existing_runs(const std::string& path) {
  std::map<std::string, std::string> out;
  if (!fs::exists(path)) return out;
  if (H5Fis_hdf5(path.c_str()) <= 0) throw UserError(path, "exists but is not an HDF5 file");
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) throw UserError(path, "cannot open (locked by another process?)");
  for (auto& id : run_names(f)) {
    hid_t g = H5Gopen2(f, ("runs/" + id).c_str(), H5P_DEFAULT);
    out[id] = read_attr_str(g, "status");
    H5Gclose(g);
  }
  H5Fclose(f);
  return out;
}

void check_output_writable(const std::string& path, const std::string& where) {
  fs::path p = fs::absolute(path);
  fs::path dir = p.parent_path();
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw UserError(where, "output directory " + dir.string() + " does not exist");
  // Probe by creating a file: access(W_OK) says yes to root even on read-only mounts.
  const fs::path probe = dir / (".wb-probe-" + std::to_string(::getpid()));
  const int fd = ::open(probe.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600);
  if (fd < 0) throw UserError(where, "output directory " + dir.string() + " is not writable");
  ::close(fd);
  ::unlink(probe.c_str());
  if (fs::is_directory(p, ec)) throw UserError(where, "output " + p.string() + " is a directory");
}

}  // namespace wb::rt
