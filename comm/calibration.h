// Network measurements for `workbench calibrate` (app/calibrate/calibrate.cpp): every MPI call of the
// calibration lives here (DESIGN.md section 3). Each measures ONE level of an op: the op
// between two ranks (world ranks 0 and 1; the other ranks wait), which is what the cost
// model's per-level tables hold (sim/cost_model.h) -- a W-worker collective is then
// composed from levels by its algorithm.
//
// Timing: for every size, repetitions in 8 rounds interleaved with the other sizes (each
// round after one warm-up call); each repetition starts
// after a barrier of the pair and its time is the slower rank's; the result is the median
// (robust to the other processes of a shared machine preempting a rank now and then).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string>
#include <vector>

namespace wb::comm {

// What calibrate measures per size: "p2p" (ping-pong, half the round trip), "allreduce"
// (average), "adasum" (aligned: 4 KB tensors), "adasum_split" (one tensor), "weighted_average",
// "broadcast".
extern const std::vector<std::string> kCalibratedOps;

// Median seconds of one `op` of `bytes` (float elements) between world ranks 0 and 1, per size;
// identical on every rank. Collective over `comm` (all ranks call it); needs >= 2 ranks.
std::vector<double> time_level(MPI_Comm comm, const std::string& op, const std::vector<size_t>& bytes);

// "intra" when ranks 0 and 1 share a node (MPI_COMM_TYPE_SHARED), else "cross".
std::string pair_link_class(MPI_Comm comm);

// Ranks of `comm` on this rank's node (MPI_COMM_TYPE_SHARED); collective over `comm`.
int ranks_on_node(MPI_Comm comm);

// Repetitions for a message of `bytes` (fewer for large ones: the time budget).
int calibration_reps(size_t bytes);

}  // namespace wb::comm
