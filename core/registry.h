// A name -> factory registry with typed parameters, shared by algorithms, models,
// optimizers and schedules. Entries self-register from their own .cpp file through a
// static Registrar (Caffe's layer registry pattern); the map is a function-local
// static so registration order across translation units does not matter.
//
// Beware: a static library drops object files nobody references, and with them their
// registrars. The algorithms/ and models/ files are therefore linked as an OBJECT
// library (CMakeLists.txt), and tests/unit/test_registry.cpp checks that every
// algorithms/*.cpp file is registered.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "core/params.h"

namespace wb::core {

// A polymorphic config value: "adasum" or {"name": "adasum", ...params}. After
// resolution it is always the object form with every parameter filled in.
json named_object_name(const json& v, const Where& w);

template <class Base, class... Args>
class Registry {
 public:
  struct Entry {
    std::string name, doc, file;
    int line = 0;
    std::function<std::vector<ParamDoc>()> params;
    // Validate user JSON (string or object) and return the resolved object form.
    std::function<json(const json&, const Where&)> resolve;
    std::function<std::unique_ptr<Base>(const json& resolved, Args...)> create;
  };

  explicit Registry(std::string kind) : kind_(std::move(kind)) {}

  // The entry of implementation Impl, constructed as Impl(const P&, Args...).
  template <class Impl, class P>
  static Entry entry(const char* name, const char* doc, const char* file, int line);

  void add(Entry e) {
    auto it = entries_.find(e.name);
    if (it != entries_.end()) {
      std::fprintf(stderr, "workbench: duplicate %s \"%s\" registered at %s:%d and %s:%d\n",
                   kind_.c_str(), e.name.c_str(), it->second.file.c_str(), it->second.line,
                   e.file.c_str(), e.line);
      std::abort();
    }
    entries_.emplace(e.name, std::move(e));
  }

  const Entry& get(const std::string& name, const Where& w) const {
    auto it = entries_.find(name);
    if (it == entries_.end())
      w.fail("unknown " + kind_ + " \"" + name + "\" (known: " + names() + ")");
    return it->second;
  }
  bool has(const std::string& name) const { return entries_.count(name) != 0; }

  json resolve(const json& v, const Where& w) const {
    std::string name = named_object_name(v, w).template get<std::string>();
    return get(name, v.is_object() ? w.key("name") : w).resolve(v, w);
  }
  std::unique_ptr<Base> create(const json& resolved, Args... args) const {
    return get(resolved.at("name").template get<std::string>(), Where{})
        .create(resolved, args...);
  }

  std::string names() const {
    std::string s;
    for (auto& [k, _] : entries_) s += (s.empty() ? "" : ", ") + k;
    return s;
  }
  std::vector<const Entry*> list() const {
    std::vector<const Entry*> out;
    for (auto& [_, e] : entries_) out.push_back(&e);
    return out;
  }
  const std::string& kind() const { return kind_; }

 private:
  std::string kind_;
  std::map<std::string, Entry> entries_;
};

// Build an Entry for implementation Impl constructed as Impl(const P&, Args...).
template <class Base, class Impl, class P, class... Args>
typename Registry<Base, Args...>::Entry make_entry(const char* name, const char* doc,
                                                   const char* file, int line) {
  typename Registry<Base, Args...>::Entry e;
  e.name = name;
  e.doc = doc;
  e.file = file;
  e.line = line;
  e.params = [] { return params_of<P>().docs(); };
  e.resolve = [n = std::string(name)](const json& v, const Where& w) {
    json body = v.is_object() ? v : json::object();
    body.erase("name");
    P p = params_of<P>().parse(body, w);
    json out = json::object();
    out["name"] = n;
    const json fields = params_of<P>().to_json(p);  // named: items() must not outlive it
    for (auto& [k, val] : fields.items()) out[k] = val;
    return out;
  };
  e.create = [](const json& resolved, Args... args) -> std::unique_ptr<Base> {
    json body = resolved;
    body.erase("name");
    P p = params_of<P>().parse(body, Where{"<resolved>", "$"});
    return std::make_unique<Impl>(p, args...);
  };
  return e;
}

template <class Base, class... Args>
template <class Impl, class P>
typename Registry<Base, Args...>::Entry Registry<Base, Args...>::entry(const char* name, const char* doc,
                                                                     const char* file, int line) {
  return make_entry<Base, Impl, P, Args...>(name, doc, file, line);
}

// THE registrar, for every registry (algorithms, models, optimizers, schedules): a static
// Registrar in the implementation's own .cpp adds it to the registry `registry()` returns,
// before main() runs. Use it through the registry's macro (WB_REGISTER_ALGORITHM, ...),
// which all expand to WB_REGISTER below.
template <class Reg, class Impl, class P>
struct Registrar {
  Registrar(Reg& (*registry)(), const char* name, const char* doc, const char* file, int line) {
    registry().add(Reg::template entry<Impl, P>(name, doc, file, line));
  }
};

}  // namespace wb::core

#define WB_REGISTRY_CAT2(a, b) a##b
#define WB_REGISTRY_CAT(a, b) WB_REGISTRY_CAT2(a, b)
// WB_REGISTER(registry_function, "name", Impl, Params, "one-line doc"), at namespace scope.
#define WB_REGISTER(REGISTRY_FN, NAME, IMPL, PARAMS, DOC)                                         \
  static ::wb::core::Registrar<std::remove_reference_t<decltype(REGISTRY_FN())>, IMPL, PARAMS>    \
      WB_REGISTRY_CAT(wb_registrar_, __LINE__)(&REGISTRY_FN, NAME, DOC, __FILE__, __LINE__)
