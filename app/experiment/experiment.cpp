#include "app/experiment/experiment.h"

namespace wb::app {

json RunSpec::resolved() const {
  if (!resolved_base_) return resolved_delta_;
  json full = *resolved_base_;
  for (auto it = resolved_delta_.begin(); it != resolved_delta_.end(); ++it) full[it.key()] = it.value();
  return full;
}

const json& RunSpec::resolved_at(const std::string& key) const {
  static const json kNone;
  if (auto it = resolved_delta_.find(key); it != resolved_delta_.end()) return *it;
  if (resolved_base_)
    if (auto it = resolved_base_->find(key); it != resolved_base_->end()) return *it;
  return kNone;
}

void RunSpec::set_resolved(json full, std::shared_ptr<const json> base) {
  // Kept as a delta only when the two have the same top-level fields (a resolved run config
  // always does); anything else is kept whole, so resolved() is exact either way.
  bool same_keys = base && base->is_object() && full.is_object() && base->size() == full.size();
  if (same_keys)
    for (auto it = full.begin(); same_keys && it != full.end(); ++it) same_keys = base->contains(it.key());
  if (!same_keys) {
    resolved_base_.reset();
    resolved_delta_ = std::move(full);
    return;
  }
  resolved_base_ = std::move(base);
  resolved_delta_ = json::object();
  for (auto it = full.begin(); it != full.end(); ++it)
    if (it.value() != (*resolved_base_)[it.key()]) resolved_delta_[it.key()] = std::move(it.value());
}

void RunSpec::set_resolved_field(const std::string& key, json value) {
  resolved_delta_[key] = std::move(value);
}

}  // namespace wb::app
