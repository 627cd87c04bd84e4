// The error of combining gradients in parallel against the sequential run they emulate
// (Maleki et al., "Scaling Distributed Training with Adaptive Summation", arXiv:2006.02924,
// section 3.7, Fig. 2), from the common model w0 and the first K workers' batches b_k, in
// double precision:
//   g_k = grad L_k(w0);  h_k = g_k - a H_k (sum_{j<k} h_j), H_k exact HVP
//   w_emu = w0 - a sum_k h_k        (first-order Taylor, exact Hessian)
//   w_seq = K plain SGD steps from w0 on b_1..b_K
//   w_adasum = w0 - a Adasum(g),  w_sum = w0 - a sum g,  w_avg = w0 - a mean g
// Columns: relative errors ||w_x - w_emu|| / ||w_emu - w0|| and ||w_x - w_seq|| /
// ||w_seq - w0|| for x in {adasum, sum, average}, and seq_vs_emu (the Taylor error);
// a = the step's learning rate. The partial sum sum_{j<k} h_j and w_seq travel along the
// worker order from rank to rank (each HVP runs where its batch lives). Cost per logged step
// and worker: 2 gradients + 1 HVP (~2 gradients) in double. Written as metrics/seq_error.
#include <cmath>

#include "app/metrics/metric.h"
#include "comm/reference.h"

namespace wb::app {

struct SeqEmulationParams {
  int64_t every = 0;
  train::WorkerCount workers;
  static void describe(core::ParamSet<SeqEmulationParams>& p) {
    p.field("every", &SeqEmulationParams::every, "log every N steps; 0 = off").min(0).max(train::kMaxSteps);
    p.field("workers", &SeqEmulationParams::workers,
            "emulate the sequential run over all workers or the first k (k <= workers)");
  }
};

namespace {
double dist(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
  return std::sqrt(s);
}
}  // namespace

class SeqEmulation final : public Metric {
 public:
  SeqEmulation(const SeqEmulationParams& p, const models::Model& m, int W) : p_(p), model_(m), W_(W) {
    for (const auto& t : m.tensors()) segs_.push_back({t.offset, t.size});
  }
  static MetricSchema schema() {
    return {"seq_error", "columns",
            fixed_columns({"adasum_vs_emu", "sum_vs_emu", "average_vs_emu", "adasum_vs_seq",
                           "sum_vs_seq", "average_vs_seq", "seq_vs_emu"})};
  }
  // The sequential emulation over the first k workers needs k of them.
  static void check(const SeqEmulationParams& p, const train::RunConfig& c, const core::Where& w) {
    if (p.workers.k > c.workers)
      w.key("workers").fail("must be <= workers (" + std::to_string(c.workers) + "), got " +
                            std::to_string(p.workers.k) + " (\"all\" emulates every worker)");
  }
  std::vector<double> measure(algo::StepContext& ctx, GradientCopies&) override;

 private:
  SeqEmulationParams p_;
  const models::Model& model_;
  int W_;
  std::vector<comm::Segment> segs_;
};

std::vector<double> SeqEmulation::measure(algo::StepContext& ctx, GradientCopies&) {
  const size_t n = model_.num_params();
  const int K = p_.workers.k == 0
                    ? W_
                    : static_cast<int>(std::min<int64_t>(p_.workers.k, W_));
  const double a = ctx.lr;
  // The common model w0 (synchronous algorithms: every replica holds it).
  std::vector<double> w0(ctx.workers[0].w.begin(), ctx.workers[0].w.end());

  // A worker keeps its last batch's indices, not its samples: gather them again (the same
  // batch, bit for bit) to replay the pass.
  models::Batch replay;
  auto batch_of = [&](const train::Worker& w) -> const models::Batch& {
    ctx.train.gather(w.idx, replay);
    return replay;
  };

  // 1. Double-precision gradients of the first K workers at w0, gathered to every rank.
  std::vector<double> G(static_cast<size_t>(K) * n, 0.0), gk(n);
  for (auto& w : ctx.workers)
    if (w.id < K) {
      model_.loss_grad_f64(w0, batch_of(w), gk, w.last_noise);
      std::copy(gk.begin(), gk.end(), G.begin() + static_cast<std::ptrdiff_t>(w.id * n));
    }
  ctx.coll.allgather_worker_blocks(G, n, K);

  // 2. The sequential chain in worker order: s = sum_{j<k} h_j and w_seq travel along
  //    the ranks; each HVP and each SGD step runs where worker k's batch lives.
  std::vector<double> state(2 * n);  // [s | w_seq]
  std::copy(w0.begin(), w0.end(), state.begin() + static_cast<std::ptrdiff_t>(n));
  const int first_local = ctx.coll.first_local();
  ctx.coll.chain_over_workers(state, K, [&](std::span<double> st, int first, int last) {
    std::vector<double> hv(n), g(n);
    double* s = st.data();
    double* wseq = st.data() + n;
    for (int id = first; id < last; ++id) {
      const auto& w = ctx.workers[static_cast<size_t>(id - first_local)];
      const models::Batch& b = batch_of(w);
      model_.hvp_f64(w0, std::span<const double>(s, n), b, hv, w.last_noise);
      const double* g0 = G.data() + static_cast<size_t>(id) * n;
      for (size_t i = 0; i < n; ++i) s[i] += g0[i] - a * hv[i];
      model_.loss_grad_f64(std::span<const double>(wseq, n), b, g, w.last_noise);
      for (size_t i = 0; i < n; ++i) wseq[i] -= a * g[i];
    }
  });

  // 3. The parallel models from the same K gradients.
  std::vector<std::vector<double>> gs(static_cast<size_t>(K));
  for (int k = 0; k < K; ++k)
    gs[static_cast<size_t>(k)].assign(G.begin() + static_cast<std::ptrdiff_t>(k * n),
                                      G.begin() + static_cast<std::ptrdiff_t>((k + 1) * n));
  const std::vector<double> as = comm::adasum_reference<double>(gs, segs_);
  std::vector<double> w_emu(n), w_seq(state.begin() + static_cast<std::ptrdiff_t>(n), state.end()),
      w_as(n), w_sum(n), w_avg(n);
  for (size_t i = 0; i < n; ++i) {
    double sum = 0;
    for (int k = 0; k < K; ++k) sum += G[static_cast<size_t>(k) * n + i];
    w_emu[i] = w0[i] - a * state[i];
    w_as[i] = w0[i] - a * as[i];
    w_sum[i] = w0[i] - a * sum;
    w_avg[i] = w0[i] - a * sum / K;
  }
  const double de = dist(w_emu, w0), ds = dist(w_seq, w0);
  auto rel = [](double d, double s) { return s > 0 ? d / s : (d == 0 ? 0.0 : NAN); };
  return {rel(dist(w_as, w_emu), de), rel(dist(w_sum, w_emu), de), rel(dist(w_avg, w_emu), de),
          rel(dist(w_as, w_seq), ds),  rel(dist(w_sum, w_seq), ds), rel(dist(w_avg, w_seq), ds),
          rel(dist(w_seq, w_emu), de)};
}

}  // namespace wb::app

WB_REGISTER_METRIC("seq_emulation", wb::app::SeqEmulation, wb::app::SeqEmulationParams,
                   "error against the exact-Hessian sequential emulation (arXiv:2006.02924 3.7)");
