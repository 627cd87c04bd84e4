#include "sim/comm_ledger.h"

#include <algorithm>
#include <map>

namespace wb::sim {

double sent_bytes_per_worker(const CommCall& c) {
  const double W = std::max(1, c.workers);
  switch (c.op) {
    case CommOp::kAllreduce:
    case CommOp::kAdasum:
    case CommOp::kWeightedAverage: return 2.0 * (W - 1) / W * c.bytes;
    case CommOp::kBroadcast: return (W - 1) / W * c.bytes;
    case CommOp::kP2P: return c.bytes / W;
  }
  return 0;
}

namespace {
bool same_call(const CommCall& a, const std::vector<double>& a_levels, const CommCall& b) {
  return a.op == b.op && a.workers == b.workers && a.bytes == b.bytes && a.pieces == b.pieces &&
         a.schedule == b.schedule && a.from == b.from && a.to == b.to && a.elem_bytes == b.elem_bytes &&
         a.average == b.average && std::equal(a_levels.begin(), a_levels.end(), b.level_bytes.begin(), b.level_bytes.end());
}
}  // namespace

int CommLedger::call_index(const CommCall& c) {
  // A run issues a handful of distinct calls (one per tensor layout and op): a linear scan.
  for (size_t i = 0; i < calls_.size(); ++i)
    if (same_call(calls_[i].call, calls_[i].level_bytes, c)) return static_cast<int>(i);
  Call k;
  k.call = c;
  k.call.level_bytes = {};
  k.level_bytes.assign(c.level_bytes.begin(), c.level_bytes.end());
  calls_.push_back(std::move(k));
  return static_cast<int>(calls_.size()) - 1;
}

void CommLedger::fixed(double s) { seg_fixed_ += s; }

void CommLedger::blocking(const CommCall& c) {
  const int i = call_index(c);
  bytes_ += sent_bytes_per_worker(c);
  for (auto& [k, n] : seg_calls_)
    if (k == i) {
      n += 1;
      return;
    }
  seg_calls_.emplace_back(i, 1.0);
}

void CommLedger::flush() {
  if (seg_fixed_ != 0) log_.push_back({kFixed, -1, -1, seg_fixed_});
  for (const auto& [k, n] : seg_calls_) log_.push_back({kBlocking, -1, k, n});
  seg_fixed_ = 0;
  seg_calls_.clear();
}

int CommLedger::start(std::span<const CommTerm> terms) {
  flush();
  for (const CommTerm& t : terms) {
    log_.push_back({kTerm, -1, call_index(t.call), t.coef});
    bytes_ += t.coef * sent_bytes_per_worker(t.call);
  }
  const int ticket = next_ticket_++;
  log_.push_back({kStart, ticket, -1, 0});
  return ticket;
}

void CommLedger::finish(int ticket) {
  flush();
  log_.push_back({kFinish, ticket, -1, 0});
}

void CommLedger::opaque(const char* why) {
  if (why_not_.empty()) why_not_ = why;
}

double CommLedger::replay(const CostModel& model, int64_t node_size) const {
  WB_ASSERT(replayable(), "CommLedger::replay: " + why_not_);
  std::vector<double> price(calls_.size());
  for (size_t i = 0; i < calls_.size(); ++i) {
    CommCall k = calls_[i].call;
    k.level_bytes = calls_[i].level_bytes;
    price[i] = model.comm_s(k, node_size);
  }
  // SimClock's order of operations, so that the run's own model gives back its sim_s: a
  // segment's fixed seconds first, then its calls; a transfer's terms summed in order.
  auto segment = [&](double t, double fixed, const std::vector<std::pair<int, double>>& calls) {
    t += fixed;
    for (const auto& [k, n] : calls) t += n * price[static_cast<size_t>(k)];
    return t;
  };
  double t = 0, link_free = 0, pending = 0;
  std::map<int, std::pair<double, double>> flights;  // ticket -> (start, cost)
  for (const Entry& e : log_) {
    switch (e.kind) {
      case kFixed: t += e.value; break;
      case kBlocking: t += e.value * price[static_cast<size_t>(e.call)]; break;
      case kTerm: pending += e.value * price[static_cast<size_t>(e.call)]; break;
      case kStart: {
        flights[e.ticket] = {std::max(t, link_free), pending};
        link_free = flights[e.ticket].first + pending;
        pending = 0;
        break;
      }
      case kFinish: {
        auto it = flights.find(e.ticket);
        WB_ASSERT(it != flights.end(), "CommLedger::replay: finish of a transfer never started");
        const auto [s, cost] = it->second;
        if (s == t) t += cost;
        else if (s + cost > t) t += s + cost - t;
        flights.erase(it);
        break;
      }
    }
  }
  return segment(t, seg_fixed_, seg_calls_);
}

json CommLedger::to_json() const {
  json j = json::object();
  j["replayable"] = replayable();
  j["why_not"] = why_not_;
  j["bytes_sent_per_worker"] = bytes_;
  json calls = json::array();
  for (const Call& c : calls_) {
    json k = json::object();
    k["op"] = comm_op_name(c.call.op);
    k["workers"] = c.call.workers;
    k["bytes"] = c.call.bytes;
    k["pieces"] = c.call.pieces;
    k["schedule"] = static_cast<int>(c.call.schedule);
    k["from"] = c.call.from;
    k["to"] = c.call.to;
    k["elem_bytes"] = c.call.elem_bytes;
    k["average"] = c.call.average;
    k["level_bytes"] = c.level_bytes;
    calls.push_back(std::move(k));
  }
  j["calls"] = std::move(calls);
  // The open segment is written as it would be flushed: the record is the whole run.
  CommLedger whole = *this;
  whole.flush();
  json log = json::array();
  for (const Entry& e : whole.log_) log.push_back(json::array({e.kind, e.ticket, e.call, e.value}));
  j["log"] = std::move(log);
  return j;
}

CommLedger CommLedger::from_json(const json& j, const core::Where& w) {
  CommLedger l;
  if (!j.is_object()) w.fail("expected an object (a run's comm_json)");
  try {
    l.why_not_ = j.at("replayable").get<bool>() ? "" : j.value("why_not", std::string("not replayable"));
    if (!j.at("replayable").get<bool>() && l.why_not_.empty()) l.why_not_ = "not replayable";
    l.bytes_ = j.value("bytes_sent_per_worker", 0.0);
    static const std::map<std::string, CommOp> kOps = {{"allreduce", CommOp::kAllreduce},
                                                       {"adasum", CommOp::kAdasum},
                                                       {"weighted_average", CommOp::kWeightedAverage},
                                                       {"broadcast", CommOp::kBroadcast},
                                                       {"p2p", CommOp::kP2P}};
    for (const json& k : j.at("calls")) {
      Call c;
      const auto op = kOps.find(k.at("op").get<std::string>());
      if (op == kOps.end()) w.key("calls").fail("unknown op " + k.at("op").dump());
      c.call.op = op->second;
      c.call.workers = k.at("workers").get<int>();
      c.call.bytes = k.at("bytes").get<double>();
      c.call.pieces = k.at("pieces").get<int>();
      const int s = k.at("schedule").get<int>();
      if (s < 0 || s > 2) w.key("calls").fail("schedule " + std::to_string(s) + " out of range");
      c.call.schedule = static_cast<AdasumSchedule>(s);
      c.call.from = k.at("from").get<int>();
      c.call.to = k.at("to").get<int>();
      c.call.elem_bytes = k.at("elem_bytes").get<int>();
      c.call.average = k.at("average").get<bool>();
      c.level_bytes = k.at("level_bytes").get<std::vector<double>>();
      l.calls_.push_back(std::move(c));
    }
    int started = 0;
    for (const json& e : j.at("log")) {
      Entry x{e.at(0).get<int>(), e.at(1).get<int>(), e.at(2).get<int>(), e.at(3).get<double>()};
      const bool needs_call = x.kind == kBlocking || x.kind == kTerm;
      if (x.kind < kFixed || x.kind > kFinish ||
          (needs_call && (x.call < 0 || x.call >= static_cast<int>(l.calls_.size()))) ||
          ((x.kind == kStart || x.kind == kFinish) && (x.ticket < 0 || x.ticket >= 1 << 30)))
        w.key("log").fail("malformed entry " + e.dump());
      if (x.kind == kStart) started = std::max(started, x.ticket + 1);
      l.log_.push_back(x);
    }
    l.next_ticket_ = started;
  } catch (const json::exception& e) {
    w.fail(std::string("malformed: ") + e.what());
  }
  return l;
}

}  // namespace wb::sim
