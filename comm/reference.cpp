#include "comm/reference.h"

#include "comm/kernels.h"

#include <cstddef>

namespace wb::comm {

template <class T>
void adasum_pair_reference(std::span<T> a, std::span<const T> b, std::span<const Segment> segs) {
  for (const Segment& s : segs) {
    double dot = 0, aa = 0, bb = 0;
    for (size_t i = s.offset; i < s.offset + s.size; ++i) {
      const double x = a[i], y = b[i];
      dot += x * y;
      aa += x * x;
      bb += y * y;
    }
    double ca, cb;
    adasum_coefficients(dot, aa, bb, ca, cb);
    for (size_t i = s.offset; i < s.offset + s.size; ++i)
      a[i] = static_cast<T>(kern::axpby(ca, static_cast<double>(a[i]), cb, static_cast<double>(b[i])));
  }
}

template <class T>
static std::vector<T> adasum_rec(const std::vector<std::vector<T>>& g, size_t lo, size_t hi,
                                 std::span<const Segment> segs) {
  if (hi - lo == 1) return g[lo];
  const size_t m = tree_mid(lo, hi);
  std::vector<T> a = adasum_rec(g, lo, m, segs);
  std::vector<T> b = adasum_rec(g, m, hi, segs);
  adasum_pair_reference<T>(a, b, segs);
  return a;
}

template <class T>
std::vector<T> adasum_reference(const std::vector<std::vector<T>>& g,
                                std::span<const Segment> segs) {
  if (g.empty()) return {};
  return adasum_rec(g, 0, g.size(), segs);
}

template <class T>
static std::vector<T> sum_rec(const std::vector<std::vector<T>>& g, size_t lo, size_t hi) {
  if (hi - lo == 1) return g[lo];
  const size_t m = tree_mid(lo, hi);
  std::vector<T> a = sum_rec(g, lo, m);
  std::vector<T> b = sum_rec(g, m, hi);
  for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
  return a;
}

template <class T>
std::vector<T> tree_sum_reference(const std::vector<std::vector<T>>& g) {
  if (g.empty()) return {};
  return sum_rec(g, 0, g.size());
}

template <class T>
std::vector<T> weighted_average_reference(const std::vector<std::vector<T>>& g,
                                          std::span<const double> w) {
  if (g.empty()) return {};
  double tot = 0;
  for (double x : w) tot += x;
  std::vector<double> acc(g[0].size(), 0.0);
  for (size_t k = 0; k < g.size(); ++k)
    for (size_t i = 0; i < acc.size(); ++i) acc[i] += w[k] * static_cast<double>(g[k][i]);
  std::vector<T> out(acc.size());
  for (size_t i = 0; i < acc.size(); ++i) out[i] = static_cast<T>(acc[i] / tot);
  return out;
}

#define WB_INST(T)                                                                          \
  template void adasum_pair_reference<T>(std::span<T>, std::span<const T>,                  \
                                         std::span<const Segment>);                         \
  template std::vector<T> adasum_reference<T>(const std::vector<std::vector<T>>&,          \
                                              std::span<const Segment>);                    \
  template std::vector<T> tree_sum_reference<T>(const std::vector<std::vector<T>>&);        \
  template std::vector<T> weighted_average_reference<T>(const std::vector<std::vector<T>>&, \
                                                        std::span<const double>);
WB_INST(float)
WB_INST(double)
#undef WB_INST

}  // namespace wb::comm
