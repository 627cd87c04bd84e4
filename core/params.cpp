#include "core/params.h"

namespace wb::core {

std::string path_key(const std::string& path, const std::string& key) {
  const bool plain = !key.empty() && key.find_first_of(".[]\" +") == std::string::npos;
  return plain ? path + "." + key : path + "[\"" + key + "\"]";
}
std::string path_index(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

std::string json_type_name(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return std::string("boolean ") + v.dump();
  if (v.is_number_integer()) return "integer " + v.dump();
  if (v.is_number()) return "number " + v.dump();
  if (v.is_string()) return "string " + v.dump();
  if (v.is_array()) return "a list";
  return "an object";
}

}  // namespace wb::core
