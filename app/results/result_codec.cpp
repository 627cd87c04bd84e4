#include "app/results/result_codec.h"

namespace wb::app {

std::vector<uint8_t> pack_result(const RunResult& r, const json* provenance) {
  json j;
  j["id"] = r.id;
  j["index"] = r.index;
  j["config"] = r.config;
  j["status"] = r.status;
  j["error"] = r.error;
  j["wall_s"] = r.wall_s;
  j["sim_s"] = r.sim_s;
  j["has_test"] = r.has_test;
  j["has_accuracy"] = r.has_accuracy;
  j["summary"] = r.summary;
  if (!r.comm.empty()) j["comm"] = r.comm;
  const json& prov = provenance ? *provenance : r.provenance;
  if (!prov.empty()) j["provenance"] = prov;
  const Curves& c = r.curves;
  j["curves"] = {{"step", c.step},       {"epoch", c.epoch},   {"samples", c.samples},
                 {"wall_s", c.wall_s},   {"sim_s", c.sim_s},   {"lr", c.lr},
                 {"train_loss", c.train_loss}, {"test_loss", c.test_loss},
                 {"test_accuracy", c.test_accuracy}};
  json series = json::array();
  for (const core::Series& se : r.series)
    series.push_back({{"path", se.path}, {"rows", se.rows}, {"cols", se.cols}, {"data", se.data},
                      {"attrs", se.string_list_attrs}});
  j["series"] = series;
  return json::to_cbor(j);
}

RunResult unpack_result(const std::vector<uint8_t>& bytes) {
  const json j = json::from_cbor(bytes);
  RunResult r;
  r.id = j["id"];
  r.index = j["index"];
  r.config = j["config"];
  r.status = j["status"];
  r.error = j["error"];
  r.wall_s = j["wall_s"];
  r.sim_s = j["sim_s"];
  r.has_test = j["has_test"];
  r.has_accuracy = j["has_accuracy"];
  r.summary = j["summary"];
  if (j.contains("comm") && j["comm"].is_object()) r.comm = j["comm"];
  // A journal written before runs carried provenance has none: the fold then takes the
  // journal header's (results_layout.h).
  if (j.contains("provenance") && j["provenance"].is_object()) r.provenance = j["provenance"];
  const json& c = j["curves"];
  r.curves.step = c["step"].get<std::vector<double>>();
  r.curves.epoch = c["epoch"].get<std::vector<double>>();
  r.curves.samples = c["samples"].get<std::vector<double>>();
  r.curves.wall_s = c["wall_s"].get<std::vector<double>>();
  r.curves.sim_s = c["sim_s"].get<std::vector<double>>();
  r.curves.lr = c["lr"].get<std::vector<double>>();
  r.curves.train_loss = c["train_loss"].get<std::vector<double>>();
  r.curves.test_loss = c["test_loss"].get<std::vector<double>>();
  r.curves.test_accuracy = c["test_accuracy"].get<std::vector<double>>();
  for (const json& se : j["series"]) {
    core::Series s;
    s.path = se["path"];
    s.rows = se["rows"];
    s.cols = se["cols"];
    s.data = se["data"].get<std::vector<double>>();
    s.string_list_attrs = se["attrs"].get<std::map<std::string, std::vector<std::string>>>();
    r.series.push_back(std::move(s));
  }
  return r;
}

}  // namespace wb::app
