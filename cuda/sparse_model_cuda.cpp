#include "cuda/sparse_model_cuda.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <string>
#include <utility>

#include "cuda/check.h"
#include "cuda/device.h"
#include "cuda/layers_cuda.h"
#include "cuda/mlp_cuda.h"
#include "cuda/sparse_cuda.h"
#include "core/error.h"

namespace wb::cuda {

namespace {

// A device buffer that grows (never shrinks) to the largest batch seen: the CSR arrays'
// length depends on the batch's non-zeros, known only when the batch arrives.
template <class T>
T* fit(DeviceBuffer<T>& b, size_t n) {
  if (b.size() < n) b = DeviceBuffer<T>(std::max(n, b.size() * 3 / 2));
  return b.data();
}

template <class T>
void upload(T* dst, const T* src, size_t n, cudaStream_t st) {
  if (n) WB_CHECK_CUDA(cudaMemcpyAsync(dst, src, n * sizeof(T), cudaMemcpyHostToDevice, st));
}

struct SparseWorkspace final : models::Workspace {
  SparseWorkspace(const std::vector<int64_t>& dims, int max_batch_)
      : device(current_device()), max_batch(max_batch_) {
    const auto n = static_cast<size_t>(max_batch);
    size_t P = 0, dmax = 0;
    for (size_t j = 0; j + 1 < dims.size(); ++j)
      P += static_cast<size_t>(dims[j] * dims[j + 1] + dims[j + 1]);
    for (size_t j = 1; j < dims.size(); ++j) dmax = std::max(dmax, static_cast<size_t>(dims[j]));
    w = DeviceBuffer<float>(P);
    g = DeviceBuffer<float>(P);
    for (size_t j = 1; j + 1 < dims.size(); ++j)
      act.emplace_back(n * static_cast<size_t>(dims[j]));
    logits = DeviceBuffer<float>(n * static_cast<size_t>(dims.back()));
    dz_a = DeviceBuffer<float>(n * dmax);
    dz_b = DeviceBuffer<float>(n * dmax);
    x_ptr = DeviceBuffer<int64_t>(n + 1);
    y_ptr = DeviceBuffer<int64_t>(n + 1);
    loss_rows = DeviceBuffer<double>(n);
    loss_host.resize(n);
  }
  int device;
  int max_batch;
  Stream stream;
  DeviceBuffer<float> w, g;
  std::vector<DeviceBuffer<float>> act;  // hidden activations (after ReLU), layers 1..nl-1
  DeviceBuffer<float> logits, dz_a, dz_b;
  DeviceBuffer<int64_t> x_ptr, y_ptr;
  DeviceBuffer<int32_t> x_idx, y_idx;
  DeviceBuffer<float> x_val;
  // The batch's CSR transposed (host-built): distinct features, their entries' rows/values.
  DeviceBuffer<int32_t> c_feat, c_ptr, c_row;
  DeviceBuffer<float> c_val;
  std::vector<int32_t> h_feat, h_ptr, h_row, h_order, h_rowof;
  std::vector<float> h_val;
  DeviceBuffer<double> loss_rows;
  std::vector<double> loss_host;
  std::vector<float> logits_host;
};

// CSR (rows = samples) -> per-feature lists, features ascending, rows ascending within a
// feature (a stable sort of the non-zeros by feature: the CPU's summation order of dW rows).
void transpose(const models::Batch& b, SparseWorkspace& s) {
  const int64_t nnz = b.x_ptr[static_cast<size_t>(b.n)];
  s.h_order.resize(static_cast<size_t>(nnz));
  for (int64_t p = 0; p < nnz; ++p) s.h_order[static_cast<size_t>(p)] = static_cast<int32_t>(p);
  std::stable_sort(s.h_order.begin(), s.h_order.end(),
                   [&](int32_t a, int32_t c) { return b.x_idx[a] < b.x_idx[c]; });
  s.h_row.resize(static_cast<size_t>(nnz));
  s.h_val.resize(static_cast<size_t>(nnz));
  s.h_rowof.resize(static_cast<size_t>(nnz));  // sample (row) of each non-zero
  for (int i = 0; i < b.n; ++i)
    for (int64_t p = b.x_ptr[i]; p < b.x_ptr[i + 1]; ++p) s.h_rowof[static_cast<size_t>(p)] = i;
  s.h_feat.clear();
  s.h_ptr.clear();
  for (int64_t k = 0; k < nnz; ++k) {
    const int32_t p = s.h_order[static_cast<size_t>(k)];
    if (k == 0 || b.x_idx[p] != b.x_idx[s.h_order[static_cast<size_t>(k - 1)]]) {
      s.h_feat.push_back(b.x_idx[p]);
      s.h_ptr.push_back(static_cast<int32_t>(k));
    }
    s.h_row[static_cast<size_t>(k)] = s.h_rowof[static_cast<size_t>(p)];
    s.h_val[static_cast<size_t>(k)] = b.x_val[p];
  }
  s.h_ptr.push_back(static_cast<int32_t>(nnz));
}

}  // namespace

CudaSparseMlp::CudaSparseMlp(const models::SparseMlp& cpu) : DeviceModel(cpu), mlp_(cpu) {
  const auto& t = cpu.tensors();
  WB_ASSERT(t.size() >= 2 && t.size() % 2 == 0, "sparse_mlp: weight/bias pairs");
  dims_.push_back(t[0].shape.at(0));
  for (size_t j = 0; j < t.size(); j += 2) dims_.push_back(t[j].shape.at(1));
}

std::unique_ptr<models::Workspace> CudaSparseMlp::make_workspace(int max_batch) const {
  return std::make_unique<SparseWorkspace>(dims_, std::max(1, max_batch));
}

namespace {

struct Pass {
  const std::vector<int64_t>& dims;
  const std::vector<models::TensorInfo>& t;
  SparseWorkspace& s;
  const models::Batch& b;
  int n;
  size_t nl() const { return dims.size() - 1; }
  cudaStream_t st() const { return s.stream.get(); }

  // Copies the batch in and runs the forward pass; the logits end in s.logits.
  void forward() {
    const int64_t nnz = b.x_ptr[static_cast<size_t>(n)];
    const int64_t ny = b.y_ptr[static_cast<size_t>(n)];
    upload(s.x_ptr.data(), b.x_ptr.data(), static_cast<size_t>(n) + 1, st());
    upload(fit(s.x_idx, static_cast<size_t>(nnz)), b.x_idx.data(), static_cast<size_t>(nnz), st());
    upload(fit(s.x_val, static_cast<size_t>(nnz)), b.x_val.data(), static_cast<size_t>(nnz), st());
    upload(s.y_ptr.data(), b.y_ptr.data(), static_cast<size_t>(n) + 1, st());
    upload(fit(s.y_idx, static_cast<size_t>(ny)), b.y_idx.data(), static_cast<size_t>(ny), st());
    const float* w = s.w.data();
    for (size_t j = 0; j < nl(); ++j) {
      const bool hidden = j + 1 < nl();
      float* out = hidden ? s.act[j].data() : s.logits.data();
      const float* W = w + t[2 * j].offset;
      const float* bias = w + t[2 * j + 1].offset;
      if (j == 0) {
        csr_dense_forward<float>(n, dims[1], s.x_ptr.data(), s.x_idx.data(), s.x_val.data(), W,
                                 bias, out, st());
        if (hidden)
          relu_forward<float>(static_cast<size_t>(n) * static_cast<size_t>(dims[1]), out, out,
                              st());
      } else {
        dense_rows_forward<float>(n, dims[j], dims[j + 1], s.act[j - 1].data(), W, bias, out,
                                  hidden, st());
      }
    }
  }

  // The rows' losses (device -> s.loss_host, synchronized; returns their sum over the m
  // labelled rows / m, the CPU model's mean); dz (optional) on the device.
  double loss(float inv_m, float* dz, int m) {
    multilabel_xent<float>(n, dims.back(), s.logits.data(), s.y_ptr.data(), s.y_idx.data(), inv_m,
                           dz, s.loss_rows.data(), st());
    WB_CHECK_CUDA(cudaMemcpyAsync(s.loss_host.data(), s.loss_rows.data(),
                                  sizeof(double) * static_cast<size_t>(n), cudaMemcpyDeviceToHost,
                                  st()));
    WB_CHECK_CUDA(cudaStreamSynchronize(st()));
    double sum = 0;  // row order, as the CPU model
    for (int i = 0; i < n; ++i) sum += s.loss_host[static_cast<size_t>(i)];
    return m ? sum / m : 0.0;
  }
};

int labelled_rows(const models::Batch& b) {
  int m = 0;
  for (int i = 0; i < b.n; ++i) m += b.y_ptr[i + 1] > b.y_ptr[i];
  return m;
}

SparseWorkspace& workspace_of(const CudaSparseMlp& m, models::Workspace& ws, const models::Batch& b,
                              size_t w_size) {
  auto* s = dynamic_cast<SparseWorkspace*>(&ws);
  WB_ASSERT(s, m.name() + ": workspace was not made by the CUDA model");
  WB_ASSERT(w_size == m.num_params(), m.name() + ": parameter buffer size");
  WB_ASSERT(b.n >= 1 && b.n <= s->max_batch, m.name() + ": batch of " + std::to_string(b.n) +
                                                  " rows, workspace for " +
                                                  std::to_string(s->max_batch));
  WB_ASSERT(b.x_ptr.size() > static_cast<size_t>(b.n) && b.y_ptr.size() > static_cast<size_t>(b.n) &&
                b.x_ptr[0] == 0 && b.y_ptr[0] == 0,
            m.name() + ": batch CSR arrays");
  WB_CHECK_CUDA(cudaSetDevice(s->device));  // this host thread may be a fresh one
  return *s;
}

}  // namespace

double CudaSparseMlp::loss_grad(std::span<const float> w, const models::Batch& b,
                                std::span<float> g, models::Workspace& ws, uint64_t) const {
  SparseWorkspace& s = workspace_of(*this, ws, b, w.size());
  WB_ASSERT(g.size() == w.size(), "gradient buffer size");
  const cudaStream_t st = s.stream.get();
  upload(s.w.data(), w.data(), w.size(), st);  // host staging: w in ...
  Pass p{dims_, tensors(), s, b, b.n};
  p.forward();
  const int m = labelled_rows(b);
  const double mean = p.loss(m ? 1.0f / static_cast<float>(m) : 0.0f, s.dz_a.data(), m);

  transpose(b, s);  // host work (the stream is idle after loss()'s synchronization)
  const size_t nf = s.h_feat.size();
  upload(fit(s.c_feat, nf), s.h_feat.data(), nf, st);
  upload(fit(s.c_ptr, nf + 1), s.h_ptr.data(), nf + 1, st);
  upload(fit(s.c_row, s.h_row.size()), s.h_row.data(), s.h_row.size(), st);
  upload(fit(s.c_val, s.h_val.size()), s.h_val.data(), s.h_val.size(), st);

  float* dz = s.dz_a.data();
  float* dprev = s.dz_b.data();
  const auto& t = tensors();
  for (size_t j = dims_.size() - 1; j-- > 0;) {
    float* dW = s.g.data() + t[2 * j].offset;
    float* db = s.g.data() + t[2 * j + 1].offset;
    if (j == 0) {
      csc_dense_dw<float>(dims_[0], dims_[1], static_cast<int>(nf), s.c_feat.data(),
                          s.c_ptr.data(), s.c_row.data(), s.c_val.data(), dz, dW, st);
      column_sum<float>(b.n, dims_[1], dz, db, st);
    } else {
      dense_rows_backward<float>(b.n, dims_[j], dims_[j + 1], s.act[j - 1].data(),
                                 s.w.data() + t[2 * j].offset, dz, dW, db, dprev, st);
      std::swap(dz, dprev);
    }
  }
  // ... g out.
  WB_CHECK_CUDA(cudaMemcpyAsync(g.data(), s.g.data(), g.size_bytes(), cudaMemcpyDeviceToHost, st));
  WB_CHECK_CUDA(cudaStreamSynchronize(st));
  return mean;
}

models::EvalResult CudaSparseMlp::evaluate(std::span<const float> w, const models::Batch& b,
                                           models::Workspace& ws) const {
  models::EvalResult ev;
  if (b.n == 0) return ev;
  SparseWorkspace& s = workspace_of(*this, ws, b, w.size());
  const cudaStream_t st = s.stream.get();
  upload(s.w.data(), w.data(), w.size(), st);
  Pass p{dims_, tensors(), s, b, b.n};
  p.forward();
  const int64_t L = dims_.back();
  s.logits_host.resize(static_cast<size_t>(b.n) * static_cast<size_t>(L));
  WB_CHECK_CUDA(cudaMemcpyAsync(s.logits_host.data(), s.logits.data(),
                                sizeof(float) * s.logits_host.size(), cudaMemcpyDeviceToHost, st));
  p.loss(0.0f, nullptr, 0);  // synchronizes; the rows' losses in s.loss_host
  const int k = mlp_.eval_k();
  for (int i = 0; i < b.n; ++i) {
    ev.loss_sum += s.loss_host[static_cast<size_t>(i)];
    const int64_t y0 = b.y_ptr[i], y1 = b.y_ptr[i + 1];
    if (k > 0 && y1 > y0)
      ev.correct += models::precision_at_k(s.logits_host.data() + static_cast<size_t>(i) * L, L,
                                           b.y_idx.data() + y0, y1 - y0, k);
  }
  ev.count = b.n;
  ev.has_accuracy = true;
  return ev;
}

namespace {
std::unique_ptr<models::Model> wrap_sparse_mlp(const models::Model& cpu) {
  const auto* mlp = dynamic_cast<const models::SparseMlp*>(&cpu);
  return mlp ? std::make_unique<CudaSparseMlp>(*mlp) : nullptr;
}
const train::DeviceModelRegistrar kRegisterSparseMlp{{"cuda", {"sparse_mlp"}, &wrap_sparse_mlp}};
}  // namespace

}  // namespace wb::cuda
