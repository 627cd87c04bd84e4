#include "runtime/sweep_plan.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <numeric>

#include "algorithms/algorithm.h"
#include "comm/agreement.h"
#include "comm/process_group.h"
#include "runtime/core/error.h"
#include "runtime/core/interrupt.h"
#include "runtime/diagnostics.h"
#include "runtime/recorder.h"
#include "runtime/train/compute_device.h"
#include "runtime/train/optimizer.h"
#include "runtime/training_loop.h"

namespace wb::rt {

const models::Task& TaskCache::get(const json& model_cfg, const std::string& device) {
  const std::string key = device + " " + model_cfg.dump();
  auto it = tasks_.find(key);
  if (it != tasks_.end()) return it->second;
  if (device != "cpu") {
    const ComputeBackend* b = find_compute_backend(device);
    WB_ASSERT(b, "no compute backend \"" + device + "\" (the spec parser checks this)");
    const models::Task& cpu = get(model_cfg, "cpu");
    models::Task t{b->wrap(*cpu.model), cpu.train, cpu.test};
    return tasks_.emplace(key, std::move(t)).first->second;
  }
  auto maker = models::model_registry().create(model_cfg, 0);
  return tasks_.emplace(key, maker->make()).first->second;
}

namespace {

// "395 MB", "9.8e+06 MB": sizes far beyond any machine stay readable.
std::string fmt_mb(double bytes) {
  char buf[48];
  const double mb = bytes / 1e6;
  if (mb < 1e6) std::snprintf(buf, sizeof buf, "%.0f MB", mb);
  else std::snprintf(buf, sizeof buf, "%.3g MB", mb);
  return buf;
}

size_t batch_bytes(const models::Dataset& d, int max_batch) {
  models::Batch b;
  d.reserve(b, max_batch);  // reserves, touches nothing
  return sizeof(float) * (b.x.capacity() + b.y.capacity() + b.x_val.capacity()) +
         sizeof(int32_t) * (b.label.capacity() + b.x_idx.capacity() + b.y_idx.capacity()) +
         sizeof(int64_t) * (b.x_ptr.capacity() + b.y_ptr.capacity());
}

}  // namespace

namespace {

// The sizes an algorithm's footprint is made of (algorithms/algorithm.h: FootprintInputs),
// for this run's batch_size.
algo::FootprintInputs footprint_inputs(const RunConfig& c, const models::Task& t) {
  const models::Model& m = *t.model;
  const int Bi = static_cast<int>(std::min<int64_t>(c.batch_size, INT32_MAX));
  algo::FootprintInputs in;
  in.n = m.num_params();
  in.tensors = m.tensors().size();
  in.train_size = static_cast<double>(t.train->size());
  in.batch_bytes = static_cast<double>(batch_bytes(*t.train, Bi));
  in.workspace_bytes = static_cast<double>(m.workspace_bytes(Bi));
  return in;
}

// The algorithm's own footprint: each algorithm states what its setup() and step()
// allocate (Algorithm::footprint); the planner only adds up.
algo::Footprint footprint_of(const RunConfig& c, const models::Task& t) {
  return algo::algorithm_registry().create(c.algorithm.value)->footprint(c, footprint_inputs(c, t));
}

}  // namespace

double estimate_results_bytes(const RunConfig& c, const models::Task& t) {
  // Curves: a point at every log_every-th step, every evaluation, the first and the last
  // step (training_loop.cpp), 9 columns of doubles. Series: the algorithm's, the
  // metrics' (their declared columns + a step index per measured step) and the final
  // parameters of a model with <= 100000 of them. In doubles until written; 8 bytes each in the file.
  const models::Model& m = *t.model;
  const double T = static_cast<double>(total_steps(c, training_samples(c, t.train->size())));
  double points = std::floor(T / static_cast<double>(c.log_every)) + 2.0;
  if (c.eval_every > 0) points += std::floor(T / static_cast<double>(c.eval_every));
  points = std::min(points, T + 2.0);
  const algo::Footprint am = footprint_of(c, t);
  double doubles = 9.0 * points + am.series_fixed + am.series_per_step * T;
  doubles += metric_series_doubles(c.metrics, m, T);  // each metric's declared series
  if (m.num_params() <= 100000) doubles += static_cast<double>(m.num_params());
  return 8.0 * doubles + 4096.0;  // + the run's group, attributes and config
}

MemoryEstimate estimate_memory(const RunConfig& c, const models::Task& t, int ranks) {
  const models::Model& m = *t.model;
  const size_t n = m.num_params(), N = t.train->size();
  const int B = static_cast<int>(c.batch_size);
  const int64_t R = std::max<int64_t>(1, std::min<int64_t>(ranks, c.workers));
  MemoryEstimate e;
  e.workers_per_rank = std::ceil(static_cast<double>(c.workers) / static_cast<double>(R));
  // The optimizer's state for n parameters: ask one instance after one step (state that is
  // made on the first step counts).
  size_t opt_floats = 0;
  {
    const OptimizerEnv env{n, &m.tensors()};
    auto opt = optimizer_registry().create(c.optimizer.value, env);
    std::vector<float> w(n, 0.f), g(n, 0.f);
    opt->step(w, g, 0.0);
    opt_floats = opt->state().size();
  }
  const auto algo = algo::algorithm_registry().create(c.algorithm.value);
  double floats = 2.0 * static_cast<double>(n) + static_cast<double>(opt_floats) +
                  algo->state_floats_per_worker(c, n, opt_floats);
  floats += metric_floats_per_worker(c.metrics, m);  // metrics' gradient copies
  const algo::Footprint am = algo->footprint(c, footprint_inputs(c, t));
  e.state_per_worker = sizeof(float) * floats +
                       sizeof(uint32_t) * (static_cast<double>(B) +  // last batch's indices
                                           static_cast<double>(N) / static_cast<double>(c.workers)) +
                       am.per_worker;
  e.data = static_cast<double>(t.train->bytes() + (t.test ? t.test->bytes() : 0));
  e.scratch = static_cast<double>(m.workspace_bytes(B) + batch_bytes(*t.train, B));
  if (t.test)
    e.scratch += static_cast<double>(m.workspace_bytes(kEvalChunk) + batch_bytes(*t.test, kEvalChunk));
  e.algorithm = am.shared;
  e.results = estimate_results_bytes(c, t);
  // Which key moves the total most (for the refusal's JSON path).
  const double U = static_cast<double>(am.shards_per_worker);
  const double upd = e.workers_per_rank * (U * (am.per_updater + 4.0 * (3.0 * static_cast<double>(n) +
                                                                         static_cast<double>(opt_floats))));
  const double mega = e.workers_per_rank * am.megabatch;
  if (MemoryEstimate::kResultCopies * e.results > 0.5 * e.total()) e.dominant = "log_every";
  else if (mega > 0.5 * e.total()) e.dominant = "algorithm.megabatch";
  else if (U > 1 && upd > 0.5 * e.total()) e.dominant = "algorithm.updaters";
  else e.dominant = "workers";
  return e;
}

std::string describe_memory(const MemoryEstimate& m) {
  char buf[400];
  const double MB = 1e6;
  std::string extra;
  if (m.algorithm > 0.5 * MB) extra += " + algorithm " + fmt_mb(m.algorithm);
  if (m.results > 0.5 * MB)
    extra += " + results " + fmt_mb(MemoryEstimate::kResultCopies * m.results);
  std::snprintf(buf, sizeof buf,
                "~%s per rank (%.0f workers x %.3g MB + data %.0f MB + scratch %.0f MB%s + "
                "program %.0f MB)",
                fmt_mb(m.total()).c_str(), m.workers_per_rank,
                (m.state_per_worker + MemoryEstimate::kWorkerObject) / MB,
                m.data / MB, m.scratch / MB, extra.c_str(), MemoryEstimate::kProgram / MB);
  return buf;
}


namespace {

void check_shards(const Experiment& e, const RunSpec& r, const models::Task& t) {
  const RunConfig& c = r.cfg;
  const size_t N = training_samples(c, t.train->size());  // without the validation tail
  const std::string model = c.model.value.is_object() ? c.model.value.value("name", "") : "";
  const size_t held = t.train->size() - N;
  const std::string data = "the training set of model " + model + " has " + std::to_string(N) +
                           " sample" + (N == 1 ? "" : "s") +
                           (held ? " to train on (metrics.validation_fraction holds back " +
                                       std::to_string(held) + ")"
                                 : "");
  if (static_cast<uint64_t>(c.workers) > N)
    throw UserError(e.file + ": " + key_path(e, r, "workers"),
                    "workers = " + std::to_string(c.workers) + " but " + data +
                        ": every logical worker needs a data shard of >= 1 sample (use "
                        "workers <= " + std::to_string(N) + " or a larger training set)");
  // LAP/LPP: updater u of worker q samples shard q*U + u of W*U (async_engine.cpp).
  const int64_t U = footprint_of(c, t).shards_per_worker;
  // W <= N here and U <= 256 (its declared bound), so W x U does not overflow.
  if (U > 1 && static_cast<uint64_t>(c.workers) * static_cast<uint64_t>(U) > N)
    throw UserError(e.file + ": " + key_path(e, r, "algorithm.updaters"),
                    "updaters = " + std::to_string(U) + " with " + std::to_string(c.workers) +
                        " workers makes " + std::to_string(c.workers * U) + " data shards but " +
                        data + ": every updater needs a shard of >= 1 sample (use updaters <= " +
                        std::to_string(std::max<size_t>(1, N / static_cast<size_t>(c.workers))) +
                        ", fewer workers or a larger training set)");
}

}  // namespace

namespace {

// comm::agree_on_errors for a phase that may throw rt::Interrupted (a long local load): an
// interrupt is not an error to broadcast (agree_on_errors would make it an internal error)
// but a stop that every rank takes once they all finished the phase.
void agree_interruptible(MPI_Comm comm, const std::function<void()>& fn) {
  bool interrupted = false;
  comm::agree_on_errors(comm, [&] {
    try {
      fn();
    } catch (const Interrupted&) {
      interrupted = true;
    }
  });
  if (comm::max_over(interrupted ? 1 : 0, comm) != 0) throw Interrupted();
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
    const std::string d = first_difference(old, rs.resolved, "");
    if (d.empty()) continue;
    throw UserError(out, "--resume: run " + rs.id + " in the file was made with another config (first "
                         "difference: " + d + " = " + at_path(old, d).dump() + " in the file, " +
                         at_path(rs.resolved, d).dump() + " in " + e.file +
                         "); use --force to start over, or another -o");
  }
}

SweepPlan plan_sweep(const Experiment& e, const RunOptions& opt, MPI_Comm comm, TaskCache& tasks) {
  SweepPlan p;
  const int rank = comm::rank_of(comm), R = comm::size_of(comm);
  const bool given = opt.output_given || !opt.output.empty();
  p.out = given ? opt.output : (!e.output.empty() ? e.output : e.name + ".h5");
  const std::string& out = p.out;
  const std::string out_where = given ? "-o " + out
                                : !e.output.empty()   ? e.file + ": $.output"
                                                      : e.file + ": $.name";

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
        for (auto it = r.resolved["model"].begin(); it != r.resolved["model"].end(); ++it)
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

  // The output (world rank 0 only writes): path checks, the lock, a crash's journal, and on
  // --resume the runs already there, each checked against this spec's config for its id.
  comm::agree_on_errors(comm, [&] {
    if (rank != 0 || opt.validate_only) return;
    const auto mode = opt.force ? Recorder::Mode::kForce
                      : opt.resume ? Recorder::Mode::kResume : Recorder::Mode::kNew;
    p.recorder = std::make_shared<Recorder>(out, mode, out_where, opt.dry_run);
    check_resumable(e, p.recorder->stored(), out);
  });
  // Everyone needs to know which runs to skip: completed ones, and diverged ones (a
  // divergence is a result) unless --rerun-diverged.
  std::vector<char>& skip = p.skip;
  skip.assign(e.runs.size(), 0);
  if (rank == 0 && p.recorder)
    for (size_t i = 0; i < e.runs.size(); ++i) {
      const auto& stored = p.recorder->stored();
      auto it = stored.find(e.runs[i].id);
      skip[i] = it != stored.end() && (it->second.status == "completed" ||
                                       (it->second.status == "diverged" && !opt.rerun_diverged));
    }
  comm::broadcast_flags(skip, 0, comm);

  // Pre-flight: load every distinct model + data before the first run, so a missing data
  // file fails now and not after an hour of sweeps. Loading answers a signal (the readers
  // throw rt::Interrupted): every rank then leaves with Interrupted (main: 128+signal).
  agree_interruptible(comm, [&] {
    for (size_t i = 0; i < e.runs.size(); ++i)
      if (!skip[i]) {
        try {
          tasks.get(e.runs[i].cfg.model.value);
        } catch (const UserError& ue) {
          if (!ue.where.empty()) throw;
          throw UserError(e.file + ": run " + e.runs[i].id + ": $.model", ue.detail);
        }
      }
  });
  // Every logical worker (and LAP/LPP updater) needs a data shard: refuse now, naming the
  // key to change, not when the run starts (issue 18, defects 10 and 18).
  comm::agree_on_errors(comm, [&] {
    for (size_t i = 0; i < e.runs.size(); ++i)
      if (!skip[i]) {
        const auto& t = tasks.get(e.runs[i].cfg.model.value);
        check_shards(e, e.runs[i], t);
        // The epochs budget needs the training-set size: checked (overflow) here, named.
        (void)total_steps(e.runs[i].cfg, training_samples(e.runs[i].cfg, t.train->size()),
                          Where{e.file, "$.base"});
      }
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
          line = find_compute_backend(dev)->open(comm);
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
    const auto& t = tasks.get(c.model.value);
    wk.push_back(c.workers);
    cost.push_back(static_cast<double>(total_steps(c, training_samples(c, t.train->size()))) * c.workers * c.batch_size *
                   std::max(1.0, t.model->flops_per_sample()));
  }
  p.first = plan_rank_groups(wk, cost, R, p.group_of);
  // Output size: the runs' curves and series go to the results file; refuse a file larger
  // than the budget (steps 2^63-1 with log_every 1 wrote 4.1 GB in a minute, issue 18).
  {
    double sum = 0, worst = -1;
    size_t worst_i = 0;
    for (size_t k = 0; k < todo_idx.size(); ++k) {
      const auto& c = e.runs[todo_idx[k]].cfg;
      const double b = estimate_results_bytes(c, tasks.get(c.model.value));
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
  // Resource limit: each run's memory on the busiest rank of its group (estimate_memory: the
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
      const auto& c = e.runs[i].cfg;
      const int g = p.group_of[k];
      const int gsize = p.first[static_cast<size_t>(g) + 1] - p.first[static_cast<size_t>(g)];
      p.memory.push_back(estimate_memory(c, tasks.get(c.model.value), gsize));
      fold_results += p.memory.back().results;
      fold_data = std::max(fold_data, p.memory.back().data);
      const double gb = p.memory.back().total() / 1e9;
      if (gb > budget_gb) {
        char buf[200];
        std::snprintf(buf, sizeof buf,
                      ", above the budget of %.2f GB (more ranks, fewer workers or updaters, a "
                      "smaller megabatch, or --max-memory-gb)",
                      budget_gb);
        throw UserError(e.file + ": " + key_path(e, e.runs[i], p.memory.back().dominant),
                        "run " + e.runs[i].id + " needs " + describe_memory(p.memory.back()) + buf);
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
  return p;

}

std::vector<int> plan_rank_groups(const std::vector<int64_t>& workers,
                                  const std::vector<double>& cost, int ranks,
                                  std::vector<int>& group_of_run) {
  // Rank groups (issue #7): when some run has fewer workers than there are ranks, the
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

}  // namespace wb::rt
