// FastNet: the LeNet-family net on the fast kernels of models/layers_fast.cpp (their plan per
// layer, workspaces, the passes, and the fused pooling / dropout / ReLU stages); see
// models/layers_fast.h.
#include "models/layers_fast.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "core/error.h"
#include "models/layers_fast_simd.h"

namespace wb::models {

using fast::kVL;
using fast::round_up;

// Padded rowvec rows: at most this many times the real output columns. At 2.0, with AVX-512
// (kVL 16), lenet5's conv2 (8 wide -> 16) takes the padded rowvec stage (forward and weight
// gradient over channel vectors, conv_dgrad_rows) instead of im2col. bench_lenet on a Zen 5
// in alternating runs: training 0.399-0.418 of the FMA peak against 0.381-0.400 with 1.6, evaluation
// 0.481-0.490 against 0.542-0.558 (conv_forward_cvec is slower than im2col + gemm_bcast there,
// but the training pass gains more than that); lenet_sweep.json at -n 2: 61.6 s against
// 64.9 s. AVX2 and SSE builds take no other path (lenet5's rows are whole vectors there;
// lenet5_classic's conv2, 10 -> 16 or 12, is within 1.6). Its forward and data gradient put
// two rows in a vector (conv_forward_rowpair, dgrad_rowpair_k): training 0.48-0.50,
// evaluation 0.59-0.61, lenet_sweep.json 53.6 s.
constexpr double kRowvecMaxPad = 2.0;

FastNet::FastNet(const NetInfo& net) : net_(net) {
  const auto& L = net_.layers;
  in0_ = L.at(0).in_size();
  size_t l = 0;
  while (l < L.size()) {
    const LayerInfo& li = L[l];
    Stage st;
    st.layer = static_cast<int>(l);
    ++l;
    auto take = [&](LayerKind k) {
      if (l < L.size() && L[l].spec.kind == k) {
        ++l;
        return true;
      }
      return false;
    };
    if (li.spec.kind == LayerKind::kConv) {
      st.conv = true;
      st.cs = li.conv();
      // Post-ops in any order, each at most once: they commute (see layers_fast.h).
      for (bool more = true; more;) {
        more = false;
        if (!st.pool && take(LayerKind::kMaxPool2)) st.pool = more = true;
        if (!st.relu && take(LayerKind::kRelu)) st.relu = more = true;
        if (st.drop_layer < 0 && l < L.size() && L[l].spec.kind == LayerKind::kDropout2d) {
          st.drop_layer = static_cast<int>(l);
          st.drop_p = L[l].spec.p;
          ++l;
          more = true;
        }
      }
      const ConvShape& cs = st.cs;
      const int ho = cs.ho(), wo = cs.wo();
      st.hp = cs.h + 2 * cs.pad;
      st.wp = cs.w + 2 * cs.pad;
      // Output rows of whole vectors read from the input planes when the register tiles
      // allow (no copy, no junk); else implicit GEMM when the junk columns cost at most
      // 25% extra work.
      // Rows that are not whole vectors are padded to whole vectors (junk columns, like the
      // implicit GEMM's) when the input has slack for the reads past its last row (not the
      // caller's batch: stage 0) and the junk is cheaper than im2col: lenet5_classic's conv2
      // (10 wide -> 16 with AVX2), whose 150 x 104 column matrix per sample (8 MB at batch
      // 128) cost more to write and stream back for the weight gradient than 60% junk FMAs.
      const int wo_p = static_cast<int>(round_up(wo));
      const bool rowvec = cs.pad == 0 && wo_p / kVL <= fast::kBcastRowNV &&
                          (wo == wo_p || (!stages_.empty() && wo_p <= kRowvecMaxPad * wo));
      // The first stage cannot read past its rows (the caller's batch has no slack), so rows
      // that are not whole vectors cannot be padded to them (rowvec). Instead of the implicit
      // GEMM's junk columns (lenet5's conv1 with AVX-512 or SSE: 24 of 28 columns real, its
      // forward and weight gradient doing 16.7% more FMAs than the real columns need) it
      // copies each input plane k times, copy v shifted left by v columns and cut to wo: B row
      // (c, u, v) is then copy (c, v) from row u on, the output positions p = i*wo + j dense.
      // The copies cost k times the input (13 KB a sample for lenet5) against 9,000 vector
      // FMAs a sample in conv1's forward alone.
      st.vshift = stages_.empty() && cs.pad == 0 && !rowvec && wo < cs.w;
      st.implicit =
          !rowvec && !st.vshift && static_cast<double>(ho) * st.wp <= 1.25 * ho * wo;
      const int kk = cs.k * cs.k;
      st.boff.resize(cs.kdim());
      if (st.vshift) {
        st.wrow = wo;
        st.pp = static_cast<int>(round_up(static_cast<size_t>(ho) * wo));
        const int copy = cs.h * wo;  // one shifted plane
        for (int c = 0; c < cs.cin; ++c)
          for (int u = 0; u < cs.k; ++u)
            for (int v = 0; v < cs.k; ++v)
              st.boff[c * kk + u * cs.k + v] = (c * cs.k + v) * copy + u * wo;
        // B rows read pp floats (up to pp - ho*wo past the last copy: slack, zero).
        st.in_stride = round_up(std::max<size_t>(static_cast<size_t>(st.boff.back()) + st.pp,
                                                 static_cast<size_t>(cs.cin) * cs.k * copy));
      } else if (st.implicit) {
        st.wrow = st.wp;
        st.pp = static_cast<int>(round_up(static_cast<size_t>(ho) * st.wp));
        for (int c = 0; c < cs.cin; ++c)
          for (int u = 0; u < cs.k; ++u)
            for (int v = 0; v < cs.k; ++v)
              st.boff[c * kk + u * cs.k + v] = c * st.hp * st.wp + u * st.wp + v;
        // The last B row reads pp floats from its offset: slack after the planes.
        st.in_stride = round_up(std::max<size_t>(static_cast<size_t>(st.boff.back()) + st.pp,
                                                 static_cast<size_t>(cs.cin) * st.hp * st.wp));
        // Padded rows of whole vectors: the padded planes are an unpadded convolution's
        // input for conv_wgrad_rows (its rows read past a plane into the slack above).
        st.wgrad_rows = st.wp == wo_p && cs.k <= fast::kWgradMaxK;
      } else if (rowvec) {
        st.rowvec = st.wgrad_rows = true;
        st.vpr = wo_p / kVL;
        // Junk columns but channels of whole vectors (or fewer lanes lost to their padding):
        // the forward runs over channel vectors instead (lenet5_classic's conv2: 100 x 16
        // lanes a channel tile instead of 160 x 16).
        st.fwd_cvec =
            wo != wo_p && fast::conv_forward_cvec_fits(cs.cout) &&
            static_cast<size_t>(wo) * round_up(cs.cout) < static_cast<size_t>(wo_p) * cs.cout;
        st.wgrad_cvec = st.fwd_cvec && fast::conv_wgrad_cvec_fits(cs.k, cs.cout);
        // Rows of exactly half a vector: the forward fills every lane with two rows instead.
        st.fwd_rowpair = st.fwd_cvec && fast::conv_forward_rowpair_fits(cs.h, cs.w, cs.k);
        st.wgrad_rowpair = st.fwd_rowpair && fast::conv_wgrad_rowpair_fits(cs.h, cs.w, cs.k);
        st.dgrad_rows = fast::conv_dgrad_rows_fits(cs.k, wo);
        st.wrow = wo_p;
        st.pp = ho * wo_p;
        for (int c = 0; c < cs.cin; ++c)
          for (int u = 0; u < cs.k; ++u)
            for (int v = 0; v < cs.k; ++v)
              st.boff[c * kk + u * cs.k + v] = (c * cs.h + u) * cs.w + v;
        st.in_stride = 0;  // no B buffer: the GEMMs read the input planes
      } else {
        st.wrow = wo;
        st.pp = static_cast<int>(round_up(static_cast<size_t>(ho) * wo));
        for (int k = 0; k < cs.kdim(); ++k) st.boff[k] = k * st.pp;
        st.in_stride = static_cast<size_t>(cs.kdim()) * st.pp;
      }
      st.oc = cs.cout;
      st.oh = st.pool ? ho / 2 : ho;
      st.ow = st.pool ? wo / 2 : wo;
      st.act_stride = round_up(static_cast<size_t>(st.oc) * st.oh * st.ow);
      WB_ASSERT(stages_.empty() || stages_.back().conv,
                "fast path: a convolution after a linear layer is not supported");
    } else if (li.spec.kind == LayerKind::kLinear) {
      st.in = li.c;
      st.out = li.spec.out;
      st.in_p = static_cast<int>(round_up(st.in));
      st.out_p = static_cast<int>(round_up(st.out));
      for (bool more = true; more;) {
        more = false;
        if (!st.relu && take(LayerKind::kRelu)) st.relu = more = true;
        if (st.drop_layer < 0 && l < L.size() && L[l].spec.kind == LayerKind::kDropout) {
          st.drop_layer = static_cast<int>(l);
          st.drop_p = L[l].spec.p;
          ++l;
          more = true;
        }
      }
      st.oc = st.out, st.oh = 1, st.ow = 1;
      st.act_stride = st.out_p;
      WB_ASSERT(stages_.empty() || stages_.back().act_stride == static_cast<size_t>(st.in_p),
                "fast path: linear input stride mismatch");
    } else {
      WB_ASSERT(false, "fast path: layer " + std::to_string(l - 1) + " of " + net_.spec.name +
                           " must follow a conv or linear layer");
    }
    stages_.push_back(std::move(st));
  }
  const Stage& last = stages_.back();
  WB_ASSERT(!last.conv && !last.relu && last.drop_layer < 0,
            "fast path: the network must end with a plain Linear layer (the logits)");
}

namespace {
// A conv stage's data-gradient scratch: the zero-padded output gradient of conv_dgrad_rows,
// else one sample's column gradient with kVL floats of slack on both sides (col2im).
size_t dcol_floats(const FastNet::Stage& st) {
  if (st.dgrad_rows)
    return fast::conv_dgrad_rows_scratch(st.cs.cout, st.cs.k, st.cs.ho(), st.cs.wo());
  return static_cast<size_t>(st.cs.kdim()) * st.pp + 2 * kVL;
}
// conv_forward_cvec's W^T (kdim rows of cout rounded up to whole vectors) and the bias as
// one more such row.
size_t cvec_pack_floats(const FastNet::Stage& st) {
  return (static_cast<size_t>(st.cs.kdim()) + 1) * round_up(st.cs.cout);
}
size_t wgrad_scratch_floats(const FastNet::Stage& st) {
  if (st.wgrad_rowpair) return fast::conv_wgrad_rowpair_scratch(st.cs.cout, st.cs.k, st.cs.h);
  return fast::conv_wgrad_cvec_scratch(st.cs.cout, st.cs.cin, st.cs.k, st.cs.h, st.cs.w);
}
}  // namespace

std::unique_ptr<FastWorkspace> FastNet::make_workspace(int max_batch) const {
  WB_ASSERT(max_batch >= 1, "make_workspace: max_batch must be >= 1");
  auto ws = std::make_unique<FastWorkspace>();
  ws->owner = this;
  ws->max_batch = max_batch;
  const size_t B = static_cast<size_t>(max_batch);
  ws->bufs.resize(stages_.size());
  for (size_t s = 0; s < stages_.size(); ++s) {
    const Stage& st = stages_[s];
    auto& b = ws->bufs[s];
    // Slack: the vectorized pooling reads (and zero-writes) up to a few vectors past
    // a row, plane or the last sample (conv_post_forward / conv_post_backward).
    const size_t slack = 4 * kVL + 2 * static_cast<size_t>(st.wrow) +
                         2 * kVL * ((static_cast<size_t>(st.ow) + kVL - 1) / kVL);
    b.act = fast::Buffer(B * st.act_stride + slack);
    b.dact = fast::Buffer(B * st.act_stride + slack);
    if (st.drop_layer >= 0) b.keep.resize(B * (st.conv ? st.oc : st.out));
    if (st.conv) {
      const size_t plane = static_cast<size_t>(st.cs.cout) * st.pp;
      if (!st.rowvec) b.in = fast::Buffer(B * st.in_stride + 2 * kVL + 8);  // im2col store spill
      // One sample's conv output: the pooling consumes it right after its GEMM and the
      // backward never reads it, so it stays in L1 (a batch of them streamed ~1.5 MB
      // through L2 at batch 64 for lenet5's conv1).
      b.out = fast::Buffer(plane + slack);
      b.dout = fast::Buffer(B * plane + slack);
      b.dbias.assign(st.cs.cout, 0.0);
      if (st.pool) b.idx.resize(B * st.oc * st.oh * st.ow + slack);
      if (s > 0) {
        b.dcol = fast::Buffer(dcol_floats(st));
        if (st.implicit) b.dpad = fast::Buffer(st.in_stride);
      }
      if (st.fwd_cvec) b.wpack = fast::Buffer(cvec_pack_floats(st));
      if (st.wgrad_cvec || st.wgrad_rowpair) b.dwpack = fast::Buffer(wgrad_scratch_floats(st));
    } else {
      if (s == 0 && in0_ != static_cast<size_t>(st.in_p)) b.in = fast::Buffer(B * st.in_p);
      b.wpack = fast::Buffer(static_cast<size_t>(st.out) * st.in_p);
      b.dwpack = fast::Buffer(static_cast<size_t>(st.out) * st.in_p);
    }
  }
  return ws;
}

size_t FastNet::workspace_bytes(int max_batch) const {
  // The sizes make_workspace allocates, term by term.
  const size_t B = static_cast<size_t>(std::max(1, max_batch));
  size_t floats = 0, other = 0;
  for (size_t s = 0; s < stages_.size(); ++s) {
    const Stage& st = stages_[s];
    const size_t slack = 4 * kVL + 2 * static_cast<size_t>(st.wrow) +
                         2 * kVL * ((static_cast<size_t>(st.ow) + kVL - 1) / kVL);
    floats += 2 * (B * st.act_stride + slack);
    if (st.drop_layer >= 0) other += B * static_cast<size_t>(st.conv ? st.oc : st.out);
    if (st.conv) {
      const size_t plane = static_cast<size_t>(st.cs.cout) * st.pp;
      floats += (st.rowvec ? 0 : B * st.in_stride + 2 * kVL + 8) + (plane + slack) +
                (B * plane + slack);
      other += sizeof(double) * static_cast<size_t>(st.cs.cout);
      if (st.pool) other += sizeof(int32_t) * (B * st.oc * st.oh * st.ow + slack);
      if (s > 0) {
        floats += dcol_floats(st);
        if (st.implicit) floats += st.in_stride;
      }
      if (st.fwd_cvec) floats += cvec_pack_floats(st);
      if (st.wgrad_cvec || st.wgrad_rowpair) floats += wgrad_scratch_floats(st);
    } else {
      if (s == 0 && in0_ != static_cast<size_t>(st.in_p)) floats += B * st.in_p;
      floats += 2 * static_cast<size_t>(st.out) * st.in_p;
    }
  }
  return sizeof(float) * floats + other;
}

size_t FastWorkspace::bytes() const {
  size_t b = 0;
  for (const auto& s : bufs) {
    b +=
        sizeof(float) * (s.in.size() + s.out.size() + s.dout.size() + s.act.size() + s.dact.size() +
                         s.dcol.size() + s.dpad.size() + s.wpack.size() + s.dwpack.size());
    b += sizeof(int32_t) * s.idx.size() + s.keep.size() + sizeof(double) * s.dbias.size();
  }
  return b;
}

namespace {

// Input sample -> B rows of a conv stage (padded plane copy, or im2col). Positions that
// stay zero (padding, slack, out-of-image taps) were zeroed at workspace creation and
// are never written, so nothing is cleared per step.
// in_slack: `in` may be read up to kVL floats past the sample (a stage's activation
// buffer has slack; the caller's batch does not).
void conv_gather(const FastNet::Stage& st, const float* in, bool in_slack, float* brows) {
  using namespace fast;
  const ConvShape& cs = st.cs;
  if (st.vshift) {  // copy (c, v): rows of plane c from column v, wo columns
    const int wo = cs.wo();
    for (int c = 0; c < cs.cin; ++c)
      for (int v = 0; v < cs.k; ++v) {
        const float* src = in + static_cast<size_t>(c) * cs.h * cs.w + v;
        float* dst = brows + static_cast<size_t>(c * cs.k + v) * cs.h * wo;
        if (wo < kVL) {
          for (int y = 0; y < cs.h; ++y)
            std::memcpy(dst + y * wo, src + y * cs.w, sizeof(float) * wo);
          continue;
        }
        // Whole vectors inside the source row (v + wo <= w: nothing read past the sample);
        // the last one overlaps the one before when wo is not a multiple of kVL.
        for (int y = 0; y < cs.h; ++y) {
          const float* s = src + y * cs.w;
          float* d = dst + y * wo;
          int j = 0;
          for (; j + kVL <= wo; j += kVL) vstore(d + j, vload(s + j));
          if (j < wo) vstore(d + wo - kVL, vload(s + wo - kVL));
        }
      }
    return;
  }
  if (st.implicit) {
    for (int c = 0; c < cs.cin; ++c)
      for (int y = 0; y < cs.h; ++y)
        std::memcpy(brows + static_cast<size_t>(c) * st.hp * st.wp + (y + cs.pad) * st.wp + cs.pad,
                    in + (static_cast<size_t>(c) * cs.h + y) * cs.w, sizeof(float) * cs.w);
    return;
  }
  const int ho = cs.ho(), wo = cs.wo();
  if (cs.pad == 0 && in_slack) {
    // Whole vectors: each store may spill up to kVL-1 floats past its output row, into
    // the next row (written next: rows go in order), the zero-tap-free padding of this
    // B row (junk columns: any finite value is fine) or the workspace slack.
    for (int c = 0; c < cs.cin; ++c)
      for (int u = 0; u < cs.k; ++u)
        for (int v = 0; v < cs.k; ++v) {
          float* row = brows + static_cast<size_t>((c * cs.k + u) * cs.k + v) * st.pp;
          const float* src = in + (static_cast<size_t>(c) * cs.h + u) * cs.w + v;
          if (wo <= 8) {
            for (int i = 0; i < ho; ++i) copy8(row + i * wo, src + i * cs.w);
          } else {
            for (int i = 0; i < ho; ++i)
              for (int j = 0; j < wo; j += kVL) vstore(row + i * wo + j, vload(src + i * cs.w + j));
          }
        }
    return;
  }
  for (int c = 0; c < cs.cin; ++c)
    for (int u = 0; u < cs.k; ++u)
      for (int v = 0; v < cs.k; ++v) {
        float* row = brows + static_cast<size_t>((c * cs.k + u) * cs.k + v) * st.pp;
        const int j0 = std::max(0, cs.pad - v), j1 = std::min(wo, cs.w + cs.pad - v);
        if (j1 <= j0) continue;
        for (int i = 0; i < ho; ++i) {
          const int yi = i + u - cs.pad;
          if (yi < 0 || yi >= cs.h) continue;
          const float* src = in + (static_cast<size_t>(c) * cs.h + yi) * cs.w + (v - cs.pad);
          float* dst = row + i * wo;
          for (int j = j0; j < j1; ++j) dst[j] = src[j];
        }
      }
}

// col2im for input channels [c0, c1): dcol holds their B-row gradients (row
// (c - c0)*k*k + u*k + v). Called per channel right after its GEMM so the column
// gradient (k*k rows) stays in L1.
//
// Kernel sizes up to kWgradMaxK and rows of up to kCol2imChunks vectors take col2im_k: the
// taps unrolled, one accumulator per kernel row u (a single chain of k*k dependent adds was
// latency-bound: 3 cycles a tap), channels and rows outermost so that a row's last vector
// may be stored whole, spilling into the next row (written after it).
constexpr int kCol2imChunks = 4;
template <int K>
void col2im_k(const FastNet::Stage& st, const float* dcol, int c0, int c1, float* din) {
  using namespace fast;
  const ConvShape& cs = st.cs;
  const int ho = cs.ho(), wo = cs.wo(), nch = (cs.w + kVL - 1) / kVL;
  const long dense = static_cast<long>(cs.cin) * cs.h * cs.w;
  const Perms& P = perms();
  vi mask[kCol2imChunks][K];
  for (int ch = 0; ch < nch; ++ch)
    for (int v = 0; v < K; ++v) {
      const vi j = ch * kVL + cs.pad - v + P.lane;
      mask[ch][v] = (j >= 0) & (j < wo) & (ch * kVL + P.lane < cs.w);
    }
  for (int c = c0; c < c1; ++c)
    for (int y = 0; y < cs.h; ++y)
      for (int ch = 0; ch < nch; ++ch) {
        const int x0 = ch * kVL;
        vf acc[K];
#pragma GCC unroll 8
        for (int u = 0; u < K; ++u) {
          acc[u] = vf{};
          const int i = y + cs.pad - u;
          if (i < 0 || i >= ho) continue;
          const float* rows = dcol + static_cast<size_t>(((c - c0) * K + u) * K) * st.pp +
                              i * st.wrow + x0 + cs.pad;
#pragma GCC unroll 8
          for (int v = 0; v < K; ++v) {
            const vf t = vload(rows + static_cast<size_t>(v) * st.pp - v);
            acc[u] += mask[ch][v] ? t : vf{};
          }
        }
#pragma GCC unroll 8
        for (int u = 1; u < K; ++u) acc[0] += acc[u];
        const long at = (static_cast<long>(c) * cs.h + y) * cs.w + x0;
        float* dst = din + at;
        if (x0 + kVL <= cs.w || at + kVL <= dense) {
          vstore(dst, acc[0]);
        } else {
          for (int x = 0; x < kVL && x0 + x < cs.w; ++x) dst[x] = acc[0][x];
        }
      }
}

void conv_col2im(const FastNet::Stage& st, const float* dcol, int c0, int c1, float* din) {
  const ConvShape& cs = st.cs;
  if (cs.k <= fast::kWgradMaxK && cs.w <= kCol2imChunks * fast::kVL) {
    fast::dispatch<fast::kWgradMaxK>(cs.k, [&](auto k_c) {
      col2im_k<decltype(k_c)::value>(st, dcol, c0, c1, din);
    });
    return;
  }
  // col2im as a gather: each input row is summed in registers from the (u, v) shifted
  // column rows, din[c][y][x] = sum_{u,v} dcol[(c,u,v)][(y+pad-u)*wo + x+pad-v] over the
  // valid taps (lane masks per v). A scatter-add (din[..] += dcol[..] per tap) instead
  // read-modify-writes overlapping, misaligned vectors and stalls on store forwarding.
  // dcol has kVL floats of slack before and after (reads of masked-out lanes).
  using namespace fast;
  const int ho = cs.ho(), wo = cs.wo();
  WB_ASSERT(cs.k <= 32, "fast path: conv kernel larger than 32");
  const Perms& P = perms();
  const bool one_chunk = cs.w <= kVL;
  for (int x0 = 0; x0 < cs.w; x0 += kVL) {
    vi mask[32];
    for (int v = 0; v < cs.k; ++v) {
      const vi j = x0 + cs.pad - v + P.lane;
      mask[v] = (j >= 0) & (j < wo) & (x0 + P.lane < cs.w);
    }
    for (int c = c0; c < c1; ++c)
      for (int y = 0; y < cs.h; ++y) {
        vf acc{};
        for (int u = 0; u < cs.k; ++u) {
          const int i = y + cs.pad - u;
          if (i < 0 || i >= ho) continue;
          const float* rows = dcol + static_cast<size_t>(((c - c0) * cs.k + u) * cs.k) * st.pp +
                              i * st.wrow + x0 + cs.pad;
          for (int v = 0; v < cs.k; ++v) {
            const vf t = vload(rows + static_cast<size_t>(v) * st.pp - v);
            acc += mask[v] ? t : vf{};
          }
        }
        float* dst = din + (static_cast<size_t>(c) * cs.h + y) * cs.w + x0;
        if (one_chunk) {
          vstore(dst, acc);  // spills into the next row / channel / sample: written after
        } else {
          for (int x = 0; x < kVL && x0 + x < cs.w; ++x) dst[x] = acc[x];
        }
      }
  }
}

// Gradient of the B rows (one sample, dcol = W^T dout) -> gradient of the dense input.
void conv_scatter(const FastNet::Stage& st, const float* dcol, float* dpad, float* din) {
  const ConvShape& cs = st.cs;
  const int kd = cs.kdim();
  if (st.implicit) {
    std::memset(din, 0, sizeof(float) * cs.cin * cs.h * cs.w);
    std::memset(dpad, 0, sizeof(float) * st.in_stride);
    for (int k = 0; k < kd; ++k) {
      float* dst = dpad + st.boff[k];
      const float* src = dcol + static_cast<size_t>(k) * st.pp;
      for (int p = 0; p < st.pp; p += kVL)
        for (int i = 0; i < kVL; ++i) dst[p + i] += src[p + i];
    }
    for (int c = 0; c < cs.cin; ++c)
      for (int y = 0; y < cs.h; ++y)
        std::memcpy(din + (static_cast<size_t>(c) * cs.h + y) * cs.w,
                    dpad + static_cast<size_t>(c) * st.hp * st.wp + (y + cs.pad) * st.wp + cs.pad,
                    sizeof(float) * cs.w);
    return;
  }
  conv_col2im(st, dcol, 0, cs.cin, din);
}

// Pooling of conv outputs whose rows are half a vector at a stride of one vector (lenet5's
// conv2 with AVX-512: 8 real columns of 16) in groups of four pooled rows: 4 x kVL/4 pooled
// values are one whole vector. The pass per pooled row used a quarter of its lanes (4 of
// 16); the groups made a lenet5 training step at batch 32 ~3% faster (bench_lenet, AVX-512).
// Layout of one group g (pooled rows 4g .. 4g + 3): conv rows 8g + 2k (top) and 8g + 2k + 1
// (bottom) of pooled row 4g + k, lane l of a result = pooled row k = l / (kVL/4), column
// j = l % (kVL/4) (the true order: the dense act layout, no scramble).
bool pool_quad(const FastNet::Stage& st) {
  return st.pool && st.wrow == fast::kVL && 4 * st.ow == fast::kVL && st.oh % 4 == 0;
}
namespace quad {
using fast::kVL;
constexpr int Q = kVL / 4, H = kVL / 2;
struct EvenOddIdx {  // (ra, rb) -> even columns of ra, of rb, then odd columns of ra, of rb
  static constexpr int at(size_t i) {
    const int l = static_cast<int>(i) % H, odd = static_cast<int>(i) / H;
    return (l < Q ? 2 * l : kVL + 2 * (l - Q)) + odd;
  }
};
struct LowHalvesIdx {  // lanes 0 .. H-1 of a, then of b
  static constexpr int at(size_t i) { return i < H ? static_cast<int>(i) : kVL + static_cast<int>(i) - H; }
};
struct HighHalvesIdx {  // lanes H .. kVL-1 of a, then of b
  static constexpr int at(size_t i) { return LowHalvesIdx::at(i) + H; }
};
template <int K>
struct RowIdx {  // (e0, e1) -> conv row of pooled row K: column x = 2j + e from e_e[K Q + j]
  static constexpr int at(size_t i) {
    return i < H ? (i % 2 ? kVL : 0) + K * Q + static_cast<int>(i) / 2 : 0;
  }
};
// The windows' left (even) and right (odd) columns of the conv rows o, o + 2 wr, o + 4 wr,
// o + 6 wr: lanes k Q .. k Q + Q - 1 hold row o + 2k wr.
inline void even_odd(const float* o, int wr, fast::vf& even, fast::vf& odd) {
  using namespace fast;
  const vf a01 = permute2<EvenOddIdx>(vload(o), vload(o + 2 * wr), Lanes{});
  const vf a23 = permute2<EvenOddIdx>(vload(o + 4 * wr), vload(o + 6 * wr), Lanes{});
  even = permute2<LowHalvesIdx>(a01, a23, Lanes{});
  odd = permute2<HighHalvesIdx>(a01, a23, Lanes{});
}
}  // namespace quad

// Fused max-pool / dropout2d scale / ReLU on one sample's conv output.
// Vectorized over kVL output columns and branch-free: on real data the argmax is
// unpredictable, and a mispredicted branch per window cost more than the convolution.
// Tie-breaking = PyTorch's row-major `val > maxval` scan (the first maximum wins): pairs
// are compared within each row first, then the two rows, which keeps that order.
// Reads run past the row end (junk lanes, never stored); the buffers have slack for it.
void conv_post_forward(const FastNet::Stage& st, const float* out, float* act, int32_t* idx,
                       const uint8_t* keep) {
  using namespace fast;
  const float keep_scale = static_cast<float>(1.0 / (1.0 - st.drop_p));
  const int plane = st.oh * st.ow, wr = st.wrow, ow = st.ow, dense = st.oc * plane;
  const bool relu = st.relu, quad = pool_quad(st);
  const Perms& P = perms();
  for (int c = 0; c < st.oc; ++c) {
    const float s = keep ? (keep[c] ? keep_scale : 0.0f) : 1.0f;
    const float* o = out + static_cast<size_t>(c) * st.pp;
    float* a = act + c * plane;
    if (!st.pool) {
      for (int i = 0; i < st.oh; ++i)
        for (int j = 0; j < ow; ++j) {
          const float v = o[i * wr + j] * s;
          a[i * ow + j] = relu ? (v > 0.0f ? v : 0.0f) : v;
        }
      continue;
    }
    int32_t* ix = idx + c * plane;
    if (quad) {
      // Same comparisons in the same order as the rows below (tie-breaking, NaN), four pooled
      // rows a vector.
      const vi q = (P.lane / quad::Q) * (2 * wr) + (P.lane % quad::Q) * 2;  // top-left corner
      for (int g = 0; g < st.oh / 4; ++g) {
        const float* og = o + 8 * g * wr;
        vf x0, x1, y0, y1;
        quad::even_odd(og, wr, x0, x1);
        quad::even_odd(og + wr, wr, y0, y1);
        const vi c0 = x1 > x0, c1 = y1 > y0;
        const vf h0 = c0 ? x1 : x0, h1 = c1 ? y1 : y0;
        const vi cv = h1 > h0;
        vf m = (cv ? h1 : h0) * s;
        if (relu) m = m > vf{} ? m : vf{};
        const vi off = cv ? wr - c1 : -c0;
        vstore(a + 4 * g * ow, m);
        vstore_i(ix + 4 * g * ow, q + 8 * g * wr + off);
      }
      continue;
    }
    for (int i = 0; i < st.oh; ++i) {
      const float* r0 = o + 2 * i * wr;
      const float* r1 = r0 + wr;
      const int q0 = 2 * i * wr;
      for (int j0 = 0; j0 < ow; j0 += kVL) {
        const vf a0 = vload(r0 + 2 * j0), a1 = vload(r0 + 2 * j0 + kVL);
        const vf b0 = vload(r1 + 2 * j0), b1 = vload(r1 + 2 * j0 + kVL);
        // Scrambled column order (scr_col), undone on m and at below.
        const vf x0 = permute2<ScrEvenIdx>(a0, a1, Lanes{}), x1 = permute2<ScrOddIdx>(a0, a1, Lanes{});
        const vf y0 = permute2<ScrEvenIdx>(b0, b1, Lanes{}), y1 = permute2<ScrOddIdx>(b0, b1, Lanes{});
        const vi c0 = x1 > x0, c1 = y1 > y0;  // -1 where the right column wins
        const vf h0 = c0 ? x1 : x0, h1 = c1 ? y1 : y0;
        const vi cv = h1 > h0;  // -1 where the lower row wins
        vf m = (cv ? h1 : h0) * s;
        if (relu) m = m > vf{} ? m : vf{};
        const vi off = cv ? wr - c1 : -c0;  // 0, 1, wr or wr + 1
        const vi at = permute1<UnscrambleIdx>(q0 + 2 * (j0 + P.scr_col) + off);
        m = permute1<UnscrambleIdx>(m);
        // A whole-vector store may run past the row into the next row or channel (written
        // after this one); only the sample's last stores, which would run past its dense
        // output, go lane by lane. (Lane by lane everywhere cost conv2 of lenet5, 4 wide,
        // about as much as its pooling work.)
        if (j0 + kVL <= ow || c * plane + i * ow + j0 + kVL <= dense) {
          vstore(a + i * ow + j0, m);
          vstore_i(ix + i * ow + j0, at);
        } else {
          for (int j = j0; j < ow; ++j) {
            a[i * ow + j] = m[j - j0];
            ix[i * ow + j] = at[j - j0];
          }
        }
      }
    }
  }
}

// Backward of conv_post_forward: dact -> dout, db += sums. Every 2x2 window is written
// whole (value at the argmax, zeros elsewhere), so dout needs no clearing. The stores run
// up to 2 kVL floats from a row start: lanes past the row are zero, and what they spill
// into (the next row, plane or sample) is written after, or is junk/slack that must be
// zero anyway.
void conv_post_backward(const FastNet::Stage& st, const float* act, const float* dact,
                        const int32_t* idx, const uint8_t* keep, float* dout, double* db) {
  using namespace fast;
  const float keep_scale = static_cast<float>(1.0 / (1.0 - st.drop_p));
  const int plane = st.oh * st.ow, wr = st.wrow, ow = st.ow;
  const bool relu = st.relu, quad = pool_quad(st);
  const Perms& P = perms();
  for (int c = 0; c < st.oc; ++c) {
    const float s = keep ? (keep[c] ? keep_scale : 0.0f) : 1.0f;
    const float* a = act + c * plane;
    const float* da = dact + c * plane;
    float* d = dout + static_cast<size_t>(c) * st.pp;
    if (!st.pool) {
      float bsum = 0.0f;
      for (int i = 0; i < st.oh; ++i)
        for (int j = 0; j < ow; ++j) {
          const int k = i * ow + j;
          const float gk = (relu && !(a[k] > 0.0f)) ? 0.0f : da[k] * s;
          d[i * wr + j] = gk;
          bsum += gk;
        }
      db[c] += bsum;
      continue;
    }
    const int32_t* ix = idx + c * plane;
    vf bsum{};
    if (quad) {
      // conv_post_forward's groups of four pooled rows: each conv row a whole-vector store
      // (its columns past the real half zero), every row of the plane written.
      const vi q = (P.lane / quad::Q) * (2 * wr) + (P.lane % quad::Q) * 2;
      const vi real = P.lane < quad::H;
      for (int g = 0; g < st.oh / 4; ++g) {
        const int k0 = 4 * g * ow;
        vi live = ~vi{};  // all lanes
        if (relu) live = vload(a + k0) > vf{};
        const vf gk = live ? vload(da + k0) * s : vf{};
        bsum += gk;
        const vi off = vload_i(ix + k0) - (q + 8 * g * wr);
        const vf e0 = off == 0 ? gk : vf{}, e1 = off == 1 ? gk : vf{};
        const vf f0 = off == wr ? gk : vf{}, f1 = off == wr + 1 ? gk : vf{};
        float* dg = d + 8 * g * wr;
        [&]<size_t... K>(std::index_sequence<K...>) {
          ((vstore(dg + 2 * K * wr, real ? permute2<quad::RowIdx<K>>(e0, e1, Lanes{}) : vf{}),
            vstore(dg + (2 * K + 1) * wr, real ? permute2<quad::RowIdx<K>>(f0, f1, Lanes{}) : vf{})),
           ...);
        }(std::make_index_sequence<4>{});
      }
      db[c] += hsum(bsum);
      continue;
    }
    // Rows wider than one vector: the upper row's last stores spill into the lower row,
    // so the lower row is written after the whole upper one. Rows of up to kRowChunks
    // vectors keep their gradients and offsets in registers for that; wider rows compute
    // them again in a second pass.
    constexpr int kRowChunks = 4;
    const int nch = (ow + kVL - 1) / kVL;
    if (nch == 1) {
      // One vector a row (lenet5's conv1, 12 pooled columns): the loop below with its
      // arrays in registers, the upper row's stores before the lower row's.
      const vi in_row = P.lane < ow;
      for (int i = 0; i < st.oh; ++i) {
        const int q0 = 2 * i * wr, k0 = i * ow;
        vi live = in_row;
        if (relu) live &= vload(a + k0) > vf{};
        const vf g0 = live ? vload(da + k0) * s : vf{};
        bsum += g0;
        const vf gk = permute1<ScrambleIdx>(g0);
        const vi off = permute1<ScrambleIdx>(vload_i(ix + k0) - (q0 + 2 * P.lane));
        const vf e0 = off == 0 ? gk : vf{}, e1 = off == 1 ? gk : vf{};
        vstore(d + q0, permute2<UnpackLoIdx>(e0, e1, Lanes{}));
        vstore(d + q0 + kVL, permute2<UnpackHiIdx>(e0, e1, Lanes{}));
        const vf f0 = off == wr ? gk : vf{}, f1 = off == wr + 1 ? gk : vf{};
        vstore(d + q0 + wr, permute2<UnpackLoIdx>(f0, f1, Lanes{}));
        vstore(d + q0 + wr + kVL, permute2<UnpackHiIdx>(f0, f1, Lanes{}));
      }
      db[c] += hsum(bsum);
      continue;
    }
    const int passes = nch <= kRowChunks ? 1 : 2;
    vf gks[kRowChunks];
    vi offs[kRowChunks];
    for (int i = 0; i < st.oh; ++i) {
      const int q0 = 2 * i * wr;
      for (int pass = 0; pass < passes; ++pass) {
        for (int ch = 0, j0 = 0; ch < nch; ++ch, j0 += kVL) {
          const int k0 = i * ow + j0;
          vi live = P.lane < (ow - j0);
          if (relu) live &= vload(a + k0) > vf{};
          const vf g0 = live ? vload(da + k0) * s : vf{};
          if (pass == 0) bsum += g0;
          // Scrambled (scr_col) order, so that the in-lane unpacks write columns in order.
          const vf gk = permute1<ScrambleIdx>(g0);
          const vi off = permute1<ScrambleIdx>(vload_i(ix + k0) - (q0 + 2 * (j0 + P.lane)));
          if (pass == 0) {
            const vf e0 = off == 0 ? gk : vf{}, e1 = off == 1 ? gk : vf{};
            vstore(d + q0 + 2 * j0, permute2<UnpackLoIdx>(e0, e1, Lanes{}));
            vstore(d + q0 + 2 * j0 + kVL, permute2<UnpackHiIdx>(e0, e1, Lanes{}));
          }
          if (passes == 1) {
            gks[ch] = gk, offs[ch] = off;
          } else if (pass == 1) {
            const vf f0 = off == wr ? gk : vf{}, f1 = off == wr + 1 ? gk : vf{};
            vstore(d + q0 + wr + 2 * j0, permute2<UnpackLoIdx>(f0, f1, Lanes{}));
            vstore(d + q0 + wr + 2 * j0 + kVL, permute2<UnpackHiIdx>(f0, f1, Lanes{}));
          }
        }
      }
      if (passes == 1)
        for (int ch = 0, j0 = 0; ch < nch; ++ch, j0 += kVL) {
          const vf gk = gks[ch];
          const vi off = offs[ch];
          const vf f0 = off == wr ? gk : vf{}, f1 = off == wr + 1 ? gk : vf{};
          vstore(d + q0 + wr + 2 * j0, permute2<UnpackLoIdx>(f0, f1, Lanes{}));
          vstore(d + q0 + wr + 2 * j0 + kVL, permute2<UnpackHiIdx>(f0, f1, Lanes{}));
        }
    }
    db[c] += hsum(bsum);
  }
}

// A linear layer's weights as rows of in_p floats: the parameters themselves when in is a
// multiple of the vector length (lenet5's fc1: 64 KB a step not copied), else the packed
// copy in wpack, made when `pack` (the forward pass; the backward reuses it).
const float* linear_weights(const FastNet::Stage& st, FastWorkspace::StageBufs& b,
                            const float* w, bool pack) {
  if (st.in == st.in_p) return w;
  if (pack)
    for (int j = 0; j < st.out; ++j)
      std::memcpy(b.wpack.data() + static_cast<size_t>(j) * st.in_p,
                  w + static_cast<size_t>(j) * st.in, sizeof(float) * st.in);
  return b.wpack.data();
}

}  // namespace

void FastNet::forward(const float* w, const float* x, int n, bool train, uint64_t noise_seed,
                      FastWorkspace& ws) const {
  const float* in = x;
  size_t in_stride = in0_;
  for (size_t s = 0; s < stages_.size(); ++s) {
    const Stage& st = stages_[s];
    auto& b = ws.bufs[s];
    const LayerInfo& li = net_.layers[st.layer];
    const bool drop = train && st.drop_layer >= 0;
    if (drop)
      dropout_mask(noise_seed, st.drop_layer, static_cast<size_t>(n) * st.oc, st.drop_p,
                   b.keep.data());
    if (st.conv) {
      const ConvShape& cs = st.cs;
      const int ldw = static_cast<int>(round_up(cs.cout)), kdim = cs.kdim();
      if (st.fwd_cvec) {  // W^T and the bias, once per pass
        float* wt = b.wpack.data();
        for (int o = 0; o < cs.cout; ++o) {
          for (int k = 0; k < kdim; ++k)
            wt[static_cast<size_t>(k) * ldw + o] = w[li.w_off + o * kdim + k];
          wt[static_cast<size_t>(kdim) * ldw + o] = w[li.b_off + o];
        }
      }
      for (int i = 0; i < n; ++i) {
        const float* brows = in + i * in_stride;
        if (!st.rowvec) {
          float* rows = b.in.data() + i * st.in_stride;
          conv_gather(st, in + i * in_stride, s > 0, rows);
          brows = rows;
        }
        float* out = b.out.data();
        if (st.fwd_rowpair)
          fast::conv_forward_rowpair(cs.cout, cs.cin, cs.k, cs.h, cs.w, brows, b.wpack.data(),
                                     b.wpack.data() + static_cast<size_t>(kdim) * ldw, out, st.pp,
                                     st.wrow);
        else if (st.fwd_cvec)
          fast::conv_forward_cvec(cs.cout, cs.cin, cs.k, cs.h, cs.w, brows, b.wpack.data(),
                                  b.wpack.data() + static_cast<size_t>(kdim) * ldw, out, st.pp,
                                  st.wrow);
        else
          fast::gemm_bcast(cs.cout, st.pp, kdim, w + li.w_off, kdim, 1, brows, st.boff.data(), 0,
                           out, st.pp, w + li.b_off, false, st.rowvec ? cs.w : kVL,
                           st.rowvec ? st.vpr : 1);
        conv_post_forward(
            st, out, b.act.data() + i * st.act_stride,
            st.pool ? b.idx.data() + static_cast<size_t>(i) * st.oc * st.oh * st.ow : nullptr,
            drop ? b.keep.data() + static_cast<size_t>(i) * st.oc : nullptr);
      }
    } else {
      if (in_stride != static_cast<size_t>(st.in_p)) {  // first stage, unpadded input
        for (int i = 0; i < n; ++i)
          std::memcpy(b.in.data() + static_cast<size_t>(i) * st.in_p, in + i * in_stride,
                      sizeof(float) * st.in);
        in = b.in.data();
        in_stride = st.in_p;
      }
      const float* wp = linear_weights(st, b, w + li.w_off, true);
      float* act = b.act.data();
      fast::gemm_dot(n, st.out, 1, st.in_p, in, 0, st.in_p, wp, 0, nullptr, st.in_p, act, st.out_p,
                     false);
      const float* bias = w + li.b_off;
      const float keep_scale = static_cast<float>(1.0 / (1.0 - st.drop_p));
      const fast::vf vscale = fast::vsplat(keep_scale), zero{};
      for (int i = 0; i < n; ++i) {
        float* a = act + static_cast<size_t>(i) * st.out_p;
        const uint8_t* keep = drop ? b.keep.data() + static_cast<size_t>(i) * st.out : nullptr;
        // Whole vectors of the real columns, then the rest one by one: the same operations
        // per element (bit for bit), and nothing read or written past column out.
        int j = 0;
        for (; j + kVL <= st.out; j += kVL) {
          fast::vf v = fast::vload(a + j) + fast::vload(bias + j);
          if (st.relu) v = v > zero ? v : zero;
          if (keep) v = fast::keep_mask(keep + j) ? v * vscale : zero;
          fast::vstore(a + j, v);
        }
        for (; j < st.out; ++j) {
          float v = a[j] + bias[j];
          if (st.relu && !(v > 0.0f)) v = 0.0f;
          if (keep) v = keep[j] ? v * keep_scale : 0.0f;
          a[j] = v;
        }
      }
    }
    in = b.act.data();
    in_stride = st.act_stride;
  }
}

double FastNet::loss_grad(const float* w, const float* x, const int32_t* label, int n, float* g,
                          FastWorkspace& ws, uint64_t noise_seed, int first_stage) const {
  if (ws.owner != this)
    throw InternalError("loss_grad: the workspace was made for another network");
  if (n < 1 || n > ws.max_batch)
    throw InternalError("loss_grad: batch of " + std::to_string(n) +
                        " samples does not fit the workspace made for max_batch " +
                        std::to_string(ws.max_batch));
  forward(w, x, n, true, noise_seed, ws);

  // log_softmax + NLL (mean): d logits = (softmax - onehot) / n.
  const Stage& last = stages_.back();
  const int classes = last.out;
  double loss = 0;
  {
    auto& b = ws.bufs.back();
    const float inv_n = 1.0f / static_cast<float>(n);
    for (int i = 0; i < n; ++i) {
      const float* z = b.act.data() + static_cast<size_t>(i) * last.out_p;
      float* dz = b.dact.data() + static_cast<size_t>(i) * last.out_p;
      WB_ASSERT(label[i] >= 0 && label[i] < classes, "label out of range");
      float zmax = z[0];
      for (int c = 1; c < classes; ++c) zmax = std::max(zmax, z[c]);
      float sum = 0;
      for (int c = 0; c < classes; ++c) sum += std::exp(z[c] - zmax);
      const float lse = zmax + std::log(sum);
      loss += static_cast<double>(lse - z[label[i]]);
      for (int c = 0; c < classes; ++c)
        dz[c] = (std::exp(z[c] - lse) - (c == label[i] ? 1.0f : 0.0f)) * inv_n;
    }
  }

  const size_t stop = static_cast<size_t>(std::max(0, first_stage));
  for (size_t s = stages_.size(); s-- > stop;) {
    const Stage& st = stages_[s];
    auto& b = ws.bufs[s];
    const LayerInfo& li = net_.layers[st.layer];
    const bool need_dx = s > stop;
    const float* in = s > 0 ? ws.bufs[s - 1].act.data() : (b.in.size() ? b.in.data() : x);
    float* din = s > 0 ? ws.bufs[s - 1].dact.data() : nullptr;
    const bool drop = st.drop_layer >= 0;
    if (st.conv) {
      const ConvShape& cs = st.cs;
      const size_t plane = static_cast<size_t>(cs.cout) * st.pp;
      double* db = b.dbias.data();
      std::fill(b.dbias.begin(), b.dbias.end(), 0.0);
      const auto post_backward = [&](int i, float* dout_i) {
        conv_post_backward(
            st, b.act.data() + i * st.act_stride, b.dact.data() + i * st.act_stride,
            st.pool ? b.idx.data() + static_cast<size_t>(i) * st.oc * st.oh * st.ow : nullptr,
            drop ? b.keep.data() + static_cast<size_t>(i) * st.oc : nullptr, dout_i, db);
      };
      // dW[o][k] = sum_i sum_p dout_i[o][p] * B_i[k][p]
      const float* brows = b.in.data();
      long brows_stride = static_cast<long>(st.in_stride);
      if (st.rowvec) {
        brows = s > 0 ? ws.bufs[s - 1].act.data() : x;
        brows_stride = static_cast<long>(s > 0 ? stages_[s - 1].act_stride : in0_);
      }
      // conv_wgrad_rows' input planes: the input itself (rowvec) or the padded copy.
      const int wh = st.rowvec ? cs.h : st.hp, ww = st.rowvec ? cs.w : st.wp;
      if (st.wgrad_rows && !st.wgrad_cvec && !st.wgrad_rowpair && !need_dx) {
        // The output gradient feeds only this weight gradient: made and used a few samples
        // at a time at the start of dout, it stays in L1/L2 (lenet5's conv1: 23 KB a
        // sample, 1.5 MB through L3 at batch 64 when made for the whole batch first).
        constexpr int kChunk = 4;
        for (int i0 = 0; i0 < n; i0 += kChunk) {
          const int m = std::min(kChunk, n - i0);
          for (int i = i0; i < i0 + m; ++i) post_backward(i, b.dout.data() + (i - i0) * plane);
          fast::conv_wgrad_rows(cs.cout, cs.cin, cs.k, wh, ww, m, b.dout.data(),
                                static_cast<long>(plane), brows + i0 * brows_stride, brows_stride,
                                g + li.w_off, i0 > 0);
        }
      } else {
        for (int i = 0; i < n; ++i) post_backward(i, b.dout.data() + i * plane);
        if (st.wgrad_rowpair)
          fast::conv_wgrad_rowpair(cs.cout, cs.cin, cs.k, cs.h, cs.w, n, b.dout.data(),
                                   static_cast<long>(plane), st.pp, st.wrow, brows, brows_stride,
                                   b.dwpack.data(), g + li.w_off, false);
        else if (st.wgrad_cvec)
          fast::conv_wgrad_cvec(cs.cout, cs.cin, cs.k, cs.h, cs.w, n, b.dout.data(),
                                static_cast<long>(plane), st.pp, st.wrow, brows, brows_stride,
                                b.dwpack.data(), g + li.w_off, false);
        else if (st.wgrad_rows)
          fast::conv_wgrad_rows(cs.cout, cs.cin, cs.k, wh, ww, n, b.dout.data(),
                                static_cast<long>(plane), brows, brows_stride, g + li.w_off, false);
        else
          fast::gemm_dot(cs.cout, cs.kdim(), n, st.pp, b.dout.data(), static_cast<long>(plane),
                         st.pp, brows, brows_stride, st.boff.data(), 0, g + li.w_off, cs.kdim(),
                         false);
      }
      for (int o = 0; o < cs.cout; ++o) g[li.b_off + o] = static_cast<float>(db[o]);
      if (need_dx) {
        const size_t prev_stride = stages_[s - 1].act_stride;
        for (int i = 0; i < n; ++i) {
          // dcol[k][p] = sum_o W[o][k] dout_i[o][p]
          if (st.dgrad_rows) {
            fast::conv_dgrad_rows(cs.cout, cs.cin, cs.k, cs.h, cs.w, w + li.w_off,
                                  b.dout.data() + i * plane, st.pp, b.dcol.data(),
                                  din + i * prev_stride);
            continue;
          }
          float* dcol = b.dcol.data() + kVL;  // kVL floats of slack on both sides
          if (st.implicit) {
            fast::gemm_bcast(cs.kdim(), st.pp, cs.cout, w + li.w_off, 1, cs.kdim(),
                             b.dout.data() + i * plane, nullptr, st.pp, dcol, st.pp, nullptr,
                             false);
            conv_scatter(st, dcol, b.dpad.data(), din + i * prev_stride);
          } else {
            const int kk = cs.k * cs.k;  // one input channel at a time, in L1
            for (int c = 0; c < cs.cin; ++c) {
              fast::gemm_bcast(kk, st.pp, cs.cout, w + li.w_off + c * kk, 1, cs.kdim(),
                               b.dout.data() + i * plane, nullptr, st.pp, dcol, st.pp, nullptr,
                               false);
              conv_col2im(st, dcol, c, c + 1, din + i * prev_stride);
            }
          }
        }
      }
    } else {
      float* d = b.dact.data();
      const float* act = b.act.data();
      const float keep_scale = static_cast<float>(1.0 / (1.0 - st.drop_p));
      for (int j = 0; j < st.out; ++j) g[li.b_off + j] = 0.0f;
      const fast::vf vscale = fast::vsplat(keep_scale), zero{};
      for (int i = 0; i < n; ++i) {
        const uint8_t* keep = drop ? b.keep.data() + static_cast<size_t>(i) * st.out : nullptr;
        float* di = d + static_cast<size_t>(i) * st.out_p;
        const float* ai = act + static_cast<size_t>(i) * st.out_p;
        // As the forward: whole vectors, then one by one; the bias gradient still adds the
        // samples in order, per element.
        int j = 0;
        for (; j + kVL <= st.out; j += kVL) {
          fast::vf v = fast::vload(di + j);
          if (st.relu) v = fast::vload(ai + j) > zero ? v : zero;
          if (keep) v = fast::keep_mask(keep + j) ? v * vscale : zero;
          fast::vstore(di + j, v);
          fast::vstore(g + li.b_off + j, fast::vload(g + li.b_off + j) + v);
        }
        for (; j < st.out; ++j) {
          float v = di[j];
          if (st.relu && !(ai[j] > 0.0f)) v = 0.0f;
          if (keep) v = keep[j] ? v * keep_scale : 0.0f;
          di[j] = v;
          g[li.b_off + j] += v;
        }
      }
      // dW[j][:] = sum_i d[i][j] * in_i[:]
      // Rows already of whole vectors (in == in_p): straight into g, no packed copy.
      const bool packed = st.in != st.in_p;
      fast::gemm_bcast(st.out, st.in_p, n, d, 1, st.out_p, in, nullptr, st.in_p,
                       packed ? b.dwpack.data() : g + li.w_off, st.in_p, nullptr, false);
      if (packed)
        for (int j = 0; j < st.out; ++j)
          std::memcpy(g + li.w_off + static_cast<size_t>(j) * st.in,
                      b.dwpack.data() + static_cast<size_t>(j) * st.in_p, sizeof(float) * st.in);
      if (need_dx)  // din[i][:] = sum_j d[i][j] * W[j][:]
        fast::gemm_bcast(n, st.in_p, st.out, d, st.out_p, 1, linear_weights(st, b, w + li.w_off, false),
                         nullptr, st.in_p, din, st.in_p, nullptr, false);
    }
  }
  return loss / n;
}

EvalResult FastNet::evaluate(const float* w, const float* x, const int32_t* label, int n,
                             FastWorkspace& ws) const {
  if (ws.owner != this) throw InternalError("evaluate: the workspace was made for another network");
  EvalResult r;
  r.has_accuracy = true;
  const Stage& last = stages_.back();
  const int classes = last.out;
  for (int i0 = 0; i0 < n; i0 += ws.max_batch) {
    const int m = std::min(ws.max_batch, n - i0);
    forward(w, x + static_cast<size_t>(i0) * in0_, m, false, 0, ws);
    const float* logits = ws.bufs.back().act.data();
    for (int i = 0; i < m; ++i) {
      const float* z = logits + static_cast<size_t>(i) * last.out_p;
      const int32_t y = label[i0 + i];
      WB_ASSERT(y >= 0 && y < classes, "label out of range");
      int arg = 0;
      for (int c = 1; c < classes; ++c)
        if (z[c] > z[arg]) arg = c;
      double sum = 0;
      for (int c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(z[c]) - z[arg]);
      r.loss_sum += z[arg] + std::log(sum) - z[y];
      r.correct += arg == y ? 1 : 0;
    }
    r.count += m;
  }
  return r;
}

}  // namespace wb::models
