// Fast CPU path for the image models: what Model::loss_grad and evaluate run.
// The plain loops in models/layers.h stay the oracle; tests/unit/test_layers.cpp compares
// the two (atol + rtol*|ref|) at awkward batch sizes.
//
// Design (one thread, float, no allocation per step):
//  - Every convolution is a GEMM over "B rows": out[o][p] = bias[o] + sum_k W[o][k] B[k][p]
//    with k = (c, u, v) the fan-in index and p an output position. Two ways to get B:
//      implicit  (else, when junk columns cost <= 25%: conv1 of lenet5_classic): the input is
//      copied into a zero-padded
//                plane of width Wp = W + 2 pad and B row k is the same plane shifted by
//                off_k = c*Hp*Wp + u*Wp + v. Output positions p = i*Wp + j; the columns
//                j >= Wo are junk (computed, never used; their gradient is zero). No im2col.
//                Worked example (a 28x28 input, k5, no padding): Wp = 28, off_(u=1,v=2) = 30,
//                p = 24*28 = 672 positions of which 576 are real (16.7% junk; lenet5's conv1
//                is such a layer but, as the first stage, takes vshift below).
//      rowvec    (no padding, Wo a multiple of kVL: lenet5's conv1 (24 wide) and conv2 (8)
//                with AVX2): output row i is Wo/kVL vectors, and B row k's row i is the input
//                plane itself at off_k + i*W (off_k = c*H*W + u*W + v): no copy, no junk,
//                and the GEMMs read the input (L1) instead of a padded copy or a 64 KB
//                im2col per sample. Rows that are not whole vectors (past stage 0, junk up
//                to 100%: lenet5_classic's conv2, 10 -> 16 wide; lenet5's conv2 with AVX-512, 8 -> 16) are padded to whole vectors:
//                the extra columns read past the input row (finite values: the next row or
//                the buffer's slack), their outputs are junk and their gradients zero.
//      vshift    (the first stage, unpadded, rows not whole vectors: lenet5's conv1 with
//                AVX-512 or SSE, 24 wide): k copies of each input plane, copy v shifted left
//                by v columns and cut to Wo; B row (c, u, v) = copy (c, v) + u*Wo, positions
//                p = i*Wo + j with no junk (the implicit layout's Wp = 28: 16.7% more).
//                The first stage cannot pad its rows to whole vectors (rowvec): the
//                caller's batch has no slack to read past.
//      im2col    (other deeper layers, where junk would be 50%): B = explicit column matrix,
//                p = i*Wo + j padded up to the vector length with zero columns.
//    Forward and data-gradient use gemm_bcast (C rows = A scalars broadcast x B vectors,
//    register tile 6 x 4 vectors); the weight gradient uses gemm_dot (dot products along
//    the positions, summed over the batch inside the register tile, one horizontal add
//    per output). B rows of all samples are kept from the forward pass for the wgrad.
//    The im2col data gradient runs one input channel at a time (dcol = W_c^T dout, k*k
//    rows, stays in L1) and col2im is a register gather over the k*k shifted rows.
//    rowvec stages have kernels of their own for the backward: conv_wgrad_rows (tiles of
//    channels x taps of one kernel row, over all positions and a chunk of samples; also
//    implicit stages whose padded rows are whole vectors: lenet5_classic's conv1, 32 wide)
//    and, with one or two vectors per output row, conv_dgrad_rows (no column matrix, no
//    col2im). Padded rowvec rows whose channels fill whole vectors better than the rows
//    do (lenet5_classic's conv2: 16 channels, rows 10 -> 16 wide) run the forward and the
//    weight gradient over vectors of output channels instead (conv_forward_cvec,
//    conv_wgrad_cvec: 100 positions a tile instead of 160 lanes, inputs broadcast). Rows of
//    exactly half a vector (lenet5's conv2 with AVX-512, 8 of 16 lanes) put two rows in one
//    vector for the forward (conv_forward_rowpair) and the data gradient (inside
//    conv_dgrad_rows): every lane real, the same sums in the same order.
//  - max-pool + dropout2d + ReLU after a conv are fused into one pass over the conv
//    output (they commute: dropout scales are >= 0 and ReLU is monotone); the backward
//    writes whole 2x2 windows, so positions outside windows stay zero from creation.
//  - Linear layers: forward = gemm_dot over in-features (weights packed per step into
//    rows padded to the vector length), wgrad/dgrad = gemm_bcast.
//  - Dropout masks come from models::dropout_mask(noise_seed, layer), like the reference.
//  - Vector code uses GCC/Clang vector extensions, so the same source builds for AVX-512
//    (kVL 16), AVX2 (8) and SSE (4); buffers carry slack for whole-vector reads and the
//    zero spills documented at each kernel (tests pass under ASan+UBSan with AVX-512 and
//    AVX2, and without sanitizers with SSE only).
// Measured (one core of a Zen 3 EPYC, AVX2; bench_lenet, its FMA peak 94-99 GFLOP/s in the
// same run): training 0.64-0.71 of the peak at batch 8-64 and evaluation 0.72-0.76 at
// load 0.7-2 (the best CPU-second repetitions of a scratch driver: 0.70-0.75 and
// 0.74-0.77), 7-11x PyTorch 1.13's torch_lenet.py in the same run; at load 2-3 (another
// job on the sibling hyperthread) the medians drop to 0.47-0.6. The GEMMs alone run at
// 0.80-0.95 of the peak; the rest is the pooling passes, the small linear layers and the
// data gradient's border rows (conv_dgrad_rows computes ~10% more than it needs).
// On one core of a Zen 5 EPYC (AVX-512, its FMA peak 259-266 GFLOP/s: twice Zen 3's per
// cycle), training runs at 0.59-0.63 of the peak at batch 8-64 and evaluation at 0.64-0.65
// (bench_lenet medians, the sibling core idle; lenet5_classic at batch 128: 0.51); the conv2
// kernels run at 0.70 (data gradient) to 0.84 (forward), conv1's at 0.69 (weight gradient)
// and 0.86 (forward), and the pooling passes (~9.5% of a step) and the small layers take
// the rest.
// lenet5_classic (training, batch 128, Zen 3 as above): 0.50-0.57 of the peak at
// load 1-2 with the padded rowvec rows and the channel-vector kernels, against 0.29-0.42
// with im2col for its conv2 and gemm_dot for its conv1's weight gradient; its conv2
// kernels then take ~55% of the step: the data gradient still computes 16 lanes per
// 10-wide row.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "models/layers.h"
#include "models/model.h"
#include "models/simd_width.h"

namespace wb::models {

namespace fast {

// C[m][0..N) (+)= sum_k A(m,k) * Brow_k[0..N),  m < M, k < K.
//   A(m,k) = a[m*a_rs + k*a_cs] (any strides: plain or transposed matrices);
//   Brow_k = b + (b_off ? b_off[k] : k*ldb);  C row m = c + m*ldc.
//   bias (optional) initializes row m with bias[m]; otherwise accumulate or overwrite.
//   N must be a multiple of kVL. Vector q (floats q*kVL .. q*kVL + kVL-1) of a B row is
//   read from (q / b_vpr)*b_vs + (q % b_vpr)*kVL floats after the row start: rows of b_vpr
//   contiguous vectors, b_vs floats apart. b_vs = kVL, b_vpr = 1: a contiguous row; b_vs =
//   the image width, b_vpr = output width / kVL: conv output rows read straight from the
//   input planes (b_vpr <= 3 with AVX2, 4 with AVX-512; N a multiple of b_vpr vectors).
void gemm_bcast(int M, int N, int K, const float* a, long a_rs, long a_cs, const float* b,
                const int32_t* b_off, long ldb, float* c, long ldc, const float* bias,
                bool accumulate, long b_vs = kVL, int b_vpr = 1);

// C[m][n] (+)= sum_{t < nbatch} dot(A_t row m, B_t row n) over K (a multiple of kVL).
//   A_t row m = a + t*a_bs + m*a_rs;  B_t row n = b + t*b_bs + (b_off ? b_off[n] : n*ldb),
//   its vectors along K placed as gemm_bcast's (b_vs, b_vpr; K a multiple of b_vpr vectors).
void gemm_dot(int M, int N, int nbatch, int K, const float* a, long a_bs, long a_rs, const float* b,
              long b_bs, const int32_t* b_off, long ldb, float* c, long ldc, bool accumulate,
              long b_vs = kVL, int b_vpr = 1);

// Weight gradient of an unpadded convolution whose output rows are whole vectors (the
// "rowvec" stages): for o < cout, c < cin, u, v < k,
//   dW[o][c][u][v] (+)= sum_{t < nbatch} sum_{i < ho, j < wo} dout_t[o][i*wo + j] *
//                                                             in_t[c][(i + u)*w + j + v],
//   dout_t = dout + t*dout_bs (planes of ho x wo_p), in_t = in + t*in_bs (planes of h*w,
//   ho = h - k + 1, wo = w - k + 1), dW row o = dw + o*cin*k*k. Output rows are
//   wo_p = wo rounded up to whole vectors; when wo_p > wo the columns j >= wo of dout must
//   be zero and `in` readable (finite) up to wo_p - wo floats past the last sample's planes.
// Register tiles of MR output channels x the k taps v of one (c, u) summed over the
// samples and positions: MR + k vector loads per MR*k FMAs and one horizontal sum per
// output and sample chunk (gemm_dot's tiles over (o, k) reloaded A per 3 samples and paid
// 12 horizontal sums per 288 FMAs). k > kWgradMaxK falls back to gemm_dot.
inline constexpr int kWgradMaxK = 7;
void conv_wgrad_rows(int cout, int cin, int k, int h, int w, int nbatch, const float* dout,
                     long dout_bs, const float* in, long in_bs, float* dw, bool accumulate);

// Data gradient of an unpadded convolution whose output rows are one or two vectors
// (wo = w - k + 1 <= 2 kVL, rows padded to wo_p = wo rounded up to whole vectors, their
// columns j >= wo zero; k <= kWgradMaxK, k - 1 <= kVL; conv_dgrad_rows_fits):
//   din[c][y][x] = sum_{o < cout, u, v < k} W[o][c][u][v] * dout[o][y - u][x - v]
// over the taps inside the output (ho = h - k + 1 rows of wo_p floats), din dense
// (cin x h x w), W as the layer stores it ([cout][cin][k][k]). No im2col and no col2im:
// for each input row y and tap column v, S_v[y] = sum_{o,u} W[o][c][u][v] dout[o][y-u] is a
// sum of whole aligned output rows (a register tile of k columns v x a few rows y, the
// weights broadcast), and din row y = sum_v S_v[y] shifted right by v lanes (each vector
// into itself and the next one).
// The im2col path's column GEMM (k*k rows per channel, K = cout short) and the col2im
// gather (k*k masked loads per input vector) cost about as much again as the GEMM's FMAs.
// scratch: conv_dgrad_rows_scratch() floats, zero where this function never writes (as a
// fresh Buffer is, used only by this function); din may be stored up to one vector past a
// row while rows are written in order (never past the dense planes).
bool conv_dgrad_rows_fits(int k, int wo);
size_t conv_dgrad_rows_scratch(int cout, int k, int ho, int wo);
void conv_dgrad_rows(int cout, int cin, int k, int h, int w_in, const float* w, const float* dout,
                     long dout_cs, float* scratch, float* din);

// Forward of an unpadded convolution vectorized over the output channels instead of the
// positions: no junk columns where output rows are not whole vectors (lenet5_classic's
// conv2: 10 wide rows cost 16 lanes each on the positions, 16 channels are two whole
// vectors), and the inputs are read as broadcast scalars (no im2col):
//   out[o][i*ldo + j] = bias[o] + sum_{c,u,v} W^T[(c*k + u)*k + v][o] * in[c][i + u][j + v]
// for i < ho = h - k + 1, j < wo = w - k + 1; wt = W^T, rows of round_up(cout) floats, bias
// readable up to round_up(cout) floats (the pad is unused); out channel o at o*out_cs.
// Columns j >= wo of out are not written. cout up to kCvecMaxNV vectors
// (conv_forward_cvec_fits).
inline constexpr int kCvecMaxNV = 2;
bool conv_forward_cvec_fits(int cout);
void conv_forward_cvec(int cout, int cin, int k, int h, int w, const float* in, const float* wt,
                       const float* bias, float* out, long out_cs, int ldo);

// The same forward (same arguments, same layout of wt and bias, same outputs) over vectors of
// output positions made of TWO output rows of kVL/2 columns each: lane l of row pair i (i
// even) is position (i + l / (kVL/2), l % (kVL/2)), its input two half-vector loads of rows
// i + u and i + 1 + u. For rows exactly half a vector wide (lenet5's conv2 with AVX-512, 8
// -> 16 lanes), where the positions then fill every lane while 20 channels fill 20 of 32
// (conv_forward_cvec): a tile of up to kRowpairMaxNO channel accumulators, each k a
// broadcast weight per channel. Needs 2 * wo == kVL and ho even (conv_forward_rowpair_fits).
// One core of a Zen 5 EPYC, lenet5's conv2 (10 -> 20, 12x12, k5), L1-resident: 229-232
// GFLOP/s (0.87 of the FMA peak) against conv_forward_cvec's 151-153.
bool conv_forward_rowpair_fits(int h, int w, int k);
void conv_forward_rowpair(int cout, int cin, int k, int h, int w, const float* in, const float* wt,
                          const float* bias, float* out, long out_cs, int ldo);

// Weight gradient of an unpadded convolution over vectors of output channels (the
// counterpart of conv_forward_cvec: no junk columns, no horizontal sums):
//   dW[o][c][u][v] (+)= sum_{t < nbatch} sum_{i < ho, j < wo} dout_t[o][i*ldo + j] *
//                                                              in_t[c][(i + u)*w + j + v],
//   dout_t channel o at dout + t*dout_bs + o*dout_cs, in_t = in + t*in_bs (planes of h*w),
//   dW row o = dw + o*cin*k*k. The output gradients are copied position-major, a chunk of
// kCvecWgradChunk samples at a time, into scratch (conv_wgrad_cvec_scratch() floats, any
// contents: the lanes o >= cout are never read back), which also holds dW^T.
// k <= kWgradMaxK, cout up to kCvecMaxNV vectors (conv_wgrad_cvec_fits).
inline constexpr int kCvecWgradChunk = 8;
bool conv_wgrad_cvec_fits(int k, int cout);
size_t conv_wgrad_cvec_scratch(int cout, int cin, int k, int h, int w);
void conv_wgrad_cvec(int cout, int cin, int k, int h, int w, int nbatch, const float* dout,
                     long dout_bs, long dout_cs, int ldo, const float* in, long in_bs,
                     float* scratch, float* dw, bool accumulate);

// The same weight gradient (same arguments and layout of dw) over vectors of output positions
// made of two output rows of kVL/2 columns (conv_forward_rowpair's lanes): each tile holds
// 4 output channels x the k taps v of one (c, u) in registers over the batch, every lane
// useful, and ends with one horizontal sum per weight. For lenet5's conv2 with AVX-512 (8
// wide, 20 channels: conv_wgrad_cvec fills 20 of 32 lanes). The lanes' partial sums make the
// order of the additions differ from conv_wgrad_cvec's (a sum over positions, then lanes).
// The output gradients are copied as row-pair vectors, kRowpairWgradChunk samples at a time,
// into scratch (conv_wgrad_rowpair_scratch() floats, any contents).
// Needs conv_forward_rowpair_fits and k <= kWgradMaxK (conv_wgrad_rowpair_fits).
inline constexpr int kRowpairWgradChunk = 32;
bool conv_wgrad_rowpair_fits(int h, int w, int k);
size_t conv_wgrad_rowpair_scratch(int cout, int k, int h);
void conv_wgrad_rowpair(int cout, int cin, int k, int h, int w, int nbatch, const float* dout,
                        long dout_bs, long dout_cs, int ldo, const float* in, long in_bs,
                        float* scratch, float* dw, bool accumulate);

// 64-byte aligned, zero-initialized float buffer (no per-step allocation: sized once).
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t n);
  float* data() { return p_.get(); }
  const float* data() const { return p_.get(); }
  size_t size() const { return n_; }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float, Free> p_;
  size_t n_ = 0;
};

}  // namespace fast

class FastWorkspace;

// A NetInfo compiled for the fast path: fused stages and their layouts.
class FastNet {
 public:
  explicit FastNet(const NetInfo& net);
  std::unique_ptr<FastWorkspace> make_workspace(int max_batch) const;
  // Bytes make_workspace(max_batch) allocates, without allocating (the memory estimate);
  // equals FastWorkspace::bytes() of such a workspace (tests/unit/test_scale.cpp).
  size_t workspace_bytes(int max_batch) const;

  // Mean loss; g (num_params) overwritten with the gradient. first_stage > 0: partial
  // backprop (LPP-SGD): the backward pass stops after stage first_stage's weight gradient,
  // so the parameters of earlier stages get NO gradient (their part of g is left as is).
  // Throws InternalError when
  // n exceeds the workspace's max_batch.
  double loss_grad(const float* w, const float* x, const int32_t* label, int n, float* g,
                   FastWorkspace& ws, uint64_t noise_seed, int first_stage = 0) const;
  // No dropout; any n (processed in chunks of the workspace's max_batch).
  EvalResult evaluate(const float* w, const float* x, const int32_t* label, int n,
                      FastWorkspace& ws) const;

  struct Stage {
    bool conv = false;
    int layer = -1;  // index of the conv / linear layer in NetInfo::layers
    // conv
    ConvShape cs;
    bool implicit = false;      // row-padded implicit GEMM, else explicit im2col
    bool vshift = false;        // stage 0, no padding: k column-shifted copies of the input
                                // (conv_gather), B rows at constant offsets with no junk
    bool rowvec = false;        // output rows of whole vectors read from the input planes
    int vpr = 1;                // rowvec: vectors per output row
    bool fwd_cvec = false;      // forward by conv_forward_cvec (rowvec with junk columns)
    bool fwd_rowpair = false;   // ... by conv_forward_rowpair instead (rows half a vector)
    bool wgrad_rowpair = false; // weight gradient by conv_wgrad_rowpair (rows half a vector)
    bool wgrad_cvec = false;    // weight gradient by conv_wgrad_cvec (with fwd_cvec)
    bool wgrad_rows = false;    // weight gradient by conv_wgrad_rows (rowvec, or implicit
                                // with padded rows of whole vectors)
    bool dgrad_rows = false;    // data gradient by conv_dgrad_rows (rowvec, <= 2 vectors a row)
    int wrow = 0, pp = 0;       // conv output: row stride and padded plane length
    int hp = 0, wp = 0;         // padded input plane (implicit)
    size_t in_stride = 0;       // per-sample floats of the B-rows buffer
    std::vector<int32_t> boff;  // B row offsets (cs.kdim() entries)
    bool pool = false;
    // linear
    int in = 0, out = 0, in_p = 0, out_p = 0;
    // both
    bool relu = false;
    int drop_layer = -1;  // dropout / dropout2d layer index (its mask stream), or -1
    double drop_p = 0;
    int oc = 0, oh = 0, ow = 0;  // dense output (after pool)
    size_t act_stride = 0;       // per-sample floats of the output activation (padded)
  };
  const std::vector<Stage>& stages() const { return stages_; }

 private:
  void forward(const float* w, const float* x, int n, bool train, uint64_t noise_seed,
               FastWorkspace& ws) const;

  NetInfo net_;
  std::vector<Stage> stages_;
  size_t in0_ = 0;  // floats per input sample
};

class FastWorkspace : public Workspace {
 public:
  const FastNet* owner = nullptr;  // the plan whose layout the buffers follow
  int max_batch = 0;
  size_t bytes() const;  // every buffer's size
  struct StageBufs {
    fast::Buffer in;           // B rows (conv: padded input or im2col) / padded input copy (linear)
    fast::Buffer out;          // conv output [cout][pp], one sample (forward scratch)
    fast::Buffer dout;         // gradient of the conv output [n][cout][pp]
    fast::Buffer act;          // dense output activation [n][act_stride]
    fast::Buffer dact;         // its gradient
    fast::Buffer dcol;         // conv data-gradient scratch, one sample (dgrad_rows: its
                               // zero-padded output gradient)
    fast::Buffer dpad;         // implicit conv data-gradient scratch, one sample
    fast::Buffer wpack;        // linear weights packed [out][in_p]; conv_forward_cvec's W^T
    fast::Buffer dwpack;       // linear weight gradient [out][in_p]; conv_wgrad_cvec scratch
    std::vector<int32_t> idx;  // max-pool argmax into the conv output plane
    std::vector<uint8_t> keep;  // dropout masks
    std::vector<double> dbias;  // conv bias-gradient accumulators
  };
  std::vector<StageBufs> bufs;
};

}  // namespace wb::models
