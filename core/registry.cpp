#include "core/registry.h"

namespace wb::core {

json named_object_name(const json& v, const Where& w) {
  if (v.is_string()) return v;
  if (v.is_object()) {
    if (!v.contains("name")) w.fail("missing key \"name\"");
    if (!v["name"].is_string())
      w.key("name").fail("expected a string, got " + json_type_name(v["name"]));
    return v["name"];
  }
  w.fail("expected a name (string) or an object with \"name\", got " + json_type_name(v));
}

}  // namespace wb::core
