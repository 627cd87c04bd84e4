// The ResNet's convolutions on the GPU: strided (the first block of stages 2 and 3 halves the
// map, He et al. 2016 section 4.2; option B's 1x1 projection likewise), bias optional (none
// before a norm). CPU twin: models::rref::conv_forward / conv_backward. The same plan as
// LeNet's stride-1 kernels (cuda/conv2d_cuda.cu), with the stride in the index arithmetic:
//
// Forward and data gradient: one thread per output (input) element, running the reference's
// (c, u, v) tap loop in the reference's order, out-of-image taps skipped (zero padding).
// Weight and bias gradients: one block per output (weight element / channel and group)
// reducing over the n x ho x wo positions (threads across a plane, the batch inside each
// thread) with a fixed-order block sum: no atomics, deterministic.
//
// Index arithmetic, worked example (stage 2's first conv: cin 16, 32x32 -> 16x16, k 3, stride
// 2, pad 1): output (i, j) reads input rows 2i - 1 .. 2i + 1. The data gradient of input pixel
// (c, yy, xx) gathers dy[s, o, i, j] for the taps u with yy - u + 1 = 2i, i.e. yy - u + pad
// even and i = (yy - u + pad) / 2 in [0, 16): row yy = 0 gets u = 1 (i = 0); row yy = 1 gets
// u = 0 (i = 1) and u = 2 (i = 0); row 31 gets u = 0 (i = 16: outside) and u = 2 (i = 15).
#include "cuda/common.cuh"
#include "cuda/resnet_layers_cuda.h"

namespace wb::cuda {
namespace {

using dev::kThreads;

// ConvGeom's fields with its derived sizes precomputed (its methods are host code).
struct Geo {
  int cin, h, w, cout, k, stride, pad, ho, wo;
};

Geo geo_of(const ConvGeom& g) {
  return {g.cin, g.h, g.w, g.cout, g.k, g.stride, g.pad, g.ho(), g.wo()};
}

template <class T>
__global__ void conv_forward_kernel(Geo g, int n, const T* x, const T* w0, const T* b, T* y,
                                    Groups gr) {
  const int kk = g.k * g.k;
  const size_t total = static_cast<size_t>(gr.count) * n * g.cout * g.ho * g.wo;
  WB_FOR_EACH_INDEX(q, total) {
    const int j = static_cast<int>(q % g.wo);
    const int i = static_cast<int>(q / g.wo % g.ho);
    const int o = static_cast<int>(q / (static_cast<size_t>(g.wo) * g.ho) % g.cout);
    const size_t in = q / (static_cast<size_t>(g.wo) * g.ho * g.cout);
    const size_t off = in / n * gr.stride;  // the sample's group's parameters
    const T* w = w0 + off;
    T acc = b ? b[off + o] : T(0);
    for (int c = 0; c < g.cin; ++c) {
      const T* xc = x + (in * g.cin + c) * g.h * g.w;
      const T* wc = w + (static_cast<size_t>(o) * g.cin + c) * kk;
      for (int u = 0; u < g.k; ++u) {
        const int yi = i * g.stride + u - g.pad;
        if (yi < 0 || yi >= g.h) continue;
        for (int v = 0; v < g.k; ++v) {
          const int xj = j * g.stride + v - g.pad;
          if (xj < 0 || xj >= g.w) continue;
          acc += wc[u * g.k + v] * xc[yi * g.w + xj];
        }
      }
    }
    y[q] = acc;
  }
}

// dx[s, c, yy, xx] = sum_{o,u,v} w[o,c,u,v] dy[s, o, i, j] over the taps with
// i*stride = yy - u + pad, j*stride = xx - v + pad (reference order o, u, v).
template <class T>
__global__ void conv_dx_kernel(Geo g, int n, const T* w0, const T* dy, T* dx, Groups gr) {
  const int kk = g.k * g.k;
  const size_t total = static_cast<size_t>(gr.count) * n * g.cin * g.h * g.w;
  WB_FOR_EACH_INDEX(q, total) {
    const int xx = static_cast<int>(q % g.w);
    const int yy = static_cast<int>(q / g.w % g.h);
    const int c = static_cast<int>(q / (static_cast<size_t>(g.w) * g.h) % g.cin);
    const size_t in = q / (static_cast<size_t>(g.w) * g.h * g.cin);
    const T* w = w0 + in / n * gr.stride;
    T acc(0);
    for (int o = 0; o < g.cout; ++o) {
      const T* dyo = dy + (in * g.cout + o) * g.ho * g.wo;
      const T* wc = w + (static_cast<size_t>(o) * g.cin + c) * kk;
      for (int u = 0; u < g.k; ++u) {
        const int ti = yy - u + g.pad;
        if (ti < 0 || ti % g.stride != 0 || ti / g.stride >= g.ho) continue;
        for (int v = 0; v < g.k; ++v) {
          const int tj = xx - v + g.pad;
          if (tj < 0 || tj % g.stride != 0 || tj / g.stride >= g.wo) continue;
          acc += wc[u * g.k + v] * dyo[(ti / g.stride) * g.wo + tj / g.stride];
        }
      }
    }
    dx[q] = acc;
  }
}

// One block per weight element widx = (o*cin + c)*k*k + u*k + v of group grp (block
// grp*nw + widx), over that group's n samples: dw[widx] = sum_{s,i,j} dy[s,o,i,j]
// x[s,c,i*stride+u-pad,j*stride+v-pad]; positions across threads, the batch inside.
template <class T>
__global__ void conv_dw_kernel(Geo g, int n, const T* x0, const T* dy0, T* dw, Groups gr) {
  const int kk = g.k * g.k, nw = g.cout * g.cin * kk;
  const int widx = static_cast<int>(blockIdx.x % nw);
  const size_t grp = blockIdx.x / nw;
  const int v = widx % g.k, u = widx / g.k % g.k;
  const int c = widx / kk % g.cin, o = widx / (kk * g.cin);
  const size_t plane_in = static_cast<size_t>(g.h) * g.w;
  const size_t plane_out = static_cast<size_t>(g.ho) * g.wo;
  const T* x = x0 + grp * n * g.cin * plane_in;
  const T* dy = dy0 + grp * n * g.cout * plane_out;
  dw += grp * gr.stride;
  T acc(0);
  for (int p = threadIdx.x; p < g.ho * g.wo; p += kThreads) {
    const int i = p / g.wo, j = p % g.wo;
    const int yi = i * g.stride + u - g.pad, xj = j * g.stride + v - g.pad;
    if (yi < 0 || yi >= g.h || xj < 0 || xj >= g.w) continue;
    const T* dyp = dy + static_cast<size_t>(o) * plane_out + p;
    const T* xp = x + static_cast<size_t>(c) * plane_in + yi * g.w + xj;
    for (int in = 0; in < n; ++in)
      acc += dyp[static_cast<size_t>(in) * g.cout * plane_out] *
             xp[static_cast<size_t>(in) * g.cin * plane_in];
  }
  acc = dev::block_sum(acc);
  if (threadIdx.x == 0) dw[widx] = acc;
}

// One block per (group, output channel): db[o] = sum_{s,p} dy[s,o,p].
template <class T>
__global__ void conv_db_kernel(Geo g, int n, const T* dy0, T* db, Groups gr) {
  const int plane = g.ho * g.wo;
  const int o = static_cast<int>(blockIdx.x % g.cout);
  const size_t grp = blockIdx.x / g.cout;
  const T* dy = dy0 + grp * n * g.cout * plane;
  db += grp * gr.stride;
  T acc(0);
  for (int p = threadIdx.x; p < plane; p += kThreads)
    for (int in = 0; in < n; ++in) acc += dy[(static_cast<size_t>(in) * g.cout + o) * plane + p];
  acc = dev::block_sum(acc);
  if (threadIdx.x == 0) db[o] = acc;
}

}  // namespace

template <class T>
void conv_forward(const ConvGeom& cg, int n, const T* x, const T* w, const T* b, T* y,
                  cudaStream_t stream, Groups gr) {
  const Geo g = geo_of(cg);
  const size_t total = static_cast<size_t>(gr.count) * n * g.cout * g.ho * g.wo;
  if (total == 0) return;
  conv_forward_kernel<T><<<dev::capped_blocks(total), kThreads, 0, stream>>>(g, n, x, w, b, y, gr);
  WB_CHECK_LAUNCH("conv_forward_kernel");
}

template <class T>
void conv_backward(const ConvGeom& cg, int n, const T* x, const T* w, const T* dy, T* dx, T* dw,
                   T* db, cudaStream_t stream, Groups gr) {
  const Geo g = geo_of(cg);
  if (gr.count == 0) return;
  conv_dw_kernel<T><<<gr.count * g.cout * cg.kdim(), kThreads, 0, stream>>>(g, n, x, dy, dw, gr);
  WB_CHECK_LAUNCH("conv_dw_kernel");
  if (db) {
    conv_db_kernel<T><<<gr.count * g.cout, kThreads, 0, stream>>>(g, n, dy, db, gr);
    WB_CHECK_LAUNCH("conv_db_kernel");
  }
  const size_t total = static_cast<size_t>(gr.count) * n * g.cin * g.h * g.w;
  if (dx && total > 0) {
    conv_dx_kernel<T><<<dev::capped_blocks(total), kThreads, 0, stream>>>(g, n, w, dy, dx, gr);
    WB_CHECK_LAUNCH("conv_dx_kernel");
  }
}

#define WB_INSTANTIATE(T)                                                                        \
  template void conv_forward<T>(const ConvGeom&, int, const T*, const T*, const T*, T*,          \
                                cudaStream_t, Groups);                                           \
  template void conv_backward<T>(const ConvGeom&, int, const T*, const T*, const T*, T*, T*, T*, \
                                 cudaStream_t, Groups);
WB_INSTANTIATE(float)
WB_INSTANTIATE(double)
#undef WB_INSTANTIATE

}  // namespace wb::cuda
