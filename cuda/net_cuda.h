// A whole image network (models::NetSpec: LeNet-5 and friends) on the GPU: the device twin
// of models::reference_pass (models/layers.h), layer by layer with the kernels of
// cuda/layers_cuda.h. Same semantics, same dropout masks (models::dropout_mask from the
// same noise seed, drawn on the host and copied over), so the CPU reference is the oracle
// of a whole forward + backward pass: tests/cuda/test_net_cuda.cpp.
//
// Host code (compiled by the host compiler): it owns the device buffers and queues kernels
// on one stream; pass() synchronizes once, to return the loss.
//
//   DeviceNet<float>  training pass (what a "device": "cuda" worker would run);
//   DeviceNet<DualD>  forward-over-reverse exact HVP (hvp_f64 below, as ConvNetModel::hvp_f64).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>
#include <vector>

#include "cuda/check.h"
#include "cuda/dual_cuda.h"
#include "cuda/layers_cuda.h"
#include "models/layers.h"

namespace wb::cuda {


template <class T>
class DeviceNet {
 public:
  // max_groups > 1: room for grouped passes (set_group_batches / group_pass) of up to
  // max_groups replicas x max_batch samples.
  DeviceNet(const models::NetInfo& net, int max_batch, cudaStream_t stream = nullptr,
            int max_groups = 1);

  const models::NetInfo& net() const { return net_; }
  int max_batch() const { return max_batch_; }
  int max_groups() const { return max_groups_; }
  int batch() const { return n_; }
  int groups() const { return groups_; }

  // Copies a batch in (x: n x C x H x W floats, label: n class ids, both host memory) and
  // waits for the copy. Labels outside [0, classes) are an InternalError here, on the host.
  void set_batch(const float* x, const int32_t* label, int n);
  // `groups` batches of n samples each at once, x and label packed group after group
  // (groups * n samples; host memory, pinned for an asynchronous copy). Waits for the copy.
  void set_group_batches(const float* x, const int32_t* label, int groups, int n);

  // models::reference_pass on the current batch: w (num_params T, device) -> mean loss;
  // g (device, optional) OVERWRITTEN with the gradient. train = dropout on, masks from
  // noise_seed. eval (optional): loss sum, correct count, n. Synchronizes the stream.
  // Needs a single-group batch (set_batch).
  T pass(const T* w, T* g, bool train, uint64_t noise_seed, models::EvalResult* eval = nullptr);

  // The training passes of groups() replicas in one launch sequence (cuda::Groups): replica
  // k has its parameters at w + k * stride and its gradient at g + k * stride (device), its
  // batch is the k-th block of the last set_group_batches, its dropout masks come from
  // noise_seeds[k]; loss[k] (host) = its mean loss. Bit-identical to groups() separate
  // pass() calls (tests/cuda/test_group_cuda.cpp). Synchronizes the stream.
  void group_pass(const T* w, T* g, size_t stride, const uint64_t* noise_seeds, T* loss);

 private:
  T run(const T* w, T* g, size_t stride, bool train, const uint64_t* noise_seeds, T* group_loss,
        models::EvalResult* eval);
  models::NetInfo net_;
  int max_batch_;
  cudaStream_t stream_;
  int max_groups_ = 1;
  int groups_ = 1;
  int n_ = 0;
  std::vector<T> loss_host_;
  std::vector<int64_t> correct_host_;
  DeviceBuffer<float> x_;
  DeviceBuffer<int32_t> label_;
  std::vector<DeviceBuffer<T>> act_;             // act_[l] = input of layer l, act_[L] = logits
  std::vector<DeviceBuffer<int32_t>> pool_idx_;  // max-pool argmax per layer
  std::vector<std::vector<uint8_t>> keep_host_;  // dropout masks per layer (host copy)
  std::vector<DeviceBuffer<uint8_t>> keep_;
  DeviceBuffer<T> d_, din_;  // backward: gradient w.r.t. a layer's output / input
  DeviceBuffer<T> loss_;
  DeviceBuffer<int64_t> correct_;
};

// Exact Hessian-vector product of the mean training loss (dropout masks from noise_seed) on
// a batch of n samples: hv = H(w) v, via DeviceNet<DualD> seeded with w + v*eps; the device
// twin of ConvNetModel::hvp_f64. w, v, hv, x, label: host memory.
void hvp_f64(const models::NetInfo& net, std::span<const double> w, std::span<const double> v,
             const float* x, const int32_t* label, int n, std::span<double> hv,
             uint64_t noise_seed);

}  // namespace wb::cuda
