#include "runtime/runner.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <numeric>

#include "algorithms/algorithm.h"
#include "comm/collectives.h"
#include "runtime/compute_device.h"
#include "runtime/diagnostics.h"
#include "runtime/error.h"
#include "runtime/interrupt.h"
#include "runtime/optimizer.h"
#include "runtime/progress.h"
#include "runtime/schedule.h"
#include "runtime/worker.h"

namespace wb::rt {

namespace {

// Run fn on every rank of comm. If it throws on any rank, every rank rethrows the
// lowest failing rank's error (a UserError stays a UserError), so all ranks leave the
// same way and nobody waits in a collective for a rank that is gone.
void collective_try(MPI_Comm comm, const std::function<void()>& fn) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int kind = 0;  // 0 ok, 1 user error, 2 other
  std::string msg, where, detail;
  try {
    fn();
  } catch (const UserError& e) {
    kind = 1;
    msg = e.what();
    where = e.where;
    detail = e.detail;
  } catch (const std::exception& e) {
    kind = 2;
    msg = std::string("rank ") + std::to_string(rank) + ": " + e.what();
  }
  if (size == 1) {
    if (kind == 1) throw UserError(where, detail);
    if (kind == 2) throw InternalError(msg);
    return;
  }
  int mine = kind ? rank : size, first = size;
  WB_CHECK_MPI(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm));
  if (first == size) return;
  int k = kind;
  WB_CHECK_MPI(MPI_Bcast(&k, 1, MPI_INT, first, comm));
  auto bcast_str = [&](std::string& s) {
    int len = static_cast<int>(s.size());
    WB_CHECK_MPI(MPI_Bcast(&len, 1, MPI_INT, first, comm));
    s.resize(static_cast<size_t>(len));
    if (len) WB_CHECK_MPI(MPI_Bcast(s.data(), len, MPI_CHAR, first, comm));
  };
  bcast_str(msg);
  bcast_str(where);
  bcast_str(detail);
  if (k == 1) throw UserError(where, detail);
  throw InternalError(msg);
}

models::EvalResult evaluate_distributed(const models::Model& m, std::span<const float> w,
                                        const models::Dataset& test, comm::Collectives& coll,
                                        models::Workspace& ws, models::Batch& b, int chunk) {
  const size_t N = test.size(), R = static_cast<size_t>(coll.ranks()),
               r = static_cast<size_t>(coll.rank());
  const size_t lo = N * r / R, hi = N * (r + 1) / R;
  models::EvalResult ev;
  std::vector<uint32_t> idx(static_cast<size_t>(chunk));
  for (size_t s = lo; s < hi; s += static_cast<size_t>(chunk)) {
    const size_t e = std::min(hi, s + static_cast<size_t>(chunk));
    for (size_t i = s; i < e; ++i) idx[i - s] = static_cast<uint32_t>(i);
    test.gather(std::span<const uint32_t>(idx.data(), e - s), b);
    ev.add(m.evaluate(w, b, ws));
  }
  models::EvalResult tot;
  tot.loss_sum = coll.sum_over_ranks(ev.loss_sum);
  tot.correct = coll.sum_over_ranks(ev.correct);
  tot.count = static_cast<int64_t>(coll.sum_over_ranks(static_cast<double>(ev.count)));
  tot.has_accuracy = coll.sum_over_ranks(ev.has_accuracy ? 1.0 : 0.0) > 0;
  return tot;
}

std::string fmt_num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
}

}  // namespace

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

RunResult execute_run(const RunSpec& rs, const models::Task& task, MPI_Comm comm,
                      ProgressLine* progress) {
  using SteadyClock = std::chrono::steady_clock;
  const auto t0 = SteadyClock::now();
  const RunConfig& c = rs.cfg;
  const int W = static_cast<int>(c.workers);
  const int B = static_cast<int>(c.batch_size);
  const models::Model& m = *task.model;
  const size_t n = m.num_params();
  const size_t N = task.train->size();
  if (N < static_cast<size_t>(W))
    throw UserError("run " + rs.id, "the training set has " + std::to_string(N) +
                                        " samples, fewer than the " + std::to_string(W) +
                                        " workers (each needs a shard)");

  comm::Collectives coll(comm, W);
  std::vector<float> w0(n);
  m.init_params(w0, static_cast<uint64_t>(c.seed));
  std::vector<Worker> workers(static_cast<size_t>(coll.local_count()));
  const OptimizerEnv env{n, &m.tensors()};
  for (int k = 0; k < coll.local_count(); ++k) {
    Worker& wk = workers[static_cast<size_t>(k)];
    wk.id = coll.first_local() + k;
    wk.w = w0;
    wk.g.assign(n, 0.f);
    wk.opt = optimizer_registry().create(c.optimizer.value, env);
    wk.ws = m.make_workspace(B);
    task.train->reserve(wk.batch, B);
    wk.idx.resize(static_cast<size_t>(B));
    wk.seed = static_cast<uint64_t>(c.seed);
    wk.sampler = Sampler(N, W, wk.id, static_cast<uint64_t>(c.seed));
  }
  auto algorithm = algo::algorithm_registry().create(c.algorithm.value);
  auto schedule = schedule_registry().create(c.schedule.value);
  SimClock clock(c.clock, c.heterogeneity, W, static_cast<uint64_t>(c.seed));
  algo::StepContext ctx{workers, coll, m, *task.train, c, clock};
  ctx.W = W;
  std::unique_ptr<Diagnostics> diag;
  if (c.metrics.any()) {
    diag = std::make_unique<Diagnostics>(c.metrics, m, W);
    ctx.observer = diag.get();
  }
  algorithm->setup(ctx);

  const int64_t total = total_steps(c, N);
  // The budget in epochs (the schedules' total), from the algorithm's step size.
  Progress prog{0, total, 0,
                static_cast<double>(total) * algorithm->samples_per_step(c) / static_cast<double>(N)};

  constexpr int kEvalChunk = 256;
  std::unique_ptr<models::Workspace> eval_ws;
  models::Batch eval_batch;
  if (task.test) {
    eval_ws = m.make_workspace(kEvalChunk);
    task.test->reserve(eval_batch, kEvalChunk);
  }

  RunResult res;
  res.id = rs.id;
  res.index = rs.index;
  res.config = rs.resolved;
  res.has_test = task.test != nullptr;
  std::vector<double> local_loss(workers.size()), all_loss(static_cast<size_t>(W));
  int64_t samples = 0, zero_streak = 0, converged_step = -1, steps_done = 0;
  double min_loss = INFINITY, best_acc = NAN, final_test_loss = NAN, final_acc = NAN,
         train_loss = NAN;
  for (int64_t step = 0; step < total; ++step) {
    prog.step = step;
    // Epochs from the samples actually processed: Adaptive SGD's and Elastic SGD's steps are
    // mega-batches / rounds of other sizes than W x batch_size (for the synchronous
    // algorithms it is the same number).
    prog.epoch = static_cast<double>(samples) / static_cast<double>(N);
    ctx.step = step;
    ctx.epoch = prog.epoch;
    ctx.lr = schedule->lr(c.lr, prog);
    ctx.update_max_abs = NAN;
    ctx.step_samples = 0;
    algorithm->step(ctx);
    samples += ctx.step_samples;
    steps_done = step + 1;

    for (size_t k = 0; k < workers.size(); ++k) local_loss[k] = workers[k].loss;
    coll.allgather_worker_values(local_loss, all_loss);
    double sum = 0;
    for (double l : all_loss) sum += l;
    train_loss = sum / W;
    bool diverged = !std::isfinite(train_loss) ||
                    (!std::isnan(ctx.update_max_abs) && !std::isfinite(ctx.update_max_abs)) ||
                    (c.max_loss > 0 && train_loss > c.max_loss);
    // Interruption must be agreed by every rank of the run (they step together).
    int stop_local = interrupt_requested() ? 1 : 0, stop = stop_local;
    if (coll.ranks() > 1)
      WB_CHECK_MPI(MPI_Allreduce(&stop_local, &stop, 1, MPI_INT, MPI_MAX, comm));
    if (std::isfinite(train_loss)) min_loss = std::min(min_loss, train_loss);
    bool converged = false;
    if (c.converge.enabled && !diverged && !std::isnan(ctx.update_max_abs)) {
      zero_streak = ctx.update_max_abs <= c.converge.tol ? zero_streak + 1 : 0;
      if (zero_streak >= c.converge.consecutive) {
        converged = true;
        converged_step = step + 1;
      }
    }
    const bool last = step + 1 == total || diverged || converged || stop;
    const bool do_eval = task.test && !diverged &&
                         ((c.eval_every > 0 && (step + 1) % c.eval_every == 0) || last);
    const bool do_log = (step + 1) % c.log_every == 0 || last || do_eval || step == 0;
    if (do_log) {
      double te = NAN, acc = NAN;
      if (do_eval) {
        auto ev = evaluate_distributed(m, algorithm->eval_params(ctx), *task.test, coll, *eval_ws,
                                       eval_batch, kEvalChunk);
        te = ev.loss_sum / std::max<int64_t>(1, ev.count);
        final_test_loss = te;
        if (ev.has_accuracy) {
          acc = ev.correct / std::max<int64_t>(1, ev.count);
          res.has_accuracy = true;
          final_acc = acc;
          best_acc = std::isnan(best_acc) ? acc : std::max(best_acc, acc);
        }
      }
      const double wall = std::chrono::duration<double>(SteadyClock::now() - t0).count();
      res.curves.push(static_cast<double>(step + 1), static_cast<double>(samples) / static_cast<double>(N),
                      static_cast<double>(samples), wall, clock.now(), ctx.lr, train_loss, te,
                      acc);
    }
    if (progress) progress->update(step + 1, total, train_loss);
    if (do_log && !diverged) {
      // A NaN/Inf in the model is divergence too (cheap: at log points only).
      int bad = 0;
      for (const auto& wk : workers)
        for (float x : wk.w)
          if (!std::isfinite(x)) {
            bad = 1;
            break;
          }
      int any = bad;
      if (coll.ranks() > 1) WB_CHECK_MPI(MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, comm));
      diverged = any != 0;
    }
    if (diverged) {
      res.status = "diverged";
      res.error = std::isfinite(train_loss) && c.max_loss > 0 && train_loss > c.max_loss
                      ? "training loss " + fmt_num(train_loss) + " above max_loss at step " +
                            std::to_string(step + 1)
                      : "non-finite training loss, update or model at step " +
                            std::to_string(step + 1);
      break;
    }
    if (stop) {
      res.status = "interrupted";
      res.error = "interrupted by signal at step " + std::to_string(step + 1);
      break;
    }
    if (converged) break;
  }
  res.wall_s = std::chrono::duration<double>(SteadyClock::now() - t0).count();
  res.sim_s = clock.now();
  auto num_or_null = [](double x) { return std::isfinite(x) ? json(x) : json(nullptr); };
  res.summary["steps"] = steps_done;
  res.summary["samples"] = samples;
  res.summary["wall_s"] = res.wall_s;
  res.summary["sim_s"] = res.sim_s;
  res.summary["final_train_loss"] = num_or_null(train_loss);
  res.summary["min_train_loss"] = num_or_null(min_loss);
  res.summary["final_test_loss"] = num_or_null(final_test_loss);
  res.summary["final_test_accuracy"] = num_or_null(final_acc);
  res.summary["best_test_accuracy"] = num_or_null(best_acc);
  res.summary["converged_step"] = converged_step;
  if (diag) diag->append_series(res.series);
  algorithm->append_series(ctx, res.series);
  // Final parameters of the evaluated model, for small models (toys: the coefficients).
  if (n <= 100000) {
    auto fp = algorithm->eval_params(ctx);
    Series s;
    s.path = "final_params";
    s.rows = fp.size();
    s.data.assign(fp.begin(), fp.end());
    res.series.push_back(std::move(s));
  }
  return res;
}

void print_run_table(const Experiment& e) {
  std::printf("experiment %s (%s): %zu run%s\n", e.name.c_str(), e.file.c_str(), e.runs.size(),
              e.runs.size() == 1 ? "" : "s");
  std::printf("%5s  %-50s %-10s %-12s %7s %6s %10s %8s\n", "#", "run id", "algorithm", "model",
              "workers", "batch", "lr", "budget");
  for (const auto& r : e.runs) {
    const auto& c = r.cfg;
    std::string budget = c.steps > 0 ? std::to_string(c.steps) + " st" : fmt_num(c.epochs) + " ep";
    std::printf("%5d  %-50s %-10s %-12s %7lld %6lld %10s %8s\n", r.index, r.id.c_str(),
                c.algorithm.value["name"].get<std::string>().c_str(),
                c.model.value["name"].get<std::string>().c_str(),
                static_cast<long long>(c.workers), static_cast<long long>(c.batch_size),
                fmt_num(c.lr).c_str(), budget.c_str());
  }
}

namespace {

constexpr int kResultTag = 4242;

// A finished run travels from its group's leader to world rank 0 (the only writer) as
// CBOR (which, unlike JSON text, keeps NaN: curves have NaN where nothing was evaluated).
std::vector<uint8_t> pack(const RunResult& r) {
  json j;
  j["id"] = r.id;
  j["index"] = r.index;
  j["config"] = r.config;
  j["status"] = r.status;
  j["error"] = r.error;
  j["wall_s"] = r.wall_s;
  j["sim_s"] = r.sim_s;
  j["has_test"] = r.has_test;
  j["has_accuracy"] = r.has_accuracy;
  j["summary"] = r.summary;
  const Curves& c = r.curves;
  j["curves"] = {{"step", c.step},       {"epoch", c.epoch},   {"samples", c.samples},
                 {"wall_s", c.wall_s},   {"sim_s", c.sim_s},   {"lr", c.lr},
                 {"train_loss", c.train_loss}, {"test_loss", c.test_loss},
                 {"test_accuracy", c.test_accuracy}};
  json series = json::array();
  for (const Series& se : r.series)
    series.push_back({{"path", se.path}, {"rows", se.rows}, {"cols", se.cols}, {"data", se.data},
                      {"attrs", se.string_list_attrs}});
  j["series"] = series;
  return json::to_cbor(j);
}

RunResult unpack(const std::vector<uint8_t>& bytes) {
  const json j = json::from_cbor(bytes);
  RunResult r;
  r.id = j["id"];
  r.index = j["index"];
  r.config = j["config"];
  r.status = j["status"];
  r.error = j["error"];
  r.wall_s = j["wall_s"];
  r.sim_s = j["sim_s"];
  r.has_test = j["has_test"];
  r.has_accuracy = j["has_accuracy"];
  r.summary = j["summary"];
  const json& c = j["curves"];
  r.curves.step = c["step"].get<std::vector<double>>();
  r.curves.epoch = c["epoch"].get<std::vector<double>>();
  r.curves.samples = c["samples"].get<std::vector<double>>();
  r.curves.wall_s = c["wall_s"].get<std::vector<double>>();
  r.curves.sim_s = c["sim_s"].get<std::vector<double>>();
  r.curves.lr = c["lr"].get<std::vector<double>>();
  r.curves.train_loss = c["train_loss"].get<std::vector<double>>();
  r.curves.test_loss = c["test_loss"].get<std::vector<double>>();
  r.curves.test_accuracy = c["test_accuracy"].get<std::vector<double>>();
  for (const json& se : j["series"]) {
    Series s;
    s.path = se["path"];
    s.rows = se["rows"];
    s.cols = se["cols"];
    s.data = se["data"].get<std::vector<double>>();
    s.string_list_attrs = se["attrs"].get<std::map<std::string, std::vector<std::string>>>();
    r.series.push_back(std::move(s));
  }
  return r;
}

std::string run_line(const RunResult& res) {
  const auto& s = res.summary;
  auto g = [&](const char* k) {
    return s[k].is_null() ? std::string("-") : fmt_num(s[k].get<double>());
  };
  std::string line = res.id + ": " + res.status + ", " + std::to_string(s["steps"].get<int64_t>()) +
                     " steps, train loss " + g("final_train_loss");
  if (!s["final_test_accuracy"].is_null()) line += ", test acc " + g("final_test_accuracy");
  if (s["converged_step"].get<int64_t>() >= 0)
    line += ", converged at step " + std::to_string(s["converged_step"].get<int64_t>());
  return line + ", " + fmt_num(res.wall_s) + " s";
}

}  // namespace

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

int run_experiment(const Experiment& e, const RunOptions& opt, MPI_Comm comm) {
  int rank = 0, R = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &R);
  const std::string out =
      !opt.output.empty() ? opt.output : (!e.output.empty() ? e.output : e.name + ".h5");
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
  collective_try(comm, [&] {
    if (rank != 0) return;
    check_output_writable(out, out_where);
    if (std::filesystem::exists(out)) {
      if (!opt.resume && !opt.force)
        throw UserError(out, "already exists: pass --resume to continue it or --force to overwrite");
      if (opt.resume) existing = existing_runs(out);
    }
  });
  // Everyone needs to know which runs to skip.
  std::vector<char> skip(e.runs.size(), 0);
  if (rank == 0)
    for (size_t i = 0; i < e.runs.size(); ++i) {
      auto it = existing.find(e.runs[i].id);
      skip[i] = it != existing.end() && it->second == "completed";
    }
  if (R > 1 && !skip.empty())
    WB_CHECK_MPI(MPI_Bcast(skip.data(), static_cast<int>(skip.size()), MPI_CHAR, 0, comm));

  // Pre-flight: load every distinct model + data before the first run, so a missing data
  // file fails now and not after an hour of sweeps.
  TaskCache tasks;
  collective_try(comm, [&] {
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
  std::vector<std::string> device_lines;
  {
    std::vector<std::string> opened;
    for (size_t i = 0; i < e.runs.size(); ++i) {
      const std::string& dev = e.runs[i].cfg.device;
      if (skip[i] || dev == "cpu" ||
          std::find(opened.begin(), opened.end(), dev) != opened.end())
        continue;
      opened.push_back(dev);
      std::string line;
      collective_try(comm, [&] {
        try {
          line = find_compute_backend(dev)->open(comm);
        } catch (const UserError& ue) {
          throw UserError(e.file + ": run " + e.runs[i].id + ": $.device", ue.detail);
        }
      });
      device_lines.push_back(dev + ": " + line);
    }
  }
  std::vector<size_t> todo_idx;
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
  // Resource limit: the workers' buffers on the busiest rank (params, gradient, ~3
  // optimizer/scratch copies) must fit the per-rank budget; refuse up front, with the figure.
  {
    double budget_gb = opt.max_memory_gb;
    if (budget_gb <= 0) {
      const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
      budget_gb = 0.8 * static_cast<double>(pages) * static_cast<double>(page) / 1e9;
    }
    for (size_t i : todo_idx) {
      const auto& c = e.runs[i].cfg;
      const double local = std::ceil(static_cast<double>(c.workers) / std::min<int64_t>(R, c.workers));
      const double gb = local * 5.0 * 4.0 * static_cast<double>(tasks.get(c.model.value).model->num_params()) / 1e9;
      if (gb > budget_gb) {
        char buf[256];
        std::snprintf(buf, sizeof buf,
                      "%.0f workers per rank x %zu parameters need ~%.2f GB per rank, above the "
                      "budget of %.2f GB (more ranks, fewer workers, or --max-memory-gb)",
                      local, tasks.get(c.model.value).model->num_params(), gb, budget_gb);
        throw UserError(e.file + ": run " + e.runs[i].id + ": $.base.workers", buf);
      }
    }
  }
  std::vector<int> group_of;
  const std::vector<int> first = plan_rank_groups(wk, cost, R, group_of);
  const int G = static_cast<int>(first.size()) - 1;
  int my_group = 0;
  while (rank >= first[static_cast<size_t>(my_group) + 1]) ++my_group;

  if (opt.dry_run) {
    if (rank == 0) {
      print_run_table(e);
      if (G > 1) std::printf("%d MPI ranks in %d rank groups run different runs at once\n", R, G);
      std::printf("dry run: would write %s\n", out.c_str());
    }
    return 0;
  }

  MPI_Comm gcomm = comm;
  if (G > 1) WB_CHECK_MPI(MPI_Comm_split(comm, my_group, rank, &gcomm));
  int grank = 0, gsize = 1;
  MPI_Comm_rank(gcomm, &grank);
  MPI_Comm_size(gcomm, &gsize);

  FileInfo info{e.raw.dump(), R};
  {
    bool any_cpu = false;
    for (size_t i = 0; i < e.runs.size(); ++i) any_cpu |= !skip[i] && e.runs[i].cfg.device == "cpu";
    std::string d = any_cpu || device_lines.empty() ? "cpu" : "";
    for (const auto& l : device_lines) d += (d.empty() ? "" : "\n") + l;
    info.devices = d;
  }
  std::unique_ptr<Recorder> rec;
  if (rank == 0) rec = std::make_unique<Recorder>(out, info, opt.force || !opt.resume);
  ProgressLine progress(rank == 0 && !opt.quiet);
  const int todo = static_cast<int>(todo_idx.size());
  if (todo < static_cast<int>(e.runs.size()))
    progress.message("resume: " + std::to_string(e.runs.size() - todo) + " of " +
                     std::to_string(e.runs.size()) + " runs already completed in " + out);
  for (const auto& l : device_lines) progress.message(l);
  if (G > 1)
    progress.message(std::to_string(R) + " MPI ranks in " + std::to_string(G) +
                     " rank groups run different runs of the sweep at once");
  int written = 0, not_completed = 0, diverged = 0, interrupted = 0;
  // World rank 0 writes every result: its own group's as they finish, the others' as
  // they arrive (polled between its own runs, then drained at the end). Each other group
  // leader ends with an empty message: "this group is done" (messages from one source
  // on one tag arrive in order, so its results come first).
  auto write = [&](const RunResult& res) {
    ++written;
    if (res.status != "completed") ++not_completed;
    diverged += res.status == "diverged";
    interrupted += res.status == "interrupted";
    rec->write_run(res);
  };
  int groups_done = 0;
  auto drain = [&](bool block) {
    while (groups_done < G - 1) {
      int flag = 0;
      MPI_Status st;
      if (block) {
        WB_CHECK_MPI(MPI_Probe(MPI_ANY_SOURCE, kResultTag, comm, &st));
        flag = 1;
      } else {
        WB_CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, kResultTag, comm, &flag, &st));
      }
      if (!flag) return;
      int bytes = 0;
      MPI_Get_count(&st, MPI_BYTE, &bytes);
      std::vector<uint8_t> buf(static_cast<size_t>(bytes));
      WB_CHECK_MPI(MPI_Recv(buf.data(), bytes, MPI_BYTE, st.MPI_SOURCE, kResultTag, comm,
                            MPI_STATUS_IGNORE));
      if (bytes == 0) {
        ++groups_done;
        continue;
      }
      RunResult res = unpack(buf);
      progress.begin_run(written + 1, todo, res.id);
      progress.end_run(run_line(res));
      write(res);
    }
  };

  bool stop_group = false;
  for (size_t k = 0; k < todo_idx.size() && !stop_group; ++k) {
    if (group_of[k] != my_group) continue;
    const RunSpec& rs = e.runs[todo_idx[k]];
    const int used = static_cast<int>(std::min<int64_t>(gsize, rs.cfg.workers));
    MPI_Comm rcomm = gcomm;
    if (used < gsize)
      WB_CHECK_MPI(MPI_Comm_split(gcomm, grank < used ? 0 : MPI_UNDEFINED, grank, &rcomm));
    if (rank == 0) progress.begin_run(written + 1, todo, rs.id);
    RunResult res;
    if (rcomm != MPI_COMM_NULL) {
      collective_try(rcomm, [&] {
        try {
          res = execute_run(rs, tasks.get(rs.cfg.model.value, rs.cfg.device), rcomm, rank == 0 ? &progress : nullptr);
        } catch (const UserError& ue) {
          throw UserError(ue.where.empty() ? e.file + ": run " + rs.id : ue.where, ue.detail);
        }
      });
      if (rcomm != gcomm) MPI_Comm_free(&rcomm);
    }
    if (grank == 0) {
      if (rank == 0) {
        progress.end_run(run_line(res));
        write(res);
        drain(false);
      } else {
        const auto bytes = pack(res);
        WB_CHECK_MPI(MPI_Send(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, 0,
                              kResultTag, comm));
      }
    }
    // The group agrees whether to go on: stop after an interrupted run, a signal that
    // arrived between runs, or (with --fail-fast) a diverged run.
    int code = grank == 0 ? (res.status == "interrupted" ? 2 : res.status == "diverged" ? 1 : 0) : 0;
    int sig = interrupt_requested() ? 1 : 0, any_sig = sig;
    if (gsize > 1) {
      WB_CHECK_MPI(MPI_Bcast(&code, 1, MPI_INT, 0, gcomm));
      WB_CHECK_MPI(MPI_Allreduce(&sig, &any_sig, 1, MPI_INT, MPI_MAX, gcomm));
    }
    stop_group = code == 2 || any_sig || (code == 1 && opt.fail_fast);
  }
  if (grank == 0 && rank != 0)
    WB_CHECK_MPI(MPI_Send(nullptr, 0, MPI_BYTE, 0, kResultTag, comm));
  if (rank == 0) {
    drain(true);
    rec->flush();
  }
  if (gcomm != comm) MPI_Comm_free(&gcomm);
  if (rank == 0 && !opt.quiet)
    std::fprintf(stderr, "wrote %s (%d run%s%s)\n", out.c_str(), written, written == 1 ? "" : "s",
                 not_completed ? (", " + std::to_string(not_completed) + " not completed").c_str()
                               : "");
  // Exit code, the same on every rank: 128+signal when interrupted, 3 for --fail-fast
  // after a diverged run, else 0 (diverged runs are results, not failures).
  int rc = 0;
  if (interrupt_requested() || interrupted) {
    const int sig = interrupt_signal() != 0 ? interrupt_signal() : 2;
    rc = 128 + sig;
    if (rank == 0)
      std::fprintf(stderr, "workbench: interrupted; %s is complete up to the last finished run "
                           "(continue with --resume)\n", out.c_str());
  } else if (opt.fail_fast && diverged) {
    rc = 3;
    if (rank == 0) std::fprintf(stderr, "workbench: stopped after a diverged run (--fail-fast)\n");
  }
  int all_rc = rc;
  if (R > 1) WB_CHECK_MPI(MPI_Allreduce(&rc, &all_rc, 1, MPI_INT, MPI_MAX, comm));
  return all_rc;
}

}  // namespace wb::rt
