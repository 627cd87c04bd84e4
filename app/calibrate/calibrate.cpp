#include "app/calibrate/calibrate.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <filesystem>
#include <thread>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "algorithms/async_common.h"
#include "app/exec/training_loop.h"
#include "app/plan/run_plan.h"
#include "app/plan/sweep_plan.h"
#include "app/results/host_info.h"
#include "app/results/recorder.h"
#include "app/results/results_layout.h"
#include "app/experiment/spec.h"
#include "comm/agreement.h"
#include "comm/calibration.h"
#include "comm/kernels.h"
#include "core/error.h"
#include "models/model.h"
#include "sim/cost_model.h"
#include "train/compute_device.h"

namespace wb::sim {
// sim/cost_model.cpp: the profile's key of model m's compute segment for batches
// <= max_batch (declared here rather than in cost_model.h, whose every change rebuilds the
// whole tree; to move into the header).
std::string compute_key(const std::string& model, double max_batch);
}  // namespace wb::sim

namespace wb::app {

namespace {

const char* kHelp =
    "usage: mpirun -n R workbench calibrate [-o PROFILE.json] [--quick] [--device D] [--model JSON ...]\n"
    "       mpirun -n 2 workbench calibrate --validate PROFILE.json [--steps N] [--repeats N] [--device D]\n"
    "                                       [--model JSON ...]\n"
    "  Measure this machine's cost profile (R >= 2: the network is measured between ranks 0\n"
    "  and 1): compute per model and batch size (LeNet-5, the sparse MLP, each --model), the\n"
    "  shared model's per-float load and atomic add in situ (a short LAP-SGD real-mode run per\n"
    "  model), and one level of p2p, allreduce, adasum, adasum_split, weighted_average,\n"
    "  broadcast over 4 B .. 64 MB.\n"
    "  Fits least squares per size segment in C++ (links: on the relative error, the segments\n"
    "  placed by the fit; compute: fixed and per-sample costs >= 0), times the allreduce level as\n"
    "  a sum and average's division pass apart, prints every point's residual, writes the JSON a\n"
    "  spec names with \"clock\": {\"profile\": \"PROFILE.json\"} (default: profile.json).\n"
    "  --quick: fewer sizes and batch sizes (a smoke test).\n"
    "  --model JSON (repeatable): one more model, its config as a spec's \"model\" takes it, e.g.\n"
    "  --model '{\"name\": \"gpt\", \"layers\": 2, \"heads\": 2, \"d_model\": 64, \"block\": 64}':\n"
    "  its compute fitted as the defaults' (batch 1 .. 128; a run's steps capped at ~8 s), and it\n"
    "  weighs in on the shared-model, element-wise and division costs. One entry per model name:\n"
    "  a --model named lenet5 or sparse_mlp replaces that default's config. The profile records\n"
    "  each entry's config (\"compute_models\"), and a run of another config of that model is\n"
    "  refused. With --validate: that model's rows (sync SGD average and local SGD H 4 at batch 8,\n"
    "  32; held out, batch 24 and 48), reported apart (RESULT ... models=... model_*); a --model\n"
    "  named like a default is validated in that default's rows instead.\n"
    "  --device D: the compute runs on device D (\"cuda\": the training passes on each rank's\n"
    "  GPU; the network is measured as always, between host buffers). Default cpu.\n"
    "  --validate PROFILE.json: measured vs simulated time per step of sync SGD (average, sum),\n"
    "  Adasum (gradient, delta), local SGD (H 4) and LAP-SGD (U 1, 2: real mode's wall clock\n"
    "  vs simulated mode's clock) on LeNet-5 and the sparse MLP with one worker per rank at\n"
    "  batch 8, 32, 128; apart, held-out configurations the fit never measured (batch 24, 48,\n"
    "  96, 256, a multistep schedule); and each op level's priced vs measured time at\n"
    "  4 KB .. 64 MB. Last line: RESULT ...\n"
    "  --repeats N: validate (default 5): each (model, batch) group's configurations run N\n"
    "  times, taking turns, and the measured time per step is the median over the N (a shared\n"
    "  machine moves one run by +-30%; load from other jobs then hits every configuration alike);\n"
    "  calibrate (default 3): each batch size's compute run and each model's in-situ\n"
    "  shared-model run, N times taking turns, the median (--quick: 1).\n";

// The models calibrated and validated: LeNet-5 on Fashion-MNIST and the sparse MLP (128
// hidden, the Adaptive SGD targets' model) on its embedded synthetic extreme-classification
// data at the generator's default size: the per-sample cost depends on the features and
// labels, not on how many rows the set has.
const std::vector<std::pair<std::string, std::string>> kModels = {
    {"lenet5", R"("lenet5")"},
    {"sparse_mlp", R"({"name": "sparse_mlp", "hidden": [128]})"},
};

// A model calibrated or validated: its name (the profile's compute key), its config as a
// spec's "model" takes it (JSON text), and whether --model added it beside the defaults.
struct CalibModel {
  std::string name, cfg;
  bool extra = false;
};

// The defaults (kModels), then the --model ones in the order given. The profile holds one
// compute entry per model name (the cost model looks compute up by name): a --model named
// like a default replaces that default's config in place (calibrate --model
// '{"name": "sparse_mlp", "hidden": [256]}' measures sparse_mlp at [256], and --validate
// with the same --model validates it in the default's rows); two --model of one name are
// refused.
std::vector<CalibModel> model_list(const std::vector<std::string>& given) {
  std::vector<CalibModel> out;
  for (const auto& [n, c] : kModels) out.push_back({n, c, false});
  std::set<std::string> seen;
  for (const std::string& text : given) {
    json j;
    try {
      j = json::parse(text);
    } catch (const json::exception& e) {
      throw UserError("calibrate", "--model " + text + ": not valid JSON (" + e.what() +
                                       "); a model as a spec's \"model\" takes it, e.g. --model "
                                       "'{\"name\": \"gpt\", \"layers\": 2}'");
    }
    // Checked now, before minutes of measuring: the model and its parameters.
    const json r =
        models::model_registry().resolve(j, core::Where{"calibrate --model " + text, "$"});
    const std::string name = r["name"].get<std::string>();
    if (!seen.insert(name).second)
      throw UserError("calibrate", "--model " + text + ": a second --model of " + name +
                                       " (a profile holds one compute entry per model name)");
    auto it = std::find_if(out.begin(), out.end(), [&](const CalibModel& m) { return m.name == name; });
    if (it != out.end()) it->cfg = j.dump();
    else out.push_back({name, j.dump(), true});
  }
  return out;
}

// The steps of one measuring run: `dflt`, fewer where a step is slow, so that a run lasts
// about kRunBudgetS (est_step_s: the step's estimated seconds; 0: unknown), in whole curve
// rows of 10 steps, never below min_steps (per_step's median needs 5 rows and a few intervals
// between them). A char-level gpt of 2 layers x 64 stepped in 45 ms at batch 64 on the 2-vCPU
// Zen 5 (0.2-0.3 s at batch 128 with the other core busy): 150 steps of 0.25 s would be 40 s
// a run and 2 minutes over calibrate's 3 repeats at that batch size alone. The default
// models' runs are far below the budget (LeNet-5: ~5 ms a step at batch 128) and keep their
// steps.
constexpr double kRunBudgetS = 8.0;
int run_steps(int dflt, int min_steps, double est_step_s) {
  if (!(est_step_s > 0) || dflt <= min_steps) return dflt;
  const double fit = std::floor(kRunBudgetS / est_step_s / 10) * 10;
  return static_cast<int>(std::clamp(fit, static_cast<double>(min_steps), static_cast<double>(dflt)));
}

std::string load_text() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string fmt_bytes(double b) {
  if (b >= 1 << 20) return fmt("%.0f MB", b / (1 << 20));
  if (b >= 1 << 10) return fmt("%.0f KB", b / (1 << 10));
  return fmt("%.0f B", b);
}

// Per-step wall and simulated seconds of one run, from its curve rows (one every 10 steps):
// the median over the intervals between consecutive rows, the first two and the last left
// out (warm-up, and a final evaluation's time). The median, because the machine is shared:
// a rank preempted by another process for a scheduler quantum makes one interval slow.
struct StepTimes {
  double wall_s = 0, sim_s = 0;
};
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
StepTimes per_step(const RunResult& r) {
  const Curves& c = r.curves;
  WB_ASSERT(c.size() >= 5, "calibrate: a run logged fewer than 5 rows");
  std::vector<double> w, s;
  for (size_t i = 2; i + 2 < c.size(); ++i) {
    const double steps = c.step[i + 1] - c.step[i];
    w.push_back((c.wall_s[i + 1] - c.wall_s[i]) / steps);
    s.push_back((c.sim_s[i + 1] - c.sim_s[i]) / steps);
  }
  // Simulated time per step is not noisy; its mean over the same rows (local SGD's average
  // every H steps falls in some intervals and not others).
  double ssum = 0;
  for (double x : s) ssum += x;
  return {median(w), ssum / static_cast<double>(s.size())};
}

// LAP-SGD's real mode: the updaters run ahead of the runner's steps (a step only waits for
// s + 1 updates per worker, and rounds do not hold the updaters back), so the time between
// two curve rows is the runner catching up, not the cost of an update. Its cost per step is
// the whole run's: the wall time from the first logged row (after step 1) to the last (which
// waits for the final update) over the steps between them. Not from a later row: by then
// the updaters have run ahead of the runner by as many updates as it lags, more with more
// updaters sharing its core, and those updates fell outside the interval (U = 2 measured
// 5-15% faster than U = 1 at LeNet-5 batch 8-32 that way, in 3 of 4 validations).
// The run's evaluations are not steps: the final one (the only one: the validation runs set
// no eval_every) falls inside the last row's time and is taken out (summary eval_wall_s; it
// was ~1 ms per step of a 300-step LeNet-5 run, charged to LAP-SGD's real mode before).
StepTimes whole_run(const RunResult& r) {
  const Curves& c = r.curves;
  WB_ASSERT(c.size() >= 3, "calibrate: a run logged fewer than 3 rows");
  const size_t last = c.size() - 1;
  for (size_t i = 0; i < last; ++i)
    WB_ASSERT(std::isnan(c.test_loss[i]), "calibrate: whole_run expects one evaluation, at the end");
  const double steps = c.step[last] - c.step[0];
  const double eval_s = r.summary.value("eval_wall_s", 0.0);
  return {(c.wall_s[last] - c.wall_s[0] - eval_s) / steps, (c.sim_s[last] - c.sim_s[0]) / steps};
}

// Per-float seconds of real mode's element-wise access to a shared model (the profile's
// shared_model entry, CostModel::shared_model_s): the snapshot's relaxed loads and the
// write's atomic adds (algo::load_relaxed / add_relaxed, the functions LAP-SGD's updaters
// call), over `n` floats, one thread, best of `reps`.
sim::SharedModelCost time_shared_model(size_t n, int reps) {
  std::vector<float> x(n, 1.0f), v(n), d(n, 1e-7f);
  using Clock = std::chrono::steady_clock;
  double best_r = INFINITY, best_w = INFINITY;
  for (int k = 0; k < reps; ++k) {
    const auto t0 = Clock::now();
    for (size_t i = 0; i < n; ++i) v[i] = algo::load_relaxed(x[i]);
    const auto t1 = Clock::now();
    // v[i] * 0 + d[i]: the added value depends on the load loop's result, so neither loop
    // can be dropped as dead (as LAP's write depends on its snapshot); no -ffast-math here
    for (size_t i = 0; i < n; ++i) algo::add_relaxed(x[i], v[i] * 0 + d[i]);
    const auto t2 = Clock::now();
    best_r = std::min(best_r, std::chrono::duration<double>(t1 - t0).count());
    best_w = std::min(best_w, std::chrono::duration<double>(t2 - t1).count());
  }
  volatile float sink = x[n / 2];  // keep the loops
  (void)sink;
  return {best_r / static_cast<double>(n), best_w / static_cast<double>(n)};
}

// Seconds per float of one streaming element-wise pass (CostProfile::elementwise_s_per_float):
// Adasum's delta passes as algorithms/adasum.cpp makes them (start <- w, delta <- w - start,
// w <- start + delta) over `n` floats, the median of `reps` (not the best: in a run the
// buffers come back from the training pass, not hot from the previous repetition).
double time_elementwise(size_t n, int reps) {
  std::vector<float> w(n, 1.0f), start(n), delta(n);
  using Clock = std::chrono::steady_clock;
  std::vector<double> t;
  for (int k = 0; k < reps; ++k) {
    const auto t0 = Clock::now();
    std::copy(w.begin(), w.end(), start.begin());
    for (size_t i = 0; i < n; ++i) delta[i] = w[i] * 1.0001f - start[i];
    for (size_t i = 0; i < n; ++i) w[i] = start[i] + delta[i];
    t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  volatile float sink = w[n / 2];  // keep the passes
  (void)sink;
  return median(t) / (3.0 * static_cast<double>(n));
}

// Seconds per float of the pass that divides an allreduce's sum by W (CommCall::average),
// comm::kern::divide as comm/collectives.cpp calls it after the sum over ranks, W = 2 (the
// ranks here), over `n` floats: the median of `reps`.
double time_divide(size_t n, int reps) {
  std::vector<float> x(n, 3.0f);
  volatile float wv = 2.0f;  // W, from outside as in a run
  const float W = wv;
  using Clock = std::chrono::steady_clock;
  std::vector<double> t;
  for (int k = 0; k < reps; ++k) {
    const auto t0 = Clock::now();
    comm::kern::divide(x.data(), x.data(), n, W);
    t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    for (size_t i = 0; i < n; i += 1024) x[i] = 3.0f;  // no run of denormals
  }
  volatile float sink = x[n / 2];
  (void)sink;
  return median(t) / static_cast<double>(n);
}

// The state of the pair of cores the ranks run on: one 4 KB message one way (the p2p level's
// median), now.
double pair_state_s(MPI_Comm comm) { return comm::time_level(comm, "p2p", {size_t{4} << 10})[0]; }

// The same message as `workbench calibrate` measured it (the profile's fit points); 0 when
// the profile has none (a published profile, or one written before).
double profile_pair_state_s(const sim::CostProfile& p) {
  const json& f = p.extra;
  if (!f.is_object() || !f.contains("fit") || !f["fit"].contains("links")) return 0;
  for (const auto& [link, ops] : f["fit"]["links"].items()) {
    (void)link;
    if (!ops.contains("p2p") || !ops["p2p"].is_array()) continue;
    for (const auto& pt : ops["p2p"])
      if (pt.contains("bytes") && pt["bytes"].is_number() && pt["bytes"].get<double>() == 4096 &&
          pt.contains("measured_s") && pt["measured_s"].is_number())
        return pt["measured_s"].get<double>();
  }
  return 0;
}

std::string fmt_us(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", s * 1e6);
  return b;
}

Experiment make_experiment(const std::string& name, const std::string& base, const std::string& sweep) {
  const std::string text = "{\"name\": \"" + name + "\", \"base\": " + base +
                           (sweep.empty() ? "" : ", \"sweep\": " + sweep) + "}";
  return parse_experiment(text, "(calibrate: " + name + ")");
}

double median_over_ranks(double v, MPI_Comm comm) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  std::vector<double> all(static_cast<size_t>(size));
  WB_CHECK_MPI(MPI_Allgather(&v, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, comm));
  double sum = 0;
  for (double x : all) sum += x;
  return sum / size;  // the mean: every rank's step costs the same in a real run
}

std::vector<size_t> sizes(bool quick) {
  std::vector<size_t> s;
  for (size_t b = 4; b <= (size_t{64} << 20); b *= quick ? 16 : 2) s.push_back(b);
  if (quick && s.back() != (size_t{64} << 20)) s.push_back(size_t{1} << 20);
  return s;
}

// Opens compute device `dev` on every rank (as a sweep does before its first run), so that
// runs with "device": dev can execute; "cpu" needs nothing. Returns the log line.
std::string open_device(const std::string& dev, MPI_Comm comm) {
  if (dev == "cpu") return "cpu";
  train::ComputeBackend* b = train::find_compute_backend(dev);
  if (!b)
    throw UserError("calibrate", "--device " + dev + ": this workbench has no such device (it has: " +
                                     [] {
                                       std::string l;
                                       for (const auto& n : train::compute_device_names()) l += (l.empty() ? "" : ", ") + n;
                                       return l;
                                     }() +
                                     ")");
  std::string line;
  comm::agree_on_errors(comm, [&] { line = b->open(comm); });
  return dev + ": " + line;
}

std::string device_key(const std::string& dev) {
  return dev == "cpu" ? "" : ", \"device\": \"" + dev + "\"";
}

// A link's level: at most 7 segments (the switches of MPI's protocols and of the collectives'
// own schedules, and above 1 MB the caches' and the memory's bends), placed by the fit
// (fit_piecewise_auto), at least 3 sizes each (2 with --quick's sparse grid) so that each
// segment's residuals say something.
constexpr size_t kLinkSegments = 7;
// Batch-size segments of the compute fit.
const std::vector<double> kBatchBreaks = {8, 32};

int calibrate(const std::string& out_path, bool quick, int repeats, const std::string& device,
              const std::vector<CalibModel>& cmodels, MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (size < 2)
    throw UserError("calibrate", "needs at least 2 ranks (mpirun -n 2): the network is measured "
                                 "between ranks 0 and 1");
  sim::CostProfile p;
  p.ranks = 2;
  const std::string dev_line = open_device(device, comm);
  p.machine = "measured by `workbench calibrate` at mpirun -n " + std::to_string(size) +
              (device == "cpu" ? "" : ", compute on " + dev_line) + "; " + host_cpu_text();
  p.source = "workbench calibrate; load average at start " + load_text();
  // On a CPU the per-batch fixed cost is the core computing (updaters sharing it cannot
  // overlap it); on a GPU it is launch and transfer latency that they can.
  p.compute_fixed_overlaps = device != "cpu";
  json fit = json::object();
  if (rank == 0)
    std::printf("calibrate: %d ranks, load average %s\n%s\n", size, load_text().c_str(), host_cpu_text().c_str());

  // ---- compute
  const std::vector<int> batches = quick ? std::vector<int>{8, 64} : std::vector<int>{1, 2, 4, 8, 16, 32, 64, 128};
  TaskCache tasks;
  // One compute run: local SGD that never averages (H > steps), one worker per rank (below).
  auto compute_experiment = [&](const std::string& mcfg, int b, int steps) {
    const std::string base =
        "{\"model\": " + mcfg + ", \"algorithm\": {\"name\": \"local_sgd\", \"H\": " + std::to_string(steps + 1) +
        "}, \"optimizer\": {\"name\": \"sgd\", "
        "\"momentum\": 0.5}, \"workers\": " +
        std::to_string(size) + ", \"batch_size\": " + std::to_string(b) + ", \"lr\": 0.01, \"steps\": " +
        std::to_string(steps) + ", \"log_every\": 10, \"seed\": 1" + device_key(device) + "}";
    return make_experiment("calibrate-compute", base, "");
  };
  // Every model's config on this device and its data, before minutes of measuring (a --model
  // that the device does not run, a text file that is not there).
  for (const CalibModel& m : cmodels) {
    Experiment e = compute_experiment(m.cfg, batches.back(), 40);
    const RunSpec& rs = e.runs.at(0);
    comm::agree_on_errors(comm, [&] { tasks.get(rs.cfg.model.value(), rs.cfg.device); });
    // The config its compute entry is measured on, resolved (every parameter): what the
    // planner compares a run's model with (app/plan/run_plan.cpp check_profile_model).
    p.compute_models[m.name] = rs.resolved_at("model");
  }
  std::map<std::string, size_t> model_floats;  // parameters per model (shared model below)
  std::map<std::string, double> probe_per_sample;  // seconds a step per sample (run_steps)
  for (const auto& [mname, mcfg, extra] : cmodels) {
    (void)extra;
    std::vector<double> x(batches.begin(), batches.end()), t;
    // The steps per batch size: with --quick 40; else from one probe run of 20 steps at the
    // largest batch size (whole_run: its rows' wall time, warm-up step and final evaluation
    // out), its time per step taken as proportional to the batch (an underestimate at small
    // batches, where the default steps cap them anyway).
    std::vector<int> steps_at(batches.size());
    if (!quick) {
      Experiment e = compute_experiment(mcfg, batches.back(), 20);
      const RunSpec& rs = e.runs.at(0);
      const RunResult r = execute_run(rs, tasks.get(rs.cfg.model.value(), rs.cfg.device), comm, nullptr);
      probe_per_sample[mname] = median_over_ranks(whole_run(r).wall_s, comm) / batches.back();
    }
    for (size_t bi = 0; bi < batches.size(); ++bi) {
      const int b = batches[bi];
      steps_at[bi] = quick ? 40 : run_steps(b <= 16 ? 300 : 150, 60, probe_per_sample[mname] * b);
    }
    // Every batch size once per round, `repeats` rounds, the median per batch size: a slow
    // spell of the shared machine then hits every batch size alike instead of bending the
    // fit at one of them (a sparse-MLP step at batch 8 measured 0.76 ms in one calibration
    // where the validation minutes later stepped it in 0.66).
    std::vector<std::vector<double>> per_batch(batches.size());
    for (int rep = 0; rep < repeats; ++rep)
      for (size_t bi = 0; bi < batches.size(); ++bi) {
        const int b = batches[bi];
        const int steps = steps_at[bi];
        // The ranks step together, one worker each, as a run's ranks do: every step of a
        // multi-rank run ends with the ranks agreeing (the workers' compute times and losses
        // allgathered, the stop flag reduced; app/exec/training_loop.cpp), so a step lasts the
        // slower rank's step plus that agreement. Local SGD that never averages (H > steps) has
        // exactly that and no communication of its own, which the links price. Measured with
        // the ranks stepping alone (MPI_COMM_SELF), a LeNet-5 step at batch 8 came out ~0.17 ms
        // (~25%) faster than the same step inside a 2-rank run (local SGD H = 4 at 0.83 ms
        // against a priced 0.65). Measured this way the errors no longer lean one way: on a
        // shared VM the machine drifts by more than that between two measurements minutes
        // apart (docs/validation.md).
        // The optimizer is SGD with momentum for every model, as the validation's runs and the
        // experiments' LeNet-5 and sparse MLP runs take it. A model trained with AdamW pays
        // more a step than the fit sees: a gpt of 2 layers x 64 (0.11 M parameters) stepped
        // ~0.7 ms slower with AdamW on the 2-vCPU Zen 5 (4.5 against 5.2 ms at batch 8, 18.7
        // against 19.0 at 32, a loaded machine).
        Experiment e = compute_experiment(mcfg, b, steps);
        const RunSpec& rs = e.runs.at(0);
        const models::Task& task = tasks.get(rs.cfg.model.value(), rs.cfg.device);
        model_floats[mname] = task.model->num_params();
        const RunResult r = execute_run(rs, task, comm, nullptr);
        per_batch[bi].push_back(median_over_ranks(per_step(r).wall_s, comm));
      }
    for (const auto& v : per_batch) t.push_back(median(v));
    // Least squares per batch-size segment (a CPU's caches make the per-sample cost grow with
    // the batch), fixed and per-sample costs >= 0 (nonneg_line: a negative intercept means the
    // per-sample cost still grows inside the segment; the fit then goes through the origin).
    std::vector<double> cres;
    const sim::Piecewise cp = sim::fit_piecewise(x, t, kBatchBreaks, &cres, /*nonneg=*/true);
    std::vector<std::pair<double, sim::ComputeCost>> cc;
    for (const auto& s : cp.segments)
      cc.push_back({s.max_bytes, {std::max(0.0, s.alpha_s), std::max(0.0, s.beta_s_per_byte)}});
    cc.back().first = 1e18;
    for (const auto& [max_batch, c] : cc) p.compute[sim::compute_key(mname, max_batch)] = c;
    auto at = [&](double b) -> const sim::ComputeCost& {
      for (const auto& [max_batch, c] : cc)
        if (b <= max_batch) return c;
      return cc.back().second;
    };
    json pts = json::array();
    if (rank == 0) {
      std::printf("\ncompute %s: t = fixed + per_sample x batch, least squares per batch segment, fixed and per_sample >= 0\n", mname.c_str());
      double lo = 0;
      for (const auto& [max_batch, c] : cc) {
        std::printf("  batches (%.0f, %s]: fixed_s %.4g  per_sample_s %.4g\n", lo,
                    max_batch >= 1e17 ? "inf" : fmt("%.0f", max_batch).c_str(), c.fixed_s, c.per_sample_s);
        lo = max_batch;
      }
      if (!quick) {
        std::string st;
        for (int n : steps_at) {
          if (!st.empty()) st += ' ';
          st += std::to_string(n);
        }
        std::printf("  steps per run %s (a probe at batch %d: %.3f ms a step; runs capped at ~%.0f s)\n", st.c_str(),
                    batches.back(), probe_per_sample[mname] * batches.back() * 1e3, kRunBudgetS);
      }
      std::printf("  %8s %14s %14s %9s\n", "batch", "measured_ms", "fitted_ms", "resid_%");
    }
    for (size_t i = 0; i < x.size(); ++i) {
      const sim::ComputeCost& g = at(x[i]);
      const double f = g.fixed_s + g.per_sample_s * x[i];
      const double res = (f - t[i]) / t[i];
      pts.push_back({{"batch", x[i]}, {"measured_s", t[i]}, {"residual", res}, {"steps", steps_at[i]}});
      if (rank == 0) std::printf("  %8.0f %14.4f %14.4f %+9.1f\n", x[i], t[i] * 1e3, f * 1e3, res * 100);
    }
    fit["compute"][mname] = pts;
  }

  // ---- shared model (LAP/LPP-SGD real mode's element-wise access), at each model's size.
  // The profile takes the costs IN SITU: a short LAP-SGD real-mode run per model (one worker
  // per rank, one updater, a round after every step) times its own loops in thread CPU time
  // (workers/shared_*_ns_per_float: the updaters' snapshots and writes, the runner's round
  // snapshots and applies). The same loops in isolation (best of N, the model hot in the
  // caches) are printed beside them: on the 2-core VM they came out 1.4x (atomic add) to 2x
  // (load) cheaper than in a run, whose gradient pass evicts the model between two accesses,
  // and pricing them so left LAP-SGD's real mode on the sparse MLP [128] 36-47% above its
  // simulated time. Weighted over the
  // models by the floats each run touched. The models given with --model take part here and
  // in the element-wise and division passes below: these per-float costs price every model's
  // runs from one number, which should weigh the sizes the profile is for (a gpt of 2 layers
  // x 64, ~0.1 M floats, adds one LAP-SGD run of at most ~8 s per repeat and microseconds of
  // passes).
  {
    double r_cpu = 0, w_cpu = 0, r_floats = 0, w_floats = 0;
    if (rank == 0)
      std::printf("\nshared model: per-float relaxed load (snapshot) and atomic add (write), in situ (a "
                  "LAP-SGD real-mode run, thread CPU time) and in isolation (one thread per rank, "
                  "best of %d)\n", quick ? 5 : 30);
    for (const auto& [mname, mcfg, extra] : cmodels) {
      (void)extra;
      const size_t n = model_floats.at(mname);
      const sim::SharedModelCost c = time_shared_model(n, quick ? 5 : 30);
      const double ri = median_over_ranks(c.read_s_per_float, comm);
      const double wi = median_over_ranks(c.atomic_add_s_per_float, comm);
      const int steps = quick ? 20 : run_steps(100, 20, probe_per_sample[mname] * 32);
      const std::string base = "{\"model\": " + mcfg +
                               ", \"algorithm\": {\"name\": \"lap_sgd\", \"updaters\": 1, \"H\": 1, "
                               "\"switch_at\": 1.0, \"mode\": \"real\"}, \"optimizer\": {\"name\": \"sgd\", "
                               "\"momentum\": 0.5}, \"workers\": " + std::to_string(size) +
                               ", \"batch_size\": 32, \"lr\": 0.01, \"steps\": " + std::to_string(steps) +
                               ", \"log_every\": " + std::to_string(steps) + ", \"seed\": 1" + device_key(device) + "}";
      Experiment e = make_experiment("calibrate-shared-model", base, "");
      const RunSpec& rs = e.runs.at(0);
      std::vector<double> rv, wv;  // per run: the mean over the workers; the median over runs
      for (int rep = 0; rep < repeats; ++rep) {
        const RunResult res = execute_run(rs, tasks.get(rs.cfg.model.value(), rs.cfg.device), comm, nullptr);
        auto mean_of = [&](const char* path) {
          for (const auto& s : res.series)
            if (s.path == path && !s.data.empty()) {
              double sum = 0;
              for (double v : s.data) sum += v;
              return 1e-9 * sum / static_cast<double>(s.data.size());
            }
          throw std::runtime_error(std::string("calibrate: the LAP-SGD run wrote no ") + path);
        };
        rv.push_back(mean_of("workers/shared_read_ns_per_float"));
        wv.push_back(mean_of("workers/shared_write_ns_per_float"));
      }
      const double r = median(rv);
      const double w = median(wv);
      // Per update one snapshot and one write of n floats, per round (every step) one each
      // more: the run touched about the same floats in both loops, 2 x steps x n per worker.
      const double floats = 2.0 * steps * static_cast<double>(n);
      r_cpu += r * floats;
      w_cpu += w * floats;
      r_floats += floats;
      w_floats += floats;
      fit["shared_model"][mname] = {{"floats", n},
                                    {"read_s_per_float", r},
                                    {"atomic_add_s_per_float", w},
                                    {"isolated_read_s_per_float", ri},
                                    {"isolated_atomic_add_s_per_float", wi}};
      if (rank == 0)
        std::printf("  %-10s %9zu floats: in situ read %.3f ns/float, atomic add %.3f ns/float; isolated "
                    "%.3f, %.3f\n", mname.c_str(), n, r * 1e9, w * 1e9, ri * 1e9, wi * 1e9);
    }
    p.shared_model.read_s_per_float = r_cpu / r_floats;
    p.shared_model.atomic_add_s_per_float = w_cpu / w_floats;

    // Element-wise passes (Adasum's delta), on every rank at once, weighted by the floats.
    double e_sum = 0, e_floats = 0;
    if (rank == 0)
      std::printf("\nelement-wise passes (Adasum delta: copy, subtract, add), median of %d\n", quick ? 5 : 30);
    for (const auto& [mname, mcfg, extra] : cmodels) {
      (void)mcfg, (void)extra;
      const size_t n = model_floats.at(mname);
      const double e = median_over_ranks(time_elementwise(n, quick ? 5 : 30), comm);
      e_sum += e * static_cast<double>(n);
      e_floats += static_cast<double>(n);
      fit["elementwise"][mname] = {{"floats", n}, {"s_per_float", e}};
      if (rank == 0) std::printf("  %-10s %9zu floats: %.3f ns/float a pass\n", mname.c_str(), n, e * 1e9);
    }
    p.elementwise_s_per_float = e_sum / e_floats;

    // The average's division pass (the allreduce level below is timed as a sum).
    double d_sum = 0;
    if (rank == 0) std::printf("\nallreduce average: the division of the sum by W, median of %d\n", quick ? 5 : 30);
    for (const auto& [mname, mcfg, extra] : cmodels) {
      (void)mcfg, (void)extra;
      const size_t n = model_floats.at(mname);
      const double d = median_over_ranks(time_divide(n, quick ? 5 : 30), comm);
      d_sum += d * static_cast<double>(n);
      fit["average_divide"][mname] = {{"floats", n}, {"s_per_float", d}};
      if (rank == 0) std::printf("  %-10s %9zu floats: %.3f ns/float\n", mname.c_str(), n, d * 1e9);
    }
    p.average_divide_s_per_float = d_sum / e_floats;
    // The ranks on this node and its cores: with at most one core per rank, the runner's
    // rounds and steps (LAP/LPP-SGD real mode) run on the updaters' core (runner_device_s).
    // With a GPU doing the compute, the rounds' host work overlaps it.
    const int per_node = comm::ranks_on_node(comm);
    const unsigned cores = std::thread::hardware_concurrency();
    p.shared_model.rounds_share_core = device == "cpu" && cores > 0 && cores <= static_cast<unsigned>(per_node);
    if (rank == 0)
      std::printf("  %d ranks on this node, %u cores: averaging rounds %s the updaters' cores\n", per_node,
                  cores, p.shared_model.rounds_share_core ? "share" : "do not share");
  }

  // ---- network
  const std::string link = comm::pair_link_class(comm);
  const std::vector<size_t> sz = sizes(quick);
  std::vector<double> xb(sz.begin(), sz.end());
  for (const auto& op : comm::kCalibratedOps) {
    const std::vector<double> t = comm::time_level(comm, op, sz);
    std::vector<double> res;
    const sim::Piecewise pw = sim::fit_piecewise_auto(xb, t, kLinkSegments, quick ? 2 : 3, &res);
    p.links[link][op] = pw;
    json pts = json::array();
    for (size_t i = 0; i < sz.size(); ++i)
      pts.push_back({{"bytes", xb[i]}, {"measured_s", t[i]}, {"residual", res[i]}});
    fit["links"][link][op] = pts;
    if (rank == 0) {
      std::printf("\n%s %s: one level between ranks 0 and 1, least squares of the relative error per "
                  "segment, segments placed by the fit\n", link.c_str(), op.c_str());
      double lo = 0;
      for (const auto& s : pw.segments) {
        char bw[32] = "flat";  // beta 0: the segment's time does not grow with its size
        if (s.beta_s_per_byte > 0) std::snprintf(bw, sizeof bw, "%.3g GB/s", 1e-9 / s.beta_s_per_byte);
        std::printf("  segment (%s, %s]: alpha %.3g us, beta %.4g ns/B (%s)\n", fmt_bytes(lo).c_str(),
                    s.max_bytes >= 1e17 ? "inf" : fmt_bytes(s.max_bytes).c_str(), s.alpha_s * 1e6,
                    s.beta_s_per_byte * 1e9, bw);
        lo = s.max_bytes;
      }
      std::printf("  %10s %14s %14s %9s\n", "bytes", "measured_us", "fitted_us", "resid_%");
      for (size_t i = 0; i < sz.size(); ++i)
        std::printf("  %10s %14.2f %14.2f %+9.1f\n", fmt_bytes(xb[i]).c_str(), t[i] * 1e6, pw(xb[i]) * 1e6,
                    res[i] * 100);
    }
  }
  // The last segment is open: its upper end is stored as "no limit".
  for (auto& [lk, ops] : p.links)
    for (auto& [op, pw] : ops) pw.segments.back().max_bytes = 1e18;
  fit["load_average_end"] = load_text();
  p.extra["fit"] = fit;
  p.extra["notes"] =
      "compute: wall time of one training step of one worker (gradient, optimizer step, loop "
      "bookkeeping) with the ranks stepping together, one worker each (local SGD that never "
      "averages: the per-step agreement and the slower rank's pace, no communication of the "
      "algorithm); links: one level of each op between "
      "two ranks (median of repetitions, the slower rank's time; allreduce: the sum, its average's "
      "division in average_divide); fit: least squares of the relative error per segment, at most 7 "
      "segments of >= 3 sizes placed to minimize it";
  if (rank == 0) {
    // The results file's writer (never through a link, fsync'ed, renamed into place).
    const std::string text = sim::cost_profile_json(p).dump(2) + "\n";
    try {
      replace_file(out_path, std::vector<char>(text.begin(), text.end()), "the profile");
    } catch (const WriteError& e) {
      throw UserError(e.what());
    }
    std::printf("\nwrote %s (load average at end %s)\n", out_path.c_str(), load_text().c_str());
  }
  return 0;
}

}  // namespace

// Kendall's tau-b of two orderings.
double kendall_tau(const std::vector<double>& a, const std::vector<double>& b) {
  double conc = 0, disc = 0, ta = 0, tb = 0;
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t j = i + 1; j < a.size(); ++j) {
      const double da = a[i] - a[j], db = b[i] - b[j];
      if (da == 0 && db == 0) continue;
      if (da == 0) ++ta;
      else if (db == 0) ++tb;
      else if ((da > 0) == (db > 0)) ++conc;
      else ++disc;
    }
  const double den = std::sqrt((conc + disc + ta) * (conc + disc + tb));
  return den > 0 ? (conc - disc) / den : 1.0;
}

// Kendall's tau over the pairs whose measured ranges [lo, hi] do not overlap.
SeparatedTau separated_tau(const std::vector<double>& lo, const std::vector<double>& hi,
                           const std::vector<double>& sim) {
  SeparatedTau r;
  std::vector<std::pair<size_t, size_t>> ties;
  for (size_t i = 0; i < lo.size(); ++i)
    for (size_t j = i + 1; j < lo.size(); ++j) {
      ++r.all_pairs;
      int meas = 0;  // +1: i measured slower than j beyond the ranges, -1: faster
      if (lo[i] > hi[j]) meas = 1;
      else if (hi[i] < lo[j]) meas = -1;
      if (meas == 0) continue;
      ++r.pairs;
      const double ds = sim[i] - sim[j];
      if (ds == 0) {
        ++r.model_ties;
        ties.emplace_back(i, j);
      } else if ((ds > 0) == (meas > 0)) {
        ++r.concordant;
      } else {
        ++r.discordant;
        r.wrong.emplace_back(i, j);
      }
    }
  r.wrong.insert(r.wrong.end(), ties.begin(), ties.end());
  r.tau = r.pairs > 0 ? static_cast<double>(r.concordant - r.discordant) / r.pairs : 1.0;
  return r;
}

namespace {

int validate(const std::string& profile, int steps, int repeats, const std::string& device,
             const std::vector<CalibModel>& cmodels, MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (size < 2) throw UserError("calibrate", "--validate needs mpirun -n 2 (one worker per rank)");
  const sim::CostProfile prof = sim::load_cost_profile(profile);
  const sim::ProfileCostModel model(prof, profile);
  const std::string load0 = load_text();
  const std::string dev_line = open_device(device, comm);
  // sim_json, when set: the simulated time per step comes from a second run of that
  // configuration, the measured one from `json` (LAP-SGD: its real mode, threads on the
  // wall clock, against its simulated mode, the event kernel on the profile's clock). U = 2 updaters per worker share the rank's core here, which is the
  // saturation the simulated cycle max(L + busy, U busy) models.
  struct Algo {
    std::string label, json, sim_json;
  };
  const double state_steps = pair_state_s(comm);
  auto lap = [](int U, const char* mode) {
    return std::string(R"({"name": "lap_sgd", "updaters": )") + std::to_string(U) +
           R"(, "H": 16, "switch_at": 0.5, "mode": ")" + mode + "\"}";
  };
  const std::vector<Algo> algos = {
      {"sync_sgd average", R"({"name": "sync_sgd", "combine": "average"})", ""},
      {"sync_sgd sum", R"({"name": "sync_sgd", "combine": "sum"})", ""},
      {"adasum gradient", R"({"name": "adasum", "apply": "gradient"})", ""},
      {"adasum delta", R"({"name": "adasum", "apply": "delta"})", ""},
      {"local_sgd H=4", R"({"name": "local_sgd", "H": 4})", ""},
      {"lap_sgd U=1 real vs simulated", lap(1, "real"), lap(1, "simulated")},
      {"lap_sgd U=2 real vs simulated", lap(2, "real"), lap(2, "simulated")},
  };
  const std::vector<int> batches = {8, 32, 128};
  TaskCache tasks;
  std::vector<double> errs, meas_all, sim_all, lo_all, hi_all;  // lo/hi: the repeats' range
  std::vector<std::string> labels_all;                          // "model b<batch> algorithm"
  double tau_min = 1, tau_sep_group_min = 1;
  // One validation run: the model at a batch size, one worker per rank, priced by the profile
  // (`extra`: more top-level keys, e.g. a schedule), the rows' configurations and the held-out
  // ones alike; `n_steps` steps (--steps but for the --model models' capped runs), 15 curve
  // rows whatever the steps (300 steps: every 20, as before): per_step needs 5.
  auto experiment = [&](const std::string& mcfg, const std::string& algo_json, int b, const std::string& extra,
                        int n_steps) {
    const std::string base = "{\"model\": " + mcfg + ", \"algorithm\": " + algo_json +
                             ", \"optimizer\": {\"name\": \"sgd\", \"momentum\": 0.5}, \"workers\": " +
                             std::to_string(size) + ", \"batch_size\": " + std::to_string(b) +
                             ", \"lr\": 0.01, \"steps\": " + std::to_string(n_steps) +
                             ", \"log_every\": " + std::to_string(std::max(1, n_steps / 15)) + extra +
                             ", \"seed\": 1, \"clock\": {\"profile\": \"" + profile + "\"}" + device_key(device) + "}";
    return make_experiment("calibrate-validate", base, "");
  };
  auto run_config = [&](const std::string& mcfg, const std::string& algo_json, int b, const std::string& extra,
                        int n_steps) {
    Experiment e = experiment(mcfg, algo_json, b, extra, n_steps);
    const RunSpec& rs = e.runs.at(0);
    return execute_run(rs, tasks.get(rs.cfg.model.value(), rs.cfg.device), comm, nullptr);
  };
  // Every model against the profile before minutes of runs: this device runs it, the profile
  // has its compute entry and, where the profile recorded the config that entry was measured
  // on (calibrate's compute_models), it is the config validated here.
  for (const CalibModel& m : cmodels) {
    Experiment e = experiment(m.cfg, R"({"name": "sync_sgd", "combine": "average"})", 8, "", steps);
    const json& mine = e.runs.at(0).resolved_at("model");
    try {
      sim::check_profile_compute(profile, m.name);
    } catch (const UserError& ue) {
      if (!m.extra) throw;
      throw UserError(ue.where, "no entry for model \"" + m.name + "\" (run `workbench calibrate --model '" +
                                    model_without_defaults(mine).dump() + "'`)");
    }
    if (const json* measured = profile_model(profile, m.name); measured && !same_model(*measured, mine)) {
      const std::string was = model_without_defaults(*measured).dump();
      throw UserError(profile + ": $.compute_models." + m.name,
                      "measured " + m.name + " as " + was + "; validate would run " +
                          model_without_defaults(mine).dump() + ": validate the profile's model with --model '" +
                          was + "'");
    }
  }
  if (rank == 0)
    std::printf("validate %s: %d ranks, one worker per rank, %d steps per run, %d repeat(s) taking turns "
                "(median), compute on %s, load average %s\n",
                profile.c_str(), size, steps, repeats, dev_line.c_str(), load0.c_str());
  // A profile from another CPU still validates, but its errors then measure the difference
  // between two machines, not the model: say so before the table.
  const std::string here = host_cpu_text(), there = machine_cpu_part(prof.machine);
  if (rank == 0) {
    std::printf("%s\n", here.c_str());
    if (!there.empty() && there != here)
      std::printf("warning: %s was measured on another host (%s): the errors below include the "
                  "difference between the two machines\n",
                  profile.c_str(), there.c_str());
  }
  if (rank == 0)
    std::printf("\n| model | batch | algorithm | measured ms/step | simulated ms/step | error |\n"
                "|---|---:|---|---:|---:|---:|\n");
  for (const auto& [mname, mcfg, extra_model] : cmodels) {
    if (extra_model) continue;  // reported apart, below
    for (int b : batches) {
      std::vector<double> meas, sim;
      auto run_one = [&](const std::string& algo_json, bool whole = false) {
        const RunResult r = run_config(mcfg, algo_json, b, "", steps);
        return whole ? whole_run(r) : per_step(r);
      };
      // Every configuration of the group once per round, `repeats` rounds: a slow spell of the
      // machine falls on all of them, and the median over rounds drops it. The simulated time
      // is deterministic: taken from the first round (LAP: one simulated-mode run).
      std::vector<std::vector<double>> walls(algos.size());
      std::vector<double> sims(algos.size(), 0.0);
      for (int rep = 0; rep < repeats; ++rep)
        for (size_t k = 0; k < algos.size(); ++k) {
          const Algo& a = algos[k];
          const StepTimes t = run_one(a.json, !a.sim_json.empty());
          walls[k].push_back(t.wall_s);
          if (rep == 0) sims[k] = a.sim_json.empty() ? t.sim_s : run_one(a.sim_json).sim_s;
        }
      for (size_t k = 0; k < algos.size(); ++k) {
        const Algo& a = algos[k];
        std::vector<double> w = walls[k];
        std::sort(w.begin(), w.end());
        const size_t n = w.size();
        StepTimes st{n % 2 ? w[n / 2] : 0.5 * (w[n / 2 - 1] + w[n / 2]), sims[k]};
        const double err = std::fabs(st.sim_s - st.wall_s) / st.wall_s;
        meas.push_back(st.wall_s);
        sim.push_back(st.sim_s);
        errs.push_back(err);
        if (rank == 0)
          std::printf("| %s | %d | %s | %.3f | %.3f | %.1f%% |\n", mname.c_str(), b, a.label.c_str(), st.wall_s * 1e3,
                      st.sim_s * 1e3, err * 100);
        std::fflush(stdout);
      }
      for (size_t k = 0; k < algos.size(); ++k) {
        lo_all.push_back(*std::min_element(walls[k].begin(), walls[k].end()));
        hi_all.push_back(*std::max_element(walls[k].begin(), walls[k].end()));
        labels_all.push_back(mname + " b" + std::to_string(b) + " " + algos[k].label);
      }
      tau_min = std::min(tau_min, kendall_tau(meas, sim));
      {  // the algorithms' ordering within this (model, batch): over the pairs it separates
        const size_t g = algos.size(), at = lo_all.size() - g;
        const SeparatedTau gs = separated_tau(std::vector<double>(lo_all.begin() + static_cast<long>(at), lo_all.end()),
                                              std::vector<double>(hi_all.begin() + static_cast<long>(at), hi_all.end()), sim);
        tau_sep_group_min = std::min(tau_sep_group_min, gs.tau);
      }
      meas_all.insert(meas_all.end(), meas.begin(), meas.end());
      sim_all.insert(sim_all.end(), sim.begin(), sim.end());
    }
  }
  auto geomean = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += std::log(std::max(x, 1e-6));
    return std::exp(s / static_cast<double>(v.size()));
  };
  const double step_geo = geomean(errs), step_max = *std::max_element(errs.begin(), errs.end());
  const double tau_all = kendall_tau(meas_all, sim_all);
  // The pairs the measurement itself orders: their repeats' ranges do not overlap (with
  // --repeats 1 every pair of different times). Two configurations whose cost is the same
  // (sync SGD's sum and average: one allreduce each) swap places from run to run, and tau
  // over all pairs charges the model for the machine's noise; over the separated pairs it
  // asks only what the measurement can answer. A pair the model prices equal counts against it.
  const SeparatedTau sep = separated_tau(lo_all, hi_all, sim_all);

  // Held-out configurations: what the fit never measured. calibrate fits each model's compute
  // at the batch sizes 1, 2, 4, ..., 128 in isolation; these run batch sizes between its points
  // (24, 48, 96) and beyond its largest (256), and a multistep learning-rate schedule, in the
  // training loop as a spec would, and are reported apart from the rows above so that a fit
  // that only interpolates its own points cannot hide there. (More logical workers than
  // ranks is not among them: the clock prices one device per worker, and two workers sharing
  // a core here measure the sharing, not the clock.)
  struct HeldOut {
    int batch;
    std::string label, algo_json, extra;
  };
  const std::vector<HeldOut> held = {
      {24, "sync_sgd average", R"({"name": "sync_sgd", "combine": "average"})", ""},
      {48, "local_sgd H=4", R"({"name": "local_sgd", "H": 4})", ""},
      {96, "adasum delta", R"({"name": "adasum", "apply": "delta"})", ""},
      {256, "sync_sgd average", R"({"name": "sync_sgd", "combine": "average"})", ""},
      {64, "sync_sgd average, multistep lr", R"({"name": "sync_sgd", "combine": "average"})",
       R"(, "schedule": {"name": "multistep", "milestones": [0.3, 0.6], "gamma": 0.1})"},
  };
  std::vector<double> herrs;
  if (rank == 0)
    std::printf("\nheld out (batch sizes and a schedule the fit never measured):\n"
                "| set | model | batch | algorithm | measured ms/step | simulated ms/step | error |\n"
                "|---|---|---:|---|---:|---:|---:|\n");
  for (const auto& [mname, mcfg, extra_model] : cmodels) {
    if (extra_model) continue;
    std::vector<std::vector<double>> walls(held.size());
    std::vector<double> sims(held.size(), 0.0);
    for (int rep = 0; rep < repeats; ++rep)
      for (size_t k = 0; k < held.size(); ++k) {
        const HeldOut& h = held[k];
        const StepTimes t = per_step(run_config(mcfg, h.algo_json, h.batch, h.extra, steps));
        walls[k].push_back(t.wall_s);
        if (rep == 0) sims[k] = t.sim_s;
      }
    for (size_t k = 0; k < held.size(); ++k) {
      const double wall = median(walls[k]), err = std::fabs(sims[k] - wall) / wall;
      herrs.push_back(err);
      if (rank == 0)
        std::printf("| held-out | %s | %d | %s | %.3f | %.3f | %.1f%% |\n", mname.c_str(), held[k].batch,
                    held[k].label.c_str(), wall * 1e3, sims[k] * 1e3, err * 100);
      std::fflush(stdout);
    }
  }
  const double held_geo = geomean(herrs), held_max = *std::max_element(herrs.begin(), herrs.end());

  // The models given with --model, apart from the rows above: the figures of the defaults
  // (steps_*, tau_*, heldout_*) stay comparable from one validation to the next
  // (calib/*.validation*.txt), and these get their own (model_*). Sync SGD (average) and local
  // SGD (H = 4) at batch 8 and 32: the model's compute and its allreduce in the training loop;
  // held out, batch 24 (sync SGD) and 48 (local SGD), which the fit never measured. A run's
  // steps: --steps, fewer where the profile prices a step high (run_steps, at least 50), so
  // that a slow model adds minutes, not a quarter of an hour (at 0.1 s a step, 300 steps x 6
  // runs x 5 repeats).
  struct ModelRow {
    int batch;
    std::string label, algo_json;
    bool held;
  };
  const std::vector<ModelRow> mrows = {
      {8, "sync_sgd average", R"({"name": "sync_sgd", "combine": "average"})", false},
      {8, "local_sgd H=4", R"({"name": "local_sgd", "H": 4})", false},
      {32, "sync_sgd average", R"({"name": "sync_sgd", "combine": "average"})", false},
      {32, "local_sgd H=4", R"({"name": "local_sgd", "H": 4})", false},
      {24, "sync_sgd average", R"({"name": "sync_sgd", "combine": "average"})", true},
      {48, "local_sgd H=4", R"({"name": "local_sgd", "H": 4})", true},
  };
  struct ModelOut {
    std::string model;
    const ModelRow* row;
    double wall, sim, err;
  };
  std::vector<ModelOut> mouts;
  std::vector<double> merrs, mherrs;
  std::string mnames;
  for (const auto& [mname, mcfg, extra_model] : cmodels) {
    if (!extra_model) continue;
    mnames += (mnames.empty() ? "" : ",") + mname;
    std::vector<int> nsteps;
    std::string st;
    for (const ModelRow& r : mrows) {
      const sim::BatchCost c = model.batch(mname, 0, r.batch);
      nsteps.push_back(run_steps(steps, 50, c.latency_s + c.busy_s));
      if (!st.empty()) st += ", ";
      st += std::to_string(nsteps.back()) + " at batch " + std::to_string(r.batch) + " " + r.label;
    }
    if (rank == 0) {
      if (mouts.empty())
        std::printf("\n--model (apart from the figures above; a run ~%.0f s of steps at the profile's price, "
                    "50 to %d):\n", kRunBudgetS, steps);
      std::printf("  %s: steps per run %s\n", mname.c_str(), st.c_str());
    }
    std::vector<std::vector<double>> walls(mrows.size());
    std::vector<double> sims(mrows.size(), 0.0);
    for (int rep = 0; rep < repeats; ++rep)
      for (size_t k = 0; k < mrows.size(); ++k) {
        const StepTimes t = per_step(run_config(mcfg, mrows[k].algo_json, mrows[k].batch, "", nsteps[k]));
        walls[k].push_back(t.wall_s);
        if (rep == 0) sims[k] = t.sim_s;
      }
    for (size_t k = 0; k < mrows.size(); ++k) {
      const double wall = median(walls[k]), err = std::fabs(sims[k] - wall) / wall;
      (mrows[k].held ? mherrs : merrs).push_back(err);
      mouts.push_back({mname, &mrows[k], wall, sims[k], err});
    }
  }
  if (rank == 0 && !mouts.empty()) {
    std::printf("| model | batch | algorithm | measured ms/step | simulated ms/step | error |\n"
                "|---|---:|---|---:|---:|---:|\n");
    for (const ModelOut& o : mouts)
      if (!o.row->held)
        std::printf("| %s | %d | %s | %.3f | %.3f | %.1f%% |\n", o.model.c_str(), o.row->batch, o.row->label.c_str(),
                    o.wall * 1e3, o.sim * 1e3, o.err * 100);
    std::printf("\n| set | model | batch | algorithm | measured ms/step | simulated ms/step | error |\n"
                "|---|---|---:|---|---:|---:|---:|\n");
    for (const ModelOut& o : mouts)
      if (o.row->held)
        std::printf("| held-out | %s | %d | %s | %.3f | %.3f | %.1f%% |\n", o.model.c_str(), o.row->batch,
                    o.row->label.c_str(), o.wall * 1e3, o.sim * 1e3, o.err * 100);
    std::fflush(stdout);
  }

  const double state_ops = pair_state_s(comm);
  // Collectives: priced (the profile, W = 2: one level) vs measured now, 4 KB .. 64 MB.
  // Measured over calibrate's own size grid and compared at every fourth size: time_level
  // interleaves the sizes of one call, so a size's neighbours are part of its measurement
  // (a 4 MB allreduce took 2.95 ms in calibrate's grid of factor 2 and 1.52 ms in a grid of
  // factor 4, the same day).
  const std::vector<size_t> grid = sizes(false);
  std::vector<size_t> sz;
  for (size_t s = size_t{4} << 10; s <= (size_t{64} << 20); s *= 4) sz.push_back(s);
  std::vector<double> cerrs;
  if (rank == 0)
    std::printf("\n| op | bytes | measured us | priced us | error |\n|---|---:|---:|---:|---:|\n");
  for (const auto& op : comm::kCalibratedOps) {
    const std::vector<double> tg = comm::time_level(comm, op, grid);
    std::vector<double> t;
    for (size_t s : sz) t.push_back(tg[static_cast<size_t>(std::find(grid.begin(), grid.end(), s) - grid.begin())]);
    for (size_t i = 0; i < sz.size(); ++i) {
      sim::CommCall c;
      c.workers = 2;
      c.bytes = static_cast<double>(sz[i]);
      double priced = 0;
      if (op == "p2p") {
        c.op = sim::CommOp::kP2P;
        c.from = 0;
        c.to = 1;
        priced = model.comm_s(c, 0);
      } else {
        priced = model.level_s("intra", op, c.bytes);  // W = 2: the op is one level
      }
      const double err = std::fabs(priced - t[i]) / t[i];
      cerrs.push_back(err);
      if (rank == 0)
        std::printf("| %s | %s | %.1f | %.1f | %.1f%% |\n", op.c_str(), fmt_bytes(static_cast<double>(sz[i])).c_str(),
                    t[i] * 1e6, priced * 1e6, err * 100);
    }
  }
  const double coll_geo = geomean(cerrs), coll_max = *std::max_element(cerrs.begin(), cerrs.end());
  if (rank == 0) {
    std::printf("\nsteps: geomean |sim-real|/real %.1f%%, max %.1f%%, Kendall tau per (model, batch) min %.2f, "
                "over all %zu configurations %.2f\n",
                step_geo * 100, step_max * 100, tau_min, errs.size(), tau_all);
    std::printf("ordering: %d of %d pairs separated by the measurement (repeats' ranges apart), "
                "%d ordered alike by the model, %d opposite, %d priced equal: tau over them %.2f; within each "
                "(model, batch), the lowest %.2f\n",
                sep.pairs, sep.all_pairs, sep.concordant, sep.discordant, sep.model_ties, sep.tau, tau_sep_group_min);
    // Which ones: what a user reads to see where the model's ordering fails (measured range
    // over the repeats, simulated), at most 20.
    const size_t show = std::min<size_t>(sep.wrong.size(), 20);
    for (size_t k = 0; k < show; ++k) {
      const auto [i, j] = sep.wrong[k];
      std::printf("  %s: %s measured %.3f-%.3f ms, simulated %.3f; %s measured %.3f-%.3f, simulated %.3f\n",
                  k < static_cast<size_t>(sep.discordant) ? "opposite" : "priced equal", labels_all[i].c_str(),
                  lo_all[i] * 1e3, hi_all[i] * 1e3, sim_all[i] * 1e3, labels_all[j].c_str(), lo_all[j] * 1e3,
                  hi_all[j] * 1e3, sim_all[j] * 1e3);
    }
    if (sep.wrong.size() > show) std::printf("  ... and %zu more\n", sep.wrong.size() - show);
    std::printf("held out: geomean |sim-real|/real %.1f%%, max %.1f%% (%zu configurations the fit never measured)\n",
                held_geo * 100, held_max * 100, herrs.size());
    std::printf("collective levels: geomean error %.1f%%, max %.1f%% (%zu points)\n", coll_geo * 100,
                coll_max * 100, cerrs.size());
    if (!mouts.empty())
      std::printf("--model %s: geomean |sim-real|/real %.1f%%, max %.1f%% (%zu configurations); held out %.1f%%, "
                  "max %.1f%% (%zu)\n",
                  mnames.c_str(), geomean(merrs) * 100, *std::max_element(merrs.begin(), merrs.end()) * 100,
                  merrs.size(), geomean(mherrs) * 100, *std::max_element(mherrs.begin(), mherrs.end()) * 100,
                  mherrs.size());
    // The pair of cores' state: the same small message at calibration, before the steps and
    // before the op levels. A 2-vCPU guest's pair moves between states (the 4 KB message and
    // every op level below 4 MB 2-2.5x apart, minutes apart, on the Zen 5 reference), which no
    // profile prices: the errors then measure the move, not the model.
    const double cal = profile_pair_state_s(prof);
    std::printf("pair state: a 4 KB message one way %s at calibration, %.2f us before the steps, %.2f us "
                "before the op levels\n",
                cal > 0 ? (fmt_us(cal) + " us").c_str() : "(not in the profile)", state_steps * 1e6, state_ops * 1e6);
    double lo = std::min(state_steps, state_ops), hi = std::max(state_steps, state_ops);
    if (cal > 0) lo = std::min(lo, cal), hi = std::max(hi, cal);
    if (hi > 1.5 * lo)
      std::printf("warning: the pair's state moved %.1fx during calibration and validation: run both again "
                  "back to back\n", hi / lo);
    std::printf("load average: start %s, end %s\n", load0.c_str(), load_text().c_str());
    std::printf("RESULT validate steps_geomean_err=%.1f%% steps_max_err=%.1f%% tau_min=%.2f tau_all=%.2f "
                "tau_separated=%.2f tau_separated_group_min=%.2f separated_pairs=%d coll_geomean_err=%.1f%% "
                "coll_max_err=%.1f%% configs=%zu heldout_geomean_err=%.1f%% heldout_max_err=%.1f%% heldout_configs=%zu "
                "repeats=%d",
                step_geo * 100, step_max * 100, tau_min, tau_all, sep.tau, tau_sep_group_min, sep.pairs, coll_geo * 100,
                coll_max * 100, errs.size(), held_geo * 100, held_max * 100, herrs.size(), repeats);
    // The --model figures after the defaults', so that a reader of the line as it was finds
    // every field where it was.
    if (!mouts.empty())
      std::printf(" models=%s model_configs=%zu model_geomean_err=%.1f%% model_max_err=%.1f%% "
                  "model_heldout_configs=%zu model_heldout_geomean_err=%.1f%% model_heldout_max_err=%.1f%%",
                  mnames.c_str(), merrs.size(), geomean(merrs) * 100,
                  *std::max_element(merrs.begin(), merrs.end()) * 100, mherrs.size(), geomean(mherrs) * 100,
                  *std::max_element(mherrs.begin(), mherrs.end()) * 100);
    std::printf("\n");
  }
  return 0;
}

}  // namespace

namespace {
// A command-line count: the whole argument is one integer ("3x", "", "1e2" are refused;
// atoi read "3x" as 3).
int parse_cli_int(const std::string& opt, const std::string& text) {
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || v < INT_MIN || v > INT_MAX)
    throw UserError("calibrate", opt + ": expected an integer, got \"" + text + "\"");
  return static_cast<int>(v);
}

// The profile's directory, checked before minutes of measuring (the file itself is written
// by replace_file at the end, never through a link).
void check_profile_output(const std::string& out) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p = fs::absolute(out, ec);
  struct stat st {};
  if (::lstat(p.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw UserError("calibrate", "-o " + out + ": exists and is not a regular file (" +
                                     (S_ISDIR(st.st_mode) ? "a directory" : S_ISLNK(st.st_mode) ? "a symbolic link"
                                                                                                 : "a device, FIFO or socket") +
                                     "): the profile goes to a regular file");
  const fs::path dir = p.parent_path();
  if (!fs::is_directory(dir, ec))
    throw UserError("calibrate", "-o " + out + ": directory " + dir.string() + " does not exist");
  const fs::path probe = dir / (".wb-probe-" + std::to_string(::getpid()));
  const int fd = ::open(probe.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0)
    throw UserError("calibrate", "-o " + out + ": cannot create a file in " + dir.string() + ": " +
                                     std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}
}  // namespace

int calibrate_command(const std::vector<std::string>& args, MPI_Comm comm) {
  std::string out = "profile.json", val, device = "cpu";
  bool quick = false;
  // validate: 5 repeats. With 3 (one minute of turns) the ranges missed the machine's drift
  // over minutes: pairs a few percent apart counted as separated and swapped order from one
  // validation to the next (calib/reference-2core-zen5-2026-11-29b.validation*.txt).
  int steps = 300, repeats = -1;
  std::vector<std::string> given_models;  // --model, in the order given
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kHelp, stdout);
      return 0;
    } else if (a == "-o" || a == "--output") {
      if (i + 1 >= args.size()) throw UserError("calibrate", a + " needs a file name");
      out = args[++i];
    } else if (a == "--validate") {
      if (i + 1 >= args.size()) throw UserError("calibrate", a + " needs a profile file");
      val = args[++i];
    } else if (a == "--steps") {
      if (i + 1 >= args.size()) throw UserError("calibrate", a + " needs a number");
      steps = parse_cli_int(a, args[++i]);
      if (steps < 50) throw UserError("calibrate", "--steps must be >= 50");
    } else if (a == "--repeats") {
      if (i + 1 >= args.size()) throw UserError("calibrate", a + " needs a number");
      repeats = parse_cli_int(a, args[++i]);
      if (repeats < 1 || repeats > 100) throw UserError("calibrate", "--repeats must be in [1, 100]");
    } else if (a == "--model") {
      if (i + 1 >= args.size())
        throw UserError("calibrate", a + " needs a model config (JSON, as a spec's \"model\" takes it)");
      given_models.push_back(args[++i]);
    } else if (a == "--quick") {
      quick = true;
    } else if (a == "--device") {
      if (i + 1 >= args.size()) throw UserError("calibrate", a + " needs a device name (cpu, cuda)");
      device = args[++i];
    } else {
      throw UserError("calibrate", "unknown argument " + a + " (see workbench calibrate --help)");
    }
  }
  const std::vector<CalibModel> cmodels = model_list(given_models);
  if (!val.empty()) return validate(val, steps, repeats < 0 ? 5 : repeats, device, cmodels, comm);
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  comm::agree_on_errors(comm, [&] {
    if (rank == 0) check_profile_output(out);
  });
  return calibrate(out, quick, quick ? 1 : repeats < 0 ? 3 : repeats, device, cmodels, comm);
}

}  // namespace wb::app
