// A piece of a fused buffer: a segment (one tensor) clipped against the buffer's cover, or a
// gap between segments. Every Adasum schedule walks these (comm/collectives.h, comm/rvhdd.h).
#pragma once

#include <cstddef>

namespace wb::comm {

// A segment clipped against the buffer cover: either a real segment (seg >= 0) or a gap
// that no segment covers (seg == -1: Adasum keeps the left value there).
struct Piece {
  size_t offset = 0, size = 0;
  int seg = -1;
};

}  // namespace wb::comm
