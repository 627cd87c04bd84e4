// bench_gpu: LeNet-5 training throughput and the in-process Adasum on one GPU (issue #10).
//
//   build/bench_gpu
//
// Part 1, LeNet-5 (lenet5, 21,840 parameters), samples/s:
//   gpu  one step = DeviceNet<float>::pass (forward + backward on the device, dropout masks
//        drawn on the host from the step's noise seed, one host sync for the loss) + the
//        momentum update on the device (buf = mu*buf + g; w -= lr*buf via cuda::combine);
//        batch 32 and 1024, the input batch resident on the device.
//   cpu  bench/bench_lenet.cpp's step on ONE thread, measured in the same run: the fast
//        path Model::loss_grad + the same update, batch 32 and 1024.
//   Rates: best of 3 repetitions of >= 0.5 s (after a 30-step warm-up, as bench_lenet).
//   gpu_over_cpu_lenet_b1024 = gpu samples/s at batch 1024 / the best one-thread CPU rate
//   (whichever CPU batch size is faster: the conservative ratio).
// Part 2, Adasum over W = 64 logical workers on one GPU (cuda::LocalCollectives::adasum,
//   64 tensors of uneven size, as bench/bench_collectives.cpp part 2), result in every
//   worker's buffer. The fair byte count is bench_collectives': the op reads W*n*4 bytes and
//   writes W*n*4 bytes, which is what a device memcpy (cudaMemcpyAsync D2D) of W*n*4 bytes
//   moves; GB/s = W*n*4 / time for both, fraction = memcpy time / Adasum time, timed with
//   CUDA events, best of >= 20 alternating repetitions.
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
//   samples/s (W*B per step), best of 3; the line "fastest:" names the winner per B.
// Every run first checks correctness (nccl-tests style): the GPU LeNet gradient against the
// CPU reference loops, and the Adasum result against comm/reference.h.
//
// Without a GPU: prints why and exits 77. Last line, machine readable (device name with
// spaces replaced by '_'):
//   RESULT gpu_over_cpu_lenet_b1024=<x> gpu_adasum_bw_fraction=<x> device=<name>
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_inputs.h"
#include "comm/reference.h"
#include "cuda/check.h"
#include "cuda/comm_cuda.h"
#include "cuda/device.h"
#include "cuda/model_cuda.h"
#include "cuda/net_cuda.h"
#include "models/lenet.h"
#include "runtime/core/rng.h"

namespace {

using wb::cuda::DeviceBuffer;
using wb::models::Batch;
using wb::models::ConvNetModel;

constexpr float kLr = 0.01f, kMu = 0.5f;

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Best-of-3 samples/s of step(), each repetition >= min_s after a 30-step warm-up.
template <class Step>
double rate(int n, Step&& step, double min_s = 0.5) {
  for (int i = 0; i < 30; ++i) step();
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    long steps = 0;
    const double t0 = now();
    double t = t0;
    while (t - t0 < min_s || steps < 5) {
      step();
      ++steps;
      t = now();
    }
    best = std::max(best, static_cast<double>(n) * steps / (t - t0));
  }
  return best;
}

double cpu_rate(const ConvNetModel& m, int n) {
  std::vector<float> w(m.num_params()), g(w.size()), buf(w.size(), 0.0f);
  m.init_params(w, 0);
  const Batch b = wb::models::random_image_batch(n, 784, 10, 1);
  auto ws = m.make_workspace(n);
  uint64_t seed = 0;
  return rate(n, [&] {
    m.loss_grad(w, b, g, *ws, ++seed);
    for (size_t i = 0; i < w.size(); ++i) {
      buf[i] = kMu * buf[i] + g[i];
      w[i] -= kLr * buf[i];
    }
  });
}

double gpu_rate(const ConvNetModel& m, int n) {
  std::vector<float> w(m.num_params());
  m.init_params(w, 0);
  const Batch b = wb::models::random_image_batch(n, 784, 10, 1);
  wb::cuda::DeviceNet<float> dn(m.net(), n);
  dn.set_batch(b.x.data(), b.label.data(), n);
  DeviceBuffer<float> gw{std::span<const float>(w)}, gg(w.size()), gbuf(w.size());
  gbuf.zero();
  uint64_t seed = 0;
  return rate(n, [&] {
    dn.pass(gw.data(), gg.data(), true, ++seed);  // synchronizes (the loss)
    wb::cuda::combine<float>(gbuf.data(), gbuf.data(), gg.data(), w.size(), kMu, 1.0);
    wb::cuda::combine<float>(gw.data(), gw.data(), gbuf.data(), w.size(), 1.0, -kLr);
  });
}

// GPU vs CPU reference loops on one batch: max |gpu - ref| / (1e-4 + 1e-3 |ref|) <= 1.
bool check_lenet(const ConvNetModel& m, int n) {
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
  for (size_t i = 0; i < g.size(); ++i)
    worst = std::max(worst, std::fabs(gh[i] - g[i]) / (1e-4 + 1e-3 * std::fabs(g[i])));
  std::printf("check lenet5 batch %d: gpu vs reference worst error ratio %.3g (<= 1 passes)\n", n,
              worst);
  return worst <= 1.0;
}

struct AdasumRow {
  double t_ada = 0, t_copy = 0;
  long wrong = 0;
};

AdasumRow bench_adasum(int W, size_t total_bytes) {
  const size_t n = total_bytes / sizeof(float) / static_cast<size_t>(W);
  const std::vector<wb::comm::Segment> segs = wb::bench::uneven_tensors(n);
  std::vector<std::vector<float>> g(W, std::vector<float>(n));
  for (int w = 0; w < W; ++w)
    for (size_t i = 0; i < n; ++i) g[w][i] = wb::bench::adasum_input(w, i);
  const std::vector<float> ref = wb::comm::adasum_reference<float>(g, segs);

  DeviceBuffer<float> all(static_cast<size_t>(W) * n), src(all.size()), dst(all.size());
  std::vector<float*> bufs(W);
  for (int w = 0; w < W; ++w) {
    bufs[w] = all.data() + static_cast<size_t>(w) * n;
    WB_CHECK_CUDA(cudaMemcpy(bufs[w], g[w].data(), n * sizeof(float), cudaMemcpyHostToDevice));
  }
  WB_CHECK_CUDA(cudaMemset(src.data(), 0, src.bytes()));
  wb::cuda::LocalCollectives<float> coll(W, n, segs);
  coll.adasum(bufs);
  WB_CHECK_CUDA(cudaDeviceSynchronize());
  AdasumRow row;
  double amax = 0;
  for (float x : ref) amax = std::max(amax, std::fabs(static_cast<double>(x)));
  std::vector<float> got(n);
  for (int w = 0; w < W; ++w) {
    WB_CHECK_CUDA(cudaMemcpy(got.data(), bufs[w], n * sizeof(float), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; ++i)  // bench_collectives' criterion
      if (!(std::fabs(got[i] - ref[i]) <= 1e-6 * amax + 1e-5 * std::fabs(ref[i]))) ++row.wrong;
  }

  cudaEvent_t e0, e1, e2;
  WB_CHECK_CUDA(cudaEventCreate(&e0));
  WB_CHECK_CUDA(cudaEventCreate(&e1));
  WB_CHECK_CUDA(cudaEventCreate(&e2));
  row.t_ada = row.t_copy = 1e30;
  for (int r = 0; r < 20; ++r) {  // alternate: same conditions for both
    WB_CHECK_CUDA(cudaEventRecord(e0));
    coll.adasum(bufs);
    WB_CHECK_CUDA(cudaEventRecord(e1));
    WB_CHECK_CUDA(cudaMemcpyAsync(dst.data(), src.data(), src.bytes(), cudaMemcpyDeviceToDevice));
    WB_CHECK_CUDA(cudaEventRecord(e2));
    WB_CHECK_CUDA(cudaEventSynchronize(e2));
    float ms_a = 0, ms_c = 0;
    WB_CHECK_CUDA(cudaEventElapsedTime(&ms_a, e0, e1));
    WB_CHECK_CUDA(cudaEventElapsedTime(&ms_c, e1, e2));
    row.t_ada = std::min(row.t_ada, ms_a * 1e-3);
    row.t_copy = std::min(row.t_copy, ms_c * 1e-3);
  }
  WB_CHECK_CUDA(cudaEventDestroy(e0));
  WB_CHECK_CUDA(cudaEventDestroy(e1));
  WB_CHECK_CUDA(cudaEventDestroy(e2));
  return row;
}

struct SharingRow {
  double sequential = 0, streams = 0, batched = 0;
};

// Part 3: W logical workers of B samples sharing this GPU.
SharingRow bench_sharing(const ConvNetModel& cpu, int W, int B) {
  const wb::cuda::CudaNetModel m(cpu);
  std::vector<float> w(m.num_params());
  m.init_params(w, 0);
  std::vector<Batch> batches;
  std::vector<std::vector<float>> g(W, std::vector<float>(w.size()));
  std::vector<std::unique_ptr<wb::models::Workspace>> ws;
  for (int k = 0; k < W; ++k) {
    batches.push_back(
        wb::models::random_image_batch(B, 784, 10, 100 + static_cast<uint64_t>(k)));
    ws.push_back(m.make_workspace(B));
  }
  SharingRow row;
  uint64_t seed = 0;
  row.sequential = rate(W * B, [&] {
    ++seed;
    for (int k = 0; k < W; ++k) m.loss_grad(w, batches[k], g[k], *ws[k], seed * W + k);
  });

  // W persistent threads; one step = release them, wait for all W passes.
  std::barrier sync(W + 1);
  std::atomic<bool> stop{false};
  std::vector<std::thread> th;
  int device = 0;
  WB_CHECK_CUDA(cudaGetDevice(&device));
  for (int k = 0; k < W; ++k)
    th.emplace_back([&, k] {
      WB_CHECK_CUDA(cudaSetDevice(device));
      for (;;) {
        sync.arrive_and_wait();
        if (stop) return;
        m.loss_grad(w, batches[k], g[k], *ws[k], seed * W + k);
        sync.arrive_and_wait();
      }
    });
  row.streams = rate(W * B, [&] {
    ++seed;
    sync.arrive_and_wait();  // go
    sync.arrive_and_wait();  // all W done
  });
  stop = true;
  sync.arrive_and_wait();
  for (auto& t : th) t.join();

  Batch all;
  all.n = W * B;
  for (const Batch& b : batches) {
    all.x.insert(all.x.end(), b.x.begin(), b.x.end());
    all.label.insert(all.label.end(), b.label.begin(), b.label.end());
  }
  auto ws_all = m.make_workspace(W * B);
  std::vector<float> g_all(w.size());
  row.batched = rate(W * B, [&] { m.loss_grad(w, all, g_all, *ws_all, ++seed); });
  return row;
}

int run() {
  const wb::cuda::DeviceStatus dev = wb::cuda::select_device(MPI_COMM_WORLD);
  if (!dev.ok) {
    std::printf("bench_gpu: SKIPPED: %s\n", dev.reason.c_str());
    return wb::cuda::kSkipExitCode;
  }
  std::printf("bench_gpu: %s\n", dev.describe().c_str());
  static const ConvNetModel lenet(wb::models::lenet5_spec());
  if (!check_lenet(lenet, 32) || !check_lenet(lenet, 13)) {
    std::printf("RESULT check_failed=1\n");
    return 1;
  }

  std::printf("\n# LeNet-5 training step (forward + backward + momentum SGD), samples/s\n");
  std::printf("#%6s %14s %14s\n", "batch", "gpu", "cpu_1thread");
  double gpu1024 = 0, cpu_best = 0;
  for (int n : {32, 1024}) {
    const double g = gpu_rate(lenet, n);
    const double c = cpu_rate(lenet, n);
    std::printf(" %6d %14.0f %14.0f\n", n, g, c);
    std::fflush(stdout);
    if (n == 1024) gpu1024 = g;
    cpu_best = std::max(cpu_best, c);
  }

  std::printf(
      "\n# in-process Adasum over W logical workers on one GPU vs cudaMemcpy D2D of the\n"
      "# same W*n*4 bytes; GB/s = W*n*4 / time\n");
  std::printf("#%3s %12s %12s | %10s %7s | %10s %7s | %8s %4s\n", "W", "n/worker", "total(B)",
              "adasum us", "GB/s", "memcpy us", "GB/s", "fraction", "#wr");
  double fraction = 0;
  long wrong = 0;
  for (int W : {8, 64}) {
    for (size_t total : {size_t{4} << 20, size_t{64} << 20}) {
      const AdasumRow row = bench_adasum(W, total);
      const size_t n = total / sizeof(float) / static_cast<size_t>(W);
      const double bytes = static_cast<double>(W) * n * sizeof(float);
      const double frac = row.t_copy / row.t_ada;
      if (W == 64) fraction = frac;  // the largest total comes last
      wrong += row.wrong;
      std::printf(" %3d %12zu %12.0f | %10.1f %7.1f | %10.1f %7.1f | %8.3f %4ld\n", W, n, bytes,
                  row.t_ada * 1e6, bytes / row.t_ada / 1e9, row.t_copy * 1e6,
                  bytes / row.t_copy / 1e9, frac, row.wrong);
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
    const SharingRow r = bench_sharing(lenet, W, B);
    std::printf(" %3d %5d %12.0f %12.0f %12.0f   %s (%.2fx the other)\n", W, B, r.sequential,
                r.streams, r.batched, r.streams > r.sequential ? "streams" : "sequential",
                r.streams > r.sequential ? r.streams / r.sequential : r.sequential / r.streams);
    std::fflush(stdout);
  }
  if (wrong) {
    std::printf("RESULT check_failed=1 adasum_wrong=%ld\n", wrong);
    return 1;
  }
  std::string name = dev.name;
  std::replace(name.begin(), name.end(), ' ', '_');
  std::printf("RESULT gpu_over_cpu_lenet_b1024=%.2f gpu_adasum_bw_fraction=%.3f device=%s\n",
              cpu_best > 0 ? gpu1024 / cpu_best : 0.0, fraction, name.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 0;
  try {
    rc = run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gpu: %s\n", e.what());
    rc = 1;
  }
  MPI_Finalize();
  return rc;
}
