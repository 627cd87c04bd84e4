#include "runtime/compute_device.h"

#include <cstdio>
#include <cstdlib>
#include <map>

#include "models/model.h"

namespace wb::rt {

namespace {
std::map<std::string, std::unique_ptr<ComputeBackend>>& backends() {
  static std::map<std::string, std::unique_ptr<ComputeBackend>> m;
  return m;
}
}  // namespace

ComputeBackend* find_compute_backend(const std::string& name) {
  auto it = backends().find(name);
  return it == backends().end() ? nullptr : it->second.get();
}

std::vector<std::string> compute_device_names() {
  std::vector<std::string> out{"cpu"};
  for (const auto& [name, b] : backends()) out.push_back(name);
  return out;
}

BackendRegistrar::BackendRegistrar(std::unique_ptr<ComputeBackend> b) : name_(b->name()) {
  if (name_ == "cpu" || backends().count(name_)) {
    std::fprintf(stderr, "workbench: duplicate compute device \"%s\"\n", name_.c_str());
    std::abort();
  }
  backends().emplace(name_, std::move(b));
}

BackendRegistrar::~BackendRegistrar() { backends().erase(name_); }

}  // namespace wb::rt
