#include "app/results/host_info.h"

#include <fstream>

namespace wb::app {

namespace {

std::string read_host_cpu_text() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, name, family, model;
  int cpus = 0;
  auto value = [](const std::string& l) {
    const size_t c = l.find(':');
    std::string v = c == std::string::npos ? "" : l.substr(c + 1);
    const size_t b = v.find_first_not_of(" \t");
    return b == std::string::npos ? std::string() : v.substr(b);
  };
  while (std::getline(in, line)) {
    if (line.rfind("processor", 0) == 0) ++cpus;
    if (name.empty() && line.rfind("model name", 0) == 0) name = value(line);
    if (family.empty() && line.rfind("cpu family", 0) == 0) family = value(line);
    if (model.empty() && line.rfind("model", 0) == 0 && line.rfind("model name", 0) != 0) model = value(line);
  }
#if defined(__AVX512F__)
  const char* isa = "AVX-512";
#elif defined(__AVX2__)
  const char* isa = "AVX2";
#elif defined(__AVX__)
  const char* isa = "AVX";
#else
  const char* isa = "SSE";
#endif
  return "CPU: " + (name.empty() ? std::string("unknown") : name) +
         (family.empty() ? "" : " (family " + family + " model " + model + ")") + ", " +
         std::to_string(cpus) + " logical CPUs, kernels built for " + isa;
}

}  // namespace

const std::string& host_cpu_text() {
  static const std::string text = read_host_cpu_text();
  return text;
}

std::string machine_cpu_part(const std::string& machine) {
  const size_t at = machine.find("CPU: ");
  return at == std::string::npos ? "" : machine.substr(at);
}

std::optional<bool> measured_on_this_cpu(const std::string& machine) {
  const std::string there = machine_cpu_part(machine);
  if (there.empty()) return std::nullopt;
  return there == host_cpu_text();
}

std::string profile_host_word(const std::string& machine) {
  const std::optional<bool> here = measured_on_this_cpu(machine);
  return !here ? "unknown" : *here ? "same" : "other";
}

}  // namespace wb::app
