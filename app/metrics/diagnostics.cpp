#include "app/metrics/diagnostics.h"

#include <cmath>
#include <stdexcept>

#include "core/error.h"

namespace wb::app {

namespace {
double norm2(const float* x, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  return s;
}
std::vector<comm::Segment> tensor_segments(const models::Model& m) {
  std::vector<comm::Segment> segs;
  for (const auto& t : m.tensors()) segs.push_back({t.offset, t.size});
  return segs;
}
}  // namespace

Diagnostics::Diagnostics(const train::MetricsParams& p, const models::Model& m, int workers) {
  for (const auto& e : metric_registry().list()) {
    const int64_t every = p.every(e.name);
    if (every <= 0) continue;
    active_.push_back({&e, every, e.create(p.named->at(e.name), m, workers), e.schema.columns(m), {}, {}});
  }
}

void Diagnostics::on_gradients(algo::StepContext& ctx) {
  if (ctx.step == last_step_) return;  // local_steps: measure the first pass of a step
  last_step_ = ctx.step;
  for (auto& a : active_) {
    if (ctx.step % a.every != 0) continue;
    std::vector<double> row = a.metric->measure(ctx, copies_);
    if (row.size() != a.columns.size())
      throw std::logic_error("metric " + a.entry->name + " measured " + std::to_string(row.size()) +
                             " values for its " + std::to_string(a.columns.size()) + " columns");
    a.steps.push_back(static_cast<double>(ctx.step));
    a.rows.insert(a.rows.end(), row.begin(), row.end());
  }
}

void Diagnostics::append_series(std::vector<core::Series>& out) const {
  for (const auto& a : active_) {
    if (a.steps.empty()) continue;
    const MetricSchema& sc = a.entry->schema;
    core::Series s;
    s.path = "metrics/" + sc.series;
    s.rows = a.steps.size();
    s.cols = a.columns.size();
    s.data = a.rows;
    s.string_list_attrs[sc.columns_attr] = a.columns;
    out.push_back(std::move(s));
    core::Series st;
    st.path = "metrics/" + sc.series + "_step";
    st.rows = a.steps.size();
    st.data = a.steps;
    out.push_back(std::move(st));
  }
}

void check_metrics_supported(const train::RunConfig& c, const algo::Algorithm& algo,
                             const core::Where& w) {
  if (!c.metrics.any()) return;
  for (const auto& e : metric_registry().list()) {
    if (c.metrics.every(e.name) <= 0) continue;
    const core::Where wm = w.key("metrics").key(e.name);
    if (!algo.observes_gradients())
      wm.fail(c.algorithm.value().value("name", "") + " does not support metrics: it does not " +
              "expose its workers' fresh gradients to them (Algorithm::observes_gradients); " +
              "remove \"metrics." + e.name + "\" or use another algorithm");
    e.check(c.metrics.named->at(e.name), c, wm);
  }
}

double metric_series_doubles(const train::MetricsParams& p, const models::Model& m, double steps) {
  double doubles = 0;
  for (const auto& e : metric_registry().list()) {
    const int64_t every = p.every(e.name);
    if (every <= 0) continue;
    const double row = static_cast<double>(e.schema.columns(m).size()) + 1.0;  // + its step
    doubles += row * (std::floor(steps / static_cast<double>(every)) + 1.0);
  }
  return doubles;
}

double metric_floats_per_worker(const train::MetricsParams& p, const models::Model& m) {
  for (const auto& e : metric_registry().list())
    if (p.every(e.name) > 0 && e.schema.gradient_copy) return static_cast<double>(m.num_params());
  return 0;
}

std::vector<double> worker_norms_per_tensor(algo::StepContext& ctx) {
  const auto segs = tensor_segments(ctx.model);
  const size_t T = segs.size(), L = ctx.workers.size();
  // Each worker's per-tensor norms are gathered first and added in worker order on every
  // rank, so the sum has the same bits at any number of ranks (per-rank partial sums added
  // in rank order differed in the last bits).
  const size_t W = static_cast<size_t>(ctx.W);
  std::vector<double> blocks(W * T, 0.0);
  for (size_t k = 0; k < L; ++k)
    for (size_t t = 0; t < T; ++t)
      blocks[(static_cast<size_t>(ctx.coll.first_local()) + k) * T + t] =
          norm2(ctx.workers[k].g.data() + segs[t].offset, segs[t].size);
  ctx.coll.allgather_worker_blocks(std::span<double>(blocks), T, static_cast<int>(W));
  std::vector<double> own(T + 1, 0.0);
  for (size_t k = 0; k < W; ++k)
    for (size_t t = 0; t < T; ++t) {
      const double s = blocks[k * T + t];
      own[t] += s;
      own[T] += s;
    }
  return own;
}

std::vector<double> combined_norms_per_tensor(algo::StepContext& ctx, GradientCopies& copies,
                                              bool adasum) {
  const auto segs = tensor_segments(ctx.model);
  const size_t T = segs.size();
  auto& spans = copies.of(ctx);
  // Uncharged: a measurement, not part of the algorithm's step (the simulated clock).
  if (adasum)
    ctx.coll.adasum<float>(spans, segs, comm::Charge::kNone);
  else
    ctx.coll.allreduce<float>(spans, comm::ReduceOp::kSum, comm::Charge::kNone);
  std::vector<double> c(T + 1, 0.0);
  for (size_t t = 0; t < T; ++t) {
    c[t] = norm2(spans[0].data() + segs[t].offset, segs[t].size);
    c[T] += c[t];
  }
  return c;
}

}  // namespace wb::app
