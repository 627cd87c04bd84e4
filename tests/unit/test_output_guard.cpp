// Output guard (app/results/output_guard.h): a writer killed during a fold leaves <out>.tmp<pid>
// and its pid in <out>.lock; the next start to take the lock removes that file, whatever
// /proc still says about the pid, and touches nothing else.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "app/results/output_guard.h"
#include "core/error.h"

namespace {

std::string slurp(const std::string& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("output guard: the lock's dead writer's .tmp<pid> goes, even while its pid still exists") {
  const std::string out = "/tmp/wb_output_guard_test_" + std::to_string(::getpid()) + ".h5";
  const std::string lock = out + ".lock";
  // A process that is still there (as a writer in its exit is: it has closed its files, so
  // its flock is gone, but kill(pid, 0) and /proc still find it) and holds no flock.
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::pause();  // until killed
    ::_exit(0);
  }
  const std::string tmp = out + ".tmp" + std::to_string(child);
  const std::string users = out + ".tmp99";  // not named by the lock: a user's file
  std::ofstream(tmp) << "partial fold";
  std::ofstream(users) << "the user's";
  std::ofstream(lock) << child << "\n";
  {
    const wb::app::OutputLock held = wb::app::take_output_lock(lock, out, "test");
    REQUIRE(held.fd >= 0);
    CHECK(held.stale_pid == std::to_string(child));
    CHECK_FALSE(std::ifstream(tmp).good());  // the dead writer's partial fold is gone
    CHECK(std::ifstream(users).good());      // nothing else is touched
    CHECK(slurp(lock) == std::to_string(::getpid()) + "\n");  // and the lock names us now
    ::close(held.fd);
  }
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  std::remove(users.c_str());
  std::remove(lock.c_str());
}

TEST_CASE("output guard: a held lock refuses the start and leaves the holder's .tmp<pid> alone") {
  const std::string out = "/tmp/wb_output_guard_held_" + std::to_string(::getpid()) + ".h5";
  const std::string lock = out + ".lock";
  const std::string tmp = out + ".tmp12345";
  std::ofstream(lock) << "12345\n";
  std::ofstream(tmp) << "a fold in progress";
  const int holder = ::open(lock.c_str(), O_RDWR | O_CLOEXEC);  // another open file description
  REQUIRE(holder >= 0);
  REQUIRE(::flock(holder, LOCK_EX | LOCK_NB) == 0);
  CHECK_THROWS_AS(wb::app::take_output_lock(lock, out, "test"), wb::UserError);
  CHECK(std::ifstream(tmp).good());
  CHECK(slurp(lock) == "12345\n");
  ::close(holder);
  std::remove(tmp.c_str());
  std::remove(lock.c_str());
}
