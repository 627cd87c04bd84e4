// `workbench bandwidth RESULTS.h5 --cu 0.5,0.9,0.99`: the link bandwidth each run of a results
// file needs for a compute utilization (compute time / simulated time), found by re-pricing
// the communication its clock charged (the run's comm_json, sim/comm_ledger.h) with the
// link's bandwidth as the unknown, latencies and compute kept. The question DiLoCo
// (arXiv:2311.08105 section 1) and Streaming DiLoCo (arXiv:2501.18512 section 4, "compute
// utilization" against bandwidth) ask of low-communication training, answered for any
// algorithm whose clock the ledger can replay.
#pragma once

#include <string>
#include <vector>

#include "sim/comm_ledger.h"
#include "sim/cost_model.h"

namespace wb::app {

// The cost model of a run's clock with link class `link` ("cross" or "intra") given
// `bandwidth` bytes/s: the formula model's beta for that link, or, with a profile, every
// per-byte cost of that link class set to 1 / bandwidth (a profile without a "cross" class
// gets one: its intra class with the new per-byte cost). clock: the run's resolved clock.
std::shared_ptr<const sim::CostModel> model_with_bandwidth(const json& clock, const std::string& link,
                                                      double bandwidth);

// The bandwidth at which compute_s / replay(model(B)) reaches `cu`, by bisection on log B
// over [1, 1e30] bytes/s (the replayed time falls as B grows). Returns 0 when any bandwidth
// >= 1 B/s reaches it, +inf when none does (latency and straggler waits alone leave less).
double bandwidth_for(const sim::CommLedger& ledger, const json& clock, const std::string& link,
                     int64_t node_size, double compute_s, double cu);

int bandwidth_command(const std::vector<std::string>& args);

}  // namespace wb::app
