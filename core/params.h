// Typed parameter declarations: one place where every configurable value gets its
// name, type, default, allowed range and documentation. The same declaration drives
//  - parsing of the experiment JSON (unknown keys and wrong types are errors naming the
//    JSON path: a typo must never silently fall back to a default),
//  - the resolved config written to HDF5 (every field, defaults included),
//  - `workbench list` (name, type, default, doc).
//
// How to declare parameters for a struct (defaults are the member initializers):
//
//   struct SyncSgdParams {
//     std::string combine = "average";
//     static void describe(core::ParamSet<SyncSgdParams>& p) {
//       p.field("combine", &SyncSgdParams::combine, "how gradients are combined")
//           .one_of({"sum", "average"});
//     }
//   };
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"

namespace wb {
// The project's JSON value (insertion-ordered: a config prints back in the order it was
// written). Every floor reads and writes it, so it sits in wb itself, like wb::UserError.
using json = nlohmann::ordered_json;
}  // namespace wb

namespace wb::core {

// "$.base" + "lr" -> "$.base.lr"; "$.x" + 3 -> "$.x[3]"
std::string path_key(const std::string& path, const std::string& key);
std::string path_index(const std::string& path, size_t i);

// Where an input value sits, for error messages: file + JSON path.
struct Where {
  std::string file;
  std::string path = "$";
  Where key(const std::string& k) const { return {file, path_key(path, k)}; }
  Where index(size_t i) const { return {file, path_index(path, i)}; }
  std::string str() const { return file.empty() ? path : file + ": " + path; }
  [[noreturn]] void fail(const std::string& what) const { throw UserError(str(), what); }
};

std::string json_type_name(const json& v);

// A number for a message: integral values without a fraction ("2147483648", not
// "2147483648.0"), others as JSON writes them.
inline std::string fmt_number(double x) {
  if (x == std::floor(x) && std::fabs(x) < 0x1p63) return std::to_string(static_cast<int64_t>(x));
  return json(x).dump();
}

struct ParamDoc {
  std::string name, type, default_value, doc;
};

// ---- value parsers per C++ type -------------------------------------------------
inline void parse_value(const json& v, bool& out, const Where& w) {
  if (!v.is_boolean()) w.fail("expected a boolean (true/false), got " + json_type_name(v));
  out = v.get<bool>();
}
inline void parse_value(const json& v, double& out, const Where& w) {
  if (!v.is_number()) w.fail("expected a number, got " + json_type_name(v));
  out = v.get<double>();
  if (!std::isfinite(out)) w.fail("expected a finite number");
}
template <class I>
  requires(std::is_integral_v<I> && !std::is_same_v<I, bool>)
inline void parse_value(const json& v, I& out, const Where& w) {
  if (!v.is_number_integer()) w.fail("expected an integer, got " + json_type_name(v));
  if (v.is_number_unsigned()) {
    auto u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<I>::max()))
      w.fail("integer out of range: must be <= " + std::to_string(std::numeric_limits<I>::max()) +
             ", got " + v.dump());
    out = static_cast<I>(u);
  } else {
    auto s = v.get<int64_t>();
    if (s < static_cast<int64_t>(std::numeric_limits<I>::min()) ||
        s > static_cast<int64_t>(std::numeric_limits<I>::max()))
      w.fail("integer out of range [" + std::to_string(std::numeric_limits<I>::min()) + ", " +
             std::to_string(std::numeric_limits<I>::max()) + "], got " + v.dump());
    out = static_cast<I>(s);
  }
}
inline void parse_value(const json& v, std::string& out, const Where& w) {
  if (!v.is_string()) w.fail("expected a string, got " + json_type_name(v));
  out = v.get<std::string>();
}
template <class E>
inline void parse_value(const json& v, std::vector<E>& out, const Where& w) {
  if (!v.is_array()) w.fail("expected a list, got " + json_type_name(v));
  out.clear();
  for (size_t i = 0; i < v.size(); ++i) {
    E e{};
    parse_value(v[i], e, w.index(i));
    out.push_back(std::move(e));
  }
}

template <class T> struct TypeName;
template <> struct TypeName<bool> { static std::string get() { return "bool"; } };
template <> struct TypeName<double> { static std::string get() { return "number"; } };
template <> struct TypeName<int> { static std::string get() { return "int"; } };
template <> struct TypeName<int64_t> { static std::string get() { return "int"; } };
template <> struct TypeName<std::string> { static std::string get() { return "string"; } };
template <class E> struct TypeName<std::vector<E>> {
  static std::string get() { return "list<" + TypeName<E>::get() + ">"; }
};

// Every integer parameter has an upper bound checked at parse time
// (batch_size 4294967297 was read as batch 1 through an int cast, 2^40 gave a run of 0
// samples). Without an explicit max() it is kMaxInt: counts are used as `int` in batch and
// kernel code, so 2^31 - 1 is the most any of them can mean. Quantities that have a
// natural smaller limit (workers, updaters, mega-batches) declare it with max().
inline constexpr int64_t kMaxInt = 2147483647;

template <class M>
concept IntegerLike = (std::is_integral_v<M> && !std::is_same_v<M, bool>) ||
                      requires { typename M::value_type; } &&
                          std::is_integral_v<typename M::value_type> &&
                          !std::is_same_v<typename M::value_type, bool> &&
                          !std::is_same_v<M, std::string>;

template <class T> class ParamSet;
template <class T> const ParamSet<T>& params_of();

// A nested parameter struct (it has a static describe()).
template <class T>
concept Described = requires(ParamSet<T>& p) { T::describe(p); };

template <class T>
class ParamSet {
 public:
  struct Field {
    std::string name, type, doc;
    std::function<void(T&, const json&, const Where&)> parse;
    std::function<json(const T&)> get;
    std::vector<std::function<void(const T&, const Where&)>> checks;
    std::vector<std::string> constraint_docs;
    bool is_nested = false;
    std::function<std::vector<ParamDoc>()> nested_docs;

    // Numeric constraints. Messages say what was expected and what was given. Integers
    // compare exactly (a double holds 2^53, not 2^63-1: 2^53 + 1 must not pass <= 2^53).
    Field& min(double lo, bool inclusive = true) { return bound(lo, inclusive, false); }
    Field& positive() { return min(0.0, false); }
    // An explicit upper bound replaces the default cap of integer fields (kMaxInt).
    Field& max(double hi, bool inclusive = true) {
      default_max = nullptr;
      default_max_doc.clear();
      return bound(hi, inclusive, true);
    }
    Field& bound(double b, bool inclusive, bool upper) {
      auto g = get;
      const std::string op = std::string(upper ? "<" : ">") + (inclusive ? "= " : " ");
      checks.push_back([=](const T& t, const Where& w) { check_bound(g(t), b, inclusive, upper, op, w); });
      constraint_docs.push_back(op + fmt(b));
      return *this;
    }
    static void check_bound(const json& v, double b, bool inclusive, bool upper,
                            const std::string& op, const Where& w) {
      if (v.is_array()) {
        for (size_t i = 0; i < v.size(); ++i) check_bound(v[i], b, inclusive, upper, op, w.index(i));
        return;
      }
      const long double x = v.is_number_unsigned()  ? static_cast<long double>(v.get<uint64_t>())
                            : v.is_number_integer() ? static_cast<long double>(v.get<int64_t>())
                                                    : static_cast<long double>(v.get<double>());
      const long double lb = b;
      const bool ok = upper ? (inclusive ? x <= lb : x < lb) : (inclusive ? x >= lb : x > lb);
      if (!ok) w.fail("must be " + op + fmt(b) + ", got " + (v.is_number_integer() ? v.dump() : fmt(v.get<double>())));
    }
    Field& one_of(std::vector<std::string> allowed) {
      auto g = get;
      std::string all;
      for (auto& a : allowed) all += (all.empty() ? "" : "|") + a;
      checks.push_back([=](const T& t, const Where& w) {
        const std::string v = g(t).template get<std::string>();
        for (auto& a : allowed)
          if (a == v) return;
        w.fail("expected one of " + all + ", got \"" + v + "\"");
      });
      type = all;
      return *this;
    }

    static std::string fmt(double x) { return fmt_number(x); }

    // The default cap of an integer field (or list of integers) without an explicit max().
    std::function<void(const T&, const Where&)> default_max;
    std::string default_max_doc;
  };

  template <class M>
  Field& field(const std::string& name, M T::*member, std::string doc) {
    Field f;
    f.name = name;
    f.doc = std::move(doc);
    if constexpr (Described<M>) {
      f.type = "object";
      f.is_nested = true;
      f.parse = [member](T& t, const json& v, const Where& w) {
        t.*member = params_of<M>().parse(v, w);
      };
      f.get = [member](const T& t) { return params_of<M>().to_json(t.*member); };
      f.nested_docs = [] { return params_of<M>().docs(); };
    } else {
      f.type = TypeName<M>::get();
      f.parse = [member](T& t, const json& v, const Where& w) { parse_value(v, t.*member, w); };
      f.get = [member](const T& t) { return json(t.*member); };
      if constexpr (IntegerLike<M>) {
        auto g = f.get;
        f.default_max = [g](const T& t, const Where& w) {
          Field::check_bound(g(t), static_cast<double>(kMaxInt), true, true, "<= ", w);
        };
        f.default_max_doc = "<= " + std::to_string(kMaxInt);
      }
    }
    fields_.push_back(std::move(f));
    return fields_.back();
  }

  // A whole-struct check after all fields are parsed (cross-field rules).
  void check(std::function<void(const T&, const Where&)> fn) { struct_checks_.push_back(fn); }

  // Parse an object: unknown keys are errors; missing keys keep the defaults.
  T parse(const json& obj, const Where& w, std::vector<std::string>* given = nullptr) const {
    if (!obj.is_object()) w.fail("expected an object, got " + json_type_name(obj));
    T t{};
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      const Field* f = find(it.key());
      if (!f) w.key(it.key()).fail("unknown key \"" + it.key() + "\" (known: " + known() + ")");
      f->parse(t, it.value(), w.key(it.key()));
      for (auto& c : f->checks) c(t, w.key(it.key()));
      if (f->default_max) f->default_max(t, w.key(it.key()));
      if (given) given->push_back(it.key());
    }
    for (auto& c : struct_checks_) c(t, w);
    return t;
  }
  json to_json(const T& t) const {
    json j = json::object();
    for (auto& f : fields_) j[f.name] = f.get(t);
    return j;
  }
  std::vector<ParamDoc> docs(const std::string& prefix = "") const {
    std::vector<ParamDoc> out;
    T t{};
    for (auto& f : fields_) {
      if (f.is_nested) {
        for (auto d : f.nested_docs()) {
          d.name = prefix + f.name + "." + d.name;
          out.push_back(d);
        }
        continue;
      }
      std::string doc = f.doc;
      for (auto& c : f.constraint_docs) doc += " [" + c + "]";
      if (!f.default_max_doc.empty()) doc += " [" + f.default_max_doc + "]";
      out.push_back({prefix + f.name, f.type, f.get(t).dump(), doc});
    }
    return out;
  }
  const Field* find(const std::string& name) const {
    for (auto& f : fields_)
      if (f.name == name) return &f;
    return nullptr;
  }
  std::string known() const {
    std::string s;
    for (auto& f : fields_) s += (s.empty() ? "" : ", ") + f.name;
    return s;
  }

 private:
  std::vector<Field> fields_;
  std::vector<std::function<void(const T&, const Where&)>> struct_checks_;
};

template <class T>
const ParamSet<T>& params_of() {
  static const ParamSet<T> p = [] {
    ParamSet<T> s;
    T::describe(s);
    return s;
  }();
  return p;
}

// A struct with no parameters.
struct NoParams {
  static void describe(ParamSet<NoParams>&) {}
};

}  // namespace wb::core
