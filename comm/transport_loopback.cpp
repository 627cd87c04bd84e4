// The in-process transport (comm/transport_loopback.h).
#include "comm/transport_loopback.h"

#include <chrono>
#include <cstring>
#include <exception>
#include <string>
#include <thread>

#include "core/error.h"

namespace wb::comm {

namespace {
auto deadline() {
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(
             std::chrono::duration<double>(LoopbackNet::kTimeoutS));
}
}  // namespace

LoopbackNet::LoopbackNet(const Layout& layout) : layout_(layout) {
  for (int r = 0; r < layout.ranks(); ++r) plans_.push_back(rvhdd::make_plan(layout, r));
}

void LoopbackNet::run(const std::function<void(int rank)>& f) {
  const int R = layout_.ranks();
  std::vector<std::exception_ptr> err(static_cast<size_t>(R));
  std::vector<std::thread> th;
  for (int r = 0; r < R; ++r)
    th.emplace_back([&, r] {
      try {
        f(r);
      } catch (...) {
        err[static_cast<size_t>(r)] = std::current_exception();
      }
    });
  for (auto& t : th) t.join();
  for (auto& e : err)
    if (e) std::rethrow_exception(e);
}

void LoopbackNet::post(const Key& k, const void* p, size_t bytes) {
  std::vector<unsigned char> m(bytes);
  if (bytes > 0) std::memcpy(m.data(), p, bytes);
  {
    std::lock_guard<std::mutex> g(mu_);
    Channel& ch = channels_[k];
    ch.msgs.emplace(ch.sent++, std::move(m));
  }
  cv_.notify_all();
}

uint64_t LoopbackNet::ticket(const Key& k) {
  std::lock_guard<std::mutex> g(mu_);
  return channels_[k].posted++;
}

void LoopbackNet::take(const Key& k, uint64_t seq, void* p, size_t bytes) {
  std::unique_lock<std::mutex> g(mu_);
  Channel& ch = channels_[k];
  const bool ok = cv_.wait_until(g, deadline(), [&] { return ch.msgs.count(seq) > 0; });
  const auto [src, dst, tag] = k;
  WB_ASSERT(ok, "loopback transport: rank " + std::to_string(dst) + " waited " + std::to_string(kTimeoutS) +
                   " s for message " + std::to_string(seq) + " from rank " + std::to_string(src) + " (tag " +
                   std::to_string(tag) + ")");
  auto it = ch.msgs.find(seq);
  WB_ASSERT(it->second.size() == bytes, "loopback transport: message of " + std::to_string(it->second.size()) +
                                           " bytes into a receive of " + std::to_string(bytes));
  if (bytes > 0) std::memcpy(p, it->second.data(), bytes);
  ch.msgs.erase(it);
}

void LoopbackNet::group_sum(const rvhdd::Plan& c, size_t level, uint64_t round, double* v, size_t n) {
  WB_ASSERT(!c.is_extra && level < c.levels, "loopback transport: group_sum off the plan");
  const int members = 2 << level;
  const auto key = std::make_tuple(level, c.position >> (level + 1), round);
  std::unique_lock<std::mutex> g(mu_);
  Slot& s = slots_[key];
  s.parts.emplace(c.position, std::vector<double>(v, v + n));
  if (static_cast<int>(s.parts.size()) == members) {
    s.total.assign(n, 0.0);
    for (const auto& [pos, part] : s.parts) {  // position order
      WB_ASSERT(part.size() == n, "loopback transport: group_sum of different lengths");
      for (size_t i = 0; i < n; ++i) s.total[i] += part[i];
    }
    cv_.notify_all();
  }
  const bool ok = cv_.wait_until(g, deadline(), [&] { return !s.total.empty() || n == 0; });
  WB_ASSERT(ok, "loopback transport: position " + std::to_string(c.position) + " waited " +
                   std::to_string(kTimeoutS) + " s for its level-" + std::to_string(level) + " group");
  if (n > 0) std::memcpy(v, s.total.data(), n * sizeof(double));
  if (++s.readers == members) slots_.erase(key);
}

void LoopbackTransport::wait(Request& r) {
  if (!r.receive) return;
  net_.take(r.key, r.seq, r.p, r.bytes);
  r.receive = false;
}

void LoopbackTransport::sum_doubles(size_t level, double* v, size_t n) {
  if (rounds_.size() <= level) rounds_.resize(level + 1, 0);
  net_.group_sum(plan(), level, rounds_[level]++, v, n);
}

}  // namespace wb::comm
