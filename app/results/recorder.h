// HDF5 results (DESIGN.md section 9, the contract with notebooks):
//
//   /                      attrs: workbench_version, git_commit, experiment_json,
//                                 created_utc, mpi_ranks, host
//                          (those of the writer that created the file; each run's own are
//                          its provenance_json)
//   /runs/<run_id>/        attrs: config_json, status, error, wall_s, sim_s, index,
//                                 summary_json, provenance_json
//   /runs/<run_id>/curves/ 1-D, same length: step, epoch, samples, wall_s, sim_s, lr,
//                          train_loss, [test_loss, test_accuracy] (NaN where not evaluated)
//   /runs/<run_id>/metrics/, /workers/  2-D / 1-D series added by diagnostics/algorithms
//   /summary               one row per run (compound): id, index, status, steps, samples,
//                          wall_s, sim_s, final/min train loss, final test loss,
//                          final/best test accuracy, converged_step
//
// Crash safety: only world rank 0 writes, and a run reported completed is
// already on disk:
//  - <out>.lock     an advisory flock held for the whole sweep (a crash releases it): a
//                   second process on the same output is refused at start, naming the pid.
//  - <out>.journal  each finished run is appended to it (one framed, checksummed CBOR
//                   record, O(the run's size)) before the progress line says "completed";
//                   fdatasync'ed at least every kJournalSyncS and at the end. A kill -9 keeps
//                   every appended record (the kernel has it); a torn last record is dropped.
//  - <out>          folded from the journal at the end of the sweep (and on an interruption,
//                   and by --resume after a crash): the HDF5 image is built in memory,
//                   written to <out>.tmp<pid>, fsync'ed and renamed over <out>, so <out> is
//                   always a complete file; then the journal is removed.
// --force starts a new generation: the old <out> is replaced at the first fold that has a
// completed (or diverged) run; a sweep interrupted before that leaves the old file as it was.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>

#include "app/results/output_guard.h"
#include "app/results/results_layout.h"
#include "app/results/run_result.h"

namespace wb::app {

class Recorder {
 public:
  enum class Mode { kNew, kResume, kForce };
  // Pre-flight (world rank 0, before any training): checks the output path (regular file or
  // absent, name lengths, directory writable), takes the lock, and deals with a journal a
  // crash left (--resume folds it; --force discards it; otherwise refuse). Throws UserError
  // (exit 2) naming `where` (the -o option or the spec's JSON path) or the file.
  // dry_run: the same checks (and the lock is tried), but nothing is folded or created.
  // check (if given) sees every run the output would hold after --resume folds a crash's
  // journal, and is called before anything is folded: a journal it refuses (another sweep's)
  // leaves the file as it was.
  using StoredCheck = std::function<void(const std::map<std::string, StoredRun>&)>;
  Recorder(std::string path, Mode mode, const std::string& where, bool dry_run = false,
           StoredCheck check = {});
  // Runs the output already holds (after folding a crash's journal): id -> StoredRun.
  const std::map<std::string, StoredRun>& stored() const { return stored_; }
  // The HDF5 root attributes of a file this recorder creates.
  void set_info(FileInfo info) { info_ = std::move(info); }
  // Append a finished run to the journal (durable when this returns). Throws
  // WriteError when the journal cannot be written (disk full): the run is not saved.
  void write_run(const RunResult& r);
  // Fold the journal into the HDF5 file and remove the journal; false when the file was
  // left as it was (nothing to fold, or a --force sweep that completed no run). Throws
  // WriteError; the journal (and every run in it) is then kept for --resume.
  // The runs are read back through the journal's open descriptor and written into the
  // directory opened at the start (a journal removed or replaced by name, or the directory
  // moved, during the sweep changes nothing); folded_runs() is the count read back.
  bool fold();
  int folded_runs() const { return folded_runs_; }
  int journal_runs() const { return journal_runs_; }
  // Damaged records a crash's journal held (skipped; their runs are run again by --resume).
  int damaged_records() const { return damaged_records_; }
  ~Recorder();  // releases the lock (and removes an empty journal)
  const std::string& path() const { return path_; }
  static constexpr double kJournalSyncS = 0.1;

 private:
  void open(const std::string& where, const StoredCheck& check);
  void release();
  bool companion_ok(int fd);
  static void check_companion(const std::string& p, const std::string& where,
                              bool must_be_absent = false);
  std::string companion_problem_;
  int damaged_records_ = 0;
  std::string path_, journal_, lock_;
  FileInfo info_;
  Mode mode_;
  bool dry_run_ = false;
  bool fresh_ = false;  // this generation replaces the file (--force, or a new file)
  int lock_fd_ = -1, journal_fd_ = -1;
  int dir_fd_ = -1;     // the output's directory, opened once: every later name is in it
  std::string name_;    // the output's name in that directory
  int folded_runs_ = 0;
  // Is <name>.journal in dir_fd_ still the file journal_fd_ has open?
  bool journal_is_ours() const;
  int journal_runs_ = 0, journal_results_ = 0;  // records; of them completed/diverged
  bool header_written_ = false;
  double last_sync_ = 0;
  std::map<std::string, StoredRun> stored_;
};


}  // namespace wb::app
