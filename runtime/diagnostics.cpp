#include "runtime/diagnostics.h"

#include <cmath>

#include "comm/reference.h"
#include "runtime/core/error.h"

namespace wb::rt {

namespace {
double norm2(const float* x, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  return s;
}
double dist(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
  return std::sqrt(s);
}
}  // namespace

const std::vector<std::string>& Diagnostics::seq_columns() {
  static const std::vector<std::string> c = {"adasum_vs_emu", "sum_vs_emu",    "average_vs_emu",
                                             "adasum_vs_seq", "sum_vs_seq",    "average_vs_seq",
                                             "seq_vs_emu"};
  return c;
}

Diagnostics::Diagnostics(const MetricsParams& p, const models::Model& m, int workers)
    : p_(p), model_(m), W_(workers) {
  for (const auto& t : m.tensors()) {
    segs_.push_back({t.offset, t.size});
    names_.push_back(t.name);
  }
}

void Diagnostics::on_gradients(algo::StepContext& ctx) {
  if (ctx.step == last_step_) return;  // local_steps: measure the first pass of a step
  last_step_ = ctx.step;
  auto due = [&](int64_t every) { return every > 0 && ctx.step % every == 0; };
  const bool orth = due(p_.orthogonality.every), div = due(p_.diversity.every);
  if (orth || div) orthogonality_and_diversity(ctx, orth, div);
  if (due(p_.seq_emulation.every)) seq_emulation(ctx);
}

void Diagnostics::orthogonality_and_diversity(algo::StepContext& ctx, bool orth, bool div) {
  const size_t T = segs_.size(), n = model_.num_params(), L = ctx.workers.size();
  if (scratch_.size() != L) scratch_.assign(L, std::vector<float>(n));
  // sum_i ||g_i,t||^2 over all workers, added in worker order on every rank: each worker's
  // per-tensor norms are gathered first, so the sum has the same bits at any number of ranks
  // (per-rank partial sums added in rank order differed in the last bits).
  const size_t W = static_cast<size_t>(ctx.W);
  std::vector<double> blocks(W * T, 0.0);
  for (size_t k = 0; k < L; ++k)
    for (size_t t = 0; t < T; ++t)
      blocks[(static_cast<size_t>(ctx.coll.first_local()) + k) * T + t] =
          norm2(ctx.workers[k].g.data() + segs_[t].offset, segs_[t].size);
  ctx.coll.allgather_worker_blocks(std::span<double>(blocks), T, static_cast<int>(W));
  std::vector<double> own(T + 1, 0.0);
  for (size_t k = 0; k < W; ++k)
    for (size_t t = 0; t < T; ++t) {
      const double s = blocks[k * T + t];
      own[t] += s;
      own[T] += s;
    }
  std::vector<std::span<float>> spans;
  auto combined_norms = [&](bool adasum) {
    spans.clear();
    for (size_t k = 0; k < L; ++k) {
      std::copy(ctx.workers[k].g.begin(), ctx.workers[k].g.end(), scratch_[k].begin());
      spans.emplace_back(scratch_[k]);
    }
    if (adasum)
      ctx.coll.adasum<float>(spans, segs_, comm::Charge::kNone);
    else
      ctx.coll.allreduce<float>(spans, comm::ReduceOp::kSum, comm::Charge::kNone);
    std::vector<double> c(T + 1, 0.0);
    for (size_t t = 0; t < T; ++t) {
      c[t] = norm2(scratch_[0].data() + segs_[t].offset, segs_[t].size);
      c[T] += c[t];
    }
    return c;
  };
  auto ratio = [](double a, double b) { return b > 0 ? a / b : NAN; };
  if (orth) {
    auto as = combined_norms(true);
    double mean = 0;
    orth_steps_.push_back(static_cast<double>(ctx.step));
    for (size_t t = 0; t < T; ++t) {
      const double v = ratio(as[t], own[t]);
      orth_rows_.push_back(v);
      mean += v / T;
    }
    orth_rows_.push_back(mean);
  }
  if (div) {
    auto sum = combined_norms(false);
    div_steps_.push_back(static_cast<double>(ctx.step));
    for (size_t t = 0; t <= T; ++t) div_rows_.push_back(ratio(own[t], sum[t]));
  }
}

void Diagnostics::seq_emulation(algo::StepContext& ctx) {
  const size_t n = model_.num_params();
  const int K = p_.seq_emulation.workers.k == 0
                    ? W_
                    : static_cast<int>(std::min<int64_t>(p_.seq_emulation.workers.k, W_));
  const double a = ctx.lr;
  // The common model w0 (synchronous algorithms: every replica holds it).
  std::vector<double> w0(ctx.workers[0].w.begin(), ctx.workers[0].w.end());

  // A worker keeps its last batch's indices, not its samples: gather them again (the same
  // batch, bit for bit) to replay the pass.
  models::Batch replay;
  auto batch_of = [&](const Worker& w) -> const models::Batch& {
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
  seq_steps_.push_back(static_cast<double>(ctx.step));
  for (double v : {rel(dist(w_as, w_emu), de), rel(dist(w_sum, w_emu), de),
                   rel(dist(w_avg, w_emu), de), rel(dist(w_as, w_seq), ds),
                   rel(dist(w_sum, w_seq), ds), rel(dist(w_avg, w_seq), ds),
                   rel(dist(w_seq, w_emu), de)})
    seq_rows_.push_back(v);
}

void Diagnostics::append_series(std::vector<Series>& out) const {
  auto add = [&](const char* name, const std::vector<double>& steps, const std::vector<double>& rows,
                 std::vector<std::string> cols, const char* col_attr) {
    if (steps.empty()) return;
    Series s;
    s.path = std::string("metrics/") + name;
    s.rows = steps.size();
    s.cols = cols.size();
    s.data = rows;
    s.string_list_attrs[col_attr] = std::move(cols);
    if (s.cols == 1) s.cols = 1;
    out.push_back(std::move(s));
    Series st;
    st.path = std::string("metrics/") + name + "_step";
    st.rows = steps.size();
    st.data = steps;
    out.push_back(std::move(st));
  };
  auto with = [&](const char* extra) {
    auto v = names_;
    v.push_back(extra);
    return v;
  };
  add("orthogonality", orth_steps_, orth_rows_, with("mean"), "tensor_names");
  add("diversity", div_steps_, div_rows_, with("total"), "tensor_names");
  add("seq_error", seq_steps_, seq_rows_, seq_columns(), "columns");
}

}  // namespace wb::rt
