#include "runtime/sweep_plan.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>

#include "algorithms/algorithm.h"
#include "comm/agreement.h"
#include "comm/process_group.h"
#include "runtime/core/error.h"
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

size_t batch_bytes(const models::Dataset& d, int max_batch) {
  models::Batch b;
  d.reserve(b, max_batch);  // reserves, touches nothing
  return sizeof(float) * (b.x.capacity() + b.y.capacity() + b.x_val.capacity()) +
         sizeof(int32_t) * (b.label.capacity() + b.x_idx.capacity() + b.y_idx.capacity()) +
         sizeof(int64_t) * (b.x_ptr.capacity() + b.y_ptr.capacity());
}

}  // namespace

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
  // Diagnostics keep a copy of each local worker's gradient (orthogonality, diversity).
  if (c.metrics.orthogonality.every > 0 || c.metrics.diversity.every > 0)
    floats += static_cast<double>(n);
  e.state_per_worker = sizeof(float) * floats +
                       sizeof(uint32_t) * (static_cast<double>(B) +  // last batch's indices
                                           static_cast<double>(N) / static_cast<double>(c.workers));
  e.data = static_cast<double>(t.train->bytes() + (t.test ? t.test->bytes() : 0));
  e.scratch = static_cast<double>(m.workspace_bytes(B) + batch_bytes(*t.train, B));
  if (t.test)
    e.scratch += static_cast<double>(m.workspace_bytes(kEvalChunk) + batch_bytes(*t.test, kEvalChunk));
  return e;
}

std::string describe_memory(const MemoryEstimate& m) {
  char buf[200];
  const double MB = 1e6;
  std::snprintf(buf, sizeof buf,
                "~%.0f MB per rank (%.0f workers x %.3g MB + data %.0f MB + scratch %.0f MB + "
                "program %.0f MB)",
                m.total() / MB, m.workers_per_rank, m.state_per_worker / MB, m.data / MB,
                m.scratch / MB, MemoryEstimate::kProgram / MB);
  return buf;
}

int SweepPlan::group_of_rank(int rank) const {
  int g = 0;
  while (rank >= first[static_cast<size_t>(g) + 1]) ++g;
  return g;
}

SweepPlan plan_sweep(const Experiment& e, const RunOptions& opt, MPI_Comm comm, TaskCache& tasks) {
  SweepPlan p;
  const int rank = comm::rank_of(comm), R = comm::size_of(comm);
  p.out = !opt.output.empty() ? opt.output : (!e.output.empty() ? e.output : e.name + ".h5");
  const std::string& out = p.out;
  const std::string out_where = !opt.output.empty() ? "-o " + out : e.file + ": $.output";

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

  std::map<std::string, std::string> existing;
  comm::agree_on_errors(comm, [&] {
    if (rank != 0) return;
    check_output_writable(out, out_where);
    if (std::filesystem::exists(out)) {
      if (!opt.resume && !opt.force)
        throw UserError(out, "already exists: pass --resume to continue it or --force to overwrite");
      if (opt.resume) existing = existing_runs(out);
    }
  });
  // Everyone needs to know which runs to skip.
  std::vector<char>& skip = p.skip;
  skip.assign(e.runs.size(), 0);
  if (rank == 0)
    for (size_t i = 0; i < e.runs.size(); ++i) {
      auto it = existing.find(e.runs[i].id);
      skip[i] = it != existing.end() && it->second == "completed";
    }
  comm::broadcast_flags(skip, 0, comm);

  // Pre-flight: load every distinct model + data before the first run, so a missing data
  // file fails now and not after an hour of sweeps.
  comm::agree_on_errors(comm, [&] {
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
    cost.push_back(static_cast<double>(total_steps(c, t.train->size())) * c.workers * c.batch_size *
                   std::max(1.0, t.model->flops_per_sample()));
  }
  p.first = plan_rank_groups(wk, cost, R, p.group_of);
  // Resource limit: each run's memory on the busiest rank of its group (estimate_memory: the
  // same figure --dry-run prints) must fit the per-rank budget; refuse up front, with it.
  {
    double budget_gb = opt.max_memory_gb;
    if (budget_gb <= 0) {
      const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
      budget_gb = 0.8 * static_cast<double>(pages) * static_cast<double>(page) / 1e9;
    }
    for (size_t k = 0; k < todo_idx.size(); ++k) {
      const size_t i = todo_idx[k];
      const auto& c = e.runs[i].cfg;
      const int g = p.group_of[k];
      const int gsize = p.first[static_cast<size_t>(g) + 1] - p.first[static_cast<size_t>(g)];
      p.memory.push_back(estimate_memory(c, tasks.get(c.model.value), gsize));
      const double gb = p.memory.back().total() / 1e9;
      if (gb > budget_gb) {
        char buf[160];
        std::snprintf(buf, sizeof buf,
                      ", above the budget of %.2f GB (more ranks, fewer workers, or "
                      "--max-memory-gb)",
                      budget_gb);
        throw UserError(e.file + ": run " + e.runs[i].id + ": $.base.workers",
                        "needs " + describe_memory(p.memory.back()) + buf);
      }
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
