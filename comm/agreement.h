// Error agreement across the ranks of a run (comm/ owns every MPI call, DESIGN.md section 3).
// Every rank runs fn; if it throws on any rank, every rank rethrows the lowest failing rank's
// error (a UserError stays a UserError, with its file/JSON-path `where`; an core::Interrupted
// stays an interruption), so all ranks leave the same way and nobody waits in a collective
// for a rank that is gone.
//
// Bytes on the wire: one MPI_Allreduce of an int (the lowest failing rank); on failure one
// broadcast of the kind and three strings from that rank.
#pragma once

#include <mpi.h>

#include <functional>

namespace wb::comm {

void agree_on_errors(MPI_Comm comm, const std::function<void()>& fn);

}  // namespace wb::comm
