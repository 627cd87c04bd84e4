#include "core/progress.h"

#include <unistd.h>

#include <cstdio>

namespace wb::core {

ProgressLine::ProgressLine(bool enabled) : enabled_(enabled), tty_(isatty(2) != 0) {}

void ProgressLine::begin_run(int i, int n, const std::string& id) {
  i_ = i;
  n_ = n;
  id_ = id;
  run_start_ = last_ = Clock::now();
}

void ProgressLine::update(int64_t step, int64_t total, double loss) {
  if (!enabled_ || !tty_) return;
  const auto now = Clock::now();
  const double since_start = std::chrono::duration<double>(now - run_start_).count();
  if (since_start < 2.0 || std::chrono::duration<double>(now - last_).count() < 0.25) return;
  last_ = now;
  const double eta = step > 0 ? since_start * static_cast<double>(total - step) / step : 0;
  std::fprintf(stderr, "\r\033[K[%d/%d] %s  step %lld/%lld  loss %.4g  ETA %.0fs", i_, n_,
               id_.c_str(), static_cast<long long>(step), static_cast<long long>(total), loss,
               eta);
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressLine::end_run(const std::string& line) {
  if (!enabled_) return;
  if (drawn_) std::fprintf(stderr, "\r\033[K");
  drawn_ = false;
  std::fprintf(stderr, "[%d/%d] %s\n", i_, n_, line.c_str());
  std::fflush(stderr);
}

void ProgressLine::message(const std::string& line) {
  if (!enabled_) return;
  if (drawn_) std::fprintf(stderr, "\r\033[K");
  drawn_ = false;
  std::fprintf(stderr, "%s\n", line.c_str());
}

}  // namespace wb::core
