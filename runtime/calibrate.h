// `workbench calibrate`: measures this machine's cost profile (core/cost_model.h) and
// validates simulated against measured time (DESIGN.md section 12).
//
//   [mpirun -n R>=2] workbench calibrate [-o PROFILE.json] [--quick]
//     compute: per model (LeNet-5, the sparse MLP) and batch size, the wall time of one
//       training step of a single worker (gradient + optimizer step + the loop's bookkeeping),
//       measured on every rank at once (as the ranks of a real run share the machine);
//       OLS per model: t = fixed_s + per_sample_s x batch.
//     network: one level of each op (comm/calibration.h) between ranks 0 and 1 over sizes
//       4 B .. 64 MB (powers of 2); OLS per size segment (core/cost_model.cpp,
//       fit_piecewise: the fit is done here, in C++). Prints every point's residual.
//   [mpirun -n 2] workbench calibrate --validate PROFILE.json [--steps N]
//     sync SGD (average, sum), Adasum (gradient, delta) and local SGD (H = 4) on LeNet-5 and
//     the sparse MLP, one worker per rank: measured vs simulated time per step, and each
//     collective level's priced vs measured time at 4 KB .. 64 MB. Last line: RESULT ...
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace wb::rt {

int calibrate_command(const std::vector<std::string>& args, MPI_Comm comm);

}  // namespace wb::rt
