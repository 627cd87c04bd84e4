// A finished run as bytes: how results travel from a rank group's leader to world rank 0
// (comm::ResultChannel), the only writer. CBOR, which unlike JSON text keeps NaN (curves
// have NaN where nothing was evaluated); unpack_result(pack_result(r)) == r bit for bit.
#pragma once

#include <cstdint>
#include <vector>

#include "app/results/run_result.h"

namespace wb::app {

// `provenance`, when given, is packed in place of r.provenance (the recorder stamps a run
// as it journals it without copying the run).
std::vector<uint8_t> pack_result(const RunResult& r, const json* provenance = nullptr);
RunResult unpack_result(const std::vector<uint8_t>& bytes);

}  // namespace wb::app
