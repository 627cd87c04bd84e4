// The comm/ passes and in-process collectives on device buffers (cuda/comm_cuda.h) against
// their CPU twins: comm/kernels.h's scalar references and comm/reference.h's plain loops,
// at awkward lengths (around the block size and the Adasum chunk, 20n-17, 2n+1, n+2:
// Horovod's test sizes) and worker counts (1, 2, 3, 5, 6, 7, 8, 13, 64: internal tree nodes of
// odd size on either side).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "comm/kernels.h"
#include "comm/reference.h"
#include "cuda/comm_cuda.h"
#include "tests/cuda/cuda_test_util.h"

using namespace wb;
using namespace wb::cuda::test;
namespace kern = wb::comm::kern;

namespace {

const std::vector<size_t> kLens{1, 2, 17, 255, 256, 257, 2047, 2048, 2049, 20 * 64 - 17, 100003};

template <class T>
void check_passes() {
  for (size_t n : kLens) {
    CAPTURE(n);
    auto a = randn<T>(n, n + 1), b = randn<T>(n, n + 2);
    auto ga = to_device(a), gb = to_device(b);

    // dot3 accumulates into v (device), like the CPU kernels.
    double want[3] = {1, 2, 3};
    kern::dot3_scalar(a.data(), b.data(), n, want);
    std::vector<double> v0{1, 2, 3};
    auto gv = to_device(v0);
    cuda::dot3<T>(ga.data(), gb.data(), n, gv.data());
    device_sync();
    const auto got = gv.to_host();
    double scale = 0;  // sum of |terms|: what a change of summation order is relative to
    for (size_t i = 0; i < n; ++i)
      scale += std::fabs(static_cast<double>(a[i]) * b[i]) + static_cast<double>(a[i]) * a[i] +
               static_cast<double>(b[i]) * b[i];
    check_close(got, std::vector<double>(want, want + 3), 1e-12 * (scale + 3), 1e-12, "dot3");

    // combine: the same double expression and one rounding as kern::combine_scalar; with an
    // FMA the CPU evaluates fma(ca, a, cb*b) exactly as the GPU does, so the bits agree.
    std::vector<T> want_c(n);
    kern::combine_scalar(want_c.data(), a.data(), b.data(), n, 0.75, -1.25);
    cuda::DeviceBuffer<T> gout(n);
    cuda::combine<T>(gout.data(), ga.data(), gb.data(), n, 0.75, -1.25);
    device_sync();
#if defined(__FMA__)
    check_equal(gout.to_host(), want_c, "combine (bit-identical with an FMA CPU)");
#else
    // Without an FMA on the host (a portable build, -DWORKBENCH_NATIVE=OFF) the CPU rounds
    // ca*a and cb*b separately: the two results differ by at most one rounding of a
    // product, i.e. eps * (|ca a| + |cb b|) in double, which can exceed an ulp of the result
    // under cancellation (seen on an H200 host: 5 of 255 elements off by 1 ulp at rtol
    // 2.3e-16), plus, for float, one float rounding of the result.
    {
      const std::vector<T> got_c = gout.to_host();
      size_t bad = 0;
      for (size_t i = 0; i < n; ++i) {
        const double terms = std::fabs(0.75 * a[i]) + std::fabs(1.25 * b[i]);
        const double tol = 2.3e-16 * terms + (sizeof(T) == 4 ? 1.2e-7 * std::fabs(want_c[i]) : 0);
        if (!(std::fabs(static_cast<double>(got_c[i]) - want_c[i]) <= tol)) ++bad;
      }
      INFO("combine without a host FMA: " << bad << " of " << n
                                          << " elements beyond one product rounding");
      CHECK(bad == 0);
    }
#endif

    // add: IEEE adds element by element, bit-identical.
    std::vector<T> want_add = a;
    kern::add(want_add.data(), b.data(), n);
    cuda::add<T>(ga.data(), gb.data(), n);
    device_sync();
    check_equal(ga.to_host(), want_add, "add");

    // axpy_double
    std::vector<double> acc = randn<double>(n, n + 3), want_acc = acc;
    kern::axpy_double(want_acc.data(), b.data(), 0.3, n);
    auto gacc = to_device(acc);
    cuda::axpy_double<T>(gacc.data(), gb.data(), 0.3, n);
    device_sync();
    check_close(gacc.to_host(), want_acc, 1e-15, 1e-15, "axpy_double");
  }
}

// Uneven segments over [0, n) with a gap before the last one (gaps keep worker 0's value).
std::vector<comm::Segment> segments(size_t n) {
  std::vector<comm::Segment> s;
  if (n < 8) {
    s.push_back({0, n});
    return s;
  }
  const size_t a = n / 7, b = n / 3, gap = n / 11;
  s.push_back({0, a});
  s.push_back({a, b});
  s.push_back({a + b, 0});  // an empty segment
  s.push_back({a + b + gap, n - (a + b + gap)});
  return s;
}

template <class T>
void check_collectives(int W, size_t n) {
  CAPTURE(W);
  CAPTURE(n);
  const std::vector<comm::Segment> segs = segments(n);
  std::vector<std::vector<T>> g(W);
  for (int w = 0; w < W; ++w) {
    g[w] = randn<T>(n, 1000 * W + w);
    // A shared component so the Adasum coefficients are not trivial.
    for (size_t i = 0; i < n; ++i) g[w][i] += static_cast<T>(0.5 * std::sin(0.01 * i));
  }
  // One allocation, W slices (as bench_gpu).
  cuda::DeviceBuffer<T> all(static_cast<size_t>(W) * n);
  std::vector<T*> bufs(W);
  auto reset = [&] {
    for (int w = 0; w < W; ++w) {
      bufs[w] = all.data() + static_cast<size_t>(w) * n;
      WB_CHECK_CUDA(cudaMemcpy(bufs[w], g[w].data(), n * sizeof(T), cudaMemcpyHostToDevice));
    }
  };
  auto worker = [&](int w) {
    std::vector<T> v(n);
    WB_CHECK_CUDA(cudaMemcpy(v.data(), bufs[w], n * sizeof(T), cudaMemcpyDeviceToHost));
    return v;
  };
  cuda::LocalCollectives<T> coll(W, n, segs);

  // Sum: bit-identical to the tree reference, in every worker's buffer.
  const std::vector<T> sum = comm::tree_sum_reference(g);
  reset();
  coll.allreduce(bufs, cuda::Reduce::kSum);
  device_sync();
  for (int w = 0; w < W; ++w)
    check_equal(worker(w), sum, "allreduce sum, worker " + std::to_string(w));
  std::vector<T> avg = sum;
  for (auto& x : avg) x = x / static_cast<T>(W);
  reset();
  coll.allreduce(bufs, cuda::Reduce::kAverage);
  device_sync();
  for (int w = 0; w < W; ++w)
    check_equal(worker(w), avg, "allreduce average, worker " + std::to_string(w));

  // Weighted average (double accumulation in worker order: rounding of T(acc / total) only).
  std::vector<double> wts(W);
  for (int w = 0; w < W; ++w) wts[w] = 0.5 + (w % 3);
  const std::vector<T> wavg = comm::weighted_average_reference<T>(g, wts);
  reset();
  coll.weighted_average(bufs, wts);
  device_sync();
  const double wtol = sizeof(T) == 4 ? 1.2e-7 : 1e-15;
  for (int w = 0; w < W; ++w)
    check_close(worker(w), wavg, 1e-12, wtol, "weighted_average, worker " + std::to_string(w));

  // Adasum: per-segment coefficients from dot products summed in another order, so ~1 ulp.
  const std::vector<T> ada = comm::adasum_reference<T>(g, segs);
  double amax = 0;
  for (T x : ada) amax = std::max(amax, std::fabs(static_cast<double>(x)));
  reset();
  coll.adasum(bufs);
  device_sync();
  const double rtol = sizeof(T) == 4 ? 1e-5 : 1e-12;
  for (int w = 0; w < W; ++w)
    check_close(worker(w), ada, rtol * 0.1 * amax, rtol, "adasum, worker " + std::to_string(w));
  // Twice in a row on the same buffers (plan reuse, all inputs now equal: parallel vectors).
  coll.adasum(bufs);
  device_sync();
  std::vector<std::vector<T>> same(W, ada);
  const std::vector<T> ada2 = comm::adasum_reference<T>(same, segs);
  check_close(worker(W - 1), ada2, rtol * 0.1 * amax, rtol, "adasum of equal vectors");

  // The levels schedule alone (what runs before Hopper, and for segments too large for a
  // cluster) against the same reference: both schedules are checked on every GPU.
  cuda::LocalCollectives<T> levels(W, n, segs, /*max_cluster_blocks=*/0);
  CHECK(levels.cluster_tasks() == 0);
  reset();
  levels.adasum(bufs);
  device_sync();
  for (int w = 0; w < W; ++w)
    check_close(worker(w), ada, rtol * 0.1 * amax, rtol,
                "adasum, levels schedule, worker " + std::to_string(w));
}

int compute_capability_major() {
  int dev = 0, major = 0;
  WB_CHECK_CUDA(cudaGetDevice(&dev));
  WB_CHECK_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  return major;
}

}  // namespace

TEST_CASE_TEMPLATE("cuda dot3/combine/add/axpy_double vs comm/kernels.h", T, float, double) {
  check_passes<T>();
}

TEST_CASE_TEMPLATE("cuda LocalCollectives vs comm/reference.h at awkward sizes", T, float, double) {
  for (int W : {1, 2, 3, 5, 6, 7, 8, 13})
    for (size_t n : {size_t{1}, size_t{7}, size_t{2 * 2048 + 1}, size_t{20 * 64 - 17}})
      check_collectives<T>(W, n);
}

TEST_CASE("cuda in-process Adasum over 64 logical workers vs adasum_reference") {
  check_collectives<float>(64, 64 * 1024 + 2);
  check_collectives<double>(64, 20 * 64 - 17);
}

TEST_CASE("cuda Adasum: the cluster schedule runs where it should, beside the levels schedule") {
  // segments(n): 3 non-empty segments, an empty one and a gap. W = 64, n = 16K + 5: the largest
  // segment (7,096 x 64 floats, 1.8 MB) fits a cluster's shared memory on Hopper, and the 4
  // tasks (3 segments, the gap) one wave: the cluster schedule runs them all. n = 64K + 2: the
  // largest (27,310 x 64 floats, 7 MB) does not fit, so every segment stays on the levels
  // schedule (all or nothing: cuda/comm_cuda.h).
  const int major = compute_capability_major();
  {
    const size_t n = 16 * 1024 + 5;
    cuda::LocalCollectives<float> coll(64, n, segments(n));
    MESSAGE("W 64, n " << n << ": " << coll.cluster_tasks() << " cluster tasks of "
                       << coll.cluster_blocks() << " blocks");
    CHECK(coll.cluster_tasks() == (major >= 9 ? 4 : 0));
    check_collectives<float>(64, n);
  }
  {
    const size_t n = 64 * 1024 + 2;
    cuda::LocalCollectives<float> coll(64, n, segments(n));
    CHECK(coll.cluster_tasks() == 0);
  }
  // Many workers, few elements (every segment on a cluster of one block), and a large W = 8
  // buffer (on the levels schedule).
  check_collectives<float>(64, 64 * 64 + 5);
  check_collectives<float>(1030, 40);  // a level of 512 nodes: every thread of a block has one
  check_collectives<float>(8, 300 * 1000 + 3);
  check_collectives<double>(8, 300 * 1000 + 3);
}
