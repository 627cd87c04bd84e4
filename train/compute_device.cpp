#include "train/compute_device.h"

#include <cstdio>
#include <cstdlib>
#include <map>

#include "models/model.h"
#include "core/error.h"

namespace wb::train {

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

void DeviceModel::loss_grad_group(std::span<GroupPass> /*passes*/,
                                  models::Workspace& /*ws*/) const {
  throw InternalError(name() + ": this device model has no grouped passes "
                      "(make_group_workspace returned none)");
}

BackendRegistrar::BackendRegistrar(std::unique_ptr<ComputeBackend> b) : name_(b->name()) {
  if (name_ == "cpu" || backends().count(name_)) {
    std::fprintf(stderr, "workbench: duplicate compute device \"%s\"\n", name_.c_str());
    std::abort();
  }
  backends().emplace(name_, std::move(b));
}

BackendRegistrar::~BackendRegistrar() { backends().erase(name_); }

namespace {
std::vector<DeviceModelEntry>& device_model_list() {
  static std::vector<DeviceModelEntry> v;
  return v;
}
}  // namespace

const std::vector<DeviceModelEntry>& device_models() { return device_model_list(); }

DeviceModelRegistrar::DeviceModelRegistrar(DeviceModelEntry e) { device_model_list().push_back(std::move(e)); }

bool device_supports(const std::string& device, const std::string& model) {
  for (const auto& e : device_models())
    if (e.device == device)
      for (const auto& m : e.models)
        if (m == model) return true;
  return false;
}

std::string device_model_names(const std::string& device) {
  std::string s;
  for (const auto& e : device_models())
    if (e.device == device)
      for (const auto& m : e.models) s += (s.empty() ? "" : ", ") + m;
  return s;
}

std::unique_ptr<models::Model> wrap_for_device(const std::string& device, const models::Model& cpu) {
  for (const auto& e : device_models())
    if (e.device == device)
      if (auto m = e.wrap(cpu)) return m;
  throw UserError("", "model \"" + cpu.name() + "\" has no " + device + " implementation (" + device +
                          " runs " + device_model_names(device) + ")");
}

}  // namespace wb::train
