// The shape of one conv2d layer: the one definition the CPU layers (models/layers.h) and the
// CUDA kernels (cuda/layers_cuda.h) share. Dependency-free on purpose: nvcc units include it
// without the model registry's include chain (nlohmann/json costs ~8 s per nvcc unit).
#pragma once

#if defined(__CUDACC__)
#define WB_CONV_HD __host__ __device__
#else
#define WB_CONV_HD
#endif

namespace wb::models {

struct ConvShape {
  int cin = 1, h = 28, w = 28;  // input feature maps
  int cout = 1, k = 5, pad = 0;
  WB_CONV_HD int ho() const { return h + 2 * pad - k + 1; }
  WB_CONV_HD int wo() const { return w + 2 * pad - k + 1; }
  WB_CONV_HD int kdim() const { return cin * k * k; }  // fan-in, the GEMM reduction length
};

}  // namespace wb::models
