#include "app/plan/sweep_plan.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <new>
#include <numeric>
#include <stdexcept>

#include "app/metrics/diagnostics.h"
#include "app/results/recorder.h"
#include "comm/agreement.h"
#include "comm/process_group.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "train/compute_device.h"

namespace wb::app {

const models::Task& TaskCache::get(const json& model_cfg, const std::string& device) {
  const std::string key = device + " " + model_cfg.dump();
  auto it = tasks_.find(key);
  if (it != tasks_.end()) return it->second;
  if (device != "cpu") {
    const train::ComputeBackend* b = train::find_compute_backend(device);
    WB_ASSERT(b, "no compute backend \"" + device + "\" (the spec parser checks this)");
    const models::Task& cpu = get(model_cfg, "cpu");
    models::Task t{b->wrap(*cpu.model), cpu.train, cpu.test};
    return tasks_.emplace(key, std::move(t)).first->second;
  }
  auto maker = models::model_registry().create(model_cfg, 0);
  return tasks_.emplace(key, maker->make()).first->second;
}

namespace {

// comm::agree_on_errors for a phase that may throw core::Interrupted (a long local load): an
// interrupt is not an error to broadcast (agree_on_errors would make it an internal error)
// but a stop that every rank takes once they all finished the phase.
void agree_interruptible(MPI_Comm comm, const std::function<void()>& fn) {
  bool interrupted = false;
  comm::agree_on_errors(comm, [&] {
    try {
      fn();
    } catch (const core::Interrupted&) {
      interrupted = true;
    }
  });
  if (comm::max_over(interrupted ? 1 : 0, comm) != 0) throw core::Interrupted();
}

}  // namespace

int SweepPlan::group_of_rank(int rank) const {
  int g = 0;
  while (rank >= first[static_cast<size_t>(g) + 1]) ++g;
  return g;
}

namespace {

// The first key where two resolved configs differ, as a dotted path ("" when equal).
std::string first_difference(const json& a, const json& b, const std::string& at) {
  if (a.is_object() && b.is_object()) {
    for (auto it = b.begin(); it != b.end(); ++it) {
      const std::string k = at.empty() ? it.key() : at + "." + it.key();
      if (!a.contains(it.key())) return k;
      const std::string d = first_difference(a[it.key()], it.value(), k);
      if (!d.empty()) return d;
    }
    for (auto it = a.begin(); it != a.end(); ++it)
      if (!b.contains(it.key())) return at.empty() ? it.key() : at + "." + it.key();
    return "";
  }
  return a == b ? "" : (at.empty() ? "(config)" : at);
}

json at_path(const json& j, const std::string& dotted) {
  const json* cur = &j;
  size_t s = 0;
  while (s <= dotted.size()) {
    const size_t e = std::min(dotted.find('.', s), dotted.size());
    const std::string k = dotted.substr(s, e - s);
    if (!cur->is_object() || !cur->contains(k)) return json("(absent)");
    cur = &(*cur)[k];
    s = e + 1;
  }
  return *cur;
}

}  // namespace

// --resume keeps a run only if it was made with this spec's config for its id: a changed
// spec resumed into an old file would otherwise mix configurations under one experiment.
void check_resumable(const Experiment& e, const std::map<std::string, StoredRun>& stored,
                     const std::string& out) {
  // A run the file holds that this spec does not define would leave two experiments in one
  // file (extending a sweep is fine: every stored run is then one of the spec's).
  for (const auto& [id, sr] : stored) {
    const bool ours = std::any_of(e.runs.begin(), e.runs.end(), [&](const RunSpec& r) { return r.id == id; });
    if (!ours)
      throw UserError(out, "--resume: the file holds run " + id + ", which " + e.file +
                               " does not define (another experiment?); use --force to start over, or "
                               "another -o");
  }
  for (const auto& rs : e.runs) {
    auto it = stored.find(rs.id);
    if (it == stored.end() || it->second.config_json.empty()) continue;
    json old;
    try {
      old = json::parse(it->second.config_json);
    } catch (const std::exception&) {
      throw UserError(out, "run " + rs.id + ": its stored config_json does not parse; --force to start over");
    }
    json now = rs.resolved();
    // A file written before runs recorded their profile's hash: nothing to compare it with.
    const bool old_hash = old.contains("clock") && old["clock"].is_object() &&
                          old["clock"].contains("profile_fnv1a64");
    if (!old_hash && now.contains("clock") && now["clock"].is_object())
      now["clock"].erase("profile_fnv1a64");
    // A file written before runs recorded their data partition: those runs were iid.
    if (!old.contains("partition") && now.contains("partition") && now["partition"] == json{{"name", "iid"}})
      now.erase("partition");
    const std::string d = first_difference(old, now, "");
    if (d.empty()) continue;
    if (d == "clock.profile_fnv1a64")
      throw UserError(out, "--resume: the cost profile " + rs.cfg.clock.profile + " changed since run " +
                               rs.id + " was made (its contents hash " + at_path(old, d).get<std::string>() +
                               " in the file, " + at_path(now, d).get<std::string>() +
                               " now): restore it, or use --force to start over, or another -o");
    throw UserError(out, "--resume: run " + rs.id + " in the file was made with another config (first "
                         "difference: " + d + " = " + at_path(old, d).dump() + " in the file, " +
                         at_path(now, d).dump() + " in " + e.file +
                         "); use --force to start over, or another -o");
  }
}

namespace {
// Loading a run's model and data and planning its footprint allocate what the input asks
// for: a data header's F or L near 2^31 asks for more than any memory holds. That is bad
// input, refused before any run (one line, exit 2) like the memory budget, not std::bad_alloc.
void sized_by_input(const Experiment& e, const RunSpec& r, const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::bad_alloc&) {
    throw UserError(e.file + ": run " + r.id + ": $.model",
                    "the model and its data do not fit in memory (an allocation failed while "
                    "loading and planning them: check the data header's sizes F and L, or use a "
                    "smaller model)");
  } catch (const std::length_error&) {
    throw UserError(e.file + ": run " + r.id + ": $.model",
                    "the model and its data are larger than a buffer can hold (check the data "
                    "header's sizes F and L, or use a smaller model)");
  }
}
}  // namespace

SweepPlan plan_sweep(const Experiment& e, const RunOptions& opt, MPI_Comm comm) {
  SweepPlan p;
  const int R = comm::size_of(comm);
  // Every run's plan from its config: the algorithm instantiated once, the counts it
  // derives from the config checked (the same on every rank: no agreement needed).
  p.runs = plan_runs(e);
  p.skip.assign(e.runs.size(), 0);
  const bool given = opt.output_given || !opt.output.empty();
  p.out = given ? opt.output : (!e.output.empty() ? e.output : e.name + ".h5");
  const std::string& out = p.out;
  p.out_where = given ? "-o " + out
                : !e.output.empty()   ? e.file + ": $.output"
                                      : e.file + ": $.name";
  const std::string& out_where = p.out_where;

  // An empty or blank output name is a mistake (`-o "$UNSET"`), not "no -o": it would have
  // fallen back to the spec's name and replaced another sweep's file.
  if (!opt.validate_only && out.find_first_not_of(" \t\n\r\v\f") == std::string::npos)
    throw UserError(given ? "-o" : e.file + ": $.output",
                    "the output file name is empty" + std::string(given ? " (an unset shell variable?)" : ""));
  // The output must not be a file the run reads: the spec, or a data file of a run.
  {
    struct stat os {};
    if (!opt.validate_only && ::stat(out.c_str(), &os) == 0) {
      auto same = [&](const std::string& f) {
        struct stat st {};
        return ::stat(f.c_str(), &st) == 0 && st.st_dev == os.st_dev && st.st_ino == os.st_ino;
      };
      if (same(e.file))
        throw UserError(out_where, "the output is the spec file " + e.file +
                                       " itself: refusing to replace an input of the run");
      for (const RunSpec& r : e.runs)
        for (auto it = r.resolved_at("model").begin(); it != r.resolved_at("model").end(); ++it)
          if (it.value().is_string() && it.key() != "name" && same(it.value().get<std::string>()))
            throw UserError(out_where, "the output is " + it.value().get<std::string>() +
                                           ", the data file of " + key_path(e, r, "model." + it.key()) +
                                           ": refusing to replace an input of the run");
    }
  }

  // Layout: a rank needs >= 1 logical worker of some run. With several runs, extra ranks
  // run other runs (rank groups below); a rank that could never work is an error.
  int64_t usable = 0;
  for (const auto& r : e.runs) usable += std::min<int64_t>(r.cfg.workers, R);
  if (usable < R) {
    const auto& r = *std::min_element(e.runs.begin(), e.runs.end(), [](const auto& a, const auto& b) {
      return a.cfg.workers < b.cfg.workers;
    });
    std::string path = "$.base.workers";
    if (e.raw.contains("sweep") && e.raw["sweep"].contains("workers"))
      path = "$.sweep.workers (run " + r.id + ")";
    throw UserError(e.file + ": " + path,
                    "workers = " + std::to_string(r.cfg.workers) + " is fewer than the " +
                        std::to_string(R) + " MPI ranks and the sweep has too few runs to keep "
                        "the others busy (each rank needs >= 1 logical worker; run mpirun -n " +
                        std::to_string(usable) + " or fewer)");
  }

  return p;
}

void plan_sweep_data(SweepPlan& p, const Experiment& e, const RunOptions& opt, MPI_Comm comm,
                     TaskCache& tasks) {
  const int rank = comm::rank_of(comm), R = comm::size_of(comm);
  const std::string& out = p.out;
  const std::vector<char>& skip = p.skip;
  // Pre-flight: load every distinct model + data before the first run, so a missing data
  // file fails now and not after an hour of sweeps. Loading answers a signal (the readers
  // throw core::Interrupted): every rank then leaves with Interrupted (main: 128+signal).
  agree_interruptible(comm, [&] {
    for (size_t i = 0; i < e.runs.size(); ++i)
      if (!skip[i]) {
        try {
          sized_by_input(e, e.runs[i], [&] { tasks.get(e.runs[i].cfg.model.value()); });
        } catch (const UserError& ue) {
          if (!ue.where.empty()) throw;
          throw UserError(e.file + ": run " + e.runs[i].id + ": $.model", ue.detail);
        }
      }
  });
  // Each run's data plan: its budget, footprint and output. Every logical worker (and every
  // shard an algorithm splits a worker's into) needs >= 1 sample, and an `epochs` budget
  // needs the training-set size: refused now, naming the key to change, not when the run
  // starts.
  comm::agree_on_errors(comm, [&] {
    for (size_t i = 0; i < e.runs.size(); ++i)
      if (!skip[i])
        sized_by_input(e, e.runs[i], [&] { plan_data(p.runs[i], tasks.get(e.runs[i].cfg.model.value()), &e); });
  });
  // Open each compute device the runs use (every rank, in the same order: the backends pick
  // a device per rank collectively), so "no GPU" fails now, before the output is created.
  std::vector<std::string>& device_lines = p.device_lines;
  {
    std::vector<std::string> opened;
    for (size_t i = 0; i < e.runs.size(); ++i) {
      const std::string& dev = e.runs[i].cfg.device;
      if (skip[i] || dev == "cpu" ||
          std::find(opened.begin(), opened.end(), dev) != opened.end())
        continue;
      opened.push_back(dev);
      std::string line;
      comm::agree_on_errors(comm, [&] {
        try {
          line = train::find_compute_backend(dev)->open(comm);
        } catch (const UserError& ue) {
          throw UserError(e.file + ": run " + e.runs[i].id + ": $.device", ue.detail);
        }
      });
      device_lines.push_back(dev + ": " + line);
    }
  }
  std::vector<size_t>& todo_idx = p.todo;
  for (size_t i = 0; i < e.runs.size(); ++i)
    if (!skip[i]) todo_idx.push_back(i);
  std::vector<int64_t> wk;
  std::vector<double> cost;
  for (size_t i : todo_idx) {
    const auto& c = e.runs[i].cfg;
    const auto& t = tasks.get(c.model.value());
    wk.push_back(c.workers);
    cost.push_back(static_cast<double>(p.runs[i].budget.steps) * c.workers * c.batch_size *
                   std::max(1.0, t.model->flops_per_sample()));
  }
  std::vector<int> group_of;
  p.first = plan_rank_groups(wk, cost, R, group_of);
  for (size_t k = 0; k < todo_idx.size(); ++k) {
    RunPlan& rp = p.runs[todo_idx[k]];
    rp.group = group_of[k];
    rp.ranks = p.first[static_cast<size_t>(rp.group) + 1] - p.first[static_cast<size_t>(rp.group)];
  }
  // Output size: the runs' curves and series go to the results file; refuse a file larger
  // than the budget (steps 2^63-1 with log_every 1 wrote 4.1 GB in a minute).
  {
    double sum = 0, worst = -1;
    size_t worst_i = 0;
    for (size_t k = 0; k < todo_idx.size(); ++k) {
      const double b = p.runs[todo_idx[k]].results_bytes;
      sum += b;
      if (b > worst) {
        worst = b;
        worst_i = todo_idx[k];
      }
    }
    p.output_bytes = sum;
    if (sum > opt.max_output_gb * 1e9) {
      const RunSpec& r = e.runs[worst_i];
      char buf[320];
      std::snprintf(buf, sizeof buf,
                    "the results file would take ~%s for %zu run%s (run %s: ~%s of curves and "
                    "series), above the budget of %.3g GB (raise log_every, fewer steps, or "
                    "--max-output-gb)",
                    fmt_mb(sum).c_str(), todo_idx.size(), todo_idx.size() == 1 ? "" : "s",
                    r.id.c_str(), fmt_mb(worst).c_str(), opt.max_output_gb);
      throw UserError(e.file + ": " + key_path(e, r, "log_every"), buf);
    }
    if (opt.dry_run && !opt.validate_only && rank == 0)
      std::printf("results: ~%s of curves and series for %zu run%s (budget %.3g GB, "
                  "--max-output-gb)\n",
                  fmt_mb(sum).c_str(), todo_idx.size(), todo_idx.size() == 1 ? "" : "s",
                  opt.max_output_gb);
  }
  // Resource limit: each run's memory on the busiest rank of its group (plan_memory: the
  // same figure --dry-run prints) must fit the per-rank budget; refuse up front, with it.
  {
    double budget_gb = opt.max_memory_gb;
    if (budget_gb <= 0) {
      const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
      budget_gb = 0.8 * static_cast<double>(pages) * static_cast<double>(page) / 1e9;
    }
    double fold_results = 0, fold_data = 0;
    for (size_t k = 0; k < todo_idx.size(); ++k) {
      const size_t i = todo_idx[k];
      RunPlan& rp = p.runs[i];
      rp.memory = plan_memory(rp, tasks.get(e.runs[i].cfg.model.value()), rp.ranks);
      fold_results += rp.memory.results;
      fold_data = std::max(fold_data, rp.memory.data);
      const double gb = rp.memory.total() / 1e9;
      if (gb > budget_gb) {
        char buf[200];
        std::snprintf(buf, sizeof buf,
                      ", above the budget of %.2f GB (more ranks, fewer workers or updaters, a "
                      "smaller megabatch, or --max-memory-gb)",
                      budget_gb);
        throw UserError(e.file + ": " + key_path(e, e.runs[i], rp.memory.dominant),
                        "run " + e.runs[i].id + " needs " + describe_memory(rp.memory) + buf);
      }
    }
    p.fold_memory = MemoryEstimate::kProgram + fold_data + MemoryEstimate::kFoldCopies * fold_results;
    // --resume adds the runs to the old file: it is read whole into memory and copied into
    // the HDF5 image being built (build_image in recorder.cpp).
    if (opt.resume) {
      std::error_code ec;
      const auto old_bytes = std::filesystem::file_size(out, ec);
      if (!ec) p.fold_memory += 2.0 * static_cast<double>(old_bytes);
    }
    if (!todo_idx.empty() && p.fold_memory / 1e9 > budget_gb) {
      char buf[300];
      std::snprintf(buf, sizeof buf,
                    "writing the results file needs ~%s on rank 0 (%.0fx the %s of curves and "
                    "series of %zu runs), above the budget of %.2f GB (raise log_every, split the "
                    "sweep over several -o files, or --max-memory-gb)",
                    fmt_mb(p.fold_memory).c_str(), MemoryEstimate::kFoldCopies,
                    fmt_mb(fold_results).c_str(), todo_idx.size(), budget_gb);
      throw UserError(e.file + ": " + key_path(e, e.runs[todo_idx.back()], "log_every"), buf);
    }
  }
}

std::vector<int> plan_rank_groups(const std::vector<int64_t>& workers,
                                  const std::vector<double>& cost, int ranks,
                                  std::vector<int>& group_of_run) {
  // Rank groups: when some run has fewer workers than there are ranks, the
  // ranks split into G contiguous groups that execute different runs of the sweep at the
  // same time; G = ceil(P / min W) (capped by the number of runs), so every run can use
  // min(group size, W) ranks. Runs go to groups by longest-processing-time-first on an
  // estimated cost (steps x W x batch x FLOPs/sample), ties by sweep order, so the plan
  // is the same on every rank. Results do not depend on the plan (rank invariance).
  const size_t n = workers.size();
  group_of_run.assign(n, 0);
  if (n == 0) return {0, ranks};
  const int64_t min_w = *std::min_element(workers.begin(), workers.end());
  int G = min_w >= ranks ? 1 : static_cast<int>(std::min<int64_t>(
                                   static_cast<int64_t>(n), (ranks + min_w - 1) / min_w));
  std::vector<int> first(static_cast<size_t>(G) + 1);
  for (int g = 0; g <= G; ++g) first[static_cast<size_t>(g)] = ranks * g / G;
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return cost[a] > cost[b]; });
  std::vector<double> load(static_cast<size_t>(G), 0.0);
  for (size_t i : order) {
    // the least-loaded group, weighting load by the ranks the run can use there
    int best = 0;
    double best_t = 1e300;
    for (int g = 0; g < G; ++g) {
      const int size = first[static_cast<size_t>(g) + 1] - first[static_cast<size_t>(g)];
      const double t = load[static_cast<size_t>(g)] +
                       cost[i] / static_cast<double>(std::min<int64_t>(size, workers[i]));
      if (t < best_t) {
        best_t = t;
        best = g;
      }
    }
    group_of_run[i] = best;
    const int size = first[static_cast<size_t>(best) + 1] - first[static_cast<size_t>(best)];
    load[static_cast<size_t>(best)] += cost[i] / static_cast<double>(std::min<int64_t>(size, workers[i]));
  }
  return first;
}

}  // namespace wb::app
