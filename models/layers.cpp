#include "models/layers.h"

#include <cmath>
#include <string>

#include "core/error.h"
#include "core/rng.h"

namespace wb::models {

NetInfo analyze(const NetSpec& spec) {
  NetInfo net;
  net.spec = spec;
  int c = spec.c, h = spec.h, w = spec.w;
  std::vector<std::pair<std::string, std::vector<int64_t>>> tensors;
  double fwd_macs = 0, bwd_macs = 0;
  bool first_param_layer = true;
  for (const LayerSpec& s : spec.layers) {
    LayerInfo li;
    li.spec = s;
    li.c = c, li.h = h, li.w = w;
    switch (s.kind) {
      case LayerKind::kConv: {
        WB_ASSERT(s.k >= 1 && s.cout >= 1 && h > 1 && w > 1, "bad conv layer " + s.name);
        const ConvShape cs = li.conv();
        WB_ASSERT(cs.ho() >= 1 && cs.wo() >= 1, "conv " + s.name + " kernel larger than input");
        li.oc = s.cout, li.oh = cs.ho(), li.ow = cs.wo();
        tensors.push_back({s.name + ".weight", {s.cout, c, s.k, s.k}});
        tensors.push_back({s.name + ".bias", {s.cout}});
        const double macs = static_cast<double>(li.out_size()) * cs.kdim();
        fwd_macs += macs;
        bwd_macs += first_param_layer ? macs : 2 * macs;  // wgrad (+ dgrad after layer 1)
        first_param_layer = false;
        break;
      }
      case LayerKind::kMaxPool2:
        WB_ASSERT(h >= 2 && w >= 2, "max-pool on a map smaller than 2x2");
        li.oc = c, li.oh = h / 2, li.ow = w / 2;
        break;
      case LayerKind::kLinear: {
        // Linear flattens its input in (c, h, w) order, as x.view(-1, c*h*w) in PyTorch.
        li.c = c * h * w, li.h = 1, li.w = 1;
        li.oc = s.out, li.oh = 1, li.ow = 1;
        tensors.push_back({s.name + ".weight", {s.out, li.c}});
        tensors.push_back({s.name + ".bias", {s.out}});
        const double macs = static_cast<double>(li.c) * s.out;
        fwd_macs += macs;
        bwd_macs += first_param_layer ? macs : 2 * macs;
        first_param_layer = false;
        break;
      }
      case LayerKind::kRelu:
      case LayerKind::kDropout:
      case LayerKind::kDropout2d:
        WB_ASSERT(s.p >= 0 && s.p < 1, "dropout probability must be in [0, 1)");
        li.oc = c, li.oh = h, li.ow = w;
        break;
    }
    c = li.oc, h = li.oh, w = li.ow;
    net.layers.push_back(li);
  }
  WB_ASSERT(!net.layers.empty() && net.layers.back().spec.kind == LayerKind::kLinear,
            "network " + spec.name + " must end with a Linear layer (the logits)");
  net.classes = net.layers.back().spec.out;
  net.tensors = make_layout(tensors);
  net.num_params = layout_size(net.tensors);
  size_t t = 0;
  for (LayerInfo& li : net.layers)
    if (li.spec.kind == LayerKind::kConv || li.spec.kind == LayerKind::kLinear) {
      li.w_off = net.tensors[t].offset;
      li.b_off = net.tensors[t + 1].offset;
      t += 2;
    }
  net.flops_per_sample = 2.0 * (fwd_macs + bwd_macs);
  return net;
}

void init_params(const NetInfo& net, std::span<float> w, uint64_t seed) {
  WB_ASSERT(w.size() == net.num_params, "init_params: buffer size " + std::to_string(w.size()) +
                                            " != " + std::to_string(net.num_params));
  for (size_t t = 0; t < net.tensors.size(); ++t) {
    const TensorInfo& ti = net.tensors[t];
    // fan_in of the layer: weight shape [out, in, (k, k)]; the bias uses its weight's.
    const TensorInfo& wt = (t % 2 == 0) ? ti : net.tensors[t - 1];
    int64_t fan_in = 1;
    for (size_t d = 1; d < wt.shape.size(); ++d) fan_in *= wt.shape[d];
    const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
    core::Rng r = core::Rng::stream({seed, 0x696e6974ULL /* "init" */, t});
    for (size_t i = 0; i < ti.size; ++i)
      w[ti.offset + i] = static_cast<float>(r.uniform(-bound, bound));
  }
}

void dropout_mask(uint64_t noise_seed, int layer_index, size_t units, double p, uint8_t* keep) {
  core::Rng r = core::Rng::stream(
      {noise_seed, 0x64726f70ULL /* "drop" */, static_cast<uint64_t>(layer_index)});
  for (size_t i = 0; i < units; ++i) keep[i] = r.uniform() >= p ? 1 : 0;
}

template <class T>
T reference_pass(const NetInfo& net, const T* w, const float* x, const int32_t* label, int n, T* g,
                 bool train, uint64_t noise_seed, EvalResult* eval) {
  const size_t L = net.layers.size();
  std::vector<std::vector<T>> act(L + 1);
  std::vector<std::vector<int32_t>> pool_idx(L);
  std::vector<std::vector<uint8_t>> keep(L);
  const size_t in0 = net.layers[0].in_size();
  act[0].resize(static_cast<size_t>(n) * in0);
  for (size_t i = 0; i < act[0].size(); ++i) act[0][i] = T(x[i]);

  for (size_t l = 0; l < L; ++l) {
    const LayerInfo& li = net.layers[l];
    const std::vector<T>& in = act[l];
    std::vector<T>& out = act[l + 1];
    out.resize(static_cast<size_t>(n) * li.out_size());
    switch (li.spec.kind) {
      case LayerKind::kConv:
        ref::conv2d_forward(li.conv(), n, in.data(), w + li.w_off, w + li.b_off, out.data());
        break;
      case LayerKind::kMaxPool2:
        pool_idx[l].resize(out.size());
        ref::maxpool2_forward(n, li.c, li.h, li.w, in.data(), out.data(), pool_idx[l].data());
        break;
      case LayerKind::kRelu:
        ref::relu_forward(out.size(), in.data(), out.data());
        break;
      case LayerKind::kDropout:
      case LayerKind::kDropout2d: {
        if (!train) {
          out = in;
          break;
        }
        const size_t units =
            static_cast<size_t>(n) * (li.spec.kind == LayerKind::kDropout2d ? li.c : li.in_size());
        keep[l].resize(units);
        dropout_mask(noise_seed, static_cast<int>(l), units, li.spec.p, keep[l].data());
        ref::dropout_apply(units, out.size() / units, keep[l].data(), li.spec.p, in.data(),
                           out.data());
        break;
      }
      case LayerKind::kLinear:
        ref::linear_forward(n, li.c, li.spec.out, in.data(), w + li.w_off, w + li.b_off,
                            out.data());
        break;
    }
  }

  int64_t correct = 0;
  std::vector<T> d(g ? static_cast<size_t>(n) * net.classes : 0);
  const T loss_sum = ref::log_softmax_nll(n, net.classes, act[L].data(), label,
                                          g ? d.data() : nullptr, 1.0 / n, &correct);
  if (eval) {
    eval->loss_sum = static_cast<double>(value_of(loss_sum));
    eval->correct = static_cast<double>(correct);
    eval->count = n;
    eval->has_accuracy = true;
  }
  if (g) {
    std::vector<T> din;
    for (size_t l = L; l-- > 0;) {
      const LayerInfo& li = net.layers[l];
      const bool need_dx = l > 0;
      din.assign(need_dx ? static_cast<size_t>(n) * li.in_size() : 0, T(0));
      switch (li.spec.kind) {
        case LayerKind::kConv:
          ref::conv2d_backward(li.conv(), n, act[l].data(), w + li.w_off, d.data(),
                               need_dx ? din.data() : nullptr, g + li.w_off, g + li.b_off);
          break;
        case LayerKind::kMaxPool2:
          if (need_dx)
            ref::maxpool2_backward(n, li.c, li.h, li.w, d.data(), pool_idx[l].data(), din.data());
          break;
        case LayerKind::kRelu:
          if (need_dx) ref::relu_backward(din.size(), act[l].data(), d.data(), din.data());
          break;
        case LayerKind::kDropout:
        case LayerKind::kDropout2d:
          if (!need_dx) break;
          if (!train) {
            din = d;
          } else {
            ref::dropout_apply(keep[l].size(), din.size() / keep[l].size(), keep[l].data(),
                               li.spec.p, d.data(), din.data());
          }
          break;
        case LayerKind::kLinear:
          ref::linear_backward(n, li.c, li.spec.out, act[l].data(), w + li.w_off, d.data(),
                               need_dx ? din.data() : nullptr, g + li.w_off, g + li.b_off);
          break;
      }
      d.swap(din);
    }
  }
  return loss_sum / T(static_cast<double>(n));
}

template float reference_pass<float>(const NetInfo&, const float*, const float*, const int32_t*,
                                     int, float*, bool, uint64_t, EvalResult*);
template double reference_pass<double>(const NetInfo&, const double*, const float*, const int32_t*,
                                       int, double*, bool, uint64_t, EvalResult*);
template Dual<double> reference_pass<Dual<double>>(const NetInfo&, const Dual<double>*,
                                                   const float*, const int32_t*, int, Dual<double>*,
                                                   bool, uint64_t, EvalResult*);

Batch random_image_batch(int n, size_t in_size, int classes, uint64_t seed) {
  core::Rng r(seed);
  Batch b;
  b.n = n;
  b.x.resize(static_cast<size_t>(n) * in_size);
  for (auto& v : b.x) v = static_cast<float>(r.normal());
  b.label.resize(static_cast<size_t>(n));
  for (auto& y : b.label) y = static_cast<int32_t>(r.below(static_cast<uint64_t>(classes)));
  return b;
}

}  // namespace wb::models
