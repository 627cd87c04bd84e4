// streaming_diloco: Streaming DiLoCo (Douillard et al., arXiv:2501.18512), DiLoCo
// (arXiv:2311.08105, algorithms/diloco.cpp) with the model synchronized in fragments on a
// staggered schedule, the communication overlapped with inner steps, and the outer gradients
// quantized. Key names are torchft's (torchft/local_sgd.py, class DiLoCo): sync_every,
// num_fragments, fragment_sync_delay, fragment_update_alpha; quantize_bits replaces torchft's
// should_quantize boolean by the bits per element.
//
// Fragments (section 2.1). theta is cut into P = num_fragments contiguous fragments: by
// tensor boundaries when the model has at least P parameter tensors (runs of whole tensors
// balanced by parameter count, partition_blocks in async_common.h), else by floats (P
// near-equal ranges, fragment p = [p n / P, (p + 1) n / P)); workers/fragments records which.
// Every fragment is synchronized once every H = sync_every inner steps, fragment p at the
// steps s (1-based, counted on every worker) with s = o_p + k H, o_p = floor((p + 1) H / P):
// torchft's fragment_sync_offset, the staggering of the paper's section 2.1 with fragment 0
// first. P = 1 is DiLoCo's schedule (s = H, 2H, ...). Worked example, H = 10, P = 2:
// fragment 0 at s = 5, 15, 25, ...; fragment 1 at s = 10, 20, 30, ...
//
// A fragment's round (sections 2.2 and 2.3), started after step s's inner step:
//   every worker k sends its outer gradient Delta_k = theta_outer[p] - theta_k[p], encoded at
//   quantize_bits (32: as is; 16: bf16; 8: scaled integer; 4: scaled E3M0, diloco_common.h);
//   the average of the decoded Delta_k (an allreduce accumulating in float, the paper's "the
//   reduction is done in FP32") is the fragment's outer gradient;
//   tau = fragment_sync_delay inner steps later (after step s + tau's inner step) the outer
//   optimizer steps on theta_outer[p], and every worker's fragment is merged:
//       theta_k[p] <- alpha theta_k[p] + (1 - alpha) theta_outer[p],  alpha = fragment_update_alpha
//   (alpha 0 discards the tau steps' local progress on the fragment; the paper uses 0.5).
// At 32 bits the workers send their parameters and Delta = theta_outer - mean_k theta_k, the
// same floats on the wire and the same outer gradient as DiLoCo computes it: with P = 1,
// tau = 0, alpha = 0 this is diloco bit for bit (tests/unit/test_diloco.cpp).
// fragment_sync_delay < sync_every: a fragment's round lands before its next one starts.
//
// The last step ends every round: a fragment in flight is waited for and applied; a fragment
// with no round in flight that took inner steps since its last round's start synchronizes
// then (blocking), so the run ends on theta_outer, which is what is evaluated (as diloco).
// The inner steps a fragment took after the start of the round it applies at the last step
// are not in theta_outer.
//
// Simulated time. A step's compute is the slowest worker's (compute_gradients). A round's
// communication is priced by the cost model as one allreduce over W workers of the bytes
// actually sent (wire_bytes: codes plus the float scale), plus the average's division over
// the fragment's floats; it runs on the cross-worker link from max(start, the link free) for
// that time C, rounds queueing on the one link in start order. The clock advances only by
// what is not hidden: applying a round waits max(0, done - now), the part of C that the tau
// steps' compute did not cover, charged as communication. tau = 0 charges C (exactly
// DiLoCo's collective). The compute is not slowed by the overlapped transfer (no contention
// between the link and the device is modelled), and the timeline shows a round's exposed
// part only.
#include <algorithm>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/async_common.h"
#include "algorithms/diloco_common.h"

namespace wb::algo {

struct StreamingDilocoParams {
  int64_t sync_every = 500;
  int64_t num_fragments = 1;
  int64_t fragment_sync_delay = 0;
  double fragment_update_alpha = 0.0;
  int64_t quantize_bits = 32;
  std::string outer = "nesterov";
  double outer_lr = 0.7;
  double outer_momentum = 0.9;
  static void describe(core::ParamSet<StreamingDilocoParams>& p) {
    using P = StreamingDilocoParams;
    p.field("sync_every", &P::sync_every,
            "H: inner steps between two rounds of the same fragment (arXiv:2501.18512 section 2.1)")
        .min(1);
    p.field("num_fragments", &P::num_fragments,
            "P: contiguous fragments of the model (whole tensors when the model has >= P, else "
            "floats), fragment p synchronized at steps floor((p+1) H / P) + k H; 1 = diloco")
        .min(1)
        .max(1 << 20);
    p.field("fragment_sync_delay", &P::fragment_sync_delay,
            "tau: inner steps between a fragment's communication start and its outer step "
            "(section 2.2); the clock hides the communication behind those steps' compute and "
            "charges only what sticks out; must be < sync_every")
        .min(0);
    p.field("fragment_update_alpha", &P::fragment_update_alpha,
            "alpha: a worker's fragment becomes alpha x local + (1 - alpha) x outer (section 2.2; "
            "0 = take the outer model, 1 = never take it)")
        .min(0)
        .max(1);
    p.field("quantize_bits", &P::quantize_bits,
            "bits per element of the outer gradient each worker sends (section 2.3): 32 none, 16 "
            "bf16 (round to nearest even), 8 scaled integer, 4 scaled E3M0; priced by the bytes sent");
    p.field("outer", &P::outer, "outer optimizer on the averaged outer gradient")
        .one_of({"sgd", "nesterov", "adam"});
    p.field("outer_lr", &P::outer_lr, "outer learning rate (the paper's 0.7)").min(0).max(100);
    p.field("outer_momentum", &P::outer_momentum, "outer momentum (Nesterov mu; Adam beta1)")
        .min(0)
        .max(1, false);
    p.check([](const P& q, const core::Where& w) {
      if (q.quantize_bits != 32 && q.quantize_bits != 16 && q.quantize_bits != 8 && q.quantize_bits != 4)
        w.key("quantize_bits").fail("expected 32, 16, 8 or 4, got " + std::to_string(q.quantize_bits));
      if (q.num_fragments > q.sync_every)
        w.key("num_fragments").fail("num_fragments " + std::to_string(q.num_fragments) +
                                    " > sync_every " + std::to_string(q.sync_every) +
                                    ": every fragment needs its own step of the H-step cycle");
      if (q.fragment_sync_delay >= q.sync_every)
        w.key("fragment_sync_delay").fail("fragment_sync_delay " + std::to_string(q.fragment_sync_delay) +
                                          " >= sync_every " + std::to_string(q.sync_every) +
                                          ": a fragment's round must land before its next one starts");
    });
  }
};

class StreamingDiloco final : public Algorithm {
 public:
  explicit StreamingDiloco(const StreamingDilocoParams& p) : p_(p), bits_(static_cast<int>(p.quantize_bits)) {}

  void setup(StepContext& ctx) override {
    const auto& w0 = ctx.workers[0].w;  // every worker starts from the same model
    theta_.assign(w0.begin(), w0.end());
    const size_t n = theta_.size();
    const auto P = static_cast<size_t>(p_.num_fragments);
    frags_.clear();
    const auto& tensors = ctx.model.tensors();
    auto add = [&](size_t lo, size_t hi) {
      Fragment f;
      f.lo = lo;
      f.hi = hi;
      frags_.push_back(f);
    };
    if (tensors.size() >= P) {
      for (const Block& b : partition_blocks(tensors, static_cast<int>(P))) add(b.offset, b.offset + b.size);
    } else {
      if (n < P)
        throw UserError("", "streaming_diloco: num_fragments " + std::to_string(P) + " > the model's " +
                                std::to_string(n) + " parameters: set $.algorithm.num_fragments <= " +
                                std::to_string(n));
      for (size_t p = 0; p < P; ++p) add(p * n / P, (p + 1) * n / P);
    }
    const int64_t H = p_.sync_every;
    for (size_t p = 0; p < P; ++p)
      frags_[p].offset = static_cast<int64_t>(p + 1) * H / static_cast<int64_t>(P);  // floor((p+1) H / P)
    outer_.init(p_.outer, p_.outer_lr, p_.outer_momentum, n);
    send_.assign(ctx.workers.size(), std::vector<float>(n, 0.0f));
    flights_.clear();
    syncs_.clear();
  }

  void step(StepContext& ctx) override {
    compute_gradients(ctx);
    for (auto& w : ctx.workers) w.opt->step(w.w, w.g, ctx.lr);
    ctx.update_max_abs = max_abs(ctx.workers[0].g);
    const int64_t s = ctx.step + 1, T = ctx.run.total_steps;
    if (s >= T) {
      finish(ctx, s);
      return;
    }
    // Rounds due now (started tau steps ago; in start order, which is apply order), then the
    // fragment whose offset falls on s (at most one: the offsets are distinct mod H).
    while (!flights_.empty() && flights_.front().apply_step == s) apply(ctx, s);
    for (size_t p = 0; p < frags_.size(); ++p) {
      if (s < frags_[p].offset || (s - frags_[p].offset) % p_.sync_every != 0) continue;
      start(ctx, p, s);
      if (p_.fragment_sync_delay == 0) apply(ctx, s);
    }
  }

  std::span<const float> eval_params(StepContext&) override { return theta_; }

  void append_series(StepContext&, std::vector<core::Series>& out) override {
    core::Series f;  // fragment p: [offset, size] in the parameter vector
    f.path = "workers/fragments";
    f.rows = frags_.size();
    f.cols = 2;
    for (const auto& fr : frags_) {
      f.data.push_back(static_cast<double>(fr.lo));
      f.data.push_back(static_cast<double>(fr.hi - fr.lo));
    }
    out.push_back(std::move(f));
    core::Series r;  // every round: [fragment, step its communication started after, step its outer step followed]
    r.path = "workers/fragment_syncs";
    r.rows = syncs_.size() / 3;
    r.cols = 3;
    r.data = syncs_;
    out.push_back(std::move(r));
  }

  Footprint footprint(const train::RunConfig&, const FootprintInputs& in) const override {
    Footprint f;
    const double n = static_cast<double>(in.n), P = static_cast<double>(p_.num_fragments);
    // theta_outer (float) + the outer optimizer's state (double); per worker the buffer its
    // outer gradient is sent from (it keeps training while the round is in flight)
    f.shared = 4.0 * n + 8.0 * n * OuterOptimizer::state_doubles(p_.outer);
    f.per_worker = 4.0 * n;
    f.series_fixed = 2 * P + 3 * P;
    f.series_per_step = 3 * P / static_cast<double>(p_.sync_every);
    return f;
  }

 private:
  struct Fragment {
    size_t lo = 0, hi = 0;
    int64_t offset = 0;      // o_p: the first step its round starts after
    int64_t outer_steps = 0; // its own outer step count (Adam's bias correction)
    int64_t last_start = 0;  // the step its last round started after (0: none yet)
  };
  struct Flight {  // a round in flight: its result sits in send_[.][lo, hi)
    size_t frag = 0;
    int64_t start_step = 0, apply_step = 0;
    int ticket = 0;  // the clock's transfer (SimClock::start_transfer)
  };

  // One round of m floats as the clock prices it: an allreduce over W of the bytes sent, plus
  // the average's division over the m decoded floats. At 32 bits it is the very CommCall
  // diloco's allreduce prices; below, the cost model's per-element pass cannot take a fraction
  // of a byte per element (CommCall::elem_bytes), so the division is priced as the 32-bit
  // call's: (average - sum) of 32 bits, plus the sum of the bytes sent.
  std::vector<sim::CommTerm> round_terms(StepContext& ctx, size_t m) const {
    sim::CommCall k;
    k.op = sim::CommOp::kAllreduce;
    k.workers = ctx.W;
    k.bytes = 4.0 * static_cast<double>(m);
    k.elem_bytes = 4;
    k.average = true;
    if (bits_ == 32) return {{k, 1.0}};
    sim::CommCall sum = k;
    sum.average = false;
    sim::CommCall q = sum;
    q.bytes = wire_bytes(m, bits_);
    return {{k, 1.0}, {sum, -1.0}, {q, 1.0}};
  }

  void start(StepContext& ctx, size_t p, int64_t s) {
    Fragment& fr = frags_[p];
    const size_t lo = fr.lo, hi = fr.hi, m = hi - lo;
    std::vector<std::span<float>> spans;
    for (size_t k = 0; k < ctx.workers.size(); ++k) {
      const auto& w = ctx.workers[k].w;
      auto& b = send_[k];
      if (bits_ == 32) {
        std::copy(w.begin() + static_cast<std::ptrdiff_t>(lo), w.begin() + static_cast<std::ptrdiff_t>(hi),
                  b.begin() + static_cast<std::ptrdiff_t>(lo));
      } else {
        for (size_t i = lo; i < hi; ++i) b[i] = theta_[i] - w[i];
        round_trip(std::span<float>(b).subspan(lo, m), bits_);
      }
      spans.emplace_back(std::span<float>(b).subspan(lo, m));
    }
    // The values now; the time is charged when the round is applied (see the header).
    ctx.coll.allreduce<float>(spans, comm::ReduceOp::kAverage, comm::Charge::kNone);
    Flight f;
    f.frag = p;
    f.start_step = s;
    f.apply_step = s + p_.fragment_sync_delay;
    // The clock queues the round on the link and charges, at apply, what the tau steps'
    // compute did not hide (all of it when tau = 0).
    f.ticket = ctx.clock.start_transfer(round_terms(ctx, m));
    fr.last_start = s;
    flights_.push_back(f);
  }

  // The oldest round in flight: wait for it, outer step, merge into every local worker.
  void apply(StepContext& ctx, int64_t s) {
    const Flight f = flights_.front();
    flights_.erase(flights_.begin());
    ctx.clock.finish_transfer(f.ticket, "allreduce");
    Fragment& fr = frags_[f.frag];
    const std::vector<float>& res = send_.empty() ? theta_ : send_[0];  // identical on every local worker
    ++fr.outer_steps;
    if (bits_ == 32)
      outer_.step(theta_, fr.lo, fr.hi, fr.outer_steps,
                  [&](size_t i) { return static_cast<double>(theta_[i]) - static_cast<double>(res[i]); });
    else
      outer_.step(theta_, fr.lo, fr.hi, fr.outer_steps, [&](size_t i) { return static_cast<double>(res[i]); });
    const double alpha = p_.fragment_update_alpha;
    for (auto& w : ctx.workers)
      for (size_t i = fr.lo; i < fr.hi; ++i) w.w[i] = mix_fragment(theta_[i], w.w[i], alpha);
    syncs_.push_back(static_cast<double>(f.frag));
    syncs_.push_back(static_cast<double>(f.start_step));
    syncs_.push_back(static_cast<double>(s));
  }

  // The last step: every round in flight lands, then every fragment with inner steps since
  // its last round's start and none applied now synchronizes, blocking.
  void finish(StepContext& ctx, int64_t s) {
    std::vector<bool> landed(frags_.size(), false);
    while (!flights_.empty()) {
      landed[flights_.front().frag] = true;
      apply(ctx, s);
    }
    for (size_t p = 0; p < frags_.size(); ++p) {
      if (landed[p] || frags_[p].last_start >= s) continue;
      start(ctx, p, s);
      apply(ctx, s);
    }
  }

  StreamingDilocoParams p_;
  int bits_ = 32;
  std::vector<Fragment> frags_;
  std::vector<float> theta_;               // theta_outer, identical on every rank
  OuterOptimizer outer_;
  std::vector<std::vector<float>> send_;   // per local worker: what it sent, then the round's average
  std::vector<Flight> flights_;            // rounds in flight, in start order
  std::vector<double> syncs_;              // workers/fragment_syncs, row-major
};

}  // namespace wb::algo

WB_REGISTER_ALGORITHM("streaming_diloco", wb::algo::StreamingDiloco, wb::algo::StreamingDilocoParams,
                      "Streaming DiLoCo (arXiv:2501.18512): DiLoCo with the model synchronized in "
                      "num_fragments staggered fragments, each round applied fragment_sync_delay steps "
                      "after it starts (overlapped on the clock), merged with fragment_update_alpha, "
                      "outer gradients sent at quantize_bits");
