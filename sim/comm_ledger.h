// What a run's clock charged for communication, kept so that the run can be priced again on
// another link without training again: "what cross-node bandwidth would this run need for a
// compute utilization of 90%?" (DiLoCo, arXiv:2311.08105 section 1, and Streaming DiLoCo,
// arXiv:2501.18512 section 3, frame low-communication training by that trade).
//
// The clock's time is a sum of parts that do not depend on the network (compute, straggler
// waits, element-wise passes) and of communications priced by the cost model. Between two
// events of an overlapped transfer those parts only add up, so the ledger keeps them as
// segments -- fixed seconds plus a count per distinct call -- and the transfers' start and
// finish events in order. Replaying the ledger with another cost model (SimClock's rules:
// a transfer starts when the link is free and ends its cost later; finishing one waits for
// what its overlap did not hide) gives the run's simulated seconds on that model; replaying it
// with the run's own model gives back its sim_s (a test checks every algorithm that keeps one).
//
// Algorithms with their own event simulation (LAP/LPP-SGD, Adaptive and elastic SGD) price
// communication themselves and move the clock to computed instants: their ledger says it
// cannot be replayed (replayable() false, why_not()), and nothing is re-priced for them.
#pragma once

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/params.h"
#include "sim/cost_model.h"

namespace wb::sim {

// The mean over workers of the bytes one communication puts on the network: a
// bandwidth-optimal allreduce (reduce-scatter + allgather; recursive halving-doubling sends
// the same) of n bytes over W workers sends 2 (W-1)/W n per worker, as do Adasum and the
// weighted average built on it; a broadcast (W-1)/W n (every worker but the root receives the
// vector once); a point-to-point message n / W. Adasum's coefficient rounds (24 bytes per
// piece and level) are latency-bound and not counted.
double sent_bytes_per_worker(const CommCall& c);

// One communication of a transfer's cost: coef x cost(call).
struct CommTerm {
  CommCall call;
  double coef = 1;
};

class CommLedger {
 public:
  // Time that does not depend on the network (compute, waits, element-wise passes).
  void fixed(double s);
  // A blocking communication, charged in full.
  void blocking(const CommCall& c);
  // An overlapped transfer of cost sum(coef x cost(call)) (summed in the order given) starts
  // now; finish(ticket) is where the clock waits for it.
  int start(std::span<const CommTerm> terms);
  void finish(int ticket);
  // The clock was moved by a rule the ledger cannot replay.
  void opaque(const char* why);

  bool replayable() const { return why_not_.empty(); }
  const std::string& why_not() const { return why_not_; }
  // The run's simulated seconds with `model` (SimClock's rules). Requires replayable().
  double replay(const CostModel& model, int64_t node_size) const;
  // Over the run: the mean over workers of the bytes each put on the network.
  double bytes_sent_per_worker() const { return bytes_; }

  // HDF5 comm_json (docs/results.md): {"replayable", "why_not", "calls": [...], "log":
  // [[kind, ticket, call, value], ...]} with kind 0 fixed (value: seconds), 1 blocking
  // (call, value: count), 2 a term of the next start (call, value: coef), 3 start (ticket),
  // 4 finish (ticket).
  json to_json() const;
  // The inverse; a malformed record is a UserError at w.
  static CommLedger from_json(const json& j, const core::Where& w);

 private:
  struct Call {
    CommCall call;
    std::vector<double> level_bytes;  // owned: CommCall::level_bytes points here
  };
  enum Kind { kFixed = 0, kBlocking = 1, kTerm = 2, kStart = 3, kFinish = 4 };
  struct Entry {
    int kind = kFixed;
    int ticket = -1;
    int call = -1;
    double value = 0;
  };
  int call_index(const CommCall& c);
  void flush();

  std::vector<Call> calls_;
  std::vector<Entry> log_;
  double seg_fixed_ = 0;                          // the open segment: since the last event
  std::vector<std::pair<int, double>> seg_calls_;  // call index -> count
  int next_ticket_ = 0;
  double bytes_ = 0;
  std::string why_not_;
};

}  // namespace wb::sim
