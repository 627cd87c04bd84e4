// conv2d forward/backward on the GPU; CPU twin: models::ref::conv2d_* (models/layers.h).
//
// Forward and data gradient: one thread per output element, running the reference's
// (c, u, v) tap loop in the reference's order, out-of-image taps skipped (zero padding).
// Weight and bias gradients: one block per output (weight element / channel) reducing over
// the n x ho x wo positions (threads across a plane, the batch inside each thread) with a
// fixed-order block sum: no atomics, deterministic.
//
// Index arithmetic, worked example (lenet5 conv2: cin 10, 12x12 -> 8x8, k 5, pad 0):
//   output flat index q = ((s*cout + o)*ho + i)*wo + j; the data gradient of input pixel
//   (c, yy, xx) gathers dy[s, o, i, j] for i = yy - u + pad, j = xx - v + pad inside [0, 8):
//   pixel (c, 0, 0) only gets tap (u, v) = (0, 0) at output (0, 0); pixel (c, 6, 6) gets all
//   25 taps.
#include "cuda/common.cuh"
#include "cuda/layers_cuda.h"

namespace wb::cuda {
namespace {

using dev::kThreads;

template <class T>
__global__ void conv2d_forward_kernel(ConvShape s, int n, const T* x, const T* w0, const T* b,
                                      T* y, Groups gr) {
  const int ho = s.ho(), wo = s.wo(), kk = s.k * s.k;
  const size_t total = static_cast<size_t>(gr.count) * n * s.cout * ho * wo;
  WB_FOR_EACH_INDEX(q, total) {
    const int j = static_cast<int>(q % wo);
    const int i = static_cast<int>(q / wo % ho);
    const int o = static_cast<int>(q / (static_cast<size_t>(wo) * ho) % s.cout);
    const size_t in = q / (static_cast<size_t>(wo) * ho * s.cout);
    const size_t off = in / n * gr.stride;  // the sample's group's parameters
    const T* w = w0 + off;
    T acc = b[off + o];
    for (int c = 0; c < s.cin; ++c) {
      const T* xc = x + (in * s.cin + c) * s.h * s.w;
      const T* wc = w + (static_cast<size_t>(o) * s.cin + c) * kk;
      for (int u = 0; u < s.k; ++u) {
        const int yi = i + u - s.pad;
        if (yi < 0 || yi >= s.h) continue;
        for (int v = 0; v < s.k; ++v) {
          const int xj = j + v - s.pad;
          if (xj < 0 || xj >= s.w) continue;
          acc += wc[u * s.k + v] * xc[yi * s.w + xj];
        }
      }
    }
    y[q] = acc;
  }
}

// dx[s, c, yy, xx] = sum_{o,u,v} w[o,c,u,v] dy[s, o, yy-u+pad, xx-v+pad]  (reference order o, u, v)
template <class T>
__global__ void conv2d_dx_kernel(ConvShape s, int n, const T* w0, const T* dy, T* dx, Groups gr) {
  const int ho = s.ho(), wo = s.wo(), kk = s.k * s.k;
  const size_t total = static_cast<size_t>(gr.count) * n * s.cin * s.h * s.w;
  WB_FOR_EACH_INDEX(q, total) {
    const int xx = static_cast<int>(q % s.w);
    const int yy = static_cast<int>(q / s.w % s.h);
    const int c = static_cast<int>(q / (static_cast<size_t>(s.w) * s.h) % s.cin);
    const size_t in = q / (static_cast<size_t>(s.w) * s.h * s.cin);
    const T* w = w0 + in / n * gr.stride;
    T acc(0);
    for (int o = 0; o < s.cout; ++o) {
      const T* dyo = dy + (in * s.cout + o) * ho * wo;
      const T* wc = w + (static_cast<size_t>(o) * s.cin + c) * kk;
      for (int u = 0; u < s.k; ++u) {
        const int i = yy - u + s.pad;
        if (i < 0 || i >= ho) continue;
        for (int v = 0; v < s.k; ++v) {
          const int j = xx - v + s.pad;
          if (j < 0 || j >= wo) continue;
          acc += wc[u * s.k + v] * dyo[i * wo + j];
        }
      }
    }
    dx[q] = acc;
  }
}

// One block per weight element widx = (o*cin + c)*k*k + u*k + v (and group: block
// g*nw + widx, over that group's n samples only):
// dw[widx] = sum_{s,i,j} dy[s,o,i,j] x[s,c,i+u-pad,j+v-pad]. Threads stride over the output
// positions p = i*wo + j of one plane (neighbouring threads read neighbouring elements) and
// loop over the batch inside, so the index arithmetic runs once per position, not per term.
template <class T>
__global__ void conv2d_dw_kernel(ConvShape s, int n, const T* x0, const T* dy0, T* dw, Groups gr) {
  const int ho = s.ho(), wo = s.wo(), kk = s.k * s.k;
  const int nw = s.cout * s.kdim();
  const int widx = static_cast<int>(blockIdx.x % nw);
  const size_t grp = blockIdx.x / nw;
  const int v = widx % s.k, u = widx / s.k % s.k;
  const int c = widx / kk % s.cin, o = widx / (kk * s.cin);
  const size_t plane_in = static_cast<size_t>(s.h) * s.w, plane_out = static_cast<size_t>(ho) * wo;
  const T* x = x0 + grp * n * s.cin * plane_in;
  const T* dy = dy0 + grp * n * s.cout * plane_out;
  dw += grp * gr.stride;
  T acc(0);
  for (int p = threadIdx.x; p < ho * wo; p += kThreads) {
    const int i = p / wo, j = p % wo;
    const int yi = i + u - s.pad, xj = j + v - s.pad;
    if (yi < 0 || yi >= s.h || xj < 0 || xj >= s.w) continue;
    const T* dyp = dy + static_cast<size_t>(o) * plane_out + p;
    const T* xp = x + static_cast<size_t>(c) * plane_in + yi * s.w + xj;
    for (int in = 0; in < n; ++in)
      acc += dyp[static_cast<size_t>(in) * s.cout * plane_out] *
             xp[static_cast<size_t>(in) * s.cin * plane_in];
  }
  acc = dev::block_sum(acc);
  if (threadIdx.x == 0) dw[widx] = acc;
}

// One block per output channel: db[o] = sum_{s,p} dy[s,o,p] (positions across threads, the
// batch inside, as conv2d_dw_kernel).
template <class T>
__global__ void conv2d_db_kernel(ConvShape s, int n, const T* dy0, T* db, Groups gr) {
  const int plane = s.ho() * s.wo();
  const int o = static_cast<int>(blockIdx.x % s.cout);
  const size_t grp = blockIdx.x / s.cout;
  const T* dy = dy0 + grp * n * s.cout * plane;
  db += grp * gr.stride;
  T acc(0);
  for (int p = threadIdx.x; p < plane; p += kThreads)
    for (int in = 0; in < n; ++in) acc += dy[(static_cast<size_t>(in) * s.cout + o) * plane + p];
  acc = dev::block_sum(acc);
  if (threadIdx.x == 0) db[o] = acc;
}

}  // namespace

template <class T>
void conv2d_forward(const ConvShape& s, int n, const T* x, const T* w, const T* b, T* y,
                    cudaStream_t stream, Groups gr) {
  const size_t total = static_cast<size_t>(gr.count) * n * s.cout * s.ho() * s.wo();
  if (total == 0) return;
  conv2d_forward_kernel<T>
      <<<dev::capped_blocks(total), kThreads, 0, stream>>>(s, n, x, w, b, y, gr);
  WB_CHECK_LAUNCH("conv2d_forward_kernel");
}

template <class T>
void conv2d_backward(const ConvShape& s, int n, const T* x, const T* w, const T* dy, T* dx, T* dw,
                     T* db, cudaStream_t stream, Groups gr) {
  conv2d_dw_kernel<T><<<gr.count * s.cout * s.kdim(), kThreads, 0, stream>>>(s, n, x, dy, dw, gr);
  WB_CHECK_LAUNCH("conv2d_dw_kernel");
  conv2d_db_kernel<T><<<gr.count * s.cout, kThreads, 0, stream>>>(s, n, dy, db, gr);
  WB_CHECK_LAUNCH("conv2d_db_kernel");
  const size_t total = static_cast<size_t>(gr.count) * n * s.cin * s.h * s.w;
  if (dx && total > 0) {
    conv2d_dx_kernel<T><<<dev::capped_blocks(total), kThreads, 0, stream>>>(s, n, w, dy, dx, gr);
    WB_CHECK_LAUNCH("conv2d_dx_kernel");
  }
}

#define WB_INSTANTIATE(T)                                                                       \
  template void conv2d_forward<T>(const ConvShape&, int, const T*, const T*, const T*, T*,      \
                                  cudaStream_t, Groups);                                        \
  template void conv2d_backward<T>(const ConvShape&, int, const T*, const T*, const T*, T*, T*, \
                                   T*, cudaStream_t, Groups);
WB_INSTANTIATE(float)
WB_INSTANTIATE(double)
WB_INSTANTIATE(DualD)
#undef WB_INSTANTIATE

}  // namespace wb::cuda
