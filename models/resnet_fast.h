// Fast float kernels of the ResNet's convolutions, beside the reference loops of
// models/resnet_layers.h (llm.c's layout: the plain reference next to the fast kernel, a test
// comparing them with atol + rtol |ref|: tests/unit/test_resnet.cpp).
//
// A convolution is a GEMM on an im2col copy of each sample (Chellapilla et al. 2006):
//   forward      Y[o, p]   = sum_k W[o, k] col[k, p]          (M = cout, N = ho wo, K = cin k k)
//   weight grad  dW^T[k, o] += sum_p col[k, p] dY^T[p, o]      (dY transposed per sample)
//   data grad    dcol[k, p] = sum_o W^T[k, o] dY[o, p]; dx = col2im(dcol)
// with k = (c, u, v) and p = (i, j). Both GEMM shapes keep p, the contiguous axis of Y, col
// and dY, in the SIMD lanes: the NN kernel holds an 8 x 32 block of C in 16 vector registers
// (AVX-512: 16 floats each) and broadcasts one A element per row per k. The weight gradient
// runs through the same kernel on transposed dY (a dot-product kernel along p reached 26-69
// GFLOP/s where the NN kernel reaches ~195 on the same core: its horizontal reductions cost
// as much as the short sums along p of the 16x16 and 8x8 maps). Scratch (col, dcol, W^T)
// The forward of a stride-1 3x3 convolution whose output rows are whole vectors (32x32 and
// 16x16 maps) skips im2col: it is an implicit GEMM on a zero-padded copy of the sample, B's
// row k = (c, u, v) of a panel being the padded row i + u of channel c shifted by v.
// Scratch lives in ConvScratch, owned by the pass's workspace: no allocation after the first pass.
#pragma once

#include <vector>

#include "models/resnet_layers.h"

namespace wb::models::fast {

struct ConvScratch {
  std::vector<float> col, dcol, wt, dyt, dwt, xpad;
  std::vector<int> offs;
};

// C[M x N] (+)= A[M x K] B[K x N], row-major with leading dimensions lda, ldb, ldc.
void gemm_nn(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C,
             int ldc, bool accumulate);

// Same contracts as rref::conv_forward / conv_backward (y, dw, db, dx OVERWRITTEN).
void conv_forward(const ConvGeom& g, int n, const float* x, const float* w, const float* b,
                  float* y, ConvScratch& s);
void conv_backward(const ConvGeom& g, int n, const float* x, const float* w, const float* dy,
                   float* dx, float* dw, float* db, ConvScratch& s);

}  // namespace wb::models::fast
