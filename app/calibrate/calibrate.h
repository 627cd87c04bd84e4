// `workbench calibrate`: measures this machine's cost profile (sim/cost_model.h) and
// validates simulated against measured time (DESIGN.md section 12).
//
//   [mpirun -n R>=2] workbench calibrate [-o PROFILE.json] [--quick]
//     compute: per model (LeNet-5, the sparse MLP) and batch size, the wall time of one
//       training step of one worker per rank (gradient + optimizer step + the loop's
//       bookkeeping) with the ranks stepping together as a run's ranks do (local SGD that
//       never averages: each step's agreement between the ranks, no communication of its own);
//       OLS per model: t = fixed_s + per_sample_s x batch.
//     network: one level of each op (comm/calibration.h) between ranks 0 and 1 over sizes
//       4 B .. 64 MB (powers of 2); OLS per size segment (sim/cost_model.cpp,
//       fit_piecewise: the fit is done here, in C++). Prints every point's residual.
//   [mpirun -n 2] workbench calibrate --validate PROFILE.json [--steps N] [--repeats N]
//     sync SGD (average, sum), Adasum (gradient, delta), local SGD (H = 4) and LAP-SGD (real
//     vs simulated mode) on LeNet-5 and the sparse MLP, one worker per rank: measured vs
//     simulated time per step, the ordering (Kendall tau, over all pairs and over the pairs
//     the measurement separates), and each collective level's priced vs measured time at
//     4 KB .. 64 MB. Last line: RESULT ...
#pragma once

#include <mpi.h>

#include <string>
#include <utility>
#include <vector>

namespace wb::app {

int calibrate_command(const std::vector<std::string>& args, MPI_Comm comm);

// Kendall's tau-b of two orderings (ties in either count as neither concordant nor discordant).
double kendall_tau(const std::vector<double>& a, const std::vector<double>& b);

// The ordering the validation can vouch for: over the pairs of configurations whose measured
// repeats' ranges [lo, hi] do not overlap, the model's order (sim) against the measured one.
// tau = (concordant - discordant) / pairs; a pair the model prices equal counts in pairs only.
struct SeparatedTau {
  int all_pairs = 0, pairs = 0, concordant = 0, discordant = 0, model_ties = 0;
  double tau = 1.0;  // 1 when no pair is separated
  // The separated pairs the model gets wrong, (i, j) with i < j: opposite, then priced equal.
  std::vector<std::pair<size_t, size_t>> wrong;
};
SeparatedTau separated_tau(const std::vector<double>& lo, const std::vector<double>& hi,
                           const std::vector<double>& sim);

}  // namespace wb::app
