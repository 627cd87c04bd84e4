// The pieces of Adaptive SGD (Ma et al., arXiv:2110.07029, section 3) as
// plain functions on small vectors, so tests can check them against hand-computed
// examples and adaptive_sgd.cpp / elastic_sgd.cpp share them:
//
//   schedule_megabatch()    Fig. 4 / section 3.1: dynamic dispatch of a mega-batch, one
//                           batch at a time to whichever worker is free first
//   scale_batch_sizes()     Algorithm 1: batch-size scaling with the linear LR rule
//   merge_weights()         Algorithm 2 lines 1-10: normalized weights + perturbation
//   merge_models()          Algorithm 2 lines 11-12 on plain buffers (the reference the
//                           collective path is tested against)
//
// Everything here is deterministic and free of MPI: every rank evaluates it on the same
// inputs and gets the same answer, which is what keeps adaptive_sgd rank-invariant.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

namespace wb::algo::adaptive {

// ---- Fig. 4: dynamic scheduling ------------------------------------------------------------
struct Dispatch {
  int worker = 0;
  int64_t size = 0;
  double start = 0, end = 0;  // simulated seconds
};
struct MegaBatchSchedule {
  std::vector<Dispatch> batches;  // in dispatch order
  std::vector<int64_t> updates;   // u_i: batches processed by worker i
  std::vector<int64_t> samples;   // samples processed by worker i
  std::vector<double> busy_s;     // compute seconds of worker i
  double end = 0;                 // when the last batch finishes (the merge barrier)
};

// Dispatch M samples starting at time t0 (every worker free at t0). The next batch goes
// to the worker with the earliest free time (ties: the lower worker id), with that
// worker's current batch size b[i]; the last batch is cut to the samples left so a
// mega-batch is exactly M samples. cost(worker, size) returns the batch's compute seconds
// and is called once per dispatched batch, in dispatch order (it may draw the batch).
//
// Worked example (speeds 1.0 and 0.5, cost 1 s per batch at speed 1, b = {10, 10}, M = 60):
//   t=0  w0 gets batch 1 (ends 1), w1 gets batch 2 (ends 2)
//   t=1  w0 batch 3 (ends 2); t=2 w0 batch 4 (ends 3) [tie at 2: w0 < w1], w1 batch 5 (ends 4)
//   t=3  w0 batch 6 (ends 4)  -> u = {4, 2}: the fast worker does 2x the batches.
template <class Cost>
MegaBatchSchedule schedule_megabatch(int W, int64_t M, std::span<const int64_t> b, double t0,
                                     Cost&& cost) {
  MegaBatchSchedule s;
  s.updates.assign(static_cast<size_t>(W), 0);
  s.samples.assign(static_cast<size_t>(W), 0);
  s.busy_s.assign(static_cast<size_t>(W), 0.0);
  std::vector<double> free_at(static_cast<size_t>(W), t0);
  int64_t left = M;
  while (left > 0) {
    size_t k = 0;
    for (size_t i = 1; i < free_at.size(); ++i)
      if (free_at[i] < free_at[k]) k = i;
    const int64_t n = std::min<int64_t>(b[k] > 0 ? b[k] : 1, left);
    const double c = cost(static_cast<int>(k), n);
    s.batches.push_back({static_cast<int>(k), n, free_at[k], free_at[k] + c});
    free_at[k] += c;
    s.updates[k] += 1;
    s.samples[k] += n;
    s.busy_s[k] += c;
    left -= n;
  }
  s.end = t0;
  for (double t : free_at) s.end = std::max(s.end, t);
  return s;
}

// ---- Algorithm 1: batch-size scaling ------------------------------------------------------
// In place on b (batch sizes) and lr (learning rates), from the updates u of the last
// mega-batch. Batch sizes are integers: the candidate b_i +- beta (u_i - mu) is checked
// against the bounds exactly as in lines 3 and 6 (a candidate beyond a bound leaves b_i
// unchanged -- it is not clamped), then rounded to the nearest integer, and the learning
// rate follows the rounded size (lines 4 and 7: the linear scaling rule of Goyal et al.).
// Returns the number of workers whose batch size changed.
//
// Example (beta = 4, b_min = 8, b_max = 64): u = {30, 20}, b = {64, 64} -> mu = 25;
//   w0: 64 + 4*5 = 84 > 64: unchanged;  w1: 64 - 4*5 = 44 >= 8: b1 = 44, lr1 *= 44/64.
// clamp = true (not the paper's rule; an ablation) moves a candidate beyond a bound to the
// bound instead. Without it the rule can stall: b = {46, 22} with u = {40, 62} wants
// 22 + 4*11 = 66 > 64 and 46 - 4*11 = 2 < 8, so neither batch moves again although the
// slow worker now does the most updates (seen with 2 workers, speeds 1 and 0.76).
inline int scale_batch_sizes(std::span<int64_t> b, std::span<double> lr,
                             std::span<const int64_t> u, double beta, int64_t b_min,
                             int64_t b_max, bool clamp = false) {
  const size_t W = b.size();
  double mu = 0;  // line 1
  for (int64_t x : u) mu += static_cast<double>(x);
  mu /= static_cast<double>(W);
  int changed = 0;
  for (size_t i = 0; i < W; ++i) {  // line 2
    const double ui = static_cast<double>(u[i]), bi = static_cast<double>(b[i]);
    const double lo = static_cast<double>(b_min), hi = static_cast<double>(b_max);
    double cand = bi;
    if (ui > mu && bi + beta * (ui - mu) <= hi)  // line 3
      cand = bi + beta * (ui - mu);
    else if (ui < mu && bi - beta * (mu - ui) >= lo)  // line 6
      cand = bi - beta * (mu - ui);
    else if (clamp && ui > mu)
      cand = std::max(bi, hi);
    else if (clamp && ui < mu)
      cand = std::min(bi, lo);
    const int64_t nb = std::llround(cand);
    if (nb != b[i] && nb >= 1) {
      lr[i] *= static_cast<double>(nb) / bi;  // lines 4, 7
      b[i] = nb;                              // lines 5, 8
      ++changed;
    }
  }
  return changed;
}

// ---- Algorithm 2 lines 1-10: normalized merge weights ----------------------------------------
struct MergeWeights {
  std::vector<double> alpha;
  bool perturbed = false;
  int r = -1, s = -1;  // most / least updated replica (perturbation targets)
  double sum() const {
    double t = 0;
    for (double a : alpha) t += a;
    return t;
  }
};

// u: updates, b: batch sizes of the mega-batch just merged; l2_per_param: ||w_i||_2 / |w|
// of each replica. Lines 2-6: alpha_i = b_i / sum b when every u_i is equal, else
// u_i / sum u. Lines 7-9: when every replica has l2_per_param < pert_thr, alpha_r *= 1 + delta
// and alpha_s *= 1 - delta for r = argmax u, s = argmin u. The weights are then NOT
// renormalized (section 3.3: "this weight modification can result in denormalization").
// Ties in u are broken by batch size (the secondary priority of section 3.3), then by the
// lower worker id; when r = s (every u_i and b_i equal, or one worker) no replica is more
// updated than another and no perturbation is applied. renormalize = true (an ablation,
// not the paper's rule) rescales the perturbed weights to sum 1: with gamma = 0.9 a merge
// whose weights sum to s > 1 grows the model by about (s - 1) / (1 - gamma) per merge.
inline MergeWeights merge_weights(std::span<const int64_t> u, std::span<const int64_t> b,
                                  std::span<const double> l2_per_param, double pert_thr,
                                  double delta, bool renormalize = false) {
  const size_t W = u.size();
  MergeWeights m;
  m.alpha.assign(W, 0.0);
  bool equal = true;
  for (size_t i = 1; i < W; ++i) equal = equal && u[i] == u[0];
  double tot = 0;
  for (size_t i = 0; i < W; ++i) tot += static_cast<double>(equal ? b[i] : u[i]);
  for (size_t i = 0; i < W; ++i)
    m.alpha[i] = static_cast<double>(equal ? b[i] : u[i]) / tot;  // lines 3 and 5
  size_t r = 0, s = 0;
  for (size_t i = 1; i < W; ++i) {
    if (u[i] > u[r] || (u[i] == u[r] && b[i] > b[r])) r = i;
    if (u[i] < u[s] || (u[i] == u[s] && b[i] < b[s])) s = i;
  }
  bool regular = true;  // line 7
  for (double x : l2_per_param) regular = regular && x < pert_thr;
  m.r = static_cast<int>(r);
  m.s = static_cast<int>(s);
  if (regular && r != s && delta != 0) {  // lines 8-9
    m.alpha[r] *= 1.0 + delta;
    m.alpha[s] *= 1.0 - delta;
    m.perturbed = true;
    if (renormalize) {
      const double t = m.sum();
      for (double& a : m.alpha) a /= t;
    }
  }
  return m;
}

// ---- Algorithm 2 lines 11-12 on plain buffers ---------------------------------------------------
// w' = sum_i alpha_i w_i + gamma (w - w_p);  w_p <- w;  w <- w'. Accumulates in double.
inline void merge_models(std::span<const std::span<const float>> replicas,
                         std::span<const double> alpha, double gamma, std::vector<float>& w,
                         std::vector<float>& w_p) {
  const size_t n = w.size();
  for (size_t j = 0; j < n; ++j) {
    double acc = 0;
    for (size_t i = 0; i < replicas.size(); ++i) acc += alpha[i] * static_cast<double>(replicas[i][j]);
    acc += gamma * (static_cast<double>(w[j]) - static_cast<double>(w_p[j]));
    w_p[j] = w[j];
    w[j] = static_cast<float>(acc);
  }
}

}  // namespace wb::algo::adaptive
