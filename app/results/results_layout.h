// The HDF5 layout writer (DESIGN.md section 9; the layout is docs/results.md): a results
// file's image is built in memory from the old file (unless fresh) and the new runs, with
// /summary rebuilt from the declared summary fields (result_schema.h), then written beside
// the file and renamed over it. Only world rank 0 calls these (app/results/recorder.h).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "app/results/run_result.h"

namespace wb::app {

// The image of the results file at `path` after adding `runs`: the existing file (unless
// `fresh`, then a new file with `info`'s root attributes) plus the runs, /summary rebuilt.
// Throws WriteError when the old file cannot be read.
// `dirfd` (an open directory) makes `path` a name in that directory (openat), so that a sweep
// reads and writes the directory it opened even when that was moved or replaced since.
std::vector<char> build_image(const std::string& path, bool fresh, const FileInfo& info,
                              const std::vector<RunResult>& runs, int dirfd = -100 /*AT_FDCWD*/);
// This process's provenance for a run it journals now: workbench_version, git_commit (of
// this binary), mpi_ranks (the sweep's, as `mpirun -n` gave it: a run of a rank group used
// some of them), devices (from `info`), host, finished_utc, from = "writer".
json writer_provenance(const FileInfo& info);
// The provenance of a run whose record carries none (a journal from before per-run
// provenance): the journal header's fields, "unknown" where the header lacks one.
json header_provenance(const json& journal_header);

// Write `bytes` to <path>.tmp<pid> (created O_EXCL | O_NOFOLLOW: never through a link), fsync,
// rename over `path`, fsync the directory. On any failure the tmp file is removed, `path` is
// untouched, and WriteError is thrown, naming `what` ("the results file", "the timeline").
// dirfd: as for build_image (the directory is fsync'ed through it).
void replace_file(const std::string& path, const std::vector<char>& bytes,
                  const std::string& what = "the results file", int dirfd = -100 /*AT_FDCWD*/);

// Runs in a results file: id -> StoredRun. Empty if the file does not exist. Throws
// UserError when the file is not a readable workbench results file; `as_output`: the file is
// the run's -o, and the error says how to write elsewhere or replace it (a reader such as
// `workbench bandwidth` only names what is wrong).
std::map<std::string, StoredRun> existing_runs(const std::string& path, bool as_output = true);

}  // namespace wb::app
