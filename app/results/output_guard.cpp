#include "app/results/output_guard.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "app/results/run_result.h"
#include "core/error.h"

namespace wb::app {
namespace fs = std::filesystem;

std::string errno_text(int e) { return std::strerror(e); }

void fsync_path(const std::string& p) {
  int fd = ::open(p.c_str(), O_RDONLY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

std::string lock_holder(const std::string& lock) {
  std::string pid;
  if (FILE* f = std::fopen(lock.c_str(), "r")) {
    char buf[64] = {0};
    if (std::fgets(buf, sizeof buf, f)) pid = buf;
    std::fclose(f);
  }
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid.empty() ? "another process" : "process " + pid;
}

bool companion_ok(int fd, std::string* problem) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return *problem = errno_text(errno), false;
  if (!S_ISREG(st.st_mode)) return *problem = "not a regular file", false;
  if (st.st_uid != ::geteuid()) return *problem = "owned by another user", false;
  if (st.st_nlink != 1)
    return *problem = "it has " + std::to_string(st.st_nlink) + " hard links", false;
  // A lock holds a pid and a newline (or nothing).
  char buf[32] = {0};
  const ssize_t n = ::pread(fd, buf, sizeof buf, 0);
  if (n < 0) return *problem = errno_text(errno), false;
  for (ssize_t i = 0; i < n; ++i)
    if (!(buf[i] >= '0' && buf[i] <= '9') && buf[i] != '\n')
      return *problem = "its contents are not a process id", false;
  if (n == static_cast<ssize_t>(sizeof buf)) return *problem = "too long for a lock", false;
  return true;
}

void check_companion(const std::string& p, const std::string& where, bool must_be_absent) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) return;  // absent: it will be created with O_EXCL
  if (S_ISLNK(st.st_mode))
    throw UserError(where, p + " is a symbolic link: refusing to write through it (the workbench "
                              "creates its companion files itself; remove the link)");
  if (must_be_absent)
    throw UserError(where, p + " exists and was not written by this process: refusing to replace "
                              "it; move it away");
  if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || st.st_nlink != 1)
    throw UserError(where, p + " is not a companion file of this workbench (" +
                               (!S_ISREG(st.st_mode) ? std::string("not a regular file")
                                : st.st_uid != ::geteuid() ? std::string("owned by another user")
                                                           : std::string("it has several hard links")) +
                               "): refusing to touch it; move it away or use another -o");
}

void check_replaceable(const std::string& path, const std::string& where, bool resume) {
  // An existing file that --resume adds to (or --force replaces) must be readable, and
  // replaceable: an immutable or append-only file (chattr +i/+a) cannot be renamed over, and
  // that is found now, not after every run has executed.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0 && errno != ENOENT && resume)
    throw UserError(where, path + ": cannot read the results file to resume it: " + errno_text(errno));
  if (fd >= 0) {
    int flags = 0;
    if (::ioctl(fd, FS_IOC_GETFLAGS, &flags) != 0) flags = 0;
    ::close(fd);
    if (flags & (FS_IMMUTABLE_FL | FS_APPEND_FL))
      throw UserError(where, path + " is " + ((flags & FS_IMMUTABLE_FL) ? "immutable" : "append-only") +
                                 " (chattr +" + ((flags & FS_IMMUTABLE_FL) ? "i" : "a") +
                                 "): it cannot be replaced; chattr -i it, or use another -o");
  }
}

OutputLock take_output_lock(const std::string& lock, const std::string& path,
                            const std::string& where) {
  // The file may be unlinked by its previous holder between our open and our flock; then we
  // hold a lock on a dead inode, so check and retry.
  OutputLock out;
  for (int attempt = 0;; ++attempt) {
    const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno == ELOOP)
      throw UserError(where, lock + " is a symbolic link: refusing to write through it (remove it)");
    if (fd < 0) throw UserError(where, "cannot create the lock file " + lock + ": " + errno_text(errno));
    std::string problem;
    if (!companion_ok(fd, &problem)) {
      ::close(fd);
      throw UserError(where, lock + " is not a workbench lock file (" + problem +
                                 "): refusing to touch it; remove it or use another -o");
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      throw UserError(path, "is being written by " + lock_holder(lock) + " (it holds " + lock +
                                "); wait for it, or use another -o");
    }
    struct stat a {}, b {};
    if (::fstat(fd, &a) == 0 && ::stat(lock.c_str(), &b) == 0 && a.st_ino == b.st_ino &&
        a.st_dev == b.st_dev) {
      out.fd = fd;
      break;
    }
    ::close(fd);
    if (attempt > 100) throw UserError(path, "cannot take the lock " + lock);
  }
  {
    char buf[32] = {0};
    const ssize_t n = ::pread(out.fd, buf, sizeof buf - 1, 0);
    if (n > 0) out.stale_pid = std::string(buf, static_cast<size_t>(n));
    while (!out.stale_pid.empty() && (out.stale_pid.back() == '\n' || out.stale_pid.back() == ' '))
      out.stale_pid.pop_back();
  }
  // Clean up before our pid replaces the dead writer's: a start killed in between would
  // otherwise leave the next one no record of whose .tmp<pid> to remove.
  remove_stale_tmp(path, out.stale_pid);
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(out.fd, 0) == 0) (void)!::write(out.fd, pid.data(), pid.size());
  return out;
}

void remove_stale_tmp(const std::string& path, const std::string& stale_pid) {
  if (!stale_pid.empty() && stale_pid.size() <= 9 &&
      stale_pid.find_first_not_of("0123456789") == std::string::npos &&
      stale_pid != std::to_string(::getpid())) {
    const std::string t = path + ".tmp" + stale_pid;
    struct stat ts {};
    if (::lstat(t.c_str(), &ts) == 0 && S_ISREG(ts.st_mode) && ts.st_uid == ::geteuid() &&
        ts.st_nlink == 1)
      ::unlink(t.c_str());
  }
}

void check_output_writable(const std::string& path, const std::string& where, bool force) {
  std::error_code ec;
  fs::path p = fs::absolute(path);
  {
    // What the name leads to, first: /dev/stdout is a link to a pipe or a terminal, whose
    // "directory" (/proc/<pid>/fd) is not what is wrong with it.
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
      throw UserError(where, "output " + p.string() + " is " +
                                 (S_ISFIFO(st.st_mode) ? "a FIFO or pipe" : S_ISSOCK(st.st_mode) ? "a socket"
                                  : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device (a terminal?)"
                                                                                  : "not a regular file") +
                                 ": results go to a regular file (or a new name)");
  }
  const fs::file_status ls = fs::symlink_status(p, ec);
  if (fs::is_symlink(ls)) {
    if (!fs::exists(p, ec)) {
      if (!force)
        throw UserError(where, "output " + p.string() + " is a dangling symbolic link (to " +
                                   fs::read_symlink(p, ec).string() + "): pass --force to replace it");
    } else {
      p = fs::canonical(p, ec);
    }
  }
  const fs::path dir = p.parent_path();
  if (!fs::is_directory(dir, ec))
    throw UserError(where, "output directory " + dir.string() + " does not exist");
  const fs::file_status st = fs::status(p, ec);
  if (fs::exists(st) && !fs::is_regular_file(st)) {
    const char* kind = fs::is_directory(st) ? "a directory" : fs::is_fifo(st) ? "a FIFO"
                       : fs::is_socket(st) ? "a socket" : fs::is_character_file(st) || fs::is_block_file(st)
                       ? "a device" : "not a regular file";
    throw UserError(where, "output " + p.string() + " is " + kind +
                               ": results go to a regular file (or a new name)");
  }
  // Name limits, with the companions' suffixes: ".tmp" + pid (up to 10 digits), ".journal".
  const long name_max = ::pathconf(dir.c_str(), _PC_NAME_MAX);
  const size_t longest = p.filename().string().size() + 14;
  if (name_max > 0 && longest > static_cast<size_t>(name_max))
    throw UserError(where, "output name " + p.filename().string().substr(0, 40) + "... is " +
                               std::to_string(p.filename().string().size()) +
                               " characters; with the .tmp<pid>/.journal companions it must stay "
                               "within the file system's " + std::to_string(name_max) + " (use a shorter name)");
  if (p.string().size() + 14 >= PATH_MAX)
    throw UserError(where, "output path is " + std::to_string(p.string().size()) +
                               " characters, beyond the system's limit (" + std::to_string(PATH_MAX) + ")");
  // Probe by creating a file: access(W_OK) says yes to root even on read-only mounts.
  const fs::path probe = dir / (".wb-probe-" + std::to_string(::getpid()));
  const int fd = ::open(probe.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600);
  if (fd < 0) {
    const int err = errno;
    // Say which: a full file system (no blocks, or no free inodes: df -i) is not a
    // permission problem.
    if (err == ENOSPC || err == EDQUOT)
      throw UserError(where, "cannot create a file in the output directory " + dir.string() + ": " +
                                 errno_text(err) + " (no free space or no free inodes: df -h, df -i)");
    throw UserError(where, "output directory " + dir.string() + " is not writable (" + errno_text(err) + ")");
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

}  // namespace wb::app
