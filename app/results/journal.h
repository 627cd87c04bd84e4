// The journal (docs/results.md "Crash safety"): each finished run is appended to <out>.journal as one
// framed, checksummed record before it is reported completed, so a kill -9 keeps every
// appended run; a torn last record is dropped, a damaged one in the middle is skipped.
//   record = "WBR1" | u32 type | u64 length | CBOR payload | u64 FNV-1a of the payload
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "app/results/run_result.h"

namespace wb::app {

struct JournalContents {
  json header;                   // null when absent
  std::vector<RunResult> runs;   // in append order
  uint64_t valid_bytes = 0;      // up to the end of the last intact record
  int damaged = 0;               // damaged records skipped (not the torn tail of a crash)
  bool foreign = false;          // non-empty and not a journal at all (no record at offset 0)
};

// Every intact record of the journal at `path` (empty contents when it does not exist).
JournalContents read_journal(const std::string& path);
// The same, read through an open descriptor from offset 0 (pread: its offset is kept), so
// that a writer reads back what it appended even when the name now points elsewhere.
JournalContents read_journal_fd(int fd);
// The framed records: the sweep's header (written once, before the first run) and a run.
std::vector<uint8_t> journal_header_record(const json& header);
// A run record; `provenance` (results_layout.h writer_provenance) replaces r.provenance.
std::vector<uint8_t> journal_run_record(const RunResult& r, const json* provenance = nullptr);
// write(2) all of `b` to fd; WriteError naming `what` on failure.
void write_all(int fd, const std::vector<uint8_t>& b, const std::string& what);

}  // namespace wb::app
