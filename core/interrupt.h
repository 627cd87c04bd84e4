// SIGINT / SIGTERM / SIGHUP / SIGPIPE: the first signal asks the runner to stop at the next step boundary:
// the current run is recorded with status "interrupted" (its HDF5 write completes), the
// sweep stops, and the process exits with 128 + signal. A second signal exits at once;
// the results file is still consistent (runs are added by atomic rename), and
// `--resume` re-runs only what did not complete.
#pragma once

#include <stdexcept>

namespace wb::core {

// Thrown by throw_if_interrupted() from long local phases (data loading, sampler
// construction, setup loops) so that every phase answers a signal within ~1 s. main()
// turns it into exit code 128+signal; the runner turns it into an interrupted run.
struct Interrupted : std::runtime_error {
  Interrupted() : std::runtime_error("interrupted by signal") {}
};

void install_signal_handlers();
bool interrupt_requested();  // async-signal-safe read of the flag
int interrupt_signal();      // the signal number, 0 if none
void request_interrupt_for_test(int sig);
// Another rank got signal `sig` (comm/sweep_control.h): stop as if it had come here.
void request_interrupt(int sig);
// Throws Interrupted when a signal has arrived: call it in any loop that may run for more
// than ~0.1 s outside the training steps (it is one load of a sig_atomic_t).
inline void throw_if_interrupted() {
  if (interrupt_requested()) throw Interrupted();
}

}  // namespace wb::core
