// Gradient clipping by global L2 norm, torch.nn.utils.clip_grad_norm_ semantics (PyTorch 2.x,
// norm_type 2, foreach or not): the norm is taken over EVERY entry of the gradient (all
// tensors together, Pascanu et al. 2013, "On the difficulty of training recurrent neural
// networks", section 3.2, Algorithm 1), and the gradient is scaled by
//   coef = min(1, max_norm / (total_norm + 1e-6)).
// PyTorch always multiplies by the clamped coefficient; a factor of exactly 1 leaves every
// float unchanged, so the scaling is skipped when coef = 1 (results below the threshold are
// the unclipped ones bit for bit). The norm accumulates in double (DESIGN.md section 5:
// norms in double); a non-finite norm gives a NaN or 0 coefficient as in PyTorch's default
// error_if_nonfinite = False, and the run's divergence check sees the result.
//
// The run's `clip_norm` key (train/run_config.h) reaches it through train::Worker, which applies
// it to every gradient pass of a logical worker, before any algorithm combines anything.
#pragma once

#include <span>

namespace wb::train {

// The coefficient clip_grad_norm_ multiplies by, for a gradient of L2 norm total_norm.
// max_norm <= 0: clipping is off (1).
double clip_coefficient(double total_norm, double max_norm);

// Clips g in place; returns its L2 norm before clipping (what clip_grad_norm_ returns).
// max_norm <= 0: g untouched, returns 0 without reading it.
double clip_grad_norm(std::span<float> g, double max_norm);

}  // namespace wb::train
