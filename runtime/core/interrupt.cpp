#include "runtime/core/interrupt.h"

#include <csignal>
#include <unistd.h>

namespace wb::rt {
namespace {
volatile std::sig_atomic_t g_signal = 0;

extern "C" void on_signal(int sig) {
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
}

bool interrupt_requested() { return g_signal != 0; }
int interrupt_signal() { return static_cast<int>(g_signal); }
void request_interrupt_for_test(int sig) { g_signal = sig; }

}  // namespace wb::rt
