#include "cuda/check.h"

#include <string>

#include "core/error.h"

namespace wb::cuda {

void throw_cuda(const char* file, int line, const char* call, cudaError_t code) {
  throw_internal(
      file, line,
      std::string(call) + " failed: " + cudaGetErrorName(code) + ": " + cudaGetErrorString(code));
}

}  // namespace wb::cuda
