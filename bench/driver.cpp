// The benchmark driver (see driver.h). Linked into every bench executable; not a bench of
// its own (CMakeLists.txt globs bench/bench_*.cpp only).
#include "bench/driver.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <map>
#include <stdexcept>
#include <thread>

namespace wb::bench {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

namespace {

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

// One untimed call (the correctness call, warm-up).
void call(Op& op) {
  if (op.self_timed)
    op.self_timed();
  else
    op.run();
}

// Seconds of CPU this process has used (all its threads).
double cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Rep {
  double seconds = 0, cpu_seconds = 0;  // per call
  long calls = 0;
};

// One timed repetition of op.
Rep timed(Op& op, const Timing& t) {
  if (op.self_timed) return {op.self_timed(), 0, 1};
  const double c0 = cpu_s(), t0 = now_s();
  long calls = 0;
  for (; calls < t.iters; ++calls) op.run();
  double elapsed = now_s() - t0;
  while (elapsed < t.min_time_s) {  // a clock read per call only when running to a time
    op.run();
    ++calls;
    elapsed = now_s() - t0;
  }
  const double n = static_cast<double>(calls);
  return {elapsed / n, (cpu_s() - c0) / n, calls};
}

// The repetition that stands for the op: the fastest or the median one (by wall time).
Rep statistic(std::vector<Rep> v, Stat s) {
  if (v.empty()) return {};
  const auto faster = [](const Rep& a, const Rep& b) { return a.seconds < b.seconds; };
  if (s == Stat::kBest) return *std::min_element(v.begin(), v.end(), faster);
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end(), faster);
  return v[v.size() / 2];
}

}  // namespace

std::vector<Measured> measure(std::span<Op> ops, const Timing& t) {
  const bool mpi = t.comm != MPI_COMM_NULL;
  // With several ranks a call count set by each rank's own clock would leave some rank
  // waiting in a collective that the others never enter.
  if (mpi && t.min_time_s > 0) throw std::logic_error("measure: min_time_s with a communicator");
  std::vector<Measured> m(ops.size());
  for (size_t k = 0; k < ops.size(); ++k) {
    Op& op = ops[k];
    if (op.init) op.init();
    call(op);
    long wrong = op.check ? op.check() : 0;
    if (mpi) MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG, MPI_SUM, t.comm);
    m[k].wrong = wrong;
    for (int w = 0; w < t.warmup; ++w) call(op);
  }
  std::vector<std::vector<Rep>> reps(ops.size());
  double spent = 0;  // from rank-reduced times: every rank takes the same stopping decision
  for (int r = 0; r < t.max_reps && (r < t.reps || spent < t.budget_s); ++r) {
    for (size_t k = 0; k < ops.size(); ++k) {
      Op& op = ops[k];
      if (op.reset) op.reset();
      if (mpi) MPI_Barrier(t.comm);
      Rep rep = timed(op, t);
      if (mpi) MPI_Allreduce(MPI_IN_PLACE, &rep.seconds, 1, MPI_DOUBLE, MPI_MAX, t.comm);
      reps[k].push_back(rep);
      spent += rep.seconds * static_cast<double>(rep.calls);
    }
  }
  for (size_t k = 0; k < ops.size(); ++k) {
    const Rep r = statistic(reps[k], t.stat);
    m[k].seconds = r.seconds;
    m[k].cpu_seconds = r.cpu_seconds;
    m[k].reps = static_cast<int>(reps[k].size());
  }
  return m;
}

void wait_quietly(MPI_Comm comm) {
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_Ibarrier(comm, &req);
  for (int done = 0;;) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

long total_wrong(std::span<const Measured> m) {
  long w = 0;
  for (const Measured& x : m) w += x.wrong;
  return w;
}

long count_off(std::span<const float> x, std::span<const float> ref, double atol, double rtol) {
  long bad = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double r = ref[i], d = std::fabs(static_cast<double>(x[i]) - r);
    if (!(d <= atol + rtol * std::fabs(r))) ++bad;
  }
  return bad;
}

double max_abs(std::span<const float> v) {
  double mx = 0;
  for (float r : v) mx = std::max(mx, std::fabs(static_cast<double>(r)));
  return mx;
}

std::vector<size_t> doubling_sizes(size_t min_bytes, size_t max_bytes) {
  std::vector<size_t> s;
  for (size_t b = std::max<size_t>(min_bytes, 1); b <= max_bytes; b *= 2) s.push_back(b);
  return s;
}

// ------------------------------------------------------------------ reports

SweepTable::SweepTable(std::vector<std::string> titles, std::vector<Ratio> ratios)
    : titles_(std::move(titles)), ratios_(std::move(ratios)) {}

void SweepTable::row(size_t bytes, size_t count, std::span<const Op> ops,
                     std::span<const Measured> m) {
  if (world_rank() != 0) return;
  if (!header_done_) {
    header_done_ = true;
    std::printf("#%11s %10s |", "", "");
    for (const std::string& t : titles_) std::printf(" %28s |", t.c_str());
    for (size_t i = 0; i < ratios_.size(); ++i) std::printf(" %6s", "");
    std::printf("\n#%11s %10s |", "size(B)", "count");
    for (size_t k = 0; k < ops.size(); ++k)
      std::printf(" %9s %6s %6s %4s |", "time", "algbw", "busbw", "#wr");
    for (const Ratio& r : ratios_) std::printf(" %6s", r.label.c_str());
    std::printf("\n");
  }
  std::printf(" %11zu %10zu |", bytes, count);
  for (size_t k = 0; k < ops.size(); ++k)
    std::printf(" %9.1f %6.2f %6.2f %4ld |", m[k].seconds * 1e6, m[k].algbw(ops[k]),
                m[k].busbw(ops[k]), m[k].wrong);
  for (const Ratio& r : ratios_) std::printf(" %6.3f", m[r.num].seconds / m[r.den].seconds);
  std::printf("\n");
  std::fflush(stdout);
}

void print_table(std::span<const Op> ops, std::span<const Measured> m,
                 const std::string& rate_unit) {
  std::printf("#%-33s %5s %12s %12s %14s %7s\n", "op", "reps", "ms/call", "cpu ms/call",
              rate_unit.c_str(), "#wrong");
  for (size_t k = 0; k < ops.size(); ++k)
    std::printf(" %-33s %5d %12.3f %12.3f %14.1f %7ld\n", ops[k].name.c_str(), m[k].reps,
                m[k].seconds * 1e3, m[k].cpu_seconds * 1e3, m[k].rate(ops[k]), m[k].wrong);
  std::fflush(stdout);
}

Result& Result::add(const std::string& key, double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  kv_.emplace_back(key, buf);
  return *this;
}

Result& Result::add(const std::string& key, long value) {
  kv_.emplace_back(key, std::to_string(value));
  return *this;
}

Result& Result::add(const std::string& key, const std::string& value) {
  kv_.emplace_back(key, value);
  return *this;
}

std::string Result::line() const {
  std::string s = "RESULT";
  for (const auto& [k, v] : kv_) s += " " + k + "=" + v;
  return s;
}

int Result::finish(long wrong) {
  add("wrong", wrong);
  print();
  return exit_code(wrong);
}

void Result::print() const {
  if (world_rank() != 0) return;
  std::printf("%s\n", line().c_str());
  std::fflush(stdout);
}

// ------------------------------------------------------------------ command line

Args::Args(int argc, char** argv, const Usage& usage) : flags_(usage.flags) {
  std::map<std::string, double> given;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--smoke") {
      smoke_ = true;
      continue;
    }
    if (a == "--help" || a == "-h") {
      help_ = true;
      continue;
    }
    if (a.rfind("--", 0) != 0) throw std::invalid_argument("unexpected argument '" + a + "'");
    std::string name = a.substr(2), value;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      throw std::invalid_argument("--" + name + " needs a value");
    }
    const bool known =
        std::any_of(flags_.begin(), flags_.end(), [&](const Flag& f) { return f.name == name; });
    if (!known) throw std::invalid_argument("unknown flag --" + name);
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0')
      throw std::invalid_argument("--" + name + ": not a number: '" + value + "'");
    given[name] = v;
  }
  for (Flag& f : flags_) {
    if (auto it = given.find(f.name); it != given.end())
      f.value = it->second;
    else if (smoke_)
      f.value = f.smoke;
  }
}

double Args::num(const std::string& name) const {
  for (const Flag& f : flags_)
    if (f.name == name) return f.value;
  throw std::logic_error("bench: flag --" + name + " was not declared");
}

std::string Args::usage_text(const Usage& u) {
  std::string s = "usage: " + u.program + " [--smoke] [--help]";
  for (const Flag& f : u.flags) s += " [--" + f.name + " N]";
  s += "\n" + u.about + "\n";
  char buf[256];
  for (const Flag& f : u.flags) {
    std::snprintf(buf, sizeof buf, "  --%-12s %s (default %g, --smoke %g)\n", f.name.c_str(),
                  f.doc.c_str(), f.value, f.smoke);
    s += buf;
  }
  s += "  --smoke        a few seconds: tiny sizes, one repetition, correctness still checked\n";
  return s;
}

int bench_main(int argc, char** argv, const Usage& usage,
               const std::function<int(const Args&)>& body) {
  MPI_Init(&argc, &argv);
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const bool root = world_rank() == 0;
  int rc = 0;
  try {
    const Args args(argc, argv, usage);
    if (args.help()) {
      if (root) std::printf("%s", Args::usage_text(usage).c_str());
    } else {
      rc = body(args);
    }
  } catch (const std::invalid_argument& e) {
    if (root)
      std::fprintf(stderr, "%s: %s\n%s", usage.program.c_str(), e.what(),
                   Args::usage_text(usage).c_str());
    rc = 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", usage.program.c_str(), e.what());
    // The other ranks may wait in a collective this rank will never enter.
    if (ranks > 1) MPI_Abort(MPI_COMM_WORLD, 2);
    rc = 2;
  }
  MPI_Finalize();
  return rc;
}

}  // namespace wb::bench
