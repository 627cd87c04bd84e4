// workbench: the command-line entry point.
//   workbench run SPEC.json [-o out.h5] [--resume|--force] [--dry-run] [--quiet]
//   workbench validate SPEC.json
//   workbench list
//   workbench --version | --help | <command> --help
// Exit codes: 0 ok, 1 internal failure (rank/file/line reported), 2 bad input (one line
// naming the file and JSON path or line number).
#include <mpi.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "app/calibrate/calibrate.h"
#include "app/cli/bandwidth.h"
#include "app/exec/runner.h"
#include "app/exec/training_loop.h"
#include "app/metrics/metric.h"
#include "app/plan/sweep_plan.h"
#include "app/results/build_info.h"
#include "app/results/host_info.h"
#include "app/results/result_schema.h"
#include "app/results/run_table.h"
#include "app/results/timeline_writer.h"
#include "app/experiment/spec.h"
#include "comm/agreement.h"
#include "comm/sweep_control.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "models/model.h"
#include "train/compute_device.h"
#include "train/optimizer.h"
#include "train/schedule.h"
#include "wb_config.h"

namespace {

using namespace wb;

const char* kMainHelp =
    "workbench " WB_VERSION " -- an MPI simulator and research workbench for parallel SGD\n"
    "\n"
    "usage: [mpirun -n R] workbench <command> [options]\n"
    "\n"
    "commands:\n"
    "  run SPEC.json       run an experiment (every run of its sweep), write HDF5 results\n"
    "  validate SPEC.json  parse, expand and check a spec; print the run table\n"
    "  list                every algorithm, model, optimizer and schedule with parameters\n"
    "  calibrate           measure this machine's cost profile (--validate: sim vs real)\n"
    "  bandwidth RESULTS.h5 --cu 0.5,0.9\n"
    "                      the link bandwidth each run needs for a compute utilization\n"
    "\n"
    "options: --version, --help; `workbench <command> --help` for a command's options.\n"
    "Logical workers are independent of MPI ranks: `-n 1` and `-n 2` give the same curves.\n";

const char* kRunHelp =
    "usage: [mpirun -n R] workbench run SPEC.json [-o OUT.h5] [--resume|--force] [--dry-run] "
    "[--quiet]\n"
    "\n"
    "  -o, --output OUT.h5  results file (default: the spec's \"output\", else <name>.h5)\n"
    "  --resume             keep the runs OUT.h5 already holds (completed or diverged; each\n"
    "                       must have the spec's config for its id), run the others\n"
    "  --rerun-diverged     with --resume: run the diverged runs again too\n"
    "  --force              overwrite OUT.h5 (replaced once a new run has completed; an\n"
    "                       interrupted sweep with nothing completed leaves it as it was)\n"
    "  --dry-run            validate, check the output path, load data, print each run's\n"
    "                       memory estimate per rank; run nothing\n"
    "  --quiet              no progress lines on stderr\n"
    "  --fail-fast          stop the sweep after a diverged run (exit code 3)\n"
    "  --timeline FILE      write the runs' events on the simulated clock (Chrome trace\n"
    "                       format: Perfetto, chrome://tracing) to FILE\n"
    "  --max-memory-gb X    per-rank memory budget: refuse runs whose estimate (printed by\n"
    "                       --dry-run) is above X GB (default 80% of RAM)\n"
    "  --max-output-gb X    refuse a sweep whose results (curves and series, the \"results\"\n"
    "                       figure of --dry-run) would exceed X GB (default 10)\n"
    "Every finished run is saved (OUT.h5.journal) before it is reported; OUT.h5 is folded\n"
    "from it at the end, on SIGINT/SIGTERM, and by --resume after a crash or kill -9.\n"
    "OUT.h5.lock keeps a second process off the same output.\n"
    "SIGINT/SIGTERM/SIGHUP/SIGPIPE (to any rank): the current runs are recorded as\n"
    "interrupted, the sweep stops (exit 128+signal); --resume continues it. Diverged runs\n"
    "(NaN/Inf, max_loss) are results.\n"
    "Exit codes: 0 ok, 1 internal failure, 2 bad input (one line: file and JSON path),\n"
    "3 --fail-fast stop, 4 results could not be written (disk full: saved runs stay in\n"
    "OUT.h5.journal for --resume), 128+N signal N.\n";

const char* kValidateHelp =
    "usage: workbench validate [--spec-only] SPEC.json\n"
    "  Parse, expand the sweep and check every run config, then make the checks `run` makes\n"
    "  before its first training step (data sets loaded, shards, budgets, devices, memory);\n"
    "  print the run table. Writes nothing. --spec-only: parse, expand and check the spec\n"
    "  alone (no data loaded, no device opened).\n";

const char* kListHelp =
    "usage: workbench list [--json]\n"
    "  Print every registered algorithm, model, optimizer and schedule with its parameters,\n"
    "  their types and defaults, and the run-config keys with their defaults.\n"
    "  --json: the same as one JSON object {\"run\": {key: {type, default, doc}}, \"algorithms\":\n"
    "  {name: {doc, params: {key: {type, default, doc}}}}, \"models\", \"optimizers\", \"schedules\"}\n"
    "  (defaults as printed), so tools read the defaults instead of retyping them.\n";

void print_docs(const std::vector<core::ParamDoc>& docs, const char* indent) {
  for (const auto& d : docs)
    std::printf("%s%-22s %-16s default %-10s %s\n", indent, d.name.c_str(), d.type.c_str(),
                d.default_value.c_str(), d.doc.c_str());
}

template <class Reg>
void print_registry(const Reg& reg, const char* title) {
  std::printf("%s:\n", title);
  for (const auto* e : reg.list()) {
    std::printf("  %s  -- %s\n", e->name.c_str(), e->doc.c_str());
    auto docs = e->params();
    if (docs.empty()) std::printf("      (no parameters)\n");
    print_docs(docs, "      ");
  }
  std::printf("\n");
}

json docs_json(const std::vector<core::ParamDoc>& docs) {
  json o = json::object();
  for (const auto& d : docs) o[d.name] = {{"type", d.type}, {"default", d.default_value}, {"doc", d.doc}};
  return o;
}

template <class Reg>
json registry_json(const Reg& reg) {
  json o = json::object();
  for (const auto* e : reg.list()) o[e->name] = {{"doc", e->doc}, {"params", docs_json(e->params())}};
  return o;
}

// The metric plugins (app/metrics/metric.h): parameters and the series each writes.
json metrics_json() {
  json o = json::object();
  for (const auto& e : app::metric_registry().list())
    o[e.name] = {{"doc", e.doc},
                 {"params", docs_json(e.params())},
                 {"series", "metrics/" + e.schema.series},
                 {"columns_attr", e.schema.columns_attr}};
  return o;
}

int cmd_list(bool as_json) {
  if (as_json) {
    json o = {{"run", docs_json(core::params_of<train::RunConfig>().docs())},
              {"algorithms", registry_json(algo::algorithm_registry())},
              {"models", registry_json(models::model_registry())},
              {"optimizers", registry_json(train::optimizer_registry())},
              {"schedules", registry_json(train::schedule_registry())},
              {"metrics", metrics_json()},
              {"results", app::result_schema_json()}};
    std::printf("%s\n", o.dump(1).c_str());
    return 0;
  }
  std::printf("run config keys (the \"base\" object of a spec; defaults apply when omitted):\n");
  print_docs(core::params_of<train::RunConfig>().docs(), "  ");
  std::printf("\n");
  print_registry(algo::algorithm_registry(), "algorithms");
  print_registry(models::model_registry(), "models");
  print_registry(train::optimizer_registry(), "optimizers");
  print_registry(train::schedule_registry(), "schedules");
  std::printf("metrics (\"metrics\": {\"<name>\": {\"every\": N, ...}}; each writes metrics/<series>):\n");
  for (const auto& e : app::metric_registry().list()) {
    std::printf("  %s  -- %s (series metrics/%s, column names in attr %s)\n", e.name.c_str(),
                e.doc.c_str(), e.schema.series.c_str(), e.schema.columns_attr.c_str());
    print_docs(e.params(), "      ");
  }
  return 0;
}

bool is_help(const std::string& a) { return a == "--help" || a == "-h"; }

// A command-line number: the whole argument must be one finite number ("5abc", "", "nan"
// are refused; std::stod alone would read "5abc" as 5).
double parse_cli_number(const std::string& opt, const std::string& text) {
  size_t used = 0;
  double v = NAN;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || !std::isfinite(v))
    throw UserError("run", opt + ": expected a number, got " + text);
  return v;
}

// The experiment every rank runs: world rank 0 reads the spec file once (the size and kind
// checks of read_spec_file), every rank parses the same bytes. Ranks started with different
// command lines (an MPMD launch "a.json : b.json") are refused before anything is read.
app::Experiment shared_experiment(const std::string& spec) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::string text;
  comm::agree_on_errors(MPI_COMM_WORLD, [&] {
    if (rank == 0) text = app::read_spec_file(spec);
  });
  text = comm::broadcast_text(text, 0, MPI_COMM_WORLD);
  app::Experiment e = app::parse_experiment(text, spec);
  // Each rank read the runs' cost profiles itself (once): they must have read the same bytes.
  uint64_t h = 1469598103934665603ull;
  for (const auto& r : e.runs)
    if (const json& clock = r.resolved_at("clock"); clock.is_object() && clock.contains("profile_fnv1a64"))
      for (unsigned char c : clock["profile_fnv1a64"].get<std::string>()) h = (h ^ c) * 1099511628211ull;
  if (!comm::same_on_all(h, MPI_COMM_WORLD))
    throw UserError(spec, "a cost profile (\"clock\": {\"profile\"}) changed while the MPI ranks "
                          "read it: run again once it is no longer being written");
  return e;
}

uint64_t args_hash(const std::vector<std::string>& args) {
  uint64_t h = 1469598103934665603ull;
  for (const auto& a : args) {
    for (unsigned char c : a) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xFFu) * 1099511628211ull;  // separator: "a b" and "ab" differ
  }
  return h;
}

// The output rules for `--timeline FILE` (those of -o): an existing FILE is replaced only
// with --force, and never when it is a link, a directory or another kind of file, nor when
// it is the spec, the results file or one of its companions (whatever --force says).
void check_timeline_path(const app::Experiment& e, const app::RunOptions& opt, const std::string& path) {
  namespace fs = std::filesystem;
  const std::string where = "--timeline " + path;
  if (path.find_first_not_of(" \t\n\r\v\f") == std::string::npos)
    throw UserError("--timeline", "the timeline file name is empty");
  const bool given = opt.output_given || !opt.output.empty();
  const std::string out = given ? opt.output : (!e.output.empty() ? e.output : e.name + ".h5");
  std::error_code ec;
  const fs::path tl = fs::weakly_canonical(fs::absolute(path), ec);
  const fs::path ro = fs::weakly_canonical(fs::absolute(out), ec);
  for (const char* suffix : {"", ".journal", ".lock"})
    if (tl == fs::path(ro.string() + suffix))
      throw UserError(where, std::string("is the results file") + (*suffix ? "'s companion " : "") +
                                 suffix + " (-o " + out + "): the timeline goes to another file");
  struct stat ls {};
  if (::lstat(path.c_str(), &ls) != 0) return;  // absent: it will be created
  auto same = [&](const std::string& f) {
    struct stat st {};
    return ::stat(f.c_str(), &st) == 0 && st.st_dev == ls.st_dev && st.st_ino == ls.st_ino;
  };
  if (S_ISLNK(ls.st_mode))
    throw UserError(where, "is a symbolic link: the timeline is never written through a link nor "
                           "replaces one; remove it or use another name");
  if (S_ISDIR(ls.st_mode)) throw UserError(where, "is a directory: the timeline goes to a file");
  if (!S_ISREG(ls.st_mode))
    throw UserError(where, "exists and is not a regular file: the timeline goes to a regular file");
  if (same(e.file))
    throw UserError(where, "is the spec file " + e.file + ": refusing to replace an input of the run");
  if (same(out))
    throw UserError(where, "is the results file (-o " + out + "): the timeline goes to another file");
  if (!opt.force)
    throw UserError(where, "already exists: pass --force to replace it, or use another name");
}

// `run --timeline FILE`: the runs this process led write FILE (world rank 0) or FILE.rankR
// (the leader of another rank group).
int run_with_timeline(const app::Experiment& e, const app::RunOptions& opt, const std::string& path,
                      int rank) {
  comm::agree_on_errors(MPI_COMM_WORLD, [&] {  // an unwritable path: refused before any run
    if (rank != 0) return;
    check_timeline_path(e, opt, path);
    // A probe file of this process only (O_EXCL | O_NOFOLLOW): a file or link someone else
    // put at that name is neither written through nor removed.
    const std::string probe = path + ".probe" + std::to_string(::getpid());
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) throw UserError(path, "cannot write the timeline: " + std::string(std::strerror(errno)));
    ::close(fd);
    ::unlink(probe.c_str());
  });
  app::TimelineWriter tw;
  app::RunOptions with_timeline = opt;
  with_timeline.timeline = &tw;
  const int rc = app::run_experiment(e, with_timeline, MPI_COMM_WORLD);
  if (rank == 0 || !tw.empty()) tw.write(rank == 0 ? path : path + ".rank" + std::to_string(rank));
  return rc;
}

int dispatch(int argc, char** argv, int rank) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!comm::same_on_all(args_hash(args), MPI_COMM_WORLD))
    throw UserError("mpirun", "the MPI ranks were started with different command lines (an MPMD "
                              "launch \"a.json : b.json\"?): every rank must run the same "
                              "workbench command");
  auto say = [rank](const char* s) {
    if (rank == 0) std::fputs(s, stdout);
  };
  if (args.empty()) {
    say(kMainHelp);
    return 2;
  }
  const std::string cmd = args[0];
  if (is_help(cmd)) return say(kMainHelp), 0;
  if (cmd == "--version") {
    if (rank == 0) {
      std::printf("workbench %s (git %s)\n", WB_VERSION, app::build_git_commit());
      // The host, as a cost profile records it (`calibrate`'s "machine"; app/results/host_info.h).
      std::printf("host %s\n", app::host_cpu_text().c_str());
      // The "device" values this build accepts (train/compute_device.h).
      std::printf("devices: cpu (built in)");
      for (const auto& d : train::compute_device_names())
        if (d != "cpu") std::printf(", %s (%s)", d.c_str(), train::find_compute_backend(d)->summary().c_str());
      std::printf("\n");
    }
    return 0;
  }
  if (cmd == "list") {
    if (args.size() > 1 && is_help(args[1])) return say(kListHelp), 0;
    const bool as_json = args.size() > 1 && args[1] == "--json";
    if (args.size() > (as_json ? 2u : 1u))
      throw UserError("list", "unexpected argument " + args[as_json ? 2 : 1]);
    return rank == 0 ? cmd_list(as_json) : 0;
  }
  if (cmd == "validate") {
    if (args.size() > 1 && is_help(args[1])) return say(kValidateHelp), 0;
    bool spec_only = false;
    if (args.size() == 3 && args[1] == "--spec-only") {
      spec_only = true;
      args.erase(args.begin() + 1);
    }
    if (args.size() != 2) throw UserError("validate", "expected exactly one SPEC.json");
    auto e = shared_experiment(args[1]);
    // The checks `run` makes before its first training step (data sets loaded, shards,
    // budgets, devices, memory), output aside: a spec that validates is one that runs.
    // --spec-only: the spec and each run's config plan (its algorithm's derived counts),
    // no data (a machine without the data sets or the GPU).
    if (spec_only) {
      (void)app::plan_runs(e);
    } else {
      app::RunOptions vo;
      vo.dry_run = true;
      vo.validate_only = true;
      app::TaskCache tasks;
      app::SweepPlan plan = app::plan_sweep(e, vo, MPI_COMM_WORLD);
      app::plan_sweep_data(plan, e, vo, MPI_COMM_WORLD, tasks);
    }
    if (rank == 0) {
      app::print_run_table(e);
      std::printf("ok: %zu run%s valid\n", e.runs.size(), e.runs.size() == 1 ? "" : "s");
    }
    return 0;
  }
  if (cmd == "calibrate") return app::calibrate_command(args, MPI_COMM_WORLD);
  if (cmd == "bandwidth") return rank == 0 ? app::bandwidth_command(args) : 0;
  if (cmd == "run") {
    app::RunOptions opt;
    std::string spec, timeline_path;
    for (size_t i = 1; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (is_help(a)) return say(kRunHelp), 0;
      if (a == "-o" || a == "--output") {
        if (i + 1 >= args.size()) throw UserError("run", a + " needs a file name");
        opt.output = args[++i];
        opt.output_given = true;
      } else if (a == "--resume") {
        opt.resume = true;
      } else if (a == "--rerun-diverged") {
        opt.rerun_diverged = true;
      } else if (a == "--force") {
        opt.force = true;
      } else if (a == "--dry-run") {
        opt.dry_run = true;
      } else if (a == "--quiet") {
        opt.quiet = true;
      } else if (a == "--fail-fast") {
        opt.fail_fast = true;
      } else if (a == "--timeline") {
        if (i + 1 >= args.size()) throw UserError("run", a + " needs a file name");
        timeline_path = args[++i];
      } else if (a == "--max-memory-gb") {
        if (i + 1 >= args.size()) throw UserError("run", a + " needs a number");
        opt.max_memory_gb = parse_cli_number(a, args[++i]);
        if (!(opt.max_memory_gb > 0)) throw UserError("run", a + " must be > 0");
      } else if (a == "--max-output-gb") {
        if (i + 1 >= args.size()) throw UserError("run", a + " needs a number");
        opt.max_output_gb = parse_cli_number(a, args[++i]);
        if (!(opt.max_output_gb > 0)) throw UserError("run", a + " must be > 0");
      } else if (!a.empty() && a[0] == '-') {
        throw UserError("run", "unknown option " + a + " (see workbench run --help)");
      } else if (spec.empty()) {
        spec = a;
      } else {
        throw UserError("run", "unexpected argument " + a + " (one SPEC.json per run)");
      }
    }
    if (spec.empty()) throw UserError("run", "missing SPEC.json (see workbench run --help)");
    if (opt.resume && opt.force) throw UserError("run", "--resume and --force exclude each other");
    if (opt.rerun_diverged && !opt.resume) throw UserError("run", "--rerun-diverged needs --resume");
    auto e = shared_experiment(spec);
    if (timeline_path.empty()) return app::run_experiment(e, opt, MPI_COMM_WORLD);
    return run_with_timeline(e, opt, timeline_path, rank);
  }
  throw UserError("", "unknown command \"" + cmd + "\" (commands: run, validate, list, calibrate, bandwidth; see --help)");
}

}  // namespace

int main(int argc, char** argv) {
  // LAP/LPP and adaptive real mode start threads; only the main thread calls MPI.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // After MPI_Init: UCX (MPICH's transport) installs its debug handler for SIGHUP there (a
  // hangup printed UCX debug lines and the sweep went on); the workbench's replaces it, and
  // SIGHUP stops the sweep like SIGTERM.
  wb::core::install_signal_handlers();
  int rc = 0;
  try {
    rc = dispatch(argc, argv, rank);
  } catch (const wb::core::Interrupted&) {
    // A signal during a phase outside the training steps (loading, planning): nothing was
    // in progress that could be kept; runs completed before are already durable.
    if (rank == 0) std::fprintf(stderr, "workbench: interrupted by signal %d\n", wb::core::interrupt_signal());
    rc = 128 + (wb::core::interrupt_signal() != 0 ? wb::core::interrupt_signal() : 2);
  } catch (const wb::UserError& e) {
    // Input errors are detected identically on every rank (collective checks), so every
    // rank leaves with 2 and rank 0 says why, once.
    if (rank == 0) std::fprintf(stderr, "workbench: error: %s\n", e.what());
    rc = 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "workbench: internal error: %s\n", e.what());
    std::fflush(stderr);
    if (size > 1) MPI_Abort(MPI_COMM_WORLD, 1);
    rc = 1;
  }
  std::fflush(stdout);
  MPI_Finalize();
  return rc;
}
