// The CPU this process runs on, as a cost profile records it ("machine": "...; CPU: ..."), so
// that a profile measured on one host and used on another says so: `calibrate --validate`
// before its table, a run in its summary (profile_host) and provenance, a report in its
// protocol table. A profile prices one machine's compute and links; on another CPU its sim_s
// carries the difference between the two machines as well as the model's error.
#pragma once

#include <optional>
#include <string>

namespace wb::app {

// "CPU: <model name> (family F model M), N logical CPUs, kernels built for ISA". Two hosts
// (a Zen 3 with AVX2, a Zen 5 with AVX-512) may report the same model name: the family,
// model and ISA tell them apart. Read once per process.
const std::string& host_cpu_text();

// The "CPU: ..." part of a machine description (empty when it has none: profiles written by
// hand, or before profiles recorded their host).
std::string machine_cpu_part(const std::string& machine);

// Whether a profile whose "machine" is `machine` was measured on this CPU; nullopt when the
// profile does not say.
std::optional<bool> measured_on_this_cpu(const std::string& machine);

// The summary's profile_host: "same", "other" or "unknown" (the profile records no CPU).
std::string profile_host_word(const std::string& machine);

}  // namespace wb::app
