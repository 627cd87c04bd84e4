// bench_gpu: LeNet-5 training throughput and the in-process Adasum on one GPU,
// on the benchmark driver (bench/driver.h).
//
//   build/bench_gpu [--min-time S] [--reps N] [--adasum-reps N] [--max-bytes B] [--smoke]
//
// Part 1, LeNet-5 (lenet5, 21,840 parameters), samples/s:
//   gpu  one step = DeviceNet<float>::pass (forward + backward on the device, dropout masks
//        drawn on the host from the step's noise seed, one host sync for the loss) + the
//        momentum update on the device (buf = mu*buf + g; w -= lr*buf via cuda::combine);
//        batch 32 and 1024, the input batch resident on the device.
//   cpu  bench/bench_lenet.cpp's step on ONE thread, measured in the same run: the fast
//        path Model::loss_grad + the same update, batch 32 and 1024.
//   Rates: best of --reps (3) repetitions of >= --min-time (0.5 s) and >= 5 steps, after a
//   30-step warm-up.
//   gpu_over_cpu_lenet_b1024 = gpu samples/s at batch 1024 / the best one-thread CPU rate
//   (whichever CPU batch size is faster: the conservative ratio).
// Part 2, Adasum over W = 64 logical workers on one GPU (cuda::LocalCollectives::adasum,
//   64 tensors of uneven size, as bench/bench_collectives.cpp part 2), result in every
//   worker's buffer. The fair byte count is bench_collectives': the op reads W*n*4 bytes and
//   writes W*n*4 bytes, which is what a device memcpy (cudaMemcpyAsync D2D) of W*n*4 bytes
//   moves; GB/s = W*n*4 / time for both, fraction = memcpy time / Adasum time, timed with
//   CUDA events, best of --adasum-reps (20) alternating repetitions; totals --max-bytes / 16
//   and --max-bytes (4 MB and 64 MB). The plan's schedule (cuda/comm_cuda.h: the cluster
//   schedule on Hopper, its blocks per cluster in column "cluster") is timed beside the levels
//   schedule alone (what runs before Hopper) and the cluster schedule held to the portable
//   8 blocks per cluster, in the same alternation.
//   A first row per W reduces one LeNet-5 gradient per worker in LeNet-5's own tensors (21,840
//   floats in 10 segments: 5.6 MB at W = 64), what a "device": "cuda" Adasum step reduces.
//   gpu_adasum_bw_fraction_lenet / _small / gpu_adasum_bw_fraction: W = 64, LeNet-5 / 4 MB /
//   64 MB.
// Part 3, logical workers sharing the rank's GPU (how a "device": "cuda" run computes the W
//   gradients of a step), through the runtime's own CudaNetModel (host staging included):
//   sequential  the W workers one after the other, one stream each (what
//               algorithms/algorithm.cpp compute_gradients does today);
//   streams     the W workers at once from W host threads, one stream each (kernels of
//               different workers overlap on the GPU);
//   batched     ONE pass over the W*B samples of the step: one launch sequence for all
//               workers, but it yields the gradient of the union batch, not W per-worker
//               gradients -- usable only by averaging algorithms (sync SGD), not by Adasum
//               or the local/asynchronous family.
//   samples/s (W*B per step), timed as part 1; the line "fastest:" names the winner per B.
// Part 4, a rank's W = 64 logical workers x B = 32 as ONE device computation (grouped passes,
//   DESIGN.md section 2), samples/s of the workers' training passes:
//   staged_sequential  64 CudaNetModel::loss_grad calls, one after the other (the runtime's
//                      path before grouped passes: 3 transfers + a launch sequence each);
//   staged_grouped     one CudaNetModel::loss_grad_group (the runtime's path now: parameters
//                      and samples packed into pinned buffers, one transfer each way, one
//                      launch sequence; the gradients are checked equal to the sequential
//                      ones bit for bit);
//   resident_grouped   DeviceNet::group_pass on device-resident parameters and batches plus
//                      the 64 workers' momentum updates as one pass over the strided buffer:
//                      what the device does when nothing is staged.
//   gpu_w64b32_over_cpu = resident_grouped / the best one-thread CPU rate (part 1);
//   grouped_over_sequential = staged_grouped / staged_sequential.
// Every run first checks correctness (nccl-tests style): the GPU LeNet gradient against the
// CPU reference loops, and the Adasum result against comm/reference.h.
//
// Without a GPU: prints why and exits 77. Last line, machine readable (device name with
// spaces replaced by '_'):
//   RESULT gpu_over_cpu_lenet_b1024=<x> gpu_w64b32_over_cpu=<x> grouped_over_sequential=<x>
//          gpu_adasum_bw_fraction_lenet=<x> gpu_adasum_bw_fraction_small=<x>
//          gpu_adasum_bw_fraction=<x> device=<name> wrong=<n>
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_inputs.h"
#include "bench/driver.h"
#include "comm/reference.h"
#include "cuda/check.h"
#include "cuda/comm_cuda.h"
#include "cuda/device.h"
#include "cuda/model_cuda.h"
#include "cuda/net_cuda.h"
#include "models/lenet.h"
#include "core/rng.h"

namespace {

using wb::bench::Measured;
using wb::bench::Op;
using wb::cuda::DeviceBuffer;
using wb::models::Batch;
using wb::models::ConvNetModel;

constexpr float kLr = 0.01f, kMu = 0.5f;

// The training-rate timing of parts 1 and 3: best of --reps repetitions of >= --min-time
// and >= 5 steps each, after a 30-step warm-up.
wb::bench::Timing rate_timing(const wb::bench::Args& args) {
  wb::bench::Timing t;
  t.reps = args.integer("reps");
  t.iters = 5;
  t.min_time_s = args.num("min-time");
  t.warmup = 30;
  return t;
}

// Samples/s of one op, measured alone (its own measure() call).
double rate_of(Op op, const wb::bench::Timing& t, long& wrong) {
  std::vector<Op> ops{std::move(op)};
  const std::vector<Measured> m = wb::bench::measure(ops, t);
  wrong += m[0].wrong;
  return m[0].rate(ops[0]);
}

// GPU vs CPU reference loops on one batch: values off by more than 1e-4 + 1e-3 |ref| (the
// loss: 1e-5 + 1e-5 |ref|); prints the worst error ratio (<= 1 passes).
long check_lenet(const ConvNetModel& m, int n) {
  std::vector<float> w(m.num_params()), g(w.size());
  m.init_params(w, 0);
  const Batch b = wb::models::random_image_batch(n, 784, 10, 7);
  const double lr = m.reference_loss_grad(w, b, g, 42);
  wb::cuda::DeviceNet<float> dn(m.net(), n);
  dn.set_batch(b.x.data(), b.label.data(), n);
  DeviceBuffer<float> gw{std::span<const float>(w)}, gg(w.size());
  const double lg = dn.pass(gw.data(), gg.data(), true, 42);
  const std::vector<float> gh = gg.to_host();
  double worst = std::fabs(lg - lr) / (1e-5 + 1e-5 * std::fabs(lr));
  long wrong = worst <= 1.0 ? 0 : 1;
  for (size_t i = 0; i < g.size(); ++i) {
    const double e = std::fabs(gh[i] - g[i]) / (1e-4 + 1e-3 * std::fabs(g[i]));
    worst = std::max(worst, e);
    if (!(e <= 1.0)) ++wrong;
  }
  std::printf("check lenet5 batch %d: gpu vs reference worst error ratio %.3g (<= 1 passes)\n", n,
              worst);
  return wrong;
}

// bench_lenet's step on one CPU thread; the state lives in the returned op.
Op cpu_step_op(const ConvNetModel& m, int n) {
  struct State {
    std::vector<float> w, g, buf;
    Batch b;
    std::unique_ptr<wb::models::Workspace> ws;
    uint64_t seed = 0;
  };
  auto s = std::make_shared<State>();
  s->w.resize(m.num_params());
  s->g.resize(s->w.size());
  s->buf.assign(s->w.size(), 0.0f);
  m.init_params(s->w, 0);
  s->b = wb::models::random_image_batch(n, 784, 10, 1);
  s->ws = m.make_workspace(n);
  Op op{.name = "cpu_1thread/" + std::to_string(n), .items = static_cast<double>(n)};
  op.run = [s, &m] {
    m.loss_grad(s->w, s->b, s->g, *s->ws, ++s->seed);
    for (size_t i = 0; i < s->w.size(); ++i) {
      s->buf[i] = kMu * s->buf[i] + s->g[i];
      s->w[i] -= kLr * s->buf[i];
    }
  };
  return op;
}

// The same step on the device, the input batch resident there.
Op gpu_step_op(const ConvNetModel& m, int n) {
  struct State {
    std::unique_ptr<wb::cuda::DeviceNet<float>> dn;
    std::unique_ptr<DeviceBuffer<float>> w, g, buf;
    uint64_t seed = 0;
  };
  auto s = std::make_shared<State>();
  std::vector<float> w(m.num_params());
  m.init_params(w, 0);
  const Batch b = wb::models::random_image_batch(n, 784, 10, 1);
  s->dn = std::make_unique<wb::cuda::DeviceNet<float>>(m.net(), n);
  s->dn->set_batch(b.x.data(), b.label.data(), n);
  s->w = std::make_unique<DeviceBuffer<float>>(std::span<const float>(w));
  s->g = std::make_unique<DeviceBuffer<float>>(w.size());
  s->buf = std::make_unique<DeviceBuffer<float>>(w.size());
  s->buf->zero();
  const size_t np = w.size();
  Op op{.name = "gpu/" + std::to_string(n), .items = static_cast<double>(n)};
  op.run = [s, np] {
    s->dn->pass(s->w->data(), s->g->data(), true, ++s->seed);  // synchronizes (the loss)
    wb::cuda::combine<float>(s->buf->data(), s->buf->data(), s->g->data(), np, kMu, 1.0);
    wb::cuda::combine<float>(s->w->data(), s->w->data(), s->buf->data(), np, 1.0, -kLr);
  };
  return op;
}

// Seconds of whatever `work` enqueues on the default stream, by CUDA events.
class EventTimer {
 public:
  EventTimer() {
    WB_CHECK_CUDA(cudaEventCreate(&e0_));
    WB_CHECK_CUDA(cudaEventCreate(&e1_));
  }
  ~EventTimer() {
    cudaEventDestroy(e0_);
    cudaEventDestroy(e1_);
  }
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  template <class Work>
  double seconds(Work&& work) {
    WB_CHECK_CUDA(cudaEventRecord(e0_));
    work();
    WB_CHECK_CUDA(cudaEventRecord(e1_));
    WB_CHECK_CUDA(cudaEventSynchronize(e1_));
    float ms = 0;
    WB_CHECK_CUDA(cudaEventElapsedTime(&ms, e0_, e1_));
    return ms * 1e-3;
  }

 private:
  cudaEvent_t e0_{}, e1_{};
};

struct AdasumRow {
  double t_ada = 0, t_copy = 0, t_levels = 0, t_portable = 0;
  int cluster_blocks = 0;   // the plan's blocks per cluster (0: levels schedule only)
  int portable_blocks = 0;  // the same with at most 8 blocks per cluster
  long wrong = 0;
};

AdasumRow bench_adasum(int W, size_t n, const std::vector<wb::comm::Segment>& segs, int reps) {
  std::vector<std::vector<float>> g(W, std::vector<float>(n));
  for (int w = 0; w < W; ++w)
    for (size_t i = 0; i < n; ++i) g[w][i] = wb::bench::adasum_input(w, i);
  const std::vector<float> ref = wb::comm::adasum_reference<float>(g, segs);

  DeviceBuffer<float> all(static_cast<size_t>(W) * n), src(all.size()), dst(all.size());
  std::vector<float*> bufs(W);
  for (int w = 0; w < W; ++w) bufs[w] = all.data() + static_cast<size_t>(w) * n;
  WB_CHECK_CUDA(cudaMemset(src.data(), 0, src.bytes()));
  wb::cuda::LocalCollectives<float> coll(W, n, segs);
  wb::cuda::LocalCollectives<float> levels(W, n, segs, /*max_cluster_blocks=*/0);
  wb::cuda::LocalCollectives<float> portable(W, n, segs, /*max_cluster_blocks=*/8);
  EventTimer timer;
  // No reset: after the first call the inputs are identical, which costs the same passes.
  std::vector<Op> ops{{.name = "adasum",
                       .init =
                           [&] {
                             for (int w = 0; w < W; ++w)
                               WB_CHECK_CUDA(cudaMemcpy(bufs[w], g[w].data(), n * sizeof(float),
                                                        cudaMemcpyHostToDevice));
                           },
                       .check =
                           [&] {
                             const double atol =
                                 1e-6 * wb::bench::max_abs(ref);  // bench_collectives' criterion
                             std::vector<float> got(n);
                             long wrong = 0;
                             for (int w = 0; w < W; ++w) {
                               WB_CHECK_CUDA(cudaMemcpy(got.data(), bufs[w], n * sizeof(float),
                                                        cudaMemcpyDeviceToHost));
                               wrong += wb::bench::count_off(got, ref, atol, 1e-5);
                             }
                             return wrong;
                           },
                       .self_timed = [&] { return timer.seconds([&] { coll.adasum(bufs); }); }},
                      {.name = "adasum levels",
                       .self_timed =
                           [&] { return timer.seconds([&] { levels.adasum(bufs); }); }},
                      {.name = "adasum portable clusters",
                       .self_timed =
                           [&] { return timer.seconds([&] { portable.adasum(bufs); }); }},
                      {.name = "memcpy D2D", .self_timed = [&] {
                         return timer.seconds([&] {
                           WB_CHECK_CUDA(cudaMemcpyAsync(dst.data(), src.data(), src.bytes(),
                                                         cudaMemcpyDeviceToDevice));
                         });
                       }}};
  wb::bench::Timing t;
  t.reps = t.max_reps = reps;  // alternate: same conditions for both
  const std::vector<Measured> m = wb::bench::measure(ops, t);
  return {m[0].seconds, m[3].seconds, m[1].seconds, m[2].seconds, coll.cluster_blocks(),
          portable.cluster_blocks(), m[0].wrong};
}

// W persistent host threads, one per worker, each running its worker's pass on its own
// stream when released; step() releases them all and waits for the W passes.
class WorkerThreads {
 public:
  WorkerThreads(int W, std::function<void(int)> pass) : sync_(W + 1), pass_(std::move(pass)) {
    int device = 0;
    WB_CHECK_CUDA(cudaGetDevice(&device));
    for (int k = 0; k < W; ++k)
      th_.emplace_back([this, k, device] {
        WB_CHECK_CUDA(cudaSetDevice(device));
        for (;;) {
          sync_.arrive_and_wait();
          if (stop_) return;
          pass_(k);
          sync_.arrive_and_wait();
        }
      });
  }
  ~WorkerThreads() {
    stop_ = true;
    sync_.arrive_and_wait();
    for (auto& t : th_) t.join();
  }
  void step() {
    sync_.arrive_and_wait();  // go
    sync_.arrive_and_wait();  // all W done
  }

 private:
  std::barrier<> sync_;
  std::atomic<bool> stop_{false};
  std::function<void(int)> pass_;
  std::vector<std::thread> th_;
};

struct SharingRow {
  double sequential = 0, streams = 0, batched = 0;
};

// Part 3: W logical workers of B samples sharing this GPU.
SharingRow bench_sharing(const ConvNetModel& cpu, int W, int B, const wb::bench::Timing& t,
                         long& wrong) {
  const wb::cuda::CudaNetModel m(cpu);
  std::vector<float> w(m.num_params());
  m.init_params(w, 0);
  std::vector<Batch> batches;
  std::vector<std::vector<float>> g(W, std::vector<float>(w.size()));
  std::vector<std::unique_ptr<wb::models::Workspace>> ws;
  for (int k = 0; k < W; ++k) {
    batches.push_back(wb::models::random_image_batch(B, 784, 10, 100 + static_cast<uint64_t>(k)));
    ws.push_back(m.make_workspace(B));
  }
  const double items = static_cast<double>(W) * B;
  SharingRow row;
  uint64_t seed = 0;
  row.sequential = rate_of({.name = "sequential",
                            .items = items,
                            .run =
                                [&] {
                                  ++seed;
                                  for (int k = 0; k < W; ++k)
                                    m.loss_grad(w, batches[k], g[k], *ws[k], seed * W + k);
                                }},
                           t, wrong);
  {
    WorkerThreads threads(W,
                          [&](int k) { m.loss_grad(w, batches[k], g[k], *ws[k], seed * W + k); });
    row.streams = rate_of({.name = "streams",
                           .items = items,
                           .run =
                               [&] {
                                 ++seed;
                                 threads.step();
                               }},
                          t, wrong);
  }
  Batch all;
  all.n = W * B;
  for (const Batch& b : batches) {
    all.x.insert(all.x.end(), b.x.begin(), b.x.end());
    all.label.insert(all.label.end(), b.label.begin(), b.label.end());
  }
  auto ws_all = m.make_workspace(W * B);
  std::vector<float> g_all(w.size());
  row.batched = rate_of({.name = "batched",
                         .items = items,
                         .run = [&] { m.loss_grad(w, all, g_all, *ws_all, ++seed); }},
                        t, wrong);
  return row;
}

struct GroupRow {
  double staged_sequential = 0, staged_grouped = 0, resident_grouped = 0;
};

// Part 4: W workers x B samples, each with its own parameters (distinct replicas).
GroupRow bench_group(const ConvNetModel& cpu, int W, int B, const wb::bench::Timing& t,
                     long& wrong) {
  const wb::cuda::CudaNetModel m(cpu);
  const size_t np = m.num_params(), stride = m.group_stride();
  std::vector<std::vector<float>> w(W, std::vector<float>(np)), gs(W, std::vector<float>(np)),
      gg(W, std::vector<float>(np));
  std::vector<Batch> batches;
  for (int k = 0; k < W; ++k) {
    m.init_params(w[k], static_cast<uint64_t>(k));
    batches.push_back(wb::models::random_image_batch(B, 784, 10, 500 + static_cast<uint64_t>(k)));
  }
  const double items = static_cast<double>(W) * B;
  GroupRow row;
  uint64_t seed = 0;
  auto ws = m.make_workspace(B);
  auto gws = m.make_group_workspace(W, B);
  std::vector<wb::train::DeviceModel::GroupPass> passes(W);
  auto grouped_step = [&] {
    ++seed;
    for (int k = 0; k < W; ++k)
      passes[k] = {.w = w[k], .batch = &batches[k], .g = gg[k], .noise_seed = seed * W + k};
    m.loss_grad_group(passes, *gws);
  };
  auto sequential_step = [&] {
    ++seed;
    for (int k = 0; k < W; ++k) m.loss_grad(w[k], batches[k], gs[k], *ws, seed * W + k);
  };
  row.staged_sequential = rate_of({.name = "staged_sequential", .items = items,
                                   .run = sequential_step}, t, wrong);
  row.staged_grouped = rate_of(
      {.name = "staged_grouped",
       .items = items,
       .run = grouped_step,
       .check =
           [&] {  // the same seeds as one sequential step: the same bits
             const uint64_t s0 = seed;
             seed = s0 - 1;
             sequential_step();
             long bad = 0;
             for (int k = 0; k < W; ++k)
               for (size_t i = 0; i < np; ++i) bad += gg[k][i] == gs[k][i] ? 0 : 1;
             std::printf("check grouped vs sequential (W %d, B %d): %ld of %zu gradient values "
                         "differ\n", W, B, bad, static_cast<size_t>(W) * np);
             return bad;
           }},
      t, wrong);

  // Device-resident: parameters, momentum buffers and batches on the device.
  std::vector<float> hw(static_cast<size_t>(W) * stride, 0.0f), hx;
  std::vector<int32_t> hl;
  for (int k = 0; k < W; ++k) {
    std::copy(w[k].begin(), w[k].end(), hw.begin() + static_cast<long>(k * stride));
    hx.insert(hx.end(), batches[k].x.begin(), batches[k].x.end());
    hl.insert(hl.end(), batches[k].label.begin(), batches[k].label.end());
  }
  wb::cuda::DeviceNet<float> dn(cpu.net(), B, nullptr, W);
  dn.set_group_batches(hx.data(), hl.data(), W, B);
  DeviceBuffer<float> dw{std::span<const float>(hw)}, dg(hw.size()), dbuf(hw.size());
  dg.zero();
  dbuf.zero();
  std::vector<uint64_t> seeds(W);
  std::vector<float> loss(W);
  row.resident_grouped = rate_of(
      {.name = "resident_grouped",
       .items = items,
       .run =
           [&] {
             ++seed;
             for (int k = 0; k < W; ++k) seeds[k] = seed * W + k;
             dn.group_pass(dw.data(), dg.data(), stride, seeds.data(), loss.data());
             wb::cuda::combine<float>(dbuf.data(), dbuf.data(), dg.data(), hw.size(), kMu, 1.0);
             wb::cuda::combine<float>(dw.data(), dw.data(), dbuf.data(), hw.size(), 1.0, -kLr);
           }},
      t, wrong);
  return row;
}

int run(const wb::bench::Args& args) {
  const wb::cuda::DeviceStatus dev = wb::cuda::select_device(MPI_COMM_WORLD);
  if (!dev.ok) {
    std::printf("bench_gpu: SKIPPED: %s\n", dev.reason.c_str());
    return wb::cuda::kSkipExitCode;
  }
  std::printf("bench_gpu: %s\n", dev.describe().c_str());
  static const ConvNetModel lenet(wb::models::lenet5_spec());
  const wb::bench::Timing rt = rate_timing(args);
  long wrong = 0;

  std::printf("\n# LeNet-5 training step (forward + backward + momentum SGD), samples/s\n");
  std::printf("#%6s %14s %14s\n", "batch", "gpu", "cpu_1thread");
  double gpu1024 = 0, cpu_best = 0;
  for (int n : {32, 1024}) {
    Op gpu = gpu_step_op(lenet, n);
    if (n == 32) gpu.check = [] { return check_lenet(lenet, 32) + check_lenet(lenet, 13); };
    const double g = rate_of(std::move(gpu), rt, wrong);
    const double c = rate_of(cpu_step_op(lenet, n), rt, wrong);
    std::printf(" %6d %14.0f %14.0f\n", n, g, c);
    std::fflush(stdout);
    if (n == 1024) gpu1024 = g;
    cpu_best = std::max(cpu_best, c);
  }

  std::printf(
      "\n# in-process Adasum over W logical workers on one GPU vs cudaMemcpy D2D of the\n"
      "# same W*n*4 bytes; GB/s = W*n*4 / time\n");
  std::printf("#%3s %12s %12s | %10s %7s | %10s %7s | %8s %4s | %7s | %10s %8s | %10s %8s %4s\n",
              "W", "n/worker", "total(B)", "adasum us", "GB/s", "memcpy us", "GB/s", "fraction",
              "#wr", "cluster", "levels us", "fraction", "c<=8 us", "fraction", "c");
  double fraction = 0, fraction_small = 0, fraction_lenet = 0;
  const size_t largest = args.size("max-bytes");
  std::vector<wb::comm::Segment> lenet_segs;  // LeNet-5's own tensors (21,840 parameters)
  for (const auto& t : lenet.tensors()) lenet_segs.push_back({t.offset, t.size});
  for (int W : {8, 64}) {
    for (size_t total : {size_t{0}, largest / 16, largest}) {  // 0: one LeNet-5 per worker
      const size_t n = total == 0 ? lenet.num_params() : total / sizeof(float) / W;
      const AdasumRow row =
          bench_adasum(W, n, total == 0 ? lenet_segs : wb::bench::uneven_tensors(n),
                       args.integer("adasum-reps"));
      const double bytes = static_cast<double>(W) * n * sizeof(float);
      const double frac = row.t_copy / row.t_ada;
      if (W == 64 && total == largest) fraction = frac;
      if (W == 64 && total == largest / 16) fraction_small = frac;
      if (W == 64 && total == 0) fraction_lenet = frac;
      wrong += row.wrong;
      std::printf(
          " %3d %12zu %12.0f | %10.1f %7.1f | %10.1f %7.1f | %8.3f %4ld | %7d | %10.1f %8.3f | "
          "%10.1f %8.3f %4d\n",
          W, n, bytes, row.t_ada * 1e6, bytes / row.t_ada / 1e9, row.t_copy * 1e6,
          bytes / row.t_copy / 1e9, frac, row.wrong, row.cluster_blocks, row.t_levels * 1e6,
          row.t_copy / row.t_levels, row.t_portable * 1e6, row.t_copy / row.t_portable,
          row.portable_blocks);
      std::fflush(stdout);
    }
  }

  std::printf(
      "\n# W logical workers of B samples sharing this GPU (CudaNetModel, host staging):\n"
      "# step samples/s (W*B per step); batched = one pass over the union batch (averaging\n"
      "# algorithms only)\n");
  std::printf("#%3s %5s %12s %12s %12s   %s\n", "W", "B", "sequential", "streams", "batched",
              "fastest per-worker strategy");
  for (int B : {16, 128}) {
    const int W = 8;
    const SharingRow r = bench_sharing(lenet, W, B, rt, wrong);
    std::printf(" %3d %5d %12.0f %12.0f %12.0f   %s (%.2fx the other)\n", W, B, r.sequential,
                r.streams, r.batched, r.streams > r.sequential ? "streams" : "sequential",
                r.streams > r.sequential ? r.streams / r.sequential : r.sequential / r.streams);
    std::fflush(stdout);
  }
  std::printf(
      "\n# a rank's W logical workers x B samples as one device computation (grouped passes),\n"
      "# samples/s of the W training passes; cpu_1thread = part 1's best one-thread rate\n");
  std::printf("#%3s %5s %18s %16s %18s %12s %12s\n", "W", "B", "staged_sequential",
              "staged_grouped", "resident_grouped", "res/cpu", "grp/seq");
  double w64 = 0, grp_over_seq = 0;
  {
    const int W = args.integer("group-workers"), B = 32;
    const GroupRow r = bench_group(lenet, W, B, rt, wrong);
    w64 = cpu_best > 0 ? r.resident_grouped / cpu_best : 0.0;
    grp_over_seq = r.staged_sequential > 0 ? r.staged_grouped / r.staged_sequential : 0.0;
    std::printf(" %3d %5d %18.0f %16.0f %18.0f %12.1f %12.2f\n", W, B, r.staged_sequential,
                r.staged_grouped, r.resident_grouped, w64, grp_over_seq);
    std::fflush(stdout);
  }
  std::string name = dev.name;
  std::replace(name.begin(), name.end(), ' ', '_');
  return wb::bench::Result()
      .add("gpu_over_cpu_lenet_b1024", cpu_best > 0 ? gpu1024 / cpu_best : 0.0, 2)
      .add("gpu_w64b32_over_cpu", w64, 2)
      .add("grouped_over_sequential", grp_over_seq, 2)
      .add("gpu_adasum_bw_fraction_lenet", fraction_lenet, 3)
      .add("gpu_adasum_bw_fraction_small", fraction_small, 3)
      .add("gpu_adasum_bw_fraction", fraction, 3)
      .add("device", name)
      .finish(wrong);
}

}  // namespace

int main(int argc, char** argv) {
  return wb::bench::bench_main(
      argc, argv,
      {"bench_gpu",
       "LeNet-5 samples/s GPU vs one CPU thread; device Adasum vs memcpy; workers sharing a GPU",
       {{"min-time", 0.5, 0.02, "seconds per rate repetition at least"},
        {"reps", 3, 1, "rate repetitions (best of)"},
        {"adasum-reps", 20, 2, "device Adasum / memcpy repetitions (best of)"},
        {"group-workers", 64, 4, "part 4: logical workers grouped into one computation"},
        {"max-bytes", 64.0 * (1 << 20), 4.0 * (1 << 20),
         "device Adasum: largest total (and 1/16 of it)"}}},
      run);
}
