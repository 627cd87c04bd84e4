// The cost model behind the simulated clock (DESIGN.md section 12). The workload only issues
// compute ("worker k ran a batch of this model") and communication ("an Adasum over W workers
// of n bytes in S pieces"); a CostModel prices them. This is the split of ASTRA-sim's network
// API (Won et al., "ASTRA-sim2.0: Modeling Hierarchical Networks and Disaggregated Systems
// for Large-model Training at Scale", arXiv:2303.14006, section 3): the workload layer never
// writes a formula, so a calibrated profile replaces the default without touching algorithms.
//
// Two models:
//  - FormulaCostModel (the default, no profile): ClockParams' hand-set alpha-beta numbers and
//    one formula for EVERY collective -- 2 ceil(log2 W) alpha + 2 (W-1)/W bytes / beta, the
//    bandwidth-optimal allreduce bound -- and batch_latency_s + flops / flops_per_s per
//    batch. Specs without a profile are priced by it; it stays bit for bit as it is, so
//    their sim_s do not move.
//  - ProfileCostModel (`"clock": {"profile": "calib/x.json"}`): measured or published numbers.
//    Each op prices itself with its own algorithm (comm/collectives.h), built from per-level
//    costs that are piecewise alpha-beta in the message size, per link class:
//      allreduce / weighted average: recursive vector-halving distance-doubling over
//        P = 2^floor(log2 W) positions (+ fold and unfold of n bytes when W is not a power
//        of two): level l on a slice of n / 2^l bytes costs level_op(n / 2^l); an
//        allreduce's average adds its division pass (n / elem_bytes elements at
//        average_divide_s_per_float), the level being timed as a sum;
//      Adasum: the same levels, except buffers <= 32 KB take recursive doubling (the whole
//        vector every level: L x level(n)), the aligned schedule's levels cost their most
//        uneven slice (CommCall::level_bytes), and the split schedule adds the dot-product
//        rounds: level l's group of 2^(l+1) positions sums 3 doubles per piece by recursive
//        doubling, l + 1 latency-bound messages of 24 S bytes, of which the 2-rank level
//        table already holds the first;
//      broadcast: a binomial tree, ceil(log2 W) messages of n bytes;
//      point-to-point: one message.
//    level l pairs positions 2^l apart, so it stays inside a simulated node while
//    2^(l+1) <= node_size and crosses nodes above (link class intra or cross).
//    Compute of model m: fixed_s + per_sample_s x samples per batch (the papers' GPUs are
//    not FLOP-bound at small batches: a per-batch fixed cost dominates there), samples =
//    flops / the model's nominal flops per sample (the sparse MLP's batches differ), per
//    batch-size segment: CostProfile::compute key "m#MAX" holds batches <= MAX ("m#inf"
//    the rest; a plain "m" all of them), compute_key() / compute_segments() in the .cpp.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/params.h"

namespace wb::sim {

enum class CommOp { kAllreduce, kAdasum, kWeightedAverage, kBroadcast, kP2P };
const char* comm_op_name(CommOp op);

// Which cross-worker schedule an Adasum takes (comm/rvhdd.h chooses the same
// way): whole vector per level (<= 32 KB), halving on tensor boundaries (no coefficient
// round), or the general split with one coefficient allreduce per level.
enum class AdasumSchedule { kWhole, kAligned, kSplit };

// One communication the workload issued, as the cost model sees it.
struct CommCall {
  CommOp op = CommOp::kAllreduce;
  int workers = 1;      // W taking part (collectives); unused for kP2P
  double bytes = 0;     // the vector's size in bytes (per worker)
  int pieces = 1;       // Adasum: tensors (coefficient triples per level)
  AdasumSchedule schedule = AdasumSchedule::kAligned;
  int from = 0, to = 0;  // kP2P: the two workers
  int elem_bytes = 4;    // bytes of one element (the per-element passes)
  // kAllreduce: the sum divided by W afterwards (ReduceOp::kAverage), one pass over the
  // vector on every worker that a sum does not make.
  bool average = false;
  // kAdasum, aligned schedule: the bytes level l prices, 2 x the larger half of the level's
  // most uneven slice (tensor boundaries move a halving point up to 64 KB off the middle:
  // LeNet-5's 87 KB split 21 KB / 66 KB at two ranks, and the pair's step lasts as long as
  // its larger half). Empty: the even halves, bytes / 2^l.
  std::span<const double> level_bytes;
};

// t(bytes) = alpha_s + beta_s_per_byte x bytes for bytes <= max_bytes (segments sorted by
// max_bytes; the last one extends to infinity).
struct AlphaBetaSegment {
  double max_bytes = 0;
  double alpha_s = 0;
  double beta_s_per_byte = 0;
};
struct Piecewise {
  std::vector<AlphaBetaSegment> segments;
  bool empty() const { return segments.empty(); }
  double operator()(double bytes) const;
};

// Per-model compute: one batch of b samples costs fixed_s + per_sample_s x b.
struct ComputeCost {
  double fixed_s = 0;
  double per_sample_s = 0;
};

// A batch's cost split into the part that uses no device throughput (latency: overlapped by
// concurrent updaters on one device, SimClock::shared_compute_s) and the busy part.
struct BatchCost {
  double latency_s = 0;
  double busy_s = 0;
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  // One nominal (speed 1, no jitter) batch of model `model` costing `flops`, which is
  // `samples` samples at the model's nominal flops per sample.
  virtual BatchCost batch(const std::string& model, double flops, double samples) const = 0;
  // Simulated seconds of one communication; node_size: workers per simulated node (0 = one
  // node for all).
  virtual double comm_s(const CommCall& c, int64_t node_size) const = 0;
  // Seconds one updater spends on a model shared with concurrent updaters besides its
  // gradient pass (LAP/LPP-SGD, Hogwild style): reading `floats_read` elements of the
  // shared model element by element and adding `floats_written` elements into it with
  // atomic read-modify-writes (a CAS loop per float on x86). Unpriced (0) unless a profile
  // measured it (CostProfile::shared_model).
  virtual double shared_model_s(double floats_read, double floats_written) const {
    (void)floats_read;
    (void)floats_written;
    return 0;
  }
  // Seconds of a worker's compute device that the runner's thread takes from its updaters
  // (LAP/LPP-SGD real mode) for `rounds` averaging rounds and `steps` runner steps of a
  // shared model of `floats` elements, a round's collective taking `collective_s`: per round
  // the snapshot (read), the conversion of the average (a pass: read), the apply (atomic
  // add) and the collective itself (in one node MPI moves the bytes with the CPU); per step
  // the copy published to the runner (read). 0 where the runner runs beside the compute
  // (spare cores, or a GPU computing): only a profile measured on a machine whose ranks have
  // no core to spare (SharedModelCost::rounds_share_core) prices it.
  virtual double runner_device_s(double floats, double rounds, double steps, double collective_s) const {
    (void)floats;
    (void)rounds;
    (void)steps;
    (void)collective_s;
    return 0;
  }
  // Seconds of `passes` streaming element-wise passes over `floats` floats of one worker's
  // buffers (y[i] = f(a[i], b[i]), e.g. Adasum's delta w - start), work an algorithm does
  // besides the training pass and the collectives. Unpriced (0) unless a profile measured
  // it (CostProfile::elementwise_s_per_float): specs without one keep their simulated times.
  virtual double elementwise_s(double floats, double passes) const {
    (void)floats;
    (void)passes;
    return 0;
  }
  virtual std::string describe() const = 0;
};

struct ClockParams;  // clock.h

class FormulaCostModel final : public CostModel {
 public:
  FormulaCostModel(double flops_per_s, double batch_latency_s, double latency_s,
                   double bandwidth, double intra_latency_s, double intra_bandwidth)
      : flops_per_s_(flops_per_s),
        batch_latency_s_(batch_latency_s),
        latency_s_(latency_s),
        bandwidth_(bandwidth),
        intra_latency_s_(intra_latency_s),
        intra_bandwidth_(intra_bandwidth) {}
  BatchCost batch(const std::string& model, double flops, double samples) const override;
  double comm_s(const CommCall& c, int64_t node_size) const override;
  std::string describe() const override { return "formula (ClockParams alpha-beta)"; }

 private:
  double flops_per_s_, batch_latency_s_, latency_s_, bandwidth_, intra_latency_s_,
      intra_bandwidth_;
};

// A profile file (what `workbench calibrate` writes; calib/*.json).
// Per-float costs of a shared model's element-wise access (CostModel::shared_model_s),
// measured by `workbench calibrate` in situ: LAP-SGD real-mode runs time their own loops in
// thread CPU time (workers/shared_*_ns_per_float), weighted over the models by their floats.
struct SharedModelCost {
  double read_s_per_float = 0;        // relaxed atomic load of one float
  double atomic_add_s_per_float = 0;  // relaxed atomic fetch_add of one float (CAS loop)
  // The calibrating machine had at most one core per rank: the runner's rounds and steps
  // take the core from the updaters (CostModel::runner_device_s).
  bool rounds_share_core = false;
};

struct CostProfile {
  std::string machine;  // free text: where and how it was measured or taken from
  std::string source;
  int ranks = 0;        // ranks the collective levels were measured with (2 = one level)
  // link class ("intra", "cross") -> op ("p2p", "allreduce", "adasum", "adasum_split",
  // "weighted_average", "broadcast") -> one level's cost
  std::map<std::string, std::map<std::string, Piecewise>> links;
  std::map<std::string, ComputeCost> compute;  // "model#MAX" (or "model") -> per-batch cost
  // "compute_models": model name -> the model config (a spec's "model" value, resolved: every
  // parameter) its compute entry was measured on, as `workbench calibrate` records it. Compute
  // is looked up by the name alone, and a gpt of d_model 128 is not the one measured at 64:
  // the planner refuses a run whose model config differs (app/plan/run_plan.cpp
  // check_profile_model). A name without an entry (profiles written before calibrate
  // recorded them, published figures) is priced by its name as before.
  std::map<std::string, json> compute_models;
  SharedModelCost shared_model;                 // "shared_model" (optional: 0 = unpriced)
  // Whether a batch's fixed_s is latency that concurrent updaters on one device overlap (a
  // GPU's launches and transfers: true, the default) or work of the device itself (a CPU
  // core computes it: false, what `workbench calibrate` writes for --device cpu).
  // "compute_fixed_overlaps"; SimClock::shared_compute_s.
  bool compute_fixed_overlaps = true;
  // "elementwise": {"s_per_float": x}: one streaming element-wise pass (two reads, one write)
  // per float of a model-sized buffer; `workbench calibrate` times Adasum's delta passes at
  // each model's size (CostModel::elementwise_s). 0 = unpriced.
  double elementwise_s_per_float = 0;
  // "average_divide": {"s_per_float": x}: the pass that divides an allreduce's sum by W
  // (CommCall::average), per float; `workbench calibrate` times it at each model's size and
  // then times the allreduce level as a sum. 0 = unpriced: profiles written before it timed
  // their allreduce level with the division inside.
  double average_divide_s_per_float = 0;
  json extra;  // fit residuals and notes, carried through unchanged
};

// Reads and checks a profile; a bad file is one UserError naming the file and JSON path.
CostProfile load_cost_profile(const std::string& path);
json cost_profile_json(const CostProfile& p);
// A profile as a sweep prices with it: read once per process (the first time a path is asked
// for; every later run start and check gets these same values, so a file edited mid-sweep
// never mixes two profiles' sim_s under one config), with the FNV-1a 64 hash of the bytes
// read (16 hex digits), which each run records (clock.profile_fnv1a64 in its config_json) and
// --resume compares.
struct LoadedCostProfile {
  CostProfile profile;
  std::string fnv1a64;
};
const LoadedCostProfile& cached_cost_profile(const std::string& path);
// The UserError a run of `model` would meet at its first step: the profile at `path` has no
// compute entry for it (checked by `validate` and the dry run for every run).
void check_profile_compute(const std::string& path, const std::string& model);

class ProfileCostModel final : public CostModel {
 public:
  explicit ProfileCostModel(CostProfile p, std::string path)
      : p_(std::move(p)), path_(std::move(path)) {}
  BatchCost batch(const std::string& model, double flops, double samples) const override;
  double comm_s(const CommCall& c, int64_t node_size) const override;
  double shared_model_s(double floats_read, double floats_written) const override {
    return floats_read * p_.shared_model.read_s_per_float +
           floats_written * p_.shared_model.atomic_add_s_per_float;
  }
  double runner_device_s(double floats, double rounds, double steps, double collective_s) const override {
    if (!p_.shared_model.rounds_share_core) return 0.0;
    return rounds * (shared_model_s(2 * floats, floats) + collective_s) + steps * shared_model_s(floats, 0);
  }
  double elementwise_s(double floats, double passes) const override {
    return passes * floats * p_.elementwise_s_per_float;
  }
  std::string describe() const override { return "profile " + path_; }
  const CostProfile& profile() const { return p_; }
  // One level of `op` on `bytes` over link class `link` (falls back to "intra" when the
  // profile has no "cross" class: a one-node machine).
  double level_s(const std::string& link, const std::string& op, double bytes) const;

 private:
  CostProfile p_;
  std::string path_;
};

// Ordinary least squares of t = alpha + beta x bytes over the points whose bytes fall in
// each segment (breaks: the segments' upper ends, ascending; the last is open). A segment
// with fewer than 2 distinct sizes gets beta from its neighbour-free mean (alpha = mean,
// beta = 0). residuals: (t_fit - t) / t per point, in input order.
// nonneg: least squares with alpha >= 0 and beta >= 0 in every segment (nonneg_line), for
// costs that cannot be negative (compute's per-batch fixed cost and per-sample cost).
Piecewise fit_piecewise(const std::vector<double>& bytes, const std::vector<double>& seconds,
                        const std::vector<double>& breaks, std::vector<double>* residuals,
                        bool nonneg = false);
// Segments chosen by the data (a link's levels): the contiguous split of the points, sorted by
// bytes, into at most max_segments segments of at least min_points points each that
// minimizes the summed squared relative residuals, each segment's line fitted by least
// squares on the relative residual (rel_line). Fixed breaks put MPI's eager/rendezvous switch
// inside a segment wherever the machine has it elsewhere (MPICH over UCX on the Zen 5
// reference: between 16 and 32 KB for an allreduce level, and a line through 1-32 KB priced
// 16 KB at +86%). A break lies at the geometric mean of the sizes either side of it.
// residuals as in fit_piecewise.
Piecewise fit_piecewise_auto(const std::vector<double>& bytes, const std::vector<double>& seconds,
                             size_t max_segments, size_t min_points, std::vector<double>* residuals);
// One segment: least squares of t = a + b x on the relative residual (a + b x - t) / t
// (weights 1 / t^2): what the validation's |priced - measured| / measured asks of a line
// through sizes three decades apart. b >= 0 (a falling segment is its weighted mean).
std::pair<double, double> rel_line(const std::vector<double>& x, const std::vector<double>& t);
// One segment: OLS of t = a + b x over (x, t); returns {a, b}.
std::pair<double, double> ols_line(const std::vector<double>& x, const std::vector<double>& t);
// One segment: least squares of t = a + b x subject to a >= 0, b >= 0. When the OLS line
// breaks a bound, the optimum lies on that bound (a convex quadratic over a quadrant): the
// better of the line through the origin (a = 0, b = sum xt / sum xx) and the constant
// (b = 0, a = mean t). Clamping the OLS intercept to 0 and keeping its slope instead (what
// calibrate did before) shifts the whole line: LeNet-5's (32, inf] batch segment on a Zen 5
// (2.02 ms at 64, 4.73 at 128: OLS intercept -0.69 ms) was priced 34% and 14% high.
std::pair<double, double> nonneg_line(const std::vector<double>& x, const std::vector<double>& t);

}  // namespace wb::sim
