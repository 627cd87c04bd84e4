// Deterministic random numbers. std::uniform_*_distribution differ between standard
// libraries, so everything that shapes a result (data order, init, dropout masks,
// jitter) draws from this generator: xoshiro256** seeded through SplitMix64 from a
// tuple (seed, stream ids...). A worker's stream is derived from (seed, worker id),
// never from its rank, so data order does not depend on the number of MPI ranks.
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <utility>

namespace wb::core {

inline uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Mix a list of ids into one 64-bit key (order matters).
inline uint64_t mix_ids(std::initializer_list<uint64_t> ids) {
  uint64_t h = 0x243f6a8885a308d3ULL;
  for (uint64_t id : ids) {
    uint64_t s = h ^ (id + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
    h = splitmix64(s);
  }
  return h;
}

class Rng {
 public:
  Rng() : Rng(0) {}
  explicit Rng(uint64_t seed) {
    uint64_t x = seed;
    for (auto& w : s_) w = splitmix64(x);
  }
  static Rng stream(std::initializer_list<uint64_t> ids) { return Rng(mix_ids(ids)); }

  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // [0, 1) with 53 random bits
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  float uniform_f() { return static_cast<float>(next() >> 40) * 0x1.0p-24f; }
  // Unbiased integer in [0, n) (Lemire's method).
  uint64_t below(uint64_t n) {
    if (n <= 1) return 0;
    __uint128_t m = static_cast<__uint128_t>(next()) * n;
    uint64_t l = static_cast<uint64_t>(m);
    if (l < n) {
      const uint64_t t = (0 - n) % n;
      while (l < t) {
        m = static_cast<__uint128_t>(next()) * n;
        l = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }
  double normal() {  // Box-Muller, one value per call (simple and portable)
    double u1 = uniform(), u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  template <class T>
  void shuffle(std::span<T> v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(i)]);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace wb::core
