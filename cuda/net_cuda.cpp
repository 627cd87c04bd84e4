#include "cuda/net_cuda.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace wb::cuda {

using models::LayerInfo;
using models::LayerKind;

namespace {

// The reference's `loss_sum / T(n)`.
float mean_of(float sum, int n) {
  return sum / static_cast<float>(n);
}
double mean_of(double sum, int n) {
  return sum / static_cast<double>(n);
}
DualD mean_of(DualD sum, int n) {  // models::Dual division by a constant (tangent 0)
  const double inv = 1.0 / static_cast<double>(n);
  return {sum.v * inv, sum.d * inv};
}
double value_of(float x) {
  return x;
}
double value_of(double x) {
  return x;
}
double value_of(DualD x) {
  return x.v;
}

bool is_dropout(const LayerInfo& li) {
  return li.spec.kind == LayerKind::kDropout || li.spec.kind == LayerKind::kDropout2d;
}
size_t dropout_units(const LayerInfo& li, int n) {
  return static_cast<size_t>(n) *
         (li.spec.kind == LayerKind::kDropout2d ? static_cast<size_t>(li.c) : li.in_size());
}

}  // namespace

template <class T>
DeviceNet<T>::DeviceNet(const models::NetInfo& net, int max_batch, cudaStream_t stream,
                        int max_groups)
    : net_(net), max_batch_(max_batch), stream_(stream), max_groups_(max_groups) {
  WB_ASSERT(max_batch >= 1, "DeviceNet: max_batch must be >= 1");
  WB_ASSERT(max_groups >= 1, "DeviceNet: max_groups must be >= 1");
  const size_t L = net_.layers.size();
  // Every per-sample buffer holds max_groups x max_batch samples.
  const size_t B = static_cast<size_t>(max_batch) * static_cast<size_t>(max_groups);
  x_ = DeviceBuffer<float>(B * net_.layers[0].in_size());
  label_ = DeviceBuffer<int32_t>(B);
  act_.resize(L + 1);
  pool_idx_.resize(L);
  keep_host_.resize(L);
  keep_.resize(L);
  size_t widest = 0;
  act_[0] = DeviceBuffer<T>(B * net_.layers[0].in_size());
  for (size_t l = 0; l < L; ++l) {
    const LayerInfo& li = net_.layers[l];
    act_[l + 1] = DeviceBuffer<T>(B * li.out_size());
    widest = std::max({widest, li.in_size(), li.out_size()});
    if (li.spec.kind == LayerKind::kMaxPool2)
      pool_idx_[l] = DeviceBuffer<int32_t>(B * li.out_size());
    if (is_dropout(li)) {
      keep_host_[l].resize(dropout_units(li, static_cast<int>(B)));
      keep_[l] = DeviceBuffer<uint8_t>(keep_host_[l].size());
    }
  }
  d_ = DeviceBuffer<T>(B * widest);
  din_ = DeviceBuffer<T>(B * widest);
  loss_ = DeviceBuffer<T>(static_cast<size_t>(max_groups));
  correct_ = DeviceBuffer<int64_t>(static_cast<size_t>(max_groups));
  loss_host_.resize(static_cast<size_t>(max_groups));
  correct_host_.resize(static_cast<size_t>(max_groups));
}

template <class T>
void DeviceNet<T>::set_batch(const float* x, const int32_t* label, int n) {
  WB_ASSERT(n >= 1 && n <= max_batch_, "DeviceNet: batch of " + std::to_string(n) +
                                           " samples, max_batch " + std::to_string(max_batch_));
  for (int i = 0; i < n; ++i)
    WB_ASSERT(label[i] >= 0 && label[i] < net_.classes, "DeviceNet: label out of range");
  const size_t in0 = net_.layers[0].in_size();
  WB_CHECK_CUDA(
      cudaMemcpyAsync(x_.data(), x, sizeof(float) * in0 * n, cudaMemcpyHostToDevice, stream_));
  WB_CHECK_CUDA(
      cudaMemcpyAsync(label_.data(), label, sizeof(int32_t) * n, cudaMemcpyHostToDevice, stream_));
  WB_CHECK_CUDA(cudaStreamSynchronize(stream_));
  n_ = n;
  groups_ = 1;
}

template <class T>
void DeviceNet<T>::set_group_batches(const float* x, const int32_t* label, int groups, int n) {
  WB_ASSERT(groups >= 1 && groups <= max_groups_,
            "DeviceNet: " + std::to_string(groups) + " groups, max_groups " +
                std::to_string(max_groups_));
  WB_ASSERT(n >= 1 && n <= max_batch_, "DeviceNet: group batch of " + std::to_string(n) +
                                           " samples, max_batch " + std::to_string(max_batch_));
  const size_t total = static_cast<size_t>(groups) * n;
  for (size_t i = 0; i < total; ++i)
    WB_ASSERT(label[i] >= 0 && label[i] < net_.classes, "DeviceNet: label out of range");
  const size_t in0 = net_.layers[0].in_size();
  WB_CHECK_CUDA(cudaMemcpyAsync(x_.data(), x, sizeof(float) * in0 * total,
                                cudaMemcpyHostToDevice, stream_));
  WB_CHECK_CUDA(cudaMemcpyAsync(label_.data(), label, sizeof(int32_t) * total,
                                cudaMemcpyHostToDevice, stream_));
  WB_CHECK_CUDA(cudaStreamSynchronize(stream_));
  n_ = n;
  groups_ = groups;
}

template <class T>
T DeviceNet<T>::pass(const T* w, T* g, bool train, uint64_t noise_seed, models::EvalResult* eval) {
  WB_ASSERT(groups_ == 1, "DeviceNet::pass: the batch holds several groups (use group_pass)");
  return run(w, g, 0, train, &noise_seed, nullptr, eval);
}

template <class T>
void DeviceNet<T>::group_pass(const T* w, T* g, size_t stride, const uint64_t* noise_seeds,
                              T* loss) {
  WB_ASSERT(g != nullptr && stride >= net_.num_params,
            "DeviceNet::group_pass: gradients and a stride of at least num_params");
  run(w, g, stride, true, noise_seeds, loss, nullptr);
}

template <class T>
T DeviceNet<T>::run(const T* w, T* g, size_t stride, bool train, const uint64_t* noise_seeds,
                    T* group_loss, models::EvalResult* eval) {
  WB_ASSERT(n_ >= 1, "DeviceNet::pass: no batch (call set_batch first)");
  const int n = n_;  // samples per group
  const int G = groups_;
  const Groups gr{G, stride};
  const size_t L = net_.layers.size();
  cudaStream_t st = stream_;
  convert<T>(static_cast<size_t>(G) * n * net_.layers[0].in_size(), x_.data(), act_[0].data(),
             st);

  for (size_t l = 0; l < L; ++l) {
    const LayerInfo& li = net_.layers[l];
    const T* in = act_[l].data();
    T* out = act_[l + 1].data();
    const size_t out_count = static_cast<size_t>(G) * n * li.out_size();
    switch (li.spec.kind) {
      case LayerKind::kConv:
        conv2d_forward<T>(li.conv(), n, in, w + li.w_off, w + li.b_off, out, st, gr);
        break;
      case LayerKind::kMaxPool2:
        maxpool2_forward<T>(G * n, li.c, li.h, li.w, in, out, pool_idx_[l].data(), st);
        break;
      case LayerKind::kRelu:
        relu_forward<T>(out_count, in, out, st);
        break;
      case LayerKind::kDropout:
      case LayerKind::kDropout2d: {
        if (!train) {
          WB_CHECK_CUDA(
              cudaMemcpyAsync(out, in, sizeof(T) * out_count, cudaMemcpyDeviceToDevice, st));
          break;
        }
        // Each group's masks from its own noise seed, as its lone pass draws them.
        const size_t units = dropout_units(li, n);
        for (int k = 0; k < G; ++k)
          models::dropout_mask(noise_seeds[k], static_cast<int>(l), units, li.spec.p,
                               keep_host_[l].data() + static_cast<size_t>(k) * units);
        WB_CHECK_CUDA(cudaMemcpyAsync(keep_[l].data(), keep_host_[l].data(), units * G,
                                      cudaMemcpyHostToDevice, st));
        dropout_apply<T>(units * G, out_count / (units * G), keep_[l].data(), li.spec.p, in, out,
                         st);
        break;
      }
      case LayerKind::kLinear:
        linear_forward<T>(n, li.c, li.spec.out, in, w + li.w_off, w + li.b_off, out, st, gr);
        break;
    }
  }

  log_softmax_nll_async<T>(n, net_.classes, act_[L].data(), label_.data(), g ? d_.data() : nullptr,
                           1.0 / n, loss_.data(), correct_.data(), st, G);
  if (g) {
    T* d = d_.data();
    T* din = din_.data();
    for (size_t l = L; l-- > 0;) {
      const LayerInfo& li = net_.layers[l];
      const bool need_dx = l > 0;
      const size_t in_count = static_cast<size_t>(G) * n * li.in_size();
      switch (li.spec.kind) {
        case LayerKind::kConv:
          conv2d_backward<T>(li.conv(), n, act_[l].data(), w + li.w_off, d,
                             need_dx ? din : nullptr, g + li.w_off, g + li.b_off, st, gr);
          break;
        case LayerKind::kMaxPool2:
          if (need_dx)
            maxpool2_backward<T>(G * n, li.c, li.h, li.w, d, pool_idx_[l].data(), din, st);
          break;
        case LayerKind::kRelu:
          if (need_dx) relu_backward<T>(in_count, act_[l].data(), d, din, st);
          break;
        case LayerKind::kDropout:
        case LayerKind::kDropout2d:
          if (!need_dx) break;
          if (!train) {
            WB_CHECK_CUDA(
                cudaMemcpyAsync(din, d, sizeof(T) * in_count, cudaMemcpyDeviceToDevice, st));
          } else {
            const size_t units = dropout_units(li, n) * G;
            dropout_apply<T>(units, in_count / units, keep_[l].data(), li.spec.p, d, din, st);
          }
          break;
        case LayerKind::kLinear:
          linear_backward<T>(n, li.c, li.spec.out, act_[l].data(), w + li.w_off, d,
                             need_dx ? din : nullptr, g + li.w_off, g + li.b_off, st, gr);
          break;
      }
      std::swap(d, din);
    }
  }

  WB_CHECK_CUDA(cudaMemcpyAsync(loss_host_.data(), loss_.data(), sizeof(T) * G,
                                cudaMemcpyDeviceToHost, st));
  WB_CHECK_CUDA(cudaMemcpyAsync(correct_host_.data(), correct_.data(), sizeof(int64_t) * G,
                                cudaMemcpyDeviceToHost, st));
  WB_CHECK_CUDA(cudaStreamSynchronize(st));
  if (group_loss)
    for (int k = 0; k < G; ++k) group_loss[k] = mean_of(loss_host_[static_cast<size_t>(k)], n);
  const T loss_sum = loss_host_[0];
  const int64_t correct = correct_host_[0];
  if (eval) {
    eval->loss_sum = value_of(loss_sum);
    eval->correct = static_cast<double>(correct);
    eval->count = n;
    eval->has_accuracy = true;
  }
  return mean_of(loss_sum, n);
}

template class DeviceNet<float>;
template class DeviceNet<double>;
template class DeviceNet<DualD>;

void hvp_f64(const models::NetInfo& net, std::span<const double> w, std::span<const double> v,
             const float* x, const int32_t* label, int n, std::span<double> hv,
             uint64_t noise_seed) {
  WB_ASSERT(w.size() == net.num_params && v.size() == w.size() && hv.size() == w.size(),
            "hvp_f64: buffer sizes");
  std::vector<DualD> wd(w.size());
  for (size_t i = 0; i < w.size(); ++i) wd[i] = DualD(w[i], v[i]);
  DeviceBuffer<DualD> wdev{std::span<const DualD>(wd)};
  DeviceBuffer<DualD> gdev(w.size());
  DeviceNet<DualD> dn(net, n);
  dn.set_batch(x, label, n);
  dn.pass(wdev.data(), gdev.data(), true, noise_seed);
  gdev.download(wd);
  for (size_t i = 0; i < w.size(); ++i) hv[i] = wd[i].d;
}

}  // namespace wb::cuda
