// The output guard (docs/results.md "Crash safety"): the checks and the lock that make the results
// file and its companions (<out>.lock, <out>.journal, <out>.tmp<pid>) the workbench's own --
// the output path is a regular file (or absent) in a writable directory within the name
// limits; a companion is never a link, another user's file or not the workbench's; one
// process at a time holds <out>.lock (an advisory flock, released by the kernel on a crash).
#pragma once

#include <string>

namespace wb::app {

// strerror(e).
std::string errno_text(int e);
// fsync the file or directory at p (best effort).
void fsync_path(const std::string& p);
// "process <pid>" of the lock file's holder, or "another process".
std::string lock_holder(const std::string& lock);
// A companion at p is absent, or a regular file of this user with one link (and absent
// when must_be_absent); otherwise UserError naming `where`.
void check_companion(const std::string& p, const std::string& where, bool must_be_absent = false);
// An open companion (the lock) is a regular file of this user with one link holding at most
// a pid; otherwise false with the reason in *problem.
bool companion_ok(int fd, std::string* problem);
// An existing output that --resume must read and any run must replace: readable (for
// --resume) and neither immutable nor append-only (chattr +i/+a); UserError otherwise.
void check_replaceable(const std::string& path, const std::string& where, bool resume);

struct OutputLock {
  int fd = -1;
  std::string stale_pid;  // the pid a crashed writer left in the lock ("" if none)
};
// Take <out>.lock (flock, retried when its previous holder unlinked it between our open and
// our flock), remove the .tmp<pid> of the writer it names (remove_stale_tmp) and write our pid
// into it. UserError naming the holder when it is held.
OutputLock take_output_lock(const std::string& lock, const std::string& path,
                            const std::string& where);
// A writer killed during a fold leaves <path>.tmp<its pid>, and its pid in the lock: that file
// (and no other) was written by the workbench; remove it if it is still a regular file of ours
// with one link. Call it holding the lock that names stale_pid: only the lock's holder writes
// <path>.tmp<pid>, and a killed holder releases its flock only once every thread of it has
// left its system calls, so the file is finished with even when /proc still shows the pid (a
// process closes its files before it becomes a zombie; asking whether the pid had exited kept
// such files, ~1 in 100 mpirun -n 2 kill -9 torture runs). A user's own <out>.tmp99 is never
// touched.
void remove_stale_tmp(const std::string& path, const std::string& stale_pid);

// Throws UserError if the output cannot be written: directory missing or not writable, a
// name (with the .tmp/.journal/.lock companions) beyond the file system's limits, or an
// existing output that is not a regular file (device, FIFO, socket, directory).
void check_output_writable(const std::string& path, const std::string& where, bool force);

}  // namespace wb::app
