#include "cuda/gpt_cuda.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "cuda/device.h"
#include "cuda/layers_cuda.h"
#include "cuda/transformer_cuda.h"

namespace wb::cuda {

// The device twin of models::GptActs (one set per layer: the backward reads them all).
template <class T>
struct GptDeviceNet<T>::Buffers {
  struct Layer {
    DeviceBuffer<T> xin, ln1_xhat, ln1_rstd, a, qkv, P, y, xmid, ln2_xhat, ln2_rstd, m, h, gact;
  };
  std::vector<Layer> layer;
  DeviceBuffer<T> xL, lnf_xhat, lnf_rstd, xf, logits, dx, dxf, dtmp, dqkv, dS, dh, dgact, loss;
  DeviceBuffer<int32_t> tgt;
};

template <class T>
GptDeviceNet<T>::GptDeviceNet(const models::GptConfig& c, const std::vector<models::TensorInfo>& t,
                              int max_batch, cudaStream_t stream)
    : c_(c), t_(t), max_batch_(std::max(1, max_batch)), stream_(stream), b_(new Buffers) {
  const size_t R = static_cast<size_t>(max_batch_) * c.block, C = static_cast<size_t>(c.d_model);
  const size_t PP = static_cast<size_t>(max_batch_) * c.heads * c.block * c.block;
  b_->layer.resize(static_cast<size_t>(c.layers));
  for (auto& L : b_->layer) {
    L.xin = DeviceBuffer<T>(R * C), L.ln1_xhat = DeviceBuffer<T>(R * C);
    L.ln1_rstd = DeviceBuffer<T>(R), L.a = DeviceBuffer<T>(R * C);
    L.qkv = DeviceBuffer<T>(R * 3 * C), L.P = DeviceBuffer<T>(PP), L.y = DeviceBuffer<T>(R * C);
    L.xmid = DeviceBuffer<T>(R * C), L.ln2_xhat = DeviceBuffer<T>(R * C);
    L.ln2_rstd = DeviceBuffer<T>(R), L.m = DeviceBuffer<T>(R * C);
    L.h = DeviceBuffer<T>(R * 4 * C), L.gact = DeviceBuffer<T>(R * 4 * C);
  }
  b_->xL = DeviceBuffer<T>(R * C), b_->lnf_xhat = DeviceBuffer<T>(R * C);
  b_->lnf_rstd = DeviceBuffer<T>(R), b_->xf = DeviceBuffer<T>(R * C);
  b_->logits = DeviceBuffer<T>(R * static_cast<size_t>(c.vocab));
  b_->dx = DeviceBuffer<T>(R * C), b_->dxf = DeviceBuffer<T>(R * C),
  b_->dtmp = DeviceBuffer<T>(R * C);
  b_->dqkv = DeviceBuffer<T>(R * 3 * C), b_->dS = DeviceBuffer<T>(PP);
  b_->dh = DeviceBuffer<T>(R * 4 * C), b_->dgact = DeviceBuffer<T>(R * 4 * C);
  b_->loss = DeviceBuffer<T>(1);
  b_->tgt = DeviceBuffer<int32_t>(R);
}

template <class T>
GptDeviceNet<T>::~GptDeviceNet() = default;

// models::gpt_reference_pass step for step (the same names), on the device.
template <class T>
double GptDeviceNet<T>::pass(const T* w, const int32_t* tokens, int n, T* g,
                             models::EvalResult* eval) {
  using GT = models::GptTensors;
  WB_ASSERT(n >= 1 && n <= max_batch_, "gpt (cuda): pass of " + std::to_string(n) +
                                           " windows, buffers for " + std::to_string(max_batch_));
  const int C = c_.d_model, Tn = c_.block, V = c_.vocab, H = c_.heads;
  const size_t R = static_cast<size_t>(n) * Tn;
  const int Ri = static_cast<int>(R);
  const cudaStream_t st = stream_;
  Buffers& A = *b_;
  auto P = [&](int idx) { return w + t_[static_cast<size_t>(idx)].offset; };
  auto G = [&](int idx) { return g + t_[static_cast<size_t>(idx)].offset; };

  embedding_forward<T>(n, Tn, C, tokens, P(GT::wte()), P(GT::wpe()), A.layer[0].xin.data(),
                       A.tgt.data(), st);
  for (int l = 0; l < c_.layers; ++l) {
    auto& L = A.layer[static_cast<size_t>(l)];
    auto W = [&](int k) { return P(GT::layer(l, k)); };
    layernorm_forward<T>(R, C, L.xin.data(), W(GT::kLn1W), W(GT::kLn1B), L.a.data(),
                         L.ln1_xhat.data(), L.ln1_rstd.data(), st);
    linear_forward<T>(Ri, C, 3 * C, L.a.data(), W(GT::kAttnW), W(GT::kAttnB), L.qkv.data(), st);
    attention_forward<T>(n, Tn, C, H, L.qkv.data(), L.P.data(), L.y.data(), st);
    linear_forward<T>(Ri, C, C, L.y.data(), W(GT::kProjW), W(GT::kProjB), L.xmid.data(), st);
    residual_add<T>(R * C, L.xmid.data(), L.xin.data(), st);
    layernorm_forward<T>(R, C, L.xmid.data(), W(GT::kLn2W), W(GT::kLn2B), L.m.data(),
                         L.ln2_xhat.data(), L.ln2_rstd.data(), st);
    linear_forward<T>(Ri, C, 4 * C, L.m.data(), W(GT::kFcW), W(GT::kFcB), L.h.data(), st);
    gelu_forward<T>(R * 4 * C, L.h.data(), L.gact.data(), st);
    T* out = l + 1 < c_.layers ? A.layer[static_cast<size_t>(l) + 1].xin.data() : A.xL.data();
    linear_forward<T>(Ri, 4 * C, C, L.gact.data(), W(GT::kMlpW), W(GT::kMlpB), out, st);
    residual_add<T>(R * C, out, L.xmid.data(), st);
  }
  layernorm_forward<T>(R, C, A.xL.data(), P(GT::lnf_w(c_.layers)), P(GT::lnf_b(c_.layers)),
                       A.xf.data(), A.lnf_xhat.data(), A.lnf_rstd.data(), st);
  // The gradient accumulates (embedding, LayerNorm, head) or is written once (linear):
  // zeroed first, as the reference does.
  if (g) WB_CHECK_CUDA(cudaMemsetAsync(g, 0, models::layout_size(t_) * sizeof(T), st));
  tied_head_ce<T>(R, C, V, A.xf.data(), P(GT::wte()), A.tgt.data(), A.logits.data(),
                  g ? A.dxf.data() : nullptr, g ? G(GT::wte()) : nullptr,
                  1.0 / static_cast<double>(R), A.loss.data(), st);
  if (g) {
    WB_CHECK_CUDA(cudaMemsetAsync(A.dx.data(), 0, R * C * sizeof(T), st));
    layernorm_backward<T>(R, C, A.lnf_xhat.data(), A.lnf_rstd.data(), P(GT::lnf_w(c_.layers)),
                          A.dxf.data(), A.dx.data(), G(GT::lnf_w(c_.layers)),
                          G(GT::lnf_b(c_.layers)), st);
    for (int l = c_.layers - 1; l >= 0; --l) {
      auto& L = A.layer[static_cast<size_t>(l)];
      auto W = [&](int k) { return P(GT::layer(l, k)); };
      auto D = [&](int k) { return G(GT::layer(l, k)); };
      // dx: the gradient at the block output = at xmid (residual) + through the MLP.
      linear_backward<T>(Ri, 4 * C, C, L.gact.data(), W(GT::kMlpW), A.dx.data(), A.dgact.data(),
                         D(GT::kMlpW), D(GT::kMlpB), st);
      gelu_backward<T>(R * 4 * C, L.h.data(), A.dgact.data(), A.dh.data(), st);
      linear_backward<T>(Ri, C, 4 * C, L.m.data(), W(GT::kFcW), A.dh.data(), A.dtmp.data(),
                         D(GT::kFcW), D(GT::kFcB), st);
      layernorm_backward<T>(R, C, L.ln2_xhat.data(), L.ln2_rstd.data(), W(GT::kLn2W), A.dtmp.data(),
                            A.dx.data(), D(GT::kLn2W), D(GT::kLn2B), st);
      // dx: now the gradient at xmid = at xin (residual) + through attention.
      linear_backward<T>(Ri, C, C, L.y.data(), W(GT::kProjW), A.dx.data(), A.dtmp.data(),
                         D(GT::kProjW), D(GT::kProjB), st);
      attention_backward<T>(n, Tn, C, H, L.qkv.data(), L.P.data(), A.dtmp.data(), A.dqkv.data(),
                            A.dS.data(), st);
      linear_backward<T>(Ri, C, 3 * C, L.a.data(), W(GT::kAttnW), A.dqkv.data(), A.dtmp.data(),
                         D(GT::kAttnW), D(GT::kAttnB), st);
      layernorm_backward<T>(R, C, L.ln1_xhat.data(), L.ln1_rstd.data(), W(GT::kLn1W), A.dtmp.data(),
                            A.dx.data(), D(GT::kLn1W), D(GT::kLn1B), st);
    }
    embedding_backward<T>(n, Tn, C, V, tokens, A.dx.data(), G(GT::wte()), G(GT::wpe()), st);
  }
  T total{};
  WB_CHECK_CUDA(cudaMemcpyAsync(&total, A.loss.data(), sizeof(T), cudaMemcpyDeviceToHost, st));
  WB_CHECK_CUDA(cudaStreamSynchronize(st));
  if (eval) {
    eval->loss_sum = static_cast<double>(total);
    eval->count = static_cast<int64_t>(R);
    eval->correct = 0;
    eval->has_accuracy = false;
  }
  return static_cast<double>(total) / static_cast<double>(R);
}

template class GptDeviceNet<float>;
template class GptDeviceNet<double>;

// ---- the "cuda" device model -----------------------------------------------------------

namespace {

struct CudaGptWorkspace final : models::Workspace {
  CudaGptWorkspace(const models::GptModel& m, int max_batch)
      : device(current_device()),
        max_batch(std::max(1, max_batch)),
        net(m.config(), m.tensors(), std::min(this->max_batch, kGptDeviceChunk), stream.get()),
        w(m.num_params()),
        g(m.num_params()),
        tokens(static_cast<size_t>(std::min(this->max_batch, kGptDeviceChunk)) *
               (m.config().block + 1)) {}
  int device;
  int max_batch;
  Stream stream;
  GptDeviceNet<float> net;
  DeviceBuffer<float> w, g;
  DeviceBuffer<int32_t> tokens;
  std::vector<float> gchunk;  // a chunk's gradient, when batches exceed kGptDeviceChunk
};

CudaGptWorkspace& workspace_of(const CudaGptModel& m, models::Workspace& ws,
                               const models::Batch& b) {
  auto* cw = dynamic_cast<CudaGptWorkspace*>(&ws);
  WB_ASSERT(cw, m.name() + ": workspace was not made by the CUDA model");
  WB_ASSERT(b.n <= cw->max_batch, m.name() + ": batch of " + std::to_string(b.n) +
                                      " windows, workspace for " + std::to_string(cw->max_batch));
  WB_CHECK_CUDA(cudaSetDevice(cw->device));  // this host thread may be a fresh one
  return *cw;
}

// The CPU model's checks (the kernels cannot report a bad token id).
void check_batch(const models::GptModel& m, const models::Batch& b, size_t w_size) {
  const models::GptConfig& c = m.config();
  WB_ASSERT(w_size == m.num_params(), "gpt (cuda): parameter buffer of " + std::to_string(w_size) +
                                          " floats, expected " + std::to_string(m.num_params()));
  const size_t ntok = static_cast<size_t>(b.n) * (c.block + 1);
  WB_ASSERT(b.n >= 1 && b.label.size() >= ntok,
            "gpt (cuda): batch holds fewer than n * (block + 1) tokens");
  for (size_t i = 0; i < ntok; ++i)
    WB_ASSERT(b.label[i] >= 0 && b.label[i] < c.vocab, "gpt: token id out of the vocabulary");
}

// One chunk of windows [s0, s0 + nk): tokens up, the pass.
double chunk_pass(const models::GptModel& m, CudaGptWorkspace& cw, const models::Batch& b, int s0,
                  int nk, float* g_dev, models::EvalResult* eval) {
  const size_t win = static_cast<size_t>(m.config().block) + 1;
  WB_CHECK_CUDA(cudaMemcpyAsync(cw.tokens.data(), b.label.data() + static_cast<size_t>(s0) * win,
                                static_cast<size_t>(nk) * win * sizeof(int32_t),
                                cudaMemcpyHostToDevice, cw.stream.get()));
  return cw.net.pass(cw.w.data(), cw.tokens.data(), nk, g_dev, eval);
}

}  // namespace

std::unique_ptr<models::Workspace> CudaGptModel::make_workspace(int max_batch) const {
  return std::make_unique<CudaGptWorkspace>(gpt_, max_batch);
}

double CudaGptModel::loss_grad(std::span<const float> w, const models::Batch& b, std::span<float> g,
                               models::Workspace& ws, uint64_t) const {
  check_batch(gpt_, b, w.size());
  WB_ASSERT(g.size() == w.size(), "gradient buffer size");
  CudaGptWorkspace& cw = workspace_of(*this, ws, b);
  const cudaStream_t st = cw.stream.get();
  WB_CHECK_CUDA(cudaMemcpyAsync(cw.w.data(), w.data(), w.size_bytes(), cudaMemcpyHostToDevice, st));
  auto download_g = [&](float* dst) {
    WB_CHECK_CUDA(cudaMemcpyAsync(dst, cw.g.data(), g.size_bytes(), cudaMemcpyDeviceToHost, st));
    WB_CHECK_CUDA(cudaStreamSynchronize(st));
  };
  if (b.n <= kGptDeviceChunk) {
    const double loss = chunk_pass(gpt_, cw, b, 0, b.n, cw.g.data(), nullptr);
    download_g(g.data());
    return loss;
  }
  // Fixed chunks: the mean loss and its gradient are the chunks' weighted by their share of
  // the windows (the CPU model's rule, models/gpt.cpp).
  cw.gchunk.resize(g.size());
  std::fill(g.begin(), g.end(), 0.0f);
  double loss = 0;
  for (int s0 = 0; s0 < b.n; s0 += kGptDeviceChunk) {
    const int nk = std::min(kGptDeviceChunk, b.n - s0);
    const double share = static_cast<double>(nk) / b.n;
    loss += share * chunk_pass(gpt_, cw, b, s0, nk, cw.g.data(), nullptr);
    download_g(cw.gchunk.data());
    const float sf = static_cast<float>(share);
    for (size_t i = 0; i < g.size(); ++i) g[i] += sf * cw.gchunk[i];
  }
  return loss;
}

models::EvalResult CudaGptModel::evaluate(std::span<const float> w, const models::Batch& b,
                                          models::Workspace& ws) const {
  models::EvalResult ev;
  if (b.n == 0) return ev;
  check_batch(gpt_, b, w.size());
  CudaGptWorkspace& cw = workspace_of(*this, ws, b);
  WB_CHECK_CUDA(cudaMemcpyAsync(cw.w.data(), w.data(), w.size_bytes(), cudaMemcpyHostToDevice,
                                cw.stream.get()));
  for (int s0 = 0; s0 < b.n; s0 += kGptDeviceChunk) {  // sums: chunks add up
    models::EvalResult part;
    chunk_pass(gpt_, cw, b, s0, std::min(kGptDeviceChunk, b.n - s0), nullptr, &part);
    ev.add(part);
  }
  return ev;
}

namespace {
std::unique_ptr<models::Model> wrap_gpt(const models::Model& cpu) {
  const auto* gpt = dynamic_cast<const models::GptModel*>(&cpu);
  return gpt ? std::make_unique<CudaGptModel>(*gpt) : nullptr;
}
const train::DeviceModelRegistrar kRegisterGpt{{"cuda", {"gpt"}, &wrap_gpt}};
}  // namespace

}  // namespace wb::cuda
