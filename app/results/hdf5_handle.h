// HDF5 identifiers as owned handles: each closes itself with its own H5?close when it goes
// out of scope, on every path, exceptions included (a hand-closed hid_t leaked on each
// early throw). WB_H5 turns a negative HDF5 return into an internal error naming the call.
#pragma once

#include <hdf5.h>

#include <utility>

#include "core/error.h"

#define WB_H5(expr)                                                                  \
  ([&]() {                                                                           \
    auto wb_h5_rc_ = (expr);                                                         \
    if (wb_h5_rc_ < 0) ::wb::throw_internal(__FILE__, __LINE__, "HDF5: " #expr);     \
    return wb_h5_rc_;                                                                \
  }())

namespace wb::app {

template <herr_t (*Close)(hid_t)>
class H5Handle {
 public:
  H5Handle() = default;
  explicit H5Handle(hid_t id) : id_(id) {}
  H5Handle(const H5Handle&) = delete;
  H5Handle& operator=(const H5Handle&) = delete;
  H5Handle(H5Handle&& o) noexcept : id_(std::exchange(o.id_, -1)) {}
  H5Handle& operator=(H5Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, -1);
    }
    return *this;
  }
  ~H5Handle() { reset(); }
  operator hid_t() const { return id_; }  // NOLINT: handles pass where the C API takes hid_t
  bool valid() const { return id_ >= 0; }
  void reset() {
    if (id_ >= 0) Close(id_);
    id_ = -1;
  }

 private:
  hid_t id_ = -1;
};

using H5File = H5Handle<H5Fclose>;
using H5Group = H5Handle<H5Gclose>;
using H5Dataset = H5Handle<H5Dclose>;
using H5Space = H5Handle<H5Sclose>;
using H5Type = H5Handle<H5Tclose>;
using H5Attr = H5Handle<H5Aclose>;
using H5Plist = H5Handle<H5Pclose>;

}  // namespace wb::app
