// A named 1-D or 2-D dataset an algorithm or a diagnostic adds under its run's HDF5 group
// (DESIGN.md section 9). A ground-floor fact: algorithms produce Series, the recorder
// (application floor) writes them.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace wb::core {

struct Series {  // a named 1-D or 2-D dataset under a run group
  std::string path;                    // relative to the run group, e.g. "metrics/diversity"
  size_t rows = 0, cols = 1;           // cols == 1 -> written as 1-D
  std::vector<double> data;            // row-major
  std::map<std::string, std::vector<std::string>> string_list_attrs;  // e.g. tensor_names
};

}  // namespace wb::core
