#include "core/interrupt.h"

#include <csignal>
#include <unistd.h>

namespace wb::core {
namespace {
volatile std::sig_atomic_t g_signal = 0;

extern "C" void on_signal(int sig) {
  // A broken pipe repeats on every later write to it (the fold's last messages): only the
  // first one counts, it never forces the exit.
  if (sig == SIGPIPE && g_signal != 0) return;
  if (g_signal != 0) _exit(128 + sig);  // second signal: leave now
  g_signal = sig;
}
}  // namespace

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  // A hangup (the terminal or an ssh session gone, SIGHUP to mpirun) and a closed output pipe
  // (`workbench run ... 2>&1 | head`) stop the sweep the same way: the finished runs are
  // folded into the results file, the lock is released, exit 128 + signal.
  sigaction(SIGHUP, &sa, nullptr);
  sigaction(SIGPIPE, &sa, nullptr);
  // A file-size limit (ulimit -f, RLIMIT_FSIZE) is a full disk by another name: ignored, the
  // write that crosses it fails with EFBIG, and the writer reports it (exit 4, one line, its
  // temporary file removed) instead of the process dying of SIGXFSZ mid-fold.
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  sigaction(SIGXFSZ, &ign, nullptr);
}

void request_interrupt(int sig) {
  if (g_signal == 0) g_signal = sig;
}

bool interrupt_requested() { return g_signal != 0; }
int interrupt_signal() { return static_cast<int>(g_signal); }
void request_interrupt_for_test(int sig) { g_signal = sig; }

}  // namespace wb::core
