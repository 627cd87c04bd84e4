#include "app/exec/runner.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <set>

#include "app/exec/training_loop.h"
#include "app/plan/sweep_plan.h"
#include "app/results/host_info.h"
#include "app/results/recorder.h"
#include "app/results/result_codec.h"
#include "app/results/run_table.h"
#include "app/results/timeline_writer.h"
#include "comm/agreement.h"
#include "comm/process_group.h"
#include "comm/sweep_control.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/progress.h"
#include "sim/cost_model.h"

namespace wb::app {

namespace {

// The sweep's output, opened on world rank 0 before anything is written: path checks, the
// lock, a crash's journal folded, and on --resume the runs already there, each checked
// against this spec's config for its id. Every rank learns which runs to skip: the completed
// ones, and the diverged ones (a divergence is a result) unless --rerun-diverged.
std::shared_ptr<Recorder> open_output(const Experiment& e, const RunOptions& opt, SweepPlan& p,
                                      MPI_Comm comm) {
  const int rank = comm::rank_of(comm);
  std::shared_ptr<Recorder> rec;
  comm::agree_on_errors(comm, [&] {
    if (rank != 0) return;
    const auto mode = opt.force ? Recorder::Mode::kForce
                      : opt.resume ? Recorder::Mode::kResume : Recorder::Mode::kNew;
    rec = std::make_shared<Recorder>(p.out, mode, p.out_where, opt.dry_run,
                                     [&](const std::map<std::string, StoredRun>& would) {
                                       check_resumable(e, would, p.out);
                                     });
    check_resumable(e, rec->stored(), p.out);
  });
  std::vector<char>& skip = p.skip;
  skip.assign(e.runs.size(), 0);
  if (rank == 0 && rec)
    for (size_t i = 0; i < e.runs.size(); ++i) {
      const auto& stored = rec->stored();
      auto it = stored.find(e.runs[i].id);
      skip[i] = it != stored.end() && (it->second.status == "completed" ||
                                       (it->second.status == "diverged" && !opt.rerun_diverged));
    }
  comm::broadcast_flags(skip, 0, comm);
  return rec;
}

// What the runs of this rank's group report while they run: `between` (set with several
// rank groups) between their steps, and with --timeline their simulated-clock events.
class SweepObserver final : public RunObserver {
 public:
  explicit SweepObserver(TimelineWriter* timeline) : timeline_(timeline) {}
  std::function<void()> between;  // empty: nothing to do between steps

  void between_steps() override {
    if (between) between();
  }
  sim::EventSink* begin_timeline(const std::string& id, int64_t index) override {
    return timeline_ ? timeline_->begin_run(id, index) : nullptr;
  }
  void end_timeline(double sim_s, double compute_s, double comm_s, double wait_s) override {
    timeline_->end_run(sim_s, compute_s, comm_s, wait_s);
  }

 private:
  TimelineWriter* const timeline_;
};

}  // namespace

int run_experiment(const Experiment& e, const RunOptions& opt, MPI_Comm comm) {
  const int rank = comm::rank_of(comm), R = comm::size_of(comm);
  TaskCache tasks;
  // Plan (no side effects), open the output (which runs are left to do), plan those runs'
  // data, budgets and rank groups; then execute what the plan says.
  SweepPlan plan = plan_sweep(e, opt, comm);
  const std::shared_ptr<Recorder> recorder = open_output(e, opt, plan, comm);
  plan_sweep_data(plan, e, opt, comm, tasks);
  const std::string& out = plan.out;
  const std::vector<char>& skip = plan.skip;
  const std::vector<size_t>& todo_idx = plan.todo;
  const std::vector<std::string>& device_lines = plan.device_lines;
  const int G = plan.groups();
  const int my_group = plan.group_of_rank(rank);

  if (opt.dry_run) {
    if (rank == 0) {
      print_run_table(e);
      // The memory estimate of each run on its busiest rank (the --max-memory-gb figure).
      for (size_t k = 0; k < todo_idx.size(); ++k)
        std::printf("memory %s: %s\n", e.runs[todo_idx[k]].id.c_str(),
                    describe_memory(plan.runs[todo_idx[k]].memory).c_str());
      if (!todo_idx.empty())
        std::printf("memory fold: ~%.0f MB on rank 0 at the end (the journal folded into %s)\n",
                    plan.fold_memory / 1e6, out.c_str());
      if (G > 1) std::printf("%d MPI ranks in %d rank groups run different runs at once\n", R, G);
      std::printf("dry run: would write %s\n", out.c_str());
    }
    return 0;
  }

  MPI_Comm gcomm = G > 1 ? comm::split_group(comm, my_group, rank) : comm;
  const int grank = comm::rank_of(gcomm), gsize = comm::size_of(gcomm);
  const comm::ResultChannel results(comm);

  FileInfo info;
  info.experiment_json = e.raw.dump();
  info.mpi_ranks = R;
  for (const RunSpec& r : e.runs) info.index_of[r.id] = r.index;
  {
    bool any_cpu = false;
    for (size_t i = 0; i < e.runs.size(); ++i) any_cpu |= !skip[i] && e.runs[i].cfg.device == "cpu";
    std::string d = any_cpu || device_lines.empty() ? "cpu" : "";
    for (const auto& l : device_lines) d += (d.empty() ? "" : "\n") + l;
    info.devices = d;
  }
  Recorder* rec = recorder.get();  // world rank 0 only
  if (rec) rec->set_info(info);
  core::ProgressLine progress(rank == 0 && !opt.quiet);
  const int todo = static_cast<int>(todo_idx.size());
  if (todo < static_cast<int>(e.runs.size()))
    progress.message("resume: " + std::to_string(e.runs.size() - todo) + " of " +
                     std::to_string(e.runs.size()) + " runs already completed in " + out);
  if (rec && rec->damaged_records() > 0 && rank == 0)
    std::fprintf(stderr, "workbench: warning: %s.journal held %d damaged record(s) (skipped; the "
                         "intact records after them were kept): their runs are run again\n",
                 out.c_str(), rec->damaged_records());
  for (const auto& l : device_lines) progress.message(l);
  // A cost profile measured on another CPU still prices the runs, but their sim_s then carries
  // the difference between the two machines: said once per profile, before the first run
  // (and in each run's summary: profile_host).
  {
    std::set<std::string> said;
    for (size_t i = 0; i < e.runs.size(); ++i) {
      const std::string& pp = e.runs[i].cfg.clock.profile;
      if (skip[i] || pp.empty() || !said.insert(pp).second) continue;
      const std::string& machine = sim::cached_cost_profile(pp).profile.machine;
      if (rank == 0 && measured_on_this_cpu(machine) == std::optional<bool>(false))
        std::fprintf(stderr, "workbench: warning: %s was measured on another host (%s; this one: %s): sim_s "
                             "prices this host's runs with that machine's costs\n",
                     pp.c_str(), machine_cpu_part(machine).c_str(), host_cpu_text().c_str());
    }
  }
  if (G > 1)
    progress.message(std::to_string(R) + " MPI ranks in " + std::to_string(G) +
                     " rank groups run different runs of the sweep at once");
  int written = 0, not_completed = 0, diverged = 0, interrupted = 0, lost = 0;
  std::string write_error;  // the first failure to save a result (disk full)
  // World rank 0 writes every result: its own group's as they finish, the others' as
  // they arrive (polled between its own runs, then drained at the end). Each other group
  // leader ends with an empty message: "this group is done" (messages from one source
  // on one tag arrive in order, so its results come first).
  // A run is saved (appended to the journal) before its progress line says so.
  bool in_hook = false;  // a run of another group written during rank 0's own run
  auto write = [&](const RunResult& res) {
    if (write_error.empty()) {
      try {
        rec->write_run(res);
      } catch (const WriteError& we) {
        write_error = we.what();
      }
    }
    if (!write_error.empty()) {
      ++lost;
      if (in_hook) progress.message(run_line(res) + " (NOT SAVED)");
      else progress.end_run(run_line(res) + " (NOT SAVED)");
      return;
    }
    ++written;
    if (res.status != "completed") ++not_completed;
    diverged += res.status == "diverged";
    interrupted += res.status == "interrupted";
    if (in_hook) progress.message(run_line(res));
    else progress.end_run(run_line(res));
  };
  int groups_done = 0;
  auto drain = [&](bool block) {
    while (groups_done < G - 1) {
      const auto buf = results.receive(block);
      if (!buf) return;
      if (buf->empty()) {
        ++groups_done;
        continue;
      }
      RunResult res = unpack_result(*buf);
      if (!in_hook) progress.begin_run(written + lost + 1, todo, res.id);
      write(res);
    }
  };

  // A signal to any rank stops every rank group (comm/sweep_control.h): a group leader that
  // sees its flag tells world rank 0, rank 0 tells every leader, and each group agrees on it
  // at its next step.
  const comm::StopChannel stops(comm);
  std::vector<int> leaders(plan.first.begin(), plan.first.end() - 1);
  bool stop_sent = false, notified = false;
  auto poll_stops = [&] {
    if (G <= 1 || grank != 0) return;
    if (const int sig = stops.poll()) core::request_interrupt(sig);
    if (!core::interrupt_requested()) return;
    if (rank == 0 && !stop_sent) {
      stops.stop_all(core::interrupt_signal(), leaders);
      stop_sent = true;
    } else if (rank != 0 && !notified) {
      stops.notify_root(core::interrupt_signal());
      notified = true;
    }
  };
  // Between the steps of a run: rank 0 journals the other groups' finished runs as they
  // arrive (durable as they finish, not when rank 0's own run ends), and stops pass.
  SweepObserver observer(opt.timeline);
  if (G > 1)
    observer.between = [&] {
      if (rank == 0) {
        in_hook = true;
        drain(false);
        in_hook = false;
      }
      poll_stops();
    };

  bool stop_group = false;
  for (size_t k = 0; k < todo_idx.size() && !stop_group; ++k) {
    RunPlan& rp = plan.runs[todo_idx[k]];
    if (rp.group != my_group) continue;
    const RunSpec& rs = *rp.run;
    const int used = static_cast<int>(std::min<int64_t>(gsize, rs.cfg.workers));
    MPI_Comm rcomm = used < gsize ? comm::split_group(gcomm, grank < used ? 0 : -1, grank) : gcomm;
    if (rank == 0) progress.begin_run(written + lost + 1, todo, rs.id);
    RunResult res;
    if (rcomm != MPI_COMM_NULL) {
      comm::agree_on_errors(rcomm, [&] {
        try {
          res = execute_run(std::move(rp), tasks.get(rs.cfg.model.value(), rs.cfg.device), rcomm,
                            rank == 0 ? &progress : nullptr, &observer);
        } catch (const UserError& ue) {
          throw UserError(ue.where.empty() ? e.file + ": run " + rs.id : ue.where, ue.detail);
        }
      });
      comm::free_group(rcomm, gcomm);
    }
    rp.algorithm.reset();  // a rank outside the run's ranks drops the unused instance
    if (grank == 0) {
      if (rank == 0) {
        write(res);
        drain(false);
      } else {
        results.send(pack_result(res));
      }
    }
    // The group agrees whether to go on: stop after an interrupted run, a signal that
    // arrived between runs, or (with --fail-fast) a diverged run.
    // (World rank 0 also stops its group when results can no longer be saved.)
    const int code = comm::broadcast_int(
        grank == 0 ? (res.status == "interrupted" || !write_error.empty() ? 2
                      : res.status == "diverged"                          ? 1
                                                                          : 0)
                   : 0,
        0, gcomm);
    poll_stops();
    const int any_sig = comm::max_over(core::interrupt_signal(), gcomm);
    if (any_sig) core::request_interrupt(any_sig);  // a rank of the group got it: the group's
    poll_stops();  // leader passes it on to the other groups
    stop_group = code == 2 || any_sig || (code == 1 && opt.fail_fast);
  }
  if (grank == 0 && rank != 0) results.send_done();
  bool folded = false;
  if (rank == 0) {
    // Wait for the other groups' results without blocking in MPI, so that a signal to rank
    // 0 now still reaches the groups that are running.
    while (groups_done < G - 1) {
      drain(false);
      poll_stops();
      if (groups_done < G - 1) ::usleep(1000);
    }
    // Fold the journal into the HDF5 file. On failure every saved run stays in the
    // journal, and --resume folds it.
    try {
      folded = rec->fold();
    } catch (const WriteError& we) {
      if (write_error.empty()) write_error = we.what();
    }
  }
  comm::free_group(gcomm, comm);
  if (rank == 0 && !opt.quiet && write_error.empty() && !folded && written > 0)
    std::fprintf(stderr, "%s left as it was: the --force sweep completed no run (%d interrupted)\n",
                 out.c_str(), interrupted);
  else if (rank == 0 && !opt.quiet && write_error.empty())
    // The count the fold read back and wrote (Recorder::fold checks it against `written`).
    std::fprintf(stderr, "wrote %s (%d run%s%s)\n", out.c_str(), folded ? rec->folded_runs() : written,
                 (folded ? rec->folded_runs() : written) == 1 ? "" : "s",
                 not_completed ? (", " + std::to_string(not_completed) + " not completed").c_str()
                               : "");
  // Exit code, the same on every rank: 128+signal when interrupted, 3 for --fail-fast
  // after a diverged run, else 0 (diverged runs are results, not failures).
  int rc = 0;
  const int write_failed = comm::max_over(write_error.empty() ? 0 : 1, comm);
  if (write_failed) {
    rc = 4;
    if (rank == 0) {
      const int kept = rec->journal_runs();
      // "free space" only when space is what ran out (a read-only or immutable file is not).
      const bool space = write_error.find(std::strerror(ENOSPC)) != std::string::npos ||
                         write_error.find(std::strerror(EFBIG)) != std::string::npos ||
                         write_error.find(std::strerror(EDQUOT)) != std::string::npos;
      std::fprintf(stderr, "workbench: error: %s%s\n", write_error.c_str(),
                   (kept ? "; " + std::to_string(kept) + " finished run(s) are kept in " + out +
                               ".journal: " + (space ? "free space" : "fix the cause") +
                               ", then --resume folds them into " + out
                         : lost ? "; " + std::to_string(lost) + " run(s) could not be saved; " + out +
                                      " is as before"
                                : "; " + out + " is as before").c_str());
    }
  } else if (core::interrupt_requested() || interrupted) {
    const int sig = core::interrupt_signal() != 0 ? core::interrupt_signal() : 2;
    rc = 128 + sig;
    if (rank == 0)
      std::fprintf(stderr, "workbench: interrupted; %s is complete up to the last finished run "
                           "(continue with --resume)\n", out.c_str());
  } else if (opt.fail_fast && diverged) {
    rc = 3;
    if (rank == 0) std::fprintf(stderr, "workbench: stopped after a diverged run (--fail-fast)\n");
  }
  rc = comm::max_over(rc, comm);
  (void)stops.finish();  // every stop notice received: none left in flight at MPI_Finalize
  return rc;
}

}  // namespace wb::app
