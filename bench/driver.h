// The one benchmark driver (DESIGN.md section 10, nccl-tests style): every bench in bench/
// describes what it measures as Ops and leaves timing, repetitions, correctness checks,
// bandwidth, argument parsing and the RESULT line to this file, so that all benches time
// and report the same way.
//
// A bench main is
//   int main(int argc, char** argv) {
//     return wb::bench::bench_main(argc, argv, {"bench_x", "what it measures", {flags...}},
//                                  [](const wb::bench::Args& args) {
//       std::vector<Op> ops = {...};                     // one descriptor per operation
//       const auto m = measure(ops, Timing{...});        // check once, then timed repetitions
//       return Result().add("key", value, 3).finish(total_wrong(m));   // the last line
//     });
//   }
//
// Order per measure() call: for every op init(), one call (the correctness call), check(),
// `warmup` untimed calls; then repetitions in which the ops take turns (so load from other
// processes on a shared machine hits them alike): reset(), then timed calls. Output is plain text
// (no terminal escapes, whatever stdout is), so that scripts reading `^RESULT ` find the line in a
// file or a pipe.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace wb::bench {

// Wall-clock seconds (steady clock).
double now_s();

// One measured operation.
struct Op {
  std::string name;
  double bytes = 0;             // bytes one call moves: algbw = bytes / time (0: not a transfer)
  double items = 0;             // work items one call does (samples, steps): rate = items / time
  double bus_factor = 1;        // busbw = algbw * bus_factor (nccl-tests: allreduce 2(R-1)/R)
  std::function<void()> init;   // fresh inputs, once, before the correctness call
  std::function<void()> run;    // the operation, one call
  std::function<long()> check;  // after init + run: how many values are wrong (0 passes)
  std::function<void()> reset;  // before every repetition, untimed: undo what run() consumed
  // When set, replaces timing run(): one call that measures itself and returns seconds per
  // call (CUDA events; a training run timed between its curve rows, setup excluded).
  std::function<double()> self_timed;
};

enum class Stat { kBest, kMedian };

struct Timing {
  int reps = 5;           // at least this many repetitions ...
  double budget_s = 0;    // ... and at least this many seconds of timed calls, all ops together
  int max_reps = 1000;    // ... but never more
  int iters = 1;          // calls per repetition at least; time = mean per call
  double min_time_s = 0;  // and calls until this long (local ops only: ranks would disagree)
  int warmup = 0;         // untimed calls after the correctness call (once per op)
  Stat stat = Stat::kBest;
  // Ranks that run the ops together: barrier before each timed repetition, the slowest
  // rank's time counts, wrong values are summed over ranks. MPI_COMM_NULL: this rank alone.
  MPI_Comm comm = MPI_COMM_NULL;
};

struct Measured {
  double seconds = 0;  // wall time per call: best or median over the repetitions
  // CPU time of this process per call in that repetition (0 when self-timed): on a shared
  // machine, wall time well above it means the op waited for a core.
  double cpu_seconds = 0;
  long wrong = 0;  // over all ranks of Timing::comm
  int reps = 0;
  double rate(const Op& op) const { return seconds > 0 ? op.items / seconds : 0; }
  double algbw(const Op& op) const { return seconds > 0 ? op.bytes / seconds / 1e9 : 0; }
  double busbw(const Op& op) const { return algbw(op) * op.bus_factor; }
};

// Check every op once, then time them in interleaved repetitions. Every rank of t.comm
// must call it with the same ops; the repetition count is agreed (rank-reduced times).
std::vector<Measured> measure(std::span<Op> ops, const Timing& t);

long total_wrong(std::span<const Measured> m);

// A barrier that sleeps instead of spinning (MPI_Ibarrier, then MPI_Test every 1 ms). Ranks
// idling while rank 0 measures alone would otherwise busy-poll (MPICH does): they take a
// core from it, and the CPU time they run up makes the scheduler slow to run them again
// when the ranks next measure together (milliseconds per small allreduce afterwards).
void wait_quietly(MPI_Comm comm);

// nccl-tests' bus bandwidth factors: what each rank's link carries relative to algbw.
inline double allreduce_bus_factor(int ranks) {
  return ranks > 1 ? 2.0 * (ranks - 1) / ranks : 0.0;
}
inline double broadcast_bus_factor(int ranks) {
  return ranks > 1 ? 1.0 : 0.0;
}

// Values of x off the reference by more than atol + rtol*|ref| (NaN counts as off).
long count_off(std::span<const float> x, std::span<const float> ref, double atol, double rtol);
double max_abs(std::span<const float> v);

// Message sizes min, 2*min, ... <= max (nccl-tests -b/-e/-f 2).
std::vector<size_t> doubling_sizes(size_t min_bytes, size_t max_bytes);

// ------------------------------------------------------------------ reports
// A sweep table, one row per size, in the format bench_collectives has always printed
// (analysis/psgd_analysis/adasum_latency.py parses it): per op "time(us) algbw busbw #wrong",
// then ratios of op times.
struct Ratio {
  std::string label;
  size_t num = 0, den = 0;  // indices into the ops
};
// Printed by rank 0 only; the two header lines come with the first row.
class SweepTable {
 public:
  SweepTable(std::vector<std::string> titles, std::vector<Ratio> ratios);
  void row(size_t bytes, size_t count, std::span<const Op> ops, std::span<const Measured> m);

 private:
  std::vector<std::string> titles_;
  std::vector<Ratio> ratios_;
  bool header_done_ = false;
};
// A plain table for the other benches: op, repetitions, wall and CPU time per call, rate,
// #wrong.
void print_table(std::span<const Op> ops, std::span<const Measured> m,
                 const std::string& rate_unit = "items/s");

// The machine-readable last line: "RESULT k=v k=v ...", printed by rank 0 only.
class Result {
 public:
  Result& add(const std::string& key, double value, int decimals);
  Result& add(const std::string& key, long value);
  Result& add(const std::string& key, const std::string& value);
  // Adds wrong=<n> as the last key, prints the line (rank 0) and returns the exit status
  // (exit_code(wrong)): the last statement of a bench body.
  int finish(long wrong);
  void print() const;
  std::string line() const;

 private:
  std::vector<std::pair<std::string, std::string>> kv_;
};

// ------------------------------------------------------------------ command line
// A numeric flag "--name V" or "--name=V" with its normal and --smoke values.
struct Flag {
  std::string name;  // without the dashes
  double value = 0;
  double smoke = 0;
  std::string doc;
};
struct Usage {
  std::string program, about;
  std::vector<Flag> flags;
};

class Args {
 public:
  // Shared flags: --smoke (a few seconds: tiny sizes, one repetition; what ctest runs)
  // and --help. Throws std::invalid_argument on an unknown flag or a bad value.
  Args(int argc, char** argv, const Usage& usage);
  double num(const std::string& name) const;
  int integer(const std::string& name) const { return static_cast<int>(num(name)); }
  size_t size(const std::string& name) const { return static_cast<size_t>(num(name)); }
  bool smoke() const { return smoke_; }
  bool help() const { return help_; }
  static std::string usage_text(const Usage& u);

 private:
  std::vector<Flag> flags_;
  bool smoke_ = false, help_ = false;
};

// MPI_Init, the arguments, body, MPI_Finalize. Exit codes: body's (exit_code(): 1 when a
// check failed), 2 for a bad command line or an exception (one line on stderr), 0 for --help.
int bench_main(int argc, char** argv, const Usage& usage,
               const std::function<int(const Args&)>& body);
inline int exit_code(long wrong) {
  return wrong == 0 ? 0 : 1;
}

}  // namespace wb::bench
