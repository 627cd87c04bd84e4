#include "app/cli/bandwidth.h"

#include <H5Fpublic.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "app/results/recorder.h"

namespace wb::app {

std::shared_ptr<const sim::CostModel> model_with_bandwidth(const json& clock, const std::string& link,
                                                      double bandwidth) {
  const bool cross = link == "cross";
  const std::string profile = clock.value("profile", std::string());
  if (profile.empty())
    return std::make_shared<sim::FormulaCostModel>(
        clock.at("flops_per_s").get<double>(), clock.at("batch_latency_s").get<double>(),
        clock.at("latency_s").get<double>(), cross ? bandwidth : clock.at("bandwidth_bytes_per_s").get<double>(),
        clock.at("intra_latency_s").get<double>(),
        cross ? clock.at("intra_bandwidth_bytes_per_s").get<double>() : bandwidth);
  sim::CostProfile p = sim::cached_cost_profile(profile).profile;
  if (cross && !p.links.count("cross")) p.links["cross"] = p.links.at("intra");
  for (auto& [op, pw] : p.links.at(link))
    for (sim::AlphaBetaSegment& s : pw.segments) s.beta_s_per_byte = 1.0 / bandwidth;
  return std::make_shared<sim::ProfileCostModel>(std::move(p), profile);
}

double bandwidth_for(const sim::CommLedger& ledger, const json& clock, const std::string& link,
                     int64_t node_size, double compute_s, double cu) {
  auto cu_at = [&](double log10_b) {
    const double t = ledger.replay(*model_with_bandwidth(clock, link, std::pow(10.0, log10_b)), node_size);
    return t > 0 ? compute_s / t : 1.0;
  };
  if (cu_at(0) >= cu) return 0;
  if (cu_at(30) < cu) return std::numeric_limits<double>::infinity();
  double lo = 0, hi = 30;  // cu_at(lo) < cu <= cu_at(hi)
  for (int i = 0; i < 200 && hi - lo > 1e-13; ++i) {
    const double mid = 0.5 * (lo + hi);
    (cu_at(mid) >= cu ? hi : lo) = mid;
  }
  return std::pow(10.0, hi);
}

namespace {

constexpr const char* kUsage =
    "usage: workbench bandwidth RESULTS.h5 --cu 0.5,0.9,0.99 [--run ID] [--link cross|intra] [--json]";

std::vector<double> parse_cu(const std::string& s) {
  std::vector<double> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    double x = 0;
    try {
      x = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || !(x > 0 && x < 1))
      throw UserError("bandwidth", "--cu " + s + ": \"" + item + "\" is not a compute utilization in (0, 1)");
    out.push_back(x);
  }
  if (out.empty()) throw UserError("bandwidth", "--cu needs at least one value in (0, 1)");
  return out;
}

std::string fmt_bw(double b) {
  if (std::isinf(b)) return "unreachable";
  if (b == 0) return "any";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", b);
  return buf;
}

}  // namespace

int bandwidth_command(const std::vector<std::string>& args) {
  std::string path, only_run, link_opt;
  std::vector<double> cus;
  bool as_json = false;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw UserError("bandwidth", a + " needs a value (" + kUsage + ")");
      return args[++i];
    };
    if (a == "--help" || a == "-h") {
      std::printf(
          "%s\n\n"
          "For each run of a results file: the bandwidth (bytes/s) of one link class at which\n"
          "compute_utilization = sim_compute_s / sim_s reaches each --cu value. The run's\n"
          "communication (its comm_json: every blocking call and overlapped transfer its clock\n"
          "charged) is priced again with that link's bandwidth as the unknown; latencies, compute\n"
          "and straggler waits are kept. --link: the link the run's collectives cross (default:\n"
          "cross when its clock.node_size puts workers on several simulated nodes, else intra).\n"
          "A run priced with a profile is re-priced on that profile (its per-byte costs of the\n"
          "link set to 1/B); the profile must be the one the run recorded (profile_fnv1a64).\n"
          "\"unreachable\": latency and waits alone keep the utilization below the value;\n"
          "\"any\": 1 byte/s suffices. LAP/LPP, Adaptive and elastic SGD run their own event\n"
          "simulation: their runs are listed as not re-priceable.\n",
          kUsage);
      return 0;
    }
    if (a == "--cu") cus = parse_cu(value());
    else if (a == "--run") only_run = value();
    else if (a == "--link") {
      link_opt = value();
      if (link_opt != "cross" && link_opt != "intra")
        throw UserError("bandwidth", "--link must be cross or intra, got \"" + link_opt + "\"");
    } else if (a == "--json") as_json = true;
    else if (!a.empty() && a[0] == '-') throw UserError("bandwidth", "unknown option " + a + " (" + kUsage + ")");
    else if (path.empty()) path = a;
    else throw UserError("bandwidth", "unexpected argument " + a + " (" + kUsage + ")");
  }
  if (path.empty()) throw UserError("bandwidth", std::string("expected a results file (") + kUsage + ")");
  if (cus.empty()) throw UserError("bandwidth", std::string("--cu is required (") + kUsage + ")");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw UserError(path, "does not exist");
  if (!S_ISREG(st.st_mode)) throw UserError(path, "is not a regular file (a results file is HDF5)");
  if (H5Fis_hdf5(path.c_str()) <= 0) throw UserError(path, "is not an HDF5 file (not a workbench results file)");
  const std::map<std::string, StoredRun> runs = existing_runs(path, /*as_output=*/false);
  if (!only_run.empty() && !runs.count(only_run))
    throw UserError(path, "has no run \"" + only_run + "\" (--run)");

  json out = json::array();
  for (const auto& [id, r] : runs) {
    if (!only_run.empty() && id != only_run) continue;
    json row = json::object();
    row["run"] = id;
    const std::string where = path + ": /runs/" + id;
    json cfg, sum, comm;
    try {
      cfg = json::parse(r.config_json);
      sum = json::parse(r.summary_json);
      comm = r.comm_json.empty() ? json() : json::parse(r.comm_json);
    } catch (const json::exception& e) {
      throw UserError(where, std::string("an attribute does not parse as JSON: ") + e.what());
    }
    if (r.status != "completed" || comm.is_null()) {
      row["status"] = r.status;
      row["why_not"] = comm.is_null() ? "no comm_json (a file written before runs recorded their communication)"
                                      : "the run is " + r.status;
      out.push_back(std::move(row));
      continue;
    }
    const sim::CommLedger ledger = sim::CommLedger::from_json(comm, core::Where{path, "/runs/" + id + "/comm_json"});
    if (!ledger.replayable()) {
      row["status"] = r.status;
      row["why_not"] = ledger.why_not();
      out.push_back(std::move(row));
      continue;
    }
    const json& clock = cfg.at("clock");
    const int64_t workers = cfg.at("workers").get<int64_t>();
    const int64_t node_size = clock.at("node_size").get<int64_t>();
    const std::string link = !link_opt.empty() ? link_opt : node_size > 0 && node_size < workers ? "cross" : "intra";
    const std::string profile = clock.value("profile", std::string());
    if (!profile.empty()) {
      const std::string had = clock.value("profile_fnv1a64", std::string());
      const std::string now = sim::cached_cost_profile(profile).fnv1a64;
      if (!had.empty() && had != now)
        throw UserError(where, "was priced with " + profile + " of hash " + had + "; that file now hashes to " +
                                   now + ": restore the profile the run used");
    }
    const double sim_s = sum.at("sim_s").get<double>();
    const double compute = sum.at("sim_compute_s").get<double>();
    // The ledger priced with the run's own clock gives back its sim_s (to rounding: the ledger
    // adds a segment's parts in another order): a record that does not is not re-priced.
    const std::shared_ptr<const sim::CostModel> own =
        profile.empty()
            ? model_with_bandwidth(clock, link,
                                   clock.at(link == "cross" ? "bandwidth_bytes_per_s" : "intra_bandwidth_bytes_per_s")
                                       .get<double>())
            : std::make_shared<sim::ProfileCostModel>(sim::cached_cost_profile(profile).profile, profile);
    const double replayed = ledger.replay(*own, node_size);
    const double err = sim_s > 0 ? std::abs(replayed - sim_s) / sim_s : std::abs(replayed);
    if (err > 1e-9)
      throw UserError(where, "its comm_json replays to " + std::to_string(replayed) + " s, not its sim_s " +
                                 std::to_string(sim_s) + " s: the record is inconsistent");
    row["status"] = r.status;
    row["algorithm"] = cfg.at("algorithm").value("name", std::string("?"));
    row["link"] = link;
    row["clock"] = profile.empty() ? "formula" : profile;
    row["bandwidth_now"] = profile.empty()
                               ? json(clock.at(link == "cross" ? "bandwidth_bytes_per_s" : "intra_bandwidth_bytes_per_s"))
                               : json(nullptr);
    row["compute_utilization_now"] = sim_s > 0 ? compute / sim_s : 1.0;
    row["bytes_sent_per_worker"] = ledger.bytes_sent_per_worker();
    row["replay_rel_error"] = err;
    json need = json::object();
    for (double cu : cus) {
      const double b = bandwidth_for(ledger, clock, link, node_size, compute, cu);
      char key[32];
      std::snprintf(key, sizeof key, "%g", cu);
      need[key] = std::isinf(b) ? json("unreachable") : json(b);
    }
    row["bandwidth_for_cu"] = std::move(need);
    out.push_back(std::move(row));
  }

  if (as_json) {
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("bandwidth (bytes/s) of the link each run's collectives cross for a compute utilization\n");
  std::printf("(sim_compute_s / sim_s), its communication re-priced from %s (comm_json)\n", path.c_str());
  std::printf("%-40s %-16s %-6s %10s %7s", "run", "algorithm", "link", "B now", "CU now");
  for (double cu : cus) std::printf(" %11s", ("CU " + fmt_bw(cu)).c_str());
  std::printf("\n");
  for (const json& row : out) {
    if (!row.contains("bandwidth_for_cu")) {
      std::printf("%-40s not re-priceable: %s\n", row["run"].get<std::string>().c_str(),
                  row["why_not"].get<std::string>().c_str());
      continue;
    }
    char now[32];
    std::snprintf(now, sizeof now, "%.3f", row["compute_utilization_now"].get<double>());
    std::printf("%-40s %-16s %-6s %10s %7s", row["run"].get<std::string>().c_str(),
                row["algorithm"].get<std::string>().c_str(), row["link"].get<std::string>().c_str(),
                row["bandwidth_now"].is_null() ? "profile" : fmt_bw(row["bandwidth_now"].get<double>()).c_str(), now);
    for (auto& [k, v] : row["bandwidth_for_cu"].items())
      std::printf(" %11s", v.is_string() ? "unreachable" : fmt_bw(v.get<double>()).c_str());
    std::printf("\n");
  }
  // Which clock priced the answer: a profile's figures hold for the host it was measured on
  // (its validated error in calib/README.md), the formula's for its stated constants.
  std::vector<std::string> clocks;
  for (const json& row : out)
    if (row.contains("clock") && std::find(clocks.begin(), clocks.end(), row["clock"].get<std::string>()) == clocks.end())
      clocks.push_back(row["clock"].get<std::string>());
  for (const std::string& c : clocks)
    std::printf("priced on: %s\n", c == "formula" ? "the clock's formula (the spec's clock constants)" : c.c_str());
  return 0;
}

}  // namespace wb::app
