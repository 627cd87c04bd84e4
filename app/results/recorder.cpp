#include "app/results/recorder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>

#include "app/results/host_info.h"
#include "app/results/journal.h"
#include "app/results/output_guard.h"
#include "app/results/results_layout.h"
#include "core/error.h"
#include "sim/cost_model.h"

// The recorder's sweep-long state (lock, journal, folds); its three jobs live beside it:
// the HDF5 layout writer (results_layout.h), the checksummed journal (journal.h) and the
// output guard (output_guard.h: lock and path checks).
namespace wb::app {
namespace fs = std::filesystem;

namespace {

double mono_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool is_result(const std::string& status) { return status == "completed" || status == "diverged"; }

}  // namespace

// ---- Recorder ----------------------------------------------------------------------

Recorder::Recorder(std::string path, Mode mode, const std::string& where, bool dry_run,
                   StoredCheck check)
    : path_(std::move(path)), mode_(mode), dry_run_(dry_run) {
  try {
    open(where, check);
  } catch (...) {
    release();  // a refused start leaves nothing behind
    throw;
  }
}

void Recorder::open(const std::string& where, const StoredCheck& check) {
  const Mode mode = mode_;
  check_output_writable(path_, where, mode == Mode::kForce);
  check_replaceable(path_, where, mode == Mode::kResume);
  // Follow a symlink to an existing file: the results go where it points.
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(path_, ec)) && fs::exists(path_, ec))
    path_ = fs::canonical(path_, ec).string();
  journal_ = path_ + ".journal";
  lock_ = path_ + ".lock";
  {
    const fs::path ap = fs::absolute(path_);
    name_ = ap.filename().string();
    dir_fd_ = ::open(ap.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd_ < 0)
      throw UserError(where, "cannot open the output directory " + ap.parent_path().string() + ": " +
                                 errno_text(errno));
  }

  // Companions are ours or refused: never a symbolic link (opened with O_NOFOLLOW), a
  // regular file of this user with one link (a hard link would write into another file),
  // and for an existing lock or journal, contents the workbench writes.
  check_companion(lock_, where);
  check_companion(journal_, where);
  check_companion(path_ + ".tmp" + std::to_string(::getpid()), where, /*must_be_absent=*/true);
  const OutputLock held = take_output_lock(lock_, path_, where);
  lock_fd_ = held.fd;  // (a crashed writer's .tmp<pid> is gone: take_output_lock removed it)
  const fs::path abs = fs::absolute(path_);

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
  if (mode == Mode::kResume && !jc.runs.empty() && check) {
    // Check first, fold after: the runs the file would hold once the journal is folded.
    std::map<std::string, StoredRun> would = existing_runs(path_);
    for (const auto& r : jc.runs) would[r.id] = StoredRun{r.status, r.config.dump(), r.summary.dump(), r.comm.dump()};
    try {
      check(would);
    } catch (const UserError& e) {
      throw UserError(e.where, e.detail + " (the runs checked include those of " + journal_ +
                                   ", which was not folded: " + path_ + " is as it was)");
    }
  }
  if (dry_run_) {
    // --dry-run changes nothing: report what --resume would keep, fold nothing.
    if (mode == Mode::kResume) {
      stored_ = existing_runs(path_);
      for (const auto& r : jc.runs) stored_[r.id] = StoredRun{r.status, r.config.dump(), r.summary.dump(), r.comm.dump()};
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
      for (RunResult& r : jc.runs)
        if (r.provenance.empty()) r.provenance = header_provenance(jc.header);
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
  // Read and write: the fold reads back through this descriptor what was appended.
  journal_fd_ = ::openat(dir_fd_, (name_ + ".journal").c_str(),
                         O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (journal_fd_ < 0) throw UserError(where, "cannot create " + journal_ + ": " + errno_text(errno));
  fsync_path(abs.parent_path().string());
}

void Recorder::write_run(const RunResult& r) {
  if (journal_fd_ < 0) throw WriteError(journal_ + ": the journal is closed after an earlier error");
  const off_t before = ::lseek(journal_fd_, 0, SEEK_END);
  try {
    // Who computes this run (docs/results.md: provenance_json); the header repeats the
    // writer's facts for runs of a journal folded later without a record of their own.
    json prov = writer_provenance(info_);
    // The cost profile the run's sim_s was priced with, values and hash (the clock read it
    // once per sweep: sim/cost_model.h cached_cost_profile).
    if (r.config.is_object() && r.config.contains("clock") && r.config["clock"].is_object() &&
        r.config["clock"].value("profile", "") != "") {
      const std::string pp = r.config["clock"]["profile"].get<std::string>();
      const sim::LoadedCostProfile& lp = sim::cached_cost_profile(pp);
      // measured_here: the profile's CPU against this host's (null when the profile does not
      // record one); on another CPU sim_s carries the difference between the two machines.
      const std::optional<bool> here = measured_on_this_cpu(lp.profile.machine);
      prov["cost_profile"] = {{"path", pp}, {"fnv1a64", lp.fnv1a64}, {"values", sim::cost_profile_json(lp.profile)},
                              {"measured_here", here ? json(*here) : json(nullptr)}};
    }
    if (!header_written_) {
      json h = {{"fresh", fresh_},
                {"experiment_json", info_.experiment_json},
                {"mpi_ranks", info_.mpi_ranks},
                {"devices", info_.devices},
                {"index_of", info_.index_of},
                {"workbench_version", prov["workbench_version"]},
                {"git_commit", prov["git_commit"]},
                {"host", prov["host"]},
                {"cpu", prov["cpu"]},
                {"pid", static_cast<int64_t>(::getpid())}};
      write_all(journal_fd_, journal_header_record(h), journal_);
    }
    write_all(journal_fd_, journal_run_record(r, &prov), journal_);
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
    struct stat st {};
    const bool exists = ::fstatat(dir_fd_, name_.c_str(), &st, 0) == 0;
    if (!(fresh_ && journal_results_ == 0 && exists)) {
      // What this process appended, read through its own descriptor: the name may have been
      // removed, or replaced by another sweep's journal, since.
      const JournalContents jc = read_journal_fd(journal_fd_);
      if (jc.runs.size() != static_cast<size_t>(journal_runs_))
        throw WriteError(journal_ + ": reads back " + std::to_string(jc.runs.size()) + " of the " +
                         std::to_string(journal_runs_) + " runs this sweep appended to it");
      replace_file(name_, build_image(name_, fresh_, info_, jc.runs, dir_fd_), "the results file",
                   dir_fd_);
      folded_runs_ = static_cast<int>(jc.runs.size());
      fresh_ = false;
      wrote = true;
    }
  }
  const bool ours = journal_is_ours();
  ::close(journal_fd_);
  journal_fd_ = -1;
  if (ours) ::unlinkat(dir_fd_, (name_ + ".journal").c_str(), 0);  // never another's journal
  (void)::fsync(dir_fd_);
  journal_runs_ = journal_results_ = 0;
  return wrote;
}

bool Recorder::journal_is_ours() const {
  struct stat a {}, b {};
  return journal_fd_ >= 0 && dir_fd_ >= 0 && ::fstat(journal_fd_, &a) == 0 &&
         ::fstatat(dir_fd_, (name_ + ".journal").c_str(), &b, AT_SYMLINK_NOFOLLOW) == 0 &&
         a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

bool Recorder::companion_ok(int fd) { return ::wb::app::companion_ok(fd, &companion_problem_); }

void Recorder::check_companion(const std::string& p, const std::string& where, bool must_be_absent) {
  ::wb::app::check_companion(p, where, must_be_absent);
}

Recorder::~Recorder() { release(); }

void Recorder::release() {
  if (journal_fd_ >= 0) {
    // An empty journal is nothing to keep; one with runs stays for --resume.
    if (journal_runs_ == 0 && journal_is_ours()) ::unlinkat(dir_fd_, (name_ + ".journal").c_str(), 0);
    ::close(journal_fd_);
    journal_fd_ = -1;
  }
  if (lock_fd_ >= 0) {
    // While holding it (a waiter re-checks the inode), and only our own lock file.
    struct stat a {}, b {};
    const int dfd = dir_fd_ >= 0 ? dir_fd_ : AT_FDCWD;
    const std::string ln = dir_fd_ >= 0 ? name_ + ".lock" : lock_;
    if (::fstat(lock_fd_, &a) == 0 && ::fstatat(dfd, ln.c_str(), &b, AT_SYMLINK_NOFOLLOW) == 0 &&
        a.st_dev == b.st_dev && a.st_ino == b.st_ino)
      ::unlinkat(dfd, ln.c_str(), 0);
    ::close(lock_fd_);
    lock_fd_ = -1;
  }
  if (dir_fd_ >= 0) {
    ::close(dir_fd_);
    dir_fd_ = -1;
  }
}

}  // namespace wb::app
