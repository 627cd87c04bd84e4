// The char-level GPT (models/gpt.h) on the GPU: GptDeviceNet runs the whole training pass
// (forward, tied-head cross-entropy, backward) with the kernels of cuda/transformer_cuda.h
// and cuda/linear_cuda.cu, in the order of models::gpt_reference_pass (its CPU oracle:
// tests/cuda/test_transformer_cuda.cpp compares the two, in double to ~1e-10 and in float);
// CudaGptModel is what a run with "device": "cuda" and "model": "gpt" trains
// (train/compute_device.h; registered below cuda/backend_cuda.cpp like CudaNetModel).
//
// Host staging as for the image models (cuda/model_cuda.h): parameters and gradients live in
// the worker's host buffers; loss_grad uploads w and the token windows, runs the pass and
// downloads g. Every activation of the backward stays on the device (as the reference's
// GptActs). Batches above kGptDeviceChunk windows (the evaluation's) run in fixed chunks, as
// the CPU model's fast path does, so device memory does not grow with the evaluation batch.
// Not done: grouped passes of several workers (the workers of a rank run one pass each) and
// fused/tensor-core kernels (the GEMMs are the readable one-thread-per-output kind).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "cuda/check.h"
#include "models/gpt.h"
#include "models/model.h"
#include "train/compute_device.h"

namespace wb::cuda {

// Windows per device pass; larger batches run in chunks of this many.
inline constexpr int kGptDeviceChunk = 64;

// Device activations and scratch for passes of up to max_batch windows; T is float
// (training) or double (the oracle comparison).
template <class T>
class GptDeviceNet {
 public:
  GptDeviceNet(const models::GptConfig& c, const std::vector<models::TensorInfo>& t, int max_batch,
               cudaStream_t stream);
  ~GptDeviceNet();
  GptDeviceNet(const GptDeviceNet&) = delete;
  GptDeviceNet& operator=(const GptDeviceNet&) = delete;

  // w, g: device buffers of the layout's size; tokens: device, n windows of block + 1 ids
  // (checked in [0, vocab) by the caller). Returns the MEAN loss over the n * block
  // predictions; g (OVERWRITTEN) when not null. eval (optional): the loss sum and token
  // count. Synchronizes the stream.
  double pass(const T* w, const int32_t* tokens, int n, T* g, models::EvalResult* eval = nullptr);
  int max_batch() const { return max_batch_; }

 private:
  struct Buffers;
  models::GptConfig c_;
  std::vector<models::TensorInfo> t_;
  int max_batch_;
  cudaStream_t stream_;
  std::unique_ptr<Buffers> b_;
};

class CudaGptModel final : public train::DeviceModel {
 public:
  explicit CudaGptModel(const models::GptModel& cpu) : DeviceModel(cpu), gpt_(cpu) {}
  std::unique_ptr<models::Workspace> make_workspace(int max_batch) const override;
  double loss_grad(std::span<const float> w, const models::Batch& b, std::span<float> g,
                   models::Workspace& ws, uint64_t noise_seed) const override;
  models::EvalResult evaluate(std::span<const float> w, const models::Batch& b,
                              models::Workspace& ws) const override;

 private:
  const models::GptModel& gpt_;
};

}  // namespace wb::cuda
