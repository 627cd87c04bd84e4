// Error checking and device memory for the CUDA code (DESIGN.md section 10: every CUDA call
// goes through WB_CHECK_CUDA, whose message names the rank, the call, file and line).
//
// Host header: compiled by the host compiler (tests, net_cuda.cpp) and by nvcc (cuda/*.cu).
// Only the CUDA runtime API header, no kernel syntax.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <span>
#include <utility>
#include <vector>

namespace wb::cuda {

// Throws wb::InternalError "rank R file:line: CALL failed: cudaErrorX: <text>".
[[noreturn]] void throw_cuda(const char* file, int line, const char* call, cudaError_t code);

}  // namespace wb::cuda

#define WB_CHECK_CUDA(call)                                           \
  do {                                                                \
    const cudaError_t wb_cuda_rc_ = (call);                           \
    if (wb_cuda_rc_ != cudaSuccess)                                   \
      ::wb::cuda::throw_cuda(__FILE__, __LINE__, #call, wb_cuda_rc_); \
  } while (0)

// After a kernel launch: a bad configuration shows up in cudaGetLastError (the launch itself
// returns nothing); the name says which kernel.
#define WB_CHECK_LAUNCH(kernel_name)                                                     \
  do {                                                                                   \
    const cudaError_t wb_cuda_rc_ = cudaGetLastError();                                  \
    if (wb_cuda_rc_ != cudaSuccess)                                                      \
      ::wb::cuda::throw_cuda(__FILE__, __LINE__, "launch of " kernel_name, wb_cuda_rc_); \
  } while (0)

namespace wb::cuda {

// Device memory for `size` elements of T (cudaMalloc / cudaFree). Move-only; size 0 holds
// no allocation. Not zeroed (call zero()).
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t size) : size_(size) {
    if (size_ > 0) WB_CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&p_), bytes()));
  }
  // Allocates and copies host data in.
  explicit DeviceBuffer(std::span<const T> host) : DeviceBuffer(host.size()) { upload(host); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      p_ = std::exchange(o.p_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  ~DeviceBuffer() { release(); }

  T* data() { return p_; }
  const T* data() const { return p_; }
  size_t size() const { return size_; }
  size_t bytes() const { return size_ * sizeof(T); }

  // Blocking copies (cudaMemcpy): host.size() elements from/to the start of the buffer.
  void upload(std::span<const T> host) {
    check_fits(host.size());
    if (!host.empty())
      WB_CHECK_CUDA(cudaMemcpy(p_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  void download(std::span<T> host) const {
    check_fits(host.size());
    if (!host.empty())
      WB_CHECK_CUDA(cudaMemcpy(host.data(), p_, host.size() * sizeof(T), cudaMemcpyDeviceToHost));
  }
  std::vector<T> to_host() const {
    std::vector<T> v(size_);
    download(v);
    return v;
  }
  void zero(cudaStream_t stream = nullptr) {
    if (size_ > 0) WB_CHECK_CUDA(cudaMemsetAsync(p_, 0, bytes(), stream));
  }

 private:
  void check_fits(size_t n) const {
    if (n > size_)
      throw_cuda(__FILE__, __LINE__, "DeviceBuffer copy larger than the buffer",
                 cudaErrorInvalidValue);
  }
  void release() noexcept {
    if (p_) cudaFree(p_);  // no throw from a destructor; a failing free leaks at worst
    p_ = nullptr;
    size_ = 0;
  }
  T* p_ = nullptr;
  size_t size_ = 0;
};

// Page-locked host memory for `size` elements of T (cudaMallocHost / cudaFreeHost): the
// staging buffers of grouped passes, so their copies are single asynchronous DMA transfers.
// Move-only; not zeroed.
template <class T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(size_t size) : size_(size) {
    if (size_ > 0) WB_CHECK_CUDA(cudaMallocHost(reinterpret_cast<void**>(&p_), size_ * sizeof(T)));
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  PinnedBuffer(PinnedBuffer&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    if (this != &o) {
      if (p_) cudaFreeHost(p_);
      p_ = std::exchange(o.p_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  ~PinnedBuffer() {
    if (p_) cudaFreeHost(p_);
  }
  T* data() { return p_; }
  const T* data() const { return p_; }
  size_t size() const { return size_; }

 private:
  T* p_ = nullptr;
  size_t size_ = 0;
};

// A non-blocking CUDA stream (cudaStreamCreateWithFlags / cudaStreamDestroy); neither
// copyable nor movable (workspaces hold it in place).
class Stream {
 public:
  Stream() { WB_CHECK_CUDA(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(s_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

}  // namespace wb::cuda
