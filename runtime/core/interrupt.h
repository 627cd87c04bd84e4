// SIGINT / SIGTERM: the first signal asks the runner to stop at the next step boundary:
// the current run is recorded with status "interrupted" (its HDF5 write completes), the
// sweep stops, and the process exits with 128 + signal. A second signal exits at once;
// the results file is still consistent (runs are added by atomic rename), and
// `--resume` re-runs only what did not complete.
#pragma once

namespace wb::rt {

void install_signal_handlers();
bool interrupt_requested();  // async-signal-safe read of the flag
int interrupt_signal();      // the signal number, 0 if none
void request_interrupt_for_test(int sig);

}  // namespace wb::rt
