// sparse_mlp (models/sparse_mlp.h) with its training and evaluation passes on the GPU: the
// "cuda" device's model for the extreme-classification runs (Adaptive SGD's setting,
// Ma et al., arXiv:2110.07029 section 5.1). Same contract as CudaNetModel
// (cuda/model_cuda.h): parameters, gradients and communication stay in host memory (host
// staging), the f64 oracle and the cost model are the CPU model's.
//
// One pass: the batch's CSR arrays and labels are copied in; the sparse input layer is
// cuda/sparse_cuda.h's csr_dense_forward; its weight gradient is cuda/mlp_cuda.h's
// csc_dense_dw over the batch's CSR transposed on the host (no atomics, so GPU runs are
// reproducible bit for bit); the dense layers and the multi-label softmax cross-entropy are
// cuda/mlp_cuda.h. Evaluation computes the loss on the device and precision@k on the host
// from the downloaded logits (models::precision_at_k, the CPU model's own function).
#pragma once

#include <memory>
#include <span>

#include "models/model.h"
#include "models/sparse_mlp.h"
#include "train/compute_device.h"

namespace wb::cuda {

class CudaSparseMlp final : public train::DeviceModel {
 public:
  explicit CudaSparseMlp(const models::SparseMlp& cpu);

  std::unique_ptr<models::Workspace> make_workspace(int max_batch) const override;
  double loss_grad(std::span<const float> w, const models::Batch& b, std::span<float> g,
                   models::Workspace& ws, uint64_t noise_seed) const override;
  models::EvalResult evaluate(std::span<const float> w, const models::Batch& b,
                              models::Workspace& ws) const override;

 private:
  const models::SparseMlp& mlp_;
  std::vector<int64_t> dims_;  // F, h1, ..., L (from the tensor shapes)
};

}  // namespace wb::cuda
