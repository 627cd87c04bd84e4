// bench_collectives: comm/ on the benchmark driver (DESIGN.md R4).
//
//   mpirun -n 2 build/bench_collectives [--min-bytes B] [--max-bytes B] [--reps N] [--smoke]
//
// Part 1 (MPI, one logical worker per rank, W = R): for every size 4 KB .. 64 MB (fp32,
// fused into 64 tensors of uneven size as in arXiv:2006.02924 4.2.3) it times
//   mpi   MPI_Allreduce(MPI_SUM), the MPI library's own,
//   sum   Collectives::allreduce(kSum)   (in-rank tree + RVHDD, bit-identical to the tree
//   reference) ada   Collectives::adasum            (RVHDD Adasum, Algorithm 1 of
//   MLSys 2021)
// time = best over >= --reps repetitions (and >= 1 s of timed calls per size; the ops take
// turns inside each repetition, so load from other processes hits them alike) of the mean
// over `iters` back-to-back calls, each repetition's time being the slowest rank's; algbw =
// bytes / time; busbw = algbw * 2(R-1)/R (nccl-tests' allreduce convention). Every op is
// also run once on fresh inputs and checked against comm/reference.h on every rank: #wrong
// counts elements off by more than 1e-6 * max|ref| + 1e-5 * |ref| (must be 0).
// ratio = ada time / mpi time.
//
// Part 2 (in-process, rank 0, MPI_COMM_SELF): W = 8 and 64 logical workers on one rank,
// Adasum over W buffers of n floats each. Fair byte count: the op must read W*n*4 bytes
// and write W*n*4 bytes (the result lands in every worker's buffer), exactly what a
// memcpy of W*n*4 bytes moves. So GB/s = W*n*4 / time for both, and
// fraction = memcpy time / Adasum time (1.0 = as fast as copying the inputs once).
// The RESULT line reports the fraction for W = 64 at the largest total size.
//
// Part 3 (MPI, as part 1): the other two collectives the algorithms use, each beside the
// MPI call it is built on:
//   mpi    MPI_Allreduce(MPI_SUM) on the same floats
//   wavg   Collectives::weighted_average (weights 1, 2, ..: double partials, so twice the
//          bytes on the wire; busbw with the allreduce factor on the float bytes)
//   bcast  MPI_Bcast from rank 0
//   wbcast Collectives::broadcast from worker 0 (busbw = algbw, nccl-tests' broadcast)
// checked against weighted_average_reference and worker 0's input.
//
// Last line (machine readable):
//   RESULT adasum_over_mpi_4KB=<x> mpi_allreduce_4KB_us=<us: on a 2-core VM the pair of
//          cores runs it in ~0.8 or ~2 us, and small ratios follow that state>
//          adasum_over_mpi_max_ratio_lt_64KB=<x> adasum_over_mpi_64KB=<x>
//          adasum_over_mpi_max_ratio_ge_64KB=<x>
//          adasum_over_mpi_max_ratio_ge_1MB=<x> inproc_adasum_bw_fraction_small=<x (W=64, 1/16
//          of the largest total)> inproc_adasum_bw_fraction=<x (W=64, largest total)>
//          weighted_average_over_mpi_max_ratio_ge_64KB=<x>
//          weighted_average_over_mpi_max_ratio_ge_1MB=<x> broadcast_over_mpi_max_ratio_ge_1MB=<x>
//          wrong=<n>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/bench_inputs.h"
#include "bench/driver.h"
#include "comm/collectives.h"
#include "comm/reference.h"

using wb::bench::Measured;
using wb::bench::Op;
using wb::comm::Collectives;
using wb::comm::ReduceOp;
using wb::comm::Segment;

namespace {

constexpr size_t kOneMB = size_t{1} << 20;

void fill(std::vector<float>& v, int w) {
  for (size_t i = 0; i < v.size(); ++i) v[i] = wb::bench::adasum_input(w, i);
}

// bench_collectives' criterion, the same for every op.
long count_wrong(const std::vector<float>& x, const std::vector<float>& ref) {
  return wb::bench::count_off(x, ref, 1e-6 * wb::bench::max_abs(ref), 1e-5);
}

// Every worker's input, as every rank can compute it (the references need them all).
std::vector<std::vector<float>> all_inputs(int W, size_t n) {
  std::vector<std::vector<float>> all(W, std::vector<float>(n));
  for (int w = 0; w < W; ++w) fill(all[w], w);
  return all;
}

// The MPI timing of parts 1 and 3: best of >= reps interleaved repetitions and >= 1 s of
// timed calls per size, slowest rank; iters back-to-back calls keep small sizes measurable.
wb::bench::Timing mpi_timing(const wb::bench::Args& args, size_t bytes) {
  wb::bench::Timing t;
  t.reps = args.integer("reps");
  t.budget_s = args.num("budget");
  t.iters =
      static_cast<int>(std::clamp<size_t>((size_t{8} << 20) / bytes, 1, args.size("max-iters")));
  t.comm = MPI_COMM_WORLD;
  return t;
}

// One rank's buffer of n floats, seen as the one-worker span list the collectives take.
struct RankBuffer {
  std::vector<float> buf;
  std::vector<std::span<float>> spans;
  explicit RankBuffer(size_t n) : buf(n), spans{std::span<float>(buf)} {}
  std::span<const std::span<float>> bufs() const { return spans; }
};

Op mpi_allreduce_op(RankBuffer& b, int rank, int R, const std::vector<float>& ref_sum) {
  Op op{.name = "MPI_Allreduce(sum)", .bytes = static_cast<double>(b.buf.size() * sizeof(float))};
  op.bus_factor = wb::bench::allreduce_bus_factor(R);
  op.init = op.reset = [&b, rank] { fill(b.buf, rank); };  // sums grow by R per call
  op.run = [&b] {
    MPI_Allreduce(MPI_IN_PLACE, b.buf.data(), static_cast<int>(b.buf.size()), MPI_FLOAT, MPI_SUM,
                  MPI_COMM_WORLD);
  };
  op.check = [&b, &ref_sum] { return count_wrong(b.buf, ref_sum); };
  return op;
}

struct Part1 {
  double max_ratio = 0;       // ada / mpi over sizes >= 1 MB
  double max_ratio_64k = 0;   // ada / mpi over sizes >= 64 KB
  double max_ratio_small = 0; // ada / mpi over sizes < 64 KB (the latency-bound schedule)
  double ratio_4k = 0, ratio_64k = 0;  // ada / mpi at exactly 4 KB and 64 KB (0: not run)
  double mpi_4k_us = 0;                // MPI_Allreduce's own time at 4 KB: the state of the cores
  long wrong = 0;
};

Part1 part1(const wb::bench::Args& args, Collectives& coll, int rank, int R) {
  const std::vector<std::string> titles{"MPI_Allreduce(sum)", "wb allreduce(sum)", "wb adasum"};
  wb::bench::SweepTable table(titles, {{"ada/mpi", 2, 0}});
  Part1 out;
  for (size_t bytes : wb::bench::doubling_sizes(args.size("min-bytes"), args.size("max-bytes"))) {
    const size_t n = bytes / sizeof(float);
    const std::vector<Segment> segs = wb::bench::uneven_tensors(n);
    RankBuffer b(n);
    std::vector<float> ref_sum, ref_ada;
    {
      const auto all = all_inputs(R, n);
      ref_sum = wb::comm::tree_sum_reference(all);
      ref_ada = wb::comm::adasum_reference<float>(all, segs);
    }
    std::vector<Op> ops(3, mpi_allreduce_op(b, rank, R, ref_sum));  // then made sum and ada
    ops[1].name = titles[1];
    ops[1].run = [&] { coll.allreduce<float>(b.bufs(), ReduceOp::kSum); };
    ops[2].name = titles[2];
    ops[2].run = [&] { coll.adasum<float>(b.bufs(), segs); };
    ops[2].check = [&] { return count_wrong(b.buf, ref_ada); };
    const std::vector<Measured> m = wb::bench::measure(ops, mpi_timing(args, bytes));
    const double ratio = m[2].seconds / m[0].seconds;
    if (bytes >= kOneMB) out.max_ratio = std::max(out.max_ratio, ratio);
    if (bytes >= 64 * 1024) out.max_ratio_64k = std::max(out.max_ratio_64k, ratio);
    else out.max_ratio_small = std::max(out.max_ratio_small, ratio);
    if (bytes == 4 * 1024) out.ratio_4k = ratio, out.mpi_4k_us = m[0].seconds * 1e6;
    if (bytes == 64 * 1024) out.ratio_64k = ratio;
    out.wrong += wb::bench::total_wrong(m);
    table.row(bytes, n, ops, m);
  }
  return out;
}

struct Part2 {
  double fraction = 0;        // memcpy / Adasum time, W = 64, largest total
  double fraction_small = 0;  // the same at 1/16 of the largest total
  long wrong = 0;
};

// Rank 0 alone: W logical workers in one process, Adasum vs a memcpy of the same bytes.
Part2 part2(const wb::bench::Args& args) {
  std::printf(
      "\n# in-process: W logical workers on one rank (MPI_COMM_SELF), Adasum over W\n"
      "# buffers of n floats vs memcpy of the same W*n*4 bytes; GB/s = W*n*4 / time\n");
  std::printf("#%3s %12s %12s | %10s %7s | %10s %7s | %8s %4s\n", "W", "n/worker", "total(B)",
              "adasum us", "GB/s", "memcpy us", "GB/s", "fraction", "#wr");
  Part2 out;
  const size_t largest = args.size("inproc-max-bytes");
  for (int W : {8, 64}) {
    for (size_t total : {largest / 16, largest}) {
      const size_t n = total / sizeof(float) / static_cast<size_t>(W);
      Collectives self(MPI_COMM_SELF, W);
      const std::vector<Segment> segs = wb::bench::uneven_tensors(n);
      std::vector<std::vector<float>> g = all_inputs(W, n);
      const std::vector<float> ref = wb::comm::adasum_reference<float>(g, segs);
      std::vector<std::span<float>> spans(g.begin(), g.end());
      std::vector<float> src(static_cast<size_t>(W) * n, 1.0f), dst(src.size(), 0.0f);
      const double bytes = static_cast<double>(W) * n * sizeof(float);
      // No reset: after the first call the inputs are identical, which costs the same passes.
      std::vector<Op> ops{{.name = "adasum",
                           .bytes = bytes,
                           .run = [&] { self.adasum<float>(spans, segs); },
                           .check =
                               [&] {
                                 long wrong = 0;
                                 for (const auto& v : g) wrong += count_wrong(v, ref);
                                 return wrong;
                               }},
                          {.name = "memcpy", .bytes = bytes, .run = [&] {
                             std::memcpy(dst.data(), src.data(), src.size() * sizeof(float));
                           }}};
      wb::bench::Timing t;
      t.reps = args.integer("reps");
      t.budget_s = args.num("budget");
      const std::vector<Measured> m = wb::bench::measure(ops, t);
      const double frac = m[1].seconds / m[0].seconds;
      if (W == 64) (total == largest ? out.fraction : out.fraction_small) = frac;
      out.wrong += wb::bench::total_wrong(m);
      std::printf(" %3d %12zu %12.0f | %10.1f %7.2f | %10.1f %7.2f | %8.3f %4ld\n", W, n, bytes,
                  m[0].seconds * 1e6, m[0].algbw(ops[0]), m[1].seconds * 1e6, m[1].algbw(ops[1]),
                  frac, m[0].wrong);
      std::fflush(stdout);
    }
  }
  return out;
}

struct Part3 {
  double max_wavg_ratio = 0, max_bcast_ratio = 0;  // over sizes >= 1 MB
  double max_wavg_ratio_64k = 0;                   // over sizes >= 64 KB
  long wrong = 0;
};

Part3 part3(const wb::bench::Args& args, Collectives& coll, int rank, int R) {
  const std::vector<std::string> titles{"MPI_Allreduce(sum)", "wb weighted_average", "MPI_Bcast",
                                        "wb broadcast"};
  wb::bench::SweepTable table(titles, {{"wa/mpi", 1, 0}, {"wb/bc", 3, 2}});
  if (rank == 0)
    std::printf(
        "\n# weighted average (weights 1..W) and broadcast (root worker 0) beside the MPI\n"
        "# calls they build on; time, bw and #wrong as in the first table\n");
  Part3 out;
  const std::vector<double> weight{1.0 + rank};
  for (size_t bytes : wb::bench::doubling_sizes(args.size("min-bytes"), args.size("max-bytes"))) {
    const size_t n = bytes / sizeof(float);
    RankBuffer b(n);
    std::vector<float> ref_sum, ref_wavg, ref_root(n);
    {
      const auto all = all_inputs(R, n);
      std::vector<double> w(R);
      for (int k = 0; k < R; ++k) w[k] = 1.0 + k;
      ref_sum = wb::comm::tree_sum_reference(all);
      ref_wavg = wb::comm::weighted_average_reference<float>(all, w);
      ref_root = all[0];
    }
    std::vector<Op> ops(4, mpi_allreduce_op(b, rank, R, ref_sum));
    ops[1].name = titles[1];
    ops[1].reset = nullptr;  // the average of equal buffers is that buffer: nothing consumed
    ops[1].run = [&] { coll.weighted_average<float>(b.bufs(), weight); };
    ops[1].check = [&] { return count_wrong(b.buf, ref_wavg); };
    for (size_t k : {2, 3}) {
      ops[k].name = titles[k];
      ops[k].reset = nullptr;
      ops[k].bus_factor = wb::bench::broadcast_bus_factor(R);
      ops[k].check = [&] { return count_wrong(b.buf, ref_root); };
    }
    ops[2].run = [&] {
      MPI_Bcast(b.buf.data(), static_cast<int>(n), MPI_FLOAT, 0, MPI_COMM_WORLD);
    };
    ops[3].run = [&] { coll.broadcast<float>(b.bufs(), 0); };
    const std::vector<Measured> m = wb::bench::measure(ops, mpi_timing(args, bytes));
    if (bytes >= 64 * 1024)
      out.max_wavg_ratio_64k = std::max(out.max_wavg_ratio_64k, m[1].seconds / m[0].seconds);
    if (bytes >= kOneMB) {
      out.max_wavg_ratio = std::max(out.max_wavg_ratio, m[1].seconds / m[0].seconds);
      out.max_bcast_ratio = std::max(out.max_bcast_ratio, m[3].seconds / m[2].seconds);
    }
    out.wrong += wb::bench::total_wrong(m);
    table.row(bytes, n, ops, m);
  }
  return out;
}

int run(const wb::bench::Args& args) {
  int rank = 0, R = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &R);
  Collectives coll(MPI_COMM_WORLD, R);  // W = R: one logical worker per rank
  if (rank == 0) {
    std::printf("# bench_collectives: %d ranks, W = %d (one worker per rank), fp32, 64 tensors\n",
                R, R);
    std::printf(
        "# RVHDD levels %d; time = best of >= %d interleaved reps (slowest rank), us; bw in "
        "GB/s\n",
        coll.rvhdd_levels(), args.integer("reps"));
  }
  const Part1 p1 = part1(args, coll, rank, R);
  Part2 p2;
  if (rank == 0) p2 = part2(args);
  wb::bench::wait_quietly(MPI_COMM_WORLD);
  MPI_Bcast(&p2.wrong, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  const Part3 p3 = part3(args, coll, rank, R);
  const long wrong = p1.wrong + p2.wrong + p3.wrong;
  return wb::bench::Result()
      .add("adasum_over_mpi_4KB", p1.ratio_4k, 3)
      .add("mpi_allreduce_4KB_us", p1.mpi_4k_us, 2)
      .add("adasum_over_mpi_max_ratio_lt_64KB", p1.max_ratio_small, 3)
      .add("adasum_over_mpi_64KB", p1.ratio_64k, 3)
      .add("adasum_over_mpi_max_ratio_ge_64KB", p1.max_ratio_64k, 3)
      .add("adasum_over_mpi_max_ratio_ge_1MB", p1.max_ratio, 3)
      .add("inproc_adasum_bw_fraction_small", p2.fraction_small, 3)
      .add("inproc_adasum_bw_fraction", p2.fraction, 3)
      .add("weighted_average_over_mpi_max_ratio_ge_64KB", p3.max_wavg_ratio_64k, 3)
      .add("weighted_average_over_mpi_max_ratio_ge_1MB", p3.max_wavg_ratio, 3)
      .add("broadcast_over_mpi_max_ratio_ge_1MB", p3.max_bcast_ratio, 3)
      .finish(wrong);
}

}  // namespace

int main(int argc, char** argv) {
  const double mb = static_cast<double>(kOneMB);
  return wb::bench::bench_main(
      argc, argv,
      {"bench_collectives",
       "Collectives (allreduce, Adasum, weighted average, broadcast) vs MPI, 1 worker per rank",
       {{"min-bytes", 4096, 4096, "smallest message (bytes)"},
        {"max-bytes", 64 * mb, 16 * 1024, "largest message (bytes), doubling from min-bytes"},
        {"inproc-max-bytes", 64 * mb, 1 * mb, "in-process Adasum: largest total (and 1/16 of it)"},
        {"reps", 7, 1, "timed repetitions at least (best of)"},
        {"max-iters", 50, 2, "back-to-back calls per repetition at most (8 MB worth)"},
        {"budget", 1.0, 0, "seconds of timed calls per size at least"}}},
      run);
}
