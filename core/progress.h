// Progress on stderr (rank 0 only). On a terminal: one line rewritten in place at most
// 4 times a second, for runs that take longer than a couple of seconds ("run i/N id
// step s/S loss ETA"). Not a terminal (CI, nohup, pipes): quiet, except one line per
// finished run.
#pragma once

#include <chrono>
#include <string>

namespace wb::core {

class ProgressLine {
 public:
  explicit ProgressLine(bool enabled);
  void begin_run(int i, int n, const std::string& id);
  void update(int64_t step, int64_t total, double loss);
  void end_run(const std::string& line);
  void message(const std::string& line);

 private:
  using Clock = std::chrono::steady_clock;
  bool enabled_, tty_;
  int i_ = 0, n_ = 0;
  std::string id_;
  Clock::time_point run_start_, last_;
  bool drawn_ = false;
};

}  // namespace wb::core
