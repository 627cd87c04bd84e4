#include "app/results/run_table.h"

#include <cstdio>

namespace wb::app {

std::string fmt_num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
}


void print_run_table(const Experiment& e) {
  std::printf("experiment %s (%s): %zu run%s\n", e.name.c_str(), e.file.c_str(), e.runs.size(),
              e.runs.size() == 1 ? "" : "s");
  std::printf("%5s  %-50s %-10s %-12s %7s %6s %10s %8s\n", "#", "run id", "algorithm", "model",
              "workers", "batch", "lr", "budget");
  for (const auto& r : e.runs) {
    const auto& c = r.cfg;
    std::string budget = c.steps > 0 ? std::to_string(c.steps) + " st" : fmt_num(c.epochs) + " ep";
    std::printf("%5d  %-50s %-10s %-12s %7lld %6lld %10s %8s\n", r.index, r.id.c_str(),
                c.algorithm.value()["name"].get<std::string>().c_str(),
                c.model.value()["name"].get<std::string>().c_str(),
                static_cast<long long>(c.workers), static_cast<long long>(c.batch_size),
                fmt_num(c.lr).c_str(), budget.c_str());
  }
}

std::string run_line(const RunResult& res) {
  const auto& s = res.summary;
  auto g = [&](const char* k) {
    return s[k].is_null() ? std::string("-") : fmt_num(s[k].get<double>());
  };
  std::string line = res.id + ": " + res.status + ", " + std::to_string(s["steps"].get<int64_t>()) +
                     " steps, train loss " + g("final_train_loss");
  if (!s["final_test_accuracy"].is_null()) line += ", test acc " + g("final_test_accuracy");
  if (s["converged_step"].get<int64_t>() >= 0)
    line += ", converged at step " + std::to_string(s["converged_step"].get<int64_t>());
  return line + ", " + fmt_num(res.wall_s) + " s";
}


}  // namespace wb::app
