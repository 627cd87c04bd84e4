// Output guard (runtime/output_guard.h): a writer killed during a fold leaves <out>.tmp<pid>;
// the next start removes it once that pid's process is gone, a zombie included.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "runtime/output_guard.h"

namespace {

// Waits until the child has exited (a zombie) without reaping it.
void wait_zombie(pid_t pid) {
  for (int i = 0; i < 500; ++i) {
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT | WNOHANG) == 0 &&
        info.si_pid == pid)
      return;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  FAIL("the child did not exit");
}

}  // namespace

TEST_CASE("output guard: a zombie's .tmp<pid> is stale; a live writer's is kept") {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::pause();  // until killed
    ::_exit(0);
  }
  const std::string out = "/tmp/wb_output_guard_test_" + std::to_string(::getpid()) + ".h5";
  const std::string tmp = out + ".tmp" + std::to_string(child);
  std::ofstream(tmp) << "partial fold";
  CHECK_FALSE(wb::rt::process_gone(child));
  wb::rt::remove_stale_tmp(out, std::to_string(child));
  CHECK(std::ifstream(tmp).good());  // a running process's file stays
  ::kill(child, SIGKILL);
  wait_zombie(child);
  CHECK(wb::rt::process_gone(child));  // exited, not yet reaped: kill(pid, 0) still succeeds
  wb::rt::remove_stale_tmp(out, std::to_string(child));
  CHECK_FALSE(std::ifstream(tmp).good());
  int status = 0;
  ::waitpid(child, &status, 0);
  CHECK(wb::rt::process_gone(child));  // reaped: no such process
  std::remove(tmp.c_str());
}
